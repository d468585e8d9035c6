"""Closed forms of the Hessian spectra of E_beta at the symmetric critical points, and the
recognition of those points among the ones found (docs/studies/critical-points.md
derives the forms).

On S^1, with ``h(delta) = e^{beta cos delta} (cos delta - beta sin^2 delta)/n^2``, the
Hessian of E_beta in the angles is ``H_ij = h(theta_i - theta_j)`` (i != j) with rows that
sum to zero. At k equally spaced clusters of m tokens each (n = k m; k = n: equally spaced
tokens, k = 2: two antipodal clusters of equal size, k = 1: the synchronised state) its
eigenvalues are

    in-cluster (multiplicity k (m - 1)):  -(m/n^2) [e^beta + S],
                                          S = sum_{c=1}^{k-1} n^2 h(2 pi c/k),
    cluster modes q = 0 .. k - 1:         m sum_{c=1}^{k-1} h(2 pi c/k) (cos(2 pi c q/k) - 1),

the second a discrete Fourier sum (the Hessian restricted to cluster-constant vectors is
circulant). On S^{d-1}, d >= 3, with the clusters on a great circle, each of the d - 2
directions normal to its plane adds ``-(m/n^2)[e^beta + C]`` (k (m - 1) times,
``C = sum_c e^{beta cos(2 pi c/k)} cos(2 pi c/k)``) and
``(m/n^2) sum_c e^{beta cos(2 pi c/k)} (cos(2 pi c q/k) - cos(2 pi c/k))`` (q = 0 .. k - 1).

Two antipodal clusters of sizes k and n - k (0 < k < n), in angles:
``H = [[a J - alpha I, b J], [b J, a J - alpha' I]]`` with ``a = e^beta/n^2``,
``b = -e^{-beta}/n^2``, ``alpha = k a + (n - k) b``, ``alpha' = (n - k) a + k b``: the
eigenvalues are ``-alpha`` (k - 1 times), ``-alpha'`` (n - k - 1 times), 0 (the rotation)
and ``-n b = e^{-beta}/n > 0`` (the clusters turned against each other): every such point
is a strict saddle. On S^{d-1} the spectrum is the same d - 1 times.
"""
from __future__ import annotations

import numpy as np

CLUSTER_CHORD = 1e-6  # tokens closer than this (chord) are one cluster of the found point


def _h(delta: np.ndarray, beta: float, n: int) -> np.ndarray:
    """``e^{beta cos delta} (cos delta - beta sin^2 delta)/n^2``."""
    return np.exp(beta * np.cos(delta)) * (np.cos(delta) - beta * np.sin(delta) ** 2) / n**2


def regular_clusters_spectrum(n: int, k: int, beta: float, d: int = 2) -> np.ndarray:
    """The Hessian eigenvalues (ascending) at k equally spaced clusters of n/k tokens on a
    great circle of S^{d-1} (module docstring).

    Args:
        n: tokens; ``k`` must divide it.
        k: clusters (1: synchronised; n: equally spaced tokens).
        beta: the inverse temperature.
        d: the dimension of the ambient space.
    """
    if n % k:
        raise ValueError(f"k = {k} clusters do not divide n = {n} tokens")
    m = n // k
    c = np.arange(1, k)
    delta = 2 * np.pi * c / k
    q = np.arange(k)[:, None]
    fourier = np.cos(2 * np.pi * c[None, :] * q / k)
    e = np.exp(beta)
    inside = -m * (e + n**2 * _h(delta, beta, n).sum()) / n**2
    modes = m * (_h(delta, beta, n)[None, :] * (fourier - 1.0)).sum(axis=1)
    parts = [np.full(k * (m - 1), inside), modes]
    if d > 2:
        w = np.exp(beta * np.cos(delta))
        normal_inside = -m * (e + (w * np.cos(delta)).sum()) / n**2
        normal_modes = m * (w[None, :] * (fourier - np.cos(delta)[None, :])).sum(axis=1) / n**2
        parts += [np.full(k * (m - 1), normal_inside), normal_modes] * (d - 2)
    return np.sort(np.concatenate(parts))


