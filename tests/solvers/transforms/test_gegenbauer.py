"""Orthonormal Gegenbauer polynomials of the normalized zonal measure of S^{d-1} and its
Gauss rule (issue 26): exactness to degree 2n - 1, orthonormality, the classical cases
(d = 2 Chebyshev, d = 3 Legendre), scipy's Gegenbauer polynomials, the Laplacian, and
d = 512 and 4096 where no Gamma function of d may appear."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as sp

from solvers.transforms import gegenbauer

DIMS = [2, 3, 7, 512, 4096]


def moment(k: int, dim: int) -> float:
    """``int t^k dsigma`` on S^{dim-1}: 0 for odd k; t^2 ~ Beta(1/2, (d-1)/2), so the even
    moments are ``prod_{j<k/2} (2j + 1)/(d + 2j)``."""
    if k % 2:
        return 0.0
    return math.prod((2 * j + 1) / (dim + 2 * j) for j in range(k // 2))


def harmonic_dimension(l: int, dim: int) -> int:
    """Number of independent spherical harmonics of degree l on S^{dim-1}."""
    if l == 0:
        return 1
    return (2 * l + dim - 2) * math.comb(l + dim - 3, l - 1) // l


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("n", [1, 2, 5, 16, 40])
def test_gauss_rule_is_exact_to_degree_2n_minus_1(dim, n):
    t, w = gegenbauer.gauss_nodes(n, dim)
    assert np.all(np.diff(t) > 0) and -1 < t[0] and t[-1] < 1
    np.testing.assert_array_equal(t, -t[::-1])
    assert np.all(w > 0) and abs(w.sum() - 1) < 1e-14
    for k in range(2 * n):
        exact = moment(k, dim)
        # monomials: the sum of positive terms is accurate to its own size, so compare
        # relative to the exact even moment (the odd ones vanish to round-off of t^k)
        scale = moment(k + k % 2, dim)
        assert abs(w @ t**k - exact) <= 1e-13 * scale, (dim, n, k)
    # degree 2n is not integrated exactly: Gauss's remainder for t^{2n} is the squared norm
    # of the monic orthogonal polynomial, b_1^2 ... b_n^2 (so the rule has exactly n nodes)
    remainder = moment(2 * n, dim) - w @ t ** (2 * n)
    monic_norm = np.prod(gegenbauer.recurrence(n, dim)[1:] ** 2)
    assert abs(remainder - monic_norm) <= 1e-13 * moment(2 * n, dim)


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("lmax", [1, 8, 60])
def test_orthonormal_under_the_gauss_rule(dim, lmax):
    t, w = gegenbauer.gauss_nodes(lmax + 1, dim)
    q = gegenbauer.table(lmax, dim, t)
    np.testing.assert_allclose(q[0], 1.0, rtol=0, atol=0)
    gram = (q * w) @ q.T  # degree <= 2 lmax = 2n - 2: exact
    assert np.abs(gram - np.eye(lmax + 1)).max() < 1e-13


def test_d3_nodes_are_gauss_legendre_and_d2_chebyshev():
    """(The weights against scipy in absolute terms: near the poles both lose relative
    digits, ~1e-11 at n = 200, to the nodes' representation as t = cos theta; what the
    transforms see is the absolute error.)"""
    for n in (1, 4, 33, 200):
        t, w = gegenbauer.gauss_nodes(n, 3)
        x, v = sp.roots_legendre(n)
        np.testing.assert_allclose(t, x, rtol=0, atol=3e-16)
        np.testing.assert_allclose(w, v / 2, rtol=0, atol=1e-14)
        t, w = gegenbauer.gauss_nodes(n, 2)
        cheb = np.sort(np.cos((2 * np.arange(1, n + 1) - 1) * np.pi / (2 * n)))
        np.testing.assert_allclose(t, cheb, rtol=0, atol=4e-16)
        np.testing.assert_allclose(w, 1 / n, rtol=2e-12)


@pytest.mark.parametrize("dim", [3, 4, 5, 10, 33])
def test_table_is_scipys_gegenbauer_normalized(dim):
    """Q_l = C_l^{(d-2)/2} / ||C_l||: proportional to scipy's C_l, with Q_l(1)^2 the
    dimension of the degree-l harmonics (the reproducing kernel at x = y)."""
    lam = (dim - 2) / 2
    t = np.linspace(-1, 1, 41)
    q, dq = gegenbauer.table(12, dim, t, derivative=True)
    q1 = gegenbauer.table(12, dim, np.ones(1))[:, 0]
    for l in range(13):
        assert q1[l] ** 2 == pytest.approx(harmonic_dimension(l, dim), rel=1e-13)
        c = sp.eval_gegenbauer(l, lam, t) / sp.eval_gegenbauer(l, lam, 1.0)
        np.testing.assert_allclose(q[l] / q1[l], c, rtol=0, atol=1e-13)
        np.testing.assert_allclose(gegenbauer.degree_values(l, dim, t), c, rtol=0,
                                   atol=1e-13)
        if l >= 1:  # d/dt C_l^lam = 2 lam C_{l-1}^{lam+1}
            dc = 2 * lam * sp.eval_gegenbauer(l - 1, lam + 1, t) / sp.eval_gegenbauer(
                l, lam, 1.0)
            np.testing.assert_allclose(dq[l] / q1[l], dc, rtol=0,
                                       atol=1e-12 * max(1.0, np.abs(dc).max()))


def test_degree_values_classical_cases():
    theta = np.linspace(0, np.pi, 57)
    t = np.cos(theta)
    for l in range(0, 30):
        np.testing.assert_allclose(gegenbauer.degree_values(l, 2, t), np.cos(l * theta),
                                   rtol=0, atol=1e-13)
        np.testing.assert_allclose(gegenbauer.degree_values(l, 3, t), sp.eval_legendre(l, t),
                                   rtol=0, atol=1e-13)
    # shapes are kept, and |P_l| <= 1 in every dimension
    grid = np.cos(np.linspace(0, np.pi, 12)).reshape(3, 4)
    for dim in (2, 7, 4096):
        p = gegenbauer.degree_values(5, dim, grid)
        assert p.shape == (3, 4) and np.all(np.abs(p) <= 1 + 1e-14)
        assert p[0, 0] == pytest.approx(1.0, abs=1e-14)


@pytest.mark.parametrize("dim", [2, 3, 6, 512])
def test_laplacian_symbol_is_the_eigenvalue_of_q_l(dim):
    """(1 - t^2) Q'' - (d - 1) t Q' = -l(l + d - 2) Q (the zonal Laplace-Beltrami operator),
    checked on the exact monomial coefficients of Q_l (fitted at enough points)."""
    lmax = 10
    sym = gegenbauer.laplacian_symbol(lmax, dim)
    np.testing.assert_array_equal(sym, [-l * (l + dim - 2) for l in range(lmax + 1)])
    t = np.cos(np.linspace(0, np.pi, 40))
    q = gegenbauer.table(lmax, dim, t)
    x = np.linspace(-0.9, 0.9, 7)
    for l in range(lmax + 1):
        p = np.polynomial.Chebyshev.fit(t, q[l], l)
        lhs = (1 - x**2) * p.deriv(2)(x) - (dim - 1) * x * p.deriv(1)(x)
        scale = max(1.0, abs(sym[l])) * np.abs(q[l]).max()
        np.testing.assert_allclose(lhs, sym[l] * p(x), rtol=0, atol=1e-10 * scale)


def test_recurrence_starts_and_bad_sizes():
    b = gegenbauer.recurrence(4, 2)
    np.testing.assert_allclose(b, [0, math.sqrt(0.5), 0.5, 0.5, 0.5])  # Chebyshev
    b = gegenbauer.recurrence(3, 3)
    np.testing.assert_allclose(b[1:], [l / math.sqrt(4 * l * l - 1) for l in (1, 2, 3)])
    t, w = gegenbauer.gauss_nodes(1, 9)
    assert t.tolist() == [0.0] and w.tolist() == [1.0]
    with pytest.raises(ValueError, match="n >= 1"):
        gegenbauer.gauss_nodes(0, 3)


@pytest.mark.parametrize("dim", [512, 4096])
def test_large_dimension_is_finite_and_concentrated(dim):
    """Nodes of S^{4095}: the measure of t is ~ N(0, 1/d), so the nodes lie within a few
    multiples of d^{-1/2} (the Hermite limit, to O(n/d)), the table is finite there and
    the weights are the Christoffel numbers."""
    t, w = gegenbauer.gauss_nodes(20, dim)
    x, v = np.polynomial.hermite_e.hermegauss(20)  # weight e^{-x^2/2}
    np.testing.assert_allclose(t * math.sqrt(dim), x, rtol=0.05, atol=0.05)
    q = gegenbauer.table(19, dim, t)
    assert np.all(np.isfinite(q))
    np.testing.assert_allclose(1 / np.sum(q * q, axis=0), w, rtol=1e-12)


@pytest.mark.parametrize("dim", [2, 3, 5, 64, 4096])
def test_gradient_recurrence_is_the_derivative(dim):
    """``(1 - t^2) Q_m' = down_m Q_{m-1} + up_m Q_{m+1}`` against the differentiated
    recurrence's ``Q_m'`` at points of (-1, 1), and ``down_0 = 0`` (G Q_0 = 0: mass)."""
    lmax = 40
    t = np.linspace(-0.995, 0.995, 23)
    q, dq = gegenbauer.table(lmax + 1, dim, t, derivative=True)
    down, up = gegenbauer.gradient_recurrence(lmax, dim)
    want = (1 - t**2) * dq[: lmax + 1]
    got = up[:, None] * q[1:]
    got[1:] += down[1:, None] * q[:lmax]
    assert down[0] == 0.0 and up[0] == 0.0
    assert np.abs(got - want).max() <= 1e-13 * np.abs(want).max()
