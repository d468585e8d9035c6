"""The metastability study with ``particles.cluster_method = "rank"``: the clusters series
is the rank of the matrix of close pairs (never below the single-linkage count of the
same tokens: a theorem, docs/conventions.md "Counting clusters"), the plateau and merge
analysis is unchanged (it counts components whatever the method)."""
from __future__ import annotations

import numpy as np

from meanfield.studies.tokens import metastability as ms

SMALL = {"particles": {"n": 16, "seed": 3},
         "metastability": {"beta": [6.0], "systems": 2, "chunk": 2,
                           "times": {"start": 0.5, "stop": 60.0, "num": 12,
                                     "scale": "log"}}}


def test_rank_counts_beside_linkage():
    linkage = ms.metastability(SMALL)
    cfg = {**SMALL, "particles": {**SMALL["particles"], "cluster_method": "rank"}}
    rank = ms.metastability(cfg)
    assert np.all(rank.clusters.values >= linkage.clusters.values)
    assert np.array_equal(rank.first_plateau_clusters.values,
                          linkage.first_plateau_clusters.values, equal_nan=True)
    assert np.array_equal(rank.energy.values, linkage.energy.values)  # same tokens
    assert "rank" in rank.clusters.attrs["long_name"]
