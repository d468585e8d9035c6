"""Batches and blocks of the general-weight attention (meanfield.model.weighted_attention):
a batch (B, n, d) gives each system's own evaluation (the per-system loop is the
reference), the velocities in blocks of rows equal the attention matrix times the values
(explicit softmax), and no n x n array is formed for a velocity (tracemalloc)."""
import tracemalloc

import numpy as np
import pytest
from scipy.special import softmax

from meanfield.model import weighted_attention as W
from meanfield.model.weighted_attention import (
    Head, attention_matrix, attention_term, pure_velocity, rescaled_attention,
    rescaled_velocity, sphere_velocity)
from solvers.particles.direct import normalize_rows


def random_head(rng, d, scale=1.0):
    return Head(*(scale * rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3)))


def assert_round_off(a, b, rtol=1e-13):
    """Equal up to a few ulps of the largest entry."""
    scale = max(1.0, float(np.max(np.abs(b))))
    assert np.max(np.abs(np.asarray(a) - np.asarray(b))) <= rtol * scale


# --- a batch is the loop over its systems ------------------------------------------------

@pytest.mark.parametrize("mask", ["none", "causal"])
@pytest.mark.parametrize("beta", [0.0, 1.0, 3.0])
def test_every_function_of_a_batch_is_the_loop_over_its_systems(mask, beta):
    rng = np.random.default_rng(11)
    b, n, d = 5, 9, 4
    x = rng.standard_normal((b, n, d))
    heads = [random_head(rng, d) for _ in range(3)]
    ff = (rng.standard_normal((d, d)), "tanh")
    kw = dict(beta=beta, mask=mask)
    calls = {
        "attention_matrix": lambda y: attention_matrix(y, heads[0], beta, mask),
        "attention_term": lambda y: attention_term(y, heads, **kw),
        "pure_velocity": lambda y: pure_velocity(y, heads, feedforward=ff, **kw),
        "sphere_velocity": lambda y: sphere_velocity(normalize_rows(y), heads[:2], **kw),
        "rescaled_attention": lambda y: rescaled_attention(y, 0.8, heads[1], **kw),
        "rescaled_velocity": lambda y: rescaled_velocity(y, 0.8, heads[1], **kw),
    }
    for name, call in calls.items():
        batch = call(x)
        loop = np.stack([call(x[s]) for s in range(b)])
        assert batch.shape == loop.shape, name
        assert_round_off(batch, loop)


def test_a_batch_at_a_huge_rescaled_scale_is_the_loop_and_stays_finite():
    # t = 700 with V = I: logits e^1400 <z_i, z_j> (the log path of the weights)
    rng = np.random.default_rng(12)
    z = rng.standard_normal((3, 10, 3))
    head = Head.identity(3)
    for mask in ("none", "causal"):
        p = rescaled_attention(z, 700.0, head, mask=mask)
        v = rescaled_velocity(z, 700.0, head, mask=mask)
        assert np.all(np.isfinite(v))
        for s in range(3):
            np.testing.assert_array_equal(p[s], rescaled_attention(z[s], 700.0, head,
                                                                   mask=mask))
            assert_round_off(v[s], rescaled_velocity(z[s], 700.0, head, mask=mask))
    # without mask each row attends to its maximiser alone: v_i = z_{argmax} - z_i
    g = z @ z.swapaxes(1, 2)
    hard = np.take_along_axis(z, np.argmax(g, axis=2)[..., None], axis=1)
    assert_round_off(rescaled_velocity(z, 700.0, head), hard - z)


def test_bad_batches_are_refused():
    with pytest.raises(ValueError, match=r"tokens must be an \(n, d\) array or a batch"):
        pure_velocity(np.ones((2, 2, 3, 3)), Head.identity(3))
    with pytest.raises(ValueError, match="head query must be a 3 x 3"):
        pure_velocity(np.ones((2, 4, 3)), Head.identity(2))


# --- the velocity in blocks of rows ----------------------------------------------------

def explicit_term(x, head, beta, mask):
    """``softmax(beta x Q^T K x^T) x V^T`` with scipy's softmax, one system."""
    logits = beta * (x @ head.query.T) @ (x @ head.key.T).T
    if mask == "causal":
        logits[np.triu_indices(len(x), 1)] = -np.inf
    return softmax(logits, axis=1) @ (x @ head.value.T)


@pytest.mark.parametrize("block", [1, 7 * 23, 2**20])   # rows per block: 1, 7, all
@pytest.mark.parametrize("mask", ["none", "causal"])
def test_blocks_of_rows_give_the_attention_matrix_times_the_values(monkeypatch, block, mask):
    monkeypatch.setattr(W, "BLOCK", block)
    rng = np.random.default_rng(13)
    x = rng.standard_normal((23, 5))          # 23 rows: the last block of 7 is short
    head = random_head(rng, 5, scale=2.0)
    ref = explicit_term(x, head, 1.5, mask)
    assert_round_off(attention_term(x, head, beta=1.5, mask=mask), ref, 1e-12)
    batch = rng.standard_normal((3, 23, 5))   # a block of a batch: rows of all systems
    monkeypatch.setattr(W, "BLOCK", 3 * block)
    got = attention_term(batch, head, beta=1.5, mask=mask)
    for s in range(3):
        assert_round_off(got[s], explicit_term(batch[s], head, 1.5, mask), 1e-12)
    # the rescaled velocity in blocks: sum_j P_ij V (z_j - z_i) with P from its matrix
    p = rescaled_attention(x, 0.6, head, beta=1.5, mask=mask)
    assert_round_off(rescaled_velocity(x, 0.6, head, beta=1.5, mask=mask),
                     (p @ x - x) @ head.value.T, 1e-12)


def test_a_velocity_forms_no_n_by_n_array():
    # n = 2048: an n x n array of doubles is 32 MiB; a block holds BLOCK = 2^20 weights
    # (8 MiB). The peak of the traced numpy allocations stays below half of n x n.
    rng = np.random.default_rng(14)
    n, d = 2048, 8
    x = rng.standard_normal((n, d))
    head = random_head(rng, d)
    tracemalloc.start()
    try:
        for mask in ("none", "causal"):
            pure_velocity(x, head, mask=mask)
            rescaled_velocity(x, 0.5, head, mask=mask)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert W.BLOCK * 8 <= peak < n * n * 8 / 2, peak
