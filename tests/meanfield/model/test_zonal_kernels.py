"""The attention kernel on zonal densities of S^{d-1} and its linear theory (issue 26, item 2):
the Funk-Hecke eigenvalues against direct quadrature of the Funk-Hecke integral and against
a 50-digit series (d up to 4096, beta up to 64), the multipliers' limits as beta -> 0
(a_1 -> 1/d, kappa_c -> d), and d = 2, 3 against the circle's and the sphere's rates."""
from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from scipy import integrate, special

from meanfield.model import zonal_kernels as zk
from meanfield.model.kernels import growth_rate, sphere_growth_rate


def w_d(dim: int) -> float:
    return math.exp(math.lgamma(dim / 2) - math.lgamma((dim - 1) / 2)) / math.sqrt(math.pi)


def funk_hecke_quadrature(l: int, dim: int, beta: float) -> float:
    """``lambda_l = int_0^pi e^{beta cos th} P_l(cos th) w_d sin^{d-2} th dth`` by adaptive
    quadrature, ``P_l`` scipy's Gegenbauer polynomial normalized to 1 at t = 1 (d = 2:
    Chebyshev's T_l, the limit lambda -> 0)."""
    lam = (dim - 2) / 2
    if dim == 2:
        p = lambda t: special.eval_chebyt(l, t)
    else:
        norm = special.eval_gegenbauer(l, lam, 1.0)
        p = lambda t: special.eval_gegenbauer(l, lam, t) / norm
    f = lambda th: math.exp(beta * math.cos(th)) * p(math.cos(th)) * math.sin(th) ** (dim - 2)
    value, err = integrate.quad(f, 0, math.pi, epsabs=0, epsrel=1e-13, limit=200)
    return w_d(dim) * value


def log_funk_hecke_decimal(l: int, dim: int, beta: float) -> float:
    """``log lambda_l`` in 50-digit decimals, independent of scipy and of the module:
    ``lambda_l = (beta/2)^l / prod_{k<l} (d/2 + k) * 0F1(; l + d/2; beta^2/4)`` (the Bessel
    series of ``Gamma(d/2) (2/beta)^{d/2-1} I_{l+d/2-1}(beta)``), summed term by term until
    past the largest term and below 1e-40 of the sum."""
    with localcontext() as ctx:
        ctx.prec = 50
        half = Decimal(dim) / 2
        b = Decimal(beta)
        prefactor = (b / 2) ** l
        for k in range(l):
            prefactor /= half + k
        x = b * b / 4
        nu = half + l
        term = total = Decimal(1)
        k = 0
        while k <= float(x) ** 0.5 or term >= total * Decimal("1e-40"):
            term = term * x / ((k + 1) * (nu + k))
            total += term
            k += 1
        return float((prefactor * total).ln())


# (quad warns where lambda_l is far below int |integrand|, small beta and large l: the
# cancellation its tolerance cannot beat, still well inside 1e-10 of lambda_l)
@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("dim", [2, 3, 4, 5, 8, 16, 33])
@pytest.mark.parametrize("beta", [0.5, 2.0, 10.0])
def test_funk_hecke_against_quadrature(dim, beta):
    lam = np.exp(zk.log_funk_hecke(6, dim, beta))
    for l in range(7):
        assert lam[l] == pytest.approx(funk_hecke_quadrature(l, dim, beta), rel=1e-10), l


@pytest.mark.parametrize("dim,beta", [(2, 3.0), (7, 0.01), (100, 10.0), (512, math.sqrt(512)),
                                      (512, 300.0), (4096, 64.0), (4096, 1e-3)])
def test_funk_hecke_against_decimal_series(dim, beta):
    """Where the integrand underflows (I_{2047}(64) ~ 1e-2790), the logarithms still
    agree with the 50-digit series to ~1e-14 of their size."""
    logs = zk.log_funk_hecke(40, dim, beta)
    assert np.all(np.isfinite(logs))
    for l in (0, 1, 2, 3, 10, 25, 40):
        ref = log_funk_hecke_decimal(l, dim, beta)
        assert logs[l] == pytest.approx(ref, rel=1e-13, abs=1e-13), (l, logs[l], ref)


