"""Acceptance 6 (issue 2): every bad input raises ConfigError naming the key, before any
work; the CLI prints one line and exits 2."""
from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield import ConfigError, evolve
from meanfield import config as cfgmod
from meanfield.cli import main

BAD = [
    # negative beta: the circle only (docs/conventions.md); one line says where
    ({"model": {"beta": -1.0}, "domain": {"geometry": "sphere"}}, "model.beta",
     "accepted on the circle only"),
    ({"model": {"beta": -2e8}}, "model.beta", ">= -1e"),
    ({"model": {"beta": math.nan}}, "model.beta", "finite"),
    ({"model": {"beta": math.inf}}, "model.beta", "finite"),
    ({"model": {"beta": "big"}}, "model.beta", "number"),
    ({"model": {"kappa": 0.0}}, "model.kappa", "> 0"),
    ({"model": {"kappa": -2.0}}, "model.kappa", "> 0"),
    ({"model": {"kappa": math.nan}}, "model.kappa", "> 0"),
    ({"model": {"kappa": "lots"}}, "model.kappa", "inf"),
    ({"model": {"normalized": "yes"}}, "model.normalized", "true or false"),
    ({"discretization": {"resolution": 4}}, "discretization.resolution", ">= 8"),
    ({"discretization": {"resolution": 64.0}}, "discretization.resolution", "integer"),
    ({"discretization": {"resolution": 64.5}}, "discretization.resolution", "integer"),
    ({"model": {"beta": 50.0}, "discretization": {"resolution": 64}},
     "discretization.resolution", "resolution >= 110"),
    ({"domain": {"geometry": "torus"}}, "domain.geometry", "'circle'"),
    ({"domain": {"geometry": "sphere"}, "discretization": {"method": "finite-volume",
                                                             "resolution": 1000}},
     "discretization.resolution", "accepted: 42, 162"),
    ({"discretization": {"method": "spectra"}}, "discretization.method",
     "did you mean 'spectral'"),
    ({"initial": {"kind": "gaussian"}}, "initial.kind", "von_mises"),
    ({"time": {"t_final": 0.0}}, "time.t_final", "> 0"),
    ({"time": {"t_final": -1.0}}, "time.t_final", "> 0"),
    ({"time": {"dt": 0.0}}, "time.dt", "> 0"),
    ({"time": {"dt": -0.1}}, "time.dt", "> 0"),
    ({"time": {"dt": "fast"}}, "time.dt", "auto"),
    ({"time": {"t_final": 1.0, "save_every": 2.0}}, "time.save_every", "t_final"),
    ({"model": {"betta": 1.0}}, "model.betta", "did you mean 'beta'"),
    ({"modle": {"beta": 1.0}}, "modle", "did you mean 'model'"),
    ({"initial": {"kind": "perturbed", "amplitude": 1.5}}, "initial.amplitude", "<= 1"),
    ({"initial": {"kind": "perturbed", "mode": 0}}, "initial.mode", ">= 1"),
    ({"initial": {"kind": "von_mises", "concentration": -1.0}}, "initial.concentration",
     ">= 0"),
    ({"initial": {"kind": "von_mises", "concentraton": 1.0}}, "initial.concentraton",
     "did you mean 'concentration'"),
    ({"initial": {"kind": "uniform", "center": 1.0}}, "initial.center", "'uniform'"),
    ({"initial": {"kind": "mixture", "components": []}}, "initial.components", "non-empty"),
    ({"initial": {"kind": "mixture", "components": [{"kind": "von_mises", "weight": -1.0}]}},
     "initial.components[0].weight", "> 0"),
    ({"initial": {"kind": "mixture", "components": [{"kind": "uniform", "weight": 1.0},
                                                    {"kind": "perturbed", "amplitude": -1.0,
                                                     "weight": 1.0},
                                                    {"kind": "perturbed", "amplitude": 1.0,
                                                     "weight": -3.0}]}},
     "initial.components[2].weight", "> 0"),
    ({"initial": {"kind": "samples"}}, "initial.path", "required"),
    ({"initial": {"kind": "samples", "path": "/nonexistent/x.npy"}}, "initial.path",
     "no such file"),
    ({"discretization": {"cfl": 1.5}}, "discretization.cfl", "<= 1"),
    ({"model": {"beta": 800.0, "normalized": False},
      "discretization": {"resolution": 512}}, "model.beta", "normalized = true"),
]


