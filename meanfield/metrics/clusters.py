"""Clusters of tokens and the rank of the attention matrix.

Clusters: the connected components of the graph joining two tokens when their chordal
distance ``|x_i - x_j|`` is below ``threshold`` (single linkage). The count is exact and
computed from a minimum spanning tree (MST): the components are what is left of the MST
after cutting its edges of length ``>= threshold``, so the count is
``1 + #{MST edges >= threshold}``:

- S^1 (d = 2): the MST of points on a circle is the circle of sorted angles minus its
  longest gap, so the count comes from the sorted angular gaps (chord = 2 sin(gap/2));
  O(n log n), any n.
- S^2 (d = 3): the MST is a subgraph of the spherical Delaunay triangulation, which is the
  convex hull of the points (``scipy.spatial.ConvexHull``). Degenerate sets (fewer than 4
  distinct points, all on one plane) are counted as in d > 3, and so are a few tokens
  (``n^2 d <= DENSE_WORK_S2``, n up to ~2400: Prim's tree, cheaper there).
- d > 3, and R^d (``euclidean_cluster_count``): the connected components of the graph of
  pairs closer than the threshold (``meanfield.metrics.components``: cubes and k-d trees,
  O(n log n) in d <= 3, in blocks between which Ctrl-C and SIGTERM are handled), the same
  count as the MST's without building it. ``mst_edge_lengths`` itself keeps Prim's
  algorithm there, O(n^2 d) time and O(n) memory (numba).

For d >= 3 tokens closer than ``SNAP * threshold`` are merged first (snapped to a grid of
cubes of diagonal ``SNAP * threshold``; tokens of one cube are linked anyway): collapsed
clusters become single points, which keeps the hull well conditioned and the search short. The
count is then exact except for edges within ``SNAP * threshold`` of the threshold.

Attention rank: the numerical rank of the n x n attention matrix
``A_ij = e^{beta <x_i, x_j>} / sum_k e^{beta <x_i, x_k>}`` (SA; USA: ``e^{beta<x_i,x_j>}/n``;
hardmax: uniform over the nearest other tokens),
the number of singular values above ``tolerance`` times the largest. Clustering drives it
to the number of clusters (rank one for a single cluster). Dense: O(n^3), for n <= 5000.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from scipy import sparse
from scipy.sparse import csgraph
from scipy.spatial import ConvexHull, QhullError

from meanfield.metrics.components import component_count

MAX_RANK_TOKENS = 5000  # the dense SVD of the attention matrix: O(n^3)
# d > 3 with n^2 d below this: Prim's compiled O(n^2 d) tree (< ~0.1 s, no signal check
# needed), which for a few tokens costs microseconds where the k-d tree's sparse graph
# costs milliseconds a frame (the per-save diagnostics of small runs)
DENSE_WORK = 1e8
# S^2 with n^2 d below this: Prim's tree too (the hull's Qhull call and sparse graph cost
# 0.6 ms a frame at n = 32 against 0.005 ms; Prim's O(n^2) overtakes the O(n log n) hull
# near n = 2000: 3.3 against 5.9 ms at n = 1024, 106 against 50 ms at n = 4096). The
# count is the same: every MST has the same edge lengths, and the hull's np.linalg.norm of
# 3 components sums the squares in Prim's order
DENSE_WORK_S2 = 2**24
SNAP = 1e-3  # tokens within SNAP * threshold are merged before the tree is built
# n^2 d of "a few tokens" (the per-save diagnostics of small runs: n = 32, d = 16 is 2^14):
# the cluster count is Prim's tree of them all, the energy's pair sum one dense product
# (``meanfield.model.kernels.dense_pair_sum``), both in one call
# (``meanfield.metrics.small_frames``)
SMALL_FRAME = 2**16


def cluster_count(x: np.ndarray, threshold: float) -> int:
    """Number of single-linkage clusters of unit vectors ``x`` (n, d) at ``threshold``.

    Args:
        x: tokens, rows of unit length.
        threshold: chordal distance below which two tokens are linked.

    Returns:
        The number of connected components.
    """
    x = np.asarray(x, dtype=float)
    n, d = x.shape
    if d >= 3 and n * n * d <= min(SMALL_FRAME, DENSE_WORK):
        # a few tokens (the per-save diagnostics of small runs): the tree of them all;
        # the snapping is for the large sets, and its sort cost 20 us at n = 32, d = 16,
        # twice the tree
        count = _tree_count(np.ascontiguousarray(x), float(threshold))
        if count > 0:  # (0: not finite, the general path)
            return count
    if d >= 3:
        cube = SNAP * threshold / np.sqrt(d)
        x = x[_first_of_each_row(np.floor(x / cube).astype(np.int64))]
    if x.shape[0] == 1:
        return 1
    if d == 3 and x.shape[0] ** 2 * d <= DENSE_WORK_S2:  # (a few tokens: Prim's tree)
        return _dense_or_components(x, threshold)
    edges = mst_edge_lengths(x) if d == 2 else _hull_mst(x) if d == 3 else None
    if edges is None:  # d > 3, or a degenerate set on S^2: the close pairs' components
        return _dense_or_components(x, threshold)
    return 1 + int(np.count_nonzero(edges >= threshold))


def _dense_or_components(x: np.ndarray, threshold: float) -> int:
    """The count of d > 3 (or degenerate) points: Prim's tree cut at ``threshold`` where
    ``n^2 d <= DENSE_WORK``, else the close pairs' components (the same count, ties
    included: both sum the squares in the same order)."""
    n, d = x.shape
    if n * n * d <= DENSE_WORK and np.all(np.abs(x) < 1e150):  # (NaN: False)
        return 1 + int(np.count_nonzero(_prim(np.ascontiguousarray(x)) >= threshold))
    return component_count(x, threshold)


def euclidean_cluster_count(x: np.ndarray, threshold: float) -> int:
    """Number of single-linkage clusters of points ``x`` (n, d) in R^d, any d >= 1, at
    Euclidean distance ``threshold`` (tokens of the pure flow, not on a sphere).

    d = 1: the gaps of the sorted points; else the components of the close pairs
    (``meanfield.metrics.components``, O(n log n) in d <= 3) after the snapping of
    ``cluster_count`` (skipped where the grid indices would pass int64: far-out tokens).
    ``cluster_count``'s shortcuts (angles on S^1, the hull on S^2) hold for points on a
    sphere only.
    """
    x = np.asarray(x, dtype=float)
    n, d = x.shape
    if d == 1:
        return 1 + int(np.count_nonzero(np.diff(np.sort(x[:, 0])) >= threshold))
    if n * n * d <= min(SMALL_FRAME, DENSE_WORK):  # (as cluster_count's)
        count = _tree_count(np.ascontiguousarray(x), float(threshold))
        if count > 0:
            return count
    cube = SNAP * threshold / np.sqrt(d)
    if np.max(np.abs(x)) / cube < 2.0**62:
        x = x[_first_of_each_row(np.floor(x / cube).astype(np.int64))]
    if x.shape[0] == 1:
        return 1
    return _dense_or_components(x, threshold)


def mst_edge_lengths(x: np.ndarray) -> np.ndarray:
    """The n - 1 edge lengths (chordal) of a Euclidean minimum spanning tree of ``x``."""
    n, d = x.shape
    if d == 2:
        theta = np.sort(np.arctan2(x[:, 1], x[:, 0]))
        gaps = np.diff(np.append(theta, theta[0] + 2 * np.pi))
        chords = 2 * np.sin(np.minimum(gaps, 2 * np.pi - gaps) / 2)
        return np.delete(chords, np.argmax(gaps))  # the tree leaves out the longest gap
    if d == 3:
        lengths = _hull_mst(x)
        if lengths is not None:
            return lengths
    return _prim(np.ascontiguousarray(x))


def _first_of_each_row(a: np.ndarray) -> np.ndarray:
    """Sorted indices of the first occurrence of each distinct row of ``a``."""
    order = np.lexsort(a.T[::-1])
    b = a[order]
    new = np.ones(len(b), dtype=bool)
    new[1:] = np.any(b[1:] != b[:-1], axis=1)
    return np.sort(order[new])


def _hull_mst(x: np.ndarray) -> np.ndarray | None:
    unique = x[_first_of_each_row(x.view(np.int64))]  # exact duplicates: bitwise equal
    duplicates = x.shape[0] - unique.shape[0]
    if unique.shape[0] < 4:
        return None
    try:
        hull = ConvexHull(unique)
    except QhullError:
        return None
    if len(np.unique(hull.simplices)) < unique.shape[0]:
        return None  # some point not a hull vertex: not in convex position (degenerate)
    s = hull.simplices
    pairs = np.concatenate([s[:, [0, 1]], s[:, [1, 2]], s[:, [0, 2]]])
    pairs = np.sort(pairs, axis=1)
    code = np.unique(pairs[:, 0].astype(np.int64) * len(unique) + pairs[:, 1])
    pairs = np.stack([code // len(unique), code % len(unique)], axis=1)
    length = np.linalg.norm(unique[pairs[:, 0]] - unique[pairs[:, 1]], axis=1)
    m = unique.shape[0]
    # csgraph treats stored zeros as missing edges; distinct points have length > 0.
    graph = sparse.coo_matrix((length, (pairs[:, 0], pairs[:, 1])), shape=(m, m)).tocsr()
    tree = csgraph.minimum_spanning_tree(graph)
    if tree.nnz != m - 1:
        return None
    return np.concatenate([tree.data, np.zeros(duplicates)])


@numba.njit(cache=True)
def _tree_count(x, threshold):  # pragma: no cover - compiled
    """``1 +`` the edges of Prim's tree of ``x`` at least ``threshold`` long (the
    single-linkage count of a few tokens in one call); 0 when a component is not finite
    or beyond 1e150."""
    n, d = x.shape
    for i in range(n):
        for c in range(d):
            if not abs(x[i, c]) < 1e150:  # (NaN too)
                return 0
    count = 1
    if n > 1:
        for length in _prim(x):
            count += length >= threshold
    return count


@numba.njit(cache=True)
def _prim(x):
    n, d = x.shape
    best = np.full(n, np.inf)
    done = np.zeros(n, dtype=np.bool_)
    out = np.empty(n - 1)
    dist = np.empty(n)
    xt = np.ascontiguousarray(x.T)  # (components in rows: the loop over j is contiguous)
    current = 0
    done[0] = True
    for k in range(n - 1):
        # the squared distances from the current token, for every j at once (each sums
        # its squares in the order of c, as one j at a time did: the same bits, in
        # vector lanes across j)
        for j in range(n):
            dist[j] = 0.0
        for c in range(d):
            xc = xt[c, current]
            row = xt[c]
            for j in range(n):
                diff = xc - row[j]
                dist[j] += diff * diff
        nxt, nxt_d = -1, np.inf
        for j in range(n):
            if done[j]:
                continue
            s = dist[j]
            if s < best[j]:
                best[j] = s
            if best[j] < nxt_d:
                nxt, nxt_d = j, best[j]
        out[k] = np.sqrt(nxt_d)
        done[nxt] = True
        current = nxt
    return out


def attention_matrix(x: np.ndarray, beta: float, normalized: bool,
                     tie_tolerance: float = 1e-12) -> np.ndarray:
    """The dense attention matrix of directions ``x`` (SA rows sum to 1; USA scaled by
    ``e^-beta``, which does not change its rank). ``beta = inf``: the hardmax model's,
    row i uniform on the ``j != i`` maximising ``<x_i, x_j>`` (ties within
    ``tie_tolerance``)."""
    if math.isinf(beta):
        g = x @ x.T
        np.fill_diagonal(g, -np.inf)
        a = (g >= g.max(axis=1, keepdims=True) - tie_tolerance).astype(float)
        return a / a.sum(axis=1, keepdims=True)
    g = beta * (x @ x.T)
    g -= g.max(axis=1, keepdims=True) if normalized else beta
    a = np.exp(g)
    if normalized:
        a /= a.sum(axis=1, keepdims=True)
    return a


def attention_rank(x: np.ndarray, beta: float, normalized: bool, tolerance: float) -> int:
    """Numerical rank: singular values above ``tolerance`` times the largest."""
    from meanfield.metrics.attention import numerical_rank

    return numerical_rank(attention_matrix(x, beta, normalized), tolerance)
