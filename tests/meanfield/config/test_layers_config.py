"""The keys of discrete layers and of weights that change with depth
(``meanfield.config.layers``, ``meanfield.config.depth_weights``): every bad value is
refused before any work with one line naming its key (acceptance 6 of issue 27), the clean
tables validate to themselves, and the pieces of depth are where the docs say."""
from __future__ import annotations

import numpy as np
import pytest

import meanfield
from meanfield import ConfigError
from meanfield.cli import main
from meanfield.config import depth_weights as depth
from meanfield.model import layers as ml
from meanfield.model import particles as pm

PURE = {"domain": {"geometry": "euclidean", "dim": 2}, "initial": {"kind": "gaussian"},
        "particles": {"n": 6, "integrator": "layers", "layer_step": 0.1},
        "time": {"t_final": 2.0, "save_every": 0.5}}
SPHERE = {"domain": {"geometry": "sphere"}, "initial": {"kind": "uniform"},
          "particles": {"n": 6}, "time": {"t_final": 2.0, "save_every": 0.5}}
REDRAW = {"every": 0.5, "kind": "gaussian", "seed": 3}


def with_(cfg: dict, **sections) -> dict:
    out = {k: dict(v) for k, v in cfg.items()}
    for name, keys in sections.items():
        out[name] = {**out.get(name, {}), **keys}
    return out


BAD = [
    (with_(PURE, particles={"integrator": "euler"}), "particles.integrator", "'layers'"),
    (with_(PURE, particles={"layer_step": -0.1}), "particles.layer_step", "> 0"),
    (with_(PURE, particles={"layer_step": None}), "particles.layer_step", "required"),
    (with_(PURE, particles={"integrator": "ode"}), "particles.layer_step", "integrator"),
    (with_(PURE, time={"save_every": 0.25}), "time.save_every", "multiple"),
    (with_(PURE, time={"t_final": 2.05, "save_every": 0.5}), "time.t_final", "multiple"),
    (with_(PURE, particles={"layer_step": 1.0}), "particles.layer_step", "save_every"),
    (with_(SPHERE, particles={"integrator": "layers", "layer_step": 0.1},
           model={"kappa": 10.0}, time={"dt": 0.1}), "particles.integrator", "noise"),
    (with_(PURE, time={"dt": 0.1}), "time.dt", "layer_step"),
    (with_(SPHERE, particles={"integrator": "layers", "layer_step": 0.1,
                              "architecture": "mix-ln", "mix_switch": 0.55}),
     "particles.mix_switch", "multiple"),
    (with_(PURE, weights={"layers": []}), "weights.layers", "non-empty list"),
    (with_(PURE, weights={"layers": {"value": 1.0}}), "weights.layers", "list"),
    (with_(PURE, weights={"layers": [{"query": "bad"}]}), "weights.layers[0].query",
     "not a matrix"),
    (with_(PURE, weights={"layers": [{"value": 1.0}, {"valeu": 1.0}]}),
     "weights.layers[1].valeu", "unknown key"),
    (with_(PURE, weights={"layers": [{}, {"heads": [{}, {}]}]}), "weights.layers[1]",
     "heads"),
    (with_(PURE, weights={"layers": [{}], "query": 2.0}), "weights.query", "beside"),
    (with_(PURE, weights={"layers": [{"layers": [{}]}]}), "weights.layers[0].layers",
     "cannot change"),
    (with_(PURE, weights={"layers": [{}], "redraw": REDRAW}), "weights.redraw", "both"),
    (with_(PURE, weights={"redraw": 3}), "weights.redraw", "table"),
    (with_(PURE, weights={"redraw": {"kind": "gaussian", "seed": 1}}),
     "weights.redraw.every", "required"),
    (with_(PURE, weights={"redraw": {**REDRAW, "every": 0}}), "weights.redraw.every", "> 0"),
    (with_(PURE, weights={"redraw": {**REDRAW, "kind": "uniform"}}),
     "weights.redraw.kind", "gaussian"),
    (with_(PURE, weights={"redraw": {"every": 0.5, "seed": 1}}), "weights.redraw.kind",
     "required"),
    (with_(PURE, weights={"redraw": {"every": 0.5, "kind": "gaussian"}}),
     "weights.redraw.seed", "required"),
    (with_(PURE, weights={"redraw": {**REDRAW, "scale": -1.0}}), "weights.redraw.scale",
     ">= 0"),
    (with_(PURE, weights={"redraw": {**REDRAW, "eigenvalues": [1.0, 2.0]}}),
     "weights.redraw.eigenvalues", "not a parameter"),
    (with_(PURE, weights={"redraw": {**REDRAW, "evry": 1}}), "weights.redraw.evry",
     "unknown key"),
    (with_(PURE, weights={"redraw": {**REDRAW, "matrices": ["query", "foo"]}}),
     "weights.redraw.matrices", "distinct names"),
    (with_(PURE, weights={"redraw": REDRAW, "value": 2.0}), "weights.value", "redrawn"),
    (with_(PURE, weights={"redraw": REDRAW, "heads": [{}]}), "weights.heads", "one head"),
    (with_(SPHERE, particles={"architecture": "pre-ln"}, weights={"layers": [{}]}),
     "weights.layers", "architecture"),
    (with_(PURE, particles={"rescaled": True}, weights={"redraw": REDRAW}),
     "weights.redraw.matrices", "one V"),
    (with_(PURE, particles={"rescaled": True},
           weights={"layers": [{"value": 1.0}, {"value": 0.5}]}), "weights.layers[1].value",
     "one V"),
    (with_(PURE, weights={"redraw": {**REDRAW, "every": 0.25}}), "weights.redraw.every",
     "multiple"),
    (with_(PURE, particles={"layer_step": 0.3}, weights={"layers": [{}, {}]},
           time={"t_final": 1.8, "save_every": 0.6}), "particles.layer_step", "multiple"),
    (with_(PURE, particles={"rescaled": True}, weights={"value": -10.0}), "weights.value",
     "singular"),
]


