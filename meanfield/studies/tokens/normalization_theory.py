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


def equiangular_log_terms(n: int, beta: float, normalized: bool, eps: float
                          ) -> tuple[float, float, float]:
    """``(q, a, m)`` of equiangular directions at ``eps = 1 - rho``: ``q = -(log eps)'`` of
    Post-LN, ``a = <theta_i, A_i>`` and ``m = |A_i|`` (SA average; USA sum), written so that
    nothing cancels as ``eps -> 0``: ``m^2 = 1 - (n - 1) w eps (2 + (n - 2) w)/D^2``
    (``w = e^{-beta eps}``, ``D = 1 + (n - 1) w``; docs/conventions.md)."""
    rho = 1.0 - eps
    if normalized:  # over e^{beta eps} (w = e^{-beta eps} <= 1): no overflow at any beta
        w = math.exp(-beta * eps)
        den = 1.0 + (n - 1) * w
        rate = 2.0 * (n - (n - 1) * eps) * w / den  # -(log eps)'
        radial = (1.0 + (n - 1) * rho * w) / den
        scale = 1.0
    else:
        e = math.exp(beta * rho)
        rate = 2.0 / n * e * (n - (n - 1) * eps)
        radial = (math.exp(beta) + (n - 1) * rho * e) / n
        w = math.exp(-beta * eps)
        den = 1.0 + (n - 1) * w
        scale = math.exp(beta) * den / n  # the USA sum over the SA average
    size = scale * math.sqrt(1.0 - (n - 1) * w * eps * (2.0 + (n - 2) * w) / den**2)
    return rate, radial, size


def equiangular_log_rhs(architecture: str, n: int, beta: float, normalized: bool,
                        alpha: float = 1.0, switch: float = math.inf):
    """``f(t, [log eps, r]) -> [(log eps)', r']`` of the equiangular model in ``eps = 1 -
    rho`` (the normalization module docstring; docs/conventions.md): ``(log eps)' = -q/s``
    with the speed factor ``s`` of the architecture (Post-LN and nGPT keep ``r = 1``);
    Mix-LN is Post-LN for ``t < switch``, Pre-LN after. Peri-LN and nGPT see ``A/|A|``
    only (SA = USA): their terms are the SA ones whatever ``normalized``."""
    scale_free = architecture in ("peri-ln", "ngpt")

    def rhs(t, y):
        rate, radial, size = equiangular_log_terms(n, beta, normalized or scale_free,
                                                   math.exp(y[0]))
        arch = architecture if architecture != "mix-ln" else \
            ("post-ln" if t < switch else "pre-ln")
        r = y[1]
        if arch == "pre-ln":
            return [-rate / r, radial]
        if arch == "peri-ln":
            return [-rate / (r * size), radial / size]
        if arch == "ngpt":
            return [-alpha * rate / size, 0.0]
        return [-rate, 0.0]

    return rhs


def equiangular_prediction(architecture: str, n: int, beta: float, normalized: bool,
                           rho0: float, times: np.ndarray, alpha: float = 1.0,
                           switch: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
    """``(eps, r)`` of the equiangular model from ``rho0`` (``r = 1``) at ``times`` (t = 0
    first); DOP853 at relative tolerance ``ODE_TOLERANCE``, Mix-LN in two pieces (its
    field jumps at ``switch``)."""
    rhs = equiangular_log_rhs(architecture, n, beta, normalized, alpha, switch)
    cuts = [0.0, float(times[-1])]
    if architecture == "mix-ln" and switch < times[-1]:
        cuts = [0.0, float(switch), float(times[-1])]
    y, eps, r = [math.log(1.0 - rho0), 1.0], np.empty(len(times)), np.empty(len(times))
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        inside = (times >= lo) & (times <= hi)
        sol = solve_ivp(rhs, (lo, hi), y, method="DOP853", t_eval=times[inside],
                        rtol=ODE_TOLERANCE, atol=ODE_TOLERANCE, dense_output=True)
        if not sol.success:  # pragma: no cover - a smooth scalar ODE
            raise RuntimeError(f"equiangular ODE: {sol.message}")
        eps[inside], r[inside] = np.exp(sol.y[0]), sol.y[1]
        y = list(sol.sol(hi))
    return eps, r


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


# ---------------------------------------------------------------------------------------
# The asymptotic law of each architecture (docs/conventions.md) and its fit.

def predicted_law(architecture: str, beta: float, normalized: bool,
                  alpha: float = 1.0) -> tuple[str, float]:
    """``("rate", lambda)`` with ``1 - rho ~ e^{-lambda t}`` (Post-LN: 2 for SA, ``2 e^beta``
    for USA; nGPT: ``2 alpha``) or ``("power", -2)`` with ``1 - rho ~ t^-2`` (Pre-LN,
    Peri-LN, Mix-LN: the speed factor grows like t)."""
    if architecture == "post-ln":
        return "rate", 2.0 if normalized else 2.0 * math.exp(beta)
    if architecture == "ngpt":
        return "rate", 2.0 * alpha
    return "power", -2.0


def radius_speed(architecture: str, beta: float, normalized: bool) -> float:
    """``r' -> speed`` as the tokens cluster: ``e^beta`` for Pre-LN and Mix-LN with USA
    (``r' = <theta, A>``), else 1 (SA's average, Peri-LN's unit field)."""
    return math.exp(beta) if architecture in ("pre-ln", "mix-ln") and not normalized \
        else 1.0


def fit_law(law: str, times: np.ndarray, gap: np.ndarray, radius: np.ndarray | None,
            floor: float, ceiling: float, offset_ratio: float, speed: float = 1.0,
            equiangular: np.ndarray | None = None) -> dict:
    """The fit of ``1 - rho`` (``gap``) by its law: ``fitted``, ``low``, ``high`` (95 %),
    ``start``, ``stop`` (the window), ``offset`` (power: ``c = r/speed - t`` at the last
    save; the window starts at ``t >= |c|/offset_ratio``), ``shifted`` (power: the slope
    against ``log(t + c)`` over the window) and ``equiangular`` (the same fit of the
    equiangular curve over the window; NaN without one)."""
    nan = math.nan
    if law == "rate":
        fit = fit_exponential(times, gap, floor, ceiling)
        offset, t_min = nan, None
    else:
        offset = radius_offset(times, radius, speed)
        t_min = abs(offset) / offset_ratio if math.isfinite(offset) else math.inf
        fit = fit_power(times, gap, floor, ceiling, t_min)
    inside = (times >= fit[3]) & (times <= fit[4])
    eq = nan
    if equiangular is not None:
        curve = np.where(inside, equiangular, np.nan)
        eq = (fit_exponential(times, curve, floor, ceiling) if law == "rate" else
              fit_power(times, curve, floor, ceiling, t_min))[0]
    shifted = nan
    if law == "power" and math.isfinite(offset):
        shifted = fit_power(times + offset, np.where(inside, gap, np.nan), floor, ceiling,
                            -math.inf)[0]
    return dict(zip(("fitted", "low", "high", "start", "stop"), fit),
                offset=offset, shifted=shifted, equiangular=eq)
