"""Kernel sums on S^1 relative to each row by Chebyshev interpolation on arcs
(``solvers.particles.arcs``), against the direct kernel (an independent method) and the
interpolation theorem its bound comes from."""
from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from solvers.particles import arcs, fast
from solvers.particles.direct import exp_kernel_sums, normalize_rows


def on_circle(theta: np.ndarray) -> np.ndarray:
    return np.column_stack([np.cos(theta), np.sin(theta)])


def clustered(n: int, seed: int) -> np.ndarray:
    """Two tight clusters and a tenth of the tokens spread in between."""
    rng = np.random.default_rng(seed)
    k = int(0.45 * n)
    return on_circle(np.concatenate([rng.normal(0.3, 0.03, k), rng.normal(2.5, 0.03, k),
                                     rng.uniform(0, 2 * np.pi, n - 2 * k)]))


def row_errors(got, want):
    """Max over rows of |z - Z| / Z and of the components of s, relative to Z."""
    (s, z, shift), (sd, zd, hd) = got, want
    scale = np.exp(shift - hd)  # both to the direct kernel's shift
    ez = np.abs(z * scale - zd) / zd
    es = np.abs(s * scale[:, None] - sd) / zd[:, None]
    return float(ez.max()), float(es.max())


@pytest.mark.parametrize("beta", [0.5, 9.0, 100.0, 1000.0])
@pytest.mark.parametrize("tolerance", [1e-6, 1e-10, 1e-12])
def test_every_row_within_its_tolerance(beta, tolerance):
    keys = clustered(8000, 1)
    rows = np.concatenate([on_circle(np.linspace(0, 2 * np.pi, 300, endpoint=False)),
                           keys[::97]])
    plan = arcs.arc_plan(beta, tolerance)
    got = arcs.arc_kernel_sums(rows, keys, plan)
    ez, es = row_errors(got, exp_kernel_sums(rows, keys, beta))
    # The direct kernel rounds the exponent beta <q, y> too: ~ beta eps relative; the
    # bound is for the exact sums, so that rounding is the allowance beside it.
    allowance = 64 * beta * np.finfo(float).eps
    assert ez <= tolerance + allowance and es <= tolerance + allowance


@pytest.mark.parametrize("beta,nodes,arcs_", [(9.0, 8, 10), (9.0, 12, 6), (100.0, 16, 40),
                                              (0.5, 6, 1)])
def test_the_bound_is_one(beta, nodes, arcs_):
    """The interpolation error of one arc's kernel, relative to its smallest value on the
    arc, stays under ``interpolation_bound`` (Trefethen's Thm 8.2 on the ellipse), and
    the bound is not vacuous (within 1e4 of what happens)."""
    h = math.pi / arcs_
    t, to_weights = arcs.chebyshev_nodes(nodes)
    tau = np.linspace(-1, 1, 2001)
    worst = 0.0
    for theta in np.linspace(-math.pi, math.pi, 73):  # the row, relative to the centre
        for factor in (np.ones_like, np.cos, np.sin):
            def f(u, theta=theta, factor=factor):
                return np.exp(beta * (np.cos(theta - h * u) - 1)) * factor(h * u + 0.4)

            # The interpolant through the nodes, by its Chebyshev coefficients a = C^T f
            # (sum_l f(t_l) W_l = sum_k (C^T f)_k mu_k).
            cheb = np.polynomial.chebyshev.chebvander(tau, nodes - 1) @ (to_weights.T @ f(t))
            floor = np.exp(beta * (np.cos(theta - h * tau) - 1)).min()
            worst = max(worst, np.abs(cheb - f(tau)).max() / floor)
    bound = arcs.interpolation_bound(beta, h, nodes)
    assert worst <= bound
    assert bound <= 1e4 * max(worst, 1e-16)


def test_moments_give_the_lagrange_weights():
    """``W = C mu`` equals the sum of the Lagrange basis at the keys (barycentric)."""
    nodes = 11
    t, to_weights = arcs.chebyshev_nodes(nodes)
    tau = np.random.default_rng(3).uniform(-1, 1, 50)
    mu = np.polynomial.chebyshev.chebvander(tau, nodes - 1).sum(axis=0)
    w = (-1.0) ** np.arange(nodes)
    w[0] *= 0.5
    w[-1] *= 0.5
    terms = w[None, :] / (tau[:, None] - t[None, :])
    lagrange = (terms / terms.sum(axis=1, keepdims=True)).sum(axis=0)
    np.testing.assert_allclose(to_weights @ mu, lagrange, rtol=0, atol=1e-12)


