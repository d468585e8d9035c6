"""The sampled one- and two-point functions of token ensembles and the rates of the second
equation of the hierarchy (docs/studies/correlations.md derives them).

**Pair angles.** ``psi = arccos <x_i, x_j>`` in [0, pi] (on S^1, ``psi = |theta_i -
theta_j|`` folded: the pair function ``f2(phi)``, ``phi = theta_1 - theta_2``, is even by
exchangeability, ``f2(phi) = p(|phi|)/2``). Counts of pairs in bins of ``psi``:

- S^1 by sorting: for the sorted angles ``s`` and ``T = (s, s + 2 pi)``, the unordered
  pairs with ``psi < e`` (``e <= pi``) are ``sum_k #{m in (k, k + n): T_m < s_k + e}``
  (each pair counted once: of its two arcs at most one is shorter than ``e <= pi``); two
  systems: for each ``theta_i`` of one, the angles of the other in ``(theta_i - e,
  theta_i + e)``. ``O(n log n)`` per edge instead of ``O(n^2)``.
- S^{d-1} by Gram blocks (``O(n^2 d)``).

**Estimators.** The systems are taken in pairs ``(2k, 2k + 1)``, independent of each other.
For one pair: ``P_k`` = the mean of the two systems' within-system pair densities (an
unbiased estimate of ``f2``), ``Q_k`` = the density of the ``n^2`` cross pairs (one token
of each system: independent draws from ``f1``, so an unbiased estimate of the law of
``psi`` under ``f1 (x) f1``, the autocorrelation of ``f1``), ``G_k = P_k - Q_k``. The
``G_k`` are i.i.d. over k with mean ``g``: the estimate is their mean, its standard error
their standard deviation over ``sqrt(pairs)`` (exact, no model of the dependence between
the pairs of one system).

**Fourier moments on S^1.** ``S_m = sum_j e^{i m theta_j}``: the pair moments
``rho_m = (|S_m|^2 - n)/(n(n - 1)) = mean_{i != j} cos(m (theta_j - theta_i))``; the exact
rate of the second equation in weak form ``R_m = d rho_m/dt = 2 Re(conj(S_m) i m T_m)/(n
(n - 1))`` with ``T_m = sum_j theta_j' e^{i m theta_j}`` (the tokens' own speeds); the
rate of the chaos closure ``C_m = (m/D) sum_l I_l(beta) (rho_{|m - 1 + l|} - rho_{|m + 1 +
l|})`` (the third token independent of the pair, ``f1`` uniform: the pair moves only by
its own interaction, ``phi' = -2 K(phi)/D``, ``K = e^{beta cos} sin``, ``D = n`` (USA) or
``e^beta + (n - 2) I_0(beta)`` (SA)).
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special

from meanfield.metrics.binning import arc_index


def angle_edges(bins: int) -> np.ndarray:
    """``bins + 1`` equal edges of [0, pi]."""
    return np.linspace(0.0, np.pi, bins + 1)


def _angles(x: np.ndarray) -> np.ndarray:
    return np.arctan2(x[..., 1], x[..., 0])


def circle_pair_counts(theta: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Unordered pairs ``i < j`` of one system in each bin of ``psi`` (sorting)."""
    s = np.sort(np.mod(theta, 2 * np.pi))
    n = s.size
    t = np.concatenate([s, s + 2 * np.pi])
    below = np.array([np.sum(np.searchsorted(t, s + e, "left") - np.arange(1, n + 1))
                      for e in edges[1:]], dtype=float)
    return np.diff(np.concatenate([[0.0], below]))


def circle_cross_counts(theta_a: np.ndarray, theta_b: np.ndarray,
                        edges: np.ndarray) -> np.ndarray:
    """Pairs (one token of each system) in each bin of ``psi``."""
    s = np.sort(np.mod(theta_b, 2 * np.pi))
    u = np.concatenate([s - 2 * np.pi, s, s + 2 * np.pi])
    q = np.mod(theta_a, 2 * np.pi)
    below = np.array([np.sum(np.searchsorted(u, q + e, "left")
                             - np.searchsorted(u, q - e, "right")) for e in edges[1:]],
                     dtype=float)
    return np.diff(np.concatenate([[0.0], below]))


def _cosine_counts(c: np.ndarray, edges: np.ndarray) -> np.ndarray:
    # psi in bin b  <=>  cos(edges[b + 1]) < c <= cos(edges[b]); counted on -c, increasing
    k = np.searchsorted(-np.cos(edges), -np.clip(c, -1.0, 1.0), "left")
    return np.bincount(np.clip(k - 1, 0, edges.size - 2), minlength=edges.size - 1)


def sphere_pair_counts(x: np.ndarray, edges: np.ndarray, block: int = 1024) -> np.ndarray:
    """Unordered pairs of one system (rows of ``x``) in each bin of ``psi`` (Gram)."""
    out = np.zeros(edges.size - 1)
    n = x.shape[0]
    for a in range(0, n, block):
        g = x[a:a + block] @ x.T
        rows = np.arange(a, min(a + block, n))[:, None]
        out += _cosine_counts(g[np.arange(n)[None, :] > rows], edges)
    return out


