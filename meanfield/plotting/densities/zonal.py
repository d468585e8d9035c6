"""Zonal figures (``geometry = "zonal"``: densities on S^{d-1} that depend only on the
polar angle θ to the axis e, any d): the density in θ and the marginal of t = cos θ at
several times coloured by time, the marginal over (t, time), the summary figure and the
pages of ``plot_result``, the animated curves; registers the ``"zonal"`` geometry.

Two views, because in high dimension they differ: the density ρ(θ) (against the
normalized measure, uniform = 1) is largest on the axis, but the measure near the axis,
w_d sin^{d−2} θ, is tiny, so the mass sits where the marginal of t = cos θ peaks (at
t ≈ 0 for the uniform density, within about 1/√d; at t ≈ r once a cluster forms). The
curves come from ``zonal_grid`` (a spectral result drawn as its polynomial).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from meanfield.errors import ConfigError
from meanfield.plotting.common import _GeometryPlots, _prepare, _register
from meanfield.plotting.helpers import (
    _caption,
    _diagnostic_panels,
    _diagnostics_row,
    _fmt_time,
    _frame_indices,
    _freeze_layout,
    _letter_panels,
    _log_limits,
    _new_figure,
    _norm,
    _save_animation,
    _shown,
    _snapshot_indices,
    _time_edges,
    _time_label,
    _title,
    _use_log,
    style,
)
from meanfield.plotting.densities.zonal_grid import (
    UNIFORM,
    _check_zonal,
    _Zonal,
    support,
    uniform_marginal,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    import xarray as xr
    from matplotlib.axes import Axes
    from matplotlib.cm import ScalarMappable
    from matplotlib.collections import QuadMesh
    from matplotlib.figure import Figure

SLICES = 7  # time slices of the summary and the snapshots
_MASS_REGION = 1e-6  # the density's log axis reaches down to where the marginal is this
_DECADES = 1e14  # ...but no further below its largest value (double precision's floor)
DENSITY_LABEL = "density ρ(θ) (uniform = 1)"
MARGINAL_LABEL = "density of t = cos θ"


def _time_colours(t: np.ndarray, cmap: str) -> tuple[np.ndarray, ScalarMappable]:
    """One colour per time slice, spread evenly over ``cmap`` by order (the slices
    cluster where the state changes fast, and colours by the clock then looked alike;
    the palest 15 % left out, so that no curve fades into the white page), and the
    mappable of a colorbar with one band per slice, labelled with its time."""
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import BoundaryNorm, ListedColormap

    colours = colormaps[cmap](np.linspace(0.0, 0.85, t.size))
    norm = BoundaryNorm(np.arange(t.size + 1) - 0.5, t.size)
    return colours, ScalarMappable(norm=norm, cmap=ListedColormap(colours))


def _theta_axis(ax: Axes) -> None:
    ax.set_xlim(0.0, math.pi)
    ax.set_xticks([0.0, math.pi / 4, math.pi / 2, 3 * math.pi / 4, math.pi])
    ax.set_xticklabels(["0", "π/4", "π/2", "3π/4", "π"])
    ax.set_xlabel("polar angle θ to the axis (rad)")


def _t_axis(ax: Axes) -> None:
    """x = t = cos θ with at most 6 plain ticks (−1.00, −0.75, ... crowded the panel)."""
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))
    ax.set_xlabel("t = cos θ = ⟨x, e⟩")


def _density_limits(z: _Zonal, idx: np.ndarray) -> tuple[float, float]:
    """Log-axis limits: from the smallest density where the mass is (the marginal above
    ``_MASS_REGION`` of its peak at that time) to the largest value drawn (in high
    dimension the density on the axis is many decades above it, on a set of tiny
    measure: at d = 64 with r = 0.69, 1e8 times its value where the mass peaks), at
    most ``_DECADES`` deep: a double-precision series whose largest value is M holds
    nothing below about 1e-14 M (what is drawn there is round-off)."""
    rho, m = z.rho[idx], np.nan_to_num(z.marginal[idx], nan=0.0)
    region = (m > _MASS_REGION * m.max(axis=1, keepdims=True)) & (rho > 0)
    low = rho[region & np.isfinite(rho)]
    high = rho[np.isfinite(rho) & (rho > 0)]
    if low.size == 0:
        return _log_limits(rho)
    top = float(high.max())
    return max(float(low.min()) / 3.0, top / _DECADES), top * 3.0


def _draw_density(z: _Zonal, ax: Axes, idx: np.ndarray, colours: np.ndarray,
                  log: bool | str, reference: bool) -> list:
    if reference:
        ax.axhline(UNIFORM, color="0.6", lw=0.9, ls="--", zorder=1, label="uniform")
    widths = np.linspace(2.0, 1.1, idx.size)  # later curves on top and thinner
    lines = [ax.plot(z.theta, z.rho[i], color=c, lw=w, alpha=0.9, zorder=2 + k)[0]
             for k, (i, c, w) in enumerate(zip(idx, colours, widths))]
    _theta_axis(ax)
    ax.set_ylabel(DENSITY_LABEL)
    if _use_log(log, z.rho[idx], UNIFORM):
        ax.set_yscale("log")
        ax.set_ylim(*_density_limits(z, idx))
    else:
        ax.set_ylim(bottom=min(0.0, float(np.nanmin(z.rho[idx]))))
    return lines


def _draw_marginal(z: _Zonal, ax: Axes, idx: np.ndarray, colours: np.ndarray,
                   reference: bool) -> list:
    x = z.cos
    if reference:
        ax.plot(x, uniform_marginal(z.dim, x), color="0.6", lw=0.9, ls="--", zorder=1,
                label="uniform")
    widths = np.linspace(2.0, 1.1, idx.size)
    lines = [ax.plot(x, z.marginal[i], color=c, lw=w, alpha=0.9, zorder=2 + k)[0]
             for k, (i, c, w) in enumerate(zip(idx, colours, widths))]
    ax.set_xlim(*support(z.marginal[idx], x))
    _t_axis(ax)
    ax.set_ylim(bottom=0.0)
    ax.set_ylabel(MARGINAL_LABEL)
    return lines


def _pick(z: _Zonal, times: Sequence[float] | None, n: int) -> np.ndarray:
    return z.slices(_snapshot_indices(z.t, None, n).size) if times is None \
        else _snapshot_indices(z.t, times, n)


def _time_colorbar(ax: Any, sm: ScalarMappable, times: np.ndarray, ds: xr.Dataset
                   ) -> None:
    """The colorbar of the slices beside ``ax`` (one axes or a list of them): a band
    per slice, labelled with its time."""
    figure = (ax[0] if isinstance(ax, list) else ax).figure
    cbar = figure.colorbar(sm, ax=ax, pad=0.02, aspect=25, ticks=np.arange(times.size))
    cbar.ax.set_yticklabels([_fmt_time(v) for v in times])
    cbar.ax.tick_params(length=0)
    cbar.set_label(_time_label(ds))


def _zonal_snapshots(ds: xr.Dataset, ax: Axes, times: Sequence[float] | None = None,
                     n: int = SLICES, *, log: bool | str = False, cmap: str | None = None,
                     reference: bool = True, colorbar: bool = True) -> list:
    """The density in θ at a few saved times, coloured by time (a time colorbar)."""
    z = _Zonal.of(ds)
    idx = _pick(z, times, n)
    colours, sm = _time_colours(z.t[idx], "viridis" if cmap is None else cmap)
    lines = _draw_density(z, ax, idx, colours, log, reference)
    if colorbar:
        _time_colorbar(ax, sm, z.t[idx], ds)
    return lines


def marginal_snapshots(ds: xr.Dataset, ax: Axes, times: Sequence[float] | None = None,
                       n: int = SLICES, *, cmap: str = "viridis", reference: bool = True,
                       colorbar: bool = True) -> list:
    """Draw the marginal of t = cos θ of a zonal result at a few saved times.

    Args:
        ds: a zonal result (``meanfield.evolve`` with ``geometry = "zonal"``).
        ax: the axes to draw into.
        times: the times wanted (each replaced by the nearest saved one); None: ``n``
            times spread over the change of the marginal.
        n: number of curves when ``times`` is None.
        cmap: colormap of the times.
        reference: draw the uniform density's marginal w_d (1 − t²)^{(d−3)/2} dashed.
        colorbar: add a colorbar of time beside ``ax``.

    Returns:
        The ``Line2D`` of each curve, earliest first.

    Raises:
        ConfigError: the dataset is not a zonal result (see ``meanfield.plotting``).
    """
    plots, ds = _prepare(ds)
    if plots.check is not _check_zonal:
        raise ConfigError(f"marginal_snapshots draws zonal results; this dataset's "
                          f"geometry is {ds.attrs.get('geometry')!r}", "geometry")
    z = _Zonal.of(ds)
    idx = _pick(z, times, n)
    colours, sm = _time_colours(z.t[idx], cmap)
    lines = _draw_marginal(z, ax, idx, colours, reference)
    if colorbar:
        _time_colorbar(ax, sm, z.t[idx], ds)
    return lines


def _zonal_spacetime(ds: xr.Dataset, ax: Axes, *, log: bool | str = False,
                     cmap: str = "magma", colorbar: bool = True) -> QuadMesh:
    """The marginal of t over (t, time): where the mass is at every saved time."""
    z = _Zonal.of(ds)
    order = np.argsort(z.cos)
    x, values = z.cos[order], np.nan_to_num(z.marginal[:, order], nan=0.0)
    mid = 0.5 * (x[1:] + x[:-1])
    edges = np.concatenate([[max(-1.0, 2 * x[0] - mid[0])], mid,
                            [min(1.0, 2 * x[-1] - mid[-1])]])
    norm = _norm(values, log, float(uniform_marginal(z.dim, np.array([0.0]))[0]))
    mesh = ax.pcolormesh(edges, _time_edges(z.t), _shown(values, norm), cmap=cmap,
                         norm=norm, shading="flat", rasterized=True)
    ax.set_xlim(*support(values, x))
    _t_axis(ax)
    if z.t.size > 1:
        ax.set_ylim(z.t[0], z.t[-1])
    ax.set_ylabel(_time_label(ds))
    if colorbar:
        ax.figure.colorbar(mesh, ax=ax, pad=0.02).set_label(MARGINAL_LABEL)
    return mesh


def _superscript(n: int) -> str:
    return str(n).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))


def zonal_title(ds: xr.Dataset) -> str:
    """The run's title (``_title``) with the sphere: '...; zonal on S⁶³'."""
    return f"{_title(ds)}; zonal on S{_superscript(int(ds.attrs['dim']) - 1)}"


