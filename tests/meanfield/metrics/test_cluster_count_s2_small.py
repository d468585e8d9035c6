"""A few tokens on S^2 are counted by Prim's tree (``clusters.DENSE_WORK_S2``): the same
count as the convex hull's MST (an independent tree of the same points), ties included."""
import numpy as np
import pytest

from meanfield.metrics import clusters as cl


@pytest.mark.parametrize("n", [5, 32, 200])
def test_small_s2_counts_equal_the_hulls(n):
    rng = np.random.default_rng(n)
    centres = rng.standard_normal((4, 3))
    x = centres[rng.integers(0, 4, n)] + 0.05 * rng.standard_normal((n, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    assert n * n * 3 <= cl.DENSE_WORK_S2
    edges = cl._hull_mst(x)
    assert edges is not None
    for threshold in (1e-3, 0.02, 0.05, 0.2, 1.0, *np.sort(edges)[::7]):  # ties too
        assert cl.cluster_count(x, threshold) == 1 + np.count_nonzero(edges >= threshold)
