"""The connected components of the threshold graph of points in R^d, in O(n log n).

Two points are joined when their Euclidean distance is strictly below ``threshold`` (the
single-linkage rule of ``meanfield.metrics.clusters``: a minimum spanning tree cut at its
edges ``>= threshold`` leaves exactly these components, so the two counts agree, ties at
the threshold included). Chordal distances on a sphere are Euclidean distances in R^d, so
the sphere's counts use it too.

- d <= 3, cells: the points fall in cubes of side ``threshold / sqrt(d)`` (shrunk by
  ``CELL_MARGIN``), of diameter below the threshold, so the points of one cube are one
  component. Two cubes are joined when some pair across them is close: one nearest
  neighbour query of one cube's points in the other's tree (``cKDTree.query`` with
  ``distance_upper_bound``), for the pairs of cubes whose centres lie within ``2
  threshold`` and that are not joined already (union-find). Each cube meets at most
  ``(2 ceil(sqrt d) + 1)^d`` others (25 in R^2, 125 in R^3), so the work is O(n log n)
  however dense the points: a cluster of 10^6 tokens within the threshold is one cube.
- d >= 4, close pairs: the cubes would have too many neighbours, so the close pairs
  themselves are listed by a k-d tree (``cKDTree.sparse_distance_matrix``) in blocks of
  ``BLOCK`` rows, each block's pairs counted first (``count_neighbors``, cheap where
  points are dense) and the block halved until it holds at most ``BLOCK_PAIRS``; more
  than ``MAX_PAIRS`` close pairs in all is refused (``ClusterCountError``) before they
  are listed. A k-d tree in high dimension degrades towards the O(n^2 d) comparisons of
  all pairs; ``check_linkage_work`` refuses such configurations before any work.

Every block is one compiled call of bounded length: Ctrl-C and SIGTERM are handled
between them (with ``signals``, a ``DeferredSignals``, its ``check`` runs there).
"""
from __future__ import annotations

import math

import numpy as np
from scipy import sparse
from scipy.sparse import csgraph
from scipy.spatial import cKDTree

from meanfield.errors import ConfigError

CELL_MARGIN = 1e-9  # cubes of diameter threshold (1 - 1e-9): their points are surely close
BLOCK = 16384  # rows of the close-pair search per compiled call
BLOCK_PAIRS = 2 * 10**6  # close pairs listed at once (32 MiB of indices and distances)
SMALL_PRODUCT = 64  # pairs of cubes with fewer point pairs: compared outright
MAX_PAIRS = 5 * 10**7  # close pairs in all (d >= 4): their indices kept, 16 bytes each (0.8 GB)
# d >= 4: n^2 d / 2 distance terms, the k-d tree's worst case. Measured (2 cores shared
# with other work, load ~7): n = 1e5 uniform on S^15, threshold 1e-2: 40 s for 8e10
# terms; S^4, n = 2e5, threshold 0.3: 95 s for 1e11. So about a minute a frame at most.
MAX_LINKAGE_WORK = 1e11


class ClusterCountError(ConfigError):
    """The close pairs of a frame exceed ``MAX_PAIRS`` (d >= 4)."""


def check_linkage_work(n: int, d: int, key: str = "particles.n") -> None:
    """Refuse, before any work, a single-linkage count whose worst case (a k-d tree in
    d >= 4 compares up to all ``n^2 / 2`` pairs, ``d`` terms each) passes
    ``MAX_LINKAGE_WORK``: ``ConfigError`` naming ``key`` (d <= 3 are O(n log n))."""
    work = 0.5 * n * n * d
    if d >= 4 and work > MAX_LINKAGE_WORK:
        fits = int(math.sqrt(2 * MAX_LINKAGE_WORK / d))
        raise ConfigError(f"{key} = {n}: the cluster count of each saved frame in d = {d} "
                          f"compares up to n^2 d / 2 = {work:.3g} distance terms (a k-d "
                          f"tree in d >= 4; limit {MAX_LINKAGE_WORK:.3g}): give at most "
                          f"n = {fits}, or particles.cluster_method = \"rank\" with n <= "
                          "5000", key)


def component_count(x: np.ndarray, threshold: float, signals=None) -> int:
    """Number of connected components of the graph joining the rows of ``x`` (n, d) at
    Euclidean distance strictly below ``threshold``.

    Args:
        x: points, finite or not (a non-finite point is alone).
        threshold: the distance below which two points are joined (> 0).
        signals: a ``DeferredSignals`` whose ``check`` runs between compiled calls.

    Returns:
        The number of components (>= 1 for n >= 1).
    """
    x = np.asarray(x, dtype=float)
    n, d = x.shape
    if n <= 1:
        return n
    finite = np.all(np.isfinite(x), axis=1) & (np.max(np.abs(x), axis=1) < 1e150)
    alone = int(n - np.count_nonzero(finite))  # beyond, squared distances overflow
    x = x[finite]
    if x.shape[0] == 0:
        return alone
    labels = _cells(x, threshold) if d <= 3 else None
    if labels is not None:
        return alone + _cell_components(x, labels, threshold, signals)
    return alone + _pair_components(x, threshold, signals)


def _cells(x: np.ndarray, threshold: float) -> np.ndarray | None:
    """The cube of each point (labels 0..C-1), or None where indices would pass int64."""
    side = threshold * (1.0 - CELL_MARGIN) / math.sqrt(x.shape[1])
    scaled = x / side
    if not np.max(np.abs(scaled)) < 2.0**60:
        return None
    index = np.floor(scaled).astype(np.int64)
    order = np.lexsort(index.T[::-1])
    new = np.ones(len(order), dtype=bool)
    new[1:] = np.any(index[order[1:]] != index[order[:-1]], axis=1)
    labels = np.empty(len(order), dtype=np.int64)
    labels[order] = np.cumsum(new) - 1
    return labels


