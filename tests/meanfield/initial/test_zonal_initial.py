"""Initial zonal densities on S^{d-1} (issue 26): each kind against an independent closed
form or quadrature, on the Gauss nodes (point values, exact Gegenbauer coefficients) and on
the cells (averages against the measure), in dimensions 2 to 4096."""
from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from scipy import integrate, special

from meanfield import ConfigError
from meanfield.initial import zonal as initial
from solvers.grids.zonal import ZonalCells, ZonalGrid
from solvers.transforms import gegenbauer


def w_d(dim: int) -> float:
    return math.exp(math.lgamma(dim / 2) - math.lgamma((dim - 1) / 2)) / math.sqrt(math.pi)


def mass_by_quadrature(f, dim: int) -> float:
    """``int f dsigma`` in theta (scipy quad, the measure w_d sin^{d-2})."""
    g = lambda th: f(np.array([math.cos(th)]))[0] * w_d(dim) * math.sin(th) ** (dim - 2)
    return integrate.quad(g, 0, math.pi, epsabs=0, epsrel=1e-12, limit=200)[0]


def hypergeometric_0f1(b: Decimal, x: Decimal) -> Decimal:
    """``0F1(; b; x)`` in 50-digit decimals, summed until past the largest term and below
    1e-40 of the sum."""
    term = total = Decimal(1)
    k = 0
    while k <= float(x) ** 0.5 or term >= total * Decimal("1e-40"):
        term = term * x / ((k + 1) * (b + k))
        total += term
        k += 1
    return total


def bessel_ratio(dim: int, c: float) -> float:
    """``A_d(c) = I_{d/2}(c) / I_{d/2-1}(c)``, the mean of t under e^{c t}, as
    ``(c/d) 0F1(; d/2 + 1; c^2/4) / 0F1(; d/2; c^2/4)`` in decimals (scipy's ive
    underflows at d = 4096)."""
    with localcontext() as ctx:
        ctx.prec = 50
        x, b = Decimal(c) ** 2 / 4, Decimal(dim) / 2
        return float(Decimal(c) / dim * hypergeometric_0f1(b + 1, x)
                     / hypergeometric_0f1(b, x))


@pytest.mark.parametrize("dim", [2, 3, 5, 16])
@pytest.mark.parametrize("c", [0.5, 5.0, 50.0])
def test_von_mises_is_normalized_with_mean_bessel_ratio(dim, c):
    f = initial.von_mises_density(dim, c)
    assert mass_by_quadrature(f, dim) == pytest.approx(1.0, rel=1e-11)
    mean = mass_by_quadrature(lambda t: t * f(t), dim)
    assert mean == pytest.approx(bessel_ratio(dim, c), rel=1e-10)


@pytest.mark.parametrize("dim,c", [(512, 30.0), (4096, 64.0), (4096, 2000.0)])
def test_von_mises_in_large_dimension(dim, c):
    """Mass 1 and mean A_d(c) by a Gauss rule of the measure with many nodes (the density
    is entire: 400 nodes integrate it to round-off where it carries mass)."""
    t, w = gegenbauer.gauss_nodes(400, dim)
    f = initial.von_mises_density(dim, c)(t)
    assert np.all(np.isfinite(f))
    assert w @ f == pytest.approx(1.0, rel=1e-12)
    assert w @ (t * f) == pytest.approx(bessel_ratio(dim, c), rel=1e-10)


@pytest.mark.parametrize("dim", [2, 3, 7, 64])
def test_von_mises_coefficients_are_the_funk_hecke_ratios(dim):
    """``<e^{ct}/lambda_0, Q_l> = Q_l(1) lambda_l(c)/lambda_0(c)``: the initial values at the
    Gauss nodes analyse to these (the spectral solver's exact start)."""
    c, lmax = 4.0, 40
    grid = ZonalGrid(lmax, dim)
    rho = initial.initial_values({"kind": "von_mises", "concentration": c}, grid)
    coeffs = grid.analysis(rho)
    q1 = gegenbauer.table(lmax, dim, np.ones(1))[:, 0]
    nu = dim / 2 - 1
    ratio = special.ive(nu + np.arange(lmax + 1), c) / special.ive(nu, c)
    # (Funk-Hecke: lambda_l / lambda_0 = I_{nu+l}(c) / I_nu(c))
    expected = q1 * ratio
    np.testing.assert_allclose(coeffs, expected, rtol=0, atol=1e-14 * q1.max())
    assert coeffs[0] == pytest.approx(1.0, abs=1e-14)


@pytest.mark.parametrize("dim", [2, 3, 9])
def test_perturbed_and_uniform(dim):
    grid = ZonalGrid(16, dim)
    rho = initial.initial_values({"kind": "perturbed", "degree": 3, "amplitude": -0.4}, grid)
    np.testing.assert_allclose(rho, 1 - 0.4 * gegenbauer.degree_values(3, dim, grid.t),
                               rtol=1e-14)
    coeffs = grid.analysis(rho)
    q3 = gegenbauer.table(3, dim, np.ones(1))[3, 0]
    expected = np.zeros(17)
    expected[0], expected[3] = 1.0, -0.4 / q3
    np.testing.assert_allclose(coeffs, expected, rtol=0, atol=3e-15)
    np.testing.assert_allclose(initial.initial_values({"kind": "uniform"}, grid),
                               np.ones(17), rtol=1e-15)
    if dim == 2:  # cos(3 theta)
        np.testing.assert_allclose(rho, 1 - 0.4 * np.cos(3 * grid.theta), rtol=1e-14)