def antipodal_spectrum(n: int, k: int, beta: float, d: int = 2) -> np.ndarray:
    """The Hessian eigenvalues (ascending) at two antipodal clusters of k and n - k tokens
    (0 < k < n; module docstring), ``d - 1`` copies on S^{d-1}."""
    if not 0 < k < n:
        raise ValueError(f"two clusters need 0 < k < n (k = {k}, n = {n})")
    e, ei = np.exp(beta), np.exp(-beta)
    one = np.concatenate([np.full(k - 1, -(k * e - (n - k) * ei) / n**2),
                          np.full(n - k - 1, -((n - k) * e - k * ei) / n**2),
                          [0.0, ei / n]])
    return np.sort(np.tile(one, d - 1))


def clusters_of(x: np.ndarray, chord: float = CLUSTER_CHORD) -> tuple[np.ndarray, np.ndarray]:
    """The distinct positions of a found point and their sizes.

    Args:
        x: (n, d) unit vectors.
        chord: tokens closer than this are one cluster (single linkage).

    Returns:
        ``labels`` (n,) cluster of each token (in order of first appearance), ``centers``
        (c, d) the normalised mean of each cluster.
    """
    x = np.asarray(x, dtype=float)
    n = x.shape[0]
    labels = np.full(n, -1)
    close = np.linalg.norm(x[:, None] - x[None], axis=2) < chord
    c = 0
    for i in range(n):
        if labels[i] >= 0:
            continue
        stack, labels[i] = [i], c
        while stack:
            j = stack.pop()
            for k in np.flatnonzero(close[j] & (labels < 0)):
                labels[k] = c
                stack.append(k)
        c += 1
    centers = np.array([x[labels == j].mean(axis=0) for j in range(c)])
    return labels, centers / np.linalg.norm(centers, axis=1, keepdims=True)


def _is_regular_polygon(centers: np.ndarray, tol: float) -> bool:
    """Whether unit vectors are the vertices of a regular polygon on a great circle: in a
    plane, and each one's sorted cosines to the others those of the regular k-gon."""
    k = centers.shape[0]
    if k < 3:
        return False
    s = np.linalg.svd(centers, compute_uv=False)
    if s.size > 2 and s[2] > tol * s[0]:
        return False
    gram = np.sort(centers @ centers.T, axis=1)
    ideal = np.sort(np.cos(2 * np.pi * np.arange(k) / k))
    return bool(np.max(np.abs(gram - ideal[None, :])) < tol)


def classify(x: np.ndarray, beta: float, tol: float = 1e-6
             ) -> tuple[str, np.ndarray, np.ndarray | None]:
    """What a found critical point is, and its closed-form spectrum if it has one.

    Args:
        x: (n, d) unit vectors.
        beta: the inverse temperature.
        tol: on the cosines that decide antipodal and regular.

    Returns:
        ``kind`` ("synchronised", "antipodal" (two antipodal clusters, any sizes),
        "equally_spaced" (n distinct tokens, a regular polygon), "regular_clusters"
        (k > 2 equal clusters on a regular polygon), or "other"), the cluster sizes
        (descending), and the closed-form eigenvalues (ascending; None for "other").
    """
    n, d = x.shape
    labels, centers = clusters_of(x)
    sizes = np.bincount(labels)
    k = sizes.size
    if k == 1:
        return "synchronised", sizes, regular_clusters_spectrum(n, 1, beta, d)
    if k == 2 and float(centers[0] @ centers[1]) < -1.0 + tol:
        return "antipodal", np.sort(sizes)[::-1], antipodal_spectrum(n, int(sizes[0]), beta, d)
    if np.all(sizes == sizes[0]) and _is_regular_polygon(centers, tol):
        kind = "equally_spaced" if k == n else "regular_clusters"
        return kind, sizes, regular_clusters_spectrum(n, k, beta, d)
    return "other", np.sort(sizes)[::-1], None
