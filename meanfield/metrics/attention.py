"""Diagnostics of attention matrices: the nearest Boolean matrix, the distance to it, the
numerical rank and the leaders.

An attention matrix ``P`` is ``(n, n)`` and row-stochastic: row i is the attention token i
gives to the tokens j (``P_ij >= 0``, ``sum_j P_ij = 1``). Every function also takes a
stack ``(..., n, n)`` (P at several times), except ``leaders``, whose answer is a list of
indices (``leader_count`` is its stacked count).

- The nearest Boolean matrix: the row-stochastic 0/1 matrices are the matrices with one 1
  per row. The half l1 (total variation) distance of a row p to the one-hot row e_k is
  ``(|1 - p_k| + sum_{j != k} p_j) / 2 = 1 - p_k``, smallest at ``k = argmax_j p_j``. So
  the nearest Boolean matrix puts its 1 at each row's argmax, and the distance of P to
  the set of Boolean matrices, row by row in total variation, worst row, is
  ``max_i (1 - max_j P_ij)`` (also half the max-row-sum norm ``||P - P*||_inf``).
- [GLPR23, Theorem 2.1] (d = 1, V > 0, QK > 0): P(t) tends to a
  matrix of the set it calls P, Boolean except possibly one row of arbitrary weights; for
  almost every initial sequence that row is Boolean too and P* has rank 1 or 2 (the
  columns of the smallest and the largest token), and P(t) reaches it doubly
  exponentially. In the non-generic case ``boolean_distance`` tends to the weight that
  exceptional row spreads, not to 0.
- Leaders (the word of [GLPR23, §3], after [VSP17]): the tokens that capture the attention
  of the others, the non-zero columns of the limit P*. Numerically: token j leads when
  some token gives it more than ``threshold`` of its attention. With the default 1/2, at
  most one column per row qualifies, and once ``boolean_distance(P) < 1/2`` the leaders
  are exactly the non-zero columns of ``nearest_boolean(P)``.
"""
from __future__ import annotations

import numpy as np

# Rows must sum to 1 within this: attention saved in single precision (float32 results)
# carries ~n * 6e-8 of rounding in its row sums, far below it.
ROW_SUM_TOLERANCE = 1e-4


