"""The standard figures of a result, and their files.

``figures(ds)`` builds them (a dict, name -> ``matplotlib.figure.Figure``, in the order
below; nothing written), ``plot_result(ds, out_dir, ...)`` writes them, and ``plot(ds,
out=None, ...)`` -- ``meanfield.plot`` -- does both: it returns the figures (they display
in Jupyter) and writes files only when given a folder. ``meanfield plot RESULT.nc`` is
``plot_result`` with ``overwrite=False`` unless ``--overwrite``.

The names, in order: ``"summary"``; then per kind: circle ``"spacetime"``,
``"snapshots"``; sphere ``"maps"`` (Mollweide and orthographic at the last time),
``"spacetime"`` (latitude-time image of the maximum over longitude), ``"snapshots"``;
zonal ``"slices"`` (the density in θ and the marginal of t at seven times),
``"spacetime"`` (the marginal over t and time);
tokens (``kind = "particles"``) ``"tokens"``; PDE vs tokens (``"compare"``)
``"snapshots"``, ``"distance"``; the studies their own pages; and ``"diagnostics"`` for a
PDE result with diagnostic series. The file of a figure is ``{stem}_{name}.{format}``.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from meanfield.errors import ConfigError, ResultExistsError
from meanfield.io import write_atomic
from meanfield.plotting.common import (
    _check_no_points,
    _GeometryPlots,
    _check_points_allowed,
    _kind_plots,
    _prepare,
    diagnostics,
)
from meanfield.plotting.helpers import _check_log, _diagnostic_panels, _title, style
from meanfield.plotting.legible import _explain_markers

if TYPE_CHECKING:  # pragma: no cover - typing only
    import xarray as xr
    from matplotlib.figure import Figure

FORMATS: tuple[str, ...] = ("png", "pdf", "svg")  # the figure file formats written
_MAX_DPI = 1200
_MAX_FRAMES = 100
_FPS = 12
# the formats IPython can show a Figure in (those of IPython.core.pylabtools)
_FIGURE_MIMES = ("image/png", "image/svg+xml", "image/jpeg", "application/pdf")


def figures(ds: xr.Dataset, *, log: bool | str = "auto", points: Any = None
            ) -> dict[str, Figure]:
    """Build the standard figures of a result, without writing anything.

    Args:
        ds: a result dataset (PDE, tokens, comparison or study; see the package
            docstring).
        log: log density scale of the density figures: True, False or ``"auto"`` (see
            ``spacetime``).
        points: sphere only: (n, 3) unit vectors marked on the maps (see
            ``map_mollweide``).

    Returns:
        The figures by name, in the order of the module docstring (``"summary"`` first);
        a page with nothing to draw for this dataset is left out. They are plain
        ``Figure`` objects (not registered with pyplot): ``fig.savefig(...)``, or the last
        expression of a notebook cell.

    Raises:
        ConfigError: the dataset cannot be plotted (no finite values, unknown geometry or
            kind), or ``log``/``points`` are invalid.
    """
    pages, ds, extra = _checked(ds, log, points)
    return _build(pages, ds, log, extra)


def plot_result(ds: xr.Dataset, out_dir: str | os.PathLike, stem: str | None = None,
                animate: bool = False, dpi: float = 150, *,
                log: bool | str = "auto", points: Any = None, format: str = "png",
                overwrite: bool = True) -> list[Path]:
    """Write the standard figures (and optionally an animation) of a result.

    Files written into ``out_dir`` (created if missing), each atomically (temp file in
    the same directory, then ``os.replace``): ``{stem}_{name}.{format}`` for each figure
    of ``figures(ds)`` (see the module docstring), then with ``animate=True``
    ``{stem}_animation.gif`` (the density curve over θ, or the Mollweide map on a fixed
    colour scale, evolving in time; at most 100 frames subsampled evenly from the saved
    times, 12 frames per second, at ``min(dpi, 100)``).

    Args:
        ds: a result dataset.
        out_dir: output directory.
        stem: file name prefix; defaults to ``"result"``.
        animate: also write the GIF (slow: each frame is a full redraw, so 100 frames
            take ten to thirty seconds).
        dpi: resolution of the figures (of a PDF's or SVG's raster images only).
        log: log density scale of the density figures and the animation: True, False
            or ``"auto"`` (see ``spacetime``).
        points: sphere only: (n, 3) unit vectors marked on the maps (see
            ``map_mollweide``).
        format: ``"png"``, ``"pdf"`` or ``"svg"``.
        overwrite: replace files of the same names. With False, an existing target
            (any of them, the GIF included) raises ``ResultExistsError`` before any file
            is written.

    Returns:
        The paths written, in the order above.

    Raises:
        ConfigError: the dataset cannot be plotted, or ``stem``/``dpi``/``log``/
            ``points``/``format`` are invalid. Nothing is written then.
        ResultExistsError: ``overwrite=False`` and a target exists (a ``ConfigError``
            naming the file). Nothing is written then.
    """
    stem = _check_file_options(stem, dpi, format)
    pages, ds, extra = _checked(ds, log, points)
    figs = _build(pages, ds, log, extra)
    return _write(figs, pages, ds, Path(out_dir), stem, animate, dpi, format, overwrite,
                  log, extra)


def plot(ds: xr.Dataset, out: str | os.PathLike | None = None, *, stem: str | None = None,
         format: str = "png", dpi: float = 150, animate: bool = False,
         overwrite: bool = False, log: bool | str = "auto", points: Any = None
         ) -> dict[str, Figure]:
    """Draw a result's standard figures; write them to files only when ``out`` is given.

    ``meanfield.plot(ds)`` in a notebook returns the figures to show; ``meanfield.plot(ds,
    "figs", stem="run1")`` also writes ``figs/run1_summary.png`` and the others, as
    ``meanfield plot`` does. In a Jupyter kernel the returned figures display as images
    without ``%matplotlib inline`` (``plot`` registers IPython's PNG formatter for
    figures when no image formatter knows them).

    Args:
        ds: a result dataset (from ``meanfield.evolve``, ``particles``, ``compare``, a
            study, or ``xarray.open_dataset`` of a result file).
        out: folder for the files (made if missing); None writes nothing.
        stem: file name prefix (default ``"result"``); files are
            ``{out}/{stem}_{name}.{format}``.
        format: ``"png"``, ``"pdf"`` or ``"svg"``.
        dpi: resolution of the files.
        animate: with ``out``, also write ``{stem}_animation.gif`` (not returned: it is a
            file, not a figure).
        overwrite: replace existing files; without it an existing target raises
            ``ResultExistsError`` before anything is written.
        log: log density scale: True, False or ``"auto"`` (see ``spacetime``).
        points: sphere only: (n, 3) unit vectors marked on the maps.

    Returns:
        The figures by name (``"summary"`` first; see the module docstring for the
        names), as ``figures`` returns them.

    Raises:
        ConfigError: as ``plot_result`` (``ResultExistsError`` for an existing file);
            options are checked before anything is drawn or written.
    """
    _show_figures_in_kernel()
    if out is None:
        if animate:
            raise ConfigError("animate = True writes a GIF file: give out (a folder)",
                              "animate")
        return figures(ds, log=log, points=points)
    stem = _check_file_options(stem, dpi, format)
    pages, ds, extra = _checked(ds, log, points)
    figs = _build(pages, ds, log, extra)
    _write(figs, pages, ds, Path(out), stem, animate, dpi, format, overwrite, log, extra)
    return figs


def _show_figures_in_kernel() -> None:
    """In an IPython kernel (Jupyter), have a returned ``Figure`` display as a PNG.

    IPython registers its formatter for matplotlib figures only once ``%matplotlib
    inline`` runs or pyplot makes a figure (matplotlib 3.11: importing pyplot is not
    enough), and the figures here never touch pyplot: without this, a fresh kernel shows
    ``meanfield.plot(ds)["summary"]`` as the text ``<Figure size ...>``. Nothing happens
    outside a kernel (a terminal IPython has no ``kernel``; IPython is never imported
    here when it is not already), nor when some image formatter already knows
    ``Figure`` (the formats the user chose, e.g. svg or retina, are kept).
    """
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or getattr(shell, "kernel", None) is None:
        return
    from matplotlib.figure import Figure

    formatters = shell.display_formatter.formatters
    for mime in _FIGURE_MIMES:
        try:
            formatters[mime].lookup_by_type(Figure)
            return
        except KeyError:
            continue
    from IPython.core.pylabtools import select_figure_formats

    select_figure_formats(shell, {"png"})


def targets(figs: dict[str, Any], out_dir: str | os.PathLike, stem: str, format: str,
            animate: bool) -> list[Path]:
    """The files ``plot_result`` writes for figures ``figs``: one per name, then the GIF."""
    out = Path(out_dir)
    paths = [out / f"{stem}_{name}.{format}" for name in figs]
    return paths + ([out / f"{stem}_animation.gif"] if animate else [])


# --------------------------------------------------------------------------------------
def _checked(ds: Any, log: Any, points: Any):
    """Validate; returns (the registered plots, the dataset to draw, the extra keyword
    arguments of their builders)."""
    _check_log(log)
    _check_some_finite(ds)
    kind = _kind_plots(ds)
    if kind is not None:
        _check_no_points(points, ds)
        return kind, kind.check(ds), {}  # kind plots (tokens, studies) take no points
    plots, ds = _prepare(ds)
    _check_points_allowed(plots, points)
    if plots.takes_points:
        from meanfield.plotting.densities.sphere_grid import _points_array

        points = _points_array(points)  # validated before anything is drawn
    return plots, ds, {"points": points}


def _build(pages: Any, ds: xr.Dataset, log: Any, extra: dict) -> dict[str, Figure]:
    figs = {"summary": pages.summary(ds, log=log, **extra)}
    for name, build in pages.pages:
        fig = build(ds, log=log, **extra)
        if fig is not None:
            figs[name] = fig
    if isinstance(pages, _GeometryPlots) and _diagnostic_panels(ds):  # a PDE result
        axes = diagnostics(ds)
        axes[0].figure.suptitle(_title(ds), fontsize=10)
        figs["diagnostics"] = axes[0].figure
    for fig in figs.values():
        _explain_markers(fig)
    return figs


def _write(figs: dict[str, Figure], pages: Any, ds: xr.Dataset, out: Path, stem: str,
           animate: bool, dpi: float, format: str, overwrite: bool, log: Any,
           extra: dict) -> list[Path]:
    paths = targets(figs, out, stem, format, animate)
    if not overwrite:  # every target checked before the first is written
        existing = [p for p in paths if p.exists()]
        if existing:
            more = f" (and {len(existing) - 1} more)" if len(existing) > 1 else ""
            raise ResultExistsError(
                f"figure {str(existing[0])!r}{more} exists; pass --overwrite "
                "(overwrite=True) to replace the figures", "--overwrite")
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for fig, path in zip(figs.values(), paths):
        with style():
            written.append(write_atomic(path, lambda tmp, fig=fig: fig.savefig(
                tmp, format=format, dpi=dpi)))
    if animate:
        pages.animate(ds, paths[-1], dpi=min(float(dpi), 100.0), fps=_FPS,
                      max_frames=_MAX_FRAMES, log=log, **extra)
        written.append(paths[-1])
    return written


def _check_some_finite(ds: xr.Dataset) -> None:
    """Refuse a result whose numbers are all NaN/inf (a run that produced none, or a
    file edited by hand): every figure would be empty, and log axes fail to draw."""
    numeric = sorted((v for v in getattr(ds, "data_vars", {}).values()
                      if v.dtype.kind in "fc" and v.size),
                     key=lambda v: v.size)  # the small ones first: usually one decides
    if numeric and not any(bool(np.isfinite(v.values).any()) for v in numeric):
        raise ConfigError("the result has no finite values (every variable is NaN or inf: "
                          + ", ".join(str(v.name) for v in numeric[:6])
                          + (", ..." if len(numeric) > 6 else "")
                          + "): nothing to plot; run the study again", "result")


def _check_file_options(stem: str | None, dpi: Any, format: Any) -> str:
    """The file-name prefix (default ``"result"``), resolution and format, checked."""
    stem = "result" if stem is None else str(stem)
    if not stem or os.sep in stem or (os.altsep and os.altsep in stem) or stem in (".", ".."):
        raise ConfigError(f"stem = {stem!r} must be a non-empty file name prefix without "
                          "path separators", "stem")
    if (isinstance(dpi, bool) or not isinstance(dpi, (int, float))
            or not 0 < dpi <= _MAX_DPI):  # a 1200-dpi page is print quality already
        raise ConfigError(f"dpi = {dpi!r} must be a number in (0, {_MAX_DPI}]", "dpi")
    if format not in FORMATS:
        raise ConfigError(f"format = {format!r} is not a figure format; accepted: "
                          + ", ".join(repr(f) for f in FORMATS), "format")
    return stem
