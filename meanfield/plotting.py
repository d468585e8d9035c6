"""Figures and animations of ``meanfield`` results.

Every function takes a result ``xarray.Dataset`` (see ``meanfield.evolve``) and draws it
according to its ``geometry`` attribute; only ``"circle"`` is supported so far, and a
dataset that cannot be drawn raises ``ConfigError`` naming what was found and what is
accepted. Nothing here touches pyplot's global state: figures are plain
``matplotlib.figure.Figure`` objects with an Agg canvas, so the module works headless
(servers, CI) and the returned figures display in notebooks.

Typical use::

    from meanfield.plotting import figure, plot_result
    fig = figure(ds)                       # one summary figure
    paths = plot_result(ds, "out", stem="run1", animate=True)

Functions drawing into caller-supplied axes (``spacetime``, ``snapshots``,
``diagnostics``) respect the caller's rcParams; figures made here use a compact style
sized for a two-column paper.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from meanfield.errors import ConfigError
from meanfield.io import write_atomic

if TYPE_CHECKING:  # pragma: no cover - typing only
    import xarray as xr
    from matplotlib.axes import Axes
    from matplotlib.collections import QuadMesh
    from matplotlib.figure import Figure

__all__ = [
    "SUPPORTED_GEOMETRIES",
    "spacetime",
    "snapshots",
    "diagnostics",
    "figure",
    "plot_result",
]

SUPPORTED_GEOMETRIES: tuple[str, ...] = ("circle",)
_PLANNED_GEOMETRIES: tuple[str, ...] = ("sphere",)

TWO_PI = 2.0 * math.pi
_MASS_ERROR_FLOOR = 1e-17
_LOG_DYNAMIC_RANGE = 1e8  # log colour scale spans at most this factor below the maximum
_AUTO_LOG_PEAK = 25.0  # log="auto": log scale once the peak exceeds 25x the uniform density
_MAX_LEGEND_ENTRIES = 8  # more snapshot curves than this get a time colorbar instead
_MAX_FRAMES = 100

_STYLE: dict[str, Any] = {
    "font.size": 9,
    "axes.titlesize": 9.5,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 7.5,
    "figure.titlesize": 11,
    "lines.linewidth": 1.4,
    "axes.linewidth": 0.8,
    "legend.frameon": False,
    "savefig.facecolor": "white",
    "figure.facecolor": "white",
}


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------
def _new_figure(figsize: tuple[float, float]) -> Figure:
    """A pyplot-free figure with an Agg canvas and constrained layout."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _style():
    import matplotlib

    return matplotlib.rc_context(_STYLE)