def _slice_pair(ds: xr.Dataset, fig: Figure, spec: Any, log: bool | str) -> list[Axes]:
    """The density in θ and the marginal in t side by side, one time colorbar."""
    z = _Zonal.of(ds)
    idx = z.slices(SLICES)
    colours, sm = _time_colours(z.t[idx], "viridis")
    row = spec.subgridspec(1, 2, wspace=0.05)
    axes = [fig.add_subplot(row[0]), fig.add_subplot(row[1])]
    _draw_density(z, axes[0], idx, colours, log, True)
    _draw_marginal(z, axes[1], idx, colours, True)
    axes[0].set_title(f"density in θ, {idx.size} times", loc="left")
    axes[1].set_title("marginal of t = cos θ", loc="left")
    axes[1].legend(loc="upper left", handlelength=1.6)
    _time_colorbar(axes, sm, z.t[idx], ds)
    return axes


def _zonal_summary(ds: xr.Dataset, *, log: bool | str, points: Any = None) -> Figure:
    panels = _diagnostic_panels(ds)
    with style():
        fig = _new_figure((7.5, 5.8) if panels else (7.5, 3.2))
        fig.get_layout_engine().set(w_pad=0.04, h_pad=0.04, hspace=0.08, wspace=0.04)
        grid = fig.add_gridspec(2 if panels else 1, 1,
                                height_ratios=[1.25, 1] if panels else None)
        axes = _slice_pair(ds, fig, grid[0], log)
        if panels:
            axes += _diagnostics_row(ds, fig, grid[1])
        _letter_panels(axes)
        fig.suptitle(zonal_title(ds))
        _caption(fig, ds)
    return fig


