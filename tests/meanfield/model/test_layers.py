"""Discrete layers (``meanfield.model.layers``, docs/weights.md section 7): the rescaled
layers of [GLPR23, Remark 4] with V = I keep every token in the convex hull of the
previous layer (the weights solved and checked at every layer), their attention is that
of the unscaled tokens x = R^k z, and the layers converge to the ODE at order 1 as
tau -> 0 (the pure rescaled flow, Post-LN on S^2 and Pre-LN)."""
from __future__ import annotations

import numpy as np
import pytest

import meanfield
from meanfield.model.layers import LayerForm, LayerRescaledParticles, euler_layer
from meanfield.model.particles import AttentionParticles
from meanfield.model.weighted_attention import Head, attention_matrix

TAUS = (0.1, 0.05, 0.025, 0.0125)
# V = I, Q = K = I, n = 12 Gaussian tokens in R^2: the rescaled flow z = e^{-t} x and its
# layers z^[k] = (1 + tau)^{-k} x^[k]
PURE = {"domain": {"geometry": "euclidean", "dim": 2},
        "initial": {"kind": "gaussian", "covariance": 1.0},
        "particles": {"n": 12, "seed": 0, "rescaled": True},
        "time": {"t_final": 5.0, "save_every": 0.5, "tolerance": 1e-13}}


def layered(cfg: dict, tau: float, **options) -> dict:
    return {**cfg, "particles": {**cfg["particles"], "integrator": "layers",
                                 "layer_step": tau, **options}}


# --- acceptance 3: the hull inclusion at every layer ----------------------------------------

def test_every_rescaled_layer_is_a_convex_combination_of_the_previous():
    tau = 0.1
    cfg = layered({**PURE, "time": {"t_final": 3.0, "save_every": tau},
                   "weights": {"key": {"kind": "symmetric", "eigenvalues": [0.8, 1.25],
                                       "seed": 1}}}, tau, save_attention=True)
    ds = meanfield.particles(cfg)
    z, p = ds.position.values, ds.attention.values  # a save at every layer
    assert z.shape[0] == 31
    eye = np.eye(z.shape[1])
    worst = 0.0
    for k in range(z.shape[0] - 1):
        # the weights of z^[k+1] over z^[k]: (delta_ij + tau P_ij) / (1 + tau), P the saved
        # attention of layer k ([GLPR23, Remark 4], V = I)
        w = (eye + tau * p[k]) / (1 + tau)
        assert np.all(w >= 0)
        np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=0, atol=1e-15)
        gap = np.max(np.abs(w @ z[k] - z[k + 1])) / np.max(np.abs(z[k]))
        worst = max(worst, gap)
    assert worst < 1e-14, worst  # round-off: measured 4.1e-16 (weight sums to 3.3e-16)


def test_layer_attention_is_that_of_the_unscaled_tokens():
    """P^[k] of the rescaled layers (formed as e^{s_k} z B_k z^T without R^k) equals the
    softmax of <Q x_i, K x_j> at x = R^k z, formed directly while it is a double."""
    rng = np.random.default_rng(3)
    d, tau = 3, 0.2
    head = Head(rng.standard_normal((d, d)) / 2, rng.standard_normal((d, d)) / 2,
                np.diag([1.0, 0.5, -0.3]) + 0.1 * rng.standard_normal((d, d)))
    model = LayerRescaledParticles(head, 1.0, "none", tau)
    z = rng.standard_normal((9, d))
    r = np.eye(d) + tau * head.value
    for k in (0, 1, 7, 20):
        x = z @ np.linalg.matrix_power(r, k).T
        np.testing.assert_allclose(model.attention(z, k * tau)[0],
                                   attention_matrix(x, head), rtol=0, atol=1e-12)
    # one layer is R^{-1} of the unscaled layer x + tau sum_j P_ij V x_j at k = 7
    x = z @ np.linalg.matrix_power(r, 7).T
    step = x + tau * attention_matrix(x, head) @ x @ head.value.T
    np.testing.assert_allclose(model.layer(z, 7),
                               step @ np.linalg.inv(np.linalg.matrix_power(r, 8)).T,
                               rtol=0, atol=1e-12)


def test_singular_r_is_refused():
    with pytest.raises(ValueError, match="singular"):
        LayerForm(Head.identity(2, value=-10.0), 0.1)


def test_post_ln_layer_is_layer_normalization_of_the_residual_stream():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((7, 3))
    x /= np.linalg.norm(x, axis=1)[:, None]
    model = AttentionParticles(2.0, method="direct")
    w = np.exp(2.0 * x @ x.T)
    y = x + 0.3 * (w / w.sum(axis=1)[:, None]) @ x  # x + tau A, A not projected
    np.testing.assert_allclose(euler_layer(model, x, 0.3, 0),
                               y / np.linalg.norm(y, axis=1)[:, None], rtol=0, atol=1e-14)


# --- acceptance 3: the layers converge to the ODE at order 1 --------------------------------

def _order(cfg: dict) -> tuple[float, list[float]]:
    ode = meanfield.particles(cfg).position.values[-1]
    errors = [float(np.max(np.abs(meanfield.particles(layered(cfg, tau)).position.values[-1]
                                  - ode))) for tau in TAUS]
    return float(np.polyfit(np.log(TAUS), np.log(errors), 1)[0]), errors


def test_rescaled_layers_converge_to_the_ode_at_order_one():
    order, errors = _order(PURE)
    # measured: 0.0256, 0.0124, 0.00612, 0.00304 at t = 5; fitted order 1.025
    assert 0.9 <= order <= 1.1, (order, errors)


@pytest.mark.parametrize("architecture", ["post-ln", "pre-ln"])
def test_sphere_layers_converge_to_the_ode_at_order_one(architecture):
    cfg = {"domain": {"geometry": "sphere"}, "model": {"beta": 2.0},
           "initial": {"kind": "uniform"},
           "particles": {"n": 16, "seed": 0, "architecture": architecture},
           "time": {"t_final": 5.0, "save_every": 0.5, "tolerance": 1e-12}}
    order, errors = _order(cfg)
    # measured: post-ln 0.106 ... 0.0149, order 0.945; pre-ln 0.018 ... 0.0023, 0.992
    assert 0.9 <= order <= 1.1, (order, errors)
