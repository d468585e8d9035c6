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
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special

# Relative size of the last kept potential multiplier that a resolution must reach.
RESOLUTION_TOLERANCE = 1e-12


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


def growth_rate(k: int | np.ndarray, beta: float, kappa: float, normalized: bool
                ) -> np.ndarray | float:
    """Growth rate of mode k about the uniform density on the circle (DESIGN.md section 1).

    ``sigma_k = k^2 (a_k - 1/kappa)``, ``a_k = I_k(beta)/beta`` (USA) or
    ``I_k(beta)/(beta I_0(beta))`` (SA); at beta = 0, ``a_1 = 1/2`` and ``a_k = 0`` (k > 1).
    """
    k = np.asarray(k)
    noise = 0.0 if math.isinf(kappa) else 1.0 / kappa
    if beta == 0:
        a = np.where(np.abs(k) == 1, 0.5, 0.0)
    elif normalized:
        a = special.ive(k, beta) / (beta * special.ive(0, beta))
    else:
        a = special.iv(k, beta) / beta
    return k**2 * (a - noise)


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
    ref = special.ive(1, beta)
    k = 2
    # I_k(beta) decreases in k; step up until the ratio falls below the tolerance.
    while special.ive(k, beta) > tolerance * ref:
        k += 1
    return max(8, 2 * k)


# --- the sphere S^2 ------------------------------------------------------------------------
def _spherical_ive(l: np.ndarray, beta: float) -> np.ndarray:
    """``e^{-beta} i_l(beta)``; at beta = 0 its value ``[l == 0]``."""
    l = np.asarray(l)
    if beta == 0:
        return (l == 0).astype(float)
    return np.sqrt(np.pi / (2 * beta)) * special.ive(l + 0.5, beta)


def sphere_kernel_multiplier(lmax: int, beta: float) -> np.ndarray:
    """``4 pi e^{-beta} i_l(beta)`` for l = 0..lmax (Funk-Hecke)."""
    return 4 * np.pi * _spherical_ive(np.arange(lmax + 1), beta)


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


def sphere_growth_rate(l: int | np.ndarray, beta: float, kappa: float, normalized: bool
                       ) -> np.ndarray | float:
    """Growth rate of degree l about the uniform density on S^2 (DESIGN.md section 1):
    ``sigma_l = l(l+1) (a_l - 1/kappa)``, ``a_l = i_l(beta)/beta`` (USA) or
    ``i_l(beta)/(beta i_0(beta))`` (SA); at beta = 0, ``a_1 = 1/3``."""
    l = np.asarray(l)
    noise = 0.0 if math.isinf(kappa) else 1.0 / kappa
    if beta == 0:
        a = np.where(l == 1, 1.0 / 3.0, 0.0)
    elif normalized:
        a = _spherical_ive(l, beta) / (beta * _spherical_ive(0, beta))
    else:
        a = _spherical_ive(l, beta) * math.exp(beta) / beta
    return l * (l + 1) * (a - noise)


def sphere_required_lmax(beta: float, tolerance: float = RESOLUTION_TOLERANCE) -> int:
    """Smallest band limit whose dropped degrees ``l > lmax`` carry
    ``i_l(beta)/i_1(beta) <= tolerance`` (at least 4)."""
    if beta == 0:
        return 4
    ref = _spherical_ive(1, beta)
    l = 2
    while _spherical_ive(l, beta) > tolerance * ref:
        l += 1
    return max(4, l - 1)
