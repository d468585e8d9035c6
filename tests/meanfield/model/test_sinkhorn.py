"""The Sinkhorn scaling (meanfield.model.sinkhorn) against closed forms and independent
methods, and Sinkhorn attention's gradient identity (docs/conventions.md)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield.errors import SolverError
from meanfield.model import sinkhorn as sk
from meanfield.model.sinkhorn_particles import SinkhornParticles, head_kind
from meanfield.model.weighted_attention import Head
from solvers.particles.direct import normalize_rows

TOL = 1e-12


def _sphere(n: int, d: int, seed: int) -> np.ndarray:
    return normalize_rows(np.random.default_rng(seed).standard_normal((n, d)))


def test_beta_zero_and_equiangular_tokens_have_closed_forms():
    # beta = 0: K = 11^T, u = 1/sqrt(n), G = -(n/2) log n
    n = 7
    res = sk.symmetric_scaling(np.zeros((n, n)), TOL)
    assert abs(res.potential + 0.5 * n * math.log(n)) < 1e-13
    # orthonormal tokens (rho = 0) and the regular simplex (rho = -1/d): u constant,
    # u^2 (e^beta + (n - 1) e^{beta rho}) = 1, G = -(n/2)(beta + log(1 + (n-1) e^{-beta(1-rho)}))
    simplex = np.eye(4) - 0.25
    simplex = normalize_rows(simplex)  # 4 unit vectors in a 3-plane, cosines -1/3
    for x, rho in ((np.eye(5), 0.0), (simplex, -1 / 3)):
        m = x.shape[0]
        for beta in (0.5, 3.0, 1e3):  # e^1000 is no double: the log domain
            res = sk.symmetric_scaling(beta * (x @ x.T), TOL)
            exact = -0.5 * m * (beta + math.log1p((m - 1) * math.exp(-beta * (1 - rho))))
            assert abs(res.potential - exact) <= 1e-12 * abs(exact)
            assert res.error <= TOL


def test_symmetric_scaling_solves_u_ku_and_agrees_with_two_sided():
    x = _sphere(12, 3, 0)
    for beta in (2.0, 20.0, 500.0):
        logits = beta * (x @ x.T)
        res = sk.symmetric_scaling(logits, TOL)
        assert res.error <= TOL and np.array_equal(res.f, res.g)
        if beta <= 20:  # the definition itself, K formed directly (no log domain)
            u = np.exp(res.f)
            assert np.max(np.abs(u * (np.exp(logits) @ u) - 1)) < 1e-11
        other = sk.two_sided_scaling(logits, TOL, symmetric=True)
        assert np.max(np.abs(other.matrix - res.matrix)) < 1e-11
        assert abs(other.potential - res.potential) < 1e-10 * abs(res.potential)
        # P symmetric PSD (the local rate <= 1/2 rests on it)
        assert np.min(np.linalg.eigvalsh(res.matrix)) > -1e-12
    # the fixed point's rate <= 1/2 near the solution: <= ~45 sweeps to 1e-12
    assert sk.symmetric_scaling(2.0 * (x @ x.T), TOL).iterations <= 45


def test_two_sided_scaling_with_weights_and_its_newton_finish():
    rng = np.random.default_rng(1)
    x = _sphere(12, 3, 2)
    q, k = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    for beta in (1.0, 30.0, 300.0):
        logits = beta * (x @ q.T) @ (x @ k.T).T
        res = sk.two_sided_scaling(logits, TOL)
        assert res.error <= TOL
        assert np.allclose(res.matrix, np.exp(logits + res.f[:, None] + res.g[None, :]),
                           rtol=1e-12, atol=0)
        if beta == 1.0:  # plain Sinkhorn on the explicit kernel, many sweeps: the same P
            kern, v = np.exp(logits), np.ones(12)
            for _ in range(5000):
                u = 1 / (kern @ v)
                v = 1 / (kern.T @ u)
            assert np.max(np.abs(u[:, None] * kern * v[None, :] - res.matrix)) < 1e-11
    assert res.newton > 0  # beta = 300: the fixed point alone is too slow here


def test_failure_names_the_tolerance(monkeypatch):
    monkeypatch.setattr(sk, "FIXED_POINT_ITERATIONS", 2)
    monkeypatch.setattr(sk, "NEWTON_STEPS", 0)
    x = _sphere(12, 3, 0)
    with pytest.raises(SolverError, match="particles.sinkhorn_tolerance"):
        sk.symmetric_scaling(2.0 * (x @ x.T), TOL)


def test_head_kinds():
    eye = np.eye(3)
    assert head_kind(Head.identity(3)) == "symmetric"
    assert head_kind(Head(eye, np.diag([1.0, -1.0, 2.0]), eye)) == "symmetric-indefinite"
    assert head_kind(Head(eye, np.triu(np.ones((3, 3))), eye)) == "general"


@pytest.mark.parametrize("on_sphere", [True, False])
def test_the_flow_is_minus_grad_g_over_beta(on_sphere):
    """grad_{x_i} G = -beta sum_j P_ij x_j (envelope theorem), against central
    differences of G; on the sphere its tangent part is -beta times the velocity."""
    beta, h = 1.5, 1e-5
    x = _sphere(6, 3, 4) if on_sphere else np.random.default_rng(4).standard_normal((6, 3))
    model = SinkhornParticles(Head.identity(3), beta, on_sphere=False)

    def potential(y):  # G of K_ij = e^{beta <y_i, y_j>} at tokens as given (in R^d)
        return sk.symmetric_scaling(beta * (y @ y.T), 1e-14).potential

    grad = np.zeros_like(x)
    for i in range(6):
        for c in range(3):
            e = np.zeros_like(x)
            e[i, c] = h
            grad[i, c] = (potential(x + e) - potential(x - e)) / (2 * h)
    p = model.attention(x)[0]
    assert np.max(np.abs(grad + beta * p @ x)) < 1e-8
    if on_sphere:
        v = SinkhornParticles(Head.identity(3), beta, on_sphere=True).velocity(x)
        tangent = grad - np.einsum("ij,ij->i", grad, x)[:, None] * x
        assert np.max(np.abs(tangent + beta * v)) < 1e-8
