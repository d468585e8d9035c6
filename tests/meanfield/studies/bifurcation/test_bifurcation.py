"""The bifurcation study (continuation mode) against closed forms (docs/conventions.md).

beta = 0: the uniform state loses stability at kappa = 2 (S^1) and 3 (S^2); the branch it
sheds has ``r = I_1(kappa r)/I_0(kappa r)`` (S^1) and ``r = L(kappa r)``, ``L(s) = coth s
- 1/s`` (S^2; the mean of ``<x, e>`` under ``exp(s <x, e>)`` on S^2 is ``L(s)``, and the
stationary states are ``rho ∝ exp(kappa r <x, e>)``). beta > 0: the pitchfork of mode
k at ``kappa_c = 1/a_k`` with multiplicity 2 (S^1) or ``2l + 1`` (S^2). The references
here are brentq roots of those equations, independent of the package.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special

from meanfield import config
from meanfield.cli import main
from meanfield.discretizations.base import Discretization
from meanfield.errors import ConfigError
from meanfield.model.kernels import growth_rate, sphere_growth_rate
from meanfield.runs.schedule import checkpoint_path
from meanfield.studies.bifurcation import plan as bp
from meanfield.studies.bifurcation import study as bf
from meanfield.studies.bifurcation import branches as bb
from meanfield.studies.bifurcation import parameter_map as bm
from meanfield.studies.bifurcation import stationary as st
from meanfield.studies.bifurcation import stationary_linear as lin

KURAMOTO = {"model": {"beta": 0.0, "normalized": True},
            "discretization": {"resolution": 64},
            "bifurcation": {"start": 1.5, "stop": 8.5, "stride": 1}}
# L = 12 carries exp(s cos) to ~1e-15 for s = kappa r <= 3 (kappa <= 4.5)
LANGEVIN = {"model": {"beta": 0.0, "normalized": True}, "domain": {"geometry": "sphere"},
            "discretization": {"resolution": 12},
            "bifurcation": {"start": 2.5, "stop": 4.5, "stride": 1}}


def kuramoto_root(kappa: float) -> float:
    return optimize.brentq(lambda r: special.i1e(kappa * r) / special.i0e(kappa * r) - r,
                           1e-4, 1.0, xtol=1e-15)


def langevin_root(kappa: float) -> float:
    return optimize.brentq(lambda r: 1 / np.tanh(kappa * r) - 1 / (kappa * r) - r,
                           1e-4, 1.0, xtol=1e-15)


@pytest.fixture(scope="module")
def kuramoto():
    return bf.bifurcation(KURAMOTO)


def _branch(ds, i: int, name: str) -> np.ndarray:
    return ds[name].values[i, :int(ds.branch_points.values[i])]


def test_noisy_kuramoto_pitchfork_and_branch(kuramoto):
    ds = kuramoto
    assert ds.attrs["kind"] == "bifurcation" and ds.attrs["status"] == 0, ds.attrs["message"]
    assert list(ds.branch_kind.values) == ["uniform", "mode"]
    assert list(ds.branch_mode.values) == [0, 1]
    pitch = np.flatnonzero(ds.special_type.values == "pitchfork")
    assert pitch.size == 1
    assert abs(ds.special_kappa.values[pitch[0]] - 2.0) <= 1e-6 * 2.0
    assert ds.special_multiplicity.values[pitch[0]] == 2
    assert ds.special_branch.values[pitch[0]] == 0
    # every point of the branch is a stationary state at its own kappa
    kappa, r = _branch(ds, 1, "kappa"), _branch(ds, 1, "order_parameter")
    assert kappa.min() < 2.01 and kappa.max() == pytest.approx(8.5, abs=1e-12)
    far = kappa > 2.05  # (near kappa_c the reference root is ill-conditioned)
    errors = [abs(ri - kuramoto_root(k)) for k, ri in zip(kappa[far], r[far])]
    assert max(errors) <= 1e-8, max(errors)
    # stability: the uniform state below / above kappa_c, the branch everywhere
    uk, us = _branch(ds, 0, "kappa"), _branch(ds, 0, "stable")
    assert np.all(us[uk < 2] == 1) and np.all(us[uk > 2] == 0)
    assert np.all(_branch(ds, 1, "stable") == 1)
    lead = _branch(ds, 0, "leading_eigenvalue")
    np.testing.assert_allclose(lead, 0.5 - 1 / uk, atol=1e-12)  # sigma_1 = a_1 - 1/kappa
    assert ds.transition.values[1] == "supercritical"
    assert math.isnan(ds.fold_kappa.values[1])
    assert ds.attrs["critical_kappa"][0] == 2.0


@pytest.mark.parametrize("target", [2.5, 3.0, 4.0, 8.0])
def test_noisy_kuramoto_at_exact_kappa(kuramoto, target):
    """Re-solved at exactly these kappa from the nearest saved state of the branch."""
    ds = kuramoto
    cfg = config.validate({**KURAMOTO, "model": {"beta": 0.0, "kappa": target}})
    disc = Discretization.from_config(cfg)
    points = ds.state_point.values[1]
    kappa = _branch(ds, 1, "kappa")
    nearest = int(np.argmin(np.abs(kappa[points[points >= 0]] - target)))
    guess = ds.state_density.values[1, nearest]
    res = st.stationary_state(disc, guess, tol=1e-12)
    assert res.converged, res.message
    assert abs(res.order_parameter - kuramoto_root(target)) <= 1e-8


def test_langevin_pitchfork_and_branch_on_the_sphere():
    ds = bf.bifurcation(LANGEVIN)
    assert ds.attrs["status"] == 0, ds.attrs["message"]
    pitch = np.flatnonzero(ds.special_type.values == "pitchfork")
    assert pitch.size == 1
    assert abs(ds.special_kappa.values[pitch[0]] - 3.0) <= 1e-6 * 3.0
    assert ds.special_multiplicity.values[pitch[0]] == 3
    kappa, r = _branch(ds, 1, "kappa"), _branch(ds, 1, "order_parameter")
    far = kappa > 3.05
    assert far.sum() >= 3
    errors = [abs(ri - langevin_root(k)) for k, ri in zip(kappa[far], r[far])]
    assert max(errors) <= 1e-8, max(errors)
    assert np.all(_branch(ds, 1, "stable") == 1)
    uk, us = _branch(ds, 0, "kappa"), _branch(ds, 0, "stable")
    assert np.all(us[uk < 3] == 1) and np.all(us[uk > 3] == 0)
    assert ds.transition.values[1] == "supercritical"
    assert ds.state_density.dims == ("branch", "saved", "lat", "lon")


# --- acceptance 2: kappa_c against 1/a_1 for beta > 0 -----------------------------------
def _uniform_pitchforks(geometry: str, beta: float, normalized: bool):
    a = (growth_rate(1, beta, math.inf, normalized) if geometry == "circle"
         else sphere_growth_rate(1, beta, math.inf, normalized) / 2)
    kc = 1 / a
    cls = Discretization.from_name(geometry, "spectral")
    resolution = max(cls.needed_resolution(beta), 16 if geometry == "circle" else 6)
    cfg = config.validate({"model": {"beta": beta, "normalized": normalized},
                           "domain": {"geometry": geometry},
                           "discretization": {"resolution": resolution},
                           "bifurcation": {"start": 0.9 * kc, "stop": 1.1 * kc,
                                           "ds": 0.01 * kc, "ds_max": 0.05 * kc}})
    plan = bp.check_bifurcation_config(cfg)
    disc = bp.build_discretization(cfg)
    branch = bb.uniform_branch(disc, cfg, plan)
    return kc, branch, bb.pitchfork_check(plan, cfg, branch["special"])


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("normalized", [True, False], ids=["SA", "USA"])
@pytest.mark.parametrize("geometry", ["circle", "sphere"])
def test_critical_kappa_matches_the_closed_form(geometry, normalized, beta):
    kc, branch, (ok, message) = _uniform_pitchforks(geometry, beta, normalized)
    assert ok, message
    pitch = [s for s in branch["special"] if s["type"] == "pitchfork"]
    assert len(pitch) == 1 and pitch[0]["mode"] == 1
    assert abs(pitch[0]["kappa"] - kc) <= 1e-6 * kc
    assert pitch[0]["multiplicity"] == (2 if geometry == "circle" else 3)
    assert pitch[0]["side"] == 1  # more unstable above kappa_c


def test_a_wrong_closed_form_is_reported(monkeypatch):
    """The check is live: a closed form off by 1e-5 makes the check fail."""
    real = lin.critical_kappa
    monkeypatch.setattr(lin, "critical_kappa", lambda *a: real(*a) * (1 + 1e-5))
    _, _, (ok, message) = _uniform_pitchforks("circle", 1.0, True)
    assert not ok and "differs from the closed form" in message


# --- bad input ---------------------------------------------------------------------------
@pytest.mark.parametrize("change,key", [
    ({"bifurcation": {"start": 3.0, "stop": 2.0}}, "bifurcation.start"),
    ({"bifurcation": {"start": 2.0, "stop": 2.0}}, "bifurcation.start"),
    ({"bifurcation": {"start": 0.0, "stop": 2.0}}, "bifurcation.start"),
    ({"bifurcation": {"start": -1.0, "stop": 2.0}}, "bifurcation.start"),
    ({"bifurcation": {"ds": 0.0}}, "bifurcation.ds"),
    ({"bifurcation": {"ds": -0.1}}, "bifurcation.ds"),
    ({"bifurcation": {"ds": 0.6}}, "bifurcation.ds_max"),
    ({"bifurcation": {"modes": 32}}, "bifurcation.modes"),
    ({"bifurcation": {"modes": 0}}, "bifurcation.modes"),
    ({"bifurcation": {"mode": "brute"}}, "bifurcation.mode"),
    ({"bifurcation": {"mode": "map", "parameter": "beta", "start": 0.0, "map_start": 1.0},
      "model": {"kappa": 3.0}},
     "bifurcation.parameter"),
    ({"bifurcation": {"mode": "map", "map_start": 2.0, "map_stop": 1.0}},
     "bifurcation.map_start"),
    ({"bifurcation": {"mode": "map", "map_stop": 40.0}}, "discretization.resolution"),
    ({"bifurcation": {"parameter": "gamma"}}, "bifurcation.parameter"),
    ({"bifurcation": {"points": 1}}, "bifurcation.points"),
    ({"bifurcation": {"parameter": "beta"}, "model": {"kappa": "inf"}}, "model.kappa"),
    ({"discretization": {"method": "finite-volume"}}, "discretization.method"),
])
def test_bad_input_before_any_work(change, key, monkeypatch):
    # (patched where it is called: the continuation task and the map)
    for module in (bf, bm):
        monkeypatch.setattr(module, "uniform_branch", lambda *a: pytest.fail("work started"))
    cfg = {s: {**KURAMOTO.get(s, {}), **change.get(s, {})} for s in {*KURAMOTO, *change}}
    with pytest.raises(ConfigError) as err:
        bf.bifurcation(cfg)
    assert err.value.key == key


def test_a_mode_beyond_the_sphere_resolution():
    with pytest.raises(ConfigError, match="beyond the resolution"):
        bf.bifurcation({**LANGEVIN, "bifurcation": {"modes": 13}})


def test_cli_one_line(tmp_path, capsys):
    path = tmp_path / "b.toml"
    path.write_text("[bifurcation]\nstart = 3.0\nstop = 2.0\n")
    assert main(["bifurcation", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "reversed/empty range" in err[0] and "bifurcation.start" in err[0]


SMALL = {"model": {"beta": 0.0}, "discretization": {"resolution": 32},
         "bifurcation": {"start": 1.5, "stop": 4.0, "modes": 2, "stride": 2}}


def test_cli_run(tmp_path, capsys):
    path = tmp_path / "b.toml"
    path.write_text('[model]\nbeta = 0.0\n[discretization]\nresolution = 32\n'
                    '[bifurcation]\nstart = 1.5\nstop = 4.0\n')
    out = tmp_path / "b.nc"
    assert main(["bifurcation", str(path), "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "pitchfork at kappa = 2" in text and "supercritical" in text
    from meanfield.io import read_netcdf

    ds = read_netcdf(out)
    assert ds.attrs["kind"] == "bifurcation" and ds.attrs["parameter"] == "kappa"


# --- resume ------------------------------------------------------------------------------
def test_resume_skips_the_branches_done(tmp_path, monkeypatch):
    full = bf.bifurcation(SMALL)
    out = tmp_path / "b.nc"
    real_mode, real_uniform = bb.mode_branch, bb.uniform_branch
    calls: list = []

    def interrupt_second(disc, cfg, plan, pitchfork, mode, sign):
        calls.append(mode)
        if mode == 2:
            raise KeyboardInterrupt
        return real_mode(disc, cfg, plan, pitchfork, mode, sign)

    # (patched where the continuation task looks them up: the names bifurcation imports)
    monkeypatch.setattr(bf, "mode_branch", interrupt_second)
    part = bf.bifurcation(SMALL, out=out)
    assert part.attrs["status"] == -1 and checkpoint_path(out).exists()
    assert "2 of 3 branches" in part.attrs["message"]
    calls.clear()
    monkeypatch.setattr(bf, "mode_branch", lambda *a: calls.append(a[4]) or real_mode(*a))
    monkeypatch.setattr(bf, "uniform_branch",
                        lambda *a: calls.append("uniform") or real_uniform(*a))
    resumed = bf.bifurcation(SMALL, out=out, resume=True)
    assert calls == [2]  # the uniform branch and mode 1 are not computed again
    assert resumed.attrs["status"] == 0
    for name in ("kappa", "order_parameter", "stable", "special_kappa", "state_density"):
        np.testing.assert_array_equal(resumed[name].values, full[name].values)
    assert list(resumed.branch_status.values) == ["completed", "completed", "skipped"]
    assert not checkpoint_path(out).exists()


def test_a_newton_failure_keeps_the_branch(monkeypatch):
    """A corrector that cannot converge stops the branch with where and why; the points
    so far are kept and the run's status says so. The corrector is made to fail after
    its first four solves (the offset point of the branch switch and three points): an
    unreachable tolerance instead failed at round-off-dependent places (sometimes the
    switch itself, before any point)."""
    import dataclasses

    from solvers.nonlinear import bordered

    calls = []

    def failing_after_four(real):
        def corrector(*args, **kwargs):
            calls.append(1)
            result = real(*args, **kwargs)
            if len(calls) <= 4:
                return result
            return dataclasses.replace(result, converged=False,
                                       message="the corrector was made to fail (test)")
        return corrector

    # (both correctors: Newton-Krylov and the dense chord method small systems use)
    for name in ("newton_krylov", "chord_newton"):
        monkeypatch.setattr(bordered, name, failing_after_four(getattr(bordered, name)))
    cfg = {**SMALL, "bifurcation": {**SMALL["bifurcation"], "modes": 1}}
    ds = bf.bifurcation(cfg)
    assert ds.attrs["status"] == 1 and "Newton failed" in ds.attrs["message"]
    assert ds.branch_status.values[1] == "failed"
    message = str(ds.branch_message.values[1])
    assert "Newton failed" in message and "lam = " in message  # where and why
    assert ds.branch_points.values[1] >= 1  # the points so far are kept


# --- transition type ---------------------------------------------------------------------
@pytest.mark.parametrize("geometry,beta,resolution", [
    ("circle", 1.0, 48), ("circle", 2.0, 48), ("circle", 3.0, 48), ("circle", 4.0, 64),
    ("sphere", 1.0, 12), pytest.param("sphere", 3.0, 16, marks=pytest.mark.slow)])
def test_transition_type_of_usa_against_the_landau_coefficient(geometry, beta, resolution):
    """USA changes type at beta ~ 2.45 (S^1) and ~ 1.82 (S^2). The continuation decides
    from the computed branch; the reference is the weakly nonlinear kappa_2 of
    ``meanfield.model.landau`` (kappa = kappa_c + kappa_2 r^2): the type by its sign and,
    quantitatively, the branch's first point (r ~ 0.01) on that parabola (2 %). A
    subcritical branch is unstable from the pitchfork to its fold, below kappa_c, and
    stable beyond."""
    from meanfield.model import landau

    kc = lin.critical_kappa(geometry, beta, False)
    ds = bf.bifurcation({"model": {"beta": beta, "normalized": False},
                         "domain": {"geometry": geometry},
                         "discretization": {"resolution": resolution},
                         "bifurcation": {"start": 0.6 * kc, "stop": 1.3 * kc,
                                         "ds": 0.02 * kc, "ds_max": 0.1 * kc,
                                         "points": 60}})
    assert ds.attrs["status"] == 0, ds.attrs["message"]
    expected = landau.transition_type(geometry, beta, False)
    assert ds.transition.values[1] == expected
    k2 = landau.landau_coefficient(geometry, beta, False)
    kappa, r = _branch(ds, 1, "kappa"), _branch(ds, 1, "order_parameter")
    assert (kappa[0] - kc) / r[0] ** 2 == pytest.approx(k2, rel=0.02, abs=1e-3)
    stable = _branch(ds, 1, "stable")
    fold = ds.fold_kappa.values[1]
    if expected == "subcritical":
        assert fold < kc
        folds = ds.special_kappa.values[ds.special_type.values == "fold"]
        assert folds.size >= 1 and folds[0] == fold
        before = np.arange(kappa.size) < np.argmin(kappa)
        assert np.all(stable[before & (kappa < fold + 0.2 * (kc - fold))] != 1)
        assert np.all(stable[kappa > kc] == 1)
    else:
        assert math.isnan(fold) and np.all(stable == 1)


# --- the (beta, kappa) map -----------------------------------------------------------------
def test_map_of_usa_on_the_circle():
    """beta = 2 (continuous) and 3.5 (first order): kappa_c(beta) = 1/a_1 (1e-6), the fold
    below the Maxwell point (equal free energies) below kappa_c where first order, the
    order parameter of the stable state growing from 0 at kappa_c."""
    from meanfield.model import landau

    ds = bf.bifurcation({"model": {"normalized": False}, "discretization": {"resolution": 48},
                         "bifurcation": {"mode": "map", "start": 0.4, "stop": 2.0,
                                         "ds": 0.02, "ds_max": 0.1, "map_start": 2.0,
                                         "map_stop": 3.5, "map_num": 2}})
    assert ds.attrs["status"] == 0, ds.attrs["message"]
    np.testing.assert_allclose(ds.map_critical_kappa, ds.map_analytic_kappa, rtol=1e-6)
    for beta in (2.0, 3.5):
        assert ds.map_analytic_kappa.sel(beta=beta) == pytest.approx(
            lin.critical_kappa("circle", beta, False), rel=1e-14)
        row = ds.sel(beta=beta)
        assert str(row.map_transition.values) == landau.transition_type("circle", beta,
                                                                         False)
    first = ds.sel(beta=3.5)
    assert (first.map_fold_kappa < first.map_maxwell_kappa < first.map_critical_kappa)
    assert math.isnan(float(ds.map_fold_kappa.sel(beta=2.0)))
    order = ds.map_order_parameter.sel(beta=2.0)
    kc = float(ds.map_critical_kappa.sel(beta=2.0))
    assert np.all(order.values[ds.kappa.values < kc] == 0)
    above = order.values[ds.kappa.values > kc]
    assert np.all(above > 0) and np.all(np.diff(above) > 0)


def test_scan_mode_goes_to_the_scan(tmp_path):
    """mode = "scan" runs ``bifurcation_scan.scan`` and writes its dataset, stamped."""
    out = tmp_path / "s.nc"
    ds = bf.bifurcation({"model": {"beta": 0.0}, "discretization": {"resolution": 32},
                         "bifurcation": {"mode": "scan", "start": 1.5, "stop": 3.0,
                                         "scan_num": 3}}, out=out)
    assert ds.attrs["kind"] == "bifurcation" and ds.attrs["status"] == 0
    assert "order_parameter" in ds and out.exists()


def test_map_resumes_from_the_betas_done(tmp_path, monkeypatch):
    from meanfield.studies.bifurcation import parameter_map as bm

    cfg = {"model": {"normalized": False}, "discretization": {"resolution": 32},
           "bifurcation": {"mode": "map", "start": 0.8, "stop": 2.0, "map_start": 1.0,
                           "map_stop": 2.0, "map_num": 2}}
    out = tmp_path / "m.nc"
    real, calls = bm.map_point, []

    def interrupt_second(c, beta):
        calls.append(beta)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(c, beta)

    monkeypatch.setattr(bm, "map_point", interrupt_second)
    part = bf.bifurcation(cfg, out=out)
    assert part.attrs["status"] == -1 and "1 of 2 betas" in part.attrs["message"]
    calls.clear()
    monkeypatch.setattr(bm, "map_point", lambda c, beta: calls.append(beta) or real(c, beta))
    resumed = bf.bifurcation(cfg, out=out, resume=True)
    assert calls == [2.0] and resumed.attrs["status"] == 0
    np.testing.assert_allclose(resumed.map_critical_kappa, resumed.map_analytic_kappa,
                               rtol=1e-6)
