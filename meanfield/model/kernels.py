"""The attention kernel ``K(t) = e^{beta t}`` in Fourier / spherical-harmonic space, and the
exact linear theory about the uniform density.

On the sphere S^2, by the Funk-Hecke formula ``K*`` acts on degree l by ``4 pi i_l(beta)``
(modified spherical Bessel functions, ``i_l(b) = sqrt(pi/(2b)) I_{l+1/2}(b)``); the
``sphere_*`` functions below are the analogues of the circle ones, scaled the same way.

On the circle ``K*`` acts on the mode ``e^{ik theta}`` by ``2 pi I_k(beta)`` (modified
Bessel functions). Everything here uses the exponentially scaled ``ive(k, beta) =
e^{-beta} I_k(beta)``, so beta = 100 (or 700) does not overflow; the factor ``e^beta`` is
applied, where it is needed at all, by the caller.

Multipliers (k >= 0, scaled by ``e^{-beta}``):

- ``kernel_multiplier``:    ``s_k = 2 pi ive(k, beta)``, the symbol of ``e^{-beta} K*``;
- ``potential_multiplier``: ``g_k = 2 pi ive(k, beta) / beta`` for k >= 1 and ``g_0 = 0``,
  the symbol of ``e^{-beta} Phi`` with its (dynamically irrelevant) mean removed. At
  beta = 0 it takes its limit: ``g_1 = pi``, ``g_k = 0`` for k >= 2.

``s_k = beta g_k`` for k >= 1, so ``e^{-beta} K*rho = s_0 c_0 + beta (g * rho)``.

For the fast interaction sums of tokens (``solvers.particles``), the multipliers of the
truncated kernel expansions, the truncation order that meets an accuracy (with its
bounds) and the choice of method are made here too (``fast_multipliers``, ``fast_order``,
``resolve_sum_method``): ``solvers`` applies the multipliers, computes no Bessel function.

A model that changes beta many times (continuation, ``set_parameters``) takes the
circle's multipliers from ``meanfield.model.circle_multipliers`` (Miller's recurrence,
compiled: all orders in a microsecond, within a few ulps of ``ive``) instead of ``ive``,
which costs more than a right-hand side at n = 256; the constructors keep ``ive``.
"""
from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

from meanfield.metrics.clusters import SMALL_FRAME
from solvers.particles import fast
from solvers.particles.direct import exp_kernel_sums, tangent_projection
from solvers.particles.multipliers import (
    ACCURACY_FLOOR,
    FAST_METHOD,
    MAX_ORDER,
    RELATIVE_MARGIN,
    FastMultipliers,
    check_dimension,
    check_fast_inputs,
)

# Relative size of the last kept potential multiplier that a resolution must reach.
RESOLUTION_TOLERANCE = 1e-12


def log1p_ratio(num: np.ndarray, den: np.ndarray | float, beta: float) -> np.ndarray:
    """``log(1 + beta num/den) / beta``, SA's potential ``log(K*rho / M)/beta`` with ``K*rho
    = M + beta phi``, computed as ``(num/den) log1p(y)/y``, ``y = beta num/den``: exact
    as beta -> 0 (the series ``1 - y/2`` below ``|y| = 1e-8``), no division by beta."""
    y = beta * num / den
    small = np.abs(y) < 1e-8
    safe = np.where(small, 1.0, y)
    return (num / den) * np.where(small, 1 - y / 2, np.log1p(safe) / safe)


def kernel_multiplier(kmax: int, beta: float) -> np.ndarray:
    """``2 pi e^{-beta} I_k(beta)`` for k = 0..kmax."""
    k = np.arange(kmax + 1)
    return 2 * np.pi * special.ive(k, beta)


def potential_multiplier(kmax: int, beta: float) -> np.ndarray:
    """``2 pi e^{-beta} I_k(beta) / beta`` for k = 1..kmax, 0 at k = 0 (beta = 0: its limit)."""
    k = np.arange(kmax + 1)
    g = np.zeros(kmax + 1)
    if beta == 0:
        if kmax >= 1:
            g[1] = np.pi
        return g
    g[1:] = 2 * np.pi * special.ive(k[1:], beta) / beta
    return g


