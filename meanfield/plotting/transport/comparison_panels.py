"""The density panels of a PDE-vs-tokens comparison (``kind = "compare"``): on the circle
the PDE density over the token histogram at one time (``density_vs_histogram``); on the
sphere the token histogram as a Mollweide map, each mesh cell filled with its value
(``histogram_map``), and the block of PDE maps above token-histogram maps on one colour
scale.
"""
from __future__ import annotations

import contextlib
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from meanfield.errors import ConfigError
from meanfield.plotting.densities import circle as _circ
from meanfield.plotting.densities import sphere_grid as _grid
from meanfield.plotting.densities import sphere_maps as _maps
from meanfield.plotting.transport.comparison_data import (
    _PDE_COLOUR,
    _TOKEN_COLOUR,
    _bin_centres,
    _check_compare,
    _histogram,
    _index,
    _t,
    _token_label,
)
from meanfield.plotting.helpers import (
    _centred_grid,
    _centred_theta_axis,
    _fmt_time,
    _log_limits,
    _norm,
    _periodic_edges,
    _snapshot_indices,
    _units_suffix,
    _use_log,
    style,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    import xarray as xr
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def density_vs_histogram(ds: xr.Dataset, ax: Axes, time: float | None = None, *,
                         log: bool | str = False, legend: bool = True,
                         centre: float | None = None) -> tuple:
    """Circle comparison at one saved time: the PDE density ρ(θ, t) (line) over the
    pooled token histogram (filled steps, fraction of tokens per bin / bin width).

    Args:
        ds: a circle ``compare`` dataset.
        ax: the axes to draw into.
        time: the saved time nearest this; ``None``: the last one.
        log: log density axis; ``"auto"``: log once the peak exceeds 25 times 1/(2π).
        legend: add a legend (PDE, tokens, uniform).
        centre: the angle drawn at 0, which the x label then only names θ̄ (a figure of
            several panels states it once); ``None``: the mean direction θ̄ of the last
            saved PDE density, given in the x label.

    Returns:
        (the PDE ``Line2D``, the histogram's ``StepPatch``).

    Raises:
        ConfigError: not a circle comparison dataset.
    """
    from matplotlib.colors import to_rgba

    ds = _check_compare(ds)
    if ds.attrs["geometry"] != "circle":
        raise ConfigError("density_vs_histogram draws circle comparisons; use the maps "
                          "(histogram_map) on the sphere", "geometry")
    i = _index(ds, time)
    rho = _circ._density_array(ds)
    hist = _histogram(ds)
    # both relative to the PDE's last mean direction, closed across the seam
    given = centre is not None
    centre = _circ._centre(ds)[0] if centre is None else float(centre)
    _, bin_edges, bin_hist = _centred_grid(_bin_centres(ds), hist[i], centre)
    ax.axhline(_circ.UNIFORM, color="0.6", lw=0.9, ls="--", zorder=1, label="uniform")
    steps = ax.stairs(bin_hist, bin_edges, fill=True, lw=0.7, zorder=2,
                      facecolor=to_rgba(_TOKEN_COLOUR, 0.35), edgecolor=_TOKEN_COLOUR,
                      label=_token_label(ds))
    x, closed = _circ._closed_curve(ds, rho[i], centre)
    (line,) = ax.plot(x, closed, color=_PDE_COLOUR, lw=1.3, zorder=3, label="PDE")
    if given:
        _centred_theta_axis(ax, None)
    else:
        _circ._theta_axis(ax, ds)
    ax.set_ylabel("ρ(θ, t)" + _units_suffix(ds["density"]))
    both = np.concatenate([rho[i], hist[i]])
    if _use_log(log, both, _circ.UNIFORM):
        ax.set_yscale("log")
        vmin, vmax = _log_limits(both)
        ax.set_ylim(vmin, vmax * 2.0)
    else:
        ax.set_ylim(0.0, 1.08 * max(float(np.nanmax(both)), _circ.UNIFORM))
    ax.set_title(f"t = {_fmt_time(_t(ds)[i])}")
    if legend:
        ax.legend(loc="upper right", handlelength=1.2)
    return line, steps


# --------------------------------------------------------------------------------------
# sphere
# --------------------------------------------------------------------------------------
def _histogram_grid(ds: xr.Dataset) -> _grid._Grid:
    """The token histogram on a regular latitude-longitude grid, each point taking the
    value of its nearest bin centre (the mesh cell it lies in, for a Voronoi-like
    mesh): the piecewise-constant histogram, drawn unsmoothed."""
    from scipy.spatial import cKDTree

    bins = ds.sizes["bin"]
    nlat = int(np.clip(4 * round(math.sqrt(bins / 2)), 36, 180))
    lat_edges = -0.5 * math.pi + math.pi * np.arange(nlat + 1) / nlat
    lat = 0.5 * (lat_edges[:-1] + lat_edges[1:])
    lon = 2 * math.pi * np.arange(2 * nlat) / (2 * nlat)
    centres = _grid._unit_vectors(np.asarray(ds["bin_lat"].values, float),
                                  np.asarray(ds["bin_lon"].values, float))
    targets = _grid._unit_vectors(lat[:, None], lon[None, :])
    nearest = cKDTree(centres).query(targets.reshape(-1, 3))[1].reshape(nlat, 2 * nlat)
    return _grid._Grid(t=_t(ds), rho=_histogram(ds)[:, nearest], lat=lat, lon=lon,
                       lat_edges=lat_edges, lon_edges=_periodic_edges(lon), mean=None,
                       order=None, label="ρ" + _units_suffix(ds["particle_density"]))


def _shared_norm(pde: _grid._Grid, hist: _grid._Grid, idx: Any, log: bool | str):
    both = np.concatenate([pde.rho[idx].ravel(), hist.rho[idx].ravel()])
    return _norm(both, log, _grid.UNIFORM)


def histogram_map(ds: xr.Dataset, ax: Axes | None = None, time: float | None = None, *,
                  log: bool | str = False, cmap: str = "magma", norm: Any = None,
                  colorbar: bool = True):
    """Mollweide map of the pooled token histogram of a sphere comparison at one saved
    time: every bin (mesh cell) filled with its fraction of tokens / its area (1/sr).
    Draw the PDE density with ``map_mollweide(ds, ...)`` and pass both the same
    ``norm`` to compare them.

    Args:
        ds: a sphere ``compare`` dataset.
        ax: an axes with ``projection="mollweide"``; ``None`` makes a new figure.
        time: the saved time nearest this; ``None``: the last one.
        log, cmap, norm, colorbar: as for ``map_mollweide``.

    Returns:
        The ``QuadMesh`` drawn.

    Raises:
        ConfigError: not a sphere comparison, or ``ax`` is not a Mollweide axes.
    """
    ds = _check_compare(ds)
    if ds.attrs["geometry"] != "sphere":
        raise ConfigError("histogram_map draws sphere comparisons; use "
                          "density_vs_histogram on the circle", "geometry")
    if ax is not None:
        _maps._check_mollweide_axes(ax, "histogram_map")
    g = _histogram_grid(ds)
    i = _index(ds, time)
    norm = norm if norm is not None else _norm(g.rho[i], log, _grid.UNIFORM)
    with style() if ax is None else contextlib.nullcontext():
        if ax is None:
            _, ax = _maps._new_map_figure("mollweide")
        mesh, _, _ = _maps._draw_mollweide(g, ax, i, norm, cmap, None, smooth=False)
        ax.set_title(f"{_token_label(ds)}, t = {_fmt_time(g.t[i])}", pad=8)
        if colorbar:
            _maps._colorbar(mesh, ax, g.label, shrink=0.85)
    return mesh


def _map_block(ds: xr.Dataset, fig: Figure, spec, count: int, log: bool | str) -> list:
    """PDE maps (top row) over token-histogram maps (bottom row) at ``count`` times."""
    pde, hist = _grid._Grid.of(ds), _histogram_grid(ds)
    idx = _snapshot_indices(pde.t, None, count)
    norm = _shared_norm(pde, hist, idx, log)
    block = spec.subgridspec(2, idx.size, wspace=0.02, hspace=0.08)
    axes = []
    for row, (g, name, smooth) in enumerate(((pde, "PDE", True), (hist, "tokens", False))):
        for k, i in enumerate(idx):
            ax = fig.add_subplot(block[row, k], projection="mollweide")
            mesh, _, _ = _maps._draw_mollweide(g, ax, int(i), norm, "magma", None,
                                               labels=False, smooth=smooth)
            ax.set_title(f"{name}, t = {_fmt_time(pde.t[i])}", fontsize=8)
            axes.append(ax)
    _maps._colorbar(mesh, axes, pde.label, shrink=0.85, aspect=20)
    return axes
