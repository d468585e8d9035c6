"""Configs written in Python (issue 19, item 4): numpy arrays and scalars are read as the
lists and numbers of a TOML file (they were refused: "convergence.n = array([100, 1000])
must be a non-empty list"); an ``out`` that is not a path is one ConfigError naming
``out`` (it was a TypeError from pathlib); convergence.p is 1 or 2 (1e308 wrote inf
distances with status "finished")."""
import numpy as np
import pytest

import meanfield
from meanfield import config
from meanfield.errors import ConfigError


@pytest.mark.parametrize("task, section, key, value, expected", [
    ("convergence", "convergence", "n", np.array([100, 1000]), [100, 1000]),
    ("convergence", "convergence", "n", (np.int64(10), 20), [10, 20]),
    ("contraction", "contraction", "beta", np.array([0.5, 1.0]), [0.5, 1.0]),
    ("phase_diagram", "phase_diagram", "beta", np.linspace(1, 2, 3), [1.0, 1.5, 2.0]),
    ("particles", "particles", "n", np.int64(100), 100),
    ("particles", "particles", "n", np.array(100), 100),  # a 0-d array: a number
])
def test_numpy_arrays_are_lists(task, section, key, value, expected):
    cfg = config.validate({section: {key: value}}, task)
    assert cfg[section][key] == expected
    assert type(cfg[section][key]) is type(expected)
    # the same as the TOML spelling of the value
    assert cfg == config.validate({section: {key: expected}}, task)


def test_numpy_vectors_and_tables_on_the_sphere():
    center = np.array([0.0, 0.0, 1.0])
    comps = np.array([{"kind": "von_mises", "center": center, "weight": np.float32(0.5)},
                      {"kind": "uniform", "weight": 0.5}], dtype=object)
    cfg = config.validate({"domain": {"geometry": "sphere"},
                           "initial": {"kind": "mixture", "components": comps}}, "evolve")
    first = cfg["initial"]["components"][0]
    assert first["center"] == [0.0, 0.0, 1.0] and first["weight"] == 0.5


def test_bad_values_in_arrays_still_name_their_key():
    with pytest.raises(ConfigError) as err:
        config.validate({"convergence": {"n": np.array([100, -5])}}, "convergence")
    assert err.value.key == "convergence.n[1]"
    with pytest.raises(ConfigError, match="nested deeper"):
        deep = []
        for _ in range(5000):
            deep = [deep]
        config.validate({"convergence": {"n": deep}}, "convergence")


@pytest.mark.parametrize("p", [3, 1.5, 1e308, 0.5])
def test_convergence_p_is_1_or_2(p):
    with pytest.raises(ConfigError, match="p = 1 or 2") as err:
        config.validate({"convergence": {"p": p}}, "convergence")
    assert err.value.key == "convergence.p"
    for ok in (1, 2, 2.0, np.int64(2)):
        assert config.validate({"convergence": {"p": ok}}, "convergence")[
            "convergence"]["p"] == float(ok)


@pytest.mark.parametrize("task, cfg", [
    ("evolve", {}), ("particles", {}), ("compare", {}), ("bifurcation", {}),
    ("convergence", {}), ("long_context", {}), ("metastability", {}),
    ("normalization", {}), ("phase_diagram", {}),
    ("contraction", {"contraction": {"sources": ["pde"]}}),
])
@pytest.mark.parametrize("out", [123, b"r.nc", ""])
def test_out_that_is_not_a_path(task, cfg, out, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="must be a file path") as err:
        getattr(meanfield, task)(cfg, out=out)
    assert err.value.key == "out"
    assert list(tmp_path.iterdir()) == []  # nothing written
