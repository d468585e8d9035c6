"""The negative Sobolev norm (``meanfield.metrics.sobolev``): its normalisation against
closed forms on S^1 and S^2, the coefficients of atoms against the grid transforms, and
the inequalities tying it to W2 on random smooth densities."""
from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy.special import eval_legendre

from meanfield.metrics import sphere_transport as st
from meanfield.metrics.sobolev import circle_coefficients, hminus1, sphere_coefficients
from meanfield.metrics.measures import as_measure
from solvers.grids.coordinates import lat_lon
from solvers.grids.mesh import icosahedral_mesh
from solvers.grids.sphere import SphereGrid


def circle_frame(rho, method="spectral"):
    n = rho.size
    return xr.Dataset({"density": (("theta",), rho),
                       "weights": (("theta",), np.full(n, 2 * np.pi / n))},
                      coords={"theta": 2 * np.pi * np.arange(n) / n},
                      attrs={"geometry": "circle", "method": method})


def sphere_frame(g, rho):
    return xr.Dataset({"density": (("lat", "lon"), rho),
                       "weights": (("lat", "lon"), np.array(g.weights))},
                      coords={"lat": g.lat, "lon": g.lon},
                      attrs={"geometry": "sphere", "method": "spectral"})


def mesh_frame(level):
    mesh = icosahedral_mesh(level)
    lat, lon = lat_lon(mesh.centers)
    return xr.Dataset({"density": (("cell",), np.full(mesh.n_cells, 1 / (4 * np.pi))),
                       "weights": (("cell",), np.array(mesh.weights))},
                      coords={"lat": ("cell", lat), "lon": ("cell", lon)},
                      attrs={"geometry": "sphere", "method": "finite-volume"})


def random_circle_density(rng, n=128, modes=4, amp=0.25):
    theta = 2 * np.pi * np.arange(n) / n
    rho = np.ones(n)
    for k in range(1, modes + 1):
        rho += amp / k * (rng.normal() * np.cos(k * theta) + rng.normal() * np.sin(k * theta))
    assert rho.min() > 0
    return rho / (2 * np.pi)


def random_sphere_density(rng, g, degree=3, amp=0.3):
    alm = np.zeros(g.l.size, dtype=complex)
    sel = (g.l >= 1) & (g.l <= degree)
    alm[sel] = amp * (rng.normal(size=sel.sum()) + 1j * rng.normal(size=sel.sum()))
    alm[g.m == 0] = alm[g.m == 0].real
    alm[0] = np.sqrt(4 * np.pi)
    rho = g.synthesis(alm)
    while rho.min() <= 0.1 * rho.max() / 3:  # keep it bounded below
        alm[sel] *= 0.7
        rho = g.synthesis(alm)
    return rho / g.integrate(rho)


def test_circle_normalisation_cosine():
    # f = cos(theta)/pi: -u'' = f gives u = f, ||f||^2 = int u'^2 = 1/pi
    n = 64
    theta = 2 * np.pi * np.arange(n) / n
    uniform = np.full(n, 1 / (2 * np.pi))
    rho = uniform + np.cos(theta) / np.pi / 4  # mass 1, f = cos/(4 pi)
    assert hminus1(circle_frame(rho), circle_frame(uniform)) == pytest.approx(
        np.sqrt(1 / np.pi) / 4, rel=1e-13)


def test_circle_two_diracs_closed_form_and_truncation():
    # ||delta_a - delta_b||^2 = D (2 pi - D) / (2 pi), D the arc between them; the
    # truncated sum misses at most 4 / (pi K)
    a, b = 0.3, 2.2
    d = b - a
    exact = d * (2 * np.pi - d) / (2 * np.pi)
    for k in (50, 400):
        value = hminus1(np.array([a]), np.array([b]), band_limit=k) ** 2
        assert 0 <= exact - value <= 4 / (np.pi * k)
    assert hminus1(np.array([a]), np.array([b]), band_limit=4000) ** 2 == pytest.approx(
        exact, abs=1e-3)


def test_circle_finite_volume_coefficients_are_exact():
    # one cell [theta_j - h/2, theta_j + h/2] full of mass: c_k = e^{-ik theta_j}
    # sinc(k h / 2) / (2 pi)
    n, j = 16, 3
    rho = np.zeros(n)
    rho[j] = n / (2 * np.pi)
    c = circle_coefficients(as_measure(circle_frame(rho, "finite-volume")), 40)
    k = np.arange(1, 41)
    h = 2 * np.pi / n
    expected = np.exp(-1j * k * j * h) * np.sin(k * h / 2) / (k * h / 2) / (2 * np.pi)
    assert np.allclose(c, expected, atol=1e-15)


