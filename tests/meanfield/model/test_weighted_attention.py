"""Self-attention with general weights against independent references: today's SA model
(Q = K = V = I), the pure flow mapped by e^{tV} (the rescaled form), Theorem 2.1 of the
emergence-of-clusters paper (d = 1, Boolean limit, doubly exponential rate), the sharp
configurations minimising the repulsive energy (tetrahedron, octahedron, regular polygon),
causal masks, sums over heads and a feed-forward layer evaluated by explicit loops."""
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.linalg import expm
from scipy.special import softmax

from meanfield.model import kernels
from meanfield.model.particles import AttentionParticles, interaction_energy, simulate
from meanfield.model.weighted_attention import (
    Head, attention_matrix, check_head, pure_velocity, rescaled_attention,
    rescaled_velocity, sphere_velocity)
from solvers.particles.direct import normalize_rows


def random_head(rng, d, scale=1.0):
    return Head(*(scale * rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3)))


def sphere_model(head, beta, mask="none"):
    """A model for ``simulate`` (RK4 with retraction, step doubling)."""
    return SimpleNamespace(on_sphere=True, name="weighted",
                           velocity=lambda x: sphere_velocity(x, head, beta=beta, mask=mask))


def unit_tokens(seed, n, d):
    return normalize_rows(np.random.default_rng(seed).standard_normal((n, d)))


# --- the attention matrix -----------------------------------------------------------

def test_attention_matrix_is_the_softmax_of_the_logits_and_masks_the_future():
    rng = np.random.default_rng(0)
    x, head = rng.standard_normal((7, 3)), random_head(rng, 3)
    logits = np.array([[2.0 * (head.query @ xi) @ (head.key @ xj) for xj in x] for xi in x])
    ref = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(attention_matrix(x, head, beta=2.0), ref, rtol=1e-13)
    causal = attention_matrix(x, head, beta=2.0, mask="causal")
    assert np.all(causal[np.triu_indices(7, 1)] == 0.0)
    for i in range(7):
        w = np.exp(logits[i, : i + 1])
        np.testing.assert_allclose(causal[i, : i + 1], w / w.sum(), rtol=1e-13)


def test_huge_logits_give_a_finite_row_stochastic_hardmax():
    rng = np.random.default_rng(1)
    x = 60.0 * rng.standard_normal((9, 3))  # beta <Q x, K x> ~ 1e4
    head = Head.identity(3)
    logits = x @ x.T
    assert np.abs(logits).max() > 1e4
    p = attention_matrix(x, head, beta=1.0)
    assert np.all(np.isfinite(p))
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-15)
    # scipy's softmax (its own shift by the maximum) as the reference; a naive exp
    # overflows here
    with np.errstate(over="ignore", invalid="ignore"):
        assert not np.all(np.isfinite(np.exp(logits) / np.exp(logits).sum(1)[:, None]))
    np.testing.assert_allclose(p, softmax(logits, axis=1), rtol=1e-12, atol=1e-300)
    np.testing.assert_array_equal(np.argmax(p, axis=1), np.argmax(logits, axis=1))


def test_bad_heads_and_options_are_refused_naming_what_is_wrong():
    with pytest.raises(ValueError, match="head key must be a 3 x 3"):
        check_head(Head(np.eye(3), np.eye(2), np.eye(3)), 3)
    with pytest.raises(ValueError, match="head value must be finite"):
        check_head(Head(np.eye(2), np.eye(2), np.array([[np.nan, 0], [0, 1]])), 2)
    x = np.ones((3, 2))
    with pytest.raises(ValueError, match="model.beta must be finite and >= 0"):
        attention_matrix(x, Head.identity(2), beta=-1.0)
    with pytest.raises(ValueError, match="mask must be one of none, causal"):
        attention_matrix(x, Head.identity(2), mask="future")
    with pytest.raises(ValueError, match="activation must be one of relu, tanh"):
        pure_velocity(x, Head.identity(2), feedforward=(np.eye(2), "gelu"))
    with pytest.raises(ValueError, match="needs a single value matrix"):
        rescaled_velocity(x, 0.0, [Head.identity(2), Head.identity(2)])


# --- 1. Q = K = V = I on the sphere is the SA model -----------------------------------

@pytest.mark.parametrize("n, d, beta", [(5, 2, 1.0), (40, 3, 4.0), (60, 8, 0.5), (7, 3, 0.0),
                                        (30, 16, 9.0)])
def test_identity_weights_on_the_sphere_are_the_sa_velocity(n, d, beta):
    x = unit_tokens(n + d, n, d)
    np.testing.assert_allclose(sphere_velocity(x, Head.identity(d), beta=beta),
                               AttentionParticles(beta).velocity(x), rtol=0, atol=1e-13)


# --- the rescaled dynamics --------------------------------------------------------------

