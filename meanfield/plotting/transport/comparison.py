"""PDE vs tokens: the figures of datasets of ``kind = "compare"`` (``meanfield.compare``).

Figures: circle: the PDE density over the token histogram at four times; sphere: a row
of PDE maps above a row of token-histogram maps (each mesh cell filled with its value),
one colour scale; zonal: the PDE's marginal of t = <x, e> over the histogram of the
tokens' t at three times, with the W_1 distance of the marginals beside (panels in
``comparison_zonal``); all with the L1 distance against time (log scale, with the noise
floor) and the order parameter (and energy) of the PDE against the ensemble mean ± one
standard deviation of the runs. The animation moves the density and the histogram.

The dataset and its check are in ``comparison_data``, the density panels in
``comparison_panels``, the time series in ``comparison_series``; this module assembles
the pages and the animation and registers the kind.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from meanfield.plotting.densities import circle as _circ
from meanfield.plotting.densities import sphere_grid as _grid
from meanfield.plotting.densities import sphere_maps as _maps
from meanfield.plotting.common import _KindPlots, _register_kind
from meanfield.plotting.transport.comparison_data import (
    _bin_centres,
    _check_compare,
    _histogram,
    _t,
    _title,
)
from meanfield.plotting.transport.comparison_panels import (
    _histogram_grid,
    _map_block,
    _shared_norm,
    density_vs_histogram,
)
from meanfield.plotting.transport.comparison_series import _series_row
from meanfield.plotting.transport.comparison_zonal import (
    _zonal_animation,
    _zonal_row,
    _zonal_series_row,
)
from meanfield.plotting.helpers import (
    _centre_note,
    _centred_grid,
    _fmt_time,
    _frame_indices,
    _freeze_layout,
    _letter_panels,
    _new_figure,
    _save_animation,
    _snapshot_indices,
    style,
)
from meanfield.plotting.legible import MEAN_DIRECTION_NOTE, _add_note

if TYPE_CHECKING:  # pragma: no cover - typing only
    import xarray as xr
    from matplotlib.figure import Figure


def _circle_row(ds: xr.Dataset, fig: Figure, spec, count: int, log: bool | str,
                legend: bool = True, centre: float | None = None) -> list:
    idx = _snapshot_indices(_t(ds), None, count)
    row = spec.subgridspec(1, idx.size)
    centre = _circ._centre(ds)[0] if centre is None else centre
    axes = []
    for k, i in enumerate(idx):
        ax = fig.add_subplot(row[k], sharey=axes[0] if axes else None)
        density_vs_histogram(ds, ax, time=_t(ds)[i], log=log, legend=legend and k == 0,
                             centre=centre)
        if k:
            ax.set_ylabel("")
            ax.tick_params(labelleft=False)
        axes.append(ax)
    return axes


def _summary(ds: xr.Dataset, *, log: bool | str = "auto") -> Figure:
    circle = ds.attrs["geometry"] == "circle"
    if ds.attrs["geometry"] == "zonal":
        return _zonal_summary(ds)
    with style():
        # (the bottom row's legends sit under its panels: room for them)
        fig = _new_figure((7.5, 6.3 if circle else 6.2))
        fig.get_layout_engine().set(w_pad=0.04, h_pad=0.04, hspace=0.06, wspace=0.04)
        grid = fig.add_gridspec(2, 1, height_ratios=[1, 1.2] if circle else [1.25, 1.3])
        top = (_circle_row(ds, fig, grid[0], 4, log) if circle
               else _map_block(ds, fig, grid[0], 3, log))
        bottom = _series_row(ds, fig, grid[1])
        _letter_panels(top + bottom)
        fig.suptitle(_title(ds) + (f"\n{_circle_note(ds)}" if circle else ""))
    return fig


def _zonal_summary(ds: xr.Dataset) -> Figure:
    """Zonal: histograms of t over the PDE's marginal at three times, then the L1
    distance, the order parameter and the W_1 distance against time."""
    with style():
        fig = _new_figure((7.5, 6.3))
        fig.get_layout_engine().set(w_pad=0.04, h_pad=0.04, hspace=0.06, wspace=0.04)
        grid = fig.add_gridspec(2, 1, height_ratios=[1, 1.2])
        top = _zonal_row(ds, fig, grid[0], _snapshot_indices(_t(ds), None, 3))
        bottom = _zonal_series_row(ds, fig, grid[1])
        _letter_panels(top + bottom)
        fig.suptitle(_title(ds))
    return fig


def _circle_note(ds: xr.Dataset) -> str:
    """The statement of θ̄ for figures whose panels are labelled θ − θ̄ only."""
    return "angles relative to " + _centre_note(*_circ._centre(ds))


def _snapshots_page(ds: xr.Dataset, *, log: bool | str = "auto") -> Figure:
    with style():
        if ds.attrs["geometry"] == "zonal":
            fig = _new_figure((7.5, 4.6))
            grid = fig.add_gridspec(2, 1)
            idx = _snapshot_indices(_t(ds), None, 6)
            half = (idx.size + 1) // 2
            for r, part in enumerate((idx[:half], idx[half:])):
                if part.size:
                    _zonal_row(ds, fig, grid[r], part, legend=r == 0)
        elif ds.attrs["geometry"] == "circle":
            fig = _new_figure((7.5, 4.6))
            grid = fig.add_gridspec(2, 1)
            idx = _snapshot_indices(_t(ds), None, 6)
            half = (idx.size + 1) // 2
            centre = _circ._centre(ds)[0]  # of the whole run, for both rows
            for r, part in enumerate((idx[:half], idx[half:])):
                if part.size:
                    _circle_row(ds.isel(time=part), fig, grid[r], part.size, log,
                                legend=r == 0, centre=centre)
        else:
            fig = _new_figure((7.5, 3.6))
            _map_block(ds, fig, fig.add_gridspec(1, 1)[0], 4, log)
        circle = ds.attrs["geometry"] == "circle"
        fig.suptitle(_title(ds) + (f"\n{_circle_note(ds)}" if circle else ""), fontsize=9)
    return fig


def _distance_page(ds: xr.Dataset, *, log: bool | str = "auto") -> Figure:
    with style():
        fig = _new_figure((7.5, 3.6))
        row = _zonal_series_row if ds.attrs["geometry"] == "zonal" else _series_row
        _letter_panels(row(ds, fig, fig.add_gridspec(1, 1)[0]))
        fig.suptitle(_title(ds), fontsize=9)
    return fig


def _animate(ds: xr.Dataset, path: Path, *, dpi: float, fps: float, max_frames: int,
             log: bool | str = "auto") -> None:
    """Circle: the PDE curve over the histogram; sphere: the PDE map beside the
    histogram map, on one colour scale."""
    t = _t(ds)
    frames = _frame_indices(t.size, max_frames)
    with style():
        if ds.attrs["geometry"] == "zonal":
            fig = _new_figure((5.0, 3.2))
            update = _zonal_animation(ds, fig.add_subplot(), frames)
        elif ds.attrs["geometry"] == "circle":
            fig = _new_figure((5.0, 3.2))
            ax = fig.add_subplot()
            line, steps = density_vs_histogram(ds, ax, time=t[frames[0]], log=log)
            rho, hist = _circ._density_array(ds), _histogram(ds)
            top = max(float(np.nanmax(rho[frames])), float(np.nanmax(hist[frames])))
            if ax.get_yscale() == "linear":
                ax.set_ylim(0.0, 1.05 * max(top, _circ.UNIFORM))
            centre = _circ._centre(ds)[0]  # the frame of density_vs_histogram's default
            _, closed = _circ._closed_curve(ds, rho, centre)
            _, _, bins = _centred_grid(_bin_centres(ds), hist, centre)

            def update(i: int):
                line.set_ydata(closed[i])
                steps.set_data(values=bins[i])
                ax.set_title(f"t = {_fmt_time(t[i])}")
                return line, steps
        else:
            pde, hist = _grid._Grid.of(ds), _histogram_grid(ds)
            norm = _shared_norm(pde, hist, frames, log)
            fig = _new_figure((7.5, 2.7))
            axes = [fig.add_subplot(1, 2, k + 1, projection="mollweide") for k in range(2)]
            drawn = [_maps._draw_mollweide(g, a, int(frames[0]), norm, "magma", None,
                                           labels=False, smooth=smooth)
                     for g, a, smooth in ((pde, axes[0], True), (hist, axes[1], False))]
            _maps._colorbar(drawn[0][0], axes, pde.label, shrink=0.85)
            if any(pde.mean_at(int(i)) is not None for i in frames):  # the cross shows
                _add_note(fig, MEAN_DIRECTION_NOTE)

            def update(i: int):
                for (mesh, _, values), name, a in zip(drawn, ("PDE", "tokens"), axes):
                    mesh.set_array(values(i))
                    a.set_title(f"{name}, t = {_fmt_time(t[i])}", fontsize=8)
                xy = _maps._mollweide_xy(pde.mean_at(i))
                drawn[0][1].set_data(*(xy or ([], [])))
                return [d[0] for d in drawn]
        fig.suptitle(_title(ds), fontsize=8)
        update(int(frames[int(np.argmax([len(_fmt_time(t[i])) for i in frames]))]))
        _freeze_layout(fig)
        _save_animation(fig, update, frames, path, fps=fps, dpi=dpi)


_register_kind("compare", _KindPlots(
    check=_check_compare, summary=_summary,
    pages=(("snapshots", _snapshots_page), ("distance", _distance_page)),
    animate=_animate, has_density=True))
