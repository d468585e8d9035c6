"""The single-linkage count of points in R^d (and on spheres in d >= 4) without Prim's
O(n^2) tree: the components of the close pairs (``meanfield.metrics.components``),
issue 31 item 3. Checked against Prim's tree (the old count) and scipy's single-linkage
hierarchy on random points, several thresholds, ties at the threshold; the O(n^2) kernel
is not called, the search checks signals between blocks, and what stays costly is
refused before any work."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.cluster.hierarchy import fcluster, linkage

import meanfield
from meanfield import ConfigError
from meanfield.metrics import clusters as cl
from meanfield.metrics import components as comp


def prim_count(x: np.ndarray, threshold: float) -> int:
    """The old count: 1 + the edges >= threshold of Prim's minimum spanning tree."""
    return 1 + int(np.count_nonzero(cl._prim(np.ascontiguousarray(x)) >= threshold))


def scipy_count(x: np.ndarray, threshold: float) -> int:
    """Brute force: scipy's single linkage cut at merge heights < threshold."""
    heights = linkage(x, "single")[:, 2]
    return 1 + int(np.count_nonzero(heights >= threshold))


@pytest.mark.parametrize("d", [2, 3, 4, 6])
def test_components_equal_prims_count_on_random_points(d):
    # clustered points at spreads around the thresholds, so that many MST edges lie near
    # each threshold; both the cubes (d <= 3) and the pair search (d >= 4) are checked
    rng = np.random.default_rng(10 + d)
    for spread in (0.01, 0.1, 0.5):
        centres = 3.0 * rng.standard_normal((8, d))
        x = centres[rng.integers(0, 8, 300)] + spread * rng.standard_normal((300, d))
        for threshold in (0.01, 0.05, 0.2, 0.7, 2.0):
            old = prim_count(x, threshold)
            assert comp.component_count(x, threshold) == old == scipy_count(x, threshold)


@pytest.mark.parametrize("d", [2, 3, 5])
def test_ties_at_the_threshold_are_not_joined(d):
    # integer points: distances 1, sqrt 2, 2 exactly. A pair at exactly the threshold is
    # not joined (< threshold), as the old tree counted edges >= threshold as cuts.
    rng = np.random.default_rng(d)
    x = np.unique(rng.integers(0, 6, (150, d)).astype(float), axis=0)
    for threshold in (1.0, np.sqrt(2.0), 2.0, np.nextafter(1.0, 2.0)):
        assert comp.component_count(x, threshold) == prim_count(x, threshold)
    pair = np.array([[0.0, 0.0], [1.0, 0.0]])
    assert comp.component_count(pair, 1.0) == 2
    assert comp.component_count(pair, np.nextafter(1.0, 2.0)) == 1


def test_the_public_counts_do_not_call_prim(monkeypatch):
    # R^d in d = 2, 3, 5 and the sphere S^4 (d = 5) and a degenerate S^2 set (all on one
    # great circle: no hull): the old code ran the O(n^2) kernel for each
    def refused(x):
        raise AssertionError("the O(n^2) Prim kernel was called")

    rng = np.random.default_rng(0)
    expected = {}
    for d in (2, 3, 5):
        x = rng.standard_normal((400, d))
        expected[d] = (x, prim_count(x, 0.3))
    s4 = rng.standard_normal((400, 5))
    s4 /= np.linalg.norm(s4, axis=1, keepdims=True)
    circle = np.c_[np.cos(np.arange(50) * 0.13), np.sin(np.arange(50) * 0.13), np.zeros(50)]
    sphere_expected = prim_count(s4, 0.4), prim_count(circle, 0.2)
    # the bounded dense path (n^2 d <= DENSE_WORK) is Prim's own tree: equal by
    # construction; above it the components must give the same counts without Prim
    dense = tuple(cl.euclidean_cluster_count(x, 0.3) for x, _ in expected.values())
    assert dense == tuple(count for _, count in expected.values())
    monkeypatch.setattr(cl, "_prim", refused)
    monkeypatch.setattr(cl, "DENSE_WORK", 0)
    for d, (x, count) in expected.items():
        assert cl.euclidean_cluster_count(x, 0.3) == count
    assert (cl.cluster_count(s4, 0.4), cl.cluster_count(circle, 0.2)) == sphere_expected


