"""The config registry: task sections, registering a study's section, scan values (a list
or a range), nested and list ``--set`` overrides; every error names its key."""
from __future__ import annotations

import numpy as np
import pytest

from meanfield import config as cfgmod
from meanfield.config import registry
from meanfield.errors import ConfigError


def test_each_task_takes_its_sections():
    evolve = cfgmod.validate({}, task="evolve")
    assert set(evolve) == {"model", "domain", "discretization", "initial", "time", "output",
                           "weights"}
    assert set(cfgmod.validate({}, task="particles")) == set(evolve) | {"particles",
                                                                        "feedforward"}
    assert set(cfgmod.validate({}, task="compare")) == set(evolve) | {"particles",
                                                                      "parallel"}
    # no task: every registered section, as before tasks existed
    assert set(cfgmod.validate({})) == set(cfgmod.SECTIONS)


def test_section_a_task_does_not_take_lists_those_it_does():
    with pytest.raises(ConfigError) as err:
        cfgmod.validate({"particles": {"n": 10}}, task="evolve")
    assert err.value.key == "particles"
    assert "not taken by task 'evolve'" in str(err.value)
    assert "[model], [domain], [discretization], [initial], [time], [output]" in str(err.value)
    with pytest.raises(ConfigError) as err:
        cfgmod.validate({"parallel": {"workers": 2}}, task="particles")
    assert err.value.key == "parallel" and "[particles]" in str(err.value)


def test_unknown_task_and_section():
    with pytest.raises(ConfigError) as err:
        cfgmod.validate({}, task="evolv")
    assert err.value.key == "task" and "did you mean 'evolve'" in str(err.value)
    with pytest.raises(ConfigError) as err:
        cfgmod.validate({"partciles": {}}, task="particles")
    assert err.value.key == "partciles" and "did you mean 'particles'" in str(err.value)


def test_parallel_section():
    cfg = cfgmod.validate({"parallel": {"workers": 4}}, task="compare")
    assert cfg["parallel"] == {"workers": 4, "scheduler": None}
    for bad, key in (({"workers": 0}, "parallel.workers"),
                     ({"scheduler": 5}, "parallel.scheduler")):
        with pytest.raises(ConfigError) as err:
            cfgmod.validate({"parallel": bad}, task="compare")
        assert err.value.key == key


@pytest.fixture
def study(monkeypatch):
    """A study registering its section and task (undone after the test)."""
    monkeypatch.setattr(registry, "SECTIONS", dict(registry.SECTIONS))
    monkeypatch.setattr(registry, "TASKS", dict(registry.TASKS))
    cfgmod.register_section("scan", {
        "beta": (lambda k, v: cfgmod.list_or_range(k, v, minimum=0.0), [1.0]),
        "n": (lambda k, v: cfgmod.list_or_range(k, v, minimum=2, integers=True), [100]),
    })
    cfgmod.register_task("scan", cfgmod.task_sections("particles") + ("scan",))
    return "scan"


def test_a_registered_study_validates_its_section(study):
    cfg = cfgmod.validate({"scan": {"beta": {"start": 0.0, "stop": 2.0, "num": 5},
                                    "n": [100, 200]}}, task=study)
    np.testing.assert_array_equal(cfg["scan"]["beta"], np.linspace(0.0, 2.0, 5))
    assert cfg["scan"]["n"] == [100, 200] and "particles" in cfg
    with pytest.raises(ConfigError) as err:
        cfgmod.validate({"scan": {}}, task="evolve")
    assert err.value.key == "scan" and "not taken by task 'evolve'" in str(err.value)
    with pytest.raises(ConfigError) as err:
        cfgmod.validate({"scan": {"betas": [1.0]}}, task=study)
    assert err.value.key == "scan.betas" and "did you mean 'beta'" in str(err.value)


def test_registering_a_task_with_unknown_sections_fails():
    with pytest.raises(ValueError, match="not registered"):
        cfgmod.register_task("nothing", ("model", "no_such_section"))


# ---------------------------------------------------------------------------------------
# A list or a range.

def test_list_or_range_values():
    lr = cfgmod.list_or_range
    assert lr("s.b", [1, 2.5]) == [1.0, 2.5]
    assert lr("s.b", {"start": 1, "stop": 2, "num": 3}) == [1.0, 1.5, 2.0]
    assert lr("s.b", {"start": 2, "stop": 2, "num": 1}) == [2.0]
    assert lr("s.n", {"start": 100, "stop": 400, "num": 4}, integers=True) == [100, 200,
                                                                              300, 400]
    assert lr("s.n", [100, 200], integers=True) == [100, 200]
    values = lr("s.b", {"start": 0.1, "stop": 7.3, "num": 13})
    assert values == list(np.linspace(0.1, 7.3, 13))


