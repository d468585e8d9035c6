"""The papers' cluster count (rank of the 0/1 matrix of close pairs) on token sets whose
answer is known by hand, against the single-linkage components."""
from __future__ import annotations

import numpy as np
import pytest

from meanfield.errors import ConfigError
from meanfield.metrics.cluster_rank import check_rank_size, cluster_rank, count_clusters

THRESHOLD = 0.01


def _arc(angles: np.ndarray, axis: int = 2) -> np.ndarray:
    """Unit vectors at ``angles`` on a great circle of S^2."""
    x = np.zeros((angles.size, 3))
    x[:, (axis + 1) % 3], x[:, (axis + 2) % 3] = np.cos(angles), np.sin(angles)
    return x


@pytest.mark.parametrize("m", range(2, 12))
def test_chain_rank_is_the_tridiagonal_rank(m):
    # neighbours 0.008 apart (< 0.01), next-but-one 0.016 (> 0.01): A is the tridiagonal
    # all-ones matrix, eigenvalues 1 + 2 cos(pi j/(m + 1)): singular iff m = 2 mod 3
    x = _arc(0.008 * np.arange(m))
    assert cluster_rank(x, THRESHOLD) == (m - 1 if m % 3 == 2 else m)
    assert count_clusters(x, THRESHOLD, "linkage") == 1
    # the same chain on S^1 and in R^2 (Euclidean distances)
    assert cluster_rank(x[:, :2], THRESHOLD) == (m - 1 if m % 3 == 2 else m)
    line = np.column_stack([0.008 * np.arange(m), np.zeros(m)])
    assert count_clusters(line, THRESHOLD, "rank", euclidean=True) == \
        (m - 1 if m % 3 == 2 else m)
    assert count_clusters(line, THRESHOLD, "linkage", euclidean=True) == 1


def test_exact_clusters_give_equal_counts():
    # k groups of tokens within 1e-4 of their centre, centres far apart: closeness is
    # transitive, A block diagonal of all-ones blocks: rank = components = k
    rng = np.random.default_rng(3)
    for k in (1, 2, 5, 9):
        centres = _arc(2 * np.pi * np.arange(k) / k + 0.3)
        x = np.repeat(centres, 7, axis=0) + 1e-4 * rng.standard_normal((7 * k, 3))
        x /= np.linalg.norm(x, axis=1)[:, None]
        assert cluster_rank(x, THRESHOLD) == k
        assert count_clusters(x, THRESHOLD, "linkage") == k
        # coinciding tokens (repeated rows) change nothing
        assert cluster_rank(np.repeat(centres, 50, axis=0), THRESHOLD) == k


def test_chains_and_clusters_add_up():
    # two tight clusters and a separate chain of 5 (rank 4): rank 1 + 1 + 4, components 3
    chain = _arc(1.0 + 0.008 * np.arange(5))
    blobs = np.repeat(_arc(np.array([2.5, 4.0])), 6, axis=0)
    x = np.vstack([blobs, chain])
    assert cluster_rank(x, THRESHOLD) == 6
    assert count_clusters(x, THRESHOLD) == 3


def test_rank_size_is_refused_before_any_work():
    check_rank_size(5000, "rank")
    check_rank_size(10**6, "linkage")
    with pytest.raises(ConfigError, match="particles.cluster_method") as err:
        check_rank_size(5001, "rank")
    assert err.value.key == "particles.cluster_method" and "\n" not in str(err.value)
