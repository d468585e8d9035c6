"""Zonal grids of S^{d-1} (issue 26): the Gegenbauer grid's transforms, derivative,
evaluation off the grid, marginal and product rule; the finite-volume cells' exact
measures (closed forms for d = 2 and 3, the Beta law otherwise, d = 4096 in logarithms)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special

from solvers.grids.zonal import ZonalCells, ZonalGrid, log_measure_density, product_nodes
from solvers.transforms import gegenbauer


def w_d(dim: int) -> float:
    """Normalization of the zonal measure ``w_d (1 - t^2)^{(d-3)/2} dt`` (direct Gammas)."""
    return math.gamma(dim / 2) / (math.sqrt(math.pi) * math.gamma((dim - 1) / 2))


@pytest.mark.parametrize("dim", [2, 3, 5, 64])
def test_round_trip_and_band_limited_analysis(dim):
    grid = ZonalGrid(24, dim)
    rng = np.random.default_rng(0)
    c = rng.standard_normal(25) / (1 + np.arange(25)) ** 2
    np.testing.assert_allclose(grid.analysis(grid.synthesis(c)), c, rtol=0, atol=1e-14)
    # a stack of fields is one matrix product
    stack = np.stack([c, 2 * c])
    values = grid.synthesis(c)
    np.testing.assert_allclose(grid.synthesis(stack)[1], 2 * values, rtol=0,
                               atol=1e-15 * np.abs(values).max())
    # the analysis of a polynomial in t: t^3 = sum_l <t^3, Q_l> Q_l (exact moments)
    f = grid.t**3
    coeffs = grid.analysis(f)
    fine = ZonalGrid(24, dim, nodes=40)
    np.testing.assert_allclose(coeffs, fine.analysis(fine.t**3), rtol=0, atol=5e-15)
    assert np.abs(coeffs[4:]).max() < 5e-15 and abs(coeffs[0]) < 1e-16
    # <t^3, Q_1> = sqrt(d) E[t^4] = 3 sqrt(d) / (d (d + 2)) (Q_1 = sqrt(d) t)
    assert coeffs[1] == pytest.approx(3 * math.sqrt(dim) / (dim * (dim + 2)), rel=1e-14)


@pytest.mark.parametrize("dim", [2, 3, 9])
def test_derivative_and_evaluate_off_the_grid(dim):
    grid = ZonalGrid(12, dim)
    poly = np.polynomial.Polynomial([0.3, -1.0, 0.0, 2.0, 0.5])  # degree 4 in t
    c = grid.analysis(poly(grid.t))
    np.testing.assert_allclose(grid.derivative(c), poly.deriv()(grid.t), rtol=0, atol=1e-12)
    t = np.cos(np.linspace(0, np.pi, 30)).reshape(5, 6)  # any shape of points
    value, slope = grid.evaluate(c, t, derivative=True)
    assert value.shape == slope.shape == (5, 6)
    np.testing.assert_allclose(value, poly(t), rtol=0, atol=1e-13)
    np.testing.assert_allclose(slope, poly.deriv()(t), rtol=0, atol=1e-12)
    # a stack of coefficient vectors against a grid of points: (2, 5, 6)
    both = grid.evaluate(np.stack([c, -c]), t)
    assert both.shape == (2, 5, 6)
    np.testing.assert_allclose(both[1], -poly(t), rtol=0, atol=1e-13)


@pytest.mark.parametrize("dim", [2, 3, 4, 12])
def test_marginal_and_grid_protocol(dim):
    grid = ZonalGrid(16, dim)
    assert grid.geometry == "zonal" and grid.dims == ("polar",) and grid.shape == (17,)
    assert np.all(np.diff(grid.theta) > 0)  # increasing theta, decreasing t
    np.testing.assert_allclose(grid.points[:, 0], grid.t)
    # the uniform density's marginal is the measure's density in t
    expected = w_d(dim) * (1 - grid.t**2) ** ((dim - 3) / 2)
    np.testing.assert_allclose(grid.marginal(np.ones(17)), expected, rtol=1e-12)
    assert grid.integrate(np.ones(17)) == pytest.approx(1.0, abs=1e-15)
    coords = grid.coords()
    np.testing.assert_allclose(coords["cos_polar"][1], grid.t)
    # locate: unit vectors and bare t both find the nearest node in theta
    x = np.zeros((17, dim))
    x[:, 0] = grid.t
    x[:, 1] = np.sin(grid.theta)
    np.testing.assert_array_equal(grid.locate(x), np.arange(17))
    np.testing.assert_array_equal(grid.locate(grid.t[:, None]), np.arange(17))


@pytest.mark.parametrize("dim", [2, 3, 7, 100])
def test_product_nodes_dealias(dim):
    """The analysis to degree L of (degree L) x (degree m) on product_nodes(L, m) nodes is
    exact: equal to the analysis on many more nodes."""
    lmax, other = 20, 7
    rng = np.random.default_rng(1)
    a = rng.standard_normal(lmax + 1) / (1 + np.arange(lmax + 1))
    b = np.zeros(lmax + 1)
    b[: other + 1] = rng.standard_normal(other + 1)
    n = product_nodes(lmax, other)
    assert 2 * n - 1 >= 2 * lmax + other and 2 * (n - 1) - 1 < 2 * lmax + other
    small, big = ZonalGrid(lmax, dim, nodes=n), ZonalGrid(lmax, dim, nodes=3 * lmax)
    exact = big.analysis(big.synthesis(a) * big.synthesis(b))
    scale = np.abs(exact).max()
    np.testing.assert_allclose(small.analysis(small.synthesis(a) * small.synthesis(b)),
                               exact, rtol=0, atol=1e-13 * scale)
    assert product_nodes(lmax) == (3 * lmax) // 2 + 1  # the 3/2 rule for fields unbounded


def test_grid_bad_sizes():
    with pytest.raises(ValueError, match="dim >= 2"):
        ZonalGrid(8, 1)
    with pytest.raises(ValueError, match="lmax >= 1"):
        ZonalGrid(0, 3)
    with pytest.raises(ValueError, match="n >= 8"):
        ZonalCells(4, 3)


# --- cells ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [2, 3, 5, 17, 512, 4096])
@pytest.mark.parametrize("n", [8, 61, 400])
def test_cell_measures_sum_to_one_and_mirror(dim, n):
    cells = ZonalCells(n, dim)
    # (at d = 4096 a cell at a pole has measure ~1e-1300: it underflows to 0, and only
    # the ratios the fluxes need, computed in logarithms, must stay finite)
    assert np.all(cells.weights >= 0) and np.all(np.isfinite(cells.weights))
    assert np.all(cells.weights[n // 2 - 1: n // 2 + 1] > 0)
    # (each measure a difference of two Beta laws, accurate to ~1 ulp of 1/2: the sum to
    # the n ulps the differences' roundings add up to)
    assert cells.weights.sum() == pytest.approx(1.0, abs=2e-15 + 3e-17 * n)
    np.testing.assert_array_equal(cells.weights, cells.weights[::-1])
    np.testing.assert_allclose(cells.theta, (np.arange(n) + 0.5) * math.pi / n)
    assert cells.down[0] == 0 and cells.up[-1] == 0
    assert np.all(np.isfinite(cells.up)) and np.all(np.isfinite(cells.down))
    # the outer face of a cell far from the equator has a measure below 1e-308 of the
    # cell's (d = 512, 4096): its ratio underflows to 0, a flux that carries nothing
    assert np.all(cells.up >= 0) and np.all(cells.down >= 0)
    if dim <= 17:
        assert np.all(cells.up[:-1] > 0) and np.all(cells.down[1:] > 0)
    # the face between cells j and j+1 seen from both sides: A_j up_j = A_{j+1} down_{j+1}
    # (where the measures are normal numbers; far tails of d = 4096 underflow)
    ok = cells.weights > 1e-290
    lhs = (cells.weights * cells.up)[:-1]
    rhs = (cells.weights * cells.down)[1:]
    both = ok[:-1] & ok[1:]
    np.testing.assert_allclose(lhs[both], rhs[both], rtol=1e-12)


def test_cell_measures_closed_forms():
    """d = 3: the measure of a zone is (cos a - cos b)/2 (Archimedes); d = 2: h/pi; d = 6:
    quadrature of w_d sin^4."""
    for n in (8, 50, 333):
        cells = ZonalCells(n, 3)
        # (cos a - cos b)/2 = sin((a + b)/2) sin((b - a)/2) without its cancellation near
        # the poles, a the edge nearer to the nearer pole (the zones mirror)
        j = np.arange(n)
        a = cells.h * np.minimum(j, n - 1 - j)
        zone = np.sin(a + cells.h / 2) * np.sin(cells.h / 2)
        np.testing.assert_allclose(cells.weights, zone, rtol=1e-13)
        np.testing.assert_allclose(ZonalCells(n, 2).weights, 1 / n, rtol=1e-13)
        # face measure per unit theta over the cell measure
        s = np.sin(cells.edges) / 2
        np.testing.assert_allclose(cells.up[:-1], s[1:-1] / cells.weights[:-1], rtol=1e-12)
        np.testing.assert_allclose(cells.down[1:], s[1:-1] / cells.weights[1:], rtol=1e-12)
    cells = ZonalCells(40, 6)
    quad = [integrate.quad(lambda th: w_d(6) * math.sin(th) ** 4, lo, hi, epsabs=0,
                           epsrel=1e-13)[0] for lo, hi in zip(cells.edges[:-1], cells.edges[1:])]
    np.testing.assert_allclose(cells.weights, quad, rtol=1e-12)


@pytest.mark.parametrize("dim", [512, 4096])
def test_cell_measures_in_large_dimension(dim):
    """Exact where A_j is a normal double (the Beta law, against scipy's betainc from the
    other pole), Laplace's estimate beyond (finite, ordered, and right in scale)."""
    cells = ZonalCells(200, dim)
    a = (dim - 1) / 2
    x = np.sin(cells.edges / 2) ** 2
    exact = np.diff(special.betainc(a, a, x))
    big = (exact > 1e-250) & (cells.theta < np.pi / 2)  # (the reference's accurate half)
    np.testing.assert_allclose(cells.weights[big], exact[big], rtol=1e-10)
    log_a = np.log(cells.weights[cells.weights > 0])
    assert np.all(np.isfinite(log_a))
    # the measure per unit theta at the centre of a tail cell, times h, is the cell's
    # measure to within the variation of sin^{d-2} over the cell
    tail = ~big & (cells.weights > 0)
    if tail.any():
        estimate = log_measure_density(dim, cells.theta[tail]) + math.log(cells.h)
        spread = (dim - 2) * cells.h / np.tan(cells.theta[tail])
        assert np.all(np.abs(np.log(cells.weights[tail]) - estimate) <= np.abs(spread) + 1)


