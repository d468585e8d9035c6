"""The panels of a zonal PDE-vs-tokens comparison (``kind = "compare"``, ``geometry =
"zonal"``: tokens on S^{d-1} against a density of t = <x, e>): the histogram of the
tokens' t over the PDE's marginal of t at one time (``marginal_vs_histogram``), the W_1
distance between the two marginals against time with its sampling floor
(``w1_comparison``), and the order parameter of the PDE against the ensemble's mean with
three standard errors of it (``zonal_order_comparison``; the tokens' order parameter along
e dashed beside |mean x_i|).
"""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from meanfield.errors import ConfigError
from meanfield.metrics.zonal_marginal import marginal_density, span
from meanfield.plotting.transport.comparison_data import (
    _PDE_COLOUR,
    _TOKEN_COLOUR,
    _check_compare,
    _histogram,
    _index,
    _runs,
    _t,
    _token_label,
)
from meanfield.plotting.helpers import _fmt_time, _series, _time_label
from meanfield.plotting.legible import _legend_below, _plain_log_ticks

if TYPE_CHECKING:  # pragma: no cover - typing only
    import xarray as xr
    from matplotlib.axes import Axes

CURVE_POINTS = 800  # points of the PDE's marginal across the drawn range
SHOWN_TAIL = 1e-3  # the drawn range of t leaves out this much PDE mass on either side
MARGINAL_LABEL = "density of t = ⟨x, e⟩"
HEADROOM = 1.35  # y-limit over the largest value: the legend sits above the data


def t_range(ds: xr.Dataset) -> tuple[float, float]:
    """The range of t drawn: all but ``SHOWN_TAIL`` of the PDE's mass on either side at
    every time, padded by 5 %, within [-1, 1]."""
    lo, hi = span(ds, SHOWN_TAIL)
    pad = 0.05 * max(hi - lo, 1e-3)
    return max(-1.0, lo - pad), min(1.0, hi + pad)


def _zonal(ds: xr.Dataset) -> xr.Dataset:
    ds = _check_compare(ds)
    if ds.attrs["geometry"] != "zonal":
        raise ConfigError("this panel draws zonal comparisons (tokens on S^(d-1) against a "
                          "density of t = <x, e>); use density_vs_histogram on the circle "
                          "or histogram_map on the sphere", "geometry")
    return ds


def marginal_vs_histogram(ds: xr.Dataset, ax: Axes, time: float | None = None, *,
                          legend: bool = True, limits: tuple[float, float] | None = None
                          ) -> tuple:
    """Zonal comparison at one saved time: the PDE's marginal of t = ⟨x, e⟩ (line) over
    the pooled histogram of the tokens' t (filled steps, fraction of tokens per bin / its
    length in t).

    Args:
        ds: a zonal ``compare`` dataset.
        ax: the axes to draw into.
        time: the saved time nearest this; ``None``: the last one.
        legend: add a legend (PDE, tokens).
        limits: the range of t drawn (default ``t_range(ds)``, the same at every time).

    Returns:
        (the PDE ``Line2D``, the histogram's ``StepPatch``).

    Raises:
        ConfigError: not a zonal comparison dataset.
    """
    from matplotlib.colors import to_rgba

    ds = _zonal(ds)
    i = _index(ds, time)
    lo, hi = t_range(ds) if limits is None else limits
    edges = np.asarray(ds["bin_edges"].values, dtype=float)
    steps = ax.stairs(_histogram(ds)[i], edges, fill=True, lw=0.7, zorder=2,
                      facecolor=to_rgba(_TOKEN_COLOUR, 0.35), edgecolor=_TOKEN_COLOUR,
                      label=_token_label(ds))
    t = np.linspace(lo, hi, CURVE_POINTS)
    (line,) = ax.plot(t, marginal_density(ds.isel(time=i), t), color=_PDE_COLOUR, lw=1.3,
                      zorder=3, label="PDE marginal")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("t = ⟨x, e⟩")
    ax.set_ylabel(MARGINAL_LABEL)
    ax.set_title(f"t = {_fmt_time(_t(ds)[i])}")
    if legend:
        ax.legend(loc="upper left", handlelength=1.2, fontsize=7)
    return line, steps


def marginal_top(ds: xr.Dataset, idx: np.ndarray, limits: tuple[float, float]) -> float:
    """The largest value of the PDE's marginal and of the histogram at the times ``idx``
    across ``limits`` (a shared y-axis)."""
    t = np.linspace(*limits, CURVE_POINTS)
    curves = marginal_density(ds.isel(time=idx), t)
    return max(float(np.nanmax(curves)), float(np.nanmax(_histogram(ds)[idx])))


def w1_comparison(ds: xr.Dataset, ax: Axes) -> list:
    """W_1 between the tokens' marginal of t and the PDE's against time, log scale:
    pooled over the ensemble, the range of the single runs, and the sampling floor (the
    W_1 that as many exact samples give on average).

    Returns:
        The ``Line2D`` of the pooled distance (and of the floor).
    """
    ds = _zonal(ds)
    t = _t(ds)

    def positive(y: np.ndarray) -> np.ndarray:
        return np.where(np.isfinite(y) & (y > 0), y, np.nan)

    lines = ax.plot(t, positive(_series(ds, "w1_distance")), color=_TOKEN_COLOUR,
                    label=f"pooled {_token_label(ds)}")
    if "w1_distance_member" in ds.data_vars and ds.sizes.get("run", 1) > 1:
        member = positive(_runs(ds, "w1_distance_member"))
        ax.fill_between(t, np.nanmin(member, axis=1), np.nanmax(member, axis=1),
                        color=_TOKEN_COLOUR, alpha=0.2, lw=0, label="single runs (range)")
    if "w1_noise_floor" in ds.data_vars:
        lines += ax.plot(t, positive(_series(ds, "w1_noise_floor")), color="0.45", ls="--",
                         label="sampling floor (pooled)")
    ax.set_yscale("log")
    if t.size > 1:
        ax.set_xlim(t[0], t[-1])
    ax.set_xlabel(_time_label(ds))
    ax.set_ylabel(r"$W_1$")
    ax.set_title("W₁ of the marginals of t")
    _plain_log_ticks(ax.yaxis)
    _legend_below(ax, ncol=1, fontsize=7, offset=0.3)
    return lines


