"""The exact W_p between zonal densities on S^2 (``meanfield.metrics.sphere_zonal``) and
its wiring into the front ``meanfield.metrics.wasserstein``: each value checked against
an independent one (1-D quadrature of closed-form CDFs, the network simplex on grid
atoms)."""
from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy import integrate, optimize

from meanfield import config as cfgmod
from meanfield.discretizations.base import Discretization
from meanfield.metrics import sphere_transport as st
from meanfield.metrics import sphere_zonal as sz
from meanfield.metrics.wasserstein import wasserstein
from solvers.grids.sphere import SphereGrid


def frame(g: SphereGrid, rho_bar, tilt: float = 0.0) -> xr.Dataset:
    """An evolve frame of the density rho_bar(<x, axis>), axis = z tilted by ``tilt``
    towards x (tilt = 0: zonal about z)."""
    x = g.points
    m = np.cos(tilt) * x[..., 2] + np.sin(tilt) * x[..., 0]
    return xr.Dataset({"density": (g.dims, rho_bar(m)),
                       "weights": (g.dims, np.array(g.weights))},
                      coords=g.coords(), attrs={"geometry": "sphere", "method": "spectral"})


def vmf(k: float):
    """The von Mises-Fisher density k e^{k m} / (4 pi sinh k), m = cos(colatitude)."""
    return lambda m: k * np.exp(k * (m - 1)) / (2 * np.pi * -np.expm1(-2 * k))


def vmf_cdf(k: float, t):
    """Its colatitude CDF (the cap mass), closed form."""
    return np.expm1(k * (np.cos(t) - 1)) / np.expm1(-2 * k)


def reference(pdf, cdf_mu, cdf_nu, p: float, points=()) -> float:
    """W_p of two colatitude laws by scipy quad of |T - theta|^p f_mu, T by brentq."""
    def transport(t):
        level = cdf_mu(t)
        return optimize.brentq(lambda s: cdf_nu(s) - level, 0.0, np.pi, xtol=1e-15,
                               rtol=1e-15)

    value = integrate.quad(lambda t: abs(transport(t) - t) ** p * pdf(t), 0, np.pi,
                           epsabs=1e-15, epsrel=1e-13, limit=200, points=points or None)
    return value[0] ** (1 / p)


@pytest.mark.parametrize("p", [1.0, 2.0, 1.5])
def test_von_mises_fisher_against_1d_quadrature(p):
    g = SphereGrid(40)  # the vMF series is converged to ~1e-15 at degree 40 (k = 5)
    a, b = frame(g, vmf(2.0)), frame(g, vmf(5.0))
    got = sz.zonal_wasserstein(a, b, p)
    want = reference(lambda t: 2 * np.pi * np.sin(t) * vmf(2.0)(np.cos(t)),
                     lambda t: vmf_cdf(2.0, t), lambda t: vmf_cdf(5.0, t), p)
    assert got == pytest.approx(want, rel=1e-10)  # measured 1e-14 .. 2e-14
    assert sz.zonal_wasserstein(b, a, p) == pytest.approx(got, rel=1e-12)
    assert sz.zonal_wasserstein(a, a, p) == 0.0


def test_the_package_initial_density():
    """The same value from the package's own initial density and discretisation."""
    cfg = cfgmod.validate({
        "domain": {"geometry": "sphere"}, "model": {"beta": 1.0, "normalized": True},
        "discretization": {"method": "spectral", "resolution": 40},
        "initial": {"kind": "von_mises", "center": [0.0, 0.0, 1.0],
                    "concentration": 3.0},
        "time": {"t_final": 1.0}})
    solver = Discretization.from_config(cfg)
    grid = solver.grid
    rho = solver.initial_density(cfg["initial"])
    ds = xr.Dataset({"density": (grid.dims, rho),
                     "weights": (grid.dims, np.broadcast_to(grid.weights, grid.shape))},
                    coords=grid.coords(), attrs={"geometry": "sphere", "method": "spectral"})
    assert sz.is_zonal(ds)
    uniform = frame(SphereGrid(3), lambda m: np.full_like(m, 1 / (4 * np.pi)))
    want = reference(lambda t: 2 * np.pi * np.sin(t) * vmf(3.0)(np.cos(t)),
                     lambda t: vmf_cdf(3.0, t), lambda t: (1 - np.cos(t)) / 2, 2.0)
    assert wasserstein(ds, uniform) == pytest.approx(want, rel=1e-10)


def p1_displacement(eps: float, t: float) -> float:
    """T - theta for (1 + eps P_1) against uniform, cancellation-free: cos T = cos theta
    - eps sin^2 theta / 2, i.e. 2 sin(u/2) sin(theta + u/2) = eps sin^2 theta / 2."""
    rhs = eps * np.sin(t) ** 2 / 2
    if rhs == 0:
        return 0.0
    return optimize.brentq(lambda u: 2 * np.sin(u / 2) * np.sin(t + u / 2) - rhs,
                           0.0, np.pi - t, xtol=1e-300, rtol=1e-15)


