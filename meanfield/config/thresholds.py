"""The closed-form noise thresholds of the uniform state, which the config needs to derive
the default range of a continuation in kappa (``bifurcation.start/stop = "auto"``,
``meanfield.config.studies``).

Mode k on S^1 (degree l on S^2) of the uniform density turns unstable as kappa grows past
``kappa_c = 1/(c a_k)`` (docs/conventions.md): ``a_k = I_k(beta)/beta`` (USA) or
``I_k(beta)/(beta I_0(beta))`` (SA), at beta = 0 ``a_1 = 1/2`` and ``a_k = 0`` above; on
S^2 the same with the modified spherical Bessel functions ``i_l`` (``a_1 = 1/3`` at
beta = 0); on the zonal S^{d-1} (``dim`` = d) ``a_l = lambda_l/beta`` (USA) or
``lambda_l/(beta lambda_0)`` (SA) with the Funk-Hecke eigenvalue ``lambda_l =
Gamma(d/2)/Gamma(d/2 + l) (beta/2)^l 0F1(; d/2 + l; beta^2/4)`` (``a_1 = 1/d`` at beta = 0),
in logarithms (d = 4096 is as cheap as d = 3); ``c`` the value matrix's ``V = c I``. The coefficients are those of the growth
rates ``meanfield.model.kernels.growth_rate`` and ``sphere_growth_rate``, written here
again because the config sits below the model (docs/architecture.md): a test checks that
the two agree (tests/meanfield/config/test_thresholds.py).
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special

GEOMETRIES = ("circle", "sphere", "zonal")


def _spherical_ive(degree: float, beta: float) -> float:
    """``e^{-beta} i_l(beta)`` for beta > 0 (``meanfield.model.kernels.spherical_ive``)."""
    return np.sqrt(np.pi / (2 * beta)) * special.ive(degree + 0.5, beta)


def _log_funk_hecke(degree: int, dim: int, beta: float) -> float:
    """``log lambda_l`` of S^{dim-1} for beta > 0 (module docstring): from ``ive`` where
    it does not underflow, else from the series ``0F1`` (which then does not overflow)."""
    nu = dim / 2 - 1
    scaled = float(special.ive(nu + degree, beta))
    if scaled > 1e-280:
        return float(special.gammaln(dim / 2) + nu * math.log(2 / beta) + math.log(scaled)
                     + beta)
    return float(special.gammaln(dim / 2) - special.gammaln(dim / 2 + degree)
                 + degree * math.log(beta / 2)
                 + math.log(special.hyp0f1(dim / 2 + degree, beta**2 / 4)))


def _zonal_attraction(beta: float, normalized: bool, mode: int, dim: int) -> float:
    if beta == 0:
        return 1.0 / dim if mode == 1 else 0.0
    log_a = _log_funk_hecke(mode, dim, beta) - math.log(beta)
    if normalized:
        log_a -= _log_funk_hecke(0, dim, beta)
    return math.exp(log_a)


def attraction(geometry: str, beta: float, normalized: bool, mode: int = 1,
               dim: int | None = None) -> float:
    """``a_k`` (S^1, mode k) or ``a_l`` (S^2, zonal S^{d-1}: degree l): the growth rate of
    the mode without noise, ``k^2 a_k`` (``l(l+1) a_l``), divided by ``k^2`` (``l(l+1)``),
    as the growth rates of ``meanfield.model.kernels`` give it (so to the same last bit);
    zonal (``dim`` = d): from the Funk-Hecke eigenvalues (module docstring; to ~4e-14 of
    ``meanfield.model.zonal_kernels`` for d <= 64, where the logarithms of Gamma(d/2)
    that cancel are small; 5e-12 at d = 4096).

    Raises:
        ValueError: a geometry other than "circle", "sphere" and "zonal", a mode that is
            not an integer >= 1, or a zonal dim that is not an integer >= 2.
    """
    if geometry not in GEOMETRIES:
        raise ValueError(f"geometry must be one of {GEOMETRIES}, got {geometry!r}")
    if int(mode) != mode or mode < 1:
        raise ValueError(f"mode must be an integer >= 1, got {mode!r}")
    if geometry == "zonal":
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 2:
            raise ValueError(f"the zonal geometry needs dim, an integer >= 2, got {dim!r}")
        return _zonal_attraction(beta, normalized, int(mode), dim)
    weight = mode**2 if geometry == "circle" else mode * (mode + 1)
    if beta == 0:
        a = (0.5 if geometry == "circle" else 1.0 / 3.0) if mode == 1 else 0.0
    elif geometry == "circle":
        a = special.ive(mode, beta) / (beta * special.ive(0, beta)) if normalized \
            else special.iv(mode, beta) / beta
    elif normalized:
        a = _spherical_ive(mode, beta) / (beta * _spherical_ive(0, beta))
    else:
        a = _spherical_ive(mode, beta) * math.exp(beta) / beta
    return float(weight * a) / weight


def critical_kappa(geometry: str, beta: float, normalized: bool, mode: int = 1,
                   value: float = 1.0, dim: int | None = None) -> float:
    """``kappa_c = 1/(c a_k)`` (S^1) or ``1/(c a_l)`` (S^2, zonal with ``dim``); ``inf``
    where ``c a <= 0`` (beta = 0 and k, l >= 2; ``c = value <= 0``: no mode ever
    grows)."""
    a = value * attraction(geometry, beta, normalized, mode, dim)
    return math.inf if a <= 0 else 1.0 / a
