"""A seeded config fuzzer (issue 9): valid configs mutated key by key must validate or
give one ConfigError, never another exception; through the command line (``--set`` on a
TOML file, the run itself replaced) an invalid one ends in status 2 and one line."""
from __future__ import annotations

import copy
import json
import math
import tomllib

import numpy as np
import pytest

from meanfield import config
from meanfield.errors import ConfigError

SEED = 20261123
CASES = 300  # per base config

BASES = {  # name -> (task, a valid config)
    "circle-spectral": ("evolve", {
        "model": {"beta": 2.0, "kappa": 4.0, "normalized": True},
        "domain": {"geometry": "circle"},
        "discretization": {"method": "spectral", "resolution": 64, "cfl": 0.5},
        "initial": {"kind": "von_mises", "center": 1.0, "concentration": 2.0},
        "time": {"t_final": 1.0, "save_every": 0.1, "tolerance": 1e-8},
        "output": {"path": "out.nc", "checkpoint_every": 30.0}}),
    "sphere-finite-volume": ("evolve", {
        "model": {"beta": 1.0, "kappa": "inf"},
        "domain": {"geometry": "sphere", "dim": 3},
        "discretization": {"method": "finite-volume", "resolution": 642,
                           "negativity_tolerance": 1e-6, "threads": 2},
        "initial": {"kind": "mixture", "components": [
            {"kind": "perturbed", "degree": 2, "order": 1, "amplitude": 0.2, "weight": 2.0},
            {"kind": "samples", "path": "points.txt", "bandwidth": 0.3}]},
        "time": {"t_final": 2.0, "dt": 0.01, "save_every": 0.5}}),
    "particles": ("particles", {
        "model": {"beta": 4.0, "kappa": 10.0, "normalized": False},
        "domain": {"geometry": "sphere", "dim": 8},
        "initial": {"kind": "von_mises", "center": [0, 0, 0, 0, 0, 0, 0, 1],
                    "concentration": 3.0},
        "time": {"t_final": 1.0, "dt": 0.01, "save_every": 0.1},
        "particles": {"n": 50, "seed": 3, "architecture": "pre-ln", "sum_method": "direct",
                      "accuracy": 1e-10, "ensemble": 2, "bins": "auto"}}),
    "compare": ("compare", {
        "domain": {"geometry": "circle"},
        "initial": {"kind": "tokens", "path": "tokens.txt", "unit_rows": False},
        "particles": {"n": 20, "cluster_threshold": 0.01, "attention_rank": True},
        "parallel": {"workers": 2, "scheduler": "tcp://127.0.0.1:8786"}}),
}

# What replaces a value: wrong types, non-finite, out of range, unknown names, containers.
REPLACEMENTS = [
    "x", "", "auto", "inf", "nan", "spectral", "circle", "von_mises", True, False, None,
    math.nan, math.inf, -math.inf, 0, 0.0, -1, -1.5, 1, 2, 1e-300, 1e308, -1e308, 10**18,
    2**63, 10**400, 10**5000, [], [1, 2], [1.0, "a"], [[1]], {}, {"a": 1},
    {"start": 1, "stop": 2, "num": 3}, {"start": 1, "stop": 2, "num": 10**9},
    np.float32(0.5), np.int64(3), np.float64(math.nan), np.bool_(True), np.array([1.0, 2.0]),
    "unknown_name", "a\nb",
]


def _paths(tree, prefix=()):
    """Every path (tuple of keys and list indices) to a value or table of ``tree``."""
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield prefix + (i,)
            yield from _paths(v, prefix + (i,))


def _mutate(cfg: dict, rng: np.random.Generator) -> tuple[dict, tuple, str, object]:
    """One mutation of a copy of ``cfg``: (new config, path, how, value)."""
    cfg = copy.deepcopy(cfg)
    paths = list(_paths(cfg))
    path = paths[rng.integers(len(paths))]
    parent = cfg
    for step in path[:-1]:
        parent = parent[step]
    how = ["replace", "replace", "replace", "remove", "add", "wrap"][rng.integers(6)]
    value = REPLACEMENTS[rng.integers(len(REPLACEMENTS))]
    if how == "remove":
        del parent[path[-1]]
    elif how == "add" and isinstance(parent, dict):
        value = ["extra", "kappa", "beta", "n", "weight", "kind", "path"][rng.integers(7)]
        parent[value] = 1.0
    elif how == "wrap":
        value = [parent[path[-1]]] if rng.integers(2) else {"value": parent[path[-1]]}
        parent[path[-1]] = value
    else:
        parent[path[-1]] = copy.deepcopy(value)
    return cfg, path, how, value