@pytest.mark.parametrize("eps", [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7])
def test_tiny_perturbation_is_accurate(eps):
    def pdf(t):
        return (1 + eps * np.cos(t)) * np.sin(t) / 2

    want = integrate.quad(lambda t: p1_displacement(eps, t) ** 2 * pdf(t), 0, np.pi,
                          epsabs=0, epsrel=1e-13, limit=200)[0] ** 0.5
    # linearised: T - theta = eps sin(theta) / 2, so W_2 = eps / sqrt(6) (1 + O(eps^2))
    assert want == pytest.approx(eps / np.sqrt(6), rel=2e-2 * eps)
    # from Legendre coefficients: no input round-off, round-off relative error at any eps
    series = sz.zonal_wasserstein(sz.ZonalDensity.from_legendre([1.0, eps]),
                                  sz.ZonalDensity.from_legendre([1.0]), 2)
    assert series == pytest.approx(want, rel=1e-12)  # measured <= 1e-13
    # from grid frames: the grid values carry the perturbation to 1e-16 / eps relative
    g = SphereGrid(7)
    got = sz.zonal_wasserstein(frame(g, lambda m: (1 + eps * m) / (4 * np.pi)),
                               frame(g, lambda m: np.full_like(m, 1 / (4 * np.pi))), 2)
    assert got == pytest.approx(want, rel=1e-12 + 1e-15 / eps)  # measured 4e-10 at 1e-7


@pytest.mark.parametrize("p", [1.0, 1.5, 3.0])
def test_crossing_cdfs(p):
    """(1 + eps P_2) against uniform: the CDFs cross at the equator (|d|^p has a kink
    there, which the rule must cut at); cos T = cos theta - eps cos theta sin^2 theta/2."""
    eps = 0.5

    def transport(t):
        rhs = eps * np.cos(t) * np.sin(t) ** 2 / 2
        return np.arccos(np.cos(t) - rhs)

    want = integrate.quad(lambda t: abs(transport(t) - t) ** p
                          * (1 + eps * (3 * np.cos(t) ** 2 - 1) / 2) * np.sin(t) / 2,
                          0, np.pi, epsabs=1e-15, epsrel=1e-13, limit=200,
                          points=[np.pi / 2])[0] ** (1 / p)
    got = sz.zonal_wasserstein(sz.ZonalDensity.from_legendre([1.0, 0.0, eps]),
                               sz.ZonalDensity.from_legendre([1.0]), p)
    assert got == pytest.approx(want, rel=1e-11)


def test_against_the_network_simplex_on_grid_atoms():
    """W_p(atoms) differs from W_p(densities) by at most W(atoms_mu, mu) + W(atoms_nu,
    nu) <= 2 h (each atom stands for its cell, moved at most the cell radius h <= pi /
    nlat: sphere_transport's docstring), so |zonal - emd| <= 2 h, and the gap closes as
    the grid is refined (measured 0.0168 at L = 7, 0.0051 at L = 15)."""
    gaps = []
    for lmax in (7, 15):
        g = SphereGrid(lmax)
        h = np.pi / g.nlat
        a, b = frame(g, vmf(1.0)), frame(g, vmf(4.0))
        pts = g.points.reshape(-1, 3)
        wa, wb = (np.array(g.weights) * a.density.values).ravel(), \
            (np.array(g.weights) * b.density.values).ravel()
        emd = st.sphere_wasserstein(pts, pts, wa / wa.sum(), wb / wb.sum(), 2)
        zonal = sz.zonal_wasserstein(a, b, 2)
        assert zonal <= emd + 2 * h
        assert abs(zonal - emd) <= 2 * h
        assert wasserstein(a, b, method="atoms") == pytest.approx(emd, rel=1e-12)
        gaps.append(abs(zonal - emd))
    assert gaps[1] < gaps[0] / 2


def test_colatitude_bound_for_non_zonal_measures():
    """For any mu, nu, W_p of the colatitude marginals (what ZonalDensity.from_frame
    computes from the ring means) is a lower bound: here well below the exact value of a
    tilted pair (the atoms' O(h) allowed for)."""
    g = SphereGrid(11)
    a, b = frame(g, vmf(3.0), tilt=1.0), frame(g, vmf(3.0))
    assert not sz.is_zonal(a) and sz.is_zonal(b)
    bound = sz.zonal_wasserstein(a, b, 2)
    exact = wasserstein(a, b)  # auto: not zonal, so the network simplex on atoms
    assert exact == pytest.approx(wasserstein(a, b, method="atoms"), rel=1e-14)
    assert bound <= exact + 2 * np.pi / g.nlat
    assert bound < 0.8 * exact


