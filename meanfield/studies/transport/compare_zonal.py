"""What ``compare`` adds for a zonal PDE (``domain.geometry = "zonal"``): tokens on S^{d-1}
against a density of ``t = <x, e>``, ``e = (1, 0, ..., 0)``.

The tokens are ``meanfield particles`` runs in dimension d (the sphere's engine, any d;
started from exact samples of the zonal density, ``meanfield.initial.zonal_samplers``).
A member keeps only what the comparison reads: ``axis_projection (time, particle)``
(``<x_i, e>``, the first component of each token), ``order_parameter`` (``|mean_i x_i|``),
``axis_order_parameter`` (``mean_i <x_i, e>``) and ``energy``, so an ensemble in d = 512
costs what one in d = 2 does.

At each saved time, against the PDE's marginal of t (``meanfield.metrics.zonal_marginal``,
its CDF at ``FINE_INTERVALS`` + 2 nodes, exact to round-off there, linear between):

- the histogram: intervals of t (``meanfield.metrics.binning.PolarBins``), "auto": 2
  N^(1/3) intervals across the span that holds the PDE's mass, raised to
  ``BINS_PER_WIDTH`` intervals across the width ``1 / max f`` of the most concentrated
  marginal ``f`` (at most 256), plus the tails;
- ``w1_distance`` (pooled) and ``w1_distance_member`` (each run): the exact W_1 on the
  line between the tokens' values of t and the PDE's marginal, with ``w1_noise_floor``,
  the W_1 that N exact samples give on average (``zonal_marginal.w1_floor``; a member's
  is ``sqrt(ensemble)`` times it);
- ``axis_order_parameter`` (the PDE's ``int t dmu``, signed) and
  ``particle_axis_order_parameter (time, run)``. With noise the tokens' mean direction
  wanders off e (a random walk of the n-token system, slow at large n) while the PDE
  stays about e: ``particle_order_parameter`` (``|mean_i x_i|``) does not see this,
  ``particle_axis_order_parameter`` and the histogram of t do (they fall behind as the
  walk goes on), so the two order parameters side by side say whether it matters.
"""
from __future__ import annotations

import math

import numpy as np
import xarray as xr

from meanfield.metrics import zonal_marginal as zm
from meanfield.metrics.binning import BIN_TAIL

MEMBER_VARS = ("axis_projection", "order_parameter", "axis_order_parameter", "energy")
BINS_PER_WIDTH = 6  # intervals across the width 1 / max f of the most concentrated marginal
MAX_BINS = 256


def member_frames(run: xr.Dataset) -> xr.Dataset:
    """What a zonal comparison keeps of a member's particle dataset (module docstring)."""
    kept = run[["order_parameter", "axis_order_parameter", "energy"]]
    kept["axis_projection"] = run["position"].isel(component=0, drop=True)
    return kept


def resolving_count(pde: xr.Dataset, count: int, marginal: tuple) -> int:
    """``count`` or, if more, ``BINS_PER_WIDTH`` intervals across the width ``1 / max f``
    of the most concentrated marginal of t over the PDE's times (``max f`` from its CDF
    ``marginal = zonal_marginal.marginal_nodes(pde)``), at most ``MAX_BINS``."""
    nodes, cdf = marginal
    lo, hi = zm.span(pde, BIN_TAIL)
    inner = (nodes[:-1] >= lo) & (nodes[1:] <= hi)
    slopes = np.diff(np.atleast_2d(cdf), axis=-1)[:, inner] / np.diff(nodes)[inner]
    peak = float(np.nanmax(slopes)) if slopes.size else 0.0
    need = math.ceil(BINS_PER_WIDTH * (hi - lo) * peak) if math.isfinite(peak) else 0
    return int(min(max(count, need), MAX_BINS))


def zonal_variables(pde: xr.Dataset, t_values: np.ndarray, axis: np.ndarray,
                    marginal: tuple) -> dict:
    """The zonal comparison's own variables (module docstring).

    Args:
        pde: the PDE's evolve dataset.
        t_values: ``(run, time, particle)`` the tokens' ``<x_i, e>``.
        axis: ``(time, run)`` the members' ``mean_i <x_i, e>``.
        marginal: ``zonal_marginal.marginal_nodes(pde)``.
    """
    nodes, cdf = marginal
    runs, times, n = t_values.shape
    pooled = np.empty(times)
    member = np.empty((times, runs))
    floor = np.empty(times)
    for k in range(times):
        pooled[k] = zm.line_wasserstein(t_values[:, k].ravel(), nodes, cdf[k], 1.0)
        member[k] = [zm.line_wasserstein(t_values[r, k], nodes, cdf[k], 1.0)
                     for r in range(runs)]
        floor[k] = zm.w1_floor(nodes, cdf[k], runs * n)
    signed = pde["order_parameter"].values * pde["mean_direction"].isel(component=0).values
    return {
        "w1_distance": (("time",), pooled, {
            "units": "1", "long_name": "W_1 between the marginals of t = <x, e>: pooled "
            "tokens vs PDE"}),
        "w1_distance_member": (("time", "run"), member, {
            "units": "1", "long_name": "W_1 between the marginals of t = <x, e> per run"}),
        "w1_noise_floor": (("time",), floor, {
            "units": "1", "long_name": "expected W_1 of N exact samples of the PDE's "
            "marginal of t (a run's: sqrt(ensemble) times this)"}),
        "axis_order_parameter": (("time",), signed, {
            "units": "1", "long_name": "int <x, e> dmu: the PDE's order parameter along "
            "e (signed)"}),
        "particle_axis_order_parameter": (("time", "run"), axis, {
            "units": "1", "long_name": "mean_i <x_i, e> per run"}),
    }