def test_rescaled_attention_equals_the_attention_of_e_tv_z():
    rng = np.random.default_rng(2)
    z, head = rng.standard_normal((8, 3)), random_head(rng, 3)
    x = z @ expm(0.7 * head.value).T
    np.testing.assert_allclose(rescaled_attention(z, 0.7, head, beta=1.5),
                               attention_matrix(x, head, beta=1.5), rtol=1e-11, atol=1e-15)


def test_the_rescaled_flow_mapped_by_e_tv_is_the_pure_flow():
    rng = np.random.default_rng(3)
    z0, head = rng.standard_normal((6, 2)), random_head(rng, 2)
    n, d, t_end = 6, 2, 1.5
    kw = dict(method="DOP853", rtol=1e-12, atol=1e-13)
    pure = solve_ivp(lambda t, y: pure_velocity(y.reshape(n, d), head).ravel(),
                     (0, t_end), z0.ravel(), **kw)
    resc = solve_ivp(lambda t, y: rescaled_velocity(y.reshape(n, d), t, head).ravel(),
                     (0, t_end), z0.ravel(), **kw)
    x_end = resc.y[:, -1].reshape(n, d) @ expm(t_end * head.value).T
    np.testing.assert_allclose(pure.y[:, -1].reshape(n, d), x_end, rtol=1e-9, atol=1e-10)


def test_the_rescaled_velocity_stays_finite_where_e_tv_is_near_the_double_range():
    rng = np.random.default_rng(4)
    z = rng.standard_normal((10, 3))
    v = rescaled_velocity(z, 700.0, Head.identity(3))  # |tV| = 700: x ~ e^700 z
    assert np.all(np.isfinite(v))
    # logits e^1400 <z_i, z_j>: each row attends to its maximiser alone
    p = rescaled_attention(z, 700.0, Head.identity(3))
    np.testing.assert_array_equal(p, np.eye(10)[np.argmax(z @ z.T, axis=1)])
    head = random_head(rng, 3)
    t = 700.0 / np.linalg.norm(head.value, 2)
    assert np.all(np.isfinite(rescaled_velocity(z, t, head)))


# --- 2. Theorem 2.1: d = 1, Q = K = V = 1 -----------------------------------------------

def test_one_dimensional_attention_becomes_boolean_doubly_exponentially():
    n = 40
    z0 = np.random.default_rng(3).standard_normal(n)
    head = Head.identity(1)
    times = np.linspace(0.0, 6.0, 61)
    sol = solve_ivp(lambda t, y: rescaled_velocity(y[:, None], t, head)[:, 0], (0, 6),
                    z0, method="DOP853", rtol=1e-12, atol=1e-14, t_eval=times)
    assert sol.status == 0
    z_end = sol.y[:, -1]
    top, bottom = int(np.argmax(z0)), int(np.argmin(z0))
    # the order of tokens on the line is kept: the extremes stay the extremes
    assert np.argmax(z_end) == top and np.argmin(z_end) == bottom
    leader = np.where(z_end > 0, top, bottom)
    target = np.eye(n)[leader]  # P*: columns of the largest and the smallest token only
    dist = []
    for k, t in enumerate(times):
        p = rescaled_attention(sol.y[:, k][:, None], t, head)
        dist.append(np.max(np.sum(np.abs(p - target), axis=1)) / 2)  # max_i (1 - P_i,leader)
    dist = np.array(dist)
    assert np.all(np.diff(dist[10:]) < 0) and dist[-1] < 1e-100
    np.testing.assert_allclose(rescaled_attention(z_end[:, None], 6.0, head), target,
                               atol=1e-100)
    # 1 - P_i,leader ~ exp(-x_i (x_lead - x_j)) with x = e^t z: x_i grows like e^t while
    # the gaps x_lead - x_j settle, so log(-log dist) ~ t + c (slope 1)
    window = times >= 3.0
    y = np.log(-np.log(dist[window]))
    slope, intercept = np.polyfit(times[window], y, 1)
    resid = y - (slope * times[window] + intercept)
    r2 = 1 - np.sum(resid**2) / np.sum((y - y.mean())**2)
    assert r2 > 0.9995 and abs(slope - 1.0) < 0.05, (slope, r2)


# --- 4. the repulsive case V = -I ---------------------------------------------------------

def repulsive_run(seed, n, d, beta, t_end):
    x0 = unit_tokens(seed, n, d)
    run = simulate(sphere_model(Head.identity(d, -1.0), beta), x0,
                   np.linspace(0, t_end, 51)[1:], dt=None, tolerance=1e-12)
    energy = np.array([interaction_energy(x, beta) for x in run.positions])
    # dE/dt = -sum_i n^2 |grad_i E|^2 / Z_i <= 0; the energies are exact to ~1e-16
    assert np.max(np.diff(energy)) < 1e-14
    assert energy[-1] < energy[0]
    x = run.positions[-1]
    return (x @ x.T)[~np.eye(n, dtype=bool)], x, energy[-1]


