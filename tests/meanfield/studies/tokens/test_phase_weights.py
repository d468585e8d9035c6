"""Random weights per system in the phase diagram (issue 27, item 4; acceptance 4 and 6):
the batched engine against a plain loop of the single-system weighted model, the same
numbers whatever the threads and the batch, the seeds keyed by (seed, system), d = 128
with 256 systems per beta, and every bad value refused before any work."""
from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from meanfield import config as cfgmod
from meanfield.cli import main
from meanfield.config.study_weights import system_matrices, system_seed
from meanfield.config.weights import weight_matrix
from meanfield.errors import ConfigError
from meanfield.model.weighted_attention import Head
from meanfield.model.weighted_particles import WeightedParticles
from meanfield.studies.tokens import phase_diagram as pd
from meanfield.studies.tokens import phase_kernels as pk
from meanfield.studies.tokens import phase_weights as pw
from solvers.steppers.dormand_prince import integrate_batch_dopri

RANDOM = {"query": {"kind": "gaussian", "scale": 2.0, "seed": 11},
          "key": {"kind": "gaussian", "scale": 2.0, "seed": 12},
          "value": {"kind": "gaussian", "seed": 13}, "per_system": True}


def _cfg(weights=RANDOM, **phase):
    p = {"dims": [16], "beta": [0.5, 3.0], "times": [0.0, 0.5, 1.5, 3.0], "systems": 6,
         "engine": "numpy"}
    p.update(phase)
    return cfgmod.validate({"particles": {"n": 8, "seed": 4}, "phase_diagram": p,
                            "weights": weights}, "phase_diagram")


def test_identity_weights_give_the_sa_token_field():
    """M = I, V = I: the weighted field is the SA token field of ``phase_kernels``."""
    x = pw.initial_tokens(8, 5, np.arange(3), 1)
    beta = np.array([0.5, 2.0, 7.0])
    w = pw.SystemWeights(np.broadcast_to(np.eye(5), (3, 5, 5)).copy(), None)
    got = pw.batch_field("post-ln", beta, w, np.arange(3), x)(x, np.arange(3))
    ref = pk.token_field(beta, True)(x, np.arange(3))
    assert np.max(np.abs(got - ref)) < 1e-14


def test_batched_engine_equals_a_loop_of_the_single_system_model():
    """Three systems with their own Gaussian Q, K, V (beta 0.5, 3, 6): the batch stepped
    together equals each system stepped alone with ``WeightedParticles`` (the particle
    runs' model) built from its matrices, to round-off (same scheme, same steps)."""
    cfg = _cfg()
    n, d, systems = 8, 16, np.array([0, 3, 5])
    beta = np.array([0.5, 3.0, 6.0])
    x0 = pw.initial_tokens(n, d, systems, 4)
    weights = pw.SystemWeights.of(cfg, d, systems)
    times = np.array([0.5, 1.5, 3.0])
    saved = np.empty((3, times.size, n, d))

    def keep(k, index, x):
        saved[index, k] = x
    integrate_batch_dopri(pw.batch_field("post-ln", beta, weights, np.arange(3), x0), x0,
                          times, tolerance=1e-9, observe=keep)
    for b, s in enumerate(systems):
        q, k, v = system_matrices(cfg, d, int(s))
        model = WeightedParticles(Head(q, k, v), beta[b])
        alone = np.empty((times.size, n, d))

        def keep1(k_, index, x):
            alone[k_] = x[0]
        integrate_batch_dopri(lambda x, index: model.velocity(x[0])[None], x0[b:b + 1],
                              times, tolerance=1e-9, observe=keep1)
        assert np.max(np.abs(saved[b] - alone)) < 1e-11
        assert np.max(np.abs(alone[-1] - x0[b])) > 0.1  # (the tokens moved)


def test_seeds_are_keyed_by_seed_and_system():
    """System s's Gaussian matrix is ``weight_matrix`` of the spec with the seed
    ``system_seed(seed, s)`` (so it can be rerun alone); systems differ; without
    per_system every system has the spec's own matrix."""
    cfg = _cfg()
    q3 = system_matrices(cfg, 16, 3)[0]
    spec = {"kind": "gaussian", "scale": 2.0, "seed": system_seed(11, 3)}
    assert np.array_equal(q3, weight_matrix(spec, 16, "q"))
    assert not np.allclose(q3, system_matrices(cfg, 16, 4)[0])
    same = _cfg({**RANDOM, "per_system": False})
    assert np.array_equal(system_matrices(same, 16, 3)[0],
                          weight_matrix(RANDOM["query"], 16, "q"))


