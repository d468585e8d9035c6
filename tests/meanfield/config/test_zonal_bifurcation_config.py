"""The config of the bifurcation study on the zonal geometry: the closed-form thresholds
the "auto" range is derived from (against the model's growth rates: an independent path,
``meanfield.model.zonal_kernels``), and ``domain.dim`` as a list or a range of
dimensions (a study across d), refused where one dimension is needed."""
from __future__ import annotations

import math

import pytest

from meanfield import config
from meanfield.config.thresholds import attraction, critical_kappa
from meanfield.errors import ConfigError
from meanfield.model.zonal_kernels import zonal_growth_rate


@pytest.mark.parametrize("d", [2, 3, 8, 64, 512])
@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("beta", [0.1, 1.0, 5.0, 40.0])
@pytest.mark.parametrize("mode", [1, 2, 3])
def test_zonal_threshold_is_where_the_growth_rate_vanishes(d, normalized, beta, mode):
    kc = critical_kappa("zonal", beta, normalized, mode, dim=d)
    weight = mode * (mode + d - 2)
    assert math.isfinite(kc) and kc > 0
    assert abs(float(zonal_growth_rate(mode, d, beta, kc, normalized))) <= 1e-12 * weight / kc
    assert attraction("zonal", beta, normalized, mode, d) == pytest.approx(
        float(zonal_growth_rate(mode, d, beta, math.inf, normalized)) / weight, rel=1e-12)


def test_zonal_beta_zero_threshold_is_d():
    for d in (2, 5, 100):
        assert critical_kappa("zonal", 0.0, True, dim=d) == d
        assert critical_kappa("zonal", 0.0, True, mode=2, dim=d) == math.inf


@pytest.mark.parametrize("dim", [None, 1, 2.0])
def test_zonal_threshold_needs_an_integer_dimension(dim):
    with pytest.raises(ValueError, match="dim"):
        attraction("zonal", 1.0, True, 1, dim)


def test_auto_range_in_dimension_d():
    """beta = 0: kappa_c = d, so the "auto" range is [d/2, 2d]."""
    cfg = config.validate({"model": {"beta": 0.0}, "domain": {"geometry": "zonal", "dim": 16}},
                          "bifurcation")
    assert (cfg["bifurcation"]["start"], cfg["bifurcation"]["stop"]) == (8.0, 32.0)


def test_dim_as_a_list_or_a_range():
    cfg = config.validate({"domain": {"geometry": "zonal", "dim": [16, 4, 8]}},
                          "bifurcation")
    assert cfg["domain"]["dim"] == [4, 8, 16]  # (sorted)
    # an "auto" kappa range stays "auto": the study derives it for each d
    assert cfg["bifurcation"]["start"] == "auto" and cfg["bifurcation"]["stop"] == "auto"
    cfg = config.validate({"domain": {"geometry": "zonal",
                                      "dim": {"start": 4, "stop": 64, "num": 16}}},
                          "bifurcation")
    assert cfg["domain"]["dim"] == list(range(4, 65, 4))
    again = config.validate(cfg, "bifurcation")  # (idempotent)
    assert again["domain"]["dim"] == cfg["domain"]["dim"]


@pytest.mark.parametrize("domain, match", [
    ({"geometry": "circle", "dim": [2, 3]}, r"domain.dim = \[2, 3\]: a list of dimensions "
                                            r"is for the zonal geometry"),
    ({"geometry": "zonal", "dim": [8, 8]}, "names a dimension twice"),
    ({"geometry": "zonal", "dim": [1, 8]}, r"domain.dim\[0\] = 1 must be >= 2"),
    ({"geometry": "zonal", "dim": [8, 2.5]}, r"domain.dim\[1\]"),
    ({"geometry": "zonal", "dim": {"start": 2, "stop": 5, "num": 3}},
     "must give integers at every point"),
    ({"geometry": "zonal", "dim": []}, "non-empty list"),
    ({"geometry": "zonal", "dim": [8, 200_000]}, "the zonal PDE takes 2 <= dim"),
])
def test_bad_lists_of_dimensions(domain, match):
    with pytest.raises(ConfigError, match=match) as info:
        config.validate({"domain": domain}, "bifurcation")
    assert info.value.key.startswith("domain.dim")


@pytest.mark.parametrize("task", ["evolve", "compare"])
def test_a_task_of_one_dimension_refuses_a_list(task):
    with pytest.raises(ConfigError, match="taken by the bifurcation study only") as info:
        config.validate({"domain": {"geometry": "zonal", "dim": [4, 8]}}, task)
    assert info.value.key == "domain.dim"


def test_evolve_refuses_a_list_from_python():
    from meanfield.runs.evolve import evolve

    with pytest.raises(ConfigError, match="taken by the bifurcation study only"):
        evolve({"domain": {"geometry": "zonal", "dim": [4, 8]}})
