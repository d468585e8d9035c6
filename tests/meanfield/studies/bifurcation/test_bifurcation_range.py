"""``bifurcation.start/stop = "auto"`` (the defaults): the range derived from the
closed-form thresholds kappa_c = 1/(c a_k) of modes 1..modes, [kappa_c/2, 2 kappa_c], so
that every pitchfork is inside. The former fixed default [1, 4] missed the first
pitchfork of USA at beta = 3 on S^1 (kappa_c = 0.7588 < 1): its mode-1 branch was absent."""
from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield import config
from meanfield.studies.bifurcation import study as bf
from meanfield.studies.bifurcation import stationary_linear as lin


def validated(extra: dict) -> dict:
    base = {"discretization": {"method": "spectral", "resolution": 64}}
    return config.validate({**base, **extra}, "bifurcation")


@pytest.mark.parametrize("geometry, kappa_c", [("circle", 2.0), ("sphere", 3.0)])
def test_auto_range_around_the_analytic_threshold_at_beta_zero(geometry, kappa_c):
    """beta = 0: a_1 = 1/2 on S^1 (noisy Kuramoto, kappa_c = 2), 1/3 on S^2 (kappa_c = 3)."""
    b = validated({"domain": {"geometry": geometry},
                   "discretization": {"method": "spectral",
                                      "resolution": 64 if geometry == "circle" else 12},
                   "model": {"beta": 0.0, "kappa": 4.0}})["bifurcation"]
    assert (b["start"], b["stop"]) == pytest.approx((kappa_c / 2, 2 * kappa_c), rel=1e-12)


def test_given_ends_are_kept_and_a_single_auto_end_stays_beside_the_other():
    b = validated({"bifurcation": {"start": 1.5, "stop": 8.5}})["bifurcation"]
    assert (b["start"], b["stop"]) == (1.5, 8.5)
    b = validated({"model": {"beta": 0.0}, "bifurcation": {"stop": 0.5}})["bifurcation"]
    assert b["start"] == 0.25 and b["stop"] == 0.5  # (kappa_c/2 = 1 >= stop: stop/2)
    b = validated({"model": {"beta": 0.0}, "bifurcation": {"start": 3.0}})["bifurcation"]
    assert (b["start"], b["stop"]) == (3.0, 4.0)


def test_usa_every_pitchfork_inside_the_default_range():
    """USA at beta = 3 on S^1, modes 1 and 2: both thresholds inside the auto range, and
    the study finds both pitchforks there at the closed form (to 1e-6, the study's own
    check) with both branches computed."""
    cfg = {"model": {"beta": 3.0, "normalized": False},
           "discretization": {"resolution": 64}, "bifurcation": {"modes": 2}}
    kcs = [lin.critical_kappa("circle", 3.0, False, k) for k in (1, 2)]
    b = validated(cfg)["bifurcation"]
    assert b["start"] < kcs[0] < 1.0 < kcs[1] < b["stop"]  # (1.0: the former start)
    ds = bf.bifurcation(cfg)
    pitchforks = ds.special_type.values == "pitchfork"
    found = {int(m): float(k) for m, k in zip(ds.special_mode.values[pitchforks],
                                               ds.special_kappa.values[pitchforks])}
    for mode, kc in zip((1, 2), kcs):
        assert abs(found[mode] - kc) <= 1e-6 * kc
    points = np.isfinite(ds.kappa.values).sum(axis=1)
    modes = ds.branch_mode.values
    assert all(points[modes == m].min() >= 5 for m in (1, 2))
    assert math.isclose(float(ds.attrs["critical_kappa"][0]), kcs[0], rel_tol=1e-12)


def kuramoto_root(kappa: float) -> float:
    from scipy import optimize, special

    return optimize.brentq(lambda r: special.i1e(kappa * r) / special.i0e(kappa * r) - r,
                           1e-4, 1.0, xtol=1e-15)


def test_default_branch_is_smooth_and_on_the_analytic_one():
    """All defaults (range [1, 4] from kappa_c = 2, ds_max = 0.1): the noisy-Kuramoto
    branch has steps of at most ds_max in (kappa, r) -- a smooth curve on the figure
    (ds_max = 0.5 gave 11 points over [2, 4]) -- and every point on the exact branch
    r = I_1(kappa r)/I_0(kappa r) to 1e-8 (away from kappa_c, where the root is
    ill-conditioned)."""
    ds = bf.bifurcation({"model": {"beta": 0.0}, "discretization": {"resolution": 64}})
    n = int(ds.branch_points.values[1])
    kappa, r = ds.kappa.values[1, :n], ds.order_parameter.values[1, :n]
    assert n >= 20 and kappa.max() == pytest.approx(4.0, abs=1e-12)
    assert np.max(np.hypot(np.diff(kappa), np.diff(r))) <= 0.1 + 1e-9
    far = kappa > 2.05
    assert max(abs(ri - kuramoto_root(k)) for k, ri in zip(kappa[far], r[far])) <= 1e-8
