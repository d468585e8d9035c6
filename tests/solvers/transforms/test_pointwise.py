"""Spectral fields off the grid (``solvers.transforms.pointwise``) against direct sums of
their series and finite differences."""
from __future__ import annotations

import numpy as np
import pytest

from solvers.grids.circle import CircleGrid
from solvers.grids.sphere import SphereGrid
from solvers.transforms.pointwise import series_at, sphere_synthesis_at


@pytest.mark.parametrize("n", [63, 64])
def test_circle_series_on_and_off_the_grid(n):
    rng = np.random.default_rng(n)
    grid = CircleGrid(n)
    f = rng.standard_normal(n)
    c = grid.analysis(f)
    nyquist = n % 2 == 0
    np.testing.assert_allclose(series_at(c, grid.theta, nyquist), f, rtol=0, atol=1e-13)
    theta = rng.uniform(0, 2 * np.pi, 200)
    k = np.arange(c.size)
    half = np.where((k == k[-1]) & nyquist, 0.5, 1.0) * np.where(k == 0, 0.5, 1.0)
    terms = 2 * half * c[None, :] * np.exp(1j * np.outer(theta, k))
    direct = terms.real.sum(axis=1)
    derivative = (1j * k * terms).real.sum(axis=1)
    np.testing.assert_allclose(series_at(c, theta, nyquist), direct, rtol=0, atol=1e-13)
    np.testing.assert_allclose(series_at(c, theta, nyquist, derivative=True), derivative,
                               rtol=0, atol=1e-11)


def test_sphere_values_and_gradient():
    rng = np.random.default_rng(5)
    lmax = 20
    grid = SphereGrid(lmax)
    a = grid.analysis(rng.standard_normal(grid.shape))
    on_grid = sphere_synthesis_at(a, lmax, grid.points.reshape(-1, 3))
    np.testing.assert_allclose(on_grid, grid.synthesis(a).ravel(), rtol=0, atol=1e-11)
    x = rng.standard_normal((40, 3))
    x /= np.linalg.norm(x, axis=1)[:, None]
    x[0] = [0, 0, 1]  # a pole
    values, grad = sphere_synthesis_at(a, lmax, x, gradient=True)
    np.testing.assert_allclose(values, sphere_synthesis_at(a, lmax, x), rtol=0, atol=0)
    assert np.abs(np.einsum("ij,ij->i", grad, x)).max() < 1e-12  # tangent
    t = rng.standard_normal((40, 3))
    t -= np.einsum("ij,ij->i", t, x)[:, None] * x
    t /= np.linalg.norm(t, axis=1)[:, None]
    h = 1e-4  # centred differences along geodesics: error ~ h^2 |f'''| / 6
    ahead = sphere_synthesis_at(a, lmax, np.cos(h) * x + np.sin(h) * t)
    behind = sphere_synthesis_at(a, lmax, np.cos(h) * x - np.sin(h) * t)
    scale = np.abs(values).max() * lmax ** 3
    np.testing.assert_allclose((ahead - behind) / (2 * h), np.einsum("ij,ij->i", grad, t),
                               rtol=0, atol=h ** 2 * scale)
