"""[weights] and [feedforward] (issue 20): each matrix spec gives its matrix, the clean
config stays JSON and validates to itself, the PDE takes V = c I only, and every bad
input is a ConfigError naming its key before any work."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from meanfield import config as cfgmod
from meanfield.cli import main
from meanfield.config.weights import (
    build_feedforward,
    pde_value_scale,
    weight_matrix,
)
from meanfield.errors import ConfigError
from meanfield.model.weighted_attention import build_heads

EUCLID = {"domain": {"geometry": "euclidean", "dim": 2}}


def _validate(extra: dict, task: str = "particles", base: dict | None = None) -> dict:
    cfg = {k: dict(v) for k, v in (base or {}).items()}
    for section, table in extra.items():
        cfg.setdefault(section, {}).update(table)
    return cfgmod.validate(cfg, task)


def test_plain_specs_give_their_matrices():
    assert np.array_equal(weight_matrix("identity", 3, "k"), np.eye(3))
    assert np.array_equal(weight_matrix(-2, 3, "k"), -2.0 * np.eye(3))
    rows = [[1.0, 2.0], [3.0, 4.0]]
    assert np.array_equal(weight_matrix(rows, 2, "k"), np.array(rows))
    assert np.array_equal(weight_matrix([[5]], 1, "k"), [[5.0]])
    m = np.arange(9.0).reshape(3, 3)
    assert np.array_equal(weight_matrix(m, 3, "k"), m)  # an array from Python


def test_gaussian_entries_have_variance_scale_squared_over_d():
    d, s = 200, 2.0
    m = weight_matrix({"kind": "gaussian", "scale": s, "seed": 7}, d, "k")
    n = m.size  # 40000 i.i.d. N(0, s^2/d) entries: var 0.02
    var = s * s / d
    # the sample variance has relative standard error sqrt(2/(n-1)) = 0.0071; the mean has
    # standard error sqrt(var/n) = 7.1e-4: both within 5 standard errors
    assert abs(m.var() / var - 1) < 5 * math.sqrt(2 / (n - 1))
    assert abs(m.mean()) < 5 * math.sqrt(var / n)
    again = weight_matrix({"kind": "gaussian", "scale": s, "seed": 7}, d, "k")
    assert np.array_equal(m, again)  # reproducible from the seed
    other = weight_matrix({"kind": "gaussian", "scale": s, "seed": 8}, d, "k")
    assert not np.allclose(m, other)


@pytest.mark.parametrize("d,eig", [(1, [-3.0]), (3, [-1.0, 0.5, 2.0]),
                                   (6, [7.0, -2.0, 0.0, 1.0, 1.0, 3.5])])
def test_symmetric_spec_has_its_eigenvalues(d, eig):
    m = weight_matrix({"kind": "symmetric", "eigenvalues": eig, "seed": 3}, d, "k")
    assert np.array_equal(m, m.T)
    assert np.max(np.abs(np.linalg.eigvalsh(m) - np.sort(eig))) < 1e-12
    if d > 2:  # a random basis, not the coordinate one
        assert np.max(np.abs(m - np.diag(np.diag(m)))) > 1e-3


def test_symmetric_basis_is_isotropic_on_average():
    # for a Haar O, E[O diag(l) O^T] = mean(l) I. With l = (0, 0, 3) every entry of one
    # draw lies in [-3, 3] (standard deviation <= 3), so the average of 2000 draws is
    # within 5 standard deviations, 5 * 3 / sqrt(2000) = 0.34, of I (a basis tied to the
    # coordinates would give diag(0, 0, 3))
    eig = [0.0, 0.0, 3.0]
    mats = [weight_matrix({"kind": "symmetric", "eigenvalues": eig, "seed": k}, 3, "k")
            for k in range(2000)]
    mean = np.mean(mats, axis=0)
    assert np.max(np.abs(mean - np.eye(3))) < 5 * 3 / math.sqrt(2000)


@pytest.mark.parametrize("suffix", [".npy", ".txt", ".csv"])
def test_file_spec(tmp_path, suffix):
    m = np.array([[1.5, -2.0, 0.0], [0.25, 3.0, 1e-3], [0.0, 0.0, -7.0]])
    path = tmp_path / f"V{suffix}"
    if suffix == ".npy":
        np.save(path, m)
    else:
        np.savetxt(path, m, delimiter="," if suffix == ".csv" else " ")
    assert np.array_equal(weight_matrix({"file": str(path)}, 3, "k"), m)


def test_clean_config_is_json_and_validates_to_itself(tmp_path):
    np.save(tmp_path / "W.npy", np.eye(3) * 0.5)
    given = {
        "domain": {"geometry": "euclidean", "dim": 3},
        "initial": {"kind": "gaussian", "mean": [1, 0, -1],
                    "covariance": [[2, 0.5, 0], [0.5, 1, 0], [0, 0, 1]]},
        "weights": {"heads": [
            {"query": {"kind": "gaussian", "seed": 1}, "key": np.eye(3) * 2,
             "value": {"kind": "symmetric", "eigenvalues": [1, 2, 3], "seed": 4}},
            {"value": -1}]},
        "feedforward": {"activation": "tanh", "weight": {"file": str(tmp_path / "W.npy")}},
        "particles": {"mask": "causal", "save_attention": True},
    }
    clean = cfgmod.validate(given, "particles")
    assert json.loads(json.dumps(clean["weights"])) == clean["weights"]
    assert json.loads(cfgmod.to_json(clean)) is not None
    assert cfgmod.validate(clean, "particles") == clean
    assert cfgmod.validate(json.loads(json.dumps(clean, default=str)), "particles") == clean
    assert clean["weights"]["heads"][1] == {"query": "identity", "key": "identity",
                                            "value": -1.0}
    assert clean["particles"]["architecture"] == "pure"
    heads = build_heads(clean)
    assert len(heads) == 2
    assert np.array_equal(heads[0].key, 2 * np.eye(3))
    assert np.array_equal(heads[1].value, -np.eye(3))
    w, activation = build_feedforward(clean)
    assert activation == "tanh" and np.array_equal(w, 0.5 * np.eye(3))


def test_absent_weights_are_one_identity_head():
    cfg = cfgmod.validate({"domain": {"geometry": "sphere", "dim": 5}}, "particles")
    (head,) = build_heads(cfg)
    for m in (head.query, head.key, head.value):
        assert np.array_equal(m, np.eye(5))
    assert build_feedforward(cfg) is None
    assert pde_value_scale(cfgmod.validate({}, "evolve")) == 1.0


@pytest.mark.parametrize("weights,c", [
    ({}, 1.0), ({"value": -1}, -1.0), ({"value": 2.5, "query": 1}, 2.5),
    ({"value": [[0.5, 0.0], [0.0, 0.5]], "key": [[1, 0], [0, 1]]}, 0.5),
    ({"value": {"kind": "symmetric", "eigenvalues": [-3, -3], "seed": 0}}, -3.0),
    ({"heads": [{"value": -2}]}, -2.0),
])
def test_pde_value_scale(weights, c):
    assert pde_value_scale(_validate({"weights": weights}, "evolve")) == c


@pytest.mark.parametrize("weights,key", [
    ({"query": 2}, "weights.query"),
    ({"key": [[1, 0.1], [0, 1]]}, "weights.key"),
    ({"value": [[1, 0], [0, 2]]}, "weights.value"),
    ({"value": {"kind": "gaussian", "seed": 0}}, "weights.value"),
    ({"heads": [{}, {"value": -1}]}, "weights.heads"),
    ({"heads": [{"query": {"kind": "gaussian", "seed": 1}}]}, "weights.heads[0].query"),
])
@pytest.mark.parametrize("task", ["evolve", "compare", "bifurcation"])
def test_pde_tasks_refuse_weights_other_than_c_identity(weights, key, task):
    with pytest.raises(ConfigError) as err:
        _validate({"weights": weights}, task)
    assert err.value.key == key
    assert "V = c I only" in str(err.value) and "meanfield particles" in str(err.value)
    # the particle run takes them
    assert _validate({"weights": weights}, "particles")["weights"]


def test_pde_value_scale_refuses_a_feedforward_layer():
    cfg = _validate({"feedforward": {"activation": "relu"}}, "particles")
    with pytest.raises(ConfigError) as err:
        pde_value_scale(cfg)
    assert err.value.key == "feedforward"


def test_rescaled_refused_where_e_tv_cannot_be_formed():
    # a Jordan block with a huge coupling: e^{t(V - cI)} = I + t N overflows at t = 1e10
    v = [[1.0, 1e300], [0.0, 1.0]]
    base = {**EUCLID, "particles": {"rescaled": True}}
    with pytest.raises(ConfigError) as err:
        _validate({"weights": {"value": v}, "time": {"t_final": 1e10}}, base=base)
    assert err.value.key == "weights.value" and "t_final" in str(err.value)
    # a normal V of any size is fine (the shift by the spectral abscissa)
    ok = _validate({"weights": {"value": [[50.0, 0.0], [0.0, -50.0]]},
                    "time": {"t_final": 1e3}}, base=base)
    assert ok["particles"]["rescaled"] is True


BAD = [
    # (config, task, key, words)
    ({"weights": {"value": [[1, 0], [0, 1]]}, "domain": {"geometry": "sphere"}},
     "particles", "weights.value", "3 x 3"),
    ({"weights": {"value": [[1, math.nan], [0, 1]]}}, "particles", "weights.value", "finite"),
    ({"weights": {"value": [[1, math.inf], [0, 1]]}}, "particles", "weights.value", "finite"),
    ({"weights": {"value": [[1, "a"], [0, 1]]}}, "particles", "weights.value", "number"),
    ({"weights": {"value": math.nan}}, "particles", "weights.value", "finite"),
    ({"weights": {"value": {"file": "no/such/V.npy"}}}, "particles", "weights.value.file",
     "no such file"),
    ({"weights": {"value": {"kind": "orthogonal", "seed": 1}}}, "particles",
     "weights.value.kind", "'gaussian', 'symmetric'"),
    ({"weights": {"value": {"kind": "symmetric", "eigenvalues": [1, 2, 3], "seed": 1}}},
     "particles", "weights.value.eigenvalues", "2 numbers"),
    ({"weights": {"query": {"kind": "gaussian", "scale": 1}}}, "particles",
     "weights.query.seed", "required"),
    ({"weights": {"query": {"kind": "gaussian", "scale": -1, "seed": 0}}}, "particles",
     "weights.query.scale", ">= 0"),
    ({"weights": {"query": {"kind": "gaussian", "sigma": 1, "seed": 0}}}, "particles",
     "weights.query.sigma", "'scale'"),
    ({"weights": {"query": {"scale": 1}}}, "particles", "weights.query", "'kind'"),
    ({"weights": {"key": "eye"}}, "particles", "weights.key", "identity"),
    ({"weights": {"key": True}}, "particles", "weights.key", "identity"),
    ({"weights": {"valeu": 1}}, "particles", "weights.valeu", "did you mean 'value'"),
    ({"weights": {"heads": [{}], "value": 2}}, "particles", "weights.heads", "not both"),
    ({"weights": {"heads": []}}, "particles", "weights.heads", "non-empty"),
    ({"weights": {"heads": [{}, {"query": [[1, 2]]}]}}, "particles",
     "weights.heads[1].query", "2 x 2"),
    ({"weights": {"heads": [{"vale": 1}]}}, "particles", "weights.heads[0].vale",
     "did you mean 'value'"),
    ({"feedforward": {"activation": "gelu"}}, "particles", "feedforward.activation",
     "'relu', 'tanh'"),
    ({"feedforward": {"weight": 2}}, "particles", "feedforward.activation", "required"),
    ({"feedforward": {"activation": "relu", "weight": [[1]]}}, "particles",
     "feedforward.weight", "2 x 2"),
    ({"feedforward": {"activation": "relu"}}, "evolve", "feedforward", "not taken"),
    ({"weights": {"value": -1}}, "contraction", "weights", "not taken"),
    # architectures, geometry, options
    ({"domain": {"geometry": "euclidean"}, "particles": {"architecture": "post-ln"}},
     "particles", "particles.architecture", "\"pure\""),
    ({"particles": {"architecture": "pure"}}, "particles", "particles.architecture",
     "euclidean"),
    ({"particles": {"rescaled": True}}, "particles", "particles.rescaled", "pure"),
    ({"particles": {"rescaled": 1}}, "particles", "particles.rescaled", "true or false"),
    ({"particles": {"mask": "causal", "architecture": "pre-ln"}}, "particles",
     "particles.mask", "'post-ln' and 'pure'"),
    ({"particles": {"mask": "causal", "architecture": "hardmax"}}, "particles",
     "particles.mask", "takes no mask"),
    ({"particles": {"mask": "future"}}, "particles", "particles.mask", "'causal'"),
    ({"particles": {"mask": "causal"}, "model": {"normalized": False}}, "particles",
     "particles.mask", "normalized = true"),
    ({"particles": {"save_attention": "yes"}}, "particles", "particles.save_attention",
     "true or false"),
    ({"particles": {"save_attention": True, "architecture": "pre-ln"}}, "particles",
     "particles.save_attention", "no softmax"),
    ({"domain": {"geometry": "euclidean"}, "model": {"kappa": 4.0}}, "particles",
     "model.kappa", "inf"),
    ({"domain": {"geometry": "euclidean"}, "model": {"normalized": False}}, "particles",
     "model.normalized", "normalized = true"),
    ({"domain": {"geometry": "euclidean", "dim": 0}}, "particles", "domain.dim", ">= 1"),
    ({"domain": {"geometry": "sphere", "dim": 2}}, "particles", "domain.dim", "d >= 3"),
    ({"weights": {"value": -1}, "particles": {"architecture": "pre-ln"}}, "particles",
     "weights.value", "'post-ln' or 'pure'"),
    ({"weights": {"heads": [{}, {}]}, "particles": {"architecture": "hardmax"}},
     "particles", "weights.heads", "architecture"),
    ({"feedforward": {"activation": "relu"}, "particles": {"architecture": "pre-ln"}},
     "particles", "feedforward", "'post-ln' or 'pure'"),
    ({"weights": {"value": -1}, "model": {"normalized": False}}, "particles",
     "model.normalized", "normalized = true"),
    ({"weights": {"value": -1}, "model": {"normalized": False}}, "compare",
     "model.normalized", "normalized = true"),
    ({"weights": {"value": -1}, "particles": {"sum_method": "fourier"}}, "particles",
     "particles.sum_method", "'direct'"),
    ({"domain": {"geometry": "euclidean"}, "particles": {"sum_method": "fourier"}},
     "particles", "particles.sum_method", "pure self-attention"),
    ({"particles": {"mask": "causal", "sum_method": "fourier"}}, "particles",
     "particles.sum_method", "mask = 'causal'"),
    ({"domain": {"geometry": "circle", "dim": 1}}, "particles", "domain.dim", ">= 2"),
    ({"domain": {"geometry": "euclidean"}, "particles": {"rescaled": True},
      "weights": {"heads": [{}, {}]}}, "particles", "weights.heads", "single value matrix"),
    ({"domain": {"geometry": "euclidean"}, "particles": {"rescaled": True},
      "feedforward": {"activation": "relu"}}, "particles", "feedforward", "rescaled"),
    # the PDE tasks and tokens in R^d
    ({"domain": {"geometry": "euclidean"}}, "evolve", "domain.geometry", "S^1, S^2"),
    ({"domain": {"geometry": "euclidean"}}, "compare", "domain.geometry", "S^1, S^2"),
    ({"domain": {"geometry": "euclidean"}}, "bifurcation", "domain.geometry", "S^1, S^2"),
    ({"domain": {"geometry": "euclidean"}}, "contraction", "domain.geometry", "S^1, S^2"),
    ({"domain": {"geometry": "euclidean"}}, "metastability", "domain.geometry",
     "S^1 and S^{d-1}"),
    ({"domain": {"geometry": "zonal"}}, "metastability", "domain.geometry",
     "S^1 and S^{d-1}"),
    # [initial] for tokens in R^d
    ({"initial": {"kind": "gaussian"}, "domain": {"geometry": "sphere"}}, "particles",
     "initial.kind", "'von_mises'"),
    ({"domain": {"geometry": "euclidean"}, "initial": {"kind": "von_mises"}}, "particles",
     "initial.kind", "'gaussian', 'tokens', 'uniform', 'equiangular'"),
    ({"domain": {"geometry": "euclidean"}, "initial": {"kind": "gaussian", "mean": [1]}},
     "particles", "initial.mean", "2 numbers"),
    ({"domain": {"geometry": "euclidean"},
      "initial": {"kind": "gaussian", "mean": [0, math.inf]}}, "particles", "initial.mean",
     "finite"),
    ({"domain": {"geometry": "euclidean"},
      "initial": {"kind": "gaussian", "covariance": [[1, 2], [2, 1]]}}, "particles",
     "initial.covariance", "positive definite"),
    ({"domain": {"geometry": "euclidean"},
      "initial": {"kind": "gaussian", "covariance": [[1, 0.2], [0.1, 1]]}}, "particles",
     "initial.covariance", "not symmetric"),
    ({"domain": {"geometry": "euclidean"},
      "initial": {"kind": "gaussian", "covariance": 0.0}}, "particles",
     "initial.covariance", "> 0"),
    ({"domain": {"geometry": "euclidean"},
      "initial": {"kind": "gaussian", "covariance": [[1, 0]]}}, "particles",
     "initial.covariance", "2 rows"),
    ({"domain": {"geometry": "euclidean"},
      "initial": {"kind": "tokens", "path": "x.npy", "unit_rows": True}}, "particles",
     "initial.unit_rows", "'path'"),
]


@pytest.mark.parametrize("config,task,key,words", BAD)
def test_bad_input_names_its_key(config, task, key, words):
    with pytest.raises(ConfigError) as err:
        cfgmod.validate(config, task)
    assert err.value.key == key, str(err.value)
    assert words in str(err.value)


def test_cli_refuses_a_bad_head_in_one_line(tmp_path, capsys):
    path = tmp_path / "w.toml"
    path.write_text('[domain]\ngeometry = "euclidean"\ndim = 2\n'
                    '[[weights.heads]]\nvalue = -1\n'
                    '[[weights.heads]]\nquery = [[1, 0], [0, 1], [0, 0]]\n')
    assert main(["particles", str(path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "weights.heads[1].query" in err


def test_every_task_validates_its_clean_config_to_itself():
    for task in list(cfgmod.TASKS) + [None]:
        clean = cfgmod.validate({}, task)
        assert cfgmod.validate(clean, task) == clean, task
    clean = cfgmod.validate({"domain": {"geometry": "euclidean", "dim": 1}})
    assert cfgmod.validate(clean) == clean
    assert clean["particles"]["architecture"] == "pure"
    assert clean["initial"] == {"kind": "gaussian", "mean": [0.0], "covariance": 1.0}


def test_a_registered_task_check_runs_on_the_clean_config(monkeypatch):
    from meanfield.config import registry

    monkeypatch.setattr(registry, "TASKS", dict(registry.TASKS))
    monkeypatch.setattr(registry, "TASK_CHECKS", dict(registry.TASK_CHECKS))
    seen = []
    cfgmod.register_task("probe", ("model", "domain"),
                         check=lambda cfg, task: seen.append((task, cfg["domain"]["dim"])))
    cfgmod.validate({"domain": {"geometry": "sphere"}}, "probe")
    assert seen == [("probe", 3)]
    cfgmod.register_task("probe", ("model", "domain"))  # replaced: no check
    cfgmod.validate({}, "probe")
    assert seen == [("probe", 3)]


def test_the_pde_takes_usa_with_value_c():
    """USA is refused for tokens with weights (softmax rows) but the PDE takes V = c I
    with USA: evolve and bifurcation validate with the [particles] defaults along."""
    config = {"weights": {"value": -1.0}, "model": {"normalized": False}}
    for task in ("evolve", "bifurcation", None):
        cfg = cfgmod.validate(config, task)
        assert cfg["model"]["normalized"] is False
