"""The two contraction rates of the contraction study, its fit, and which rate a fit window
measures (docs/contraction.md derives all of it).

- The local rate: the decay rate of ``W_2(mu_t, target)`` once all the mass is in the
  linear regime of the target. Without noise the target is the Dirac at the cluster's point
  and the rate is ``lambda_att``, the rate at which the cluster attracts: 1 (SA) or
  ``e^beta`` (USA). With noise it is ``|sigma|`` of the slowest mode of the stationary state.
- The mean-field rate: the asymptotic decay rate of a density that has mass near the point
  antipodal to the cluster (a density with full support). That point repels at
  ``lambda_rep`` (1 for SA, ``e^{-beta}`` for USA); the mass within a fixed distance of it
  decays like ``e^{-(d - 1) lambda_rep t}``, so ``W_2`` decays at
  ``min(lambda_att, (d - 1) lambda_rep / 2)`` (times ``sqrt(t)`` where the two are equal:
  SA on S^2). With noise the diffusion fills the far side and the rate is the local one.

Tokens are finitely many: once they have all left the far side they measure the local
rate; their fit window opens only when every token is within ``fit_below`` of the limit
point. A density's fit window measures the rate of the part of the distance it is made of,
told apart by ``far_share``: the share of ``W_2^2`` carried by the mass farther than
``pi/2`` from the limit point (zero in the local regime, a steady fraction of order one in
the mean-field regime: 0.589 at beta = 0 on S^1).
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats

from meanfield.model.kernels import growth_rate, sphere_growth_rate
from meanfield.model.zonal_kernels import zonal_growth_rate

SLOWEST_MODES = 64  # the modes searched for the slowest one of the uniform state
FAR = math.pi / 2  # far_share: the mass beyond this distance from the limit point
FAR_EMPTY = 1e-3  # a window whose far_share stays below this measures the local rate
FAR_SETTLED = 0.9  # ... whose far_share stays within this factor of its top, the mean-field
REGIMES = ("local", "mean-field", "crossover", "none")


def attraction_repulsion(normalized: bool, beta: float) -> tuple[float, float]:
    """``(lambda_att, lambda_rep)``: the rates at which the cluster's point attracts and its
    antipode repels, for the field of a Dirac (SA: ``P_x e``, for every beta; USA:
    ``e^{beta <x, e>} P_x e``)."""
    if normalized:
        return 1.0, 1.0
    return math.exp(beta), math.exp(-beta)


def local_rate(cfg: dict, beta: float) -> float:
    """The local rate (module docstring); NaN with noise above the threshold (the
    stationary state is not uniform: the study measures it from the linearised PDE)."""
    m = cfg["model"]
    if math.isinf(m["kappa"]):
        return attraction_repulsion(m["normalized"], beta)[0]
    modes = np.arange(1, SLOWEST_MODES + 1)
    if cfg["domain"]["geometry"] == "zonal":
        rates = zonal_growth_rate(modes, cfg["domain"]["dim"], beta, m["kappa"],
                                  m["normalized"])
    else:
        rate = growth_rate if cfg["domain"]["geometry"] == "circle" else sphere_growth_rate
        rates = rate(modes, beta, m["kappa"], m["normalized"])
    top = float(np.max(rates))
    return -top if top < 0 else math.nan


def mean_field_rate(cfg: dict, beta: float, dim: int) -> float:
    """The mean-field rate (module docstring) on ``S^{dim - 1}``; with noise the local rate."""
    m = cfg["model"]
    if not math.isinf(m["kappa"]):
        return local_rate(cfg, beta)
    att, rep = attraction_repulsion(m["normalized"], beta)
    return min(att, (dim - 1) * rep / 2)


def fit_rate(times: np.ndarray, distance: np.ndarray, floor: float, ceiling: float,
             level: float = 0.95) -> tuple[float, float, float, float, float]:
    """``(rate, low, high, t_start, t_stop)``: minus the least-squares slope of
    ``log distance`` against ``t`` over the first run of times with the distance in
    ``[floor, ceiling]``, its ``level`` interval (Student t); NaN with fewer than 3 points.
    """
    nan = (math.nan,) * 5
    d = np.asarray(distance, dtype=float)
    inside = np.isfinite(d) & (d > 0) & (d >= floor) & (d <= ceiling)
    idx = np.flatnonzero(inside)
    if idx.size < 3:
        return nan
    start = stop = int(idx[0])
    while stop + 1 < d.size and inside[stop + 1]:
        stop += 1
    if stop - start + 1 < 3:
        return nan
    t, y = np.asarray(times[start:stop + 1], dtype=float), np.log(d[start:stop + 1])
    fit = stats.linregress(t, y)
    half = (stats.t.ppf(0.5 + level / 2, t.size - 2) * fit.stderr if t.size > 2 else math.nan)
    return (float(-fit.slope), float(-fit.slope - half), float(-fit.slope + half),
            float(t[0]), float(t[-1]))


def window_regime(times: np.ndarray, share: np.ndarray, start: float, stop: float) -> str:
    """Which rate a density's fit window ``[start, stop]`` measures, from its
    ``far_share`` there: "local" (the far side carries none of the distance), "mean-field"
    (a steady share), "crossover" (neither: the share grows through the window), "none"
    (no window)."""
    if not (math.isfinite(start) and math.isfinite(stop)):
        return "none"
    inside = (times >= start) & (times <= stop) & np.isfinite(share)
    s = np.asarray(share)[inside]
    if s.size == 0 or s.max() <= FAR_EMPTY:
        return "local"
    return "mean-field" if s.min() >= FAR_SETTLED * s.max() else "crossover"
