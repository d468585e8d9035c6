"""PDE vs tokens: datasets of ``kind = "compare"`` (``meanfield.compare``).

A comparison holds the PDE result (``density`` on ``theta``, on ``lat``/``lon`` or on
finite-volume ``cell``s, ``order_parameter``, ``energy``), the bins (circle: ``bin``
centres in radians and ``bin_edges``; sphere: mesh cells with centres ``bin_lat``,
``bin_lon``), the PDE mass per bin and the pooled token histogram of the ensemble (both
divided by the bin size: ``pde_bin_density``, ``particle_density``), their L1 distance
(pooled ``l1_distance``, per run ``l1_distance_member``, the sampling noise floor
``l1_noise_floor``), and per run ``particle_order_parameter`` and ``particle_energy``.

Figures: circle: the PDE density over the token histogram at four times; sphere: a row
of PDE maps above a row of token-histogram maps (each mesh cell filled with its value),
one colour scale; both with the L1 distance against time (log scale, with the noise
floor) and the order parameter (and energy) of the PDE against the ensemble mean ± one
standard deviation of the runs. The animation moves the density and the histogram.
"""
from __future__ import annotations

import contextlib
import math
import textwrap
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from meanfield.errors import ConfigError
from meanfield.plotting import circle as _circ
from meanfield.plotting import sphere_grid as _grid
from meanfield.plotting import sphere_maps as _maps
from meanfield.plotting.common import _KindPlots, _register_kind
from meanfield.plotting.helpers import (
    ENERGY_LABEL,
    _centre_note,
    _centred_grid,
    _centred_theta_axis,
    _attr_summary,
    _fmt_time,
    _frame_indices,
    _freeze_layout,
    _letter_panels,
    _log_limits,
    _new_figure,
    _norm,
    _periodic_edges,
    _save_animation,
    _series,
    _snapshot_indices,
    style,
    _time_label,
    _units_suffix,
    _use_log,
)
from meanfield.plotting.legible import (
    MEAN_DIRECTION_NOTE,
    _add_note,
    _legend_below,
    _plain_log_ticks,
)
from meanfield.plotting.tokens import _need, _sorted_time

if TYPE_CHECKING:  # pragma: no cover - typing only
    import xarray as xr
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

_PDE_COLOUR = "black"
_TOKEN_COLOUR = "C0"


# --------------------------------------------------------------------------------------
# validation and data
# --------------------------------------------------------------------------------------
def _check_compare(ds: Any) -> xr.Dataset:
    import xarray as xr

    if not isinstance(ds, xr.Dataset):
        raise ConfigError(f"cannot plot a {type(ds).__name__}; expected an xarray.Dataset "
                          "as returned by meanfield.compare", None)
    geometry = ds.attrs.get("geometry")
    if geometry not in ("circle", "sphere"):
        raise ConfigError(f"a 'compare' dataset needs the attribute geometry = 'circle' or "
                          f"'sphere'; found {geometry!r}", "geometry")
    _need(ds, "particle_density", ("time", "bin"), "a 'compare'")
    _need(ds, "l1_distance", ("time",), "a 'compare'")
    for name, dims in (("pde_bin_density", ("time", "bin")), ("l1_noise_floor", ("time",)),
                       ("l1_distance_member", ("time", "run")),
                       ("particle_order_parameter", ("time", "run")),
                       ("particle_energy", ("time", "run"))):
        if name in ds.data_vars:
            _need(ds, name, dims, "a 'compare'")
    ds = _sorted_time(ds)
    if geometry == "circle":
        if "bin" not in ds.coords:
            raise ConfigError("a circle comparison needs the coordinate 'bin' (bin centres "
                              "in radians)", "bin")
        ds = _circ._check_circle(ds.sortby("bin"))
        if "bin_edges" in ds.data_vars and ds["bin_edges"].size != ds.sizes["bin"] + 1:
            raise ConfigError(f"'bin_edges' has {ds['bin_edges'].size} values for "
                              f"{ds.sizes['bin']} bins; need one more than bins",
                              "bin_edges")
        return ds
    for name in ("bin_lat", "bin_lon"):
        if name not in ds.variables or ds[name].dims != ("bin",):
            raise ConfigError(f"a sphere comparison needs the coordinate {name!r} (bin) of "
                              "the bin (mesh cell) centres in radians", name)
    return _grid._check_sphere(ds)


def _title(ds: xr.Dataset) -> str:
    runs = ds.sizes.get("run", ds.attrs.get("ensemble", 1))
    n = ds.attrs.get("n", ds.sizes.get("particle", "?"))
    head = f"PDE vs {runs} × {n} tokens" if runs != 1 else f"PDE vs {n} tokens"
    summary = _attr_summary(ds)
    return f"{head} ({summary})" if summary else head


