"""The attention kernel on zonal densities of S^{d-1}, every d >= 2, and its linear theory.

By the Funk-Hecke formula, ``K*`` (the kernel ``e^{beta <x, y>}`` against the normalized
surface measure) acts on the degree-l Gegenbauer harmonic ``Q_l(<x, e>)`` by

    lambda_l = Gamma(d/2) (2/beta)^{d/2-1} I_{l+d/2-1}(beta)

(d = 2: ``I_l``; d = 3: ``i_l``; docs/conventions.md derives it). With it, about the uniform
density, ``a_l = lambda_l / beta`` (USA) or ``lambda_l / (beta lambda_0)`` (SA), and the
growth rate of degree l is ``sigma_l = l (l + d - 2)(c a_l - 1/kappa)``; ``kappa_c = 1/(c
a_1)`` and ``a_1 -> 1/d`` as beta -> 0 (so ``kappa_c -> d``).

Everything is computed in logarithms: ``lambda_0 = 0F1(; d/2; beta^2/4)`` summed as its
positive series (``meanfield.model.kernels._log_bessel_series``, exact to a few 1e-16 at
every order and argument), the higher degrees by the ratios ``I_{nu+1}/I_nu`` of Perron's
continued fraction. So d = 4096 with beta = 64, where ``I_{2047}(64)`` is 1e-2790, gives
finite multipliers to ~1e-15: ``log lambda_l`` is of order one and nothing of size d log d
cancels to give it.
As on the circle and the sphere, USA's multipliers are returned scaled by ``e^{-beta}``
(the factor ``e^beta`` is the caller's).
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special

from meanfield.model.kernels import (
    RESOLUTION_TOLERANCE,
    SERIES_PEAK_LIMIT,
    SMALLEST_SCALED_BESSEL,
    _log_bessel_series,
    _series_peak,
    log_uniform_pair_integral,
)


def log_bessel_i(nu: float, beta: float) -> float:
    """``log I_nu(beta)`` for ``nu >= 0``, ``beta > 0`` (no overflow, no underflow)."""
    if _series_peak(nu, beta) > SERIES_PEAK_LIMIT:
        scaled = float(special.ive(nu, beta))
        if scaled > SMALLEST_SCALED_BESSEL:
            return math.log(scaled) + beta
    return nu * math.log(beta / 2) - float(special.gammaln(nu + 1)) + _log_bessel_series(nu, beta)


def log_bessel_orders(nu0: float, count: int, beta: float) -> np.ndarray:
    """``log I_{nu0 + l}(beta)`` for l = 0..count-1: the first from ``log_bessel_i``, the
    others by ``log_bessel_ratios``."""
    return log_bessel_i(nu0, beta) + log_bessel_ratios(nu0, count, beta)


def log_bessel_ratios(nu0: float, count: int, beta: float) -> np.ndarray:
    """``log(I_{nu0 + l}(beta) / I_{nu0}(beta))`` for l = 0..count-1, from the ratios
    ``r_nu = I_{nu+1}/I_nu`` of Perron's continued fraction (evaluated backward from far
    beyond, the stable direction): ``r_nu = beta / (2(nu+1) + beta r_{nu+1})``. Each ratio
    is exact to a few ulps, so the logs are to (count) ulps of their size."""
    out = np.zeros(count)
    if count == 1:
        return out
    # backward recurrence of the ratios, started far enough out that the start is forgotten
    start = count + 40 + int(2 * beta)
    r = 0.0
    ratios = np.empty(count - 1)
    for j in range(start, -1, -1):
        r = beta / (2 * (nu0 + j + 1) + beta * r)
        if j < count - 1:
            ratios[j] = r
    with np.errstate(divide="ignore"):
        out[1:] = np.cumsum(np.log(ratios))
    return out


def log_funk_hecke(lmax: int, dim: int, beta: float) -> np.ndarray:
    """``log lambda_l`` for l = 0..lmax (``lambda_l = [l == 0]`` at beta = 0).

    ``lambda_0 = 0F1(; d/2; beta^2/4)`` is summed as that series
    (``meanfield.model.kernels.log_uniform_pair_integral``), not as ``Gamma(d/2) (2/beta)^{d/2-1}
    I_{d/2-1}(beta)``: in that product three logarithms of size ~d log d cancel to a result
    of order one (d = 4096: ~1e4 to 0.5, losing 4e-13 of lambda_0). The higher degrees
    follow by the Bessel ratios, which cancel nothing."""
    if beta == 0:
        out = np.full(lmax + 1, -np.inf)
        out[0] = 0.0
        return out
    return log_uniform_pair_integral(dim, beta) + log_bessel_ratios(dim / 2 - 1, lmax + 1, beta)


def zonal_multipliers(lmax: int, dim: int, beta: float, normalized: bool) -> np.ndarray:
    """The linearisation's ``a_l`` for l = 0..lmax (USA: ``lambda_l / beta``, scaled by
    ``e^{-beta}``; SA: ``lambda_l / (beta lambda_0)``), with ``a_0 = 0`` (the mean is
    dynamically irrelevant). At beta = 0 their limits: ``a_1 = 1/d``, the rest 0."""
    a = np.zeros(lmax + 1)
    if beta == 0:
        if lmax >= 1:
            a[1] = 1 / dim
        return a
    logs = log_funk_hecke(lmax, dim, beta)
    shift = logs[0] if normalized else beta
    a[1:] = np.exp(logs[1:] - shift) / beta
    return a


def zonal_kernel_mean(dim: int, beta: float, normalized: bool) -> float:
    """``lambda_0`` scaled as the multipliers: ``e^{-beta} lambda_0`` (USA), 1 (SA)."""
    if normalized or beta == 0:
        return 1.0
    return float(np.exp(log_funk_hecke(0, dim, beta)[0] - beta))


def zonal_growth_rate(l: int | np.ndarray, dim: int, beta: float, kappa: float,
                      normalized: bool, value: float = 1.0) -> np.ndarray | float:
    """``sigma_l = l (l + d - 2)(c a_l - 1/kappa)`` about the uniform density of S^{d-1}
    (``a_l`` unscaled: the true rate)."""
    l = np.asarray(l)
    lmax = int(np.max(l)) if l.size else 0
    a = zonal_multipliers(max(lmax, 1), dim, beta, normalized)
    if not normalized and beta > 0:
        a = a * math.exp(beta)
    noise = 0.0 if math.isinf(kappa) else 1.0 / kappa
    return l * (l + dim - 2) * (value * a[l] - noise)


def zonal_critical_kappa(dim: int, beta: float, normalized: bool, value: float = 1.0
                         ) -> float:
    """``kappa_c = 1/(c a_1)``: the uniform density of S^{d-1} loses stability to degree 1
    for ``kappa > kappa_c`` (``inf`` when ``c a_1 <= 0``)."""
    a1 = float(zonal_growth_rate(1, dim, beta, math.inf, normalized, value)) / (dim - 1)
    return math.inf if a1 <= 0 else 1.0 / a1


def log_harmonic_dimension(lmax: int, dim: int) -> np.ndarray:
    """``log N(d, l)`` for l = 0..lmax: the dimension of the degree-l spherical harmonics
    of S^{d-1}, ``N = (2l + d - 2)/(l + d - 2) C(l + d - 2, l)`` (2 for l >= 1 on S^1;
    ``2l + 1`` on S^2), which is ``Q_l(1)^2``, the largest value of ``Q_l^2``."""
    l = np.arange(lmax + 1, dtype=float)
    if dim == 2:
        return np.where(l == 0, 0.0, math.log(2.0))
    # log C(l + d - 2, l) as a sum of log1p((d - 2)/k): no difference of large lgammas
    binomial = np.concatenate([[0.0], np.cumsum(np.log1p((dim - 2) / l[1:]))])
    return np.log(2 * l + dim - 2) - np.log(l + dim - 2) + binomial


def log_uniform_weights(a: np.ndarray, dim: int) -> np.ndarray:
    """``log(|a_l| N(d, l))``: the sup norm on the sphere of the degree-l part of the
    kernel's series, ``sum_l a_l N(d, l) P_l(<x, y>)`` (addition theorem). A multiplier
    counts with this weight: a probability density has ``|c_l| <= Q_l(1) = sqrt(N)``, so
    the degree-l part of its potential is at most ``|a_l| N`` anywhere. At large d, N
    grows like ``d^l / l!`` while ``a_l`` falls like ``(beta/d)^l``: the product, about
    ``beta^l / l!``, is what decides where the series may stop, not ``a_l`` alone."""
    with np.errstate(divide="ignore"):
        return np.log(np.abs(a)) + log_harmonic_dimension(a.size - 1, dim)


def zonal_required_lmax(dim: int, beta: float, tolerance: float = RESOLUTION_TOLERANCE
                        ) -> int:
    """Smallest band limit (>= 8) whose dropped degrees carry less than ``tolerance`` of
    the largest degree's part of the kernel in the sup norm: ``a_l N(d, l) <= tolerance
    max_k a_k N(d, k)`` (k >= 1) for l > lmax (``log_uniform_weights``). On S^1 (N = 2,
    ``a_k`` decreasing) this is the circle's criterion; at large d the parts peak near l ~
    beta (about ``beta^l / l!``), so the band limit grows like e beta, not like beta/d."""
    if beta == 0:
        return 8
    count = 64
    while True:
        w = log_uniform_weights(zonal_multipliers(count, dim, beta, normalized=True), dim)
        peak = int(np.argmax(w[1:])) + 1
        small = np.nonzero(w[peak + 1:] <= math.log(tolerance) + w[peak])[0]
        if small.size and peak + 1 + small[0] < count:
            return max(8, peak + int(small[0]))
        count *= 2