def growth_rate(k: int | np.ndarray, beta: float, kappa: float, normalized: bool,
                value: float = 1.0) -> np.ndarray | float:
    """Growth rate of mode k about the uniform density on the circle (docs/conventions.md).

    ``sigma_k = k^2 (c a_k - 1/kappa)``, ``a_k = I_k(beta)/beta`` (USA) or
    ``I_k(beta)/(beta I_0(beta))`` (SA); at beta = 0, ``a_1 = 1/2`` and ``a_k = 0`` (k > 1);
    ``c = value``, the value matrix ``V = c I`` (1: no weights; c < 0: every mode decays).
    """
    k = np.asarray(k)
    noise = 0.0 if math.isinf(kappa) else 1.0 / kappa
    if beta == 0:
        a = np.where(np.abs(k) == 1, 0.5, 0.0)
    elif normalized:
        a = special.ive(k, beta) / (beta * special.ive(0, beta))
    else:
        a = special.iv(k, beta) / beta
    return k**2 * (value * a - noise)


def critical_kappa(beta: float, normalized: bool) -> float:
    """The noise threshold ``kappa_c = 1/a_1`` where the uniform state loses stability."""
    if beta == 0:
        return 2.0
    a1 = special.ive(1, beta) / (beta * special.ive(0, beta)) if normalized \
        else special.iv(1, beta) / beta
    return 1.0 / a1


def required_resolution(beta: float, tolerance: float = RESOLUTION_TOLERANCE) -> int:
    """Smallest even grid size ``n >= 8`` whose modes |k| < n/2 carry the kernel.

    The criterion: ``I_k(beta)/I_1(beta) <= tolerance`` for every dropped mode
    ``k >= n/2``. It grows like ``beta + O(sqrt(beta))``.
    """
    if beta == 0:
        return 8
    beta = abs(beta)  # |I_k(-b)| = I_k(b)
    ref = special.ive(1, beta)
    k = 2
    # I_k(beta) decreases in k; step up until the ratio falls below the tolerance.
    while special.ive(k, beta) > tolerance * ref:
        k += 1
    return max(8, 2 * k)


# --- the sphere S^2 ------------------------------------------------------------------------
def spherical_ive(degree: np.ndarray, beta: float) -> np.ndarray:
    """``e^{-beta} i_l(beta)`` (modified spherical Bessel) for ``l = degree``; at beta = 0
    its value ``[l == 0]``."""
    ell = np.asarray(degree)
    if beta == 0:
        return (ell == 0).astype(float)
    return np.sqrt(np.pi / (2 * beta)) * special.ive(ell + 0.5, beta)


def sphere_kernel_multiplier(lmax: int, beta: float) -> np.ndarray:
    """``4 pi e^{-beta} i_l(beta)`` for l = 0..lmax (Funk-Hecke)."""
    return 4 * np.pi * spherical_ive(np.arange(lmax + 1), beta)


def sphere_potential_multiplier(lmax: int, beta: float) -> np.ndarray:
    """``4 pi e^{-beta} i_l(beta) / beta`` for l >= 1, 0 at l = 0; at beta = 0 its limit
    ``4 pi / 3`` at l = 1 (``i_1(b) ~ b/3``) and 0 above."""
    g = np.zeros(lmax + 1)
    if beta == 0:
        if lmax >= 1:
            g[1] = 4 * np.pi / 3
        return g
    g[1:] = sphere_kernel_multiplier(lmax, beta)[1:] / beta
    return g


def sphere_growth_rate(l: int | np.ndarray, beta: float, kappa: float, normalized: bool,
                       value: float = 1.0) -> np.ndarray | float:
    """Growth rate of degree l about the uniform density on S^2 (docs/conventions.md):
    ``sigma_l = l(l+1) (c a_l - 1/kappa)``, ``a_l = i_l(beta)/beta`` (USA) or
    ``i_l(beta)/(beta i_0(beta))`` (SA); at beta = 0, ``a_1 = 1/3``; ``c = value`` (the
    value matrix ``V = c I``)."""
    l = np.asarray(l)
    noise = 0.0 if math.isinf(kappa) else 1.0 / kappa
    if beta == 0:
        a = np.where(l == 1, 1.0 / 3.0, 0.0)
    elif normalized:
        a = spherical_ive(l, beta) / (beta * spherical_ive(0, beta))
    else:
        a = spherical_ive(l, beta) * math.exp(beta) / beta
    return l * (l + 1) * (value * a - noise)


def sphere_required_lmax(beta: float, tolerance: float = RESOLUTION_TOLERANCE) -> int:
    """Smallest band limit whose dropped degrees ``l > lmax`` carry
    ``i_l(beta)/i_1(beta) <= tolerance`` (at least 4)."""
    if beta == 0:
        return 4
    ref = spherical_ive(1, beta)
    l = 2
    while spherical_ive(l, beta) > tolerance * ref:
        l += 1
    return max(4, l - 1)


