"""The keys of ``[weights]`` in the phase diagram and the normalization study, checked
without a dimension (those studies have no ``[domain]``): ``weights.validate_weights_section``
hands such a table here, and ``study_weights.check_study_weights`` checks its specs
against the study's dimensions (a module of its own: ``study_weights`` imports
``weights``).
"""
from __future__ import annotations

from meanfield.config import checkers as ck
from meanfield.errors import ConfigError

HEAD_KEYS = ("query", "key", "value")  # (weights.HEAD_KEYS)
STUDY_WEIGHT_KEYS = HEAD_KEYS + ("per_system",)
# the tasks whose [weights] is this table, and the dimensions of their tokens
STUDY_WEIGHT_TASKS = ("phase_diagram", "normalization")


def validate_table(given: dict, name: str = "weights") -> dict:
    """The keys of a study's ``[weights]`` (specs checked later, against the study's
    dimensions): ``{query, key, value, per_system}``."""
    for k in given:
        if k in ("heads", "layers", "redraw"):
            raise ConfigError(f"{name}.{k}: the phase diagram and the normalization study "
                              "take one head of constant weights (query, key, value, "
                              f"per_system); {k} are for particle runs (meanfield particles)",
                              f"{name}.{k}")
        if k not in STUDY_WEIGHT_KEYS:
            raise ConfigError(f"unknown key {name}.{k}; {ck.suggest(k, STUDY_WEIGHT_KEYS)}",
                              f"{name}.{k}")
    out = {k: ck.plain(given.get(k, "identity")) for k in HEAD_KEYS}
    out["per_system"] = ck.boolean(f"{name}.per_system", given.get("per_system", False))
    return out