def _fmt_number(value: Any) -> str:
    """``1.0 -> '1'``, ``inf -> '∞'``; other values as given."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    return f"{x:.4g}"


def _fmt_time(t: float) -> str:
    return f"{t:.3g}"


def _units_suffix(var: Any) -> str:
    """' (1/rad)' for a variable with units; '' when dimensionless ("1", "1 (...)")."""
    units = str(getattr(var, "attrs", {}).get("units", "")).strip()
    return "" if units == "" or units.split()[0] == "1" else f" ({units})"


def _theta_axis(ax: Axes) -> None:
    """Theta on the x axis from 0 to 2π, ticks labelled in multiples of π."""
    ax.set_xlim(0.0, TWO_PI)
    ax.set_xticks([0.0, math.pi / 2, math.pi, 3 * math.pi / 2, TWO_PI])
    ax.set_xticklabels(["0", "π/2", "π", "3π/2", "2π"])
    ax.set_xlabel("θ (rad)")


def _density_label(ds: xr.Dataset) -> str:
    return "ρ(θ, t)" + _units_suffix(ds["density"])


def _time_label(ds: xr.Dataset) -> str:
    return "time t" + _units_suffix(ds["time"]) if "time" in ds.coords else "time t"


def _attr_summary(ds: xr.Dataset) -> str:
    """'SA, β = 1, κ = ∞, spectral' from whichever of those attrs are present."""
    attrs = ds.attrs
    parts = []
    if "model" in attrs:
        parts.append(f"{attrs['model']} model")
    if "beta" in attrs:
        parts.append(f"β = {_fmt_number(attrs['beta'])}")
    if "kappa" in attrs:
        parts.append(f"κ = {_fmt_number(attrs['kappa'])}")
    if "method" in attrs:
        parts.append(f"{attrs['method']}")
    return ", ".join(parts)


def _title(ds: xr.Dataset) -> str:
    """Parameters from the attrs, after the ``title`` attr unless that already has them."""
    title = str(ds.attrs.get("title", "")).strip()
    summary = _attr_summary(ds)
    if summary and any(word in title.lower() for word in ("beta", "β")):
        title = ""  # a generated title repeating the parameters (meanfield.evolve's)
    if title and summary:
        sep = "\n" if len(title) + len(summary) > 70 else " "
        return f"{title}{sep}({summary})"
    return title or summary or "meanfield result"


# --------------------------------------------------------------------------------------
# validation and dispatch
# --------------------------------------------------------------------------------------
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
        raise ConfigError(
            "dataset has no 'geometry' attribute and no 'theta' dimension; supported: "
            + ", ".join(repr(g) for g in SUPPORTED_GEOMETRIES), "geometry")
    geometry = str(geometry)
    if geometry in _PLOTTERS:
        return geometry
    supported = ", ".join(repr(g) for g in SUPPORTED_GEOMETRIES)
    if geometry in _PLANNED_GEOMETRIES:
        raise ConfigError(
            f"geometry {geometry!r}: plotting is not supported yet; supported: {supported}",
            "geometry")
    raise ConfigError(
        f"geometry {geometry!r} is not a known geometry; supported: {supported}", "geometry")


def _check_circle(ds: xr.Dataset) -> xr.Dataset:
    """Validate a circle dataset; return it with theta in [0, 2π) and both axes sorted."""
    found = ", ".join(sorted(map(str, ds.data_vars))) or "none"
    if "density" not in ds.data_vars:
        raise ConfigError(
            f"dataset has no 'density' variable (data variables found: {found}); circle "
            "plots need density(time, theta)", "density")
    dims = ds["density"].dims
    if set(dims) != {"time", "theta"}:
        raise ConfigError(
            f"'density' has dimensions {dims}; circle plots need ('time', 'theta')", "density")
    if ds.sizes["time"] < 1:
        raise ConfigError("dataset has no saved times (time has length 0)", "time")
    if ds.sizes["theta"] < 2:
        raise ConfigError(
            f"theta has {ds.sizes['theta']} point(s); circle plots need at least 2", "theta")
    for name in ("time", "theta"):
        if name in ds.coords:
            values = np.asarray(ds[name].values)
            if not np.issubdtype(values.dtype, np.number) or not np.all(np.isfinite(values)):
                raise ConfigError(
                    f"coordinate {name!r} must hold finite numbers (found dtype "
                    f"{values.dtype})", name)
    if "time" not in ds.coords:
        ds = ds.assign_coords(time=np.arange(ds.sizes["time"], dtype=float))
    if "theta" not in ds.coords:
        raise ConfigError("dataset has a 'theta' dimension but no 'theta' coordinate "
                          "(angles in radians)", "theta")
    theta = np.asarray(ds["theta"].values, dtype=float)
    wrapped = np.mod(theta, TWO_PI)
    if np.unique(wrapped).size != theta.size:
        raise ConfigError("coordinate 'theta' has repeated angles (mod 2π)", "theta")
    if not np.array_equal(wrapped, theta):
        ds = ds.assign_coords(theta=wrapped)
    if np.any(np.diff(wrapped) <= 0):
        ds = ds.sortby("theta")
    if np.any(np.diff(np.asarray(ds["time"].values, dtype=float)) < 0):
        ds = ds.sortby("time")
    return ds


@dataclass(frozen=True)
class _GeometryPlots:
    """The geometry-specific drawing functions; shared ones live at module level."""

    check: Callable[[xr.Dataset], xr.Dataset]
    spacetime: Callable[..., Any]
    snapshots: Callable[..., Any]
    animate: Callable[..., None]


def _prepare(ds: Any) -> tuple[_GeometryPlots, xr.Dataset]:
    plots = _PLOTTERS[_geometry_of(ds)]
    return plots, plots.check(ds)


# --------------------------------------------------------------------------------------
# circle
# --------------------------------------------------------------------------------------
def _density_array(ds: xr.Dataset) -> np.ndarray:
    return np.asarray(ds["density"].transpose("time", "theta").values, dtype=float)


def _use_log(log: bool | str, rho: np.ndarray) -> bool:
    """Resolve ``log`` (True, False or "auto") for the densities ``rho``."""
    if isinstance(log, str):
        if log != "auto":
            raise ConfigError(f"log = {log!r}; valid: True, False, 'auto'", "log")
        finite = rho[np.isfinite(rho)]
        return bool(finite.size) and float(finite.max()) * TWO_PI > _AUTO_LOG_PEAK
    return bool(log)


def _log_limits(rho: np.ndarray) -> tuple[float, float]:
    """(vmin, vmax) of a log scale: the positive range, at most 8 decades deep."""
    finite = rho[np.isfinite(rho)]
    vmax = float(finite.max()) if finite.size else 1.0
    if not vmax > 0:
        vmax = 1.0
    positive = finite[finite > 0]
    vmin = float(positive.min()) if positive.size else vmax / _LOG_DYNAMIC_RANGE
    vmin = max(vmin, vmax / _LOG_DYNAMIC_RANGE)
    if vmin >= vmax:
        vmin = vmax / 10.0
    return vmin, vmax


def _periodic_edges(theta: np.ndarray) -> np.ndarray:
    """Cell edges around sorted angles in [0, 2π), wrapping periodically."""
    mid = 0.5 * (theta[:-1] + theta[1:])
    first = 0.5 * (theta[-1] - TWO_PI + theta[0])
    return np.concatenate([[first], mid, [first + TWO_PI]])


def _time_edges(t: np.ndarray) -> np.ndarray:
    if t.size == 1:
        half = 0.5 * max(abs(t[0]), 1.0)
        return np.array([t[0] - half, t[0] + half])
    mid = 0.5 * (t[:-1] + t[1:])
    return np.concatenate([[t[0] - (mid[0] - t[0])], mid, [t[-1] + (t[-1] - mid[-1])]])


def _circle_spacetime(ds: xr.Dataset, ax: Axes, *, log: bool | str = False,
                      cmap: str = "magma", colorbar: bool = True) -> QuadMesh:
    from matplotlib.colors import LogNorm, Normalize

    rho = _density_array(ds)
    theta = np.asarray(ds["theta"].values, dtype=float)
    t = np.asarray(ds["time"].values, dtype=float)
    if _use_log(log, rho):
        vmin, vmax = _log_limits(rho)
        norm = LogNorm(vmin=vmin, vmax=vmax)
        shown = np.where(np.isfinite(rho), np.clip(rho, vmin, None), np.nan)
    else:
        finite = rho[np.isfinite(rho)]
        vmax = float(finite.max()) if finite.size else 1.0
        vmin = min(0.0, float(finite.min())) if finite.size else 0.0
        norm = Normalize(vmin=vmin, vmax=vmax if vmax > vmin else vmin + 1.0)
        shown = rho
    mesh = ax.pcolormesh(_periodic_edges(theta), _time_edges(t), shown, cmap=cmap,
                         norm=norm, shading="flat", rasterized=True)
    _theta_axis(ax)
    if t.size > 1:
        ax.set_ylim(t[0], t[-1])
    ax.set_ylabel(_time_label(ds))
    if colorbar:
        cbar = ax.figure.colorbar(mesh, ax=ax, pad=0.02)
        cbar.set_label(_density_label(ds))
    return mesh


def _snapshot_indices(t: np.ndarray, times: Sequence[float] | None, n: int) -> np.ndarray:
    if times is None:
        if n < 1:
            raise ConfigError(f"n = {n!r} snapshots; need at least 1", "n")
        count = min(int(n), t.size)
        return np.unique(np.rint(np.linspace(0, t.size - 1, count)).astype(int))
    wanted = np.atleast_1d(np.asarray(times, dtype=float))
    if wanted.size == 0 or not np.all(np.isfinite(wanted)):
        raise ConfigError(f"times = {times!r} must be finite numbers", "times")
    return np.unique(np.abs(t[None, :] - wanted[:, None]).argmin(axis=1))


def _circle_snapshots(ds: xr.Dataset, ax: Axes, times: Sequence[float] | None = None,
                      n: int = 5, *, log: bool | str = False, cmap: str = "viridis",
                      reference: bool = True) -> list:
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    rho = _density_array(ds)
    theta = np.asarray(ds["theta"].values, dtype=float)
    t = np.asarray(ds["time"].values, dtype=float)
    idx = _snapshot_indices(t, times, n)
    closed_theta = np.append(theta, theta[0] + TWO_PI)
    colours = colormaps[cmap](np.linspace(0.0, 0.85, idx.size))  # skip the palest end
    lines = []
    if reference:
        ax.axhline(1.0 / TWO_PI, color="0.6", lw=0.9, ls="--", zorder=1,
                   label="uniform")
    for colour, i in zip(colours, idx):
        curve = np.append(rho[i], rho[i, 0])
        (line,) = ax.plot(closed_theta, curve, color=colour, label=f"t = {_fmt_time(t[i])}",
                          zorder=2)
        lines.append(line)
    _theta_axis(ax)
    ax.set_ylabel(_density_label(ds))
    if _use_log(log, rho[idx]):
        ax.set_yscale("log")
        vmin, vmax = _log_limits(rho[idx])
        ax.set_ylim(vmin, vmax * 2.0)
    else:
        finite = rho[idx][np.isfinite(rho[idx])]
        if finite.size and finite.min() >= 0:
            ax.set_ylim(bottom=0.0)
    if idx.size <= _MAX_LEGEND_ENTRIES:
        # outside the axes, so it never hides a curve
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), handlelength=1.4,
                  borderaxespad=0.0)
    else:
        sm = ScalarMappable(norm=Normalize(t[idx[0]], t[idx[-1]]),
                            cmap=colormaps[cmap].resampled(256))
        cbar = ax.figure.colorbar(sm, ax=ax, pad=0.02)
        cbar.set_label(_time_label(ds))
    return lines


def _circle_animate(ds: xr.Dataset, path: Path, *, dpi: float, fps: float,
                    max_frames: int, log: bool | str = False) -> None:
    from matplotlib.animation import FuncAnimation, PillowWriter

    rho = _density_array(ds)
    theta = np.asarray(ds["theta"].values, dtype=float)
    t = np.asarray(ds["time"].values, dtype=float)
    frames = np.unique(np.rint(np.linspace(0, t.size - 1, min(t.size, max_frames))).astype(int))
    closed_theta = np.append(theta, theta[0] + TWO_PI)

    def closed(i: int) -> np.ndarray:
        return np.append(rho[i], rho[i, 0])

    with _style():
        fig = _new_figure((5.0, 3.2))
        ax = fig.add_subplot()
        ax.axhline(1.0 / TWO_PI, color="0.6", lw=0.9, ls="--", label="uniform")
        ax.plot(closed_theta, closed(0), color="0.75", lw=1.0, label=f"t = {_fmt_time(t[0])}")
        (line,) = ax.plot(closed_theta, closed(frames[0]), color="C0", lw=1.8, label="ρ(θ, t)")
        _theta_axis(ax)
        ax.set_ylabel(_density_label(ds))
        if _use_log(log, rho):
            ax.set_yscale("log")
            vmin, vmax = _log_limits(rho)
            ax.set_ylim(vmin, vmax * 2.0)
        else:
            finite = rho[np.isfinite(rho)]
            top = float(finite.max()) if finite.size else 1.0
            bottom = min(0.0, float(finite.min())) if finite.size else 0.0
            ax.set_ylim(bottom, 1.05 * top if top > 0 else 1.0)
        ax.legend(loc="upper right")
        label = ax.text(0.02, 0.95, "", transform=ax.transAxes, va="top", ha="left")
        ax.set_title(_title(ds), fontsize=9)

        def update(i: int):
            line.set_ydata(closed(i))
            label.set_text(f"t = {_fmt_time(t[i])}")
            return line, label

        # Lay out once (with the widest time label), then freeze the layout: frames
        # differ only in the curve and the label, and re-running constrained layout for
        # every frame would dominate the cost.
        update(frames[int(np.argmax([len(_fmt_time(t[i])) for i in frames]))])
        fig.canvas.draw()
        fig.set_layout_engine(None)
        fig.canvas.draw_idle = lambda *args, **kwargs: None  # frames are drawn by savefig
        anim = FuncAnimation(fig, update, frames=[int(i) for i in frames], blit=False,
                             repeat=False, cache_frame_data=False)
        write_atomic(path, lambda tmp: anim.save(tmp, writer=PillowWriter(fps=fps), dpi=dpi))


_PLOTTERS: dict[str, _GeometryPlots] = {
    "circle": _GeometryPlots(check=_check_circle, spacetime=_circle_spacetime,
                             snapshots=_circle_snapshots, animate=_circle_animate),
}


# --------------------------------------------------------------------------------------
# diagnostics (geometry-independent: time series only)
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Panel:
    key: str
    title: str
    ylabel: str


def _diagnostic_panels(ds: xr.Dataset) -> list[_Panel]:
    panels = []
    if "order_parameter" in ds.data_vars:
        panels.append(_Panel("order_parameter", "order parameter", "r(t)"))
    if "energy" in ds.data_vars:
        panels.append(_Panel("energy", "energy", "E(t)" + _units_suffix(ds["energy"])))
    if "free_energy" in ds.data_vars:
        panels.append(_Panel("free_energy", "free energy", "F(t)"
                             + _units_suffix(ds["free_energy"])))
    if "mass" in ds.data_vars:
        panels.append(_Panel("mass", "mass error", "|M(t) − M(0)| / M(0)"))
    return panels


def _series(ds: xr.Dataset, key: str) -> np.ndarray:
    var = ds[key]
    if var.dims != ("time",):
        raise ConfigError(f"{key!r} has dimensions {var.dims}; expected ('time',)", key)
    return np.asarray(var.values, dtype=float)


def _draw_panel(ds: xr.Dataset, panel: _Panel, ax: Axes) -> None:
    t = np.asarray(ds["time"].values, dtype=float)
    y = _series(ds, panel.key)
    if panel.key == "mass":
        m0 = y[0]
        scale = abs(m0) if np.isfinite(m0) and m0 != 0 else 1.0
        with np.errstate(invalid="ignore"):
            err = np.abs(y - m0) / scale
        y = np.where(np.isfinite(err), np.maximum(err, _MASS_ERROR_FLOOR), np.nan)
        ax.set_yscale("log")
        # the error at t[0] is zero by definition; drawing it would only add a spike
        # down to the floor
        start = 1 if t.size > 1 else 0
        ax.plot(t[start:], y[start:], color="C3", marker="." if t.size <= 30 else None)
    elif panel.key == "order_parameter":
        ax.plot(t, y, color="C0", marker="." if t.size <= 30 else None)
        ax.set_ylim(-0.02, 1.02)
    else:
        colour = "C1" if panel.key == "energy" else "C2"
        ax.plot(t, y, color=colour, marker="." if t.size <= 30 else None)
        ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 4), useOffset=True)
    if t.size > 1:
        ax.set_xlim(t[0], t[-1])
    ax.set_xlabel(_time_label(ds))
    ax.set_ylabel(panel.ylabel)
    ax.set_title(panel.title)


# --------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------
def spacetime(ds: xr.Dataset, ax: Axes, *, log: bool | str = False, cmap: str = "magma",
              colorbar: bool = True) -> QuadMesh:
    """Draw the density over (angle, time) as an image.

    Args:
        ds: a result dataset (see the module docstring).
        ax: the axes to draw into; its figure gets the colorbar.
        log: logarithmic colour scale (spanning at most 8 decades below the maximum;
            non-positive values are shown in the lowest colour). ``"auto"`` chooses log
            when the peak density exceeds 25 times the uniform density 1/(2π), as when
            clusters form, so the rest of the image does not come out black.
        cmap: a perceptually uniform matplotlib colormap name.
        colorbar: add a colorbar labelled "ρ(θ, t)" beside ``ax``.

    Returns:
        The ``QuadMesh`` drawn.

    Raises:
        ConfigError: the dataset cannot be plotted (wrong geometry, no density, ...).
    """
    plots, ds = _prepare(ds)
    return plots.spacetime(ds, ax, log=log, cmap=cmap, colorbar=colorbar)


def snapshots(ds: xr.Dataset, ax: Axes, times: Sequence[float] | None = None, n: int = 5,
              *, log: bool | str = False, cmap: str = "viridis",
              reference: bool = True) -> list:
    """Draw density curves at a few saved times, coloured from early (dark) to late.

    Args:
        ds: a result dataset.
        ax: the axes to draw into.
        times: the times wanted; each is replaced by the nearest saved time (duplicates
            dropped). ``None`` picks ``n`` saved times evenly spread over the run.
        n: number of curves when ``times`` is ``None`` (at most the number saved).
        log: logarithmic density axis (at most 8 decades deep); ``"auto"`` as in
            ``spacetime``, judged on the curves drawn.
        cmap: sequential colormap for the curves.
        reference: draw the uniform density 1/(2π) as a dashed grey line.

    Returns:
        The ``Line2D`` objects of the curves, earliest first. Up to 8 curves get a
        legend "t = …"; more get a colorbar of time instead.

    Raises:
        ConfigError: the dataset cannot be plotted, or ``n``/``times`` are invalid.
    """
    plots, ds = _prepare(ds)
    return plots.snapshots(ds, ax, times=times, n=n, log=log, cmap=cmap,
                           reference=reference)


def diagnostics(ds: xr.Dataset, axes: Sequence[Axes] | None = None) -> list[Axes]:
    """Draw the time series: order parameter, energy, free energy, relative mass error.

    One panel per variable present, in that order: ``free_energy`` only exists for runs
    with noise (finite kappa). The mass error |M(t) − M(0)|/M(0) is on a log axis,
    floored at 1e-17 so exact conservation still shows.

    Args:
        ds: a result dataset.
        axes: as many axes as there are panels (3 without free energy, 4 with), or
            ``None`` to make a new figure with the panels in a row.

    Returns:
        The axes drawn into, in panel order.

    Raises:
        ConfigError: the dataset cannot be plotted or has none of these variables.
        ValueError: ``axes`` has the wrong length.
    """
    _, ds = _prepare(ds)
    panels = _diagnostic_panels(ds)
    if not panels:
        found = ", ".join(sorted(map(str, ds.data_vars))) or "none"
        raise ConfigError(
            f"dataset has no diagnostic time series (data variables found: {found}); "
            "expected some of 'order_parameter', 'energy', 'free_energy', 'mass'",
            "order_parameter")
    if axes is None:
        with _style():
            fig = _new_figure((2.6 * len(panels), 2.6))
            axes = list(fig.subplots(1, len(panels), squeeze=False)[0])
            for panel, ax in zip(panels, axes):
                _draw_panel(ds, panel, ax)
        return axes
    axes = list(np.ravel(np.asarray(axes, dtype=object)))
    if len(axes) != len(panels):
        raise ValueError(
            f"diagnostics needs {len(panels)} axes for this dataset "
            f"({', '.join(p.key for p in panels)}); got {len(axes)}")
    for panel, ax in zip(panels, axes):
        _draw_panel(ds, panel, ax)
    return axes


def _check_log(log: Any) -> None:
    if not (isinstance(log, (bool, np.bool_)) or log == "auto"):
        raise ConfigError(f"log = {log!r}; valid: True, False, 'auto'", "log")


def _summary_figure(plots: _GeometryPlots, ds: xr.Dataset, log: bool | str) -> Figure:
    panels = _diagnostic_panels(ds)
    with _style():
        fig = _new_figure((7.5, 6.2) if panels else (7.5, 3.6))
        fig.get_layout_engine().set(w_pad=0.04, h_pad=0.04, hspace=0.06, wspace=0.04)
        grid = fig.add_gridspec(2 if panels else 1, 1, height_ratios=[1.35, 1] if panels
                                else None)
        top = grid[0].subgridspec(1, 2, width_ratios=[1.1, 1])
        ax_st = fig.add_subplot(top[0])
        ax_sn = fig.add_subplot(top[1])
        plots.spacetime(ds, ax_st, log=log)
        ax_st.set_title("density", loc="left")
        plots.snapshots(ds, ax_sn, log=log)
        ax_sn.set_title("snapshots", loc="left")
        letters = "abcdefgh"
        axes = [ax_st, ax_sn]
        if panels:
            bottom = grid[1].subgridspec(1, len(panels))
            for k, panel in enumerate(panels):
                ax = fig.add_subplot(bottom[k])
                _draw_panel(ds, panel, ax)
                axes.append(ax)
        for letter, ax in zip(letters, axes):
            ax.set_title(f"({letter}) {ax.get_title(loc='left') or ax.get_title()}",
                         loc="left")
            ax.set_title("")  # one title per panel, on the left
        fig.suptitle(_title(ds))
    return fig


def figure(ds: xr.Dataset, *, log: bool | str = "auto") -> Figure:
    """One summary figure: space-time density, snapshots and diagnostics.

    Top row: the density image over (θ, t) and density curves at five times; bottom
    row: the diagnostics panels (see ``diagnostics``). The title is the dataset's
    ``title`` attr (if any) with model, β, κ (∞ when infinite) and method.

    Args:
        ds: a result dataset.
        log: log density scale in the top panels: True, False or ``"auto"`` (log once
            the peak exceeds 25 times the uniform density; see ``spacetime``).

    Returns:
        A ``matplotlib.figure.Figure`` (not registered with pyplot; save it with
        ``fig.savefig`` or display it in a notebook).

    Raises:
        ConfigError: the dataset cannot be plotted.
    """
    _check_log(log)
    plots, ds = _prepare(ds)
    return _summary_figure(plots, ds, log)


def plot_result(ds: xr.Dataset, out_dir: str | os.PathLike, stem: str | None = None,
                animate: bool = False, dpi: float = 150, *,
                log: bool | str = "auto") -> list[Path]:
    """Write the standard figures (and optionally an animation) of a result.

    Files written into ``out_dir`` (created if missing), each atomically (temp file in
    the same directory, then ``os.replace``), replacing existing files of that name:
    ``{stem}_summary.png``, ``{stem}_spacetime.png``, ``{stem}_snapshots.png``,
    ``{stem}_diagnostics.png`` (only if the dataset has diagnostic series) and, with
    ``animate=True``, ``{stem}_animation.gif`` (density over θ evolving in time, at
    most 100 frames subsampled evenly from the saved times, 12 frames per second, at
    ``min(dpi, 100)``).

    Args:
        ds: a result dataset.
        out_dir: output directory.
        stem: file name prefix; defaults to ``"result"``.
        animate: also write the GIF (slow: each frame is a full redraw, so 100 frames
            take ten to thirty seconds).
        dpi: resolution of the PNG files.
        log: log density scale for the image, snapshots and animation: True, False or
            ``"auto"`` (see ``spacetime``).

    Returns:
        The paths written, in the order above.

    Raises:
        ConfigError: the dataset cannot be plotted, or ``stem``/``dpi``/``log`` are
            invalid. Nothing is written then.
    """
    _check_log(log)
    plots, ds = _prepare(ds)
    stem = "result" if stem is None else str(stem)
    if not stem or os.sep in stem or (os.altsep and os.altsep in stem) or stem in (".", ".."):
        raise ConfigError(f"stem = {stem!r} must be a non-empty file name prefix without "
                          "path separators", "stem")
    if isinstance(dpi, bool) or not isinstance(dpi, (int, float)) or not dpi > 0:
        raise ConfigError(f"dpi = {dpi!r} must be a positive number", "dpi")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def save(fig: Figure, name: str) -> None:
        path = out / f"{stem}_{name}.png"
        with _style():
            written.append(write_atomic(path, lambda tmp: fig.savefig(tmp, format="png",
                                                                      dpi=dpi)))

    save(_summary_figure(plots, ds, log), "summary")
    with _style():
        fig = _new_figure((4.2, 3.4))
        ax = fig.add_subplot()
        plots.spacetime(ds, ax, log=log)
        ax.set_title(_title(ds), fontsize=8)
    save(fig, "spacetime")
    with _style():
        fig = _new_figure((4.2, 3.4))
        ax = fig.add_subplot()
        plots.snapshots(ds, ax, log=log)
        ax.set_title(_title(ds), fontsize=8)
    save(fig, "snapshots")
    if _diagnostic_panels(ds):
        axes = diagnostics(ds)
        axes[0].figure.suptitle(_title(ds), fontsize=10)
        save(axes[0].figure, "diagnostics")
    if animate:
        path = out / f"{stem}_animation.gif"
        plots.animate(ds, path, dpi=min(float(dpi), 100.0), fps=12, max_frames=_MAX_FRAMES,
                      log=log)
        written.append(path)
    return written