def test_awkward_keys_and_rows():
    """Keys on arc boundaries, on nodes, at 0 and just below 2 pi, duplicates; rows on
    keys, opposite them, one key only."""
    beta, tolerance = 9.0, 1e-10
    plan = arcs.arc_plan(beta, tolerance)
    h = plan.half_width
    t, _ = arcs.chebyshev_nodes(plan.nodes)
    theta = np.concatenate([2 * h * np.arange(plan.arcs), h + h * t, [0.0, 2 * np.pi - 1e-15,
                                                                      np.pi, np.pi, 1.0]])
    keys = on_circle(theta)
    rows = on_circle(np.concatenate([theta, theta + np.pi]))
    ez, es = row_errors(arcs.arc_kernel_sums(rows, keys, plan),
                        exp_kernel_sums(rows, keys, beta))
    assert max(ez, es) <= tolerance
    one = on_circle(np.array([2.0]))
    ez, es = row_errors(arcs.arc_kernel_sums(rows, one, plan),
                        exp_kernel_sums(rows, one, beta))
    assert max(ez, es) <= tolerance


def test_the_same_numbers_with_any_thread_count():
    keys, plan = clustered(200_000, 4), arcs.arc_plan(9.0, 1e-10)  # 4 key chunks
    rows = keys[::50]
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = arcs.arc_kernel_sums(rows, keys, plan)
        numba.set_num_threads(max(2, before))
        many = arcs.arc_kernel_sums(rows, keys, plan)
    finally:
        numba.set_num_threads(before)
    for a, b in zip(one, many):
        np.testing.assert_array_equal(a, b)


def test_plans():
    plan = arcs.arc_plan(9.0, 1e-10)
    assert plan.bound <= 1e-10 / 4 and plan.nodes * plan.arcs < 1000
    assert arcs.arc_plan(1e8, 1e-10) is None  # more arcs than MAX_ARCS: direct instead
    for beta, tolerance in [(-1.0, 1e-10), (math.inf, 1e-10), (1.0, 1e-13), (1.0, 1.0)]:
        with pytest.raises(ValueError, match="arc sums need"):
            arcs.arc_plan(beta, tolerance)


def test_recomputed_rows_cost_no_direct_kernel(monkeypatch):
    """SA sums of a clustered S^1 configuration (rows far from the clusters recomputed)
    take the arcs, not rows x n of the direct kernel; the results are within the row
    accuracy of the direct kernel's."""
    from meanfield.model import kernels

    x = clustered(100_000, 5)
    want = exp_kernel_sums(x[::40], x, 9.0)

    def refuse(*args, **kwargs):
        raise AssertionError("the direct kernel was called")

    recomputed = []

    def counting(queries, keys, plan):
        recomputed.append(queries.shape[0])
        return arc_kernel_sums(queries, keys, plan)

    arc_kernel_sums = arcs.arc_kernel_sums
    monkeypatch.setattr(fast, "exp_kernel_sums", refuse)
    monkeypatch.setattr(arcs, "arc_kernel_sums", counting)
    s, z, _ = kernels.kernel_sums(x, x, 9.0, method="fourier", accuracy=1e-10,
                                  relative_rows=True)
    assert sum(recomputed) > 1000  # thousands of rows were recomputed
    sa, sd = s[::40] / z[::40, None], want[0] / want[1][:, None]
    assert np.abs(sa - sd).max() <= 2e-10


def test_small_key_sets_still_take_the_direct_kernel():
    """Where rows x n is cheaper than the arcs (few keys), ``relative_sums`` is the direct
    kernel's result exactly."""
    keys = clustered(300, 6)
    rows = normalize_rows(keys[:40])
    got = fast.relative_sums(rows, keys, 9.0, 1e-10)
    want = exp_kernel_sums(rows, normalize_rows(keys), 9.0)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