def test_same_numbers_at_one_and_two_threads_and_any_batch():
    """The diagram is bit-identical at 1 and 2 BLAS threads and with members of 2 or of
    all (system, beta) pairs (each system's weights from its own seed)."""
    runs = []
    for threads, batch in ((1, 12), (2, 12), (2, 2)):
        with threadpool_limits(threads):
            ds = pd.phase_diagram(_cfg(batch=batch))
        runs.append(ds["pair_probability"].values)
    assert np.isfinite(runs[0]).all()
    assert np.array_equal(runs[0], runs[1]) and np.array_equal(runs[0], runs[2])


@pytest.mark.slow  # (6 s: the default run stays under its 15 minutes)
def test_acceptance_d128_with_256_systems_per_beta():
    """Acceptance 4 (reduced: 2 betas, t <= 2): random Gaussian Q and K per system in
    d = 128, n = 32, 256 systems per beta. At t = 0 no pair of i.i.d. uniform tokens is
    past 0.999 (|<x_i, x_j>| ~ d^{-1/2}); every system was run; the V = I systems may
    freeze; the equiangular curve (of Q = K = V = I) is not drawn."""
    w = {"query": {"kind": "gaussian", "seed": 1}, "key": {"kind": "gaussian", "seed": 2},
         "per_system": True}
    ds = pd.phase_diagram(cfgmod.validate({
        "particles": {"n": 32, "seed": 1}, "weights": w,
        "phase_diagram": {"dims": [128], "beta": [1.0, 11.3], "times": [0.0, 1.0, 2.0],
                          "systems": 256}}, "phase_diagram"))
    assert ds["systems_done"].values.tolist() == [[256, 256]]
    p = ds["pair_probability"].values
    assert p.shape == (1, 2, 3) and np.all((p >= 0) & (p <= 1))
    assert np.all(p[..., 0] == 0)
    assert np.isnan(ds["equiangular_time"].values).all()
    assert ds.attrs["engine"] == "numpy" and "per system" in ds.attrs["weights"]


@pytest.mark.parametrize("weights,key", [
    ({"per_system": True}, "weights.per_system"),
    ({"query": "identity", "per_system": True}, "weights.per_system"),
    ({"query": {"kind": "gaussian", "seed": 1}, "per_system": "yes"}, "weights.per_system"),
    ({"query": {"kind": "gaussian", "seed": -1}}, "weights.query.seed"),
    ({"key": {"kind": "gaussian", "seed": 1, "scale": -1.0}}, "weights.key.scale"),
    ({"value": {"kind": "symmetric", "eigenvalues": [1.0] * 16, "seed": 1}},
     "weights.value.eigenvalues"),  # (two dimensions: 16 and 8)
    ({"heads": [{}]}, "weights.heads"),
    ({"redraw": {"every": 1}}, "weights.redraw"),
    ({"quary": 1.0}, "weights.quary"),
])
def test_bad_weights_are_refused_before_any_work_naming_the_key(weights, key):
    with pytest.raises(ConfigError) as err:
        cfgmod.validate({"phase_diagram": {"dims": [8, 16]}, "weights": weights},
                        "phase_diagram")
    assert err.value.key == key and "\n" not in str(err.value)


def test_per_system_where_it_cannot_be_taken_is_refused(tmp_path, capsys):
    """A particle run has one system; the metastability study takes no [weights]; USA
    is refused with weights; the CLI prints one line and exits 2."""
    with pytest.raises(ConfigError) as err:
        cfgmod.validate({"weights": {"per_system": True}}, "particles")
    assert err.value.key == "weights.per_system"
    with pytest.raises(ConfigError) as err:
        cfgmod.validate({"weights": RANDOM}, "metastability")
    assert err.value.key == "weights"
    with pytest.raises(ConfigError) as err:
        cfgmod.validate({"model": {"normalized": False}, "weights": RANDOM},
                        "phase_diagram")
    assert err.value.key == "model.normalized"
    path = tmp_path / "pd.toml"
    path.write_text('[weights]\nper_system = true\n')
    assert main(["phase-diagram", str(path), "--out", str(tmp_path / "o.nc")]) == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "weights.per_system" in lines[0]
    assert not (tmp_path / "o.nc").exists()