def test_sphere_atoms_coefficients_equal_the_grid_analysis():
    rng = np.random.default_rng(0)
    g = SphereGrid(15)
    rho = random_sphere_density(rng, g)
    from_grid = sphere_coefficients(as_measure(sphere_frame(g, rho)), 15)
    atoms = (g.points.reshape(-1, 3), (g.weights * rho).ravel())
    from_atoms = sphere_coefficients(as_measure(atoms), 15)
    assert np.abs(from_grid - from_atoms).max() < 1e-14


def test_sphere_two_diracs_closed_form():
    # ||delta_x - delta_y||_L^2 = sum_{l=1}^L (2l+1)/(4 pi l(l+1)) 2 (1 - P_l(cos D)),
    # growing like (1/pi) log L: atoms need the band limit
    x, y = np.array([[0.0, 0.0, 1.0]]), np.array([[np.sin(1.1), 0.0, np.cos(1.1)]])
    values = []
    for lmax in (8, 32):
        ll = np.arange(1, lmax + 1)
        exact = np.sum((2 * ll + 1) / (4 * np.pi * ll * (ll + 1))
                       * 2 * (1 - eval_legendre(ll, np.cos(1.1))))
        values.append(hminus1(x, y, band_limit=lmax) ** 2)
        assert values[-1] == pytest.approx(exact, rel=1e-12)
    assert values[1] - values[0] == pytest.approx(np.log(4) / np.pi, rel=0.2)
    with pytest.raises(ValueError, match="band_limit is required"):
        hminus1(x, y)


def test_h_minus_one_inequalities_on_the_circle():
    pytest.importorskip("meanfield.metrics.circle_transport")
    from meanfield.metrics.wasserstein import wasserstein

    # measured ratios to the bounds: 0.73-0.88 (upper), 0.53-0.84 (lower)
    rng = np.random.default_rng(11)
    for _ in range(6):
        r1, r2 = random_circle_density(rng), random_circle_density(rng)
        w2 = wasserstein(circle_frame(r1), circle_frame(r2))
        h = hminus1(circle_frame(r1), circle_frame(r2))
        big, lo1, lo2 = max(r1.max(), r2.max()), r1.min(), r2.min()
        assert h <= np.sqrt(big) * w2 * (1 + 1e-10)
        assert w2 <= 2 / (np.sqrt(lo1) + np.sqrt(lo2)) * h * (1 + 1e-10)
        assert w2 <= 2 / np.sqrt(lo1) * h  # Peyre's one-sided form


def test_h_minus_one_inequalities_on_the_sphere():
    # W2 by the network simplex between the grid atoms of the two densities (both on
    # SphereGrid(15), 512 atoms, spacing h = pi/16: an O(h) discretisation error in W2 that
    # the margins below do not need: the measured ratios are 0.4-0.8 of the bounds)
    rng = np.random.default_rng(12)
    g = SphereGrid(15)
    ratios = []
    for _ in range(4):
        r1, r2 = random_sphere_density(rng, g), random_sphere_density(rng, g)
        f1, f2 = sphere_frame(g, r1), sphere_frame(g, r2)
        h = hminus1(f1, f2)
        p1, m1 = st.grid_atoms(g.points, g.weights, r1)
        p2, m2 = st.grid_atoms(g.points, g.weights, r2)
        w2 = st.sphere_wasserstein(p1, p2, m1, m2)
        big, lo1, lo2 = max(r1.max(), r2.max()), r1.min(), r2.min()
        assert h <= np.sqrt(big) * w2
        assert w2 <= 2 / (np.sqrt(lo1) + np.sqrt(lo2)) * h
        ratios.append((h / (np.sqrt(big) * w2), w2 / (2 / (np.sqrt(lo1) + np.sqrt(lo2)) * h)))
    assert max(max(r) for r in ratios) < 0.95, ratios


def test_sphere_cells_by_the_midpoint_rule():
    # the uniform density on icosahedral cells (atoms at the centres) against the uniform
    # one on a Gauss-Legendre grid: the midpoint rule's O(h^2) (measured 2.6e-4, 6.2e-5 at
    # levels 2, 3 with L = 8)
    g = SphereGrid(7)
    uniform = sphere_frame(g, np.full(g.shape, 1 / (4 * np.pi)))
    coarse = hminus1(mesh_frame(2), uniform, band_limit=8)
    fine = hminus1(mesh_frame(3), uniform, band_limit=8)
    assert fine < 1e-4 and 3 < coarse / fine < 5
    with pytest.raises(ValueError, match="band_limit is required"):
        hminus1(mesh_frame(2), uniform)