def zonal_order_comparison(ds: xr.Dataset, ax: Axes) -> list:
    """The PDE's order parameter against the tokens' ``|mean_i x_i|`` (mean over runs,
    band of ± 3 standard errors of that mean) and their ``mean_i ⟨x_i, e⟩`` (dashed).

    Returns:
        The ``Line2D`` objects: PDE, token mean.
    """
    ds = _zonal(ds)
    t = _t(ds)
    lines = ax.plot(t, _series(ds, "order_parameter"), color=_PDE_COLOUR, label="PDE",
                    zorder=3)
    runs = _runs(ds, "particle_order_parameter")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # times where every run is NaN
        mean = np.nanmean(runs, axis=1)
        count = np.sum(np.isfinite(runs), axis=1)
        se = np.nanstd(runs, axis=1, ddof=1) / np.sqrt(count) if runs.shape[1] > 1 else None
    lines += ax.plot(t, mean, color=_TOKEN_COLOUR, zorder=2,
                     label=f"tokens |mean xᵢ|, mean of {runs.shape[1]} runs")
    if se is not None:
        ax.fill_between(t, mean - 3 * se, mean + 3 * se, color=_TOKEN_COLOUR, alpha=0.25,
                        lw=0, label="± 3 standard errors")
    if "particle_axis_order_parameter" in ds.data_vars:
        axis = np.nanmean(_runs(ds, "particle_axis_order_parameter"), axis=1)
        ax.plot(t, axis, color="C1", ls="--", lw=1.0, zorder=2,
                label="tokens mean ⟨xᵢ, e⟩")
    _zoom(ax, [_series(ds, "order_parameter"), mean]
          + ([mean - 3 * se, mean + 3 * se] if se is not None else []))
    if t.size > 1:
        ax.set_xlim(t[0], t[-1])
    ax.set_xlabel(_time_label(ds))
    ax.set_ylabel("r(t)")
    ax.set_title("order parameter")
    _legend_below(ax, ncol=1, fontsize=7, offset=0.3)
    return lines


def _zoom(ax: Axes, curves: list) -> None:
    """y-limits around the curves (the band of three standard errors is then visible at
    the scale of the PDE's change), within [0, 1]."""
    values = np.concatenate([np.ravel(c) for c in curves])
    values = values[np.isfinite(values)]
    if not values.size:
        return
    lo, hi = float(values.min()), float(values.max())
    pad = 0.1 * max(hi - lo, 1e-3)
    ax.set_ylim(max(0.0, lo - pad), min(1.02, hi + pad))


def _zonal_row(ds: xr.Dataset, fig, spec, idx: np.ndarray, legend: bool = True) -> list:
    """Histogram-vs-marginal panels at the times ``idx``, one range of t, one y scale."""
    limits = t_range(ds)
    top = marginal_top(ds, idx, limits)
    row = spec.subgridspec(1, idx.size)
    axes = []
    for k, i in enumerate(idx):
        ax = fig.add_subplot(row[k], sharey=axes[0] if axes else None)
        marginal_vs_histogram(ds, ax, time=_t(ds)[i], legend=legend and k == 0,
                              limits=limits)
        ax.set_ylim(0.0, HEADROOM * top)
        if k:
            ax.set_ylabel("")
            ax.tick_params(labelleft=False)
        axes.append(ax)
    return axes


def _zonal_series_row(ds: xr.Dataset, fig, spec) -> list:
    """L1 distance of the histograms, order parameter, W_1 of the marginals."""
    from meanfield.plotting.transport.comparison_series import _l1_caption, l1_distance

    row = spec.subgridspec(1, 3)
    axes = [fig.add_subplot(row[k]) for k in range(3)]
    l1_distance(ds, axes[0])
    _l1_caption(ds, fig)
    zonal_order_comparison(ds, axes[1])
    w1_comparison(ds, axes[2])
    return axes


def _zonal_animation(ds: xr.Dataset, ax: Axes, frames: np.ndarray):
    """The marginal over the histogram, moving; returns the frame update."""
    limits = t_range(ds)
    line, steps = marginal_vs_histogram(ds, ax, time=_t(ds)[frames[0]], limits=limits)
    ax.set_ylim(0.0, HEADROOM * marginal_top(ds, frames, limits))
    grid = np.linspace(*limits, CURVE_POINTS)
    curves = marginal_density(ds.isel(time=frames), grid)
    hist = _histogram(ds)
    where = {int(i): k for k, i in enumerate(frames)}

    def update(i: int):
        line.set_ydata(curves[where[int(i)]])
        steps.set_data(values=hist[i])
        ax.set_title(f"t = {_fmt_time(_t(ds)[i])}")
        return line, steps

    return update
