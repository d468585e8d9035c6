"""The convergence study on zonal densities (``domain.geometry = "zonal"``): tokens on
S^{d-1} against the zonal PDE, measured by the W_p of the polar-angle marginals (the
exact W_p on S^{d-1} to the tokens' zonal average, a lower bound of W_p(mu^n, mu)).

Exact relations checked: at t = 0 the tokens are their partners (coupling 0, distance =
sampling floor); at every time distance <= coupling + sampling floor (the angle to e is
1-Lipschitz, so the polar-angle W_p of two token sets is at most their coupling
distance; then the triangle inequality); Dobrushin's bound is NaN (no W_1 on S^{d-1} to
start it). Rate: i.i.d. samples in one variable, W_1 ~ n^{-1/2} whatever d: the 95 %
interval of the sampling floor's slope holds -1/2 (fixed seed).
"""
from __future__ import annotations

import numpy as np
import pytest

import meanfield
from meanfield.errors import ConfigError

CONFIG = {"domain": {"geometry": "zonal", "dim": 16},
          "model": {"beta": 1.0, "kappa": "inf"},
          "initial": {"kind": "von_mises", "concentration": 3.0},
          "discretization": {"resolution": 32},
          "time": {"t_final": 0.5, "save_every": 0.25, "dt": 0.05},
          "convergence": {"n": [50, 200, 800], "replicas": 3, "p": 1.0}}


@pytest.fixture(scope="module")
def study():
    return meanfield.convergence(CONFIG)


def assert_exact_relations(study) -> None:
    d, c, f = (study[k].values for k in ("distance", "coupling", "sampling_floor"))
    np.testing.assert_array_equal(c[..., 0], 0.0)
    np.testing.assert_array_equal(d[..., 0], f[..., 0])
    assert np.all(d <= c + f + 1e-12)
    assert np.all(np.isnan(study.dobrushin_bound.values))
    assert study.distance.attrs["units"] == "rad" and "polar-angle" in \
        study.distance.attrs["long_name"]


def test_exact_relations(study):
    assert_exact_relations(study)


def test_sampling_floor_rate_is_one_half(study):
    assert np.all(study.sampling_floor_slope_low.values <= -0.5)
    assert np.all(study.sampling_floor_slope_high.values >= -0.5)


def test_noise_p2_and_quantile_points_refused():
    cfg = {**CONFIG, "convergence": {**CONFIG["convergence"], "p": 2.0, "n": [50, 100],
                                     "replicas": 2},
           "model": {"beta": 1.0, "kappa": 20.0},
           "time": {"t_final": 0.25, "save_every": 0.125, "dt": 0.025}}
    ds = meanfield.convergence(cfg)
    assert_exact_relations(ds)
    assert np.all(np.isfinite(ds.distance.values)) and ds.attrs["p"] == 2.0
    with pytest.raises(ConfigError, match="convergence.points"):
        meanfield.convergence({**cfg, "convergence": {**cfg["convergence"],
                                                      "points": "quantile"}})