def test_log_bessel_against_scipy():
    for nu in (0.0, 0.5, 1.0, 7.5, 30.0, 255.0):
        for beta in (1e-3, 0.3, 4.0, 50.0, 400.0):
            if special.ive(nu, beta) < 1e-250:  # (scipy's underflows: the decimal test)
                continue
            ref = math.log(special.ive(nu, beta)) + beta
            assert zk.log_bessel_i(nu, beta) == pytest.approx(ref, rel=1e-13, abs=1e-13)
    logs = zk.log_bessel_orders(1.5, 30, 5.0)
    ref = np.log(special.ive(1.5 + np.arange(30), 5.0)) + 5.0
    np.testing.assert_allclose(logs, ref, rtol=1e-13)


@pytest.mark.parametrize("dim", [2, 3, 5, 16, 512, 4096])
@pytest.mark.parametrize("beta", [0.7, 2.0, 20.0])
def test_multipliers_are_the_scaled_eigenvalues(dim, beta):
    lam = np.exp(zk.log_funk_hecke(12, dim, beta))
    usa = zk.zonal_multipliers(12, dim, beta, normalized=False)
    sa = zk.zonal_multipliers(12, dim, beta, normalized=True)
    assert usa[0] == 0 and sa[0] == 0  # the mean is dynamically irrelevant
    np.testing.assert_allclose(usa[1:], math.exp(-beta) * lam[1:] / beta, rtol=1e-13)
    np.testing.assert_allclose(sa[1:], lam[1:] / (beta * lam[0]), rtol=1e-13)
    assert zk.zonal_kernel_mean(dim, beta, False) == pytest.approx(math.exp(-beta) * lam[0],
                                                                    rel=1e-13)
    assert zk.zonal_kernel_mean(dim, beta, True) == 1.0
    assert np.all(np.diff(sa[1:]) < 0)  # the multipliers decrease in l (Bessel ratios < 1)


@pytest.mark.parametrize("dim", [2, 3, 5, 16, 512, 4096])
def test_small_beta_limits(dim):
    """a_1 -> 1/d and kappa_c -> d as beta -> 0 (both models), the limit exact at beta = 0;
    SA's a_1 = 1/d (1 - beta^2/(d (d + 2)) + ...) and USA's (1 + beta^2/(2 (d + 2)) + ...)."""
    for normalized in (False, True):
        a0 = zk.zonal_multipliers(4, dim, 0.0, normalized)
        np.testing.assert_array_equal(a0, [0, 1 / dim, 0, 0, 0])
        assert zk.zonal_critical_kappa(dim, 0.0, normalized) == pytest.approx(dim, rel=1e-15)
        beta = 1e-3
        a1 = zk.zonal_multipliers(1, dim, beta, normalized)[1]
        if not normalized:
            a1 *= math.exp(beta)
        correction = -beta**2 / (dim * (dim + 2)) if normalized else beta**2 / (2 * (dim + 2))
        assert a1 * dim == pytest.approx(1 + correction, rel=1e-12)
        assert zk.zonal_critical_kappa(dim, beta, normalized) == pytest.approx(
            dim / (1 + correction), rel=1e-12)


@pytest.mark.parametrize("normalized", [False, True], ids=["USA", "SA"])
@pytest.mark.parametrize("beta", [0.0, 0.4, 2.0, 9.0])
def test_d2_and_d3_are_the_circle_and_the_sphere(normalized, beta):
    l = np.arange(1, 9)
    for kappa in (3.0, math.inf):
        for value in (1.0, -0.5):
            np.testing.assert_allclose(
                zk.zonal_growth_rate(l, 2, beta, kappa, normalized, value),
                growth_rate(l, beta, kappa, normalized, value), rtol=1e-12, atol=1e-300)
            np.testing.assert_allclose(
                zk.zonal_growth_rate(l, 3, beta, kappa, normalized, value),
                sphere_growth_rate(l, beta, kappa, normalized, value), rtol=1e-12,
                atol=1e-300)


