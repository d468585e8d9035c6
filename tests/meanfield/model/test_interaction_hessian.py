"""The gradient and Hessian of the interaction energy (meanfield.model.interaction_hessian)
against central differences of ``meanfield.model.particles.interaction_energy`` along
geodesics, the Hessian in the angles of S^1 against its own closed expression, and the
zero modes of the rotations at a critical point."""
from __future__ import annotations

import numpy as np
import pytest

from meanfield.model.interaction_hessian import (exp_map, gradient, hessian,
                                                 orbit_dimension, tangent_basis)
from meanfield.model.particles import interaction_energy


def _tokens(n: int, d: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("d", [2, 3, 5])
def test_tangent_basis_is_orthonormal_and_tangent(d):
    x = _tokens(7, d, 1)
    x[0] = np.eye(d)[0]  # the poles of the Householder reflection
    x[1] = -np.eye(d)[0]
    b = tangent_basis(x)
    assert np.max(np.abs(np.einsum("ida,id->ia", b, x))) < 1e-15
    assert np.max(np.abs(np.einsum("ida,idc->iac", b, b) - np.eye(d - 1))) < 1e-15
    step = 0.5 * np.random.default_rng(2).normal(size=(7, d - 1))
    assert np.max(np.linalg.norm(step, axis=1)) < np.pi
    y = exp_map(x, step)
    # a geodesic step of length |s| < pi turns the token by |s|
    np.testing.assert_allclose(np.arccos(np.clip(np.sum(x * y, axis=1), -1, 1)),
                               np.linalg.norm(step, axis=1), atol=1e-7)


@pytest.mark.parametrize("d, beta", [(2, 0.0), (2, 1.5), (3, 1.5), (3, 4.0), (5, 0.7)])
def test_gradient_and_hessian_against_differences_of_the_energy(d, beta):
    """grad . a = dE/dt and Hess[a, b] = polarised d^2E/dt^2 along exp_x(t a), central
    differences with h = 1e-3: truncation ~h^2 |E'''| ~ 1e-6 relative, round-off
    1e-16 |E|/h^2 ~ 1e-10 (bounds 2e-5 relative to the largest value)."""
    n = 6
    x = _tokens(n, d, 3)
    rng = np.random.default_rng(4)
    g, h = gradient(x, beta), hessian(x, beta)
    energy = lambda s: interaction_energy(exp_map(x, s), beta)  # noqa: E731
    step = 1e-3
    scale = max(np.max(np.abs(h)), 1e-12)
    for _ in range(3):
        a, b = rng.normal(size=(2, n * (d - 1)))
        slope = (energy(step * a) - energy(-step * a)) / (2 * step)
        assert abs(slope - g @ a) < 2e-5 * max(1.0, abs(g @ a))

        def second(v):
            return (energy(step * v) - 2 * energy(0 * v) + energy(-step * v)) / step**2

        mixed = (second(a + b) - second(a - b)) / 4
        assert abs(mixed - a @ h @ b) < 2e-5 * scale * np.linalg.norm(a) * np.linalg.norm(b)
    np.testing.assert_array_equal(h, h.T)


def test_circle_hessian_in_the_angles():
    """On S^1 the coordinates are the angles: H_ij = e^{beta cos d}(cos d - beta sin^2 d)/n^2
    with d = theta_i - theta_j, rows summing to 0; the gradient -(1/n^2) sum e^{beta cos d}
    sin d."""
    n, beta = 7, 2.5
    th = np.random.default_rng(5).uniform(0, 2 * np.pi, n)
    x = np.stack([np.cos(th), np.sin(th)], axis=1)
    delta = th[:, None] - th[None, :]
    k = np.exp(beta * np.cos(delta))
    want = k * (np.cos(delta) - beta * np.sin(delta) ** 2) / n**2
    np.fill_diagonal(want, 0.0)
    np.fill_diagonal(want, -want.sum(axis=1))
    scale = np.max(np.abs(want))
    assert np.max(np.abs(hessian(x, beta) - want)) < 1e-14 * scale
    np.testing.assert_allclose(gradient(x, beta), -(k * np.sin(delta)).sum(axis=1) / n**2,
                               rtol=0, atol=1e-15 * scale)


def test_rotations_are_zero_modes_at_a_critical_point():
    """At the regular octahedron (a critical point by symmetry) the tangent fields of the
    rotations x -> A x (A antisymmetric) are in the Hessian's kernel, and there are
    orbit_dimension = 3 of them."""
    x = np.concatenate([np.eye(3), -np.eye(3)])
    beta = 2.0
    b = tangent_basis(x)
    assert np.max(np.abs(gradient(x, beta, b))) < 1e-15
    h = hessian(x, beta, b)
    for i, j in ((0, 1), (0, 2), (1, 2)):
        a = np.zeros((3, 3))
        a[i, j], a[j, i] = 1.0, -1.0
        field = np.einsum("ida,id->ia", b, x @ a.T).reshape(-1)
        assert np.linalg.norm(h @ field) < 1e-14 * np.max(np.abs(h))
    w = np.linalg.eigvalsh(h)
    assert np.sum(np.abs(w) < 1e-12 * np.max(np.abs(w))) == orbit_dimension(x) == 3


def test_orbit_dimension():
    assert orbit_dimension(_tokens(5, 2, 0)) == 1
    one = np.tile([0.0, 0.0, 1.0], (4, 1))
    assert orbit_dimension(one) == 2  # a point of S^2
    assert orbit_dimension(np.concatenate([one, -one])) == 2
    assert orbit_dimension(_tokens(5, 3, 0)) == 3
    planar = np.zeros((5, 4))
    planar[:, :2] = _tokens(5, 2, 1)
    assert orbit_dimension(planar) == 2 * 4 - 3  # d(d-1)/2 - (d-2)(d-3)/2
