"""The Lipschitz constants behind Dobrushin's bound hold on random measures and points
(the velocity field computed directly; W1 by POT's exact transport)."""
from __future__ import annotations

import math

import numpy as np
import ot
import pytest

from meanfield.model.lipschitz import dobrushin_bound, lipschitz_constants


def velocity(x, y, w, beta, normalized):
    """v[nu](x) for nu = sum_j w_j delta_{y_j} (docs/conventions.md)."""
    k = np.exp(beta * x @ y.T) * w
    a = k @ y
    if normalized:
        a = a / k.sum(axis=1)[:, None]
    return a - np.einsum("ij,ij->i", a, x)[:, None] * x


def sphere(n, d, rng, spread=None):
    """Uniform points, or (``spread``) a cluster around the first axis."""
    x = rng.standard_normal((n, d))
    if spread is not None:
        x = spread * x + np.eye(d)[0]
    return x / np.linalg.norm(x, axis=1)[:, None]


@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("beta", [0.5, 1.0, 4.0])
@pytest.mark.parametrize("d", [2, 3])
def test_the_constants_bound_what_happens(normalized, beta, d):
    rng = np.random.default_rng(7)
    worst_x = worst_mu = 0.0
    for trial in range(30):
        y = sphere(12, d, rng, spread=0.3 if trial % 2 else None)
        w = rng.dirichlet(np.ones(12))
        r = np.linalg.norm(w @ y)
        lx, lmu = lipschitz_constants(beta, normalized, r)
        # In x: pairs of points on the sphere, near and far.
        a, b = sphere(50, d, rng), sphere(50, d, rng)
        b = np.where((np.arange(50) % 2)[:, None] == 0, a + 1e-3 * b, b)
        b /= np.linalg.norm(b, axis=1)[:, None]
        va, vb = velocity(a, y, w, beta, normalized), velocity(b, y, w, beta, normalized)
        worst_x = max(worst_x, (np.linalg.norm(va - vb, axis=1)
                                / np.linalg.norm(a - b, axis=1)).max() / lx)
        # In the measure: a moved copy, W1 with the chordal cost.
        z = y + 0.2 * rng.standard_normal(y.shape)
        z /= np.linalg.norm(z, axis=1)[:, None]
        w1 = ot.emd2(w, w, ot.dist(y, z, metric="euclidean"))
        q = sphere(50, d, rng)
        diff = np.linalg.norm(velocity(q, y, w, beta, normalized)
                              - velocity(q, z, w, beta, normalized), axis=1).max()
        worst_mu = max(worst_mu, diff / w1 / float(lmu))
    assert worst_x <= 1.0 and worst_mu <= 1.0
    assert worst_x > 0.02 and worst_mu > 1e-3  # the test sees the field, not zeros


def test_sa_kernel_minimum_by_jensen():
    """``min_y int e^{beta <y, z>} dmu >= e^{-beta r}``: the bound SA's L_mu uses."""
    rng = np.random.default_rng(2)
    for _ in range(20):
        y = sphere(40, 3, rng, spread=0.5)
        w = rng.dirichlet(np.ones(40))
        r = np.linalg.norm(w @ y)
        q = sphere(2000, 3, rng)
        assert (np.exp(2.0 * q @ y.T) @ w).min() >= math.exp(-2.0 * r) * (1 - 1e-12)


def test_bound_grows_as_the_integral_of_the_rate():
    times = np.linspace(0, 1, 11)
    bound = dobrushin_bound(np.array([0.1, 0.2]), times, np.zeros(11), 1.0, False)
    lx, lmu = lipschitz_constants(1.0, False)
    np.testing.assert_allclose(bound[0], 0.1 * 0.5 * math.pi * np.exp((lx + lmu) * times))
    assert bound.shape == (2, 11)
