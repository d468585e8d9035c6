"""Fourier multipliers of the attention kernel against direct quadrature, large beta."""
from __future__ import annotations

import numpy as np
import pytest
from meanfield.model.kernels import (critical_kappa, kernel_multiplier, potential_multiplier,
                               required_resolution)


@pytest.mark.parametrize("beta", [0.3, 1.0, 7.5])
def test_kernel_multiplier_is_fourier_transform_of_exp_beta_cos(beta):
    # (K*e^{ik.})(0) = int e^{beta cos phi} e^{-ik phi} dphi = 2 pi I_k(beta)
    # The periodic trapezoid rule with 400 points is exact to round-off for this entire
    # periodic integrand: an independent evaluation.
    s = kernel_multiplier(6, beta) * np.exp(beta)
    p = 2 * np.pi * np.arange(400) / 400
    for k in range(7):
        direct = np.sum(np.exp(beta * np.cos(p)) * np.cos(k * p)) * 2 * np.pi / 400
        assert s[k] == pytest.approx(direct, rel=1e-12)


def test_potential_multiplier_beta_zero_limit():
    g0 = potential_multiplier(5, 0.0)
    g_small = potential_multiplier(5, 1e-7)
    np.testing.assert_allclose(g_small, g0, atol=1e-6)
    assert g0[1] == np.pi and g0[0] == 0 and np.all(g0[2:] == 0)


def test_large_beta_has_no_overflow():
    with np.errstate(all="raise"):
        s = kernel_multiplier(400, 100.0)
        g = potential_multiplier(400, 100.0)
    assert np.all(np.isfinite(s)) and np.all(np.isfinite(g))
    assert s[0] == pytest.approx(2 * np.pi / np.sqrt(2 * np.pi * 100), rel=2e-3)  # asymptotics


def test_required_resolution_carries_the_kernel():
    for beta in [0.5, 5.0, 50.0, 100.0]:
        n = required_resolution(beta)
        s = kernel_multiplier(4 * n, beta)
        assert s[n // 2] <= 1e-12 * s[1]
        assert s[n // 2 - 1] > 1e-12 * s[1] or n == 8


def test_critical_kappa():
    assert critical_kappa(0.0, True) == 2.0
    assert critical_kappa(1e-9, False) == pytest.approx(2.0, rel=1e-8)


@pytest.mark.parametrize("beta", [0.5, 3.0, 12.0])
def test_funk_hecke_multipliers_against_quadrature(beta):
    """4 pi i_l(beta) = 2 pi int_{-1}^{1} e^{beta t} P_l(t) dt (Gauss-Legendre, exact to
    round-off with 80 nodes for these entire integrands)."""
    from scipy import special

    from meanfield.model.kernels import sphere_kernel_multiplier, sphere_potential_multiplier
    t, w = np.polynomial.legendre.leggauss(80)
    s = sphere_kernel_multiplier(8, beta) * np.exp(beta)
    for l in range(9):
        direct = 2 * np.pi * np.sum(w * np.exp(beta * t) * special.eval_legendre(l, t))
        assert s[l] == pytest.approx(direct, rel=1e-11)
    g = sphere_potential_multiplier(8, beta)
    np.testing.assert_allclose(g[1:] * beta, sphere_kernel_multiplier(8, beta)[1:], rtol=1e-14)


def test_sphere_multipliers_large_beta_and_limits():
    from meanfield.model.kernels import (sphere_kernel_multiplier, sphere_potential_multiplier,
                                   sphere_required_lmax)
    with np.errstate(all="raise"):
        s = sphere_kernel_multiplier(300, 100.0)
    assert np.all(np.isfinite(s)) and s[0] == pytest.approx(4 * np.pi / 200 * (1 - np.exp(-200)))
    np.testing.assert_allclose(sphere_potential_multiplier(3, 1e-7),
                               sphere_potential_multiplier(3, 0.0), atol=1e-6)
    for beta in (1.0, 20.0, 100.0):
        lmax = sphere_required_lmax(beta)
        s = sphere_kernel_multiplier(lmax + 1, beta)
        assert s[lmax + 1] <= 1e-12 * s[1]


@pytest.mark.parametrize("beta", [1e-3, 0.7, 12.0, 300.0])
def test_log_uniform_pair_integral_closed_forms(beta):
    # the mean of e^{beta <x, y>} over uniform y: I_0(beta) on S^1, sinh(beta)/beta on S^2,
    # and on S^3 2 I_1(beta)/beta (independent closed forms)
    from scipy import special

    from meanfield.model.kernels import log_uniform_pair_integral
    expected = {2: np.log(special.ive(0, beta)) + beta,
                3: beta + np.log(-np.expm1(-2 * beta) / (2 * beta)),
                4: np.log(2 * special.ive(1, beta) / beta) + beta}
    for d, value in expected.items():
        assert log_uniform_pair_integral(d, beta) == pytest.approx(value, rel=1e-13, abs=1e-14)