def polytope_energy(beta, cosines):
    """``E_beta`` of n tokens with the given pair cosines (each token sees the same ones),
    less the uniform measure's: (1/2beta)(1/n^2) sum_ij e^{beta <x_i, x_j>} - uniform."""
    n = len(cosines) + 1
    pairs = n * (np.exp(beta) + np.sum(np.exp(beta * np.asarray(cosines)))) / n**2
    return (pairs - np.exp(kernels.log_uniform_pair_integral(3, beta))) / (2 * beta)


@pytest.mark.parametrize("seed", [0, 1])
def test_repulsive_tokens_on_s2_end_on_a_tetrahedron_and_an_octahedron(seed):
    beta = 2.0
    cos4, _, e4 = repulsive_run(seed, 4, 3, beta, 100.0)
    np.testing.assert_allclose(cos4, -1.0 / 3.0, atol=1e-6)
    np.testing.assert_allclose(e4, polytope_energy(beta, [-1 / 3] * 3), rtol=1e-9)
    cos6, _, e6 = repulsive_run(seed, 6, 3, beta, 100.0)
    assert np.max(np.minimum(np.abs(cos6), np.abs(cos6 + 1.0))) < 1e-6
    assert np.sum(np.abs(cos6 + 1.0) < 1e-6) == 6  # three antipodal pairs (both orders)
    np.testing.assert_allclose(e6, polytope_energy(beta, [0, 0, 0, 0, -1]), rtol=1e-6)


@pytest.mark.parametrize("n", [5, 7])
def test_repulsive_tokens_on_s1_end_equally_spaced(n):
    _, x, _ = repulsive_run(n, n, 2, 1.0, 120.0)
    angles = np.sort(np.arctan2(x[:, 1], x[:, 0]))
    gaps = np.diff(np.r_[angles, angles[0] + 2 * np.pi])
    np.testing.assert_allclose(gaps, 2 * np.pi / n, atol=1e-6)


def test_attractive_weights_raise_the_energy():
    # the sign check of the repulsive test: V = +I is the ascent (SA clusters)
    x0, beta = unit_tokens(9, 6, 3), 1.0
    run = simulate(sphere_model(Head.identity(3), beta), x0, [1.0, 2.0], dt=None,
                   tolerance=1e-10)
    assert np.all(np.diff([interaction_energy(x, beta) for x in run.positions]) > 0)


# --- 5. causal mask on the sphere ---------------------------------------------------------

def test_causal_tokens_keep_the_first_one_fixed_and_converge_to_it():
    n, d, beta = 8, 3, 1.0
    x0 = unit_tokens(5, n, d)
    v0 = sphere_velocity(x0, Head.identity(d), beta=beta, mask="causal")
    assert np.max(np.abs(v0[0])) < 1e-15 and np.min(np.linalg.norm(v0[1:], axis=1)) > 1e-3
    run = simulate(sphere_model(Head.identity(d), beta, "causal"), x0, [10.0, 40.0],
                   dt=None, tolerance=1e-12)
    np.testing.assert_allclose(run.positions[-1][0], x0[0], atol=1e-14)
    assert np.max(1.0 - run.positions[-1] @ x0[0]) < 1e-8


# --- 6. several heads and the feed-forward layer -----------------------------------------

def test_several_heads_add_up():
    rng = np.random.default_rng(6)
    heads = [random_head(rng, 4) for _ in range(3)]
    x = rng.standard_normal((12, 4))
    for field, xx in ((pure_velocity, x), (sphere_velocity, normalize_rows(x))):
        for mask in ("none", "causal"):
            total = sum(field(xx, h, beta=1.3, mask=mask) for h in heads)
            np.testing.assert_allclose(field(xx, heads, beta=1.3, mask=mask), total,
                                       rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_the_feedforward_layer_matches_a_direct_loop(activation):
    rng = np.random.default_rng(7)
    heads = [random_head(rng, 3) for _ in range(2)]
    x = rng.standard_normal((6, 3))
    w = np.eye(3) if activation == "relu" else rng.standard_normal((3, 3))
    sigma = (lambda a: max(a, 0.0)) if activation == "relu" else np.tanh
    ref = np.zeros((6, 3))
    for i in range(6):
        a = np.zeros(3)
        for h in heads:
            weights = [np.exp((h.query @ x[i]) @ (h.key @ x[j])) for j in range(6)]
            a += sum(wj * (h.value @ x[j]) for j, wj in enumerate(weights)) / sum(weights)
        ref[i] = w @ np.array([sigma(ak) for ak in a])
    out = pure_velocity(x, heads, feedforward=(w, activation))
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-14)
    if activation == "relu":
        assert np.any(ref == 0.0) and np.any(ref > 0.0)  # both branches of ReLU taken
