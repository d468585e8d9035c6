"""Velocity fields of self-attention with general weights (Q, K, V), several heads, a
feed-forward layer and causal masks, in R^d and on the sphere (docs/conventions.md).

Tokens ``x_i`` are the rows of an ``(n, d)`` array; every function also takes a batch
``(B, n, d)`` of independent systems with the same weights (``np.matmul`` broadcasting:
no Python loop per system; ``meanfield.model.ensemble`` runs such batches). One head
``(Q, K, V)`` attends with

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
logarithm (``RescaledForm``: V decomposed once, E by its eigenvalues where that is
accurate, by expm where not, the last stage times cached).

Cost of a velocity: per head the two ``n x n x d`` products (logits, then weights times
values) and ``n^2`` exponentials, in blocks of rows that stay in cache (``_attend``: no
``n x n`` array, memory ``O(n d)`` beyond a block); measured at n = 4096, d = 128:
0.75-1.25x the time of the two plain products (benchmarks/bench_weighted_attention.py).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from meanfield.config.weights import head_matrices
from meanfield.model.particles import check_beta
from solvers.matrix_exponential import ShiftedExponential
from solvers.particles.direct import normalize_rows, tangent_projection

MASKS = ("none", "causal")
# Below this log of the logit scale, the scale itself is formed (e^700 < the double max)
LOG_SCALE_DIRECT = 700.0
# Weights per block of rows in ``_attend`` (8 MB of doubles, blocks of 256 rows at
# n = 4096): at n = 4096, d = 128 (one BLAS thread, shared 2-core machine) the velocity
# took 0.75-1.25x the time of its two plain n x n x d products (whose n x n results go
# through memory), against 1.2-1.8x through the full n x n matrix (1024-row blocks or
# more: as slow as the full matrix); benchmarks/bench_weighted_attention.py
BLOCK = 2**20
# RescaledForm: the times kept (a step-doubling RK4 attempt evaluates 12 stages at 5 or
# 6 distinct times)
CACHED_TIMES = 8
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


def build_heads(cfg: dict) -> tuple[Head, ...]:
    """The heads of a validated config (absent ``[weights]``: one identity head of
    dimension ``domain.dim``; the matrices: ``meanfield.config.weights.head_matrices``)."""
    return tuple(Head(*matrices) for matrices in head_matrices(cfg))


def _heads(heads: Head | Sequence[Head], d: int) -> list[Head]:
    seq = [heads] if isinstance(heads, Head) else list(heads)
    if not seq:
        raise ValueError("at least one head is needed")
    return [check_head(h, d) for h in seq]


def _tokens(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim not in (2, 3) or x.shape[-2] < 1 or x.shape[-1] < 1:
        raise ValueError(f"tokens must be an (n, d) array or a batch (B, n, d), got shape "
                         f"{x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("tokens must be finite (found NaN or inf)")
    return x


def _check_mask(mask: str) -> str:
    if mask not in MASKS:
        raise ValueError(f"mask must be one of {', '.join(MASKS)}, got {mask!r}")
    return mask


def _log_scale(beta: float) -> float:
    return math.log(beta) if beta > 0 else -math.inf


def _transposed(a: np.ndarray) -> np.ndarray:
    """The last two axes swapped (a batch of transposes)."""
    return a.swapaxes(-1, -2)


def _weights(logits: np.ndarray, log_scale: float, mask: str,
             first_row: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Unnormalised rows of ``softmax(e^{log_scale} logits)`` (masked) and their sums,
    without overflow; ``logits`` (``(..., rows, columns)``, a temporary of the caller) is
    overwritten with the weights, so no other array of its size is made.

    With ``D_ij = logits_ij - max_j logits_ij <= 0`` the weight is ``exp(e^{log_scale}
    D_ij)``, formed as ``exp(-exp(log_scale + log(-D_ij)))`` when ``e^{log_scale}`` is
    beyond ``e^700``: 1 at the row maximum, in [0, 1] elsewhere, and 0 (not NaN) where
    the scaled difference passes the double range, so a scale such as ``e^{1400}`` (the
    rescaled form at large t) needs no product that overflows. ``log_scale = -inf``
    (beta = 0) gives uniform rows. Each row sum is >= 1 (the maximum's weight).

    Args:
        logits: the logits of tokens ``first_row, first_row + 1, ...`` (rows) against
            tokens ``0, 1, ...`` (columns); overwritten.
        log_scale: log of the factor of the logits (``log beta``, -inf for beta = 0).
        mask: ``"causal"`` zeroes column j of the row of token i for ``j > i``.
        first_row: the token of the first row (blocks of rows).

    Returns:
        ``(w, s)``: ``w`` (the array ``logits``) and ``s`` ``(..., rows, 1)`` its row
        sums; the attention rows are ``w / s``.
    """
    w = logits
    masked = None
    if mask == "causal":
        rows, cols = w.shape[-2:]
        masked = np.arange(cols) > np.arange(first_row, first_row + rows)[:, None]
        np.copyto(w, -np.inf, where=masked)
    w -= np.max(w, axis=-1, keepdims=True)  # the diagonal is never masked: max finite
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        if log_scale <= LOG_SCALE_DIRECT:  # the scale is a double: one rounding less
            if log_scale != 0.0:
                w *= math.exp(log_scale)
            np.exp(w, out=w)
        else:
            np.negative(w, out=w)
            np.log(w, out=w)
            w += log_scale
            np.exp(w, out=w)
            np.negative(w, out=w)
            np.exp(w, out=w)
    if masked is not None:
        np.copyto(w, 0.0, where=masked)  # also where beta = 0 made 0 * inf
    return w, np.sum(w, axis=-1, keepdims=True)


