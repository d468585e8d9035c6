"""The per-save diagnostics of a few tokens take short paths (issue 32: a save costs a
copy and the diagnostics asked for): the energy's pair sum in one dense product, the
cluster count by Prim's tree of all the tokens. Each against the general path."""
import numpy as np
import pytest

from meanfield.metrics import clusters as cl
from meanfield.model import kernels
from meanfield.model import particles as pm
from solvers.particles.direct import normalize_rows


def _tokens(n: int, d: int, seed: int, spread: float = 1.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = normalize_rows(rng.standard_normal((4, d)))
    return normalize_rows(centres[rng.integers(0, 4, n)] +
                          spread * rng.standard_normal((n, d)))


@pytest.mark.parametrize("beta", [0.5, 4.0, 60.0])
def test_small_energy_is_the_kernel_sums_energy(monkeypatch, beta):
    x = _tokens(32, 16, 1)
    assert 32 * 32 * 16 <= kernels.SMALL_FRAME
    short = pm.interaction_energy(x, beta)
    monkeypatch.setattr(kernels, "SMALL_FRAME", 0)  # the general path
    general = pm.interaction_energy(x, beta)
    assert short == pytest.approx(general, rel=1e-12, abs=1e-14 * np.exp(beta) / beta)


@pytest.mark.parametrize("d", [3, 16])
def test_small_cluster_count_is_the_snapped_count(monkeypatch, d):
    # tight clusters with near duplicates (what the snapping merges), several thresholds
    sets = [_tokens(40, d, seed, spread) for seed, spread in ((2, 1e-3), (3, 3e-2))]
    short = [cl.cluster_count(x, thr) for x in sets for thr in (1e-2, 0.1, 0.5)]
    euclid = [cl.euclidean_cluster_count(3 * x, thr) for x in sets for thr in (1e-2, 0.3)]
    monkeypatch.setattr(cl, "SMALL_FRAME", 0)  # the snapped paths
    assert short == [cl.cluster_count(x, thr) for x in sets for thr in (1e-2, 0.1, 0.5)]
    assert euclid == [cl.euclidean_cluster_count(3 * x, thr) for x in sets
                      for thr in (1e-2, 0.3)]
    assert len(set(short)) > 1  # (the thresholds separate different counts)