def sphere_cross_counts(xa: np.ndarray, xb: np.ndarray, edges: np.ndarray,
                        block: int = 1024) -> np.ndarray:
    """Pairs (one token of each system) in each bin of ``psi``."""
    out = np.zeros(edges.size - 1)
    for a in range(0, xa.shape[0], block):
        out += _cosine_counts((xa[a:a + block] @ xb.T).ravel(), edges)
    return out


def pair_statistics(x: np.ndarray, edges: np.ndarray) -> dict[str, np.ndarray]:
    """For a batch ``(B, n, d)`` (B even) the per-pair-of-systems densities of ``psi``
    (per radian): ``pair`` (``P_k``), ``independent`` (``Q_k``), ``correlation``
    (``G_k``), each ``(B/2, bins)``."""
    b, n, d = x.shape
    width = np.diff(edges)
    within, cross = (circle_pair_counts, circle_cross_counts) if d == 2 else \
        (sphere_pair_counts, sphere_cross_counts)
    y = _angles(x) if d == 2 else x
    p, q = np.empty((b // 2, width.size)), np.empty((b // 2, width.size))
    for k in range(b // 2):
        a, c = y[2 * k], y[2 * k + 1]
        p[k] = (within(a, edges) + within(c, edges)) / (n * (n - 1)) / width
        q[k] = cross(a, c, edges) / (n * n) / width
    return {"pair": p, "independent": q, "correlation": p - q}


def one_point(x: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """``(density (B, cells), centres)``: each system's density of ``theta`` on S^1 (per
    radian, ``2 bins`` equal arcs of [0, 2 pi)) or of the polar angle ``arccos <x, e_1>``
    on S^{d-1} (per radian, ``bins`` bins of [0, pi])."""
    b, n, d = x.shape
    if d == 2:
        cells = 2 * bins
        idx = arc_index(x, cells)
        width = 2 * np.pi / cells
        centres = (np.arange(cells) + 0.5) * width
    else:
        edges = angle_edges(bins)
        idx = np.clip(np.searchsorted(-np.cos(edges), -np.clip(x[..., 0], -1, 1)) - 1,
                      0, bins - 1)
        cells, width = bins, np.pi / bins
        centres = (edges[:-1] + edges[1:]) / 2
    dens = np.stack([np.bincount(i, minlength=cells) for i in idx]) / (n * width)
    return dens, centres


def moments(theta: np.ndarray, order: int) -> np.ndarray:
    """``S_m = sum_j e^{i m theta_j}``, ``m = 0..order``, for angles ``(B, n)``."""
    m = np.arange(order + 1)
    return np.exp(1j * theta[..., None] * m).sum(axis=-2)


def hierarchy_rates(x: np.ndarray, speed: np.ndarray, modes: int, beta: float,
                    normalized: bool) -> dict[str, np.ndarray]:
    """Per system (B, modes), ``m = 1..modes``: ``pair_moment`` ``rho_m``, the exact rate
    ``R_m`` of the weak second equation from the tokens' angular speeds ``speed`` (B,
    n), and the chaos closure's ``C_m`` (module docstring)."""
    theta = _angles(x)
    n = theta.shape[-1]
    tail = 1
    while special.ive(tail + 1, beta) > 1e-17 * special.ive(0, beta):
        tail += 1
    s = moments(theta, modes + 1 + tail)
    rho = (np.abs(s) ** 2 - n) / (n * (n - 1.0))
    rho[:, 0] = 1.0
    m = np.arange(1, modes + 1)
    t = np.einsum("bn,bnm->bm", speed, np.exp(1j * theta[..., None] * m))
    exact = 2.0 * np.real(np.conj(s[:, 1:modes + 1]) * 1j * m * t) / (n * (n - 1.0))
    l = np.arange(-tail, tail + 1)
    il = special.ive(np.abs(l), beta)  # I_l e^{-beta}
    # n I_l/D: SA D = e^beta (1 + (n - 2) ive_0), USA D = n (I_l = ive_l e^beta)
    scale = n / (1.0 + (n - 2.0) * il[tail]) if normalized else math.exp(beta)
    closed = np.empty_like(exact)
    for j, k in enumerate(m):
        lo, hi = rho[:, np.abs(k - 1 + l)], rho[:, np.abs(k + 1 + l)]
        closed[:, j] = (k / n) * scale * ((lo - hi) @ il)
    return {"pair_moment": rho[:, 1:modes + 1], "hierarchy_rate": exact,
            "closure_rate": closed}


def linear_correlation(times: np.ndarray, edges: np.ndarray, rates: np.ndarray
                       ) -> np.ndarray:
    """The linear fluctuation theory of ``(n - 1) g`` (bin averages, (time, bins)) from
    i.i.d. uniform tokens on S^1: ``E|S_k(t)|^2 -> n e^{2 lambda_k t}``, so ``(n - 1) g(psi)
    -> (2/pi) sum_{k>=1} (e^{2 lambda_k t} - 1) cos(k psi)``; ``rates[k-1] = lambda_k``."""
    k = np.arange(1, rates.size + 1)
    width = np.diff(edges)
    avg = (np.sin(np.outer(k, edges[1:])) - np.sin(np.outer(k, edges[:-1]))) / (
        k[:, None] * width)
    amp = np.expm1(2.0 * np.outer(times, rates))
    return (2.0 / np.pi) * amp @ avg