def _attend(queries: np.ndarray, keys_t: np.ndarray, values: np.ndarray,
            log_scale: float, mask: str) -> np.ndarray:
    """``sum_j P_ij values_j`` with ``P`` the rows of ``softmax(e^{log_scale} queries
    keys_t)`` (masked), in blocks of rows: no ``n x n`` array is formed.

    A block holds about ``BLOCK`` weights, so its softmax passes run in cache beside
    the two products (``(W_block values) / s``: the ``n x d`` result is divided, not
    the weights). With the causal mask a block takes only the columns up to its last
    row (half the work).

    Args:
        queries: ``(..., n, k)``; keys_t: ``(..., k, n)``; values: ``(..., n, m)``.
        log_scale, mask: as in ``_weights``.

    Returns:
        ``(..., n, m)``.
    """
    n = queries.shape[-2]
    systems = math.prod(queries.shape[:-2])
    step = max(1, BLOCK // (systems * n))
    out = np.empty(queries.shape[:-1] + values.shape[-1:])
    for r0 in range(0, n, step):
        r1 = min(n, r0 + step)
        cols = r1 if mask == "causal" else n
        w, s = _weights(queries[..., r0:r1, :] @ keys_t[..., :cols], log_scale, mask, r0)
        block = out[..., r0:r1, :]
        np.matmul(w, values[..., :cols, :], out=block)
        block /= s
        del w  # before the next block is made: one block alive at a time
    return out


def _softmax(logits: np.ndarray, log_scale: float, mask: str) -> np.ndarray:
    """Rows of ``softmax(e^{log_scale} logits)`` (masked), in place (``_weights``)."""
    w, s = _weights(logits, log_scale, mask)
    w /= s
    return w


def _head_logits(x: np.ndarray, head: Head) -> np.ndarray:
    """``<Q x_i, K x_j>`` as one ``(..., n, n)`` product of ``x Q^T`` and ``x K^T``."""
    return (x @ head.query.T) @ _transposed(x @ head.key.T)


def attention_matrix(x: np.ndarray, head: Head, beta: float = 1.0,
                     mask: str = "none") -> np.ndarray:
    """The row-stochastic ``P_ij ∝ e^{beta <Q x_i, K x_j>}`` (``P_ij = 0`` for ``j > i``
    with ``mask = "causal"``).

    Args:
        x: ``(n, d)`` tokens, or a batch ``(B, n, d)`` of systems (the same head for all).
        head: the weights (only Q and K enter).
        beta: inverse temperature >= 0.
        mask: ``"none"`` or ``"causal"``.

    Returns:
        ``(n, n)`` (``(B, n, n)``) rows summing to 1; finite for any finite logits.
    """
    x = _tokens(x)
    head = check_head(head, x.shape[-1])
    beta, mask = check_beta(beta), _check_mask(mask)
    return _softmax(_head_logits(x, head), _log_scale(beta), mask)


def _feedforward(a: np.ndarray, feedforward: tuple | None) -> np.ndarray:
    """``W sigma(a_i)`` for each row (``a`` itself without a layer)."""
    if feedforward is None:
        return a
    weight, activation = feedforward
    if activation not in ACTIVATIONS:
        raise ValueError(f"feed-forward activation must be one of "
                         f"{', '.join(ACTIVATIONS)}, got {activation!r}")
    d = a.shape[-1]
    w = np.asarray(weight, dtype=float)
    if w.shape != (d, d) or not np.all(np.isfinite(w)):
        raise ValueError(f"feed-forward weight must be a finite {d} x {d} matrix, got "
                         f"shape {w.shape}")
    return ACTIVATIONS[activation](a) @ w.T


def attention_term(x: np.ndarray, heads: Head | Sequence[Head], *, beta: float = 1.0,
                   mask: str = "none") -> np.ndarray:
    """``a_i = sum_h sum_j P^h_ij V_h x_j`` for each token (rows of an ``(n, d)`` array,
    or of each system of a batch ``(B, n, d)``).

    Per head: ``x Q^T``, ``x K^T`` and ``x V^T`` once, then ``_attend`` (blocks of
    rows, no ``n x n`` array). The inputs are checked once, whatever the number of
    heads.
    """
    x = _tokens(x)
    seq = _heads(heads, x.shape[-1])
    log_scale, mask = _log_scale(check_beta(beta)), _check_mask(mask)
    total = None
    for h in seq:
        a = _attend(x @ h.query.T, _transposed(x @ h.key.T), x @ h.value.T, log_scale,
                    mask)
        total = a if total is None else total + a
    return total


def pure_velocity(x: np.ndarray, heads: Head | Sequence[Head], *, beta: float = 1.0,
                  mask: str = "none", feedforward: tuple | None = None) -> np.ndarray:
    """Pure self-attention in R^d: ``dx_i/dt = a_i`` or ``W sigma(a_i)``.

    Args:
        x: ``(n, d)`` tokens, or a batch ``(B, n, d)`` of systems (the same weights for
            all; each system's result is its own evaluation, to round-off).
        heads: one ``Head`` or several (their attention terms add up).
        beta: inverse temperature >= 0 (the pure flow of [GLPR23, eq. (1)]: 1).
        mask: ``"none"`` or ``"causal"``.
        feedforward: ``(W, activation)``, W ``(d, d)``, activation ``"relu"`` or
            ``"tanh"``, applied to the attention term summed over the heads; None: none.

    Returns:
        ``(n, d)`` (``(B, n, d)``) velocities.
    """
    return _feedforward(attention_term(x, heads, beta=beta, mask=mask), feedforward)


def sphere_velocity(x: np.ndarray, heads: Head | Sequence[Head], *, beta: float = 1.0,
                    mask: str = "none", feedforward: tuple | None = None) -> np.ndarray:
    """Post-LN tokens on the sphere: ``dx_i/dt = P^perp_{x_i}`` of ``pure_velocity``.

    Args:
        x: ``(n, d)`` unit tokens (renormalised here, which only removes round-off), or
            a batch ``(B, n, d)``.
        heads, beta, mask, feedforward: as in ``pure_velocity``.

    Returns:
        ``(n, d)`` (``(B, n, d)``) tangent velocities.
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


class RescaledForm:
    """The rescaled logits' matrices of one head, ``(B(t), s(t))`` with ``<Q x_i, K x_j>
    = e^s z_i^T B z_j`` at ``x = e^{tV} z``: ``B = E^T Q^T K E``, ``E = e^{t(V - cI)}``,
    ``s = 2 t c``, ``c`` the largest real part of V's eigenvalues (the spectral
    abscissa: E neither overflows nor vanishes on V's leading directions).

    Made once for the many times of a run (``RescaledParticles``): V is decomposed once,
    ``V = P diag(lambda) P^{-1}`` (``eigh`` for a symmetric V: P orthogonal), and where
    P is well conditioned (``cond(P) <= EIGEN_COND`` of ``solvers.matrix_exponential``)
    ``E = P diag(e^{t(lambda - c)}) P^{-1}``, a few d x d products; a defective or
    nearly defective V takes ``scipy.linalg.expm`` (Pade with scaling and squaring).
    Both give E to round-off (relative ~ (t |V| + cond(P)) eps; tests: 1e-13 against
    expm). The last ``CACHED_TIMES`` times are kept: a step-doubling RK4 attempt
    evaluates its 12 stages at 5 or 6 distinct times.

    Why: the rescaled field needs E at every stage; expm and a spectral abscissa per
    call were half of a small run's time, and expm's LAPACK calls on OpenBLAS threads
    beside other jobs took 1.1 ms instead of 0.08 ms (2 x 2, load 10 on 2 cores), which
    the examples worked around with one BLAS thread. The eigen path uses no LAPACK per
    time (benchmarks/bench_weighted_attention.py).

    Args:
        head: one head (a sequence of one is accepted; several are refused).
        method: ``"auto"`` (eigen where ``cond(P) <= EIGEN_COND``, else expm),
            ``"eigen"`` (refused where P is not well conditioned) or ``"expm"``.
    """

    def __init__(self, head: Head | Sequence[Head], method: str = "auto"):
        seq = [head] if isinstance(head, Head) else list(head)
        d = np.shape(seq[0].value)[0] if seq and np.ndim(seq[0].value) else 0
        self.head = _single_head(seq, d)
        self.dim = d
        self._exponential = ShiftedExponential(self.head.value, method)
        self.abscissa, self.method = self._exponential.abscissa, self._exponential.method
        self._qk = self.head.query.T @ self.head.key
        self._cache: dict[float, tuple[np.ndarray, float]] = {}

    def exponential(self, t: float) -> np.ndarray:
        """``E = e^{t(V - cI)}`` (``(d, d)``; ``solvers.matrix_exponential``).

        Raises:
            ValueError: E passes the double range (non-normal growth; expm path only:
                the eigen path's E is bounded by cond(P)).
        """
        return self._exponential(t)

    def __call__(self, t: float) -> tuple[np.ndarray, float]:
        """``(B, s)`` at time ``t`` (B read-only: it may be the cached array)."""
        t = float(t)
        hit = self._cache.get(t)
        if hit is not None:
            return hit
        e = self.exponential(t)
        b = e.T @ self._qk @ e
        b.flags.writeable = False
        if len(self._cache) >= CACHED_TIMES:
            del self._cache[next(iter(self._cache))]  # the oldest time (insertion order)
        self._cache[t] = (b, 2.0 * t * self.abscissa)
        return self._cache[t]


def _rescaled_form(heads: Head | Sequence[Head] | RescaledForm, d: int) -> RescaledForm:
    """``heads`` as a ``RescaledForm`` (one made for this call unless given)."""
    if isinstance(heads, RescaledForm):
        if heads.dim != d:
            raise ValueError(f"the rescaled form is for tokens of dimension {heads.dim}, "
                             f"got {d}")
        return heads
    return RescaledForm(_single_head(heads, d))


def rescaled_logits(z: np.ndarray, t: float, head: Head | RescaledForm
                    ) -> tuple[np.ndarray, float]:
    """The logits ``<Q x_i, K x_j>`` at ``x = e^{tV} z`` (``z`` ``(n, d)`` or a batch
    ``(B, n, d)``) as ``(L, s)``: they are ``e^s L_ij``, ``L = z B z^T`` with ``(B, s)``
    of ``RescaledForm`` (``head`` may be one, made once for many t).
    """
    z = np.asarray(z, dtype=float)
    b, scale = _rescaled_form(head, z.shape[-1])(t)
    return (z @ b) @ _transposed(z), scale


def _rescaled_log_scale(scale: float, beta: float) -> float:
    """log of the logits' factor ``beta e^scale`` (-inf for beta = 0)."""
    return scale + math.log(beta) if beta > 0 else -math.inf


def rescaled_attention(z: np.ndarray, t: float,
                       heads: Head | Sequence[Head] | RescaledForm, *, beta: float = 1.0,
                       mask: str = "none") -> np.ndarray:
    """``P(t)`` of the rescaled tokens: ``attention_matrix(e^{tV} z)`` without forming x
    (``z`` ``(n, d)`` or a batch ``(B, n, d)``; ``heads`` as in ``rescaled_velocity``)."""
    z = _tokens(z)
    form = _rescaled_form(heads, z.shape[-1])
    beta, mask = check_beta(beta), _check_mask(mask)
    logits, scale = rescaled_logits(z, float(t), form)
    return _softmax(logits, _rescaled_log_scale(scale, beta), mask)


def rescaled_velocity(z: np.ndarray, t: float,
                      heads: Head | Sequence[Head] | RescaledForm, *, beta: float = 1.0,
                      mask: str = "none") -> np.ndarray:
    """The rescaled dynamics ``dz_i/dt = sum_j P_ij(t) V (z_j - z_i)`` of one head.

    Args:
        z: ``(n, d)`` rescaled tokens ``z = e^{-tV} x``, or a batch ``(B, n, d)``.
        t: the time (P is taken at ``x = e^{tV} z``).
        heads: one ``Head`` (a sequence of one is accepted; several are refused), or
            its ``RescaledForm`` (made once for the many times of a run).
        beta, mask: as in ``pure_velocity``.

    Returns:
        ``(n, d)`` (``(B, n, d)``) velocities of z; finite whenever ``e^{t(V - cI)}`` is
        (see ``RescaledForm``), at any size of ``e^{tV}``.

    Raises:
        ValueError: several heads (the rescaling needs one V), bad shapes or values.
    """
    z = _tokens(z)
    form = _rescaled_form(heads, z.shape[-1])
    return rescaled_field(z, t, form, check_beta(beta), _check_mask(mask))


def rescaled_field(z: np.ndarray, t: float, form: RescaledForm, beta: float,
                   mask: str) -> np.ndarray:
    """``rescaled_velocity`` of arguments already checked (a run's stages: its model
    checked beta and the mask once, its steps check the tokens finite), without the
    checks' 5 us a call (a fifth of a small model's velocity)."""
    b, scale = form(t)
    pz = _attend(z @ b, _transposed(z), z, _rescaled_log_scale(scale, beta), mask)
    return (pz - z) @ form.head.value.T