def test_log_measure_density():
    theta = np.linspace(0.1, 3.0, 7)
    for dim in (3, 5, 10):
        np.testing.assert_allclose(np.exp(log_measure_density(dim, theta)),
                                   w_d(dim) * np.sin(theta) ** (dim - 2), rtol=1e-13)
    np.testing.assert_allclose(np.exp(log_measure_density(2, np.array([0.0, 1.0]))),
                               1 / math.pi)
    assert log_measure_density(4, np.array([0.0]))[0] == -np.inf
    # in t: the Gauss weights of the d = 7 rule are the measure of the Gegenbauer weight
    t, w = gegenbauer.gauss_nodes(30, 7)
    assert w @ t**2 == pytest.approx(1 / 7, rel=1e-14)


@pytest.mark.parametrize("lmax,nodes,dim", [(10, 11, 3), (10, 12, 5), (31, 48, 64),
                                            (30, 47, 2)])
def test_parity_transforms_equal_the_full_products(lmax, nodes, dim):
    """Even and odd degrees on half the nodes (odd and even node counts, the middle node
    t = 0 once) give the full synthesis, derivative and analysis to round-off."""
    rng = np.random.default_rng(1)
    grid = ZonalGrid(lmax, dim, nodes)
    c = rng.standard_normal((4, lmax + 1))
    f = rng.standard_normal((2, nodes))
    for fast, full in ((grid.parity_synthesis(c), grid.synthesis(c)),
                       (grid.parity_synthesis(c, derivative=True), grid.derivative(c)),
                       (grid.parity_analysis(f), grid.analysis(f))):
        assert fast.shape == full.shape
        assert np.abs(fast - full).max() <= 1e-13 * np.abs(full).max()


@pytest.mark.parametrize("lmax,nodes,dim", [(10, 11, 3), (31, 48, 64), (30, 47, 2)])
def test_projection_and_truncated_synthesis(lmax, nodes, dim):
    """``project`` is the analysis without weights (one table serves both ways, by parity
    too), and a synthesis of fewer degrees than the table holds takes the first rows."""
    rng = np.random.default_rng(2)
    grid = ZonalGrid(lmax, dim, nodes)
    g = rng.standard_normal((2, nodes))
    want = grid.analysis(g / grid.weights)
    for got in (grid.project(g), grid.parity_project(g)):
        assert np.abs(got - want).max() <= 1e-13 * np.abs(want).max()
    short = rng.standard_normal(lmax // 2)
    padded = np.concatenate([short, np.zeros(lmax + 1 - short.size)])
    full = grid.synthesis(padded)
    assert np.abs(grid.parity_synthesis(short) - full).max() <= 1e-13 * np.abs(full).max()
