"""Circle figures: density over (θ, t), density curves, the animated curve.

Angles are drawn relative to the mean direction θ̄ of the last saved density, on
[−π, π): a cluster is never cut by the frame's edge wherever it forms, and the axis label
gives θ̄. The image is closed across the periodic seam (its cells cover all of [−π, π]).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from meanfield.errors import ConfigError
from meanfield.plotting.common import _GeometryPlots, _register
from meanfield.plotting.helpers import (
    _MAX_LEGEND_ENTRIES,
    TWO_PI,
    _check_coords_numeric,
    _check_density,
    _caption,
    _centred_grid,
    _centred_theta_axis,
    _diagnostic_panels,
    _diagnostics_row,
    _fmt_time,
    _frame_indices,
    _freeze_layout,
    _letter_panels,
    _log_limits,
    _mean_angle,
    _new_figure,
    _norm,
    _save_animation,
    _shown,
    _snapshot_indices,
    style,
    _time_edges,
    _time_label,
    _title,
    _units_suffix,
    _use_log,
)
from meanfield.plotting.legible import _distinct_snapshots

if TYPE_CHECKING:  # pragma: no cover - typing only
    import xarray as xr
    from matplotlib.axes import Axes
    from matplotlib.collections import QuadMesh
    from matplotlib.figure import Figure

UNIFORM = 1.0 / TWO_PI


_SEAM_WIDTH = 0.5  # rad each side of the frame's edge that must hold no cluster


def _centre(ds: xr.Dataset) -> tuple[float, str]:
    """(θ̄, its description): the mean direction of the last saved density; or, when
    that puts a cluster (density above uniform) within ``_SEAM_WIDTH`` of the frame's
    edge θ̄ ± π, the middle of the widest arc where the density stays below uniform is
    put on the edge instead. Several clusters have a mean direction that says little
    (the three clusters of the demo: r = 0.08), and one of them sat at θ − θ̄ = 2.9, on
    the frame's right edge."""
    theta = np.asarray(ds["theta"].values, dtype=float)
    t = np.asarray(ds["time"].values, dtype=float)
    last = _density_array(ds)[-1]
    centre = _mean_angle(theta, last)
    description = f"mean direction at t = {_fmt_time(t[-1])}"
    near_seam = np.abs(np.angle(np.exp(1j * (theta - centre - np.pi)))) < _SEAM_WIDTH
    above = np.isfinite(last) & (last > UNIFORM)
    if not np.any(above & near_seam) or above.all():
        return centre, description
    # the widest run of cells at or below uniform, circularly: its middle goes on the edge
    order = np.argsort(np.mod(theta, TWO_PI))
    angles, high = np.mod(theta, TWO_PI)[order], above[order]
    peaks = angles[high]
    gaps = np.diff(np.concatenate([peaks, [peaks[0] + TWO_PI]]))
    k = int(np.argmax(gaps))
    seam = peaks[k] + gaps[k] / 2
    centre = float(np.angle(np.exp(1j * (seam + np.pi))))
    return centre, "opposite the widest gap"  # (of the last density: a long label)


def _theta_axis(ax: Axes, ds: xr.Dataset) -> None:
    """θ − θ̄ on the x axis from −π to π, θ̄ given in the label."""
    _centred_theta_axis(ax, *_centre(ds))


