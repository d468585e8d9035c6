"""Batched integrators (solvers.steppers.batch): orders by convergence studies against
exact flows, per-system steps, and batch splitting."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.linalg import expm

from solvers.particles.direct import normalize_rows, tangent_projection
from solvers.steppers import GeodesicEulerMaruyama
from solvers.steppers.batch import BatchRK4, integrate_batch, integrate_sde_batch

# A rotation field x' = x Omega^T (Omega skew) is tangent to the sphere; the exact flow is
# x(t) = x0 expm(t Omega)^T. A second field, its non-linear cousin, pulls toward e_0.
OMEGA = np.array([[0.0, 1.0, -0.5], [-1.0, 0.0, 2.0], [0.5, -2.0, 0.0]])
E0 = np.array([1.0, 0.0, 0.0])


def rotation(x):
    return x @ OMEGA.T


def pull(x):
    return tangent_projection(x, np.broadcast_to(E0, x.shape))


def start(batch=3, n=4, seed=0):
    return normalize_rows(np.random.default_rng(seed).standard_normal((batch, n, 3)))


def orders(errors):
    e = np.asarray(errors)
    return np.log2(e[:-1] / e[1:])


def test_rk4_fixed_step_is_fourth_order_with_unit_norms():
    x0, t = start(), 2.0
    exact = x0 @ expm(t * OMEGA).T
    errors = []
    for steps in (10, 20, 40, 80):
        res = integrate_batch(BatchRK4(rotation), x0, [t], dt=t / steps)
        errors.append(np.max(np.abs(res["states"][-1] - exact)))
        assert np.all(res["steps"] == steps)
        assert np.max(np.abs(np.linalg.norm(res["states"][-1], axis=-1) - 1)) < 1e-14
    assert np.all((orders(errors) > 3.8) & (orders(errors) < 4.2)), orders(errors)


def test_a_step_per_system_equals_each_system_stepped_alone():
    x0, h = start(4), np.array([0.1, 0.2, 0.05, 0.3])
    rk4 = BatchRK4(pull)
    together = rk4.step(x0, h)
    for s in range(4):
        alone = rk4.step(x0[s:s + 1], h[s])
        assert np.max(np.abs(together[s] - alone[0])) < 1e-15


def test_adaptive_error_follows_the_tolerance_and_splitting_changes_nothing():
    x0, t = start(6, seed=3), 3.0
    exact = x0 @ expm(t * OMEGA).T
    errors, steps, tols = [], [], np.array([1e-5, 1e-7, 1e-9, 1e-11])
    for tol in tols:
        res = integrate_batch(BatchRK4(rotation), x0, [1.0, t], tolerance=tol)
        errors.append(np.max(np.abs(res["states"][-1] - exact)))
        steps.append(res["steps"].max())
    # Error per step <= tol (relative to the rms row length 1), and a rotation neither
    # grows nor damps errors: the global error is at most (steps) x tol, up to the
    # estimate's own error (factor 2 allowed). Steps grow like tol^(-1/5) (order 4), so
    # the global error falls like tol^(4/5): fitted exponent within 0.8 +- 0.1.
    assert np.all(np.array(errors) < 2 * np.array(steps) * tols), (errors, steps)
    slope = np.polyfit(np.log(tols), np.log(errors), 1)[0]
    assert 0.7 < slope < 0.9, (slope, errors)
    whole = integrate_batch(BatchRK4(pull), x0, [0.5, t], tolerance=1e-8)
    parts = [integrate_batch(BatchRK4(pull), x0[a:b], [0.5, t], tolerance=1e-8)
             for a, b in ((0, 2), (2, 6))]
    assert np.array_equal(np.concatenate([p["steps"] for p in parts]), whole["steps"])
    assert np.max(np.abs(np.concatenate([p["states"] for p in parts], axis=1)
                         - whole["states"])) < 1e-15


def test_save_times_are_checked():
    with pytest.raises(ValueError):
        integrate_batch(BatchRK4(pull), start(), [1.0, 0.5], dt=0.1)


def _em_paths(x0, t, steps, dw_fine, kappa, drift=pull):
    """Euler-Maruyama with ``steps`` steps, the increments summed from the finest grid."""
    fine = dw_fine.shape[0]
    dw = dw_fine.reshape(steps, fine // steps, *dw_fine.shape[1:]).sum(axis=1)
    em, x, h = GeodesicEulerMaruyama(drift, kappa), x0, t / steps
    for k in range(steps):
        x = em.step(x, h, dw[k])
    return x


def test_euler_maruyama_is_strongly_of_order_one_half_and_geodesic_euler_of_order_one():
    # 400 systems of one token on S^2, a pull toward e_0 plus noise kappa = 4; the
    # reference: 4096 steps driven by the same Brownian increments. Strong errors (mean
    # distance to the reference) at 16 .. 256 steps: fitted slope 0.5 (margin +-0.12: the
    # sample of 400 paths moves the slope by about +-0.03).
    rng = np.random.default_rng(11)
    x0, t, fine = start(400, 1, seed=5), 1.0, 4096
    dw = rng.standard_normal((fine, 400, 1, 3)) * math.sqrt(t / fine)
    ref = _em_paths(x0, t, fine, dw, 4.0)
    counts = np.array([16, 32, 64, 128, 256])
    errs = [np.mean(np.linalg.norm(_em_paths(x0, t, m, dw, 4.0) - ref, axis=-1))
            for m in counts]
    slope = -np.polyfit(np.log(counts), np.log(errs), 1)[0]
    assert 0.38 < slope < 0.62, (slope, errs)
    # No noise: the geodesic Euler method, order 1 against the exact rotation.
    exact = x0 @ expm(t * OMEGA).T
    zero = np.zeros((fine, 400, 1, 3))
    errs = [np.max(np.abs(_em_paths(x0, t, m, zero, math.inf, rotation) - exact))
            for m in counts]
    assert np.all(np.abs(orders(errs) - 1) < 0.1), orders(errs)


def test_sde_batch_draws_each_systems_increments_from_its_own_generator():
    x0, kappa = start(3, 2, seed=2), 3.0
    em = GeodesicEulerMaruyama(pull, kappa)
    res = integrate_sde_batch(em, x0, [0.3, 0.5], 0.1,
                              [np.random.default_rng(s) for s in range(3)])
    # By hand: 3 + 2 steps, increments in step order from rng s.
    for s in range(3):
        g, x = np.random.default_rng(s), x0[s:s + 1]
        for m, length in ((3, 0.3), (2, 0.2)):
            h = length / m
            for _ in range(m):
                dw = g.standard_normal((2, 3)) * math.sqrt(h)
                x = em.step(x, h, dw[None])
        assert np.max(np.abs(res["states"][-1, s] - x[0])) < 1e-15
    assert res["steps"] == 5
