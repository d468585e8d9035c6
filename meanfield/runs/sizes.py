"""Allocations of size d^2 and of the number of steps, estimated before any work.

``meanfield.runs.budget`` counts what grows with the tokens and the grid; these grow with
the dimension and the step instead, and were allocated before it was asked (``dim =
20000`` with weights: a MemoryError in the middle of building the heads; ``meanfield
convergence`` with ``time.dt = 1e-9``: a 3.7 GiB table of times):

- ``weight_matrix_bytes``: the dense ``d x d`` matrices of a run with weights: ``Q, K,
  V`` of each head and of each piece of depth held at once, the products the model forms
  of them (``Q^T K`` of each head and the temporaries of drawing them, ``MATRIX_COPIES``
  per matrix), the feed-forward layer's ``W`` and a Gaussian initial covariance with its
  Cholesky factor;
- ``check_time_table``: a table with an entry per time step (and half step), each with
  the state it holds, against the memory, and its step count against
  ``limits.MAX_STEPS``.

Both raise ``ConfigError`` naming the key, the size in GiB and what fits. Steps that
fit the memory can still take hours (``meanfield convergence`` with ``time.dt = 1e-7``:
1e7 steps, a table of 10 GB): ``warn_step_time`` says so in one line
(``budget.LongRunWarning``) before any work, naming the key, from a measured lower bound
of a step's cost.

Other d x d and n x n arrays and where they are counted: the initial equiangular tokens'
random rotation (a QR of a d x d Gaussian; ``budget._particle_parts``, key
``domain.dim``); the matrices config validation forms for ``particles.rescaled`` and the
rescaled layers (``meanfield.config.matrix_sizes``, before they are drawn); the dense
attention matrices (``budget.ATTENTION_ARRAYS``, ``n <= MAX_RANK_TOKENS``); the token
studies' n x n Gram and attention matrices (``budget.check_ensemble``: long-context's
equiangular sets in R^n included, ``ENSEMBLE_ARRAYS n^2`` each).
"""
from __future__ import annotations

import math
import warnings

from meanfield.config import depth_weights as depth
from meanfield.config import weights as wmod
from meanfield.config.checkers import describe
from meanfield.errors import ConfigError
from meanfield.runs import budget as bmod
from meanfield.runs.limits import check_steps

MATRIX_COPIES = 2.0  # per Q, K, V: itself and its share of the products and temporaries


def weight_matrix_count(cfg: dict) -> float:
    """How many dense ``d x d`` float64 matrices a run of ``cfg`` holds at once."""
    w = cfg.get("weights") or {}
    heads = len(wmod.head_specs(cfg)) if w else 0
    if depth.depth_key(w):
        t_final = (cfg.get("time") or {}).get("t_final", 1.0)
        heads *= len(depth.all_pieces(w, t_final))
    count = MATRIX_COPIES * 3 * heads + (1 if cfg.get("feedforward") else 0)
    initial = cfg.get("initial") or {}
    if cfg["domain"].get("geometry") == "euclidean" and initial.get("kind") == "gaussian":
        count += 2  # the covariance and its Cholesky factor
    return count + (1 if count else 0)  # the identity the plan compares Q^T K with


def weight_matrix_bytes(cfg: dict) -> float:
    """Bytes of ``weight_matrix_count`` matrices of ``domain.dim^2`` doubles."""
    d = cfg["domain"]["dim"]
    return weight_matrix_count(cfg) * float(d) * d * 8


def check_weight_matrices(cfg: dict, available: int | None = None) -> float:
    """Refuse, before any matrix is drawn, weights whose ``d x d`` matrices pass
    ``budget.MEMORY_MARGIN`` of the available memory: ``ConfigError`` naming
    ``domain.dim``, the size and the largest dimension that fits. Returns the bytes."""
    need = weight_matrix_bytes(cfg)
    limit = bmod.MEMORY_MARGIN * (bmod.available_memory() if available is None
                                  else available)
    if need > limit:
        count, d = weight_matrix_count(cfg), cfg["domain"]["dim"]
        fits = int(math.sqrt(limit / (8.0 * count)))
        raise ConfigError(f"domain.dim = {d}: the weights need {count:g} dense d x d "
                          f"matrices (Q, K, V of each head, their products, the "
                          f"covariance), about {need / bmod.GiB:.3g} GiB, but "
                          f"{limit / bmod.GiB:.3g} GiB are available "
                          f"({bmod.MEMORY_MARGIN:.0%} of the free memory); give domain.dim "
                          f"<= {fits} or fewer heads", "domain.dim")
    return need


def check_time_table(steps: float, per_step: float, state_bytes: float, key: str, value,
                     why: str, available: int | None = None) -> float:
    """Refuse a table of ``per_step`` entries per time step (each a time and a state of
    ``state_bytes``) that passes ``limits.MAX_STEPS`` steps or the memory:
    ``ConfigError`` naming ``key`` (= ``value``). Returns its bytes."""
    check_steps(steps, key, value, why, "raise it or shorten time.t_final")
    need = (steps * per_step + 1) * (8.0 + state_bytes)
    limit = bmod.MEMORY_MARGIN * (bmod.available_memory() if available is None
                                  else available)
    if need > limit:
        raise ConfigError(f"{key} = {describe(value)}: {why}, a table of "
                          f"{steps * per_step + 1:.3g} times and states, about "
                          f"{need / bmod.GiB:.3g} GiB, but {limit / bmod.GiB:.3g} GiB are "
                          f"available; raise {key} to at least "
                          f"{value * need / limit:.3g} or shorten time.t_final", key)
    return need


# Seconds of one token step of the convergence study at least: one member's RK4 step and
# the PDE's table entry (measured 3.6 ms of CPU a step at n = 16, resolution 64, under
# load on 2 cores: 1e3 -> 1e4 steps of dt 1e-3 -> 1e-4 took 6 -> 38 s); a third of it.
CONVERGENCE_STEP_S = 1e-3


def warn_step_time(steps: float, step_s: float, key: str, value, why: str) -> float:
    """Warn (``budget.LongRunWarning``, one line) before any work when ``steps`` time steps
    of at least ``step_s`` seconds each pass ``budget.LONG_RUN_S``; returns the seconds."""
    seconds = steps * step_s
    if seconds > bmod.LONG_RUN_S:
        warnings.warn(f"{key} = {describe(value)}: {why}, {steps:.3g} time steps of at "
                      f"least {step_s * 1e3:.3g} ms each: this run will take at least "
                      f"{seconds / 3600:.3g} h; raise {key} or shorten time.t_final",
                      bmod.LongRunWarning, stacklevel=3)
    return seconds