@pytest.mark.parametrize("raw, key, words", BAD, ids=[b[1] + ":" + b[2] for b in BAD])
def test_bad_values_are_refused_before_any_work_naming_the_key(raw, key, words, monkeypatch):
    def no_work(*a, **k):
        raise AssertionError("stepping started")

    monkeypatch.setattr(pm.TokenStepper, "advance", no_work)
    monkeypatch.setattr(ml.LayerStepper, "advance", no_work)
    with pytest.raises(ConfigError) as err:
        meanfield.particles(raw)
    assert err.value.key == key and words in str(err.value), str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("task, raw, key", [
    ("evolve", {"weights": {"layers": [{}]}}, "weights.layers"),
    ("compare", {"particles": {"integrator": "layers", "layer_step": 0.05},
                 "time": {"t_final": 1.0, "save_every": 0.5}}, "particles.integrator"),
    ("phase_diagram", {"particles": {"integrator": "layers", "layer_step": 0.1}},
     "particles.integrator"),
])
def test_other_tasks_refuse_layers_and_depth(task, raw, key):
    with pytest.raises(ConfigError) as err:
        meanfield.config.validate(raw, task)
    assert err.value.key == key, str(err.value)


def test_cli_prints_one_line(tmp_path, capsys):
    toml = tmp_path / "bad.toml"
    toml.write_text('[domain]\ngeometry = "euclidean"\ndim = 2\n[particles]\nn = 4\n'
                    'integrator = "layers"\nlayer_step = 0.1\n'
                    '[time]\nt_final = 1.0\nsave_every = 0.5\n'
                    '[weights]\nredraw = {every = 0.5, kind = "gaussian"}\n')
    assert main(["particles", str(toml), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "weights.redraw.seed" in err, err


def test_clean_tables_validate_to_themselves():
    for weights in ({"layers": [{"value": 1.0}, {"heads": [{"key": 2.0}]}]},
                    {"layers": [{"heads": [{}]}, {"heads": [{"key": 2.0}]}]},
                    {"redraw": {**REDRAW, "matrices": ["query", "key"]}, "value": -1.0},
                    {"redraw": {"every": 1.0, "kind": "symmetric", "seed": 1,
                                "eigenvalues": [1.0, -0.5]}}):
        clean = meanfield.config.validate(with_(PURE, weights=weights), "particles")
        assert meanfield.config.validate(clean, "particles") == clean


def test_pieces_and_switches():
    layers = {"layers": [{}, {}, {}]}
    assert [depth.piece_at(layers, t) for t in (0, 0.99, 1.0, 2.5, 7)] == [0, 0, 1, 2, 2]
    np.testing.assert_array_equal(depth.switch_times(layers, 10.0), [1.0, 2.0])
    np.testing.assert_array_equal(depth.switch_times(layers, 2.0), [1.0])
    redraw = {"redraw": {**REDRAW, "every": 0.1, "matrices": ["query"]}}
    assert depth.piece_at(redraw, 0.3) == 3  # 0.3 / 0.1 = 2.9999999999999996
    np.testing.assert_allclose(depth.switch_times(redraw, 0.3), [0.1, 0.2])
    seeds = {depth.derived_seed(3, m, j) for m in range(4) for j in range(3)}
    assert len(seeds) == 12 and all(0 <= s < 2**63 for s in seeds)
