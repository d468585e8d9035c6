"""``[weights]`` in the token studies that run many systems: the phase diagram and the
normalization study (docs/weights.md, "Random weights in the studies").

    [weights]  query, key, value [each "identity"]: the matrix specs of
               ``meanfield.config.weights`` (one head); per_system [false]: draw the
               random kinds ({kind = "gaussian" | "symmetric", ..., seed}) afresh for
               every system.

System ``s`` takes, for a random spec with seed ``k``, the same spec with the seed
``system_seed(k, s)`` (the first word of ``SeedSequence([k, s])``, below 2^63): its matrix
is ``weights.weight_matrix`` of that spec, so a system can be rerun alone as a particle
run, and the numbers of a system depend on nothing but the seeds and its index (not on
the workers, the members or the batch). Without ``per_system`` every system has the same
matrices. Non-random specs are the same in every system either way.

The studies have no ``[domain]``: the table is checked here without a dimension
(``validate_table``, from ``weights.validate_weights_section``) and its specs against each
dimension of the study by ``check_study_weights``, the task check of both studies (so a
bad spec is refused by ``validate`` before any work, naming its key).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from meanfield.config import checkers as ck
from meanfield.config import weights as wmod
from meanfield.config.study_weight_keys import validate_table  # noqa: F401 (re-exported)
from meanfield.errors import ConfigError

def is_random(spec: Any) -> bool:
    """Whether a clean spec is one of the random kinds (gaussian, symmetric)."""
    return isinstance(spec, dict) and spec.get("kind") in wmod.WEIGHT_KINDS


def study_dims(cfg: dict, task: str) -> list[int]:
    """The token dimensions of a study: ``phase_diagram.dims`` or ``[normalization.dim]``."""
    return list(cfg["phase_diagram"]["dims"]) if task == "phase_diagram" \
        else [cfg["normalization"]["dim"]]


def check_study_weights(cfg: dict, task: str | None = None) -> None:
    """The task check of the phase diagram and the normalization study: each spec of
    ``[weights]`` against every dimension of the study (cleaned in place), ``per_system``
    against the specs, and weights other than the identity against ``model.normalized``
    (general weights are softmax attention)."""
    w = cfg.get("weights")
    if not w:
        return
    if task is None:
        task = "phase_diagram" if "phase_diagram" in cfg else "normalization"
    for k in wmod.HEAD_KEYS:
        clean = None
        for d in study_dims(cfg, task):
            clean = wmod.clean_spec(w[k], d, f"weights.{k}")
        w[k] = clean
    if w["per_system"] and not any(is_random(w[k]) for k in wmod.HEAD_KEYS):
        raise ConfigError("weights.per_system = true draws the random kinds afresh for every "
                          "system, and none of weights.query, key, value is random: give "
                          "one as {kind = \"gaussian\", scale, seed} or {kind = "
                          "\"symmetric\", eigenvalues, seed}, or per_system = false",
                          "weights.per_system")
    if is_weighted(cfg) and not cfg["model"]["normalized"]:
        raise ConfigError("model.normalized = false with [weights] other than the identity: "
                          "the studies run general weights as normalized self-attention "
                          "(softmax rows); use normalized = true", "model.normalized")


def is_weighted(cfg: dict) -> bool:
    """Whether a validated study config has weights other than Q = K = V = I."""
    w = cfg.get("weights") or {}
    return any(w.get(k, "identity") not in ("identity", 1.0) for k in wmod.HEAD_KEYS)


def system_seed(seed: int, system: int) -> int:
    """The seed of a random spec (seed ``seed``) in system ``system``: the first word of
    ``SeedSequence([seed, system])``, below 2^63 (a weight seed)."""
    state = np.random.SeedSequence([int(seed), int(system)]).generate_state(1, np.uint64)
    return int(state[0] >> np.uint64(1))


def system_spec(spec: Any, system: int, per_system: bool) -> Any:
    """The clean spec that system ``system`` uses."""
    if per_system and is_random(spec):
        return {**spec, "seed": system_seed(spec["seed"], system)}
    return spec


def system_matrices(cfg: dict, d: int, system: int) -> tuple[np.ndarray, ...]:
    """``(Q, K, V)`` of system ``system`` in dimension ``d`` (validated config)."""
    w = cfg.get("weights") or {}
    per = bool(w.get("per_system", False))
    return tuple(wmod.weight_matrix(system_spec(w.get(k, "identity"), system, per), d,
                                    f"weights.{k}") for k in wmod.HEAD_KEYS)


def value_is_identity(cfg: dict) -> bool:
    """Whether V = I (then the tokens move in the span of the attention weights' rows)."""
    return (cfg.get("weights") or {}).get("value", "identity") in ("identity", 1.0)


def stacked(cfg: dict, d: int, systems: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``(M, V)`` of the systems ``systems``: ``M = Q^T K`` ``(S, d, d)`` (the logits are
    ``beta x_i^T M x_j``) and ``V`` ``(S, d, d)`` or None when V = I. Without
    ``per_system`` (or no random spec) the matrices are drawn once and repeated."""
    w = cfg.get("weights") or {}
    varies = bool(w.get("per_system", False)) and any(
        is_random(w.get(k)) for k in wmod.HEAD_KEYS)
    keep_v = not value_is_identity(cfg)
    m = np.empty((len(systems), d, d))
    v = np.empty((len(systems), d, d)) if keep_v else None
    for i, s in enumerate(systems):
        if i and not varies:
            m[i] = m[0]
            if keep_v:
                v[i] = v[0]
            continue
        q, k, val = system_matrices(cfg, d, int(s))
        m[i] = q.T @ k
        if keep_v:
            v[i] = val
    return m, v


__all__ = ["check_study_weights", "is_weighted", "stacked", "system_matrices",
           "system_seed", "system_spec", "validate_table"]