def _t(ds: xr.Dataset) -> np.ndarray:
    return np.asarray(ds["time"].values, dtype=float)


def _index(ds: xr.Dataset, time: Any) -> int:
    t = _t(ds)
    return t.size - 1 if time is None else int(_snapshot_indices(t, [time], 1)[0])


def _histogram(ds: xr.Dataset) -> np.ndarray:
    return np.asarray(ds["particle_density"].transpose("time", "bin").values, dtype=float)


def _runs(ds: xr.Dataset, key: str) -> np.ndarray:
    return np.asarray(ds[key].transpose("time", "run").values, dtype=float)


def _token_label(ds: xr.Dataset) -> str:
    runs = ds.sizes.get("run", 1)
    n = ds.attrs.get("n", ds.sizes.get("particle", "?"))
    return f"tokens ({runs} × {n})" if runs > 1 else f"tokens ({n})"


# --------------------------------------------------------------------------------------
# circle
# --------------------------------------------------------------------------------------
def _bin_edges(ds: xr.Dataset) -> np.ndarray:
    if "bin_edges" in ds.data_vars:
        return np.asarray(ds["bin_edges"].values, dtype=float)
    return _periodic_edges(np.mod(np.asarray(ds["bin"].values, dtype=float), 2 * math.pi))


def _bin_centres(ds: xr.Dataset) -> np.ndarray:
    """The bin centres in [0, 2π), sorted as the histogram's bins must then be."""
    edges = _bin_edges(ds)
    return np.mod(0.5 * (edges[:-1] + edges[1:]), 2 * math.pi)


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


# --------------------------------------------------------------------------------------
# time series
# --------------------------------------------------------------------------------------
def l1_distance(ds: xr.Dataset, ax: Axes) -> list:
    """L1 distance Σ_b |p_b − q_b| between the token histogram and the PDE bin masses
    against time, log scale: pooled over the ensemble, the range of the single runs, and
    the noise floor (the expected distance of exact samples of the PDE).

    Returns:
        The ``Line2D`` of the pooled distance (and of the floor, if present).
    """
    ds = _check_compare(ds)
    t = _t(ds)

    def positive(y: np.ndarray) -> np.ndarray:
        return np.where(np.isfinite(y) & (y > 0), y, np.nan)

    lines = ax.plot(t, positive(_series(ds, "l1_distance")), color=_TOKEN_COLOUR,
                    label=f"pooled {_token_label(ds)}")
    if "l1_distance_member" in ds.data_vars and ds.sizes.get("run", 1) > 1:
        member = positive(_runs(ds, "l1_distance_member"))
        ax.fill_between(t, np.nanmin(member, axis=1), np.nanmax(member, axis=1),
                        color=_TOKEN_COLOUR, alpha=0.2, lw=0, label="single runs (range)")
    if "l1_noise_floor" in ds.data_vars:
        lines += ax.plot(t, positive(_series(ds, "l1_noise_floor")), color="0.45", ls="--",
                         label="sampling noise floor")
    ax.set_yscale("log")
    if t.size > 1:
        ax.set_xlim(t[0], t[-1])
    ax.set_xlabel(_time_label(ds))
    ax.set_ylabel(r"$\Sigma_b\,|p_b - q_b|$")
    ax.set_title("L1 distance, tokens vs PDE")
    _plain_log_ticks(ax.yaxis)
    _legend_below(ax, ncol=1, fontsize=7, offset=0.3)
    return lines


def l1_meaning(ds: xr.Dataset) -> str:
    """What the binned L1 gap of ``ds`` measures, as a two-line caption under the figure:
    B bins, N pooled tokens, how many bins hold 99 % of the final PDE mass; the sampling
    floor ``Σ_b √(2 q_b (1 − q_b) / (π N))`` is ≈ √(2 B_occ / (π N)) over the B_occ bins the
    PDE fills (all B for a spread state, a few for a clustered one), so a clustered state's
    floor is low and a gap above it says the clusters' place or shape differ by about a
    bin (docs/figures.md)."""
    bins = ds.sizes.get("bin", 0)
    n = int(ds.attrs.get("n", 0)) * int(ds.attrs.get("ensemble", 1))
    occupied = ""
    if "pde_bin_density" in ds.data_vars and "bin_size" in ds.data_vars:
        q = np.asarray(ds["pde_bin_density"].isel(time=-1).values, dtype=float) \
            * np.asarray(ds["bin_size"].values, dtype=float)
        full = int(np.count_nonzero(np.cumsum(np.sort(q)[::-1]) < 0.99) + 1)
        occupied = f" (99 % of the last PDE mass in {min(full, bins)} of them)"
    return textwrap.fill(
        f"L1 gap: B = {bins} bins{occupied}, N = {n} tokens. Its sampling floor is "
        r"≈ $\sqrt{2B_\mathrm{occ}/(\pi{}N)}$ over the $B_\mathrm{occ}$ bins the PDE "
        "fills: low for a clustered state (few bins), where a gap above the floor means "
        "the clusters' place or shape differ by about a bin width or more.", width=135)