def _attention(p: np.ndarray, name: str = "P") -> np.ndarray:
    """``p`` as a float array ``(..., n, n)``, finite, non-negative, rows summing to 1.

    Raises:
        ValueError: naming what is wrong (shape, non-finite or negative entries, a row
            sum off 1).
    """
    p = np.asarray(p, dtype=float)
    if p.ndim < 2 or p.shape[-1] != p.shape[-2] or p.shape[-1] < 1:
        raise ValueError(f"{name} must be an (n, n) attention matrix or a stack "
                         f"(..., n, n) of them, got shape {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    if np.any(p < 0):
        raise ValueError(f"{name} must be non-negative (found {p.min():.3g})")
    off = float(np.max(np.abs(p.sum(axis=-1) - 1.0)))
    if off > ROW_SUM_TOLERANCE:
        raise ValueError(f"{name} must be row-stochastic (rows summing to 1); a row sum is "
                         f"off by {off:.3g} (accepted: {ROW_SUM_TOLERANCE:g})")
    return p


def nearest_boolean(p: np.ndarray) -> np.ndarray:
    """The nearest row-stochastic 0/1 matrix: each row one-hot at its argmax.

    Args:
        p: ``(n, n)`` row-stochastic attention matrix, or a stack ``(..., n, n)``.

    Returns:
        An array of the shape of ``p``, 1.0 at each row's largest entry (the first one on
        a tie) and 0.0 elsewhere.

    Raises:
        ValueError: ``p`` is not a (stack of) row-stochastic matrices.
    """
    p = _attention(p)
    out = np.zeros_like(p)
    np.put_along_axis(out, np.argmax(p, axis=-1)[..., None], 1.0, axis=-1)
    return out


def boolean_distance(p: np.ndarray) -> float | np.ndarray:
    """Distance of P to the nearest Boolean matrix: ``max_i (1 - max_j P_ij)``.

    The worst row's total variation (half l1) distance to its nearest one-hot row (see the
    module docstring): 0 for a Boolean matrix, ``1 - 1/n`` for uniform rows.

    Args:
        p: ``(n, n)`` row-stochastic attention matrix, or a stack ``(..., n, n)``.

    Returns:
        A float for one matrix; an array of the leading shape for a stack. The value is
        summed as ``sum_{j != argmax} P_ij`` (the mass off each row's maximum), not as
        ``1 - max``, so distances far below the rounding of 1 (1e-100, as in the doubly
        exponential approach of Theorem 2.1) keep their digits (given rows summing to 1).

    Raises:
        ValueError: ``p`` is not a (stack of) row-stochastic matrices.
    """
    p = _attention(p)
    k = np.argmax(p, axis=-1)[..., None]
    rest = np.where(np.arange(p.shape[-1]) == k, 0.0, p).sum(axis=-1)  # 1 - max_j P_ij
    dist = np.max(rest, axis=-1)
    return float(dist) if dist.ndim == 0 else dist


def numerical_rank(p: np.ndarray, tolerance: float = 1e-6) -> int | np.ndarray:
    """The number of singular values above ``tolerance`` times the largest.

    Args:
        p: ``(n, m)`` matrix or a stack ``(..., n, m)`` (any matrix: the attention matrix
            of ``meanfield.metrics.clusters`` too, which is not always row-stochastic).
        tolerance: relative threshold in (0, 1].

    Returns:
        An int for one matrix (0 for the zero matrix); an int array of the leading shape
        for a stack.

    Raises:
        ValueError: ``tolerance`` not in (0, 1], or ``p`` not finite or not a matrix.
    """
    if not 0 < tolerance <= 1:
        raise ValueError(f"tolerance must be in (0, 1] (relative to the largest singular "
                         f"value), got {tolerance!r}")
    p = np.asarray(p, dtype=float)
    if p.ndim < 2 or 0 in p.shape[-2:]:
        raise ValueError(f"numerical_rank needs a matrix or a stack of matrices, got "
                         f"shape {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError("numerical_rank needs a finite matrix (found NaN or inf)")
    s = np.linalg.svd(p, compute_uv=False)
    rank = np.count_nonzero(s > tolerance * s[..., :1], axis=-1)
    return int(rank) if np.ndim(rank) == 0 else rank


def _check_threshold(threshold: float) -> float:
    if not 0 <= threshold < 1:
        raise ValueError(f"threshold must be in [0, 1) (a share of one token's attention), "
                         f"got {threshold!r}")
    return float(threshold)


def leaders(p: np.ndarray, threshold: float = 0.5) -> np.ndarray:
    """The tokens that receive attention: j with ``max_i P_ij > threshold``.

    Args:
        p: ``(n, n)`` row-stochastic attention matrix.
        threshold: the share of some token's attention a leader must receive, in
            [0, 1). The default 1/2 makes the answer the non-zero columns of
            ``nearest_boolean(p)`` once ``boolean_distance(p) < 1/2``.

    Returns:
        Sorted int indices of the leading tokens.

    Raises:
        ValueError: ``p`` not one row-stochastic matrix, or ``threshold`` out of range.
    """
    threshold = _check_threshold(threshold)
    p = _attention(p)
    if p.ndim != 2:
        raise ValueError(f"leaders takes one (n, n) matrix, got shape {p.shape}; use "
                         "leader_count for a stack")
    return np.flatnonzero(np.max(p, axis=0) > threshold)


def leader_count(p: np.ndarray, threshold: float = 0.5) -> int | np.ndarray:
    """The number of ``leaders`` of each matrix of a stack ``(..., n, n)``."""
    threshold = _check_threshold(threshold)
    p = _attention(p)
    count = np.count_nonzero(np.max(p, axis=-2) > threshold, axis=-1)
    return int(count) if np.ndim(count) == 0 else count
