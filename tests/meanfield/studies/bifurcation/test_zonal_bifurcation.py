"""The bifurcation study on the zonal geometry (densities on S^{d-1} that depend only on
``t = <x, e>``) against closed forms computed here, independently of the package.

Issue 26, acceptance 3 (noisy Kuramoto in dimension d, beta = 0): the stationary states
are ``rho ∝ exp(kappa r t)`` with ``r = I_{d/2}(kappa r)/I_{d/2-1}(kappa r)`` (the mean of
``t`` under ``exp(s t)`` on S^{d-1}); the references are brentq roots of that equation
with ``scipy.special.ive``. The uniform state loses stability at ``kappa = d``
(``sigma_1 = (d - 1)(1/d - 1/kappa)``). Both the continuation and the time integration of
the scan (its unpolished states: integrated until ``||F|| < 1e-9``) must solve the
equation to 1e-8 at d = 8, 16, 64, and the pitchfork be found at d to 1e-8.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special

from meanfield.studies.bifurcation import study as bf

# band limits that carry exp(s t) on the branch (s = kappa r <= 2d * 0.72) to its moments'
# 1e-8 (studies.bifurcation.branches.TAIL_LIMIT)
RESOLUTION = {8: 32, 16: 40, 64: 64}


def zonal_root(kappa: float, d: int) -> float:
    """The non-trivial root of r = I_{d/2}(kappa r) / I_{d/2-1}(kappa r)."""
    def gap(r: float) -> float:
        s = kappa * r
        return special.ive(d / 2, s) / special.ive(d / 2 - 1, s) - r

    return optimize.brentq(gap, 1e-8, 1.0, xtol=1e-15, rtol=1e-15)


def kuramoto(d: int, **bifurcation) -> dict:
    return {"model": {"beta": 0.0}, "domain": {"geometry": "zonal", "dim": d},
            "discretization": {"resolution": RESOLUTION[d]},
            "bifurcation": {"stride": 5, **bifurcation}}


def _branch(ds, i: int, name: str) -> np.ndarray:
    return ds[name].values[i, :int(ds.branch_points.values[i])]


@pytest.mark.parametrize("d", [8, 16, 64])
def test_noisy_kuramoto_in_dimension_d_by_continuation(d):
    ds = bf.bifurcation(kuramoto(d))
    assert ds.attrs["status"] == 0, ds.attrs["message"]
    assert ds.attrs["geometry"] == "zonal" and ds.attrs["dim"] == d
    pitch = np.flatnonzero(ds.special_type.values == "pitchfork")
    assert pitch.size == 1
    assert abs(ds.special_kappa.values[pitch[0]] - d) <= 1e-8 * d
    # one zonal harmonic of degree 1: multiplicity 1 within the zonal states
    assert ds.special_multiplicity.values[pitch[0]] == 1
    kappa, r = _branch(ds, 1, "kappa"), _branch(ds, 1, "order_parameter")
    # the "auto" range [d/2, 2d] is covered in every d (the arclength of the zonal
    # branch is in the moments and kappa/(d/2): branches.mode_branch)
    assert kappa.max() == pytest.approx(2 * d, rel=1e-12)
    assert str(ds.branch_status.values[1]) == "completed"
    far = kappa > 1.01 * d  # (near kappa_c the reference root is ill-conditioned)
    assert far.sum() >= 10
    errors = [abs(ri - zonal_root(k, d)) for k, ri in zip(kappa[far], r[far])]
    assert max(errors) <= 1e-8, max(errors)
    assert np.all(_branch(ds, 1, "stable") == 1)
    uk, lead = _branch(ds, 0, "kappa"), _branch(ds, 0, "leading_eigenvalue")
    # the uniform state's leading rate is sigma_1 = (d - 1)(1/d - 1/kappa)
    np.testing.assert_allclose(lead, (d - 1) * (1 / d - 1 / uk), rtol=1e-10, atol=1e-12)
    assert str(ds.transition.values[1]) == "supercritical"


@pytest.mark.parametrize("d", [8, 16, 64])
def test_noisy_kuramoto_in_dimension_d_by_time_integration(d):
    """The scan integrates the PDE (ETDRK4, fixed steps) until ||F|| < 1e-9 from the
    perturbed uniform and the clustered starts and along both sweeps: its unpolished
    states solve the equation to 1e-8 (the Newton-polished ones to round-off). At d = 64
    the band limit 96 and kappa <= 1.6 d: the time integration stops where the density's
    negative part passes 1e-6 of the mass, and the state of kappa = 2d (kappa r = 91)
    needs a band limit above 128 for that (the continuation's moments are right at 64)."""
    cfg = kuramoto(d, mode="scan", scan_num=3, start=1.25 * d, stop=1.6 * d)
    if d == 64:
        cfg["discretization"]["resolution"] = 96
    ds = bf.bifurcation(cfg)
    kappa = ds.kappa.values
    assert np.isfinite(ds.steady_time.values).all()
    reference = np.array([zonal_root(k, d) for k in kappa])
    assert np.abs(ds.order_parameter_unpolished.values - reference).max() <= 1e-8
    assert np.abs(ds.order_parameter.values - reference).max() <= 1e-8
    assert not ds.bistable.values.any()
    assert ds.attrs["kappa_c"] == pytest.approx(d, rel=1e-14)


def test_the_pitchfork_of_degree_two_at_beta_positive():
    """Degrees 1 and 2 at beta = 1 (SA, d = 5): pitchforks at 1/a_l with a_l =
    I_{l+d/2-1}(beta)/(beta I_{d/2-1}(beta)) (scipy's iv here); an even degree in d >= 3
    sheds two branches (+-P_2)."""
    d, beta = 5, 1.0
    ds = bf.bifurcation({"model": {"beta": beta}, "domain": {"geometry": "zonal", "dim": d},
                         "discretization": {"resolution": 24},
                         "bifurcation": {"modes": 2, "points": 20}})
    assert ds.attrs["status"] == 0, ds.attrs["message"]
    pitch = ds.special_type.values == "pitchfork"
    for mode in (1, 2):
        a = special.iv(mode + d / 2 - 1, beta) / (beta * special.iv(d / 2 - 1, beta))
        found = ds.special_kappa.values[pitch & (ds.special_mode.values == mode)]
        assert found.size == 1 and found[0] == pytest.approx(1 / a, rel=1e-9)
    assert list(ds.branch_mode.values) == [0, 1, 2, 2]
    assert list(ds.branch_sign.values) == [0, 1, 1, -1]


@pytest.mark.parametrize("d, beta, kind", [(8, 1.0, "supercritical"),
                                           (8, 1.6, "subcritical"),
                                           (16, 1.0, "supercritical"),
                                           (16, 1.4, "subcritical")])
def test_usa_transition_type_and_fold_against_landau(d, beta, kind):
    """USA in dimension d turns first order above beta*(d) (I_{d/2+1}/I_{d/2} = 1/d:
    1.2666 at d = 8, 1.1290 at d = 16): there the branch leaves the pitchfork backward
    and turns at a fold below kappa_c; below it, forward without a fold."""
    ratio = special.ive(d / 2 + 1, beta) / special.ive(d / 2, beta)
    assert (ratio > 1 / d) == (kind == "subcritical")  # (the criterion, from scipy)
    ds = bf.bifurcation({"model": {"beta": beta, "normalized": False},
                         "domain": {"geometry": "zonal", "dim": d},
                         "discretization": {"resolution": 48},
                         "bifurcation": {"points": 40}})
    assert ds.attrs["status"] == 0, ds.attrs["message"]
    assert str(ds.transition.values[1]) == kind
    kappa_c = ds.special_kappa.values[ds.special_type.values == "pitchfork"][0]
    fold = float(ds.fold_kappa.values[1])
    if kind == "subcritical":
        assert fold < kappa_c and (ds.special_type.values == "fold").sum() == 1
        # the branch is unstable between the pitchfork and the fold, stable beyond
        stable, kappa = _branch(ds, 1, "stable"), _branch(ds, 1, "kappa")
        turn = int(np.argmin(kappa))
        assert np.all(stable[:turn] == 0) and np.all(stable[turn + 1:] == 1)
    else:
        assert math.isnan(fold)


def test_a_branch_stops_where_its_states_are_not_resolved():
    """d = 8, USA beta = 2 at band limit 16: the clustered states beyond the fold carry
    moments above 1e-8 in the top degrees; the branch stops there and says why (the
    run's status stays 0: what was computed is right)."""
    ds = bf.bifurcation({"model": {"beta": 2.0, "normalized": False},
                         "domain": {"geometry": "zonal", "dim": 8},
                         "discretization": {"resolution": 16}})
    assert ds.attrs["status"] == 0
    assert str(ds.branch_status.values[1]) == "stopped"
    assert "not resolved" in str(ds.branch_message.values[1])
    assert "raise discretization.resolution" in str(ds.branch_message.values[1])


def test_a_zonal_stationary_state_from_a_reflected_guess():
    """Newton from the branch seed reflected (t -> -t: the cluster at t = -1) converges
    to the noisy Kuramoto state of S^7 aligned at t = +1 (the reflection is the zonal
    states' only symmetry), with zero flux to round-off and the root's r."""
    from meanfield import config
    from meanfield.discretizations.base import Discretization
    from meanfield.studies.bifurcation import stationary as st
    from meanfield.studies.bifurcation import stationary_linear as lin

    d, kappa = 8, 12.0
    cfg = config.validate({"model": {"beta": 0.0, "kappa": kappa},
                           "domain": {"geometry": "zonal", "dim": d},
                           "discretization": {"resolution": 32}})
    disc = Discretization.from_config(cfg)
    seed = lin.branch_seed(disc, 1)
    seed[1::2] *= -1  # (the mirror image)
    result = st.stationary_state(disc, seed, tol=1e-12)
    assert result.converged, result.message
    assert result.state[1] > 0 and result.mode == 1
    assert abs(result.order_parameter - zonal_root(kappa, d)) <= 1e-12
    assert result.flux_defect <= 1e-10
    assert lin.stability(disc, result.state).stable
