"""The marginal of t = <x, e> of a zonal PDE frame and the exact 1-D transport against it
(``meanfield.metrics.zonal_marginal``), checked against closed forms and independent
quadratures (``scipy.integrate.quad``)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr
from scipy import integrate, special

from meanfield.metrics import zonal_marginal as zm
from solvers.grids.zonal import ZonalCells, ZonalGrid, log_measure_density


def frame(dim: int, method: str, rho, resolution: int) -> xr.Dataset:
    """A zonal evolve frame of the density ``rho(t)`` (node values or cell averages
    taken at the centres: the frame's own piecewise-constant density)."""
    grid = ZonalGrid(resolution, dim) if method == "spectral" else ZonalCells(resolution,
                                                                              dim)
    return xr.Dataset({"density": ("polar", rho(grid.t)), "weights": ("polar", grid.weights)},
                      coords={"polar": grid.theta},
                      attrs={"dim": dim, "method": method, "geometry": "zonal"})


def quad_cdf(dim: int, rho, t: float) -> float:
    """mu({<x, e> <= t}) = int_{arccos t}^pi w_d sin^{d-2} rho(cos) dtheta, by quad."""
    f = lambda th: math.exp(log_measure_density(dim, th)) * rho(math.cos(th))
    return integrate.quad(f, math.acos(t), math.pi, epsabs=1e-15, epsrel=1e-13,
                          limit=400)[0]


T = np.array([-0.9, -0.3, 0.0, 0.2, 0.55, 0.8, 0.97])


@pytest.mark.parametrize("dim", [2, 3, 5, 16])
def test_spectral_cdf_of_a_polynomial_density(dim):
    """A band-limited density (1 + 0.8 t^3 - 0.5 t^6, positive): its CDF to round-off."""
    rho = lambda t: 1 + 0.8 * np.asarray(t) ** 3 - 0.5 * np.asarray(t) ** 6
    ds = frame(dim, "spectral", rho, 12)
    exact = [quad_cdf(dim, rho, t) for t in T]
    np.testing.assert_allclose(zm.t_cdf(ds, T), exact, rtol=0, atol=1e-13)


def test_spectral_cdf_of_von_mises_on_s2():
    """d = 3: the von Mises-Fisher CDF in closed form, (e^{ct} - e^{-c}) / (e^c - e^{-c})
    (the series resolves e^{ct} to 1e-15 at L = 48)."""
    c = 6.0
    rho = lambda t: c * np.exp(c * (np.asarray(t) - 1)) * 2 / (1 - math.exp(-2 * c))
    ds = frame(3, "spectral", rho, 48)
    exact = np.expm1(c * (T + 1)) / np.expm1(2 * c)
    np.testing.assert_allclose(zm.t_cdf(ds, T), exact, rtol=0, atol=1e-13)


@pytest.mark.parametrize("method, resolution", [("spectral", 8), ("finite-volume", 64)])
def test_uniform_in_high_dimension(method, resolution):
    """d = 1000: the uniform law's CDF, I_{(1+t)/2}((d-1)/2, (d-1)/2), where it is a
    bump of width 0.03 about 0."""
    dim = 1000
    ds = frame(dim, method, lambda t: np.ones_like(t), resolution)
    t = np.array([-0.06, -0.02, 0.0, 0.01, 0.05])
    a = (dim - 1) / 2
    np.testing.assert_allclose(zm.t_cdf(ds, t), special.betainc(a, a, (1 + t) / 2),
                               rtol=0, atol=1e-12)


def test_finite_volume_cdf_is_piecewise_constant_density():
    """Cell values, exact measure of each part: against quad of the cell's value times
    the measure's density."""
    dim, n = 5, 24
    ds = frame(dim, "finite-volume", lambda t: 1 + 0.9 * t, n)
    values = ds["density"].values
    h = math.pi / n

    def piecewise(c: float) -> float:
        th = math.acos(np.clip(c, -1, 1))
        return values[min(int(th / h), n - 1)]

    theta_points = (np.arange(n) + 0.5) * h
    exact = []
    for t in T:
        lo = math.acos(t)
        cuts = [lo] + [x for x in h * np.arange(1, n) if x > lo] + [math.pi]
        exact.append(sum(integrate.quad(lambda th: math.exp(log_measure_density(dim, th))
                                        * piecewise(math.cos(th)), a, b, epsabs=1e-15)[0]
                         for a, b in zip(cuts[:-1], cuts[1:])))
    np.testing.assert_allclose(zm.t_cdf(ds, T), exact, rtol=0, atol=1e-13)
    assert theta_points.size == n


def test_nan_nodes_count_as_zero_mass():
    """A dataset's NaN nodes (weight < 1e-18) carry no mass: d = 64, uniform, L = 64."""
    ds = frame(64, "spectral", lambda t: np.ones_like(t), 64)
    w = ds["weights"].values
    ds["density"] = ds["density"].where(w >= 1e-18)
    assert np.isnan(ds["density"].values).any()
    np.testing.assert_allclose(zm.t_cdf(ds, np.array([1.0]))[0], 1.0, atol=1e-12)
    a = 63 / 2
    np.testing.assert_allclose(zm.t_cdf(ds, np.array([0.1])), special.betainc(a, a, 0.55),
                               atol=1e-9)


def test_marginal_density_of_uniform():
    """The density of t of the uniform law: w_d (1 - t^2)^{(d-3)/2}."""
    dim = 9
    ds = frame(dim, "spectral", lambda t: np.ones_like(t), 6)
    t = np.array([-0.5, 0.0, 0.7])
    w = special.gamma(dim / 2) / (math.sqrt(math.pi) * special.gamma((dim - 1) / 2))
    np.testing.assert_allclose(zm.marginal_density(ds, t), w * (1 - t**2) ** 3, rtol=1e-13)


# ---------------------------------------------------------------------------------------
# W_p on the line.

@pytest.mark.parametrize("p, exact", [(1.0, 0.25), (2.0, 1 / math.sqrt(12)),
                                      (3.0, (1 / 32) ** (1 / 3))])
def test_one_point_against_uniform(p, exact):
    """A Dirac at the centre of the uniform law on [0, 1]: W_p^p = int |u - 1/2|^p du =
    2^{-p} / (p + 1)."""
    nodes, cdf = np.array([0.0, 1.0]), np.array([0.0, 1.0])
    assert exact == pytest.approx((0.5**p / (p + 1)) ** (1 / p))
    assert zm.line_wasserstein(np.array([0.5]), nodes, cdf, p) == pytest.approx(exact,
                                                                                rel=1e-14)


@pytest.mark.parametrize("p", [1.0, 1.5, 2.0])
def test_against_the_quantile_integral(p):
    """n = 300 points against a piecewise-linear CDF with a flat piece (no mass on
    [0.2, 0.4]): W_p^p = int_0^1 |Q_n - Q|^p du by the midpoint rule on 2e6 points."""
    rng = np.random.default_rng(1)
    values = rng.normal(0.3, 0.2, 300)
    nodes = np.array([-0.5, 0.0, 0.2, 0.4, 0.9])
    cdf = np.array([0.0, 0.3, 0.5, 0.5, 1.0])
    u = (np.arange(2_000_000) + 0.5) / 2_000_000
    q = np.interp(u, cdf[[0, 1, 2, 4]], nodes[[0, 1, 2, 4]])
    q = np.where(u > 0.5, np.interp(u, cdf[3:], nodes[3:]), q)
    qn = np.sort(values)[np.minimum((u * 300).astype(int), 299)]
    exact = np.mean(np.abs(qn - q) ** p) ** (1 / p)
    assert zm.line_wasserstein(values, nodes, cdf, p) == pytest.approx(exact, rel=1e-6)


def test_w1_floor_is_the_mean_distance_of_exact_samples():
    """Uniform on [0, 1]: floor sqrt(2/(pi n)) pi/8; the mean W_1 of 400 sets of n = 2000
    exact samples is within 3 of its standard errors plus 2 % (the next order in 1/n)."""
    nodes, cdf, n = np.array([0.0, 1.0]), np.array([0.0, 1.0]), 2000
    floor = zm.w1_floor(nodes, cdf, n)
    assert floor == pytest.approx(math.sqrt(2 / (math.pi * n)) * math.pi / 8, rel=1e-12)
    rng = np.random.default_rng(2)
    w = np.array([zm.line_wasserstein(rng.random(n), nodes, cdf) for _ in range(400)])
    assert abs(w.mean() - floor) < 3 * w.std() / 20 + 0.02 * floor