def _close(a: np.ndarray, b: np.ndarray, threshold: float) -> np.ndarray:
    """``|a - b| < threshold`` row by row, the distance summed as the old Prim kernel
    (squares in order, then the root), so that ties at the threshold go the same way."""
    s = np.zeros(a.shape[0])
    for c in range(a.shape[1]):
        s += (a[:, c] - b[:, c]) ** 2
    return np.sqrt(s) < threshold


def _find(parent: np.ndarray, i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def _cell_components(x: np.ndarray, labels: np.ndarray, threshold: float, signals) -> int:
    cells = int(labels.max()) + 1
    order = np.argsort(labels, kind="stable")
    starts = np.searchsorted(labels[order], np.arange(cells + 1))
    size = np.diff(starts)
    side = threshold * (1.0 - CELL_MARGIN) / math.sqrt(x.shape[1])
    corners = np.floor(x[order[starts[:-1]]] / side) * side
    # cubes whose boxes are closer than the threshold: corners closer than 2 threshold
    pairs = cKDTree(corners).query_pairs(2.0 * threshold * (1 + 1e-9), output_type="ndarray")
    small = size[pairs[:, 0]] * size[pairs[:, 1]] <= SMALL_PRODUCT
    few = pairs[small]
    edges = [_small_pairs(x, order, starts, size, few[k:k + BLOCK], threshold, signals)
             for k in range(0, len(few), BLOCK)]
    joined = np.concatenate([few[:0]] + edges)
    graph = sparse.coo_matrix((np.ones(len(joined), dtype=np.int8),
                               (joined[:, 0], joined[:, 1])), shape=(cells, cells))
    groups, comp = csgraph.connected_components(graph, directed=False)
    parent = np.arange(groups)  # union-find over the groups joined so far
    merged = 0
    trees: dict[int, cKDTree] = {}
    for k, (a, b) in enumerate(pairs[~small]):  # a cube of many points: its tree
        if signals is not None and k % 1024 == 0:
            signals.check()
        ra, rb = _find(parent, comp[a]), _find(parent, comp[b])
        if ra == rb:
            continue
        if size[a] > size[b]:
            a, b = b, a  # query the smaller cube's points in the larger one's tree
        pa, pb = order[starts[a]:starts[a + 1]], order[starts[b]:starts[b + 1]]
        tree = trees.get(b)
        if tree is None:
            tree = trees[b] = cKDTree(x[pb])
        dist, j = tree.query(x[pa], k=1, distance_upper_bound=threshold * (1 + 1e-12))
        hit = np.isfinite(dist)
        if hit.any() and _close(x[pa][hit], x[pb][j[hit]], threshold).any():
            parent[ra] = rb
            merged += 1
    return groups - merged


def _small_pairs(x, order, starts, size, pairs, threshold, signals) -> np.ndarray:
    """The pairs of cubes (rows of ``pairs``) with a close pair of points, all pairs of
    their points compared at once (at most ``SMALL_PRODUCT`` per pair of cubes)."""
    if signals is not None:
        signals.check()
    a, b = pairs[:, 0], pairs[:, 1]
    count = size[a] * size[b]
    which = np.repeat(np.arange(len(pairs)), count)
    t = np.arange(len(which)) - np.repeat(np.cumsum(count) - count, count)
    i = order[starts[a][which] + t // size[b][which]]
    j = order[starts[b][which] + t % size[b][which]]
    return pairs[np.unique(which[_close(x[i], x[j], threshold)])]


def _pair_components(x: np.ndarray, threshold: float, signals) -> int:
    n = x.shape[0]
    tree = cKDTree(x)
    x = x[tree.indices]  # the tree's leaf order: each block of rows is compact in space
    tree = cKDTree(x, leafsize=16, balanced_tree=False)
    radius = threshold * (1 + 1e-12)  # the tree's own rounding; _close decides
    rows, cols, listed = [], [], 0
    todo = [(a, min(a + BLOCK, n)) for a in range(0, n, BLOCK)]
    while todo:
        if signals is not None:
            signals.check()
        a, b = todo.pop()
        block = cKDTree(x[a:b])
        count = int(block.count_neighbors(tree, radius))
        if count > BLOCK_PAIRS and b - a > 1:
            mid = (a + b) // 2
            todo += [(a, mid), (mid, b)]
            continue
        listed += count
        if listed > 2 * MAX_PAIRS + n:  # ordered pairs, each point with itself
            raise ClusterCountError(
                f"particles.cluster_threshold = {threshold:g}: more than {MAX_PAIRS:.3g} "
                f"pairs of the {n} tokens are closer than it (d = {x.shape[1]}): the "
                "single-linkage count would list them all; give a smaller threshold or "
                "fewer tokens", "particles.cluster_threshold")
        found = block.sparse_distance_matrix(tree, radius, output_type="ndarray")
        i, j = found["i"] + a, found["j"]
        keep = i < j
        i, j = i[keep], j[keep]
        keep = _close(x[i], x[j], threshold)
        rows.append(i[keep])
        cols.append(j[keep])
    i, j = np.concatenate(rows), np.concatenate(cols)
    graph = sparse.coo_matrix((np.ones(len(i), dtype=np.int8), (i, j)), shape=(n, n))
    return int(csgraph.connected_components(graph, directed=False)[0])