def _outcome(cfg: dict, task: str) -> str | None:
    """None when ``cfg`` validates; the message of its ConfigError otherwise (any other
    exception fails the test)."""
    try:
        clean = config.validate(cfg, task)
    except ConfigError as exc:
        return str(exc)
    assert isinstance(clean, dict)
    config.to_json(clean)  # a valid config is stored in the result's attributes
    return None


@pytest.mark.parametrize("name", list(BASES))
def test_validate_accepts_or_raises_config_error(name):
    task, base = BASES[name]
    assert _outcome(base, task) is None
    rng = np.random.default_rng([SEED, list(BASES).index(name)])
    refused = 0
    for _ in range(CASES):
        cfg, path, how, value = _mutate(base, rng)
        if rng.integers(3) == 0:  # a second key too: the checks across keys
            cfg, path2, how2, value2 = _mutate(cfg, rng)
            path, how, value = (path, path2), (how, how2), (value, value2)
        try:
            message = _outcome(cfg, task)
        except Exception as exc:  # noqa: BLE001 - the fuzzer reports what escaped
            pytest.fail(f"{name}: {how} {path} with {value!r}: {type(exc).__name__}: {exc}")
        if message is not None:
            refused += 1
            assert message and "\n" not in message, (path, value, message)
    assert 0.3 * CASES < refused < CASES  # the mutations reach both outcomes


def _toml(value) -> str:
    """``value`` as TOML text (numbers, strings, booleans, lists, inline tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"


def _write_toml(path, cfg: dict) -> None:
    path.write_text("".join(f"[{section}]\n" + "".join(f"{k} = {_toml(v)}\n"
                                                         for k, v in keys.items())
                            for section, keys in cfg.items()))


TOML_VALUES = [v for v in REPLACEMENTS if isinstance(v, (bool, int, float, str, list, dict))
               and not isinstance(v, np.generic) and v != 10**5000]


class _Ran(Exception):
    """Raised by the stand-in for a run: the command line got past validation."""


@pytest.mark.parametrize("name", list(BASES))
def test_command_line_set_ends_in_status_2_or_runs(name, tmp_path, monkeypatch, capsys):
    import meanfield.runs.evolve
    import meanfield.runs.particles
    import meanfield.studies.transport.compare
    from meanfield.cli import main

    def ran(*args, **kwargs):
        raise _Ran

    for module, attr in ((meanfield.runs.evolve, "evolve"),
                         (meanfield.runs.particles, "particles"),
                         (meanfield.studies.transport.compare, "compare")):
        monkeypatch.setattr(module, attr, ran)
    task, base = BASES[name]
    toml = tmp_path / "run.toml"
    _write_toml(toml, base)
    keys = [f"{s}.{k}" for s, table in base.items() for k, v in table.items()
            if not isinstance(v, list)]
    rng = np.random.default_rng([SEED, 99, list(BASES).index(name)])
    outcomes = set()
    for _ in range(40):
        key = keys[rng.integers(len(keys))]
        value = TOML_VALUES[rng.integers(len(TOML_VALUES))]
        override = f"{key}={_toml(value)}"
        try:
            status = main([task, str(toml), "--set", override, "--no-progress"])
        except _Ran:
            status = 0
        err = capsys.readouterr().err
        # the same override applied to the same raw table, validated directly
        expected = _outcome(config.apply_overrides(tomllib.loads(toml.read_text()),
                                                   [override]), task)
        outcomes.add(expected is None)
        if expected is None:
            assert status == 0, (override, err)
        else:
            assert status == 2, (override, err)
            assert len(err.strip().splitlines()) == 1, (override, err)
    assert outcomes == {True, False}
