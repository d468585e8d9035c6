"""Validation and dispatch of ``meanfield.plotting``, and the geometry-independent public
functions (``spacetime``, ``snapshots``, ``diagnostics``, ``figure``; the standard set of
figures and their files, ``figures``, ``plot_result`` and ``plot``, are in ``output``).

Each geometry module (``densities.circle``, ``densities.sphere``, ``densities.zonal``)
registers a ``_GeometryPlots`` in ``_PLOTTERS`` when imported; the package ``__init__``
imports them all, so the registry is complete whenever this module is used through the
package. Datasets of another kind (``attrs["kind"]``: ``"particles"``, ``"compare"``, the
studies') are drawn by the ``_KindPlots`` that their family modules (``particles.figures``,
``transport.comparison``, ...) register in ``_KINDS``; ``figure``, ``diagnostics`` and
``output`` dispatch on the kind first. The style, helpers and diagnostics panels they all
draw with are in ``helpers``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from meanfield.errors import ConfigError
from meanfield.plotting.helpers import (
    _caption,
    _check_log,
    _diagnostic_panels,
    _draw_panel,
    _new_figure,
    _periodic_edges,  # noqa: F401  (re-exported: tests import it from here)
    style,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    import xarray as xr
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


# --------------------------------------------------------------------------------------
# validation and dispatch
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _GeometryPlots:
    """The geometry-specific drawing functions; shared ones live at module level.

    ``pages`` are the figures ``plot_result`` writes between the summary and the
    diagnostics, as (file name suffix, builder(ds, log, points) -> Figure).
    """

    check: Callable[[xr.Dataset], xr.Dataset]
    spacetime: Callable[..., Any]
    snapshots: Callable[..., Any]
    summary: Callable[..., Figure]
    pages: tuple[tuple[str, Callable[..., Figure]], ...]
    animate: Callable[..., None]
    takes_points: bool = False


_PLOTTERS: dict[str, _GeometryPlots] = {}


def _register(geometry: str, plots: _GeometryPlots) -> None:
    _PLOTTERS[geometry] = plots


def _supported() -> str:
    return ", ".join(repr(g) for g in _PLOTTERS)


def _geometry_of(ds: Any) -> str:
    try:
        import xarray as xr
    except ImportError as exc:  # pragma: no cover - xarray is a dependency
        raise ConfigError(f"plotting needs xarray ({exc})", None) from exc
    if not isinstance(ds, xr.Dataset):
        raise ConfigError(
            f"cannot plot a {type(ds).__name__}; expected an xarray.Dataset "
            "as returned by meanfield.evolve", None)
    geometry = ds.attrs.get("geometry")
    if geometry is None:
        if "theta" in ds.dims:
            return "circle"
        if "lat" in ds.dims and "lon" in ds.dims:
            return "sphere"
        raise ConfigError(
            "dataset has no 'geometry' attribute and no 'theta' (circle) or 'lat'/'lon' "
            f"(sphere) dimensions; supported: {_supported()}", "geometry")
    geometry = str(geometry)
    if geometry in _PLOTTERS:
        return geometry
    raise ConfigError(
        f"geometry {geometry!r} is not a known geometry; supported: {_supported()}",
        "geometry")


def _prepare(ds: Any) -> tuple[_GeometryPlots, xr.Dataset]:
    plots = _PLOTTERS[_geometry_of(ds)]
    kind = _kind_plots(ds)
    if kind is not None and not kind.has_density:
        raise ConfigError(
            f"a {ds.attrs['kind']!r} dataset holds tokens, not a density; draw it with "
            "figure(), plot_result() or the token functions (trajectories, token_map, "
            "gram)", "kind")
    return plots, plots.check(ds)


@dataclass(frozen=True)
class _KindPlots:
    """The figures of a dataset kind other than a PDE result (``attrs["kind"]``).

    ``check`` validates (ConfigError naming what is missing) and returns the dataset to
    draw; ``summary(ds, log)`` is ``figure``'s; ``pages`` are ``plot_result``'s files as
    (suffix, builder(ds, log) -> Figure or None for "nothing to draw"); ``animate(ds,
    path, dpi, fps, max_frames, log)`` writes the GIF; ``diagnostics(ds, axes)``, if
    given, replaces the PDE diagnostics; ``has_density``: the dataset also holds a PDE
    density that ``spacetime``, ``snapshots`` and the maps can draw.
    """

    check: Callable[[xr.Dataset], xr.Dataset]
    summary: Callable[..., Figure]
    pages: tuple[tuple[str, Callable[..., Figure | None]], ...]
    animate: Callable[..., None]
    diagnostics: Callable[..., list[Axes]] | None = None
    has_density: bool = False


_KINDS: dict[str, _KindPlots] = {}
_PDE_KINDS = ("evolve", "pde")  # kinds drawn as PDE results (as one without the attribute)
# a kind drawn its own way in one geometry: (kind, geometry) -> plots (tokens in R^d)
_KIND_GEOMETRIES: dict[tuple[str, str], _KindPlots] = {}


def _register_kind(kind: str, plots: _KindPlots, geometry: str | None = None) -> None:
    if geometry is not None:
        _KIND_GEOMETRIES[(kind, geometry)] = plots
        return
    _KINDS[kind] = plots


def _kind_plots(ds: Any) -> _KindPlots | None:
    """The registered plots of ``ds.attrs["kind"]``; None for a PDE result."""
    kind = getattr(ds, "attrs", {}).get("kind")
    if kind is None or str(kind) in _PDE_KINDS:
        return None
    special = (str(kind), str(getattr(ds, "attrs", {}).get("geometry")))
    if special in _KIND_GEOMETRIES:
        return _KIND_GEOMETRIES[special]
    if str(kind) in _KINDS:
        return _KINDS[str(kind)]
    raise ConfigError(f"dataset kind {str(kind)!r} is not known; supported: "
                      f"{', '.join(repr(k) for k in _PDE_KINDS + tuple(_KINDS))} (or no "
                      "'kind' attribute for a PDE result)", "kind")


def _check_no_points(points: Any, ds: xr.Dataset) -> None:
    if points is not None:
        raise ConfigError(f"points: a {ds.attrs['kind']!r} dataset draws its own tokens; "
                          "pass points=None", "points")


def _check_points_allowed(plots: _GeometryPlots, points: Any) -> None:
    if points is not None and not plots.takes_points:
        raise ConfigError("points: the marker overlay is only drawn on sphere maps; "
                          "pass points=None for this dataset", "points")


# --------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------
def spacetime(ds: xr.Dataset, ax: Axes, *, log: bool | str = False, cmap: str = "magma",
              colorbar: bool = True):
    """Draw the density over (space, time) as an image.

    Circle: ρ(θ, t) over angle θ (x) and time (y). Sphere: the maximum over longitude
    of ρ, over latitude (x, degrees) and time (y) -- where clusters are and how sharp
    they get, whatever their longitude; use ``snapshots`` or the sphere maps to see
    the longitudes. Zonal: the density of t = cos θ (the marginal, where the mass is)
    over t (x) and time (y).

    Args:
        ds: a result dataset (see the package docstring).
        ax: the (ordinary, rectilinear) axes to draw into; its figure gets the colorbar.
        log: logarithmic colour scale (spanning at most 8 decades below the maximum;
            non-positive values are shown in the lowest colour). ``"auto"`` chooses log
            when the peak density exceeds 25 times the uniform density (1/(2π) on the
            circle, 1/(4π) on the sphere), as when clusters form, so the rest of the
            image does not come out black.
        cmap: a perceptually uniform matplotlib colormap name.
        colorbar: add a colorbar labelled with the density and its units beside ``ax``.

    Returns:
        The ``QuadMesh`` drawn.

    Raises:
        ConfigError: the dataset cannot be plotted (wrong geometry, no density, ...).
    """
    _check_log(log)
    plots, ds = _prepare(ds)
    return plots.spacetime(ds, ax, log=log, cmap=cmap, colorbar=colorbar)


def snapshots(ds: xr.Dataset, ax: Axes | Sequence[Axes], times: Sequence[float] | None = None,
              n: int = 5, *, log: bool | str = False, cmap: str | None = None,
              reference: bool = True) -> list:
    """Draw the density at a few saved times.

    Circle: curves coloured from early (dark) to late, in one axes. Zonal: the density
    in θ, one curve per time, a colorbar of the times (the marginal of t:
    ``marginal_snapshots``). Sphere: a row of
    small Mollweide maps on one shared colour scale with one colorbar; ``ax`` is then
    either one axes, whose place in the figure is split into the row (the axes itself
    is removed), or a sequence of Mollweide axes (``projection="mollweide"``), one per
    snapshot.

    Args:
        ds: a result dataset.
        ax: the axes to draw into (see above for the sphere).
        times: the times wanted; each is replaced by the nearest saved time (duplicates
            dropped). ``None`` picks ``n`` saved times spread evenly over the change of
            the density (the first and the last among them), so that a run that
            settles early shows its transient rather than the settled state n times.
        n: number of snapshots when ``times`` is ``None`` (at most the number saved).
        log: logarithmic density scale (at most 8 decades deep); ``"auto"`` as in
            ``spacetime``, judged on the snapshots drawn.
        cmap: colormap: of the curves (circle, default ``"viridis"``) or of the maps
            (sphere, default ``"magma"``).
        reference: circle only: draw the uniform density 1/(2π) as a dashed grey line.

    Returns:
        Circle: the ``Line2D`` objects of the curves, earliest first (up to 8 curves get
        a legend "t = …", more a colorbar of time). Sphere: the ``QuadMesh`` of each map,
        earliest first (``mesh.axes`` is its axes).

    Raises:
        ConfigError: the dataset cannot be plotted, ``n``/``times`` are invalid, or
            (sphere) the axes given are not Mollweide axes, one per snapshot.
    """
    _check_log(log)
    plots, ds = _prepare(ds)
    return plots.snapshots(ds, ax, times=times, n=n, log=log, cmap=cmap,
                           reference=reference)


def diagnostics(ds: xr.Dataset, axes: Sequence[Axes] | None = None) -> list[Axes]:
    """Draw the time series: order parameter, energy, free energy.

    One panel per variable present, in that order: ``free_energy`` only exists for runs
    with noise (finite kappa). The mass, conserved to round-off, has no panel: a new
    figure states its worst |M(t) − 1| in a caption.

    Args:
        ds: a result dataset.
        axes: as many axes as there are panels (2 without free energy, 3 with), or
            ``None`` to make a new figure with the panels in a row.

    Returns:
        The axes drawn into, in panel order.

    Raises:
        ConfigError: the dataset cannot be plotted or has none of these variables.
        ValueError: ``axes`` has the wrong length.
    """
    kind = _kind_plots(ds)
    if kind is not None and kind.diagnostics is not None:
        return kind.diagnostics(kind.check(ds), axes)
    _, ds = _prepare(ds)
    panels = _diagnostic_panels(ds)
    if not panels:
        found = ", ".join(sorted(map(str, ds.data_vars))) or "none"
        raise ConfigError(
            f"dataset has no diagnostic time series (data variables found: {found}); "
            "expected some of 'order_parameter', 'energy', 'free_energy'",
            "order_parameter")
    if axes is None:
        with style():
            fig = _new_figure((2.6 * len(panels), 2.6))
            axes = list(fig.subplots(1, len(panels), squeeze=False)[0])
            for panel, ax in zip(panels, axes):
                _draw_panel(ds, panel, ax)
            _caption(fig, ds)
        return axes
    axes = list(np.ravel(np.asarray(axes, dtype=object)))
    if len(axes) != len(panels):
        raise ValueError(
            f"diagnostics needs {len(panels)} axes for this dataset "
            f"({', '.join(p.key for p in panels)}); got {len(axes)}")
    for panel, ax in zip(panels, axes):
        _draw_panel(ds, panel, ax)
    return axes


def figure(ds: xr.Dataset, *, log: bool | str = "auto", points: Any = None) -> Figure:
    """One summary figure of a result, with the diagnostics panels as its bottom row.

    Circle: the space-time density image and density curves at five times on top.
    Zonal: the density in θ and the marginal of t = cos θ at seven times on top.
    Sphere: Mollweide maps at the first and last saved times and an orthographic view
    of the last time (facing its mean direction) on top, one shared colour scale. The
    title is the dataset's ``title`` attr (if any) with model, β, κ (∞ when infinite)
    and method. Tokens (``kind = "particles"``) and PDE-vs-token comparisons
    (``kind = "compare"``): see ``meanfield.plotting.particles.figures`` and
    ``meanfield.plotting.transport.comparison``; ``points`` must then be None.

    Args:
        ds: a result dataset.
        log: log density scale of the density panels: True, False or ``"auto"`` (log
            once the peak exceeds 25 times the uniform density; see ``spacetime``).
        points: sphere only: (n, 3) unit vectors (particles, cluster centres) marked on
            the maps; see ``map_mollweide``.

    Returns:
        A ``matplotlib.figure.Figure`` (not registered with pyplot; save it with
        ``fig.savefig`` or display it in a notebook).

    Raises:
        ConfigError: the dataset cannot be plotted, or ``log``/``points`` are invalid.
    """
    _check_log(log)
    kind = _kind_plots(ds)
    if kind is not None:
        _check_no_points(points, ds)
        return kind.summary(kind.check(ds), log=log)
    plots, ds = _prepare(ds)
    _check_points_allowed(plots, points)
    return plots.summary(ds, log=log, points=points)
