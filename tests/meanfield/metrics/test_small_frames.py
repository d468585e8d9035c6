"""``small_frames``: the per-save diagnostics of a few tokens in one call, against the
general paths (numpy's mean and spread, ``interaction_energy`` through the kernel sums);
the counts of a few tokens (``clusters._tree_count``) against the snapped counts."""
import numpy as np
import pytest

import meanfield
from meanfield.metrics import clusters as cl
from meanfield.metrics.small_frames import euclidean_frame, sphere_frame
from meanfield.model import kernels
from meanfield.model import particles as pm
from solvers.particles.direct import normalize_rows


def _clustered(n: int, d: int, seed: int, spread: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = normalize_rows(rng.standard_normal((3, d)))
    return normalize_rows(centres[rng.integers(0, 3, n)] + spread * rng.standard_normal((n, d)))


@pytest.mark.parametrize("d", [3, 16])
def test_sphere_frame_against_the_general_paths(monkeypatch, d):
    monkeypatch.setattr(kernels, "SMALL_FRAME", 0)  # interaction_energy's kernel sums
    for seed, spread in ((1, 1e-3), (2, 0.05), (3, 1.0)):
        th = _clustered(32, d, seed, spread)
        for beta in (0.3, 4.0, 40.0):
            m, pairs, top = sphere_frame(th, beta)
            np.testing.assert_allclose(m, th.mean(axis=0), rtol=0, atol=1e-15)
            energy = kernels.energy_from_pair_sum(pairs, top, d, beta)
            assert energy == pytest.approx(pm.interaction_energy(th, beta), rel=1e-12,
                                           abs=1e-14 * np.exp(beta) / beta)


def test_euclidean_frame_against_numpy():
    for d, spread in ((2, 1e-3), (3, 0.05), (16, 1.0)):
        x = 5.0 * _clustered(30, d, d, spread) + 0.1
        mean, sd, top = euclidean_frame(x)
        np.testing.assert_allclose(mean, x.mean(axis=0), rtol=1e-14)
        assert sd == pytest.approx(np.sqrt(np.mean(np.sum((x - x.mean(0)) ** 2, 1))),
                                   rel=1e-13)
        assert top == pytest.approx(np.max(np.linalg.norm(x, axis=1)), rel=1e-15)


def test_tokens_not_finite_go_to_the_general_paths():
    th = _clustered(8, 4, 5, 0.1)
    for bad in (np.nan, 1e200, np.inf):
        th[3, 2] = bad
        assert sphere_frame(th, 1.0) is None and euclidean_frame(th) is None
        assert cl._tree_count(th, 0.1) == 0


def test_run_diagnostics_take_the_small_path_and_agree(monkeypatch):
    cfg = {"domain": {"geometry": "sphere", "dim": 8}, "model": {"beta": 4.0},
           "particles": {"n": 24, "seed": 3, "cluster_threshold": 0.05},
           "initial": {"kind": "uniform"}, "time": {"t_final": 20.0, "save_every": 2.0}}
    small = meanfield.particles(cfg)
    monkeypatch.setattr(cl, "SMALL_FRAME", 0)  # the general paths
    general = meanfield.particles(cfg)
    np.testing.assert_array_equal(small.position.values, general.position.values)
    np.testing.assert_array_equal(small.clusters.values, general.clusters.values)
    assert small.clusters.values[-1] < small.clusters.values[0]  # (they merged)
    for name in ("order_parameter", "energy"):
        np.testing.assert_allclose(small[name].values, general[name].values, rtol=1e-12,
                                   atol=1e-15)
