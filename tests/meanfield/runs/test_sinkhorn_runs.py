"""Particle runs with Sinkhorn attention (issue 27, acceptance 2): the doubly stochastic
matrix at every save, G = sum log u non-increasing, and dG/dt = -beta sum |x_i'|^2
integrated over the saves (docs/conventions.md, "Sinkhorn attention")."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import simpson

from meanfield.errors import ConfigError
from meanfield.runs.particles import particles


def _config(**particles_keys) -> dict:
    p = {"n": 12, "seed": 3, "attention": "sinkhorn"}
    p.update(particles_keys)
    return {"domain": {"geometry": "sphere"}, "model": {"beta": 2.0},
            "initial": {"kind": "uniform"},
            "time": {"t_final": 1.5, "save_every": 0.025, "tolerance": 1e-10},
            "particles": p}


def test_sinkhorn_on_s2_is_the_gradient_descent_of_g():
    ds = particles(_config(save_attention=True))
    p = ds.attention.values
    # doubly stochastic to 1e-12 at every save (the saved matrices themselves)
    assert np.abs(p.sum(axis=-1) - 1).max() <= 1e-12
    assert np.abs(p.sum(axis=-2) - 1).max() <= 1e-12
    assert float(ds.sinkhorn_error.max()) <= 1e-12
    g, speed, t = ds.sinkhorn_potential.values, ds.speed_squared_sum.values, ds.time.values
    assert np.all(np.diff(g) <= 1e-13)  # (round-off of G ~ 1e-14)
    # G(t2) - G(t1) = -beta int sum |x'|^2: Simpson's rule (order 4) on the saves,
    # h = 0.025; measured 2e-10 relative (the integrator's error), stated 1e-3
    for i, j in ((0, 60), (20, 60), (0, 20)):
        change = g[j] - g[i]
        integral = simpson(speed[i:j + 1], x=t[i:j + 1])
        assert abs(change + 2.0 * integral) <= 1e-3 * abs(change)
        assert abs(change + 2.0 * integral) <= 1e-8 * abs(change)  # (what it is)
    assert "Sinkhorn" in ds.attrs["title"] and ds.attrs["attention"] == "sinkhorn"


def test_pure_sinkhorn_mean_grows_like_e_t():
    """Pure tokens in R^d, V = I: the columns of P sum to 1, so d/dt sum_i x_i = sum_j
    x_j and the mean is e^t times its start (softmax rows have no such law); G still
    decreases at the rate -beta sum |x'|^2 (V = Q^T K = I)."""
    cfg = _config()
    cfg["domain"] = {"geometry": "euclidean", "dim": 2}
    cfg["time"] = {"t_final": 1.0, "save_every": 0.02, "tolerance": 1e-11}
    cfg["particles"]["n"] = 8
    ds = particles(cfg)
    mean = ds.mean_position.values
    growth = mean / mean[0]
    assert np.max(np.abs(growth - np.exp(ds.time.values)[:, None])) < 1e-8
    g, speed, t = ds.sinkhorn_potential.values, ds.speed_squared_sum.values, ds.time.values
    assert np.all(np.diff(g) <= 1e-12)
    change, integral = g[-1] - g[0], simpson(speed, x=t)
    assert abs(change + 2.0 * integral) <= 1e-6 * abs(change)


def test_sinkhorn_with_weights_on_the_sphere():
    cfg = _config(n=10, save_attention=True)
    cfg["weights"] = {"query": {"kind": "gaussian", "seed": 1},
                      "key": "identity", "value": "identity"}
    cfg["time"] = {"t_final": 0.5, "save_every": 0.1, "tolerance": 1e-9}
    ds = particles(cfg)
    assert float(ds.sinkhorn_error.max()) <= 1e-12
    assert np.abs(ds.attention.values.sum(axis=-2) - 1).max() <= 1e-12
    assert "sinkhorn_potential" not in ds  # Q^T K not symmetric: no G


@pytest.mark.parametrize("overrides, key", [
    ({"attention": "doubly"}, "particles.attention"),
    ({"attention": 1}, "particles.attention"),
    ({"sinkhorn_tolerance": 0.0}, "particles.sinkhorn_tolerance"),
    ({"sinkhorn_tolerance": 0.5}, "particles.sinkhorn_tolerance"),
    ({"sinkhorn_tolerance": "tight"}, "particles.sinkhorn_tolerance"),
    ({"cluster_method": "components"}, "particles.cluster_method"),
    ({"architecture": "pre-ln"}, "particles.attention"),
    ({"architecture": "hardmax"}, "particles.attention"),
    ({"mask": "causal"}, "particles.mask"),
    ({"sum_method": "harmonic"}, "particles.sum_method"),
    ({"n": 6000, "cluster_method": "rank", "attention": "softmax"},
     "particles.cluster_method"),
])
def test_bad_keys_are_refused_before_any_work(overrides, key):
    with pytest.raises(ConfigError) as err:
        particles(_config(**overrides))
    assert err.value.key == key and "\n" not in str(err.value)


def test_other_refusals_name_their_key():
    cfg = _config()
    cfg["model"]["normalized"] = False
    with pytest.raises(ConfigError) as err:
        particles(cfg)
    assert err.value.key == "model.normalized"
    cfg = _config(rescaled=True, architecture="pure")
    cfg["domain"] = {"geometry": "euclidean"}
    with pytest.raises(ConfigError) as err:
        particles(cfg)
    assert err.value.key == "particles.rescaled"


@pytest.mark.parametrize("task, particles_keys, key", [
    ("compare", {"attention": "sinkhorn"}, "particles.attention"),
    ("metastability", {"attention": "sinkhorn"}, "particles.attention"),
    ("phase_diagram", {"cluster_method": "rank"}, "particles.cluster_method"),
    ("normalization", {"cluster_method": "rank"}, "particles.cluster_method"),
])
def test_keys_a_task_would_ignore_are_refused(task, particles_keys, key):
    from meanfield import config

    with pytest.raises(ConfigError) as err:
        config.validate({"particles": particles_keys}, task=task)
    assert err.value.key == key and "\n" not in str(err.value)


def test_the_tasks_that_count_clusters_take_the_rank():
    from meanfield import config

    for task in ("particles", "metastability"):
        cfg = config.validate({"particles": {"cluster_method": "rank"}}, task=task)
        assert cfg["particles"]["cluster_method"] == "rank"