def test_front_chooses_zonal_and_refuses_what_is_not():
    g = SphereGrid(15)
    a, b = frame(g, vmf(1.0)), frame(g, vmf(4.0))
    direct = sz.zonal_wasserstein(a, b, 2)
    # (the front reads the series about the axis from the harmonic coefficients, this
    # from the ring means: the same polynomial to round-off)
    assert wasserstein(a, b) == pytest.approx(direct, rel=1e-12)
    assert wasserstein(a, b, method="zonal") == pytest.approx(direct, rel=1e-12)
    one_time = b.assign(density=b.density.expand_dims(time=[0.0]))
    assert wasserstein(a, one_time, p=1) == pytest.approx(sz.zonal_wasserstein(a, b, 1),
                                                          rel=1e-12)
    # "exact" is the zonal value; the atoms are an O(h) estimate, not the same number
    assert wasserstein(a, b, method="exact") == pytest.approx(direct, rel=1e-12)
    assert wasserstein(a, b, method="atoms") != pytest.approx(direct, rel=1e-3)
    tilted = frame(g, vmf(1.0), tilt=0.3)
    with pytest.raises(ValueError, match="not zonal about a common axis"):
        wasserstein(a, tilted, method="zonal")
    # not zonal about one axis, close: auto takes the linearised W_2 (its estimate 0.5 %)
    assert wasserstein(a, tilted) == wasserstein(a, tilted, method="linearised")
    with pytest.raises(ValueError, match="modulo_rotation"):
        wasserstein(a, b, method="zonal", modulo_rotation=True)
    with pytest.raises(ValueError, match="not a density frame"):
        wasserstein(a, np.array([[0.0, 0.0, 1.0]]), method="zonal")


def test_front_refuses_zonal_on_other_grids():
    from solvers.grids.coordinates import lat_lon
    from solvers.grids.mesh import icosahedral_mesh

    mesh = icosahedral_mesh(2)
    lat, lon = lat_lon(mesh.centers)
    fv = xr.Dataset({"density": (("cell",), np.full(mesh.n_cells, 1 / (4 * np.pi))),
                     "weights": (("cell",), np.array(mesh.weights))},
                    coords={"lat": ("cell", lat), "lon": ("cell", lon)},
                    attrs={"geometry": "sphere", "method": "finite-volume"})
    uniform = frame(SphereGrid(7), lambda m: np.full_like(m, 1 / (4 * np.pi)))
    with pytest.raises(ValueError, match="method='finite-volume'"):
        wasserstein(uniform, fv, method="zonal")
    # the same uniform density on two grids: the atoms' value is all quantisation, so
    # auto refuses it; "atoms" by name returns it; "exact" (no exact method for a
    # finite-volume frame) refuses, naming the alternatives
    with pytest.raises(ValueError, match="too close for their grid"):
        wasserstein(uniform, fv)
    assert wasserstein(uniform, fv, method="atoms") < np.pi / 8
    with pytest.raises(ValueError, match='method="exact".*finite-volume.*"atoms"'):
        wasserstein(uniform, fv, method="exact")
    n = 64
    circle = xr.Dataset({"density": (("theta",), np.full(n, 1 / (2 * np.pi))),
                         "weights": (("theta",), np.full(n, 2 * np.pi / n))},
                        coords={"theta": 2 * np.pi * np.arange(n) / n},
                        attrs={"geometry": "circle", "method": "spectral"})
    with pytest.raises(ValueError, match="zonal.*sphere"):
        wasserstein(circle, circle, method="zonal")


def test_frame_validation_and_is_zonal():
    g = SphereGrid(7)
    a = frame(g, vmf(2.0))
    assert sz.is_zonal(a)
    noisy = a.copy(deep=True)
    noisy["density"][3, 5] *= 1 + 1e-6
    assert not sz.is_zonal(noisy) and sz.is_zonal(noisy, rtol=1e-5)
    bad = a.assign_coords(lat=a.lat + 1e-3)
    with pytest.raises(ValueError, match="Gauss-Legendre latitudes"):
        sz.ZonalDensity.from_frame(bad)
    neg = a.copy(deep=True)
    neg["density"][0, :] = -1.0
    with pytest.raises(ValueError, match="negative"):
        sz.ZonalDensity.from_frame(neg)
    with pytest.raises(ValueError, match="p must be"):
        sz.zonal_wasserstein(a, a, 0.5)
    with pytest.raises(ValueError, match="positive mass"):
        sz.ZonalDensity.from_legendre([0.0, 1.0])


@pytest.mark.parametrize("p", [650.0, 1e4])
def test_large_p_is_scaled_and_resolved(p):
    """|d|^p underflowed to 0 for p >= ~600 (W_p came out 0.0) and the default rule
    missed its narrow peak: now scaled by the largest |d| and 8 sqrt(p) nodes, equal to
    a 4096-node rule to 1e-12 (measured 4e-16), and between W_100 and the largest |d|."""
    a = sz.ZonalDensity.from_legendre([1.0, 0.9, 0.5, 0.2])
    b = sz.ZonalDensity.from_legendre([1.0, -0.2])
    got = sz.zonal_wasserstein(a, b, p)
    assert got == pytest.approx(sz.zonal_wasserstein(a, b, p, nodes=4096), rel=1e-12)
    assert sz.zonal_wasserstein(a, b, 100.0) < got < np.pi
    with pytest.raises(ValueError, match="P_MAX"):
        sz.zonal_wasserstein(a, b, 2 * st.P_MAX)
