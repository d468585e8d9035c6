"""Weights that change with depth: ``[weights] layers = [...]`` or ``redraw = {...}``.

A transformer's layers need not share their weights. With ``t`` the depth (one unit of
time per layer of unit step, docs/weights.md section 7):

- ``layers = [{query, key, value}, ...]``: entry m holds the weights of ``t`` in
  ``[m, m + 1)``, the last entry every later time. Each entry is a ``[weights]`` table of
  its own (``query``, ``key``, ``value`` as matrix specs, or ``heads = [...]``), every
  entry with the same number of heads; nothing else beside ``layers``.
- ``redraw = {every, kind, scale | eigenvalues, seed, matrices}``: fresh random matrices
  on each block ``[m every, (m + 1) every)``, of the random kinds of
  ``meanfield.config.weights`` (``"gaussian"`` with ``scale``, ``"symmetric"`` with
  ``eigenvalues``). ``matrices`` (default all three) names the ones redrawn; the others
  are the ``query``, ``key``, ``value`` given beside ``redraw`` (identity by default).
  Block m's matrix j (0 query, 1 key, 2 value) is the spec ``{kind, scale, seed =
  derived_seed(seed, m, j)}``: a seeded stream (numpy's ``SeedSequence``), so the same
  seed gives the same numbers, blocks and matrices independent draws.

This module knows only the specs (its checks receive the spec and head-table checkers of
``meanfield.config.weights``, which imports it); the matrices are built by
``weights.weight_matrix``, the models by ``meanfield.model.depth``.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from meanfield.config import checkers as ck
from meanfield.errors import ConfigError

DEPTH_KEYS = ("layers", "redraw")
MATRICES = ("query", "key", "value")  # (weights.HEAD_KEYS, in the order of derived_seed)
REDRAW_KEYS = ("every", "kind", "scale", "eigenvalues", "seed", "matrices")
# a depth time within this fraction of a unit of depth of a switch counts as on it (save
# times are multiples of save_every, switches of `every`: equal numbers rounded apart)
SWITCH_SLACK = 1e-9


def depth_key(table: Any) -> str | None:
    """``"layers"`` or ``"redraw"`` when the ``[weights]`` table changes with depth."""
    if not isinstance(table, dict):
        return None
    return next((k for k in DEPTH_KEYS if k in table), None)


def derived_seed(seed: int, block: int, matrix: int) -> int:
    """The seed of ``matrix`` (0 query, 1 key, 2 value) in redraw ``block``: the first
    word of ``SeedSequence([seed, block, matrix])``, below 2^63 (a weight seed)."""
    state = np.random.SeedSequence([int(seed), int(block), int(matrix)]).generate_state(
        1, np.uint64)
    return int(state[0] >> np.uint64(1))


def validate_depth(given: dict, d: int, name: str, head_table: Callable[[Any, str], dict],
                   clean_spec: Callable[[Any, int, str], Any]) -> dict:
    """The clean ``[weights]`` table with ``layers`` or ``redraw``.

    Args:
        given: the table as given (it has ``layers`` or ``redraw``).
        d: the token dimension.
        name: the section's name (``weights``).
        head_table: ``(table, key) -> clean table`` of one unit of depth (``{query, key,
            value}`` or ``{heads}``; ``weights.validate_weights_section``).
        clean_spec: ``weights.clean_spec`` (a random kind's parameters checked).

    Raises:
        ConfigError: naming the key, the value and what is accepted.
    """
    if all(k in given for k in DEPTH_KEYS):
        raise ConfigError(f"{name}.layers and {name}.redraw are both given: give the "
                          "weights of each unit of depth (layers) or a rule to draw them "
                          "(redraw), not both", f"{name}.redraw")
    if "layers" in given:
        return {"layers": _layers(given, name, head_table)}
    return _redraw(given, d, name, head_table, clean_spec)


def _layers(given: dict, name: str, head_table: Callable[[Any, str], dict]) -> list:
    extra = [k for k in given if k != "layers"]
    if extra:
        raise ConfigError(f"{name}.{extra[0]} beside {name}.layers: each entry of layers "
                          "holds all the weights of its unit of depth; move "
                          f"{extra[0]!r} into the entries", f"{name}.{extra[0]}")
    entries = given["layers"]
    if not isinstance(entries, (list, tuple)) or not entries:
        raise ConfigError(f"{name}.layers = {ck.describe(entries)} must be a non-empty list "
                          "of tables {query, key, value} (or {heads}), one per unit of "
                          f"depth ([[{name}.layers]] in TOML)", f"{name}.layers")
    clean = []
    for i, entry in enumerate(entries):
        key = f"{name}.layers[{i}]"
        if depth_key(entry):
            raise ConfigError(f"{key}.{depth_key(entry)}: an entry of {name}.layers is "
                              "one unit of depth's weights; it cannot change with depth "
                              "itself", f"{key}.{depth_key(entry)}")
        clean.append(head_table(entry, key))
        heads = [len(e.get("heads", [e])) for e in clean]
        if heads[-1] != heads[0]:
            raise ConfigError(f"{key} has {heads[-1]} heads and {name}.layers[0] has "
                              f"{heads[0]}: every unit of depth takes the same number of "
                              "heads (the saved attention has one matrix per head)", key)
    return clean


def _redraw(given: dict, d: int, name: str, head_table: Callable[[Any, str], dict],
            clean_spec: Callable[[Any, int, str], Any]) -> dict:
    key = f"{name}.redraw"
    if "heads" in given:
        raise ConfigError(f"{name}.heads with {key}: redrawn weights are one head "
                          "(query, key, value); give those beside redraw", f"{name}.heads")
    table = given["redraw"]
    if not isinstance(table, dict):
        raise ConfigError(f"{key} = {ck.describe(table)} must be a table {{every, kind, "
                          "scale | eigenvalues, seed, matrices}}", key)
    for k in table:
        if k not in REDRAW_KEYS:
            raise ConfigError(f"unknown key {key}.{k}; {ck.suggest(k, REDRAW_KEYS)}",
                              f"{key}.{k}")
    if "every" not in table:
        raise ConfigError(f"{key}.every is required: the units of depth between two draws "
                          "(a number > 0)", f"{key}.every")
    every = ck.finite_number(f"{key}.every", table["every"], minimum=0.0, strict=True)
    matrices = table.get("matrices", list(MATRICES))
    if (not isinstance(matrices, (list, tuple)) or not matrices
            or any(not isinstance(m, str) or m not in MATRICES for m in matrices)
            or len(set(matrices)) != len(matrices)):
        raise ConfigError(f"{key}.matrices = {ck.describe(matrices)} must be a non-empty "
                          f"list of distinct names among {', '.join(map(repr, MATRICES))}",
                          f"{key}.matrices")
    fixed_given = {k: v for k, v in given.items() if k != "redraw"}
    for k in fixed_given:
        if k in matrices:
            raise ConfigError(f"{name}.{k} is redrawn ({key}.matrices holds {k!r}); give "
                              f"{name}.{k} or redraw it, not both", f"{name}.{k}")
    fixed = head_table(fixed_given, name)
    if "kind" not in table:
        raise ConfigError(f"{key}.kind is required: the random kind of the matrices drawn "
                          "(\"gaussian\" or \"symmetric\")", f"{key}.kind")
    spec = clean_spec({k: v for k, v in table.items() if k not in ("every", "matrices")},
                      d, key)  # the kind's parameters, as a matrix spec of that kind
    return {**{k: fixed[k] for k in MATRICES if k not in matrices},
            "redraw": {**spec, "every": every, "matrices": list(matrices)}}


def unit(table: dict) -> float:
    """The depth between two switches of the weights: 1 (layers) or ``redraw.every``."""
    return float(table["redraw"]["every"]) if "redraw" in table else 1.0


def piece_at(table: dict, t: float) -> int:
    """The index of the weights in force at depth ``t`` (switches belong to the piece
    that starts there; a ``layers`` list keeps its last entry)."""
    u = unit(table)
    m = max(0, int(math.floor(t / u + SWITCH_SLACK)))
    return min(m, len(table["layers"]) - 1) if "layers" in table else m


def switch_times(table: dict, t_final: float) -> np.ndarray:
    """The depths in ``(0, t_final)`` where the weights change (ascending)."""
    u = unit(table)
    last = int(math.ceil(t_final / u - SWITCH_SLACK)) - 1  # the last m with m u < t_final
    if "layers" in table:
        last = min(last, len(table["layers"]) - 1)
    return u * np.arange(1, max(last, 0) + 1, dtype=float)


def specs_at(table: dict, piece: int) -> list[dict]:
    """The clean ``{query, key, value}`` specs of each head of ``piece``."""
    if "layers" in table:
        entry = table["layers"][min(piece, len(table["layers"]) - 1)]
        return entry["heads"] if "heads" in entry else [entry]
    draw = {k: v for k, v in table["redraw"].items() if k not in ("every", "matrices")}
    return [{k: ({**draw, "seed": derived_seed(draw["seed"], piece, j)}
                 if k in table["redraw"]["matrices"] else table.get(k, "identity"))
             for j, k in enumerate(MATRICES)}]


def all_pieces(table: dict, t_final: float) -> range:
    """The pieces a run to ``t_final`` uses."""
    return range(len(switch_times(table, t_final)) + 1)
