"""Valid input the config once refused or crashed on (issue 9): numpy scalars in the
Python API, and binary garbage as a TOML file (one ConfigError naming the file)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield import config
from meanfield.errors import ConfigError


def test_numpy_scalars_are_numbers():
    cfg = config.validate({
        "model": {"beta": np.float32(2.5), "kappa": np.int64(4), "normalized": np.bool_(True)},
        "discretization": {"resolution": np.int64(128), "cfl": np.float64(0.5)},
        "time": {"t_final": np.int32(2), "dt": np.float32(0.25), "save_every": np.float64(1)},
        "particles": {"n": np.int64(100), "seed": np.uint32(7)},
    }, "particles")
    assert cfg["model"]["beta"] == 2.5 and type(cfg["model"]["beta"]) is float
    assert cfg["model"]["kappa"] == 4.0 and type(cfg["model"]["kappa"]) is float
    assert cfg["model"]["normalized"] is True
    assert cfg["discretization"]["resolution"] == 128
    assert type(cfg["discretization"]["resolution"]) is int
    assert type(cfg["particles"]["n"]) is int and type(cfg["particles"]["seed"]) is int
    assert cfg["time"]["dt"] == 0.25 and type(cfg["time"]["t_final"]) is float


def test_numpy_vectors_and_ranges():
    cfg = config.validate({"domain": {"geometry": "sphere"}, "initial": {
        "kind": "von_mises", "center": [np.float64(0), np.int64(0), np.float32(1)]}})
    assert cfg["initial"]["center"] == [0.0, 0.0, 1.0]
    assert config.list_or_range("k", {"start": np.int64(1), "stop": np.float32(2),
                                      "num": np.int64(3)}) == [1.0, 1.5, 2.0]


@pytest.mark.parametrize("value", [np.bool_(True), True, "1", None, [1.0]])
def test_not_numbers_still_refused(value):
    with pytest.raises(ConfigError, match="must be a number") as info:
        config.finite_number("model.beta", value)
    assert info.value.key == "model.beta"


def test_huge_integer_is_not_finite():
    with pytest.raises(ConfigError, match="finite"):
        config.validate({"model": {"beta": 10**400}})
    assert math.isinf(config.checkers.number("k", -(10**400)))


def test_binary_toml_file_is_one_config_error(tmp_path):
    path = tmp_path / "garbage.toml"
    path.write_bytes(bytes(range(128, 256)) * 3)
    with pytest.raises(ConfigError) as info:
        config.load(path)
    assert info.value.key == "config"
    assert str(path) in str(info.value) and "UTF-8" in str(info.value)


def test_binary_toml_on_the_command_line_exits_2(tmp_path, capsys):
    from meanfield.cli import main
    path = tmp_path / "garbage.toml"
    path.write_bytes(b"\xff\xfe\x00model\x80")
    assert main(["evolve", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "garbage.toml" in err


def test_toml_beyond_what_python_reads_is_one_config_error(tmp_path):
    # an integer over 4300 digits (int() refuses it) and nesting past the recursion limit
    path = tmp_path / "huge.toml"
    path.write_text("[model]\nbeta = " + "9" * 5000 + "\n")
    with pytest.raises(ConfigError, match="cannot be read") as info:
        config.load(path)
    assert info.value.key == "config" and len(str(info.value)) < 400
    with pytest.raises(ConfigError, match="cannot be read") as info:
        config.apply_overrides({}, ["model.beta=" + "[" * 3000 + "]" * 3000])
    assert info.value.key == "--set"


def test_integers_beyond_64_bits_are_refused_with_a_short_message():
    with pytest.raises(ConfigError, match="64-bit") as info:
        config.validate({"particles": {"n": 10**5000}}, "particles")
    assert info.value.key == "particles.n" and "about 5001 digits" in str(info.value)
