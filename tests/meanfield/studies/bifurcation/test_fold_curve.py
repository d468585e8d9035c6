"""Tests of the two-parameter continuation of the fold (``meanfield.studies.bifurcation.fold_curve``)
for USA on S^1 (64 points) and S^2 (L = 15), against independent results:

- points of the fold curve against the fold kappa that
  ``bifurcation.branches.mode_branch`` finds by one-parameter continuation in kappa at
  that point's beta (a different method: the sign change of the tangent's kappa
  component located by Brent on the branch), to 1e-9 relative (both solve to Newton
  tolerances 1e-9 / 1e-10; observed 1e-12 to 3e-11);
- the tricritical beta estimated from the curve against the closed form
  ``landau.tricritical_beta`` (the root of ``I_2/I_1 = 1/2`` on S^1, ``i_2/i_1 = 1/3`` on
  S^2; the spectral discretization carries the multipliers of modes 0-2 exactly, so its
  tricritical beta is the continuum one) to 1e-4 absolute: the fit of ``beta`` by a
  quadratic in ``r^2`` over ``r <= 0.2`` leaves an error ``O(r^6) ~ 6e-5`` (observed
  ~1e-5 on S^1, ~3e-6 on S^2);
- bad starts (not stationary, not a fold, uniform) are refused with how far they are;
- a Newton failure keeps the curve computed so far.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield import config as cfgmod
from meanfield.discretizations.base import Discretization
from meanfield.model import landau
from meanfield.studies.bifurcation import plan as bp
from meanfield.studies.bifurcation import study as bf
from meanfield.studies.bifurcation import branches as bb
from meanfield.studies.bifurcation import fold_curve as fc
from meanfield.studies.bifurcation import stationary as st
from meanfield.studies.bifurcation import stationary_linear as lin

FOLD_RTOL = 1e-9  # the curve against mode_branch's fold (relative)
TRICRITICAL_ATOL = 1e-4  # the estimate against the closed form (module docstring)


def make_disc(geometry: str, resolution: int, beta: float):
    cfg = cfgmod.validate({"model": {"normalized": False, "beta": beta, "kappa": 1.0},
                           "domain": {"geometry": geometry},
                           "discretization": {"resolution": resolution}})
    return Discretization.from_config(cfg, threads=1)


def one_parameter_fold(geometry: str, resolution: int, beta: float) -> float:
    """The fold kappa of the mode-1 branch at ``beta`` by ``bifurcation.branches.mode_branch``
    (the map's ``fold_kappa``), from the pitchfork at the closed form ``1/a_1``."""
    kc = lin.critical_kappa(geometry, beta, False)
    # (the branch is followed past its fold up to 1.02 kappa_c: the fold is all it needs)
    cfg = cfgmod.validate({"model": {"normalized": False, "beta": beta},
                           "domain": {"geometry": geometry},
                           "discretization": {"resolution": resolution},
                           "bifurcation": {"parameter": "kappa", "start": 0.3,
                                           "stop": 1.02 * kc,
                                           "ds": 0.02, "ds_max": 0.1, "modes": 1}})
    plan = bp.check_bifurcation_config(cfg)
    disc = bp.build_discretization(cfg)
    branch = bb.mode_branch(disc, cfg, plan, {"lam": plan["critical_kappa"][0], "side": 1},
                            1, 1)
    assert branch["transition"] == "subcritical", branch["message"]
    return float(branch["fold_lam"])


@pytest.fixture(scope="module")
def circle_curve():
    disc = make_disc("circle", 64, 3.5)
    kappa, state, message = fc.locate_fold(disc, 3.5)
    assert math.isfinite(kappa), message
    curve = fc.fold_curve(disc, 3.5, state, kappa, beta_stop=1.0)
    return disc, kappa, state, curve


def test_circle_curve_against_one_parameter_folds(circle_curve):
    _, kappa0, _, curve = circle_curve
    assert curve.status == "stopped" and "r_min" in curve.message, curve.message
    assert curve.beta[0] == 3.5 and curve.kappa[0] == pytest.approx(kappa0, rel=1e-9)
    # beta decreases, the fold's kappa rises toward kappa_c and its r falls to 0
    assert np.all(np.diff(curve.beta) < 0) and np.all(np.diff(curve.order_parameter) < 0)
    assert np.all(curve.kappa < [lin.critical_kappa("circle", b, False)
                                 for b in curve.beta])
    picks = [1, curve.beta.size // 2, int(np.flatnonzero(curve.order_parameter < 0.12)[0])]
    for i in picks:
        expected = one_parameter_fold("circle", 64, float(curve.beta[i]))
        assert curve.kappa[i] == pytest.approx(expected, rel=FOLD_RTOL), (i, curve.beta[i])


def test_circle_tricritical_beta(circle_curve):
    _, _, _, curve = circle_curve
    exact = landau.tricritical_beta("circle", False)
    assert exact == pytest.approx(2.4469183, abs=1e-7)
    assert curve.order_parameter[-1] < 0.03
    assert curve.tricritical_beta == pytest.approx(exact, abs=TRICRITICAL_ATOL), \
        curve.tricritical_fit
    # the fold merges with the pitchfork: kappa -> 1/a_1 at the last point
    kc = lin.critical_kappa("circle", float(curve.beta[-1]), False)
    assert curve.kappa[-1] == pytest.approx(kc, rel=2e-3)


@pytest.fixture(scope="module")
def sphere_curve():
    disc = make_disc("sphere", 15, 2.2)
    kappa, state, message = fc.locate_fold(disc, 2.2)
    assert math.isfinite(kappa), message
    return fc.fold_curve(disc, 2.2, state, kappa, beta_stop=1.0, ds=0.05, ds_max=0.2)


def test_sphere_tricritical_beta(sphere_curve):
    """S^2, L = 15, from beta = 2.2 (r = 0.43 at the fold) down to r < 0.03."""
    curve = sphere_curve
    assert curve.status == "stopped", curve.message
    assert np.all(np.diff(curve.beta) < 0) and np.all(np.diff(curve.order_parameter) < 0)
    exact = landau.tricritical_beta("sphere", False)
    assert exact == pytest.approx(1.8161545, abs=1e-7)
    assert curve.tricritical_beta == pytest.approx(exact, abs=TRICRITICAL_ATOL), \
        curve.tricritical_fit


def test_sphere_curve_against_one_parameter_folds(sphere_curve):
    """Two points of the S^2 curve against mode_branch's folds at the same beta."""
    curve = sphere_curve
    assert curve.beta.size >= 6
    for i in (curve.beta.size // 3, int(np.flatnonzero(curve.order_parameter < 0.25)[0])):
        expected = one_parameter_fold("sphere", 15, float(curve.beta[i]))
        assert curve.kappa[i] == pytest.approx(expected, rel=FOLD_RTOL), (i, curve.beta[i])


# --- bad input -----------------------------------------------------------------------------
def test_a_start_that_is_not_stationary(circle_curve):
    disc, kappa, state, _ = circle_curve
    bent = np.array(state)
    bent[2] += 1e-4  # a little cos 2 theta
    with pytest.raises(ValueError, match=r"not a stationary state.*\|\|G\|\| = "):
        fc.fold_curve(disc, 3.5, bent, kappa, beta_stop=2.0)
    with pytest.raises(ValueError, match="not a stationary state"):
        fc.fold_curve(disc, 3.5, state, kappa * 1.01, beta_stop=2.0)


def test_a_start_that_is_not_a_fold(circle_curve):
    disc, kappa, _, _ = circle_curve
    disc.set_parameters(beta=3.5, kappa=kappa * 1.2)
    # the stable state above the fold (r = 0.88), from a von Mises guess
    upper = st.stationary_state(disc, np.exp(2 * np.cos(disc.grid.theta)), tol=1e-12)
    assert upper.converged and upper.order_parameter > 0.8, upper.message
    with pytest.raises(ValueError, match="not a fold") as err:
        fc.fold_curve(disc, 3.5, upper.state, kappa * 1.2, beta_stop=2.0)
    assert "relative" in str(err.value) or "failed" in str(err.value)


def test_a_uniform_start(circle_curve):
    disc, kappa, _, _ = circle_curve
    disc.set_parameters(beta=3.5, kappa=kappa)
    with pytest.raises(ValueError, match="lowest mode is 0"):
        fc.fold_curve(disc, 3.5, lin._uniform_state(disc), kappa, beta_stop=2.0)


# --- Newton failure ------------------------------------------------------------------------
def test_newton_failure_keeps_the_curve(circle_curve, monkeypatch):
    """The residual becomes NaN below beta = 3 (a stand-in for a blow-up): Newton fails
    there (the step is halved down to ds_min), the points above are kept: those before
    the first failed step equal the full run's."""
    disc, kappa, state, full = circle_curve
    real = disc.residual

    def broken(u):
        return real(u) * (math.nan if disc.parameters[0] < 3.0 else 1.0)

    monkeypatch.setattr(disc, "residual", broken)
    curve = fc.fold_curve(disc, 3.5, state, kappa, beta_stop=1.0)
    assert curve.status == "failed"
    assert "Newton failed" in curve.message and "last beta" in curve.message
    n = curve.beta.size
    assert n >= 3 and np.all(curve.beta >= 3.0)
    assert np.isnan(curve.tricritical_beta) and "no estimate" in curve.tricritical_fit
    m = int(np.sum(full.beta >= 3.0))  # the full run's points before the failing step
    assert n > m
    np.testing.assert_allclose(curve.beta[:m], full.beta[:m], rtol=1e-12)
    np.testing.assert_allclose(curve.kappa[:m], full.kappa[:m], rtol=1e-9)
    assert np.all(curve.beta[m:] < full.beta[m - 1])


# --- the map (mode = "map") ----------------------------------------------------------------
def test_map_fold_curve_after_resume(tmp_path, monkeypatch):
    """A USA S^1 map over beta = 2, 3.5, interrupted after the first beta and resumed:
    the fold curve starts at the map's fold at beta = 3.5 (its one-parameter fold), its
    kappa lies below 1/a_1, and the tricritical beta from it agrees with the closed
    form."""
    from meanfield.studies.bifurcation import parameter_map as bm

    cfg = {"model": {"normalized": False}, "discretization": {"resolution": 48},
           "bifurcation": {"mode": "map", "start": 0.4, "stop": 2.0, "ds": 0.02,
                           "ds_max": 0.1, "map_start": 2.0, "map_stop": 3.5, "map_num": 2}}
    out = tmp_path / "m.nc"
    real, calls = bm.map_point, []

    def interrupt_second(c, beta):
        calls.append(beta)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(c, beta)

    monkeypatch.setattr(bm, "map_point", interrupt_second)
    part = bf.bifurcation(cfg, out=out)
    assert part.attrs["status"] == -1 and "fold_curve_beta" not in part
    monkeypatch.setattr(bm, "map_point", real)
    ds = bf.bifurcation(cfg, out=out, resume=True)
    assert ds.attrs["status"] == 0, ds.attrs["message"]
    assert ds.attrs["fold_curve_status"] == "stopped", ds.attrs["fold_curve_message"]
    beta, kappa = ds.fold_curve_beta.values, ds.fold_curve_kappa.values
    r = ds.fold_curve_order_parameter.values
    assert beta[0] == 3.5 and kappa[0] == pytest.approx(
        float(ds.map_fold_kappa.sel(beta=3.5)), rel=1e-9)
    assert np.all(np.diff(beta) < 0) and np.all(beta >= 2.0) and r[-1] < 0.03
    assert np.all(kappa < [lin.critical_kappa("circle", b, False) for b in beta])
    exact = landau.tricritical_beta("circle", False)
    assert ds.attrs["tricritical_beta_landau"] == exact
    assert ds.attrs["tricritical_beta"] == pytest.approx(exact, abs=TRICRITICAL_ATOL)
    # (a map without a subcritical beta has an empty curve and no estimate: the
    # resume test of test_bifurcation.py, beta = 1, 2)


def test_map_without_subcritical_beta():
    from meanfield.studies.bifurcation import parameter_map as bm

    cfg = cfgmod.validate({"model": {"normalized": False},
                           "discretization": {"resolution": 32},
                           "bifurcation": {"mode": "map", "start": 0.8, "stop": 2.0,
                                           "map_start": 1.0, "map_stop": 2.0,
                                           "map_num": 2}})
    done = [{"transition": "supercritical", "fold_kappa": math.nan}] * 2
    fold = bm.map_fold_curve(cfg, done)
    assert fold["beta"].size == 0 and math.isnan(fold["tricritical_beta"])
    assert fold["tricritical_beta_landau"] == landau.tricritical_beta("circle", False)
    assert fold["status"] == "none"
