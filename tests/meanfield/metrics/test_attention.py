"""Attention diagnostics against independent references: the distance to the Boolean
matrices against a brute-force minimum over all of them, the rank against matrices of known
singular values, and the leaders of Theorem 2.1 (d = 1: the smallest and largest token)."""
import itertools

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from meanfield.metrics import clusters
from meanfield.metrics.attention import (
    boolean_distance, leader_count, leaders, nearest_boolean, numerical_rank)
from meanfield.model.weighted_attention import Head, rescaled_attention, rescaled_velocity


def random_stochastic(rng, shape, sharpness=1.0):
    w = np.exp(sharpness * rng.standard_normal(shape))
    return w / w.sum(axis=-1, keepdims=True)


def test_nearest_boolean_and_distance_agree_with_a_brute_force_minimum():
    """min over all 3^3 Boolean matrices B of max_i TV(P_i, B_i) (TV = half l1)."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        p = random_stochastic(rng, (3, 3), sharpness=2.0)
        best, best_b = np.inf, None
        for cols in itertools.product(range(3), repeat=3):
            b = np.eye(3)[list(cols)]
            d = np.max(np.abs(p - b).sum(axis=1)) / 2
            if d < best:
                best, best_b = d, b
        assert boolean_distance(p) == pytest.approx(best, rel=1e-14)
        # the worst row decides the distance; the other rows of the minimiser may be any
        # one-hot within it, so compare the rows' own argmax choice with the row minima
        nb = nearest_boolean(p)
        row_tv = np.abs(p - nb).sum(axis=1) / 2
        for i in range(3):
            assert row_tv[i] == pytest.approx(min(np.abs(p[i] - e).sum() / 2
                                                  for e in np.eye(3)), rel=1e-14)
        assert np.max(row_tv) == pytest.approx(best, rel=1e-14)
        assert best_b is not None


def test_uniform_rows_are_at_distance_one_minus_one_over_n_and_boolean_at_zero():
    n = 7
    assert boolean_distance(np.full((n, n), 1 / n)) == pytest.approx(1 - 1 / n, rel=1e-14)
    b = np.eye(n)[[0, 0, 3, 3, 3, 6, 6]]
    assert boolean_distance(b) == 0.0
    np.testing.assert_array_equal(nearest_boolean(b), b)
    np.testing.assert_array_equal(leaders(b), [0, 3, 6])


def test_tiny_distances_keep_their_digits():
    """The doubly exponential approach of Theorem 2.1 reaches 1e-100 and below: 1 - max
    would round it to 0."""
    p = np.eye(4)[[1, 1, 2, 2]]
    p[0, 0], p[0, 1] = 3e-200, 1.0  # row sums 1 + 3e-200 == 1 in doubles
    p[2, 3] = 1e-150
    assert boolean_distance(p) == pytest.approx(1e-150, rel=1e-14)


def test_a_stack_gives_one_value_per_matrix():
    rng = np.random.default_rng(1)
    p = random_stochastic(rng, (5, 2, 6, 6), sharpness=3.0)
    dist = boolean_distance(p)
    assert dist.shape == (5, 2)
    for idx in np.ndindex(5, 2):
        assert dist[idx] == boolean_distance(p[idx])
        np.testing.assert_array_equal(nearest_boolean(p)[idx], nearest_boolean(p[idx]))
        assert leader_count(p)[idx] == leaders(p[idx]).size
    assert numerical_rank(p).shape == (5, 2)


def test_numerical_rank_counts_the_singular_values_above_the_relative_tolerance():
    rng = np.random.default_rng(2)
    u, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    v, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    s = np.array([3.0, 1.0, 1e-3, 1e-5, 1e-9, 0, 0, 0])
    m = u @ np.diag(s) @ v.T
    assert numerical_rank(m, 1e-6) == 4  # 1e-5 / 3 > 1e-6 > 1e-9 / 3
    assert numerical_rank(m, 1e-3) == 2  # 1e-3 / 3 < 1e-3
    assert numerical_rank(m, 1e-12) == 5
    assert numerical_rank(np.zeros((3, 3))) == 0
    np.testing.assert_array_equal(numerical_rank(np.stack([m, np.eye(8)]), 1e-6), [4, 8])


def test_the_clusters_attention_rank_is_the_numerical_rank_of_its_matrix():
    x = np.random.default_rng(3).standard_normal((30, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    a = clusters.attention_matrix(x, 4.0, True)
    s = np.linalg.svd(a, compute_uv=False)
    expected = int(np.count_nonzero(s > 1e-6 * s[0]))
    assert clusters.attention_rank(x, 4.0, True, 1e-6) == expected == numerical_rank(a)


def test_leaders_are_the_columns_of_the_nearest_boolean_once_within_one_half():
    rng = np.random.default_rng(4)
    for _ in range(50):
        p = random_stochastic(rng, (9, 9), sharpness=6.0)
        cols = np.flatnonzero(nearest_boolean(p).sum(axis=0) > 0)
        lead = leaders(p)
        assert set(lead) <= set(cols)  # P_ij > 1/2 makes j row i's argmax
        if boolean_distance(p) < 0.5:
            np.testing.assert_array_equal(lead, cols)
    # a lower threshold also counts shared attention: 0.4 and 0.6 of one row
    p = np.eye(3)[[0, 0, 2]].astype(float)
    p[1] = [0.6, 0.4, 0.0]
    np.testing.assert_array_equal(leaders(p, threshold=0.3), [0, 1, 2])
    np.testing.assert_array_equal(leaders(p), [0, 2])


def test_theorem_2_1_the_leaders_are_the_smallest_and_the_largest_token():
    """d = 1, Q = K = V = 1, n = 40: P(t) tends to the Boolean matrix whose non-zero
    columns are the extreme tokens, of rank 2 (one of each sign among the tokens)."""
    n = 40
    z0 = np.random.default_rng(3).standard_normal(n)
    head = Head.identity(1)
    times = np.array([0.0, 2.0, 4.0, 6.0])
    sol = solve_ivp(lambda t, y: rescaled_velocity(y[:, None], t, head)[:, 0], (0, 6),
                    z0, method="DOP853", rtol=1e-12, atol=1e-14, t_eval=times)
    assert sol.status == 0
    p = np.stack([rescaled_attention(sol.y[:, k][:, None], t, head)
                  for k, t in enumerate(times)])
    dist = boolean_distance(p)
    assert np.all(np.diff(dist) < 0) and dist[-1] < 1e-100
    np.testing.assert_array_equal(leaders(p[-1]), sorted([np.argmin(z0), np.argmax(z0)]))
    assert numerical_rank(p[-1]) == 2


@pytest.mark.parametrize("bad, match", [
    (np.ones((2, 3)) / 3, "shape"),
    (np.array([[1.0, np.nan], [0.5, 0.5]]), "finite"),
    (np.array([[1.5, -0.5], [0.5, 0.5]]), "non-negative"),
    (np.array([[0.7, 0.7], [0.5, 0.5]]), "row-stochastic"),
])
def test_bad_matrices_are_refused_naming_what_is_wrong(bad, match):
    for f in (nearest_boolean, boolean_distance, leaders, leader_count):
        with pytest.raises(ValueError, match=match):
            f(bad)


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="tolerance"):
        numerical_rank(np.eye(2), 0.0)
    with pytest.raises(ValueError, match="tolerance"):
        numerical_rank(np.eye(2), 1.5)
    with pytest.raises(ValueError, match="threshold"):
        leaders(np.eye(2), 1.0)
    with pytest.raises(ValueError, match="leader_count"):
        leaders(np.stack([np.eye(2)] * 2))
