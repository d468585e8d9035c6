"""The equiangular model and the fits of the normalization study (``normalization``,
whose module docstring derives them): the gap ``1 - rho`` and the mean radius of token
systems, the equiangular ODE of Post-LN and Pre-LN and its solution, the Post-LN rate
(exponential), the Pre-LN power (``1 - rho ~ t^-2``) and the Pre-LN radius offset."""
from __future__ import annotations

import math

import numpy as np
from scipy.integrate import solve_ivp

from meanfield.studies.transport.contraction_rates import fit_rate

ODE_TOLERANCE = 1e-12  # relative tolerance of the equiangular ODE (DOP853)


def gaps_and_radii(states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(gap, radius)`` of token systems ``(..., n, m)``: ``mean_{i != j}(1 - <theta_i,
    theta_j>) = sum_i |theta_i - mean|^2/(n - 1)`` and ``mean_i |x_i|``."""
    r = np.sqrt(np.einsum("...ij,...ij->...i", states, states))
    th = states / r[..., None]
    dev = th - th.mean(axis=-2, keepdims=True)
    n = states.shape[-2]
    return np.einsum("...ij,...ij->...", dev, dev) / (n - 1), r.mean(axis=-1)


def equiangular_log_rhs(architecture: str, n: int, beta: float, normalized: bool):
    """``f(t, [log eps, r]) -> [(log eps)', r']`` of the equiangular model in
    ``eps = 1 - rho`` (module docstring; Post-LN ignores and keeps ``r = 1``)."""
    pre = architecture == "pre-ln"

    def rhs(t, y):
        eps, r = math.exp(y[0]), y[1]
        rho = 1.0 - eps
        if normalized:  # over e^{beta eps} (w = e^{-beta eps} <= 1): no overflow at any beta
            w = math.exp(-beta * eps)
            den = 1.0 + (n - 1) * w
            rate = 2.0 * (n - (n - 1) * eps) * w / den  # -(log eps)'
            radial = (1.0 + (n - 1) * rho * w) / den
        else:
            e = math.exp(beta * rho)
            rate = 2.0 / n * e * (n - (n - 1) * eps)
            radial = (math.exp(beta) + (n - 1) * rho * e) / n
        return [-rate / r, radial] if pre else [-rate, 0.0]

    return rhs


def equiangular_prediction(architecture: str, n: int, beta: float, normalized: bool,
                           rho0: float, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(eps, r)`` of the equiangular model from ``rho0`` (``r = 1``) at ``times`` (t = 0
    first); DOP853 at relative tolerance ``ODE_TOLERANCE``."""
    y0 = [math.log(1.0 - rho0), 1.0]
    sol = solve_ivp(equiangular_log_rhs(architecture, n, beta, normalized),
                    (0.0, float(times[-1])), y0, method="DOP853", t_eval=times,
                    rtol=ODE_TOLERANCE, atol=ODE_TOLERANCE)
    if not sol.success:  # pragma: no cover - a smooth scalar ODE
        raise RuntimeError(f"equiangular ODE: {sol.message}")
    return np.exp(sol.y[0]), sol.y[1]


# ---------------------------------------------------------------------------------------
# Fits.

def fit_exponential(times: np.ndarray, gap: np.ndarray, floor: float,
                    ceiling: float) -> tuple[float, ...]:
    """``(rate, low, high, start, stop)``: ``-slope`` of ``log gap`` against ``t`` over
    the first run of saves with the gap in ``[floor, ceiling]``
    (``contraction_rates.fit_rate``)."""
    return fit_rate(times, gap, floor, ceiling)


def fit_power(times: np.ndarray, gap: np.ndarray, floor: float, ceiling: float,
              t_min: float) -> tuple[float, ...]:
    """``(power, low, high, start, stop)``: the slope of ``log gap`` against ``log t`` over
    the first run of saves with ``t >= t_min`` (and ``t > 0``) and the gap in ``[floor,
    ceiling]``, its 95 % interval; NaN with fewer than 3 points."""
    t = np.asarray(times, dtype=float)
    g = np.where((t > 0) & (t >= t_min), np.asarray(gap, dtype=float), np.nan)
    with np.errstate(divide="ignore"):
        logt = np.log(np.where(t > 0, t, np.nan))
    rate, low, high, start, stop = fit_rate(logt, g, floor, ceiling)
    return -rate, -high, -low, math.exp(start), math.exp(stop)


def radius_offset(times: np.ndarray, radius: np.ndarray, speed: float = 1.0) -> float:
    """``c = r(t)/speed - t`` at the last finite save (Pre-LN radii: ``r = speed (t + c)
    + O(1/t)``, ``speed`` 1 for SA, ``e^beta`` for USA)."""
    ok = np.flatnonzero(np.isfinite(radius))
    if ok.size == 0:
        return math.nan
    return float(radius[ok[-1]] / speed - times[ok[-1]])
