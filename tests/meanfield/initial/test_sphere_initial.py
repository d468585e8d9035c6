"""Initial densities on S^2: normalisation, formulas, samples, checks."""
from __future__ import annotations

import numpy as np
import pytest

from meanfield import ConfigError
from meanfield.initial.sphere import (
    garcia_portugues_bandwidth,
    initial_values,
    vmf_density,
)
from solvers.grids.coordinates import unit_vectors
from solvers.grids.sphere import SphereGrid


def test_von_mises_fisher_is_normalised_and_peaks_at_center():
    grid = SphereGrid(64)
    x = unit_vectors(grid.lat[:, None], grid.lon[None, :])
    for c in (0.0, 1.0, 10.0, 200.0):
        f = vmf_density([0.0, 0.6, 0.8], c)(x)
        assert grid.integrate(f) == pytest.approx(1.0, rel=1e-10 if c < 100 else 1e-3)
    # closed form of the mean resultant length: coth c - 1/c
    c = 5.0
    f = vmf_density([0.0, 0.0, 1.0], c)(x)
    assert np.sum(grid.weights * f * x[..., 2]) == pytest.approx(1 / np.tanh(c) - 1 / c,
                                                                 rel=1e-12)


@pytest.mark.parametrize("degree,order", [(1, 0), (2, 1), (3, -2), (4, 4)])
def test_perturbed_full_amplitude_stays_nonnegative(degree, order):
    grid = SphereGrid(32)
    rho = initial_values({"kind": "perturbed", "degree": degree, "order": order,
                          "amplitude": 1.0}, grid)
    assert rho.min() >= -1e-12 and rho.min() < 0.02 / (4 * np.pi)  # touches zero
    assert grid.integrate(rho) == pytest.approx(1.0, rel=1e-14)
    a = np.abs(grid.analysis(rho))
    lm = (grid.l == degree) & (grid.m == abs(order))
    assert a[lm].max() > 0.01 and np.sort(a)[-3] < 1e-12  # only Y_00 and Y_lm


def test_samples_kde_approximates_the_sampled_law(tmp_path):
    rng = np.random.default_rng(11)
    center, c, n = np.array([0.0, 0.6, 0.8]), 8.0, 5000
    # exact vMF sampling on S^2: w = 1 + log(u + (1-u) e^{-2c}) / c, uniform azimuth
    u = rng.random(n)
    w = 1 + np.log(u + (1 - u) * np.exp(-2 * c)) / c
    phi = 2 * np.pi * rng.random(n)
    e1 = np.array([1.0, 0.0, 0.0])
    e2 = np.cross(center, e1)
    pts = (w[:, None] * center + np.sqrt(1 - w**2)[:, None]
           * (np.cos(phi)[:, None] * e1 + np.sin(phi)[:, None] * e2))
    path = tmp_path / "pts.txt"
    np.savetxt(path, 2.5 * pts)  # any length: each row is normalised
    grid = SphereGrid(128)
    rho = initial_values({"kind": "samples", "path": str(path), "bandwidth": "auto"}, grid)
    x = unit_vectors(grid.lat[:, None], grid.lon[None, :])
    h = garcia_portugues_bandwidth(pts)
    # the spectral estimate is the kernel sum, to round-off
    direct = np.mean([vmf_density(p, 1 / h**2)(x) for p in pts[:: 5]], axis=0)
    subsample = initial_values({"kind": "samples", "path": str(_save(tmp_path, pts[::5])),
                                "bandwidth": h}, grid)
    assert np.abs(subsample - direct).max() < 1e-10 * direct.max()
    # and it estimates the law: L1 distance (statistical: bias + variance at n = 5000)
    exact = vmf_density(center, c)(x)
    assert np.sum(grid.weights * np.abs(rho - exact)) < 0.1
    assert h == pytest.approx(n ** (-1 / 6) / np.sqrt(c), rel=0.15)  # large-k limit


def _save(tmp_path, pts):
    path = tmp_path / "sub.npy"
    np.save(path, pts)
    return path


def test_sample_file_errors(tmp_path):
    grid = SphereGrid(16)
    zero = tmp_path / "zero.txt"
    np.savetxt(zero, [[1.0, 0, 0], [0, 0, 0]])
    with pytest.raises(ConfigError, match="zero vector"):
        initial_values({"kind": "samples", "path": str(zero), "bandwidth": 0.3}, grid)
    two_d = tmp_path / "two.txt"
    np.savetxt(two_d, [[1.0, 0], [0, 1.0]])
    with pytest.raises(ConfigError, match=r"\(n, 3\)"):
        initial_values({"kind": "samples", "path": str(two_d), "bandwidth": 0.3}, grid)