def test_large_sets_never_take_the_dense_tree(monkeypatch):
    """n^2 d above ``DENSE_WORK`` (n = 5000 in R^5: 1.25e8) goes to the components."""
    monkeypatch.setattr(cl, "_prim", lambda x: pytest.fail("the O(n^2) kernel ran"))
    x = np.random.default_rng(1).standard_normal((5000, 5))
    assert 5000 * 5000 * 5 > cl.DENSE_WORK
    assert cl.euclidean_cluster_count(x, 0.3) >= 1


def test_a_dense_crowd_is_one_component_quickly():
    # 2e5 tokens within 0.3 threshold of each other, not collapsed (the snapping keeps
    # ~1e5 distinct): one cluster; Prim's tree would compare ~1e10 pairs (about a minute),
    # the cubes hold ~ 1 / (threshold / sqrt 2)^2 of them each
    rng = np.random.default_rng(3)
    x = 0.1 * rng.random((200_000, 2))
    assert cl.euclidean_cluster_count(x, 0.35) == 1
    far = np.vstack([x, x + 10.0])  # two crowds 10 apart: two clusters
    assert comp.component_count(far, 0.35) == 2


class Interrupt:
    """A ``DeferredSignals`` stand-in whose check raises, as a noted Ctrl-C would."""

    def __init__(self, after: int):
        self.calls, self.after = 0, after

    def check(self):
        self.calls += 1
        if self.calls > self.after:
            raise KeyboardInterrupt


@pytest.mark.parametrize("d", [2, 5])
def test_the_search_checks_signals_between_blocks(d, monkeypatch):
    monkeypatch.setattr(comp, "BLOCK", 64)
    x = np.random.default_rng(1).standard_normal((2000, d))
    signals = Interrupt(after=2)
    with pytest.raises(KeyboardInterrupt):
        comp.component_count(x, 0.3, signals=signals)
    quiet = Interrupt(after=10**9)
    assert comp.component_count(x, 0.3, signals=quiet) == prim_count(x, 0.3)
    assert quiet.calls >= 2000 // 64


def test_too_many_close_pairs_are_refused_naming_the_threshold(monkeypatch):
    monkeypatch.setattr(comp, "MAX_PAIRS", 1000)
    x = np.random.default_rng(2).standard_normal((500, 4)) * 0.01
    with pytest.raises(ConfigError, match="particles.cluster_threshold"):
        comp.component_count(x, 1.0)


def test_a_costly_count_in_high_dimension_is_refused_before_any_work(monkeypatch):
    # n = 10^6 tokens in R^8: up to 4e12 distance terms a frame, refused at the plan,
    # before the tokens are drawn; n = 10^6 in R^2 is O(n log n) and passes the check
    def no_work(*args, **kw):
        raise AssertionError("work started")

    monkeypatch.setattr(cl, "euclidean_cluster_count", no_work)
    cfg = {"domain": {"geometry": "euclidean", "dim": 8},
           "initial": {"kind": "gaussian", "covariance": 1.0},
           "time": {"t_final": 1.0, "save_every": 0.5}, "particles": {"n": 10**6}}
    with pytest.raises(ConfigError, match="particles.n = 1000000") as err:
        meanfield.particles(cfg)
    assert err.value.key == "particles.n"
    comp.check_linkage_work(10**6, 2)
    comp.check_linkage_work(10**6, 3)


@pytest.mark.slow
def test_a_million_tokens_in_the_plane_are_counted():
    # the n = 10^6 (old: ~ 30 minutes a frame): Gaussian tokens, threshold 1e-2
    rng = np.random.default_rng(4)
    x = rng.standard_normal((10**6, 2))
    sub = x[:3000]
    assert comp.component_count(sub, 0.05) == scipy_count(sub, 0.05)
    count = cl.euclidean_cluster_count(x, 1e-2)
    assert 1 < count < 10**6
