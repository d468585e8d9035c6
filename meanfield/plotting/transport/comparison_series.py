"""The time series of a PDE-vs-tokens comparison (``kind = "compare"``): the L1 distance
between the token histogram and the PDE bin masses with its sampling noise floor, and
what that gap measures (``l1_meaning``, the caption under the figures); the order
parameter and the energy of the PDE against the ensemble mean ± one standard deviation
of the runs.
"""
from __future__ import annotations

import textwrap
import warnings
from typing import TYPE_CHECKING

import numpy as np

from meanfield.plotting.transport.comparison_data import (
    _PDE_COLOUR,
    _TOKEN_COLOUR,
    _check_compare,
    _runs,
    _t,
    _token_label,
)
from meanfield.plotting.helpers import ENERGY_LABEL, _series, _time_label
from meanfield.plotting.legible import _legend_below, _plain_log_ticks

if TYPE_CHECKING:  # pragma: no cover - typing only
    import xarray as xr
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


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