def test_mixture_is_the_weighted_mean():
    grid = ZonalGrid(24, 5)
    parts = [{"kind": "von_mises", "concentration": 3.0, "weight": 2.0},
             {"kind": "perturbed", "degree": 2, "amplitude": 0.5, "weight": 1.0}]
    rho = initial.initial_values({"kind": "mixture", "components": parts}, grid)
    a = initial.initial_values(parts[0], grid)
    b = initial.initial_values(parts[1], grid)
    np.testing.assert_allclose(rho, (2 * a + b) / 3, rtol=1e-14)


@pytest.mark.parametrize("n", [16, 64])
def test_cell_averages_against_the_closed_form_on_s2(n):
    """d = 3: the measure of a zone is (cos a - cos b)/2, and the average of e^{c t} over it
    is ``(e^{c cos a} - e^{c cos b}) / (c (cos a - cos b))``."""
    c = 6.0
    cells = ZonalCells(n, 3)
    rho = initial.initial_values({"kind": "von_mises", "concentration": c}, cells,
                                 averages=True)
    ca, cb = np.cos(cells.edges[:-1]), np.cos(cells.edges[1:])
    exact = (np.exp(c * ca) - np.exp(c * cb)) / (c * (ca - cb))
    exact /= np.sum(exact * cells.weights)  # mass 1 against the cells' measures
    np.testing.assert_allclose(rho, exact, rtol=1e-12)


@pytest.mark.parametrize("dim", [6, 512])
def test_cell_averages_against_quadrature(dim):
    cells = ZonalCells(40, dim)
    f = initial.von_mises_density(dim, 2.0 * math.sqrt(dim))
    rho = initial.cell_averages(f, cells)
    ok = cells.weights > 1e-250  # (the tails' measures underflow)
    for j in np.nonzero(ok)[0][::3]:
        lo, hi = cells.edges[j], cells.edges[j + 1]
        g = lambda th, p=0: f(np.array([math.cos(th)]))[0] * math.sin(th) ** (dim - 2)
        num = integrate.quad(g, lo, hi, epsabs=0, epsrel=1e-12)[0]
        den = integrate.quad(lambda th: math.sin(th) ** (dim - 2), lo, hi, epsabs=0,
                             epsrel=1e-12)[0]
        assert rho[j] == pytest.approx(num / den, rel=1e-9), j


def test_samples_estimate_on_s2(tmp_path):
    """The zonal kernel estimate of points of S^2 equals the azimuthal mean of the von
    Mises-Fisher kernels at the points: ``mean_i c/sinh(c) e^{c t t_i} I_0(c s s_i)``
    (s = sin theta), mass 1, mean ``A_3(c) mean_i t_i``; rows of R^3 or one column of t
    give the same."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((25, 3)) + [1.5, 0.0, 0.0]
    path = tmp_path / "points.npy"
    np.save(path, x)
    h = 0.4
    c = 1 / h**2
    f = initial.density_function({"kind": "samples", "path": str(path), "bandwidth": h}, 3)
    t_i = x[:, 0] / np.linalg.norm(x, axis=1)
    t = np.cos(np.linspace(0, np.pi, 31))
    s, s_i = np.sqrt(1 - t**2), np.sqrt(1 - t_i**2)
    exact = np.mean(c / np.sinh(c) * np.exp(c * np.outer(t, t_i))
                    * special.i0(c * np.outer(s, s_i)), axis=1)
    np.testing.assert_allclose(f(t), exact, rtol=1e-10, atol=1e-13 * exact.max())
    np.savetxt(tmp_path / "t.txt", t_i)
    g = initial.density_function({"kind": "samples", "path": str(tmp_path / "t.txt"),
                                  "bandwidth": h}, 3)
    np.testing.assert_allclose(g(t), f(t), rtol=1e-13, atol=1e-15)
    grid = ZonalGrid(60, 3)
    rho = f(grid.t)
    assert grid.integrate(rho) == pytest.approx(1.0, rel=1e-12)
    assert grid.integrate(grid.t * rho) == pytest.approx(bessel_ratio(3, c) * t_i.mean(),
                                                         rel=1e-10)


def test_unresolved_initial_density_is_refused():
    grid = ZonalGrid(16, 3)
    with pytest.raises(ConfigError, match="not resolved at band limit 16") as err:
        initial.initial_values({"kind": "von_mises", "concentration": 200.0}, grid)
    assert err.value.key == "discretization.resolution"
    # the same data on cells (finite volumes) is fine
    rho = initial.initial_values({"kind": "von_mises", "concentration": 200.0},
                                 ZonalCells(64, 3), averages=True)
    assert np.all(rho >= 0) and np.sum(rho * ZonalCells(64, 3).weights) == pytest.approx(1.0)


def test_sample_file_errors(tmp_path):
    bad = tmp_path / "bad.txt"
    np.savetxt(bad, np.array([0.5, 1.5]))
    with pytest.raises(ConfigError, match=r"must lie in \[-1, 1\]") as err:
        initial.load_sample_t(str(bad), 3)
    assert err.value.key == "initial.path"
    wrong = tmp_path / "wrong.npy"
    np.save(wrong, np.ones((4, 3)))
    with pytest.raises(ConfigError, match=r"expected an \(n, 5\) array"):
        initial.load_sample_t(str(wrong), 5)
    zero = tmp_path / "zero.npy"
    np.save(zero, np.array([[1.0, 0, 0], [0, 0, 0]]))
    with pytest.raises(ConfigError, match="row 1 is a zero vector"):
        initial.load_sample_t(str(zero), 3)
