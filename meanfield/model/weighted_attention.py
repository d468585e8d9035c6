"""Velocity fields of self-attention with general weights (Q, K, V), several heads, a
feed-forward layer and causal masks, in R^d and on the sphere (docs/conventions.md).

Tokens ``x_i`` are the rows of an ``(n, d)`` array. One head ``(Q, K, V)`` attends with

    P_ij = e^{beta <Q x_i, K x_j>} / sum_l e^{beta <Q x_i, K x_l>}

(``mask = "causal"``: ``P_ij = 0`` for ``j > i``, token i attends to tokens 1..i). The
fields:

- pure self-attention in R^d (no normalization): ``dx_i/dt = sum_h sum_j P^h_ij V_h x_j``;
  with a feed-forward layer ``(W, sigma)`` the velocity is ``W sigma(a_i)``, ``a_i`` the
  attention term summed over the heads (sigma acts on the sum, once, as in one
  transformer block: attention, then the feed-forward map);
- the rescaled dynamics ``z_i = e^{-tV} x_i`` of one head:
  ``dz_i/dt = sum_j P_ij(t) V (z_j - z_i)``, ``P`` taken at ``x = e^{tV} z`` (the same
  attention coefficients as the pure flow). Only one head: the rescaling needs one V;
- post-LN on the sphere: ``dx_i/dt = P^perp_{x_i} sum_h sum_j P^h_ij V_h x_j`` (with a
  feed-forward layer ``P^perp_{x_i} W sigma(a_i)``). ``Q = K = V = I`` is the SA model of
  ``meanfield.model.particles``; ``V = -I`` the repulsive case, the gradient descent of
  ``E_beta`` with the positive weights ``1/Z_i`` (``Z_i`` the row sums), so the
  interaction energy decreases.

Every logit difference is formed before the exponential and every row is shifted by its
maximum, so no weight overflows at any ``beta <Q x, K x>``; the rescaled form never forms
``x = e^{tV} z`` (which grows like ``e^{t |V|}``): it forms ``B = E^T Q^T K E`` with
``E = e^{t(V - cI)}``, ``c`` the spectral abscissa of V, and carries ``e^{2tc}`` as a
logarithm.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.linalg import expm

from meanfield.model.particles import check_beta
from solvers.particles.direct import normalize_rows, tangent_projection

MASKS = ("none", "causal")
# Below this log of the logit scale, the scale itself is formed (e^700 < the double max)
LOG_SCALE_DIRECT = 700.0
ACTIVATIONS = {"relu": lambda a: np.maximum(a, 0.0), "tanh": np.tanh}


@dataclass(frozen=True)
class Head:
    """One attention head: ``(d, d)`` query, key and value matrices."""

    query: np.ndarray
    key: np.ndarray
    value: np.ndarray

    @classmethod
    def identity(cls, d: int, value: float = 1.0) -> Head:
        """``Q = K = I`` and ``V = value * I`` in dimension ``d``."""
        eye = np.eye(d)
        return cls(eye, eye.copy(), value * eye)


def check_head(head: Head, d: int) -> Head:
    """``head`` with float ``(d, d)`` finite matrices.

    Raises:
        ValueError: naming the matrix (``query``, ``key`` or ``value``) that is not a
            finite ``d x d`` array.
    """
    mats = {}
    for name in ("query", "key", "value"):
        m = np.asarray(getattr(head, name), dtype=float)
        if m.shape != (d, d):
            raise ValueError(f"head {name} must be a {d} x {d} matrix (the token "
                             f"dimension), got shape {m.shape}")
        if not np.all(np.isfinite(m)):
            raise ValueError(f"head {name} must be finite (found NaN or inf)")
        mats[name] = m
    return Head(**mats)


def _heads(heads: Head | Sequence[Head], d: int) -> list[Head]:
    seq = [heads] if isinstance(heads, Head) else list(heads)
    if not seq:
        raise ValueError("at least one head is needed")
    return [check_head(h, d) for h in seq]


def _tokens(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"tokens must be an (n, d) array, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("tokens must be finite (found NaN or inf)")
    return x


def _check_mask(mask: str) -> str:
    if mask not in MASKS:
        raise ValueError(f"mask must be one of {', '.join(MASKS)}, got {mask!r}")
    return mask


def _softmax(logits: np.ndarray, log_scale: float, mask: str) -> np.ndarray:
    """Rows of ``softmax(e^{log_scale} logits)`` (masked), without overflow.

    With ``D_ij = logits_ij - max_j logits_ij <= 0`` the weight is
    ``exp(-exp(log_scale + log(-D_ij)))``: 1 at the row maximum, in (0, 1] elsewhere,
    and 0 (not NaN) where the scaled difference passes the double range, so a scale
    such as ``e^{1400}`` (the rescaled form at large t) needs no product that overflows.
    ``log_scale = -inf`` (beta = 0) gives uniform rows.
    """
    g = np.array(logits, dtype=float)
    masked = np.triu(np.ones(g.shape, dtype=bool), 1) if mask == "causal" else None
    if masked is not None:
        g[masked] = -np.inf
    diff = g - np.max(g, axis=1, keepdims=True)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        if log_scale <= LOG_SCALE_DIRECT:  # the scale is a double: one rounding less
            w = np.exp(math.exp(log_scale) * diff)
        else:
            w = np.exp(-np.exp(log_scale + np.log(-diff)))
    if masked is not None:
        w[masked] = 0.0  # also where beta = 0 made 0 * inf
    return w / np.sum(w, axis=1, keepdims=True)


def attention_matrix(x: np.ndarray, head: Head, beta: float = 1.0,
                     mask: str = "none") -> np.ndarray:
    """The row-stochastic ``P_ij ∝ e^{beta <Q x_i, K x_j>}`` (``P_ij = 0`` for ``j > i``
    with ``mask = "causal"``).

    Args:
        x: ``(n, d)`` tokens.
        head: the weights (only Q and K enter).
        beta: inverse temperature >= 0.
        mask: ``"none"`` or ``"causal"``.

    Returns:
        ``(n, n)`` rows summing to 1; finite for any finite logits.
    """
    x = _tokens(x)
    head = check_head(head, x.shape[1])
    beta, mask = check_beta(beta), _check_mask(mask)
    logits = (x @ head.query.T) @ (x @ head.key.T).T  # <Q x_i, K x_j>
    return _softmax(logits, math.log(beta) if beta > 0 else -math.inf, mask)


def _feedforward(a: np.ndarray, feedforward: tuple | None) -> np.ndarray:
    """``W sigma(a_i)`` for each row (``a`` itself without a layer)."""
    if feedforward is None:
        return a
    weight, activation = feedforward
    if activation not in ACTIVATIONS:
        raise ValueError(f"feed-forward activation must be one of "
                         f"{', '.join(ACTIVATIONS)}, got {activation!r}")
    d = a.shape[1]
    w = np.asarray(weight, dtype=float)
    if w.shape != (d, d) or not np.all(np.isfinite(w)):
        raise ValueError(f"feed-forward weight must be a finite {d} x {d} matrix, got "
                         f"shape {w.shape}")
    return ACTIVATIONS[activation](a) @ w.T


def attention_term(x: np.ndarray, heads: Head | Sequence[Head], *, beta: float = 1.0,
                   mask: str = "none") -> np.ndarray:
    """``a_i = sum_h sum_j P^h_ij V_h x_j`` for each token (rows of an ``(n, d)`` array)."""
    x = _tokens(x)
    total = np.zeros_like(x)
    for h in _heads(heads, x.shape[1]):
        total += attention_matrix(x, h, beta, mask) @ (x @ h.value.T)
    return total


def pure_velocity(x: np.ndarray, heads: Head | Sequence[Head], *, beta: float = 1.0,
                  mask: str = "none", feedforward: tuple | None = None) -> np.ndarray:
    """Pure self-attention in R^d: ``dx_i/dt = a_i`` or ``W sigma(a_i)``.

    Args:
        x: ``(n, d)`` tokens.
        heads: one ``Head`` or several (their attention terms add up).
        beta: inverse temperature >= 0 (the paper's pure flow: 1).
        mask: ``"none"`` or ``"causal"``.
        feedforward: ``(W, activation)``, W ``(d, d)``, activation ``"relu"`` or
            ``"tanh"``, applied to the attention term summed over the heads; None: none.

    Returns:
        ``(n, d)`` velocities.
    """
    return _feedforward(attention_term(x, heads, beta=beta, mask=mask), feedforward)


def sphere_velocity(x: np.ndarray, heads: Head | Sequence[Head], *, beta: float = 1.0,
                    mask: str = "none", feedforward: tuple | None = None) -> np.ndarray:
    """Post-LN tokens on the sphere: ``dx_i/dt = P^perp_{x_i}`` of ``pure_velocity``.

    Args:
        x: ``(n, d)`` unit tokens (renormalised here, which only removes round-off).
        heads, beta, mask, feedforward: as in ``pure_velocity``.

    Returns:
        ``(n, d)`` tangent velocities.
    """
    x = normalize_rows(_tokens(x))
    return tangent_projection(x, pure_velocity(x, heads, beta=beta, mask=mask,
                                               feedforward=feedforward))


def _single_head(heads: Head | Sequence[Head], d: int) -> Head:
    seq = _heads(heads, d)
    if len(seq) != 1:
        raise ValueError(f"the rescaled dynamics takes one head, got {len(seq)}: the "
                         "rescaling z = e^{-tV} x needs a single value matrix V")
    return seq[0]


def rescaled_logits(z: np.ndarray, t: float, head: Head) -> tuple[np.ndarray, float]:
    """The logits ``<Q x_i, K x_j>`` at ``x = e^{tV} z`` as ``(L, s)``: they are
    ``e^s L_ij``, ``L = z B z^T``, ``B = E^T Q^T K E``, ``E = e^{t(V - cI)}`` with ``c`` the
    largest real part of V's eigenvalues (so E neither overflows nor vanishes on V's
    leading directions) and ``s = 2 t c``.
    """
    c = float(np.max(np.linalg.eigvals(head.value).real))
    e = expm(t * (head.value - c * np.eye(head.value.shape[0])))
    if not np.all(np.isfinite(e)):
        raise ValueError(f"e^(tV) cannot be formed at t = {t:g} (non-normal growth "
                         "beyond the double range); integrate to a smaller time")
    b = e.T @ head.query.T @ head.key @ e
    return z @ b @ z.T, 2.0 * t * c


def rescaled_attention(z: np.ndarray, t: float, heads: Head | Sequence[Head], *,
                       beta: float = 1.0, mask: str = "none") -> np.ndarray:
    """``P(t)`` of the rescaled tokens: ``attention_matrix(e^{tV} z)`` without forming x."""
    z = _tokens(z)
    head = _single_head(heads, z.shape[1])
    beta, mask = check_beta(beta), _check_mask(mask)
    logits, scale = rescaled_logits(z, float(t), head)
    return _softmax(logits, scale + math.log(beta) if beta > 0 else -math.inf, mask)


def rescaled_velocity(z: np.ndarray, t: float, heads: Head | Sequence[Head], *,
                      beta: float = 1.0, mask: str = "none") -> np.ndarray:
    """The rescaled dynamics ``dz_i/dt = sum_j P_ij(t) V (z_j - z_i)`` of one head.

    Args:
        z: ``(n, d)`` rescaled tokens ``z = e^{-tV} x``.
        t: the time (P is taken at ``x = e^{tV} z``).
        heads: one ``Head`` (a sequence of one is accepted; several are refused).
        beta, mask: as in ``pure_velocity``.

    Returns:
        ``(n, d)`` velocities of z; finite whenever ``e^{t(V - cI)}`` is (see
        ``rescaled_logits``), at any size of ``e^{tV}``.

    Raises:
        ValueError: several heads (the rescaling needs one V), bad shapes or values.
    """
    z = _tokens(z)
    head = _single_head(heads, z.shape[1])
    p = rescaled_attention(z, t, head, beta=beta, mask=mask)
    return (p @ z - z) @ head.value.T
