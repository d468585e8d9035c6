"""Particle runs with discrete layers and weights that change with depth (docs/weights.md
section 7): a ``layers`` list of two entries is the first model run to t = 1 and then the
second from its tokens (independent composition, with layers and with the ODE); redrawn
weights are reproducible, differ between seeds, and switch exactly at the stated times;
layered and piecewise runs resume bit for bit after an interruption, at a save and
between saves; the CLI runs a TOML of them."""
from __future__ import annotations

import numpy as np
import pytest

import meanfield
from meanfield.cli import main
from meanfield.config import depth_weights as depth
from meanfield.config.weights import weight_matrix
from meanfield.io import read_netcdf
from meanfield.model import layers as ml
from meanfield.model import particles as pm
from meanfield.model.depth import depth_heads
from meanfield.model.weighted_attention import attention_matrix
from meanfield.runs import particles as runs
from meanfield.runs.schedule import checkpoint_path


def gaussian(seed: int) -> dict:
    return {"kind": "gaussian", "seed": seed}


A = {"query": gaussian(1), "key": gaussian(2), "value": gaussian(3)}
B = {"query": gaussian(4), "key": gaussian(5), "value": [[0.5, 0.2], [0.0, -0.4]]}
PURE = {"domain": {"geometry": "euclidean", "dim": 2},
        "initial": {"kind": "gaussian", "mean": [0.3, 0.0], "covariance": 1.0},
        "particles": {"n": 10, "seed": 2},
        "time": {"t_final": 2.0, "save_every": 0.5, "tolerance": 1e-12}}
STEPPING = {"layers": ({"integrator": "layers", "layer_step": 0.05}, {}),
            "ode, fixed dt": ({}, {"dt": 0.05}),
            "ode, adaptive": ({}, {})}


def config(weights: dict, stepping: str, **time) -> dict:
    particles, fixed = STEPPING[stepping]
    return {**PURE, "weights": weights, "particles": {**PURE["particles"], **particles},
            "time": {**PURE["time"], **fixed, **time}}


def from_tokens(cfg: dict, x: np.ndarray, path) -> dict:
    np.save(path, x)
    return {**cfg, "initial": {"kind": "tokens", "path": str(path)}}


# --- weights that change with depth: independent composition ------------------------------

@pytest.mark.parametrize("stepping", list(STEPPING))
def test_two_layer_entries_are_the_first_model_then_the_second(stepping, tmp_path):
    both = meanfield.particles(config({"layers": [A, B]}, stepping)).position.values
    first = meanfield.particles(config(A, stepping, t_final=1.0)).position.values
    second = meanfield.particles(from_tokens(config(B, stepping, t_final=1.0), first[-1],
                                             tmp_path / "x1.npy")).position.values
    composed = np.concatenate([first, second[1:]])
    if stepping == "layers":  # the same layers on the same tokens: the same bits
        np.testing.assert_array_equal(both, composed)
    elif stepping == "ode, fixed dt":  # the same steps, their times summed from 1 or 0
        np.testing.assert_allclose(both, composed, rtol=0, atol=1e-13)  # measured 6e-16
    else:  # the second run starts with a fresh first step: within the tolerance
        np.testing.assert_allclose(both, composed, rtol=0, atol=1e-9)


def test_the_last_layer_entry_is_kept(tmp_path):
    kept = meanfield.particles(config({"layers": [A, B]}, "layers", t_final=3.0))
    repeated = meanfield.particles(config({"layers": [A, B, B]}, "layers", t_final=3.0))
    np.testing.assert_array_equal(kept.position.values, repeated.position.values)


# --- redraw: reproducible, and switching at the stated times ------------------------------

REDRAW = {"redraw": {"every": 0.5, "kind": "gaussian", "scale": 1.5, "seed": 7,
                     "matrices": ["query", "key"]}, "value": -1.0}


def sphere_redraw(weights: dict) -> dict:
    return {"domain": {"geometry": "sphere"}, "model": {"beta": 2.0},
            "initial": {"kind": "uniform"}, "weights": weights,
            "particles": {"n": 8, "seed": 1, "save_attention": True, "integrator": "layers",
                          "layer_step": 0.05},
            "time": {"t_final": 1.5, "save_every": 0.25}}


def test_redraw_is_reproducible_and_depends_on_its_seed():
    cfg = sphere_redraw(REDRAW)
    one, two = meanfield.particles(cfg), meanfield.particles(cfg)
    np.testing.assert_array_equal(one.position.values, two.position.values)
    other = sphere_redraw({**REDRAW, "redraw": {**REDRAW["redraw"], "seed": 8}})
    assert np.max(np.abs(meanfield.particles(other).position.values[-1]
                         - one.position.values[-1])) > 1e-3


