"""The exact stationary states of the noisy model at beta = 0 (noisy Kuramoto on S^1, its
analogue on S^2 and on the zonal S^{d-1}): references for the stationary-state solver and
the bifurcation study.

At beta = 0 the velocity is ``P_x m`` with ``m = int y dmu = r e``, so the stationary
states are ``rho ∝ exp(kappa r <x, e>)`` and the order parameter solves ``r = A(kappa r)``
with ``A(s)`` the mean of ``<x, e>`` under ``exp(s <x, e>)``: ``I_1(s)/I_0(s)`` on S^1,
the Langevin function ``coth(s) - 1/s`` on S^2, ``I_{d/2}(s)/I_{d/2-1}(s)`` on S^{d-1}.
``A'(0) = 1/d``: non-trivial roots for ``kappa > d``. With the value matrix ``V = c I``
the states solve ``r = A(c kappa r)``.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from meanfield.model.zonal_kernels import log_bessel_orders, log_funk_hecke
from meanfield.studies.bifurcation.spectral_state import check_geometry


def langevin(s: float) -> float:
    """``coth(s) - 1/s`` (series below 1e-3, where the difference cancels)."""
    s = float(s)
    if abs(s) < 1e-3:
        return s / 3 - s**3 / 45 + 2 * s**5 / 945
    return 1 / math.tanh(s) - 1 / s


def mean_alignment(geometry: str, s: float, dim: int | None = None) -> float:
    """``A(s)``: the mean of ``<x, e>`` under the density ``∝ exp(s <x, e>)``:
    ``I_1(s)/I_0(s)`` on S^1 (scaled Bessel: no overflow), ``langevin(s)`` on S^2,
    ``I_{d/2}(s)/I_{d/2-1}(s)`` on the zonal S^{d-1} (``dim`` = d; the ratio of
    ``meanfield.model.zonal_kernels.log_bessel_orders``, Perron's continued fraction:
    no underflow at any order)."""
    check_geometry(geometry, dim)
    if geometry == "circle":
        return float(special.i1e(s) / special.i0e(s))
    if geometry == "zonal":
        if s == 0:
            return 0.0
        logs = log_bessel_orders(dim / 2 - 1, 2, abs(float(s)))
        return math.copysign(math.exp(logs[1] - logs[0]), s)
    return langevin(s)


def noisy_order_parameter(geometry: str, kappa: float, dim: int | None = None) -> float:
    """The non-trivial root of ``r = A(kappa r)`` at beta = 0 (0 where there is none,
    ``kappa <= d``: 2 on S^1, 3 on S^2, ``dim`` on the zonal geometry), by brentq to
    1e-15."""
    check_geometry(geometry, dim)
    threshold = {"circle": 2.0, "sphere": 3.0}.get(geometry, float(dim or 0))
    if kappa <= threshold:
        return 0.0

    def gap(r: float) -> float:
        return mean_alignment(geometry, kappa * r, dim) - r

    # gap > 0 just above 0 (slope kappa/threshold - 1 > 0) and gap(1) = A(kappa) - 1 < 0
    low = 1e-6 * min(1.0, kappa / threshold - 1)
    return float(optimize.brentq(gap, low, 1.0, xtol=1e-16, rtol=4 * np.finfo(float).eps))


def noisy_stationary_density(geometry: str, kappa: float, points: np.ndarray,
                             direction: np.ndarray | None = None,
                             dim: int | None = None) -> np.ndarray:
    """``rho(x) = exp(s <x, e>) / Z`` with ``s = kappa r`` (``noisy_order_parameter``) at
    the unit vectors ``points`` (..., d): ``Z = 2 pi I_0(s)`` on S^1, ``4 pi sinh(s)/s``
    on S^2, ``lambda_0(s) = Gamma(d/2) (2/s)^{d/2-1} I_{d/2-1}(s)`` on the zonal S^{d-1}
    (normalized measure; its points may be the values ``t = <x, e>``, shape (..., 1));
    ``e`` the first axis on S^1 (theta = 0) and the zonal geometry, +z on S^2 by
    default."""
    check_geometry(geometry, dim)
    p = np.asarray(points, dtype=float)
    d = p.shape[-1]
    if direction is None:
        direction = np.eye(d)[-1] if geometry == "sphere" else np.eye(d)[0]
    s = kappa * noisy_order_parameter(geometry, kappa, dim)
    proj = p @ np.asarray(direction, dtype=float)
    if geometry == "zonal":
        return np.exp(s * proj - (log_funk_hecke(0, dim, s)[0] if s else 0.0))
    if geometry == "circle":  # exp(s (c - 1)) / (2 pi I_0(s) e^-s): no overflow
        return np.exp(s * (proj - 1)) / (2 * math.pi * special.i0e(s))
    if s == 0:
        return np.full(proj.shape, 1 / (4 * math.pi))
    return np.exp(s * (proj - 1)) * s / (2 * math.pi * -math.expm1(-2 * s))