def _slices_page(ds: xr.Dataset, *, log: bool | str, points: Any = None) -> Figure:
    with style():
        fig = _new_figure((7.5, 3.2))
        _letter_panels(_slice_pair(ds, fig, fig.add_gridspec(1, 1)[0], log))
        fig.suptitle(zonal_title(ds), fontsize=9)
    return fig


def _spacetime_page(ds: xr.Dataset, *, log: bool | str, points: Any = None) -> Figure:
    with style():
        fig = _new_figure((4.2, 3.4))
        ax = fig.add_subplot()
        _zonal_spacetime(ds, ax, log=log)
        ax.set_title(zonal_title(ds), fontsize=8)
    return fig


def _zonal_animate(ds: xr.Dataset, path: Path, *, dpi: float, fps: float,
                   max_frames: int, log: bool | str = False, points: Any = None) -> None:
    """The density in θ and the marginal in t over time, on fixed axes, the first
    saved time in grey behind."""
    z = _Zonal.of(ds)
    frames = _frame_indices(z.t.size, max_frames)
    grey = np.array([[0.75, 0.75, 0.75, 1.0]])
    with style():
        fig = _new_figure((7.5, 3.0))
        axes = fig.subplots(1, 2)
        first = np.array([0])
        _draw_density(z, axes[0], first, grey, False, True)
        _draw_marginal(z, axes[1], first, grey, True)
        (rho,) = axes[0].plot(z.theta, z.rho[frames[0]], color="C0", lw=1.8)
        (mar,) = axes[1].plot(z.cos, z.marginal[frames[0]], color="C0", lw=1.8)
        if _use_log(log, z.rho[frames], UNIFORM):
            axes[0].set_yscale("log")
            axes[0].set_ylim(*_density_limits(z, frames))
        else:
            axes[0].set_ylim(0.0, 1.05 * float(np.nanmax(z.rho[frames])))
        axes[1].set_xlim(*support(z.marginal[frames], z.cos))
        axes[1].set_ylim(0.0, 1.05 * float(np.nanmax(z.marginal[frames])))
        label = axes[1].text(0.98, 0.95, "", transform=axes[1].transAxes, ha="right",
                             va="top")
        fig.suptitle(zonal_title(ds), fontsize=8)

        def update(i: int):
            rho.set_ydata(z.rho[i])
            mar.set_ydata(z.marginal[i])
            label.set_text(f"t = {_fmt_time(z.t[i])}")
            return rho, mar, label

        update(frames[int(np.argmax([len(_fmt_time(z.t[i])) for i in frames]))])
        _freeze_layout(fig)
        _save_animation(fig, update, frames, path, fps=fps, dpi=dpi)


_register("zonal", _GeometryPlots(
    check=_check_zonal, spacetime=_zonal_spacetime, snapshots=_zonal_snapshots,
    summary=_zonal_summary,
    pages=(("slices", _slices_page), ("spacetime", _spacetime_page)),
    animate=_zonal_animate))