def _l1_caption(ds: xr.Dataset, fig: Figure) -> None:
    """``l1_meaning`` under the figure (after a caption already there, if any)."""
    previous = getattr(fig, "_supxlabel", None)
    text = l1_meaning(ds)
    if previous is not None and previous.get_text():
        text = f"{previous.get_text()}\n{text}"
    fig.supxlabel(text, fontsize=7, color="0.3", x=0.01, ha="left", gid="l1_note")


def _pde_vs_tokens(ds: xr.Dataset, ax: Axes, pde_key: str, token_key: str, ylabel: str,
                   title: str) -> list:
    t = _t(ds)
    lines = []
    if pde_key in ds.data_vars:
        lines += ax.plot(t, _series(ds, pde_key), color=_PDE_COLOUR, label="PDE", zorder=3)
    if token_key in ds.data_vars:
        runs = _runs(ds, token_key)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # times where every run is NaN
            mean, sd = np.nanmean(runs, axis=1), np.nanstd(runs, axis=1)
        many = runs.shape[1] > 1
        lines += ax.plot(t, mean, color=_TOKEN_COLOUR, zorder=2,
                         label=f"tokens, mean of {runs.shape[1]} runs" if many else "tokens")
        if many:
            ax.fill_between(t, mean - sd, mean + sd, color=_TOKEN_COLOUR, alpha=0.25, lw=0,
                            label="± 1 s.d. over runs")
    if t.size > 1:
        ax.set_xlim(t[0], t[-1])
    ax.set_xlabel(_time_label(ds))
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    _legend_below(ax, ncol=1, fontsize=7, offset=0.3)
    return lines


def order_comparison(ds: xr.Dataset, ax: Axes) -> list:
    """Order parameter of the PDE against the tokens' (mean over runs ± 1 s.d.).

    Returns:
        The ``Line2D`` objects: PDE, token mean.
    """
    ds = _check_compare(ds)
    lines = _pde_vs_tokens(ds, ax, "order_parameter", "particle_order_parameter", "r(t)",
                           "order parameter")
    ax.set_ylim(-0.02, 1.02)
    return lines


def _has_energy(ds: xr.Dataset) -> bool:
    return ("energy" in ds.data_vars and "particle_energy" in ds.data_vars
            and bool(np.any(np.isfinite(_runs(ds, "particle_energy")))))


def _series_row(ds: xr.Dataset, fig: Figure, spec) -> list[Axes]:
    count = 3 if _has_energy(ds) else 2
    row = spec.subgridspec(1, count)
    axes = [fig.add_subplot(row[k]) for k in range(count)]
    l1_distance(ds, axes[0])
    _l1_caption(ds, fig)
    order_comparison(ds, axes[1])
    if count == 3:
        _pde_vs_tokens(ds, axes[2], "energy", "particle_energy", ENERGY_LABEL,
                       "energy")
        axes[2].ticklabel_format(axis="y", style="sci", scilimits=(-3, 4))
    return axes


# --------------------------------------------------------------------------------------
# figures, pages, animation
# --------------------------------------------------------------------------------------
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


def _circle_note(ds: xr.Dataset) -> str:
    """The statement of θ̄ for figures whose panels are labelled θ − θ̄ only."""
    return "angles relative to " + _centre_note(*_circ._centre(ds))


def _snapshots_page(ds: xr.Dataset, *, log: bool | str = "auto") -> Figure:
    with style():
        if ds.attrs["geometry"] == "circle":
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
        _letter_panels(_series_row(ds, fig, fig.add_gridspec(1, 1)[0]))
        fig.suptitle(_title(ds), fontsize=9)
    return fig


def _animate(ds: xr.Dataset, path: Path, *, dpi: float, fps: float, max_frames: int,
             log: bool | str = "auto") -> None:
    """Circle: the PDE curve over the histogram; sphere: the PDE map beside the
    histogram map, on one colour scale."""
    t = _t(ds)
    frames = _frame_indices(t.size, max_frames)
    with style():
        if ds.attrs["geometry"] == "circle":
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