def test_redraw_switches_the_weights_at_the_stated_times():
    cfg = meanfield.config.validate(sphere_redraw(REDRAW), "particles")
    ds = meanfield.particles(cfg)
    blocks = [depth_heads(cfg, m)[0] for m in range(3)]
    for m, head in enumerate(blocks):  # block m's query and key: seeds derived from 7
        for j, name in enumerate(("query", "key")):
            spec = {"kind": "gaussian", "scale": 1.5, "seed": depth.derived_seed(7, m, j)}
            np.testing.assert_array_equal(getattr(head, name), weight_matrix(spec, 3, name))
        np.testing.assert_array_equal(head.value, -np.eye(3))
    assert not np.allclose(blocks[0].query, blocks[1].query)
    # the saved attention at t is that of the block in force at t: [0, 0.5) block 0,
    # [0.5, 1) block 1, [1, 1.5] block 2 (a switch belongs to the block it starts)
    for t, x, p in zip(ds.time.values, ds.position.values, ds.attention.values):
        m = min(int(np.floor(t / 0.5 + 1e-9)), 2)
        np.testing.assert_allclose(p, attention_matrix(x, blocks[m], beta=2.0),
                                   rtol=0, atol=1e-13)


def test_redraw_is_the_composition_of_its_blocks(tmp_path):
    cfg = meanfield.config.validate(config(REDRAW, "layers", t_final=1.0), "particles")
    both = meanfield.particles(cfg).position.values
    rows = [{k: getattr(depth_heads(cfg, m)[0], k).tolist() for k in ("query", "key",
                                                                       "value")}
            for m in (0, 1)]
    first = meanfield.particles(config(rows[0], "layers", t_final=0.5)).position.values
    second = meanfield.particles(from_tokens(config(rows[1], "layers", t_final=0.5),
                                             first[-1], tmp_path / "x.npy")).position.values
    np.testing.assert_array_equal(both, np.concatenate([first, second[1:]]))


# --- checkpoints: bit-identical resume ------------------------------------------------------

RESUMED = {**config({**REDRAW, "value": 1.0}, "layers", t_final=1.5, save_every=0.25),
           "particles": {**PURE["particles"], "integrator": "layers", "layer_step": 0.05,
                         "rescaled": True, "save_attention": True}}
PIECEWISE = config({"layers": [A, B]}, "ode, adaptive", save_every=0.75)


def test_layers_resume_from_a_save_is_bit_identical(tmp_path, monkeypatch):
    full = meanfield.particles(RESUMED)
    out = tmp_path / "r.nc"
    real, calls = runs.diagnostics, {"n": 0}

    def interrupting(*args):
        calls["n"] += 1  # (the diagnostics of each frame: Ctrl-C at the 4th save)
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(runs, "diagnostics", interrupting)
    part = meanfield.particles(RESUMED, out=out)
    monkeypatch.setattr(runs, "diagnostics", real)
    assert part.attrs["status"] == -1 and checkpoint_path(out).exists()
    resumed = meanfield.particles(RESUMED, out=out, resume=True)
    assert resumed.attrs["status"] == 0
    for var in ("position", "attention", "boolean_distance"):
        np.testing.assert_array_equal(resumed[var].values, full[var].values)


@pytest.mark.parametrize("cfg, stepper, stop", [(RESUMED, ml.LayerStepper, 13),
                                                (PIECEWISE, pm.TokenStepper, 100)],
                         ids=["layers", "ode cut at the switches"])
def test_resume_between_saves_is_bit_identical(cfg, stepper, stop, tmp_path, monkeypatch):
    full = meanfield.particles(cfg)
    out = tmp_path / "r.nc"
    real, steps = stepper.advance, {"n": 0}

    def advance(self, *args, on_state=None, **kw):
        def spy(t, *rest):
            on_state(t, *rest)  # (checkpoint_every tiny: written after each step)
            steps["n"] += 1
            if steps["n"] == stop:
                raise KeyboardInterrupt
        return real(self, *args, on_state=spy, **kw)

    monkeypatch.setattr(stepper, "advance", advance)
    cfg = {**cfg, "output": {"checkpoint_every": 1e-9}}
    part = meanfield.particles(cfg, out=out)
    monkeypatch.undo()
    ckpt = read_netcdf(checkpoint_path(out))
    assert part.attrs["status"] == -1 and "checkpoint_t" in ckpt.attrs  # between saves
    t_mid = float(ckpt.attrs["checkpoint_t"])  # after a switch of the weights (0.5, 1)
    assert t_mid not in full.time.values and 1.0 < t_mid < 1.5 if stepper is \
        pm.TokenStepper else 0.5 < t_mid < 0.75, t_mid
    resumed = meanfield.particles(cfg, out=out, resume=True)
    assert resumed.attrs["status"] == 0
    np.testing.assert_array_equal(resumed.position.values, full.position.values)


# --- the CLI ----------------------------------------------------------------------------

def test_cli_runs_layers_with_a_layers_list(tmp_path, capsys):
    toml = tmp_path / "l.toml"
    toml.write_text('[domain]\ngeometry = "euclidean"\ndim = 2\n'
                    '[initial]\nkind = "gaussian"\n'
                    '[particles]\nn = 8\nintegrator = "layers"\nlayer_step = 0.25\n'
                    '[[weights.layers]]\nvalue = 1.0\n'
                    '[[weights.layers]]\nvalue = -1.0\nquery = {kind = "gaussian", seed = 1}\n'
                    '[time]\nt_final = 2.0\nsave_every = 0.5\n')
    assert main(["particles", str(toml), "--no-progress"]) == 0
    ds = read_netcdf(tmp_path / "l.nc")
    assert ds.attrs["integrator"].startswith("layers") and ds.position.shape == (5, 8, 2)
    assert main(["particles", str(toml), "--no-progress", "--set",
                 "particles.layer_step=0.3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "time.save_every" in err, err