@pytest.mark.parametrize("config,key,words", BAD, ids=[b[1] for b in BAD])
def test_bad_input_raises_config_error_naming_key(config, key, words, monkeypatch):
    # "before any work": no time stepping may start
    import sys
    monkeypatch.setattr(sys.modules["meanfield.runs.evolve"], "integrate",
                        lambda *a, **k: pytest.fail("time stepping started"))
    with pytest.raises(ConfigError) as err:
        evolve(config)
    assert key in str(err.value)
    assert words in str(err.value)
    assert isinstance(err.value, ValueError)


def test_initial_density_negative_nan_or_massless(tmp_path):
    # A mixture whose weights make it negative cannot be written (weights > 0), so build the
    # cases the loader can meet: a samples file with NaN, and one with zero vectors.
    nan_file = tmp_path / "nan.txt"
    nan_file.write_text("0.1\nnan\n0.3\n")
    with pytest.raises(ConfigError, match="initial.path.*NaN"):
        evolve({"initial": {"kind": "samples", "path": str(nan_file)}})
    zero = tmp_path / "zero.npy"
    np.save(zero, np.array([[1.0, 0.0], [0.0, 0.0]]))
    with pytest.raises(ConfigError, match="initial.path.*zero vector"):
        evolve({"initial": {"kind": "samples", "path": str(zero)}})
    bad = tmp_path / "bad.txt"
    bad.write_text("1 2 3\n4 5\n")
    with pytest.raises(ConfigError, match="initial.path.*cannot be read"):
        evolve({"initial": {"kind": "samples", "path": str(bad)}})
    shape = tmp_path / "shape.npy"
    np.save(shape, np.ones((4, 3)))
    with pytest.raises(ConfigError, match="initial.path.*shape"):
        evolve({"initial": {"kind": "samples", "path": str(shape)}})


def test_initial_density_checks_values(monkeypatch):
    from meanfield.initial import circle as initial
    from solvers.grids.circle import CircleGrid
    grid = CircleGrid(16)
    th = grid.theta
    for values, words in [(np.full(16, np.nan), "NaN"), (np.cos(th), "negative"),
                          (np.zeros(16), "no mass")]:
        monkeypatch.setattr(initial, "density_function", lambda _i, v=values: lambda t: v)
        with pytest.raises(ConfigError, match=words) as err:
            initial.initial_values({"kind": "uniform"}, grid)
        assert err.value.key == "initial"


def test_unresolved_initial_density_names_needed_resolution():
    with pytest.raises(ConfigError, match=r"resolution >= \d+") as err:
        evolve({"initial": {"kind": "von_mises", "concentration": 500.0},
                "discretization": {"resolution": 64}})
    assert err.value.key == "discretization.resolution"


def test_toml_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[model\nbeta = 1\n")
    with pytest.raises(ConfigError, match="TOML syntax error"):
        cfgmod.load(bad)
    typo = tmp_path / "typo.toml"
    typo.write_text("[model]\nkapa = 3\n")
    with pytest.raises(ConfigError, match="did you mean 'kappa'") as err:
        cfgmod.load(typo)
    assert err.value.key == "model.kapa"
    with pytest.raises(ConfigError, match="does not exist"):
        cfgmod.load(tmp_path / "missing.toml")


@pytest.mark.parametrize("text,overrides,words", [
    ("[model]\nbeta = -3\n[domain]\ngeometry = \"zonal\"\n", [], "model.beta"),
    ("[model\n", [], "TOML syntax error"),
    ("[model]\nbeta = 1\n", ["model.kappa=0"], "model.kappa"),
    ("[model]\nbeta = 1\n", ["nonsense"], "section.key=value"),
    ("[model]\nbeta = 1\n", ["discretization.method=\"chebyshev\""], "discretization.method"),
])
def test_cli_prints_one_line_and_exits_2(tmp_path, capsys, text, overrides, words):
    path = tmp_path / "c.toml"
    path.write_text(text)
    argv = ["evolve", str(path), "--no-progress"]
    for o in overrides:
        argv += ["--set", o]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert words in err


def test_cli_unknown_command_and_missing_result(capsys, tmp_path):
    assert main(["frobnicate"]) == 2
    assert main(["plot", str(tmp_path / "none.nc")]) == 2
    assert main(["particles", str(tmp_path / "x.toml")]) == 2
    assert main(["metastability", "x.toml"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 4 and "does not exist" in lines[2]
    assert "does not exist" in lines[3]  # metastability is available (issue 12, item 4)