BAD_SCANS = [
    ([], {}, "s.b", "non-empty list"),
    ("1,2", {}, "s.b", "non-empty list"),
    ([1, "x"], {}, "s.b[1]", "number"),
    ([1, float("nan")], {}, "s.b[1]", "finite"),
    ([1, -1], {"minimum": 0.0}, "s.b[1]", ">= 0"),
    ([2, 0], {"minimum": 0.0, "strict": True}, "s.b[1]", "> 0"),
    ([100, 150.5], {"integers": True}, "s.b[1]", "integer"),
    ({"start": 1, "stop": 2}, {}, "s.b.num", "missing"),
    ({"start": 1, "stop": 2, "num": 0}, {}, "s.b.num", ">= 1"),
    ({"start": 1, "stop": 2, "num": 2.0}, {}, "s.b.num", "integer"),
    ({"start": 1, "stop": 2, "num": 3, "step": 1}, {}, "s.b.step", "'start'"),
    ({"start": "a", "stop": 2, "num": 3}, {}, "s.b.start", "number"),
    ({"start": -1, "stop": 2, "num": 3}, {"minimum": 0.0}, "s.b.start", ">= 0"),
    ({"start": 3, "stop": -2, "num": 3}, {"minimum": 0.0}, "s.b.stop", ">= 0"),
    ({"start": 100, "stop": 200, "num": 4}, {"integers": True}, "s.b", "integers"),
]


@pytest.mark.parametrize("value, options, key, words", BAD_SCANS,
                         ids=[f"{b[2]}-{i}" for i, b in enumerate(BAD_SCANS)])
def test_list_or_range_errors_name_the_key(value, options, key, words):
    with pytest.raises(ConfigError) as err:
        cfgmod.list_or_range("s.b", value, **options)
    assert err.value.key == key and words in str(err.value), str(err.value)


# ---------------------------------------------------------------------------------------
# --set overrides.

def test_set_section_key_nested_table_and_list(study):
    raw = {"scan": {"beta": {"start": 0.0, "stop": 1.0, "num": 3}}}
    out = cfgmod.apply_overrides(raw, ["scan.beta.start=0.5", "scan.n=[100, 200]",
                                       "model.beta=2", "domain.geometry=\"sphere\""])
    assert raw["scan"]["beta"]["start"] == 0.0  # the input is not changed
    assert out["scan"]["beta"] == {"start": 0.5, "stop": 1.0, "num": 3}
    assert out["scan"]["n"] == [100, 200] and out["model"]["beta"] == 2
    cfg = cfgmod.validate(out, task=study)
    assert cfg["scan"]["beta"] == [0.5, 0.75, 1.0] and cfg["domain"]["geometry"] == "sphere"
    # a table built from nothing, and an inline table value
    out = cfgmod.apply_overrides({}, ["scan.beta.start=1", "scan.beta.stop=3",
                                      "scan.beta.num=3"])
    assert cfgmod.validate(out, task=study)["scan"]["beta"] == [1.0, 2.0, 3.0]
    out = cfgmod.apply_overrides({}, ["scan.beta={start = 0, stop = 1, num = 2}"])
    assert cfgmod.validate(out, task=study)["scan"]["beta"] == [0.0, 1.0]


def test_set_errors_name_the_key():
    cases = [
        (["model.beta"], "--set", "section.key=value"),
        (["beta=1"], "--set", "section.key"),
        (["model..beta=1"], "--set", "section.key"),
        (["modl.beta=1"], "modl", "did you mean 'model'"),
        (["particles.model=\"pre-ln\""], "particles.model", "particles.architecture"),
        (["particles.method.x=1"], "particles.method", "particles.sum_method"),
        (["model.beta.start=1"], "model.beta", "is a value, not a table of keys"),
    ]
    for overrides, key, words in cases:
        with pytest.raises(ConfigError) as err:
            cfgmod.apply_overrides({"model": {"beta": 1.0}}, overrides)
        assert err.value.key == key and words in str(err.value), (overrides, str(err.value))


def test_load_with_task(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[model]\nbeta = 2.0\n[particles]\nn = 10\n")
    cfg = cfgmod.load(path, ["particles.n=20"], task="particles")
    assert cfg["particles"]["n"] == 20 and "parallel" not in cfg
    with pytest.raises(ConfigError) as err:
        cfgmod.load(path, task="evolve")
    assert err.value.key == "particles"


def test_check_key():
    assert cfgmod.check_key("model.kappa", "inf") == float("inf")
    with pytest.raises(ConfigError) as err:
        cfgmod.check_key("model.beta", -2e8)  # (-1: accepted, on the circle only)
    assert err.value.key == "model.beta"
    with pytest.raises(ConfigError) as err:
        cfgmod.check_key("particles.model", "pre-ln")
    assert err.value.key == "particles.model" and "particles.architecture" in str(err.value)


def test_same_run_ignores_where_and_how_it_runs():
    cfg = cfgmod.validate({"model": {"beta": 2.0}}, task="compare")
    other = cfgmod.validate({"model": {"beta": 2.0}, "parallel": {"workers": 4},
                             "output": {"path": "x.nc"}}, task="compare")
    assert cfgmod.same_run(cfgmod.to_json(cfg), other)
    changed = cfgmod.validate({"model": {"beta": 3.0}}, task="compare")
    assert not cfgmod.same_run(cfgmod.to_json(cfg), changed)
