"""The brute-force bifurcation scan against analytic references.

- beta = 0 on S^1 (noisy Kuramoto): every state the scan finds is stable and has
  ``r = I_1(kappa r)/I_0(kappa r)`` (brentq) to 1e-8 after polishing, ``r = 0`` below
  ``kappa_c = 2``; a supercritical pitchfork: no bistability.
- USA at beta = 4 on S^1, first order: the up sweep (from the uniform state) and the down
  sweep (from a cluster) end on different stable states on an interval below ``kappa_c =
  beta / I_1(beta)`` (docs/conventions.md) whose lower end lies within one scan spacing
  above the fold. The fold is computed independently: the even stationary states
  ``rho = exp(kappa Phi[rho]) / Z`` (``Phi = K*rho / beta``, ``K*`` the multiplier ``2 pi
  I_k(beta)`` on mode k) are solved by MINPACK (``scipy.optimize.fsolve``) at a fixed
  order parameter r for the cosine coefficients and kappa, which gives ``kappa(r)``; the
  fold is its minimum (brentq on ``d kappa / d r``). Neither the package's residual nor
  its Newton solver is used.
- A dask cluster of 2 workers gives the same numbers as a serial run; bad input is a
  ConfigError before any work.
- Resume: a scan stopped by Ctrl-C, or by a member that failed, goes on from its
  checkpoint without running the members done again, and gives the dataset of an
  uninterrupted run (variables and attrs); also through ``bifurcation(mode = "scan")``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special

from meanfield.errors import ConfigError, SolverError
from meanfield.runs.executor import Executor
from meanfield.runs.schedule import checkpoint_path
from meanfield.studies.bifurcation import study as bf
from meanfield.studies.bifurcation import scan as bs
from meanfield.studies.bifurcation import scan_member, scan_plan

KURAMOTO = {"domain": {"geometry": "circle"}, "discretization": {"resolution": 64},
            "model": {"beta": 0.0, "kappa": 2.0},
            "bifurcation": {"parameter": "kappa", "start": 1.5, "stop": 4.0,
                            "scan_num": 8}}
# USA, beta = 4: kappa_c = 4 / I_1(4) = 0.40986, the fold at 0.3871. The values keep away
# from both (the relaxation rates vanish there): spacing 0.005, the nearest 0.0039 above
# the fold and 0.0011 above kappa_c.
BETA = 4.0
USA = {"domain": {"geometry": "circle"}, "discretization": {"resolution": 48},
       "model": {"beta": BETA, "kappa": 0.4, "normalized": False},
       "bifurcation": {"parameter": "kappa", "start": 0.371, "stop": 0.431,
                       "scan_num": 13}}


def kuramoto_root(kappa: float) -> float:
    """The non-trivial root of r = I_1(kappa r)/I_0(kappa r) (0 for kappa <= 2)."""
    if kappa <= 2:
        return 0.0
    return optimize.brentq(lambda r: special.i1e(kappa * r) / special.i0e(kappa * r) - r,
                           1e-6, 1.0, xtol=1e-15)


@pytest.fixture(scope="module")
def kuramoto():
    return bs.scan(KURAMOTO)


@pytest.fixture(scope="module")
def usa():
    return bs.scan(USA)


# --- beta = 0 ------------------------------------------------------------------------
def test_the_dataset(kuramoto):
    ds = kuramoto
    assert dict(ds.sizes) == {"sweep": 4, "value": 8}
    assert list(ds.sweep.values) == ["uniform", "clustered", "up", "down"]
    np.testing.assert_allclose(ds.kappa, np.linspace(1.5, 4.0, 8))
    assert bool((ds.beta == 0).all())
    assert ds.attrs["kind"] == "bifurcation" and ds.attrs["mode"] == "scan"
    assert ds.attrs["parameter"] == "kappa" and ds.attrs["kappa_c"] == pytest.approx(2.0)
    for name in ("order_parameter", "free_energy", "stable", "steady_time", "residual",
                 "order_parameter_unpolished", "residual_unpolished", "leading_eigenvalue",
                 "mode", "converged"):
        assert ds[name].dims == ("sweep", "value")
    assert ds.bistable.dims == ("value",)


def test_noisy_kuramoto_states_match_the_self_consistency(kuramoto):
    ds = kuramoto
    assert bool(ds.converged.all()), ds.attrs["message"]
    assert bool(ds.stable.all())
    # polished: stationary to round-off (Newton's tolerance 1e-10)
    assert float(ds.residual.max()) <= 1e-10
    assert float(ds.residual_unpolished.max()) < 1e-9
    assert bool((ds.steady_time > 0).all())
    for i, kappa in enumerate(ds.kappa.values):
        r = kuramoto_root(kappa)
        found = ds.order_parameter.values[:, i]
        assert np.abs(found - r).max() <= 1e-8, (kappa, found, r)
        # unpolished: as close as ||F|| < 1e-9 allows
        assert np.abs(ds.order_parameter_unpolished.values[:, i] - r).max() <= 1e-6
        assert set(ds["mode"].values[:, i]) == {0 if kappa < 2 else 1}


def test_the_pitchfork_is_supercritical(kuramoto):
    assert not bool(kuramoto.bistable.any())
    assert math.isnan(kuramoto.attrs["bistable_low"])
    assert "no bistability" in kuramoto.attrs["message"]


# --- USA, beta = 4: first order ------------------------------------------------------
K_MODES, POINTS = 24, 128  # I_24(4) ~ 1e-17 I_0(4); the trapezoid rule is spectral


def _even_state_equations(r: float, beta: float):
    """The equations of an even stationary state of order parameter r (module
    docstring): unknowns the cosine coefficients a_2..a_K and kappa."""
    theta = 2 * np.pi * np.arange(POINTS) / POINTS
    cos = np.cos(np.outer(np.arange(K_MODES + 1), theta))
    bessel = special.iv(np.arange(K_MODES + 1), beta)

    def equations(z: np.ndarray) -> np.ndarray:
        a = np.concatenate([[1 / (2 * np.pi), r / (2 * np.pi)], z[:-1]])
        phi = (2 * np.pi / beta) * (bessel[0] * a[0] + 2 * (bessel[1:] * a[1:]) @ cos[1:])
        w = np.exp(z[-1] * (phi - phi.max()))
        rho = w / (2 * np.pi * w.mean())
        return (cos[1:] @ rho) / POINTS - a[1:]

    return equations


def kappa_of_r(r: float, beta: float = BETA, guess: np.ndarray | None = None
               ) -> tuple[float, np.ndarray]:
    equations = _even_state_equations(r, beta)
    if guess is None:
        guess = np.concatenate([np.zeros(K_MODES - 1), [beta / special.iv(1, beta)]])
    z = optimize.fsolve(equations, guess, xtol=1e-13)
    assert np.abs(equations(z)).max() < 1e-12
    return float(z[-1]), z


@pytest.fixture(scope="module")
def fold():
    """(kappa, r) at the fold: the minimum of kappa(r), brentq on its derivative."""
    h = 1e-4

    def slope(r):
        return (kappa_of_r(r + h)[0] - kappa_of_r(r - h)[0]) / (2 * h)

    r_fold = optimize.brentq(slope, 0.4, 0.75, xtol=1e-8)
    return kappa_of_r(r_fold)[0], r_fold


def test_the_reference_fold_is_subcritical(fold):
    kappa_fold, r_fold = fold
    kappa_c = BETA / special.iv(1, BETA)
    assert kappa_fold < kappa_c - 0.02 and 0.4 < r_fold < 0.7
    # the branch leaves the uniform state toward smaller kappa (subcritical)
    assert kappa_of_r(0.01)[0] < kappa_c


def test_hysteresis_below_kappa_c_down_to_the_fold(usa, fold):
    ds, (kappa_fold, _) = usa, fold
    kappa_c = BETA / special.iv(1, BETA)
    assert ds.attrs["kappa_c"] == pytest.approx(kappa_c, rel=1e-12)
    assert bool(ds.converged.all()), ds.attrs["message"]
    values = ds.kappa.values
    spacing = values[1] - values[0]
    bistable = ds.bistable.values
    assert bistable.sum() >= 2
    flagged = values[bistable]
    # one interval, below kappa_c, from within a spacing above the fold ...
    assert np.all(np.diff(np.flatnonzero(bistable)) == 1)
    assert flagged.max() < kappa_c and kappa_c - flagged.max() < spacing
    assert 0 <= flagged.min() - kappa_fold < spacing
    assert ds.attrs["bistable_low"] == flagged.min()
    assert ds.attrs["bistable_high"] == flagged.max()
    # ... where the up sweep stays uniform and the down sweep on the cluster
    up, down = ds.order_parameter.sel(sweep="up"), ds.order_parameter.sel(sweep="down")
    assert bool((up[bistable] == 0).all()) and bool((down[bistable] > 0.5).all())
    assert bool(ds.stable.all())
    # outside it both sweeps agree (uniform below the fold, the cluster above kappa_c)
    np.testing.assert_allclose(up[~bistable], down[~bistable], atol=1e-9)
    assert bool((up[values < kappa_fold] == 0).all())
    assert bool((up[values > kappa_c] > 0.5).all())


def test_the_cluster_states_lie_on_the_reference_branch(usa, fold):
    """The polished cluster of the down sweep at each bistable value against r(kappa) of
    the upper branch (brentq on kappa(r) - kappa above the fold)."""
    ds, (_, r_fold) = usa, fold
    for kappa in ds.kappa.values[ds.bistable.values][[0, -1]]:
        r = optimize.brentq(lambda s, k=kappa: kappa_of_r(s)[0] - k, r_fold, 0.95,
                            xtol=1e-13)
        found = float(ds.order_parameter.sel(sweep="down").sel(value=kappa))
        assert found == pytest.approx(r, abs=1e-8)


# --- the executor, bad input ---------------------------------------------------------
SMALL = {**KURAMOTO, "bifurcation": {"parameter": "kappa", "start": 1.5, "stop": 3.0,
                                     "scan_num": 2, "scan_starts": ["clustered"]}}


def test_a_dask_cluster_gives_the_same_numbers():
    serial = bs.scan(SMALL)
    with Executor(workers=2) as executor:
        cluster = bs.scan(SMALL, executor=executor)
    for name in bs.VARIABLES + ("bistable",):
        np.testing.assert_array_equal(cluster[name].values, serial[name].values)
    assert list(cluster.sweep.values) == ["clustered", "up", "down"]


# --- resume ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small():
    """SMALL uninterrupted, serially (members: up, down, clustered at each value)."""
    return bs.scan(SMALL)


def _same_dataset(ds, ref):
    assert dict(ds.sizes) == dict(ref.sizes) and set(ds.data_vars) == set(ref.data_vars)
    for name in ref.variables:
        assert ds[name].dtype == ref[name].dtype, name
        np.testing.assert_array_equal(ds[name].values, ref[name].values, err_msg=name)
    assert set(ds.attrs) == set(ref.attrs)
    for key, value in ref.attrs.items():
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(ds.attrs[key]), key
        else:
            assert ds.attrs[key] == value, key


RUN_MEMBER = bs.run_member  # (the real one, whatever a test patched in before)


def _counting(monkeypatch, fail=None):
    """run_member counting its calls (the member keys); ``fail(calls)`` may raise."""
    real, calls = RUN_MEMBER, []

    def member(cfg, plan, params):
        calls.append((params["sweep"], params.get("index")))
        if fail is not None:
            fail(calls, params)
        return real(cfg, plan, params)

    monkeypatch.setattr(bs, "run_member", member)
    return calls


def test_resume_skips_the_members_done(tmp_path, monkeypatch, small):
    out = tmp_path / "s.nc"

    def interrupt_third(calls, params):
        if len(calls) == 3:
            raise KeyboardInterrupt

    calls = _counting(monkeypatch, interrupt_third)
    part = bs.run_scan(SMALL, out)
    assert part.attrs["status"] == -1 and checkpoint_path(out).exists() and not out.exists()
    assert "2 of 4 members" in part.attrs["message"]
    # the values done are there, the others NaN
    np.testing.assert_array_equal(part.order_parameter.sel(sweep=["up", "down"]),
                                  small.order_parameter.sel(sweep=["up", "down"]))
    assert bool(np.isnan(part.order_parameter.sel(sweep="clustered")).all())
    assert calls == [("up", None), ("down", None), ("clustered", 0)]
    calls = _counting(monkeypatch)
    resumed = bs.run_scan(SMALL, out, resume=True)
    assert calls == [("clustered", 0), ("clustered", 1)]  # not the sweeps done
    assert resumed.attrs["status"] == 0 and not checkpoint_path(out).exists()
    _same_dataset(resumed, small)
    from meanfield.io import read_netcdf

    _same_dataset(read_netcdf(out), small)


def test_a_failed_member_is_retried_alone_on_resume(tmp_path, monkeypatch, small):
    """A member failing in the middle: the others are kept, resume runs only it."""
    out = tmp_path / "s.nc"

    def down_fails(calls, params):
        if params["sweep"] == "down":
            raise RuntimeError("a member failed")

    calls = _counting(monkeypatch, down_fails)
    with pytest.raises(SolverError, match="sweep 'down' failed"):
        bs.run_scan(SMALL, out)
    assert len(calls) == 4 and checkpoint_path(out).exists()
    calls = _counting(monkeypatch)
    resumed = bs.run_scan(SMALL, out, resume=True)
    assert calls == [("down", None)]
    _same_dataset(resumed, small)


def test_the_bifurcation_study_resumes_a_scan(tmp_path, monkeypatch):
    """``bifurcation`` with mode = "scan": Ctrl-C, then resume, as the CLI runs it."""
    cfg = {**SMALL, "bifurcation": {**SMALL["bifurcation"], "mode": "scan"}}
    out = tmp_path / "b.nc"
    whole = bf.bifurcation(cfg, out=tmp_path / "whole.nc")

    def interrupt_second(calls, params):
        if len(calls) == 2:
            raise KeyboardInterrupt

    _counting(monkeypatch, interrupt_second)
    part = bf.bifurcation(cfg, out=out)
    assert part.attrs["status"] == -1 and "1 of 4 members" in part.attrs["message"]
    calls = _counting(monkeypatch)
    resumed = bf.bifurcation(cfg, out=out, resume=True)
    assert len(calls) == 3 and ("up", None) not in calls
    assert resumed.attrs["status"] == 0 and resumed.attrs["mode"] == "scan"
    _same_dataset(resumed, whole)


@pytest.mark.parametrize("change,key", [
    ({"scan_num": 1}, "bifurcation.scan_num"),
    ({"scan_num": 2.5}, "bifurcation.scan_num"),
    ({"scan_starts": []}, "bifurcation.scan_starts"),
    ({"scan_starts": ["random"]}, "bifurcation.scan_starts"),
    ({"scan_starts": ["uniform", "uniform"]}, "bifurcation.scan_starts"),
    ({"start": 4.0, "stop": 1.5}, ("bifurcation.start", "bifurcation.stop")),
    ({"start": 2.0, "stop": 2.0}, ("bifurcation.start", "bifurcation.stop")),
    ({"start": 0.0}, "bifurcation.start"),
    ({"start": -1.0}, "bifurcation.start"),
    ({"scan_tolerance": 0.0}, "bifurcation.scan_tolerance"),
    ({"scan_t_max": -1.0}, "bifurcation.scan_t_max"),
    ({"parameter": "noise"}, "bifurcation.parameter"),
])
def test_bad_input_before_any_work(change, key, monkeypatch):
    def no_work(*args, **kwargs):
        raise AssertionError("work started")

    monkeypatch.setattr(bs, "run_member", no_work)
    cfg = {**KURAMOTO, "bifurcation": {**KURAMOTO["bifurcation"], **change}}
    with pytest.raises(ConfigError) as err:
        bs.scan(cfg)
    keys = key if isinstance(key, tuple) else (key,)
    assert err.value.key.split("[")[0] in keys  # (a list entry: key[i])


def test_finite_volume_is_refused():
    cfg = {**KURAMOTO, "discretization": {"resolution": 64, "method": "finite-volume"}}
    with pytest.raises(ConfigError) as err:
        bs.scan(cfg)
    assert err.value.key == "discretization.method"


@pytest.mark.slow
def test_a_fine_scan_flags_only_the_interval_between_fold_and_kappa_c(fold):
    """41 values (the default) across [0.36, 0.44]: values right at kappa_c relax too slowly
    to be steady by t_max (critical slowing down); they are polished anyway and reported,
    and ``bistable`` still holds exactly the values in [fold, kappa_c) (both ends of the
    hysteresis loop at one spacing)."""
    kappa_fold, _ = fold
    kappa_c = BETA / special.iv(1, BETA)
    cfg = {**USA, "bifurcation": {"parameter": "kappa", "start": 0.36, "stop": 0.44,
                                  "scan_num": 41, "scan_starts": ["uniform"]}}
    ds = bs.scan(cfg)
    values = ds.kappa.values
    inside = (values > kappa_fold) & (values < kappa_c)
    spacing = values[1] - values[0]
    flagged = ds.bistable.values
    assert not flagged[~inside].any()
    # all of the interval but the values within a spacing of its ends (slow relaxation)
    core = inside & (values > kappa_fold + spacing) & (values < kappa_c - spacing)
    assert flagged[core].all()
    assert float(ds.residual.max()) <= 1e-10


def test_the_sphere_at_beta_zero():
    """S^2, beta = 0: r = L(kappa r) (Langevin) above kappa_c = 3, uniform below."""
    cfg = {"domain": {"geometry": "sphere"}, "discretization": {"resolution": 15},
           "model": {"beta": 0.0, "kappa": 3.0},
           "bifurcation": {"parameter": "kappa", "start": 2.5, "stop": 4.5, "scan_num": 2,
                           "scan_starts": ["clustered"]}}
    ds = bs.scan(cfg)
    assert bool(ds.converged.all()) and bool(ds.stable.all()), ds.attrs["message"]
    root = optimize.brentq(lambda r: 1 / np.tanh(4.5 * r) - 1 / (4.5 * r) - r, 1e-3, 1.0,
                           xtol=1e-15)
    np.testing.assert_allclose(ds.order_parameter.sel(value=2.5), 0.0, atol=1e-12)
    np.testing.assert_allclose(ds.order_parameter.sel(value=4.5), root, atol=1e-8)
    assert ds.attrs["kappa_c"] == pytest.approx(3.0)


def test_the_sweeps_go_on_into_concentrated_states():
    """Noisy Kuramoto at kappa = 5, 6.75, 8.5: the density's minimum (1.3e-4, 2e-6,
    1.4e-7) lies below the kick's amplitude (1e-3 of the mean, 1.6e-4): the kick that the
    sweeps give each next value keeps the state positive (it multiplies the state by
    ``1 + f``; added, it made the density negative and the sweep failed), and every sweep
    ends on ``r = I_1(kappa r)/I_0(kappa r)`` to 1e-8."""
    cfg = {**KURAMOTO, "bifurcation": {"parameter": "kappa", "start": 5.0, "stop": 8.5,
                                       "scan_num": 3, "scan_starts": ["clustered"]}}
    ds = bs.scan(cfg)
    assert bool(ds.converged.all()) and bool(ds.stable.all()), ds.attrs["message"]
    for i, kappa in enumerate(ds.kappa.values):
        r = kuramoto_root(kappa)
        assert np.abs(ds.order_parameter.values[:, i] - r).max() <= 1e-8, kappa


def test_the_kick_is_the_perturbation_at_the_uniform_state_and_keeps_mass_and_sign():
    disc = scan_member._member_disc(scan_plan.validated_config({**KURAMOTO}), 0.1)
    kick = scan_member._kick(disc)
    uniform = np.asarray(disc.to_state(np.full(disc.grid.shape, 1 / (2 * math.pi))))
    np.testing.assert_allclose(scan_member._kicked(disc, uniform, kick), uniform + kick,
                               atol=1e-15)
    axis = disc.grid.points[..., 0]  # cos theta
    rho = np.exp(8.0 * (axis - 1.0))  # max / min = e^16: the kick's 1e-3 exceeds the min
    rho = rho / float(disc.grid.integrate(rho))
    kicked = disc.to_density(scan_member._kicked(disc, disc.to_state(rho), kick))
    assert float(np.min(kicked)) > 0
    assert float(disc.grid.integrate(kicked)) == pytest.approx(1.0, abs=1e-14)
    assert float(np.min(disc.to_density(disc.to_state(rho) + kick))) < 0
