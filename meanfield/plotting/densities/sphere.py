"""Sphere figures: latitude-time image, rows of snapshot maps, the summary figure and the
pages of ``plot_result``, the animated map; registers the ``"sphere"`` geometry.

The grid and its validation are in ``sphere_grid``, the Mollweide and orthographic maps
(``map_mollweide``, ``map_orthographic``, re-exported here) in ``sphere_maps``.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from meanfield.errors import ConfigError
from meanfield.plotting.common import _GeometryPlots, _register
from meanfield.plotting.helpers import (
    _caption,
    _diagnostic_panels,
    _diagnostics_row,
    _fmt_time,
    _frame_indices,
    _freeze_layout,
    _letter_panels,
    _new_figure,
    _norm,
    _save_animation,
    _shown,
    _snapshot_indices,
    style,
    _time_edges,
    _time_label,
    _title,
)
from meanfield.plotting.legible import (
    MEAN_DIRECTION_NOTE,
    _add_note,
    _distinct_snapshots,
)
from meanfield.plotting.densities.sphere_grid import (
    UNIFORM,
    _cells_to_latlon,  # noqa: F401  (re-exported: tests import it from here)
    _check_sphere,
    _Grid,
    _points_array,
)
from meanfield.plotting.densities.sphere_maps import (
    _check_mollweide_axes,
    _colorbar,
    _default_center,
    _draw_mollweide,
    _draw_orthographic,
    _mollweide_cells,  # noqa: F401  (re-exported: tests import it from here)
    _mollweide_xy,
    map_mollweide,  # noqa: F401  (public, re-exported: importable from here as before)
    map_orthographic,  # noqa: F401  (public, re-exported)
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    import xarray as xr
    from matplotlib.axes import Axes
    from matplotlib.collections import QuadMesh
    from matplotlib.figure import Figure


# --------------------------------------------------------------------------------------
# the generic plots: spacetime, snapshots, summary, pages, animation
# --------------------------------------------------------------------------------------
def _sphere_spacetime(ds: xr.Dataset, ax: Axes, *, log: bool | str = False,
                      cmap: str = "magma", colorbar: bool = True) -> QuadMesh:
    g = _Grid.of(ds)
    with np.errstate(invalid="ignore"):
        peak = np.nanmax(np.where(np.isfinite(g.rho), g.rho, -np.inf), axis=2)
    peak = np.where(np.isfinite(peak), peak, np.nan)
    norm = _norm(peak, log, UNIFORM)
    mesh = ax.pcolormesh(np.degrees(g.lat_edges), _time_edges(g.t), _shown(peak, norm),
                         cmap=cmap, norm=norm, shading="flat", rasterized=True)
    ax.set_xlim(-90, 90)
    ax.set_xticks([-90, -45, 0, 45, 90])
    ax.set_xticklabels(["−90°", "−45°", "0°", "45°", "90°"])
    ax.set_xlabel("latitude")
    if g.t.size > 1:
        ax.set_ylim(g.t[0], g.t[-1])
    ax.set_ylabel(_time_label(ds))
    if colorbar:
        _colorbar(mesh, ax, "max over longitude of " + g.label)
    return mesh


def _map_row(ax: Any, count: int) -> list[Axes]:
    """``count`` Mollweide axes: the given ones, or the slot of one axes split in a row."""
    if isinstance(ax, (list, tuple, np.ndarray)):
        axes = list(np.ravel(np.asarray(ax, dtype=object)))
        if len(axes) != count:
            raise ConfigError(f"{len(axes)} axes given for {count} snapshot maps; pass one "
                              "Mollweide axes per snapshot, or one axes to split", "ax")
        for a in axes:
            _check_mollweide_axes(a, "snapshots")
        return axes
    if getattr(ax, "name", None) == "mollweide" and count == 1:
        return [ax]
    fig = ax.figure
    spec = ax.get_subplotspec()
    ax.remove()
    if spec is not None:
        row = spec.subgridspec(1, count, wspace=0.02)
        return [fig.add_subplot(row[k], projection="mollweide") for k in range(count)]
    x0, y0, w, h = ax.get_position().bounds
    return [fig.add_axes((x0 + k * w / count, y0, w / count, h), projection="mollweide")
            for k in range(count)]


def _sphere_snapshots(ds: xr.Dataset, ax: Any, times: Sequence[float] | None = None,
                      n: int = 5, *, log: bool | str = False, cmap: str | None = None,
                      reference: bool = True, colorbar: bool = True) -> list:
    cmap = "magma" if cmap is None else cmap
    g = _Grid.of(ds)
    idx = (_distinct_snapshots(g.t, g.rho, _snapshot_indices(g.t, None, n).size)
           if times is None else _snapshot_indices(g.t, times, n))
    axes = _map_row(ax, idx.size)
    norm = _norm(g.rho[idx], log, UNIFORM)
    meshes = []
    for a, i in zip(axes, idx):
        mesh, _, _ = _draw_mollweide(g, a, int(i), norm, cmap, None, labels=False)
        a.set_title(f"t = {_fmt_time(g.t[i])}", fontsize=8)
        meshes.append(mesh)
    if colorbar:
        _colorbar(meshes[-1], axes, g.label, shrink=0.9, aspect=12)
    return meshes


def _sphere_summary(ds: xr.Dataset, *, log: bool | str, points: Any = None) -> Figure:
    g = _Grid.of(ds)
    points = _points_array(points)
    panels = _diagnostic_panels(ds)
    first, last = 0, g.t.size - 1
    norm = _norm(g.rho[[first, last]], log, UNIFORM)
    with style():
        fig = _new_figure((7.5, 4.5) if panels else (7.5, 2.3))
        fig.get_layout_engine().set(w_pad=0.04, h_pad=0.04, hspace=0.08, wspace=0.03)
        grid = fig.add_gridspec(2 if panels else 1, 1,
                                height_ratios=[0.9, 1] if panels else None)
        top = grid[0].subgridspec(1, 3, width_ratios=[2, 2, 1.1])
        maps = [fig.add_subplot(top[0], projection="mollweide"),
                fig.add_subplot(top[1], projection="mollweide"),
                fig.add_subplot(top[2])]
        _draw_mollweide(g, maps[0], first, norm, "magma", points)
        mesh, _, _ = _draw_mollweide(g, maps[1], last, norm, "magma", points)
        _draw_orthographic(g, maps[2], last, _default_center(g, last), norm, "magma", points)
        maps[2].set_title(f"t = {_fmt_time(g.t[last])}, facing\n"
                          f"{'mean direction' if g.mean_at(last) is not None else 'x axis'}")
        _colorbar(mesh, maps, g.label, shrink=0.8, aspect=15)
        axes = maps + (_diagnostics_row(ds, fig, grid[1]) if panels else [])
        _letter_panels(axes)
        fig.suptitle(_title(ds))
        _caption(fig, ds)
    return fig


def _maps_page(ds: xr.Dataset, *, log: bool | str, points: Any = None) -> Figure:
    g = _Grid.of(ds)
    points = _points_array(points)
    last = g.t.size - 1
    norm = _norm(g.rho[last], log, UNIFORM)
    with style():
        fig = _new_figure((7.5, 3.0))
        grid = fig.add_gridspec(1, 2, width_ratios=[2, 1.1])
        moll = fig.add_subplot(grid[0], projection="mollweide")
        ortho = fig.add_subplot(grid[1])
        mesh, _, _ = _draw_mollweide(g, moll, last, norm, "magma", points)
        _draw_orthographic(g, ortho, last, _default_center(g, last), norm, "magma", points)
        _colorbar(mesh, [moll, ortho], g.label, shrink=0.85)
        fig.suptitle(_title(ds), fontsize=10)
    return fig


def _spacetime_page(ds: xr.Dataset, *, log: bool | str, points: Any = None) -> Figure:
    with style():
        fig = _new_figure((4.2, 3.4))
        ax = fig.add_subplot()
        _sphere_spacetime(ds, ax, log=log)
        ax.set_title(_title(ds), fontsize=8)
    return fig


def _snapshots_page(ds: xr.Dataset, *, log: bool | str, points: Any = None) -> Figure:
    with style():
        count = _snapshot_indices(_Grid.of(ds).t, None, 5).size
        # maps of aspect 2 across 6.6 in, plus the titles
        fig = _new_figure((7.5, 0.75 + 3.3 / max(count, 2)))
        _sphere_snapshots(ds, fig.add_subplot(), log=log)
        fig.suptitle(_title(ds), fontsize=9)
    return fig


def _sphere_animate(ds: xr.Dataset, path: Path, *, dpi: float, fps: float,
                    max_frames: int, log: bool | str = False, points: Any = None) -> None:
    """The Mollweide map over time on one colour scale (``points`` are not drawn: they
    belong to one time)."""
    g = _Grid.of(ds)
    frames = _frame_indices(g.t.size, max_frames)
    norm = _norm(g.rho[frames], log, UNIFORM)
    with style():
        fig = _new_figure((5.0, 2.9))
        ax = fig.add_subplot(projection="mollweide")
        # the widest time label, so the frozen layout leaves room for all of them
        widest = int(frames[int(np.argmax([len(_fmt_time(g.t[i])) for i in frames]))])
        mesh, cross, values = _draw_mollweide(g, ax, widest, norm, "magma", None)
        _colorbar(mesh, ax, g.label, shrink=0.85)
        fig.suptitle(_title(ds), fontsize=8)
        if any(g.mean_at(int(i)) is not None for i in frames):  # the cross shows
            _add_note(fig, MEAN_DIRECTION_NOTE)

        def update(i: int):
            mesh.set_array(values(i))
            xy = _mollweide_xy(g.mean_at(i))
            cross.set_data(*(xy or ([], [])))
            ax.set_title(f"t = {_fmt_time(g.t[i])}", pad=8)
            return mesh, cross

        _freeze_layout(fig)
        _save_animation(fig, update, frames, path, fps=fps, dpi=dpi)


_register("sphere", _GeometryPlots(
    check=_check_sphere, spacetime=_sphere_spacetime, snapshots=_sphere_snapshots,
    summary=_sphere_summary,
    pages=(("maps", _maps_page), ("spacetime", _spacetime_page),
           ("snapshots", _snapshots_page)),
    animate=_sphere_animate, takes_points=True))
