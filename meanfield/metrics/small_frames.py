"""The per-save diagnostics of a few tokens in one compiled call.

A particle run computes its diagnostics at every save (``meanfield.runs.particle_dataset``);
for a few tokens (``n^2 d <= SMALL_FRAME``: n = 32 on S^15 is 2^14) their arithmetic is
microseconds and the calls around it were the cost: the order parameter, the energy and
the cluster count took 37 us a frame at n = 32, d = 16 (one velocity of the run takes
~30), so 100 saves cost 1.4 times one save at the same steps (issue 32 asks 1.3).
``sphere_frame`` gives, in one call on the unit rows ``th`` (``meanfield.model.particles.
directions``, computed once):

- the mean ``m = sum_i th_i / n`` (the order parameter ``|m|`` and ``m / |m|``);
- the energy's pair sum ``mean_ij e^{beta <th_i, th_j>} = pairs e^top``, ``top`` the
  largest exponent (``meanfield.model.kernels.dense_pair_sum``'s, in loops).

``euclidean_frame`` gives the mean, the spread and the largest norm of tokens in R^d
(``particle_dataset.euclidean_diagnostics``). The cluster counts stay with
``meanfield.metrics.clusters`` (a few tokens: ``_tree_count``, one call), called through
the module as before (a caller that replaces ``cluster_count`` is obeyed).

The sums run in another order than numpy's products, so the order parameter, the
energy and the spread agree with ``summarize``'s, ``interaction_energy``'s and numpy's
to round-off (``tests/meanfield/metrics/test_small_frames.py``).
"""
from __future__ import annotations

import math

import numba
import numpy as np



@numba.njit(cache=True)
def _sphere_frame(th, beta, energy):  # pragma: no cover - compiled
    n, d = th.shape
    m = np.zeros(d)
    w = 1.0 / n
    for i in range(n):
        for c in range(d):
            if not abs(th[i, c]) < 1e150:  # (NaN too): the general paths say what
                return m, 0.0, -np.inf, False
            m[c] += w * th[i, c]
    pairs, top = 0.0, -np.inf
    if energy:
        g = np.dot(th, th.T)  # (BLAS: the loops' dependent sums took 11 us)
        for i in range(n):
            for j in range(i, n):
                top = max(top, beta * g[i, j])
        for i in range(n):  # the diagonal once, each pair i < j twice (g symmetric)
            pairs += math.exp(beta * g[i, i] - top)
            for j in range(i + 1, n):
                pairs += 2.0 * math.exp(beta * g[i, j] - top)
        pairs /= n * n
    return m, pairs, top, True


def sphere_frame(th: np.ndarray, beta: float, energy: bool = True
                 ) -> tuple[np.ndarray, float, float] | None:
    """The mean and the energy's pair sum of unit rows ``th`` (module docstring).

    Args:
        th: (n, d) unit vectors, a few (``n^2 d <= SMALL_FRAME``).
        beta: the kernel's inverse temperature (finite).
        energy: whether to compute the pair sum.

    Returns:
        ``(m, pairs, top)``: ``m = mean_i th_i``; ``mean_ij e^{beta <th_i, th_j>} = pairs
        e^top`` (``pairs = 0``, ``top = -inf`` without ``energy``). None when a
        component is not finite or beyond 1e150 (the general paths, which say what is
        wrong, apply).
    """
    m, pairs, top, finite = _sphere_frame(np.ascontiguousarray(th, dtype=float),
                                          float(beta), bool(energy))
    return (m, float(pairs), float(top)) if finite else None


@numba.njit(cache=True)
def _euclidean_frame(x):  # pragma: no cover - compiled
    n, d = x.shape
    mean = np.zeros(d)
    top = 0.0
    for i in range(n):
        r2 = 0.0
        for c in range(d):
            if not abs(x[i, c]) < 1e150:  # (NaN too): the general paths say what
                return mean, 0.0, 0.0, False
            mean[c] += x[i, c]
            r2 += x[i, c] * x[i, c]
        top = max(top, r2)
    for c in range(d):
        mean[c] /= n
    spread = 0.0
    for i in range(n):
        for c in range(d):
            dev = x[i, c] - mean[c]
            spread += dev * dev
    return mean, math.sqrt(spread / n), math.sqrt(top), True


def euclidean_frame(x: np.ndarray) -> tuple[np.ndarray, float, float] | None:
    """``(mean_i x_i, sqrt(mean_i |x_i - mean|^2), max_i |x_i|)`` of a few tokens ``x``
    (n, d) in R^d (``n^2 d <= SMALL_FRAME``). None when a component is not finite or
    beyond 1e150."""
    mean, spread, top, finite = _euclidean_frame(np.ascontiguousarray(x, dtype=float))
    return (mean, float(spread), float(top)) if finite else None
