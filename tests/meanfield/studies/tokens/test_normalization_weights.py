"""The normalization study with random weights per system (issue 27, item 4): the
batched weighted field against the study's own models at Q = K = V = I, the laws of
1 - rho with random Q, K (V = I: near a cluster the softmax rows are uniform whatever
Q and K, so the laws of Q = K = V = I hold), chunks that change no number, bad input."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from meanfield import config as cfgmod
from meanfield.errors import ConfigError
from meanfield.model.ensemble import batch_velocity
from meanfield.model.normalizations import build_normalization_model
from meanfield.studies.tokens import normalization as nm
from meanfield.studies.tokens import phase_weights as pw

QK = {"query": {"kind": "gaussian", "seed": 1}, "key": {"kind": "gaussian", "seed": 2},
      "per_system": True}
SMALL = {"model": {"beta": 2.0}, "particles": {"n": 6, "seed": 3}, "weights": QK,
         "normalization": {"dim": 16, "systems": 3, "chunk": 3,
                           "times": {"start": 0.1, "stop": 30.0, "num": 40, "scale": "log"},
                           "architectures": ["post-ln", "ngpt"]}}


@pytest.mark.parametrize("arch", ["post-ln", "pre-ln", "peri-ln", "ngpt"])
def test_identity_weights_give_the_models_of_the_study(arch):
    """M = I, V = I: the weighted velocity of each rule is that of
    ``meanfield.model.normalizations`` (batched) to round-off; off the sphere for the
    rules in R^d."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 6, 9))
    if arch in ("post-ln", "ngpt"):
        x /= np.linalg.norm(x, axis=-1, keepdims=True)
    w = pw.SystemWeights(np.broadcast_to(np.eye(9), (3, 9, 9)).copy(), None)
    model = build_normalization_model(arch, 2.5, ngpt_alpha=0.7)
    got = pw.batch_field(arch, np.full(3, 2.5), w, np.arange(3), x, 0.7)(x, np.arange(3))
    ref = batch_velocity(model, x) if arch in ("post-ln", "pre-ln") else model.velocity(x)
    assert np.max(np.abs(got - ref)) < 1e-14


def test_random_query_key_keep_the_rate_two_and_chunks_change_nothing():
    """Gaussian Q, K per system, V = I (d = 16, n = 6, beta = 2): Post-LN and nGPT fit the
    rate 2 of Q = K = V = I (measured 1.99996 and 1.99982; each system within 3e-4);
    one system per member gives the same bits as three."""
    ds = nm.normalization(SMALL)
    assert ds.attrs["weights"].endswith("(seed, system))")
    fitted = ds["fitted"].values
    assert np.all(np.abs(fitted - 2.0) < 1e-3)
    assert np.all(np.abs(ds["system_fitted"].values - 2.0) < 1e-3)
    assert np.isnan(ds["equiangular_gap"].values).all()  # (the ODE of Q = K = V = I)
    ones = copy.deepcopy(SMALL)
    ones["normalization"]["chunk"] = 1
    assert np.array_equal(nm.normalization(ones)["gap"].values, ds["gap"].values)


@pytest.mark.slow
def test_random_query_key_keep_the_power_minus_two():
    """The same to t = 1e4 (13 s): Pre-LN -2.0069 (shifted -2.0039), Peri-LN -2.0016,
    Mix-LN -2.0055, within 1 % of the power -2 of Q = K = V = I."""
    cfg = copy.deepcopy(SMALL)
    cfg["normalization"].update(times={"start": 0.1, "stop": 1e4, "num": 60,
                                       "scale": "log"},
                                architectures=["pre-ln", "peri-ln", "mix-ln"])
    ds = nm.normalization(cfg)
    assert np.all(np.abs(ds["fitted"].values + 2.0) < 0.02)


@pytest.mark.parametrize("weights,key", [
    ({"value": {"kind": "symmetric", "eigenvalues": [1.0, 2.0], "seed": 1}},
     "weights.value.eigenvalues"),
    ({"value": 2.0, "per_system": True}, "weights.per_system"),
    ({"layers": [{}]}, "weights.layers"),
])
def test_bad_weights_refused_before_any_work(weights, key):
    with pytest.raises(ConfigError) as err:
        nm.normalization({**SMALL, "weights": weights})
    assert err.value.key == key
    with pytest.raises(ConfigError):
        cfgmod.validate({"weights": weights}, "normalization")
