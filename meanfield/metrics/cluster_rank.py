"""Clusters counted as in [GLPR25, §6.3]: the rank of the 0/1 matrix of close pairs.

The authors of [GLPR25] count the clusters of tokens x_1..x_n on the sphere as the rank
of ``A_ij = 1[<x_i, x_j> > 1 - eps]`` (diagonal included; eps = 1e-4 in their phase
diagram code). For unit vectors ``<x_i, x_j> > 1 - eps`` is ``|x_i - x_j| < sqrt(2 eps)``,
so with ``threshold = sqrt(2 eps)`` (chordal) A is the adjacency matrix, with its
diagonal, of the graph whose connected components ``meanfield.metrics.clusters`` counts
(single linkage). Here ``A_ij = 1[|x_i - x_j| < threshold]`` on spheres (chordal) and in
R^d (Euclidean) alike.

The two counts agree when closeness is transitive: tokens in k groups, every pair
within a group closer than the threshold and every pair across groups farther, give a
block diagonal A of all-ones blocks (after a permutation), rank k = k components. They
differ when it is not: a chain of m tokens, each close to its neighbours only, is one
component, while its A is the tridiagonal all-ones matrix, of eigenvalues
``1 + 2 cos(pi j/(m + 1))``, j = 1..m, so of rank m - 1 when m = 2 mod 3 and m
otherwise. In general rank >= components, with equality exactly when every component is
a clique (closeness transitive): A is block diagonal over the components, each block has
rank >= 1, and a block with a zero entry A_ij has the identity [[1, 0], [0, 1]] on rows
and columns i, j, so rank >= 2.

The rank is numerical (``numpy.linalg.matrix_rank`` of the symmetric A: eigenvalues above
``n eps_machine`` times the largest, as the authors' ``torch.linalg.matrix_rank``), after
removing repeated rows and columns (tokens with the same neighbours; the rank is
unchanged): a clustered state of n tokens shrinks to a few distinct rows. Cost: the
``n x n`` distances, then the dense rank of the distinct rows, at most
``MAX_RANK_TOKENS`` tokens.
"""
from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist

from meanfield.errors import ConfigError
from meanfield.metrics import clusters
from meanfield.metrics.clusters import MAX_RANK_TOKENS

METHODS = ("linkage", "rank")


def close_pairs(x: np.ndarray, threshold: float) -> np.ndarray:
    """``A_ij = 1[|x_i - x_j| < threshold]`` (bool, diagonal true)."""
    x = np.asarray(x, dtype=float)
    return cdist(x, x) < threshold


def cluster_rank(x: np.ndarray, threshold: float) -> int:
    """The rank of ``1[|x_i - x_j| < threshold]`` (module docstring).

    Args:
        x: ``(n, d)`` tokens (unit rows on a sphere: the distance is chordal).
        threshold: distance below which two tokens are close.

    Returns:
        The numerical rank (>= 1).
    """
    a = close_pairs(x, threshold)
    rows = np.unique(np.packbits(a, axis=1), axis=0, return_index=True)[1]
    a = a[np.sort(rows)]  # distinct rows; their columns: the same up to repetition
    cols = np.unique(np.packbits(a.T, axis=1), axis=0, return_index=True)[1]
    a = a[:, np.sort(cols)].astype(float)
    return int(np.linalg.matrix_rank(a))


def count_clusters(x: np.ndarray, threshold: float, method: str = "linkage",
                   euclidean: bool = False) -> int:
    """Clusters of the tokens ``x`` at ``threshold`` by ``method``: ``"linkage"``
    (components; ``cluster_count`` on spheres, ``euclidean_cluster_count`` in R^d) or
    ``"rank"`` (``cluster_rank``)."""
    if method == "rank":
        return cluster_rank(x, threshold)
    if method != "linkage":
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    # (through the module: a caller that replaces clusters.cluster_count is obeyed)
    return clusters.euclidean_cluster_count(x, threshold) if euclidean else \
        clusters.cluster_count(x, threshold)


def check_rank_size(n: int, method: str, key: str = "particles.cluster_method") -> None:
    """``ConfigError`` when the rank count would need more than ``MAX_RANK_TOKENS``."""
    if method == "rank" and n > MAX_RANK_TOKENS:
        raise ConfigError(f"{key} = \"rank\" needs the dense rank of the n x n matrix of "
                          f"close pairs: n = {n} > {MAX_RANK_TOKENS}; use fewer tokens or "
                          "cluster_method = \"linkage\"", key)