# --- the fast interaction sums of tokens (solvers.particles) ------------------------------
# The fast methods apply a truncated expansion of the kernel (solvers.particles.fourier,
# .harmonic); its multipliers, the order that meets an accuracy and the bounds behind it
# are computed here, once per (d, beta, accuracy), and handed over as FastMultipliers.
#
# S^1 (d = 2): ``e^{beta cos phi} = sum_k I_k(beta) e^{ik phi}``. Order: the smallest
# ``K >= 0`` with ``2 sum_{k>K} I_k(beta) e^{-beta} <= accuracy/2`` (the kernel's truncation
# error relative to its maximum ``e^beta``; ``|y_j| = 1`` makes it a bound for ``s`` too).
# ``K = 10, 17, 31, 67`` at ``beta = 1, 5, 20, 100`` for 1e-10; for large beta ``K ~
# sqrt(2 beta log(1/accuracy))``. The issue's ``beta + 10 sqrt(beta) + 20`` gives far below
# its 1e-14 (tail <= 3e-43 for beta = 0.1..1e4; tested) and is 2-5x larger than needed: a
# tail of 1e-14 needs ``K = 13, 21, 38, 79, 245`` at ``beta = 1, 5, 20, 100, 1000``.
#
# S^2 (d = 3): multipliers ``k_l = 4 pi i_l e^{-beta}`` (kernel), ``k'_l = 4 pi i_l'
# e^{-beta}`` (radial part) and ``g_l = 4 pi i_l e^{-beta}/beta`` (tangent part); below
# ``beta = 1``, ``g_l = 4 pi (i_{l-1} - i_{l+1}) e^{-beta}/(2l+1)`` (no ``1/beta``; at beta =
# 0 only ``g_1 = 4 pi/3``). Order: the smallest ``L >= 1`` with ``sum_{l>L} (l(l+1)/2 + 2l +
# 1) i_{l-1}(beta) e^{-beta} <= accuracy/2``, a bound for the tangent part (``|grad
# P_l(<q, y>)| <= l(l+1)/2`` and ``i_l/beta <= i_{l-1}/(2l+1)``) plus the radial part
# (``i_l' <= i_{l-1}``), and so for ``z``. ``L = 12, 20, 35, 75`` at ``beta = 1, 5, 20, 100``
# for 1e-10. The issue's ``beta + 25`` holds (bound <= 1.2e-16 for beta = 0.1..1e4;
# tested); 1e-13 needs ``L = 14, 23, 40, 84, 263`` at ``beta = 1, 5, 20, 100, 1000``.
#
# Relative rows (SA divides s by z): the fast method runs at ``a = accuracy u(beta) / 10``,
# ``u`` the mean of ``e^{beta(<x, y> - 1)}`` over uniform ``y`` (``I_0(beta) e^{-beta}`` on
# S^1, ``(1 - e^{-2 beta})/(2 beta)`` on S^2; not below the floor; the order grows like
# ``log(1/a)``), so rows at the uniform density or denser pass with a margin 10; the others
# are recomputed directly (solvers.particles.fast.interaction_sums).

