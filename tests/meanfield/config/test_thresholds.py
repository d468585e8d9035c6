"""The closed-form thresholds the config derives the "auto" range of a continuation in
kappa from (``meanfield.config.thresholds``): the analytic values at beta = 0, and at
every beta the noise at which the model's growth rate of the mode vanishes (an
independent path: ``meanfield.model.kernels``)."""
from __future__ import annotations

import math

import pytest

from meanfield.config.thresholds import attraction, critical_kappa
from meanfield.model.kernels import growth_rate, sphere_growth_rate


@pytest.mark.parametrize("geometry, kappa_c", [("circle", 2.0), ("sphere", 3.0)])
def test_beta_zero_thresholds_are_the_analytic_ones(geometry, kappa_c):
    """beta = 0: a_1 = 1/2 on S^1 (noisy Kuramoto: kappa_c = 2), 1/3 on S^2 (kappa_c =
    3); modes above 1 never grow; a repulsive value matrix (c < 0) never turns unstable."""
    for normalized in (True, False):
        assert critical_kappa(geometry, 0.0, normalized) == kappa_c
        assert critical_kappa(geometry, 0.0, normalized, mode=2) == math.inf
        assert critical_kappa(geometry, 0.0, normalized, value=2.0) == kappa_c / 2
        assert critical_kappa(geometry, 1.0, normalized, value=-1.0) == math.inf


@pytest.mark.parametrize("geometry", ["circle", "sphere"])
@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("beta", [0.1, 1.0, 3.0, 12.0])
@pytest.mark.parametrize("mode", [1, 2, 3])
def test_the_growth_rate_vanishes_at_the_threshold(geometry, normalized, beta, mode):
    """sigma_k(kappa_c) = 0 to round-off, relative to the noise term k^2/kappa_c."""
    kc = critical_kappa(geometry, beta, normalized, mode)
    rate = growth_rate if geometry == "circle" else sphere_growth_rate
    weight = mode**2 if geometry == "circle" else mode * (mode + 1)
    assert math.isfinite(kc) and kc > 0
    assert abs(float(rate(mode, beta, kc, normalized))) <= 1e-13 * weight / kc
    assert attraction(geometry, beta, normalized, mode) == pytest.approx(
        float(rate(mode, beta, math.inf, normalized)) / weight, rel=1e-15)


def test_usa_threshold_at_beta_three_is_below_one():
    """USA on S^1 at beta = 3: kappa_c = beta / I_1(beta) = 3 / 3.95337 = 0.75884 (the
    case the former fixed range [1, 4] missed)."""
    assert critical_kappa("circle", 3.0, False) == pytest.approx(3.0 / 3.953370217402609,
                                                                 rel=1e-12)


@pytest.mark.parametrize("geometry, mode", [("euclidean", 1), ("circle", 0), ("sphere", 1.5)])
def test_bad_geometry_or_mode_is_a_value_error(geometry, mode):
    with pytest.raises(ValueError, match="geometry|mode"):
        critical_kappa(geometry, 1.0, True, mode)
