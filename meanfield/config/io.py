"""Reading and writing configs: TOML files, ``--set`` overrides, JSON for dataset
attributes, and the test whether a saved config describes the same run."""
from __future__ import annotations

import copy
import json
import math
import tomllib
from pathlib import Path
from typing import Any

from meanfield.config import input_files, registry
from meanfield.config.checkers import describe, suggest
from meanfield.config.renamed import migrate, renamed_key_error
from meanfield.errors import ConfigError


def parse_value(text: str) -> Any:
    """Parse the value of a ``--set key=value`` override as TOML (numbers, booleans,
    strings in quotes, lists ``[100, 200]``, inline tables ``{start = 1, stop = 2, num =
    5}``), else take the text as a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_overrides(config: dict, overrides: list[str]) -> dict:
    """Apply ``--set`` overrides to a raw config (a new dict; the input is not changed).

    Each override is ``section.key=value`` or, into a table value, ``section.table.key=
    value`` (any depth, e.g. ``bifurcation.kappa.start=1``); the value is parsed by
    ``parse_value``. Missing tables on the way are created.

    Raises:
        ConfigError: a malformed override (key ``--set``), an unknown section, a renamed
            key, or a path through a value that is not a table (naming that key).
    """
    config = copy.deepcopy(config)
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"--set {item!r} must look like section.key=value", "--set")
        dotted, text = item.split("=", 1)
        parts = dotted.strip().split(".")
        if len(parts) < 2 or not all(parts):
            raise ConfigError(f"--set {item!r}: the key must be section.key, e.g. model.beta",
                              "--set")
        renamed = renamed_key_error(".".join(parts[:2]))
        if renamed is not None:
            raise renamed
        if parts[0] not in registry.SECTIONS:
            raise ConfigError(f"--set: unknown section [{parts[0]}]; "
                              f"{suggest(parts[0], list(registry.SECTIONS))}", parts[0])
        table = config
        for depth, name in enumerate(parts[:-1]):
            table = table.setdefault(name, {})
            if not isinstance(table, dict):
                key = ".".join(parts[:depth + 1])
                raise ConfigError(f"--set {item!r}: {key} = {describe(table)} is a value, not a "
                                  f"table of keys; set it whole (--set {key}=VALUE; a scan "
                                  "range is written as a table: {start = 1, stop = 2, num = 5})",
                                  key)
        try:
            table[parts[-1]] = parse_value(text.strip())
        except (ValueError, RecursionError) as exc:  # an int over 4300 digits, deep nesting
            raise ConfigError(f"--set {describe(item)}: the value cannot be read: "
                              f"{describe(str(exc))}", "--set") from None
    return config


def load(path: str | Path, overrides: list[str] | None = None,
         task: str | None = None) -> dict:
    """Read a TOML config, apply ``--set`` overrides and validate it (for ``task``)."""
    path = Path(path)
    try:
        # utf-8-sig: a byte-order mark (written by some Windows editors) is dropped, not
        # read as the start of a TOML statement
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {str(path)!r} is not a text (UTF-8) TOML file: byte "
                          f"{exc.start} cannot be decoded", "config") from None
    except FileNotFoundError:
        raise ConfigError(f"config file {str(path)!r} does not exist", "config") from None
    except OSError as exc:
        raise ConfigError(f"config file {str(path)!r} cannot be read: {exc}", "config") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: TOML syntax error: {exc}", "config") from None
    except (ValueError, RecursionError) as exc:  # an int over 4300 digits, deep nesting
        raise ConfigError(f"{path}: the TOML cannot be read: {describe(str(exc))}",
                          "config") from None
    raw = apply_overrides(raw, overrides or [])
    # Relative input paths (weights files, samples, tokens) are relative to the config
    # file, as a user writing it expects, wherever the command runs: made absolute before
    # validation, which reads the weights files (the file checked is the file run).
    input_files.resolve(raw, path.parent)
    return registry.validate(raw, task)


def to_json(cfg: dict) -> str:
    """The config as a JSON string (``inf`` written as the string "inf") for attributes."""
    def enc(x):
        if isinstance(x, float) and math.isinf(x):
            return "inf"
        if isinstance(x, dict):
            return {k: enc(v) for k, v in x.items()}
        if isinstance(x, list):
            return [enc(v) for v in x]
        return x
    return json.dumps(enc(cfg), sort_keys=True)


def from_json(text: str) -> dict:
    """Inverse of ``to_json``: a validated config. Keys renamed since the config was
    saved (``RENAMED_KEYS``) are read under their new names: results stay readable."""
    raw = migrate(json.loads(text))
    # (validated as the task whose sections these are, when one task has exactly them: a
    # study's [weights] is checked against the study, not a [domain] it does not have)
    tasks = [t for t, taken in registry.TASKS.items() if set(taken) == set(raw)]
    return registry.validate({s: {k: v for k, v in keys.items() if v is not None}
                              if isinstance(keys, dict) else keys for s, keys in raw.items()},
                             tasks[0] if len(tasks) == 1 else None)


def same_run(saved_json: str, cfg: dict) -> bool:
    """Whether a config saved by ``to_json`` describes the same run as ``cfg`` (the
    ``[output]`` and ``[parallel]`` sections aside: where the result goes and how the work
    is spread do not change it): the test before resuming from a checkpoint."""
    saved, mine = from_json(saved_json), from_json(to_json(cfg))
    for c in (saved, mine):
        c.pop("output", None)
        c.pop("parallel", None)
    return saved == mine