def sphere_multipliers(lmax: int, beta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(k_l, k'_l, g_l)`` for l = 0..lmax: ``4 pi e^{-beta}`` times ``i_l(beta)``,
    ``i_l'(beta)`` and ``i_l(beta)/beta`` (``g_0 = 0``; stable as beta -> 0)."""
    ell = np.arange(lmax + 1)
    e = spherical_ive(np.arange(lmax + 2), beta)
    below = np.concatenate([[0.0], e[:lmax]])  # i_{l-1}, unused at l = 0
    k = 4 * np.pi * e[: lmax + 1]
    dk = 4 * np.pi * (ell * below + (ell + 1) * e[1:]) / (2 * ell + 1)
    g = np.zeros(lmax + 1)
    if beta >= 1:
        g[1:] = k[1:] / beta
    else:  # i_l/beta = (i_{l-1} - i_{l+1})/(2l + 1): no 1/beta, no cancellation here
        g[1:] = 4 * np.pi * (below[1:] - e[2:]) / (2 * ell[1:] + 1)
    return k, dk, g


def fast_tails(d: int, beta: float) -> np.ndarray:
    """``tail[o]``: the truncation bound (relative to ``n e^beta``) at order ``o``.

    Orders up to ``min(beta, 60 sqrt(beta)) + 40 sqrt(beta) + 100``: beyond, the terms are
    below ``e^{-800}`` (``I_k(beta) e^{-beta} ~ e^{-k^2/(2 beta)}`` for ``k << beta``); but
    at most ``10 MAX_ORDER[d]`` (``fast_order`` checks the last term then).
    """
    root = math.sqrt(beta)
    top = int(min(beta, 60 * root, 10 * MAX_ORDER[d]) + 40 * root + 100)
    top = min(top, 10 * MAX_ORDER[d])
    if d == 2:
        terms = 2 * special.ive(np.arange(top + 1), beta)  # the k and -k terms
    else:
        ell = np.arange(top + 1)
        terms = (ell * (ell + 1) / 2 + 2 * ell + 1) * spherical_ive(np.maximum(ell - 1, 0),
                                                                    beta)
        terms[0] = 0.0
    tail = np.cumsum(terms[::-1])[::-1]  # tail[o] = sum_{k >= o} terms: small ones first
    return np.append(tail[1:], 0.0)  # tail[o] = sum_{k > o}


def fast_order(d: int, beta: float, accuracy: float) -> int:
    """The truncation order of the fast method: ``K`` on S^1 (d = 2), ``L`` on S^2.

    The smallest order whose truncation bound (above) is ``<= accuracy/2`` (at least 0 on
    S^1, 1 on S^2); ``10 MAX_ORDER[d] + 1`` when the bound does not fall that far.
    """
    check_dimension(d)
    return _fast_order(d, float(beta), float(accuracy))


@functools.lru_cache(maxsize=256)
def _fast_order(d: int, beta: float, accuracy: float) -> int:
    tail = fast_tails(d, beta)
    order = max(int(np.argmax(tail <= accuracy / 2)), d - 2)
    if not np.isfinite(tail).all() or (tail.size == 10 * MAX_ORDER[d] + 1
                                       and tail[-2] - tail[-1] > accuracy * 1e-6):
        return 10 * MAX_ORDER[d] + 1  # the terms reach the search limit: beyond any cap
    return order


def max_fast_beta(d: int, accuracy: float) -> float:
    """The largest beta (to 1%) whose fast order stays within ``MAX_ORDER[d]``."""
    lo, hi = 1.0, 1.0
    while fast_order(d, hi, accuracy) <= MAX_ORDER[d]:
        lo, hi = hi, 2 * hi
    while hi - lo > 0.01 * lo:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if fast_order(d, mid, accuracy) <= MAX_ORDER[d] else (lo, mid)
    return lo


def check_fast_accuracy(d: int, beta: float, accuracy: float) -> None:
    """Raise ``ValueError`` (saying what is reachable) if the fast method of dimension
    ``d`` cannot deliver ``accuracy`` at ``beta``."""
    check_fast_inputs(d, beta, accuracy)
    order = fast_order(d, beta, accuracy)
    if order > MAX_ORDER[d]:
        needed = f"> {order - 1}" if order > 10 * MAX_ORDER[d] else str(order)
        raise ValueError(f"method {FAST_METHOD[d]!r} at beta = {beta:g} and accuracy "
                         f"{accuracy:g} needs order {needed} > {MAX_ORDER[d]} (too expensive); "
                         f"it reaches beta <= {max_fast_beta(d, accuracy):.4g} at this "
                         "accuracy; use 'direct'")


def uniform_kernel_mean(d: int, beta: float) -> float:
    """``e^{-beta}`` times the mean of ``e^{beta <x, y>}`` over uniform ``y`` on S^{d-1}."""
    if d == 2:
        return float(special.ive(0, beta))
    return 1.0 if beta == 0 else float(-np.expm1(-2 * beta) / (2 * beta))


def dense_pair_sum(th: np.ndarray, beta: float) -> tuple[float, float]:
    """``(mean_ij e^{beta <th_i, th_j>} / e^top, top)`` with ``top`` the largest
    exponent: the pair sum of ``interaction_energy`` for a few tokens (``n^2 d <=
    SMALL_FRAME``) in one product, 8 us at n = 32, d = 16 against 45 through
    ``kernel_sums`` (which also projects attention vectors the energy does not need)."""
    logits = beta * (th @ th.T)
    top = float(np.max(logits))
    return float(np.sum(np.exp(logits - top))) / th.shape[0] ** 2, top


def energy_from_pair_sum(pairs: float, top: float, d: int, beta: float) -> float:
    """``E_beta(mu^n) - E_beta(uniform)`` from the pair sum ``mean_ij e^{beta <x_i, x_j>}
    = pairs e^top`` on S^{d-1} (``beta > 0``); ``inf`` beyond the double range."""
    log_uniform = log_uniform_pair_integral(d, beta)
    # Both terms carry e^beta: beyond e^709 the energy is not a double (inf, stated).
    if max(top, log_uniform) > 700:
        return math.inf
    return (pairs * math.exp(top) - math.exp(log_uniform)) / (2 * beta)


@functools.lru_cache(maxsize=256)  # (a constant of each run's energy: 0.1 ms a frame)
def log_uniform_pair_integral(d: int, beta: float) -> float:
    """``log iint e^{beta <x, y>}`` over the uniform probability measure on S^{d-1} (both
    variables): ``log(Gamma(d/2) (2/beta)^{d/2-1} I_{d/2-1}(beta))``, for ``beta > 0``.

    With ``nu = d/2 - 1`` this is ``log 0F1(; nu + 1; beta^2/4)`` (the prefactor cancels
    the series' ``(beta/2)^nu / Gamma(nu + 1)``), summed in log space by
    ``_log_bessel_series`` (positive terms, nothing cancels; within a few 1e-16 of 50-digit
    sums for d = 2..1024, beta = 1e-3..3000). Only where that needs more than
    ``SERIES_PEAK_LIMIT`` terms (``beta`` in the tens of thousands) is the closed form with
    ``ive`` used, and then only if ``ive`` is a normal double there: ``ive(nu, beta)``
    underflows for large ``nu`` against ``beta`` (``nu >= 150`` at ``beta = 1``, the math
    domain error of d >= 400 once), and the closed form cancels its digits at small beta.
    """
    nu = d / 2 - 1
    beta = abs(beta)  # the integral is even in beta (the uniform measure is symmetric)
    if _series_peak(nu, beta) > SERIES_PEAK_LIMIT:
        scaled = float(special.ive(nu, beta))
        if scaled > SMALLEST_SCALED_BESSEL:
            return float(special.gammaln(d / 2) + nu * math.log(2 / beta)
                         + math.log(scaled) + beta)
    return _log_bessel_series(nu, beta)


# The series is summed up to its largest term and a tail beyond: up to this largest-term
# index (about 3 10^4 terms, a millisecond) it is used whatever the order.
SERIES_PEAK_LIMIT = 10_000
# Below this, ``ive`` is near the bottom of the double range (subnormal, then 0).
SMALLEST_SCALED_BESSEL = 1e-250


def _series_peak(nu: float, beta: float) -> float:
    """The index ``k* = (sqrt(nu^2 + beta^2) - nu)/2`` of the largest term of
    ``_log_bessel_series`` (written without the cancellation)."""
    return beta * beta / (2 * (math.hypot(nu, beta) + nu))


def _log_bessel_series(nu: float, beta: float) -> float:
    """``log sum_k t_k``, ``t_k = (beta^2/4)^k / (k! (nu+1)_k)`` (``0F1(; nu+1; beta^2/4)``).

    The terms' ratio ``t_{k+1}/t_k = (beta^2/4) / ((k+1)(nu+k+1))`` falls through 1 at the
    largest term ``k* = (sqrt(nu^2 + beta^2) - nu)/2``; past it the terms decay like a
    Gaussian of width at most ``sqrt(k* + 1)``, so ``k* + 40 sqrt(k* + 1) + 40`` terms leave
    a tail below ``e^{-800}`` of the sum. The log terms are cumulative sums of the log
    ratios: relative error about (number of terms) x 1e-16.
    """
    x = beta * beta / 4
    peak = _series_peak(nu, beta)
    count = int(peak + 40 * math.sqrt(peak + 1) + 40)
    k = np.arange(count, dtype=float)
    log_terms = np.concatenate([[0.0], np.cumsum(math.log(x) - np.log1p(k)
                                                 - np.log(nu + 1 + k))])
    # log(t_m (1 + sum_{k != m} t_k/t_m)), m the largest term, by log1p: the sum is 1 +
    # O(beta^2/nu) at small beta, where log of the sum would lose its digits.
    m = int(np.argmax(log_terms))
    scaled = np.exp(log_terms - log_terms[m])
    return float(log_terms[m]) + math.log1p(float(np.sum(scaled[:m]) + np.sum(scaled[m + 1:])))


def fast_multipliers(d: int, beta: float, accuracy: float, relative_rows: bool = False
                     ) -> FastMultipliers:
    """The multipliers of the fast method of dimension ``d`` for ``beta`` and
    ``accuracy`` (computed once per arguments; the arrays are read-only).

    Args:
        d: 2 (S^1) or 3 (S^2).
        beta: inverse temperature, finite and >= 0.
        accuracy: every component of the sums within ``accuracy n e^beta``; with
            ``relative_rows``, each row's sums within ``accuracy`` of themselves (the
            multipliers are then made for the smaller accuracy of the note above).
        relative_rows: for ``interaction_sums(..., relative_rows=True)``.

    Raises:
        ValueError: the method cannot reach ``accuracy`` at ``beta`` (says what it can).
    """
    check_fast_accuracy(d, float(beta), float(accuracy))
    return _fast_multipliers(d, float(beta), float(accuracy), bool(relative_rows))


@functools.lru_cache(maxsize=64)
def _fast_multipliers(d: int, beta: float, accuracy: float, relative_rows: bool
                      ) -> FastMultipliers:
    run_at, row_accuracy = accuracy, None
    if relative_rows:
        row_accuracy = accuracy
        run_at = max(ACCURACY_FLOOR[d], accuracy * min(1.0, uniform_kernel_mean(d, beta))
                     / RELATIVE_MARGIN)
        try:
            check_fast_accuracy(d, beta, run_at)
        except ValueError:
            run_at = accuracy
    order = fast_order(d, beta, run_at)
    if d == 2:  # I_k e^{-beta}, |k| <= K + 2
        values = (special.ive(np.arange(-order - 2, order + 3), beta),)
    else:
        values = sphere_multipliers(order, beta)
    for v in values:
        v.flags.writeable = False  # shared by every caller of the cache
    return FastMultipliers(d, beta, run_at, order, values, row_accuracy)


def crossover_n(d: int, beta: float, accuracy: float) -> int:
    """Keys from which ``"auto"`` takes the fast method (``solvers.particles.fast``)."""
    return fast.crossover_n(d, fast_order(d, beta, accuracy))


def choose_method(n: int, d: int, beta: float, accuracy: float) -> str:
    """``"auto"``: the fast method of ``d`` when available, able to reach ``accuracy`` at
    ``beta`` and ``n >= crossover_n``; else ``"direct"``. Depends on n, d, beta and
    accuracy only."""
    try:
        check_fast_accuracy(d, beta, accuracy)
    except ValueError:
        return "direct"
    return fast.choose_method(n, d, fast_order(d, beta, accuracy))


def resolve_sum_method(method: str, n: int, d: int, beta: float, accuracy: float) -> str:
    """The interaction-sum method a run uses: ``"auto"`` resolved by ``choose_method``; a
    fast method checked against ``d``, its package and ``accuracy`` (``ValueError``)."""
    if method == "auto":
        return choose_method(n, d, beta, accuracy)
    resolved = fast.resolve_method(method, n, d)
    if resolved != "direct":
        check_fast_accuracy(d, beta, accuracy)
    return resolved


def kernel_sums(queries: np.ndarray, keys: np.ndarray, beta: float, method: str = "auto",
                accuracy: float = 1e-10, threads: int | None = None, backend: str = "auto",
                relative_rows: bool = False, project: bool = False
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``solvers.particles.fast.interaction_sums`` of the attention kernel, with the
    method resolved here (``resolve_sum_method``) and the fast multipliers made here
    (``fast_multipliers``, once per (d, beta, accuracy)); arguments and result as there.

    Raises:
        ValueError: an unknown method, one for another dimension, a missing package or an
            accuracy the fast method cannot reach.
    """
    q, y = np.asarray(queries, dtype=np.float64), np.asarray(keys, dtype=np.float64)
    if q.ndim != 2 or y.ndim != 2 or q.shape[1] != y.shape[1]:
        raise ValueError(f"queries (m, d) and keys (n, d) needed, not {q.shape}, {y.shape}")
    n, d = y.shape
    if method == "direct" and beta != 0:  # (the exact sums: straight to the kernel, the
        # resolution and checks of the fast methods cost half a small call, n = 32)
        s, z, shift = exp_kernel_sums(q, y, beta, backend)
        return (tangent_projection(q, s) if project else s), z, shift
    resolved = resolve_sum_method(method, n, d, float(beta), accuracy)
    multipliers = None
    if resolved != "direct" and beta != 0:
        multipliers = fast_multipliers(d, beta, accuracy, relative_rows)
    return fast.interaction_sums(queries, keys, beta, resolved, multipliers, threads,
                                 backend, relative_rows, project)