def _closed_curve(ds: xr.Dataset, rho: np.ndarray, centre: float | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of density curves relative to ``centre`` (default θ̄ of ``ds``), closed one
    point past ±π on each side."""
    theta = np.asarray(ds["theta"].values, dtype=float)
    centre = _centre(ds)[0] if centre is None else centre
    c, _, values = _centred_grid(theta, rho, centre)
    return np.concatenate([[c[-1] - TWO_PI], c, [c[0] + TWO_PI]]), values


def _density_label(ds: xr.Dataset) -> str:
    return "ρ(θ, t)" + _units_suffix(ds["density"])


def _check_circle(ds: xr.Dataset) -> xr.Dataset:
    """Validate a circle dataset; return it with theta in [0, 2π) and both axes sorted."""
    _check_density(ds, ("time", "theta"), "circle")
    if ds.sizes["theta"] < 2:
        raise ConfigError(
            f"theta has {ds.sizes['theta']} point(s); circle plots need at least 2", "theta")
    _check_coords_numeric(ds, ("time", "theta"))
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


def _density_array(ds: xr.Dataset) -> np.ndarray:
    return np.asarray(ds["density"].transpose("time", "theta").values, dtype=float)


def _circle_spacetime(ds: xr.Dataset, ax: Axes, *, log: bool | str = False,
                      cmap: str = "magma", colorbar: bool = True) -> QuadMesh:
    rho = _density_array(ds)
    theta = np.asarray(ds["theta"].values, dtype=float)
    t = np.asarray(ds["time"].values, dtype=float)
    norm = _norm(rho, log, UNIFORM)
    _, edges, values = _centred_grid(theta, rho, _centre(ds)[0])
    mesh = ax.pcolormesh(edges, _time_edges(t), _shown(values, norm),
                         cmap=cmap, norm=norm, shading="flat", rasterized=True)
    _theta_axis(ax, ds)
    if t.size > 1:
        ax.set_ylim(t[0], t[-1])
    ax.set_ylabel(_time_label(ds))
    if colorbar:
        cbar = ax.figure.colorbar(mesh, ax=ax, pad=0.02)
        cbar.set_label(_density_label(ds))
    return mesh


def _circle_snapshots(ds: xr.Dataset, ax: Axes, times: Sequence[float] | None = None,
                      n: int = 5, *, log: bool | str = False, cmap: str | None = None,
                      reference: bool = True) -> list:
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    cmap = "viridis" if cmap is None else cmap
    rho = _density_array(ds)
    t = np.asarray(ds["time"].values, dtype=float)
    idx = (_distinct_snapshots(t, rho, _snapshot_indices(t, None, n).size)
           if times is None else _snapshot_indices(t, times, n))
    x, closed = _closed_curve(ds, rho)
    colours = colormaps[cmap](np.linspace(0.0, 0.85, idx.size))  # skip the palest end
    lines = []
    if reference:
        ax.axhline(UNIFORM, color="0.6", lw=0.9, ls="--", zorder=1, label="uniform")
    # later curves on top and thinner, translucent, so that none hides an earlier one
    widths = np.linspace(2.2, 1.1, idx.size)
    for k, (colour, i) in enumerate(zip(colours, idx)):
        (line,) = ax.plot(x, closed[i], color=colour, label=f"t = {_fmt_time(t[i])}",
                          lw=widths[k], alpha=0.85, zorder=2 + k)
        lines.append(line)
    _theta_axis(ax, ds)
    ax.set_ylabel(_density_label(ds))
    if _use_log(log, rho[idx], UNIFORM):
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
                    max_frames: int, log: bool | str = False, points: Any = None) -> None:
    rho = _density_array(ds)
    t = np.asarray(ds["time"].values, dtype=float)
    frames = _frame_indices(t.size, max_frames)
    closed_theta, values = _closed_curve(ds, rho)

    def closed(i: int) -> np.ndarray:
        return values[i]

    with style():
        fig = _new_figure((5.0, 3.2))
        ax = fig.add_subplot()
        ax.axhline(UNIFORM, color="0.6", lw=0.9, ls="--", label="uniform")
        ax.plot(closed_theta, closed(0), color="0.75", lw=1.0, label=f"t = {_fmt_time(t[0])}")
        (line,) = ax.plot(closed_theta, closed(frames[0]), color="C0", lw=1.8, label="ρ(θ, t)")
        _theta_axis(ax, ds)
        ax.set_ylabel(_density_label(ds))
        if _use_log(log, rho, UNIFORM):
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

        # lay out once, with the widest time label
        update(frames[int(np.argmax([len(_fmt_time(t[i])) for i in frames]))])
        _freeze_layout(fig)
        _save_animation(fig, update, frames, path, fps=fps, dpi=dpi)


def _circle_summary(ds: xr.Dataset, *, log: bool | str, points: Any = None) -> Figure:
    panels = _diagnostic_panels(ds)
    with style():
        fig = _new_figure((7.5, 6.2) if panels else (7.5, 3.6))
        fig.get_layout_engine().set(w_pad=0.04, h_pad=0.04, hspace=0.06, wspace=0.04)
        grid = fig.add_gridspec(2 if panels else 1, 1, height_ratios=[1.35, 1] if panels
                                else None)
        top = grid[0].subgridspec(1, 2, width_ratios=[1.1, 1])
        ax_st = fig.add_subplot(top[0])
        ax_sn = fig.add_subplot(top[1])
        _circle_spacetime(ds, ax_st, log=log)
        ax_st.set_title("density", loc="left")
        _circle_snapshots(ds, ax_sn, log=log)
        ax_sn.set_title("snapshots", loc="left")
        axes = [ax_st, ax_sn]
        if panels:
            axes += _diagnostics_row(ds, fig, grid[1])
        _letter_panels(axes)
        fig.suptitle(_title(ds))
        _caption(fig, ds)
    return fig


def _single(draw):
    """A page of ``plot_result``: one panel drawn by ``draw``, titled with the run."""

    def build(ds: xr.Dataset, *, log: bool | str, points: Any = None) -> Figure:
        with style():
            fig = _new_figure((4.2, 3.4))
            ax = fig.add_subplot()
            draw(ds, ax, log=log)
            ax.set_title(_title(ds), fontsize=8)
        return fig

    return build


_register("circle", _GeometryPlots(
    check=_check_circle, spacetime=_circle_spacetime, snapshots=_circle_snapshots,
    summary=_circle_summary,
    pages=(("spacetime", _single(_circle_spacetime)),
           ("snapshots", _single(_circle_snapshots))),
    animate=_circle_animate))