def exact_rate(l: int, dim: int, beta: float, kappa: float, normalized: bool) -> float:
    """sigma_l of issue 26 from scipy's iv: ``a_l = Gamma(d/2) 2^{d/2-1} beta^{-d/2}
    I_{l+d/2-1}(beta)`` (USA) or ``I_{l+d/2-1}(beta) / (beta I_{d/2-1}(beta))`` (SA)."""
    nu = dim / 2 - 1
    if normalized:
        a = special.iv(l + nu, beta) / (beta * special.iv(nu, beta))
    else:
        a = math.gamma(dim / 2) * 2**nu * beta ** (-dim / 2) * special.iv(l + nu, beta)
    return l * (l + dim - 2) * (a - 1 / kappa)


@pytest.mark.parametrize("dim", [5, 16])
def test_growth_rates_of_the_acceptance_against_scipy(dim):
    for normalized, kappa in ((False, 4.0), (True, 10.0)):
        for l in (1, 2, 3):
            assert zk.zonal_growth_rate(l, dim, 2.0, kappa, normalized) == pytest.approx(
                exact_rate(l, dim, 2.0, kappa, normalized), rel=1e-13)


def test_critical_kappa_and_value():
    for dim in (3, 8, 64):
        for normalized in (False, True):
            kc = zk.zonal_critical_kappa(dim, 1.5, normalized)
            assert zk.zonal_growth_rate(1, dim, 1.5, kc, normalized) == pytest.approx(
                0.0, abs=1e-14)
            assert zk.zonal_critical_kappa(dim, 1.5, normalized, value=2.0) == pytest.approx(
                kc / 2, rel=1e-14)
            assert zk.zonal_critical_kappa(dim, 1.5, normalized, value=-1.0) == math.inf


def _log_harmonic_dimension(l: int, dim: int) -> float:
    """log N(d, l) from the binomial (independent of zk.log_harmonic_dimension)."""
    if dim == 2:
        return 0.0 if l == 0 else math.log(2)
    return math.log((2 * l + dim - 2) / (l + dim - 2)) + math.log(
        math.comb(l + dim - 2, l))


def test_harmonic_dimension():
    # S^2: 2l + 1; S^1: 2; S^3: (l + 1)^2; and the binomial form at d = 4096
    assert np.allclose(np.exp(zk.log_harmonic_dimension(6, 3)), 2 * np.arange(7) + 1)
    assert np.allclose(np.exp(zk.log_harmonic_dimension(6, 2)), [1, 2, 2, 2, 2, 2, 2])
    assert np.allclose(np.exp(zk.log_harmonic_dimension(6, 4)), (np.arange(7) + 1) ** 2)
    logs = zk.log_harmonic_dimension(40, 4096)
    assert all(logs[l] == pytest.approx(_log_harmonic_dimension(l, 4096), rel=1e-13)
               for l in range(1, 41))


@pytest.mark.parametrize("dim,beta", [(2, 3.0), (3, 5.0), (16, 30.0), (512, 22.6),
                                      (4096, 64.0)])
def test_required_lmax_drops_only_negligible_parts_of_the_kernel(dim, beta):
    """The dropped degrees carry at most 1e-12 of the largest degree's part of the kernel
    in the sup norm, a_l N(d, l) (the multiplier times the dimension of its harmonics),
    and the band limit is the smallest that does (independent decimal eigenvalues)."""
    lmax = zk.zonal_required_lmax(dim, beta)
    degrees = range(1, lmax + 2)
    logs = np.array([log_funk_hecke_decimal(l, dim, beta) + _log_harmonic_dimension(l, dim)
                     for l in degrees])
    ratio = np.exp(logs - logs.max())
    assert ratio[-1] <= zk.RESOLUTION_TOLERANCE  # the first dropped degree
    assert lmax == 8 or ratio[-2] > zk.RESOLUTION_TOLERANCE  # the smallest such band limit
    # and the parts beyond keep falling (the degree after is smaller still)
    beyond = log_funk_hecke_decimal(lmax + 2, dim, beta) + _log_harmonic_dimension(
        lmax + 2, dim)
    assert beyond < logs[-1]
