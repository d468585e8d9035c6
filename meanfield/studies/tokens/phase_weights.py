"""The batched token engine of systems with their own weights (Q, K, V): the phase
diagram's field when ``[weights]`` is given (docs/weights.md, "Random weights in the
studies"), and the normalization study's (``normalization_weights``).

The weights of the systems are stacked: ``M = Q^T K`` ``(S, d, d)`` and, unless V = I,
``V`` ``(S, d, d)`` (``meanfield.config.study_weights.stacked``, system ``s``'s matrices
drawn from the seeds keyed by ``(seed, s)``). Row ``k`` of a batch is system
``where[k]`` of the stacks, and a field evaluation gathers the stacks of the rows it gets
(``index``, the live rows of ``solvers.steppers.dormand_prince.integrate_batch_dopri``)
and attends for all of them in batched products, no Python loop per system:

    L = beta (X M) X^T  (logits beta <Q x_i, K x_j>, each row shifted by its maximum),
    P = softmax rows of L,   A = P X V^T  (A_i = sum_j P_ij V x_j),

then the architecture's velocity of ``A`` (``velocity``): Post-LN ``A - <x, A> x`` on
the sphere; on the directions ``theta = x/|x|`` Pre-LN ``A``, Peri-LN ``A/|A|``, nGPT
``alpha P^perp_theta(A/|A|)``. Q = K = V = I gives the models of
``meanfield.model.particles`` and ``meanfield.model.normalizations`` (tested to
round-off), and one system is the single-system Post-LN model of
``meanfield.model.weighted_particles`` with that system's matrices (tested).

Cost per evaluation and system: ``n d^2`` for ``X M`` (and as much for ``V``) and
``n^2 d`` for the logits and the average: the d x d products dominate once d > n, so
the tokens and the weights are held in full (no reduction to the span: with random Q, K
the logits need the tokens, with random V the tokens leave their span).
Written against the array API (numpy, torch, CuPy), as the phase diagram's other engines.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import array_api_compat
import numpy as np

from meanfield.config.study_weights import stacked, value_is_identity
from meanfield.model.ensemble import uniform_ensemble

DIRECTION_ARCHITECTURES = ("pre-ln", "peri-ln", "ngpt")  # attention of the directions


@dataclass
class SystemWeights:
    """The stacked weights of some systems: ``m`` ``(S, d, d)`` (``Q^T K``), ``v``
    ``(S, d, d)`` or None (V = I), and whether the study may freeze clustered systems
    (V = I: the smallest cosine never decreases once >= 0, as for Q = K = V = I: the
    attention weights are positive whatever Q and K)."""

    m: np.ndarray
    v: np.ndarray | None

    @classmethod
    def of(cls, cfg: dict, d: int, systems: np.ndarray) -> SystemWeights:
        """The weights of ``systems`` in dimension ``d`` of a validated study config."""
        m, v = stacked(cfg, d, np.asarray(systems))
        return cls(m, v)

    @property
    def freezes(self) -> bool:
        return self.v is None

    def on(self, xp: Any, device: Any, dtype: Any) -> tuple[Any, Any]:
        """The stacks as arrays of ``xp`` on ``device``."""
        m = xp.asarray(self.m, dtype=dtype, device=device)
        v = None if self.v is None else xp.asarray(self.v, dtype=dtype, device=device)
        return m, v


def attention(x: Any, m: Any, v: Any, beta: Any, xp: Any) -> Any:
    """``A = P X V^T`` of a batch ``x`` (B, n, d) with the rows' ``m``, ``v`` (B, d, d)
    (``v`` None: V = I) and ``beta`` (B, 1, 1) (module docstring)."""
    logits = (x @ m) @ xp.matrix_transpose(x)
    logits = logits * beta
    logits = logits - xp.max(logits, axis=-1, keepdims=True)
    p = xp.exp(logits)
    p = p / xp.sum(p, axis=-1, keepdims=True)
    a = p @ x
    return a if v is None else a @ xp.matrix_transpose(v)


def _unit(a: Any, xp: Any) -> Any:
    return a / xp.sqrt(xp.sum(a * a, axis=-1, keepdims=True))


def velocity(architecture: str, x: Any, m: Any, v: Any, beta: Any, xp: Any,
             alpha: float = 1.0) -> Any:
    """The velocity of ``architecture`` ("post-ln", "pre-ln", "peri-ln", "ngpt") of the
    batch ``x`` (module docstring)."""
    if architecture in DIRECTION_ARCHITECTURES:
        th = _unit(x, xp)
        a = attention(th, m, v, beta, xp)
        if architecture == "pre-ln":
            return a
        u = _unit(a, xp)
        if architecture == "peri-ln":
            return u
        return alpha * (u - xp.sum(th * u, axis=-1, keepdims=True) * th)
    a = attention(x, m, v, beta, xp)
    return a - xp.sum(x * a, axis=-1, keepdims=True) * x


def batch_field(architecture: str, beta: np.ndarray, weights: SystemWeights,
                where: np.ndarray, like: Any, alpha: float = 1.0):
    """``f(x, index)`` for ``integrate_batch_dopri``: row ``k`` is system ``where[k]`` of
    ``weights`` with ``beta[k]`` (``like``: an array of the library, device and dtype of
    the states)."""
    xp = array_api_compat.array_namespace(like)
    device, dtype = array_api_compat.device(like), like.dtype
    m_all, v_all = weights.on(xp, device, dtype)
    beta = np.asarray(beta, dtype=float)
    where = np.asarray(where)

    def f(x: Any, index: np.ndarray) -> Any:
        rows = where[index]
        if rows.size == m_all.shape[0] and np.array_equal(rows, np.arange(rows.size)):
            m, v = m_all, v_all  # (every system, in order: no copy of the stacks)
        else:
            rows = xp.asarray(rows, device=device)
            m = xp.take(m_all, rows, axis=0)
            v = None if v_all is None else xp.take(v_all, rows, axis=0)
        b = xp.asarray(beta[index].reshape(-1, 1, 1), dtype=dtype, device=device)
        return velocity(architecture, x, m, v, b, xp, alpha)
    return f


def initial_tokens(n: int, d: int, systems: np.ndarray, seed: int) -> np.ndarray:
    """``(S, n, d)`` i.i.d. uniform tokens of the systems ``systems`` (system ``s`` from
    ``system_rng(seed, s, "initial")``, whatever the others)."""
    return np.concatenate([uniform_ensemble(1, n, d, seed, first=int(s)) for s in systems])


def weights_summary(cfg: dict) -> str:
    """One line for a dataset's attrs: the specs and whether they are drawn per system."""
    w = cfg.get("weights") or {}
    parts = [f"{k} = {w.get(k, 'identity')}" for k in ("query", "key", "value")]
    return "; ".join(parts) + ("; drawn afresh per system (seeds keyed by (seed, system))"
                               if w.get("per_system") else "; the same in every system")


__all__ = ["SystemWeights", "attention", "batch_field", "initial_tokens",
           "value_is_identity", "velocity", "weights_summary"]
