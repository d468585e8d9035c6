"""The contraction study: W_2 decay rates of the PDE and of tokens against the rates of
docs/conventions.md (e^{-t} SA, e^{-e^beta t} USA near a cluster; |sigma| of the slowest
mode of the uniform state with noise), the pair distance, resume without recomputing,
the same numbers on a dask cluster, bad input before any work, the CLI and the plot."""
from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield.cli import main
from meanfield.errors import ConfigError
from meanfield.io import read_netcdf
from meanfield.model.kernels import growth_rate, sphere_growth_rate
from meanfield.runs.engine import TaskFailed
from meanfield.runs.schedule import checkpoint_path
from meanfield.studies.transport import contraction as ct
from meanfield.studies.transport import contraction_rates as rates

# One cluster (von Mises, W_2 ~ 0.18 at t = 0) collapsing; 1024 points resolve it down to
# 4 spacings = 0.025 rad, below the fitted window's top of 0.1.
CIRCLE = {"model": {"normalized": True},
          "discretization": {"resolution": 1024},
          "initial": {"kind": "von_mises", "concentration": 30.0},
          "time": {"t_final": 5.0, "save_every": 0.05},
          "particles": {"n": 100, "seed": 3},
          "contraction": {"beta": [1.0]}}


def _config(**sections) -> dict:
    """CIRCLE with its sections updated by ``sections`` (``initial`` replaced whole)."""
    out = {s: {**CIRCLE.get(s, {}), **sections.get(s, {})} for s in {*CIRCLE, *sections}}
    if "initial" in sections:
        out["initial"] = sections["initial"]
    return out


@pytest.fixture(scope="module")
def sa():
    return ct.contraction(CIRCLE)


def test_fit_rate_of_an_exact_exponential():
    t = np.linspace(0, 10, 101)
    d = 0.5 * np.exp(-1.7 * t)
    rate, low, high, start, stop = rates.fit_rate(t, d, 1e-6, 0.1)
    assert rate == pytest.approx(1.7, rel=1e-12)
    assert low <= rate <= high and high - low < 1e-9
    assert d[np.searchsorted(t, start)] <= 0.1 and d[np.searchsorted(t, stop)] >= 1e-6
    # the first run of times in the window only: a later re-entry is not fitted
    d2 = d.copy()
    d2[-5:] = 0.05
    assert rates.fit_rate(t, d2, 1e-6, 0.1)[4] < t[-5]
    assert all(math.isnan(v) for v in rates.fit_rate(t, d, 1.0, 2.0))


def test_predicted_rates_are_those_of_the_design():
    cfg = _config()
    from meanfield import config as cfgmod
    cfg = cfgmod.validate(cfg)
    assert rates.local_rate(cfg, 2.0) == 1.0
    usa = {**cfg, "model": {**cfg["model"], "normalized": False}}
    assert rates.local_rate(usa, 2.0) == pytest.approx(math.exp(2.0), rel=1e-15)
    noisy = {**cfg, "model": {**cfg["model"], "kappa": 1.5}}
    assert rates.local_rate(noisy, 0.0) == pytest.approx(-growth_rate(1, 0.0, 1.5, True))
    assert rates.local_rate(noisy, 0.0) == pytest.approx(1 / 1.5 - 1 / 2)
    sphere = {**noisy, "domain": {"geometry": "sphere", "dim": 3},
              "model": {**noisy["model"], "kappa": 2.0}}
    assert rates.local_rate(sphere, 0.0) == pytest.approx(
        -sphere_growth_rate(1, 0.0, 2.0, True))
    above = {**cfg, "model": {**cfg["model"], "kappa": 3.0}}  # above kappa_c = 2
    assert math.isnan(rates.local_rate(above, 0.0))


def test_sa_circle_rates_within_five_percent(sa):
    """SA at beta = 1: the PDE and 100 tokens both contract at rate 1 (5 %)."""
    assert sa.sizes == {"beta": 1, "time": 101, "source": 2}
    assert list(sa.source.values) == ["pde", "particles"]
    ratio = (sa.fitted_rate / sa.predicted_rate).values
    assert np.all(np.abs(ratio - 1) < 0.05), ratio
    assert bool((sa.fitted_rate_low <= sa.fitted_rate).all())
    assert sa.attrs["target"] == "dirac"
    # the PDE stops once its cluster is narrower than 4 grid spacings: NaN after
    pde = sa.distance.sel(source="pde").values[0]
    floor = ct.RESOLVED_SPACINGS * 2 * np.pi / 1024
    assert np.isnan(pde[-1]) and np.nanmin(pde) < floor
    assert np.all(np.diff(pde[np.isfinite(pde)]) < 0)


def test_usa_circle_rate_is_e_to_the_beta():
    cfg = _config(model={"normalized": False}, time={"t_final": 1.5, "save_every": 0.02},
                  contraction={"beta": [2.0]})
    ds = ct.contraction(cfg)
    ratio = (ds.fitted_rate / ds.predicted_rate).values
    assert ds.local_rate.item() == pytest.approx(math.exp(2.0))
    assert set(ds.fit_regime.values.ravel()) == {"local"}
    assert np.all(np.abs(ratio - 1) < 0.05), ratio
    assert ds.attrs["dt"] <= ct.AUTO_DT_RATE / math.exp(2.0)


def test_noisy_kuramoto_decays_at_the_slowest_mode():
    """beta = 0, kappa = 1.5 (below kappa_c = 2): W_2 to the uniform state decays at
    |sigma_1| = 1/6 (1 %)."""
    cfg = _config(model={"kappa": 1.5}, time={"t_final": 20.0, "save_every": 0.1, "dt": 0.01},
                  initial={"kind": "perturbed", "amplitude": 0.3},
                  discretization={"resolution": 128},
                  contraction={"beta": [0.0], "sources": ["pde"]})
    ds = ct.contraction(cfg)
    assert ds.attrs["target"] == "stationary"
    assert ds.fitted_rate.item() == pytest.approx(1 / 6, rel=0.01)


PAIR = {"kind": "von_mises", "center": 2.0, "concentration": 60.0}


def test_pair_distance_of_tokens_contracts_modulo_rotation():
    """Two starts with clusters of different widths at different places: modulo rotation
    the distance between the two token sets decays at the same rate 1 (SA, 5 %)."""
    cfg = _config(contraction={"beta": [1.0], "sources": ["particles"], "other": PAIR})
    ds = ct.contraction(cfg)
    pair = ds.pair_distance.sel(source="particles").values[0]
    assert pair[0] > 0.05
    assert ds.pair_fitted_rate.item() == pytest.approx(1.0, rel=0.05)


@pytest.mark.slow
def test_pair_distance_of_the_pde_contracts_modulo_rotation():
    """The same for two PDE solutions (modulo rotation of two densities: ~2 s a frame at
    1024 points)."""
    cfg = _config(time={"t_final": 2.0, "save_every": 0.1},
                  contraction={"beta": [1.0], "sources": ["pde"], "other": PAIR})
    ds = ct.contraction(cfg)
    assert ds.pair_distance.sel(source="pde").values[0, 0] > 0.04
    assert ds.pair_fitted_rate.item() == pytest.approx(1.0, rel=0.05)


def test_resume_skips_the_members_done(tmp_path, monkeypatch, sa):
    out = tmp_path / "c.nc"
    real, calls = ct.run_member, []

    def interrupt_second(cfg, plan, params):
        calls.append(params["source"])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(cfg, plan, params)

    monkeypatch.setattr(ct, "run_member", interrupt_second)
    part = ct.contraction(CIRCLE, out=out)
    assert part.attrs["status"] == -1 and checkpoint_path(out).exists()
    assert "1 of 2 members" in part.attrs["message"]
    calls.clear()
    monkeypatch.setattr(ct, "run_member", lambda *a: calls.append(a[2]["source"]) or real(*a))
    resumed = ct.contraction(CIRCLE, out=out, resume=True)
    assert calls == ["particles"]  # the PDE member done is not run again
    for name in ("distance", "fitted_rate"):
        np.testing.assert_array_equal(resumed[name].values, sa[name].values)
    assert not checkpoint_path(out).exists()


def test_a_member_failed_in_the_middle_is_retried_in_its_place(tmp_path, monkeypatch):
    """A member that fails between finished ones: the run keeps what it can and resume
    retries the failed member, with every member's numbers under its own beta (a
    checkpoint that kept the member after the failed one filed it in the failed one's
    place and never retried it)."""
    cfg = _config(contraction={"beta": [0.5, 1.0, 2.0], "sources": ["particles"]})
    whole = ct.contraction(cfg)
    out = tmp_path / "c.nc"
    real, calls = ct.run_member, []

    def fail_the_second(cfg, plan, params):
        calls.append(params["beta"])
        if params["beta"] == 1.0:
            raise ValueError("a member that fails")
        return real(cfg, plan, params)

    monkeypatch.setattr(ct, "run_member", fail_the_second)
    with pytest.raises(TaskFailed, match="beta = 1"):
        ct.contraction(cfg, out=out)
    assert checkpoint_path(out).exists()
    calls.clear()
    monkeypatch.setattr(ct, "run_member", lambda *a: calls.append(a[2]["beta"]) or real(*a))
    resumed = ct.contraction(cfg, out=out, resume=True)
    assert calls[0] == 1.0 and 0.5 not in calls  # the failed one again, the first kept
    for name in ("distance", "fitted_rate"):
        np.testing.assert_array_equal(resumed[name].values, whole[name].values)


def test_a_dask_cluster_gives_the_same_numbers():
    cfg = _config(time={"t_final": 2.0, "save_every": 0.1},
                  discretization={"resolution": 256}, contraction={"beta": [0.5, 1.0]})
    serial = ct.contraction(cfg)
    cluster = ct.contraction({**cfg, "parallel": {"workers": 2}})
    for name in ("distance", "fitted_rate"):
        np.testing.assert_array_equal(cluster[name].values, serial[name].values)


def test_the_sphere_with_noise_is_exact_for_zonal_densities():
    """beta = 0, kappa = 2 on S^2 (below kappa_c = 3): the rate to the uniform state is
    |sigma_1| = 1/3 (1 %), with the zonal W_2 (exact) for a density about the pole."""
    cfg = _config(domain={"geometry": "sphere"}, model={"kappa": 2.0},
                  discretization={"resolution": 24},
                  initial={"kind": "perturbed", "degree": 1, "amplitude": 0.5},
                  time={"t_final": 20.0, "save_every": 0.1, "dt": 0.01},
                  contraction={"beta": [0.0], "sources": ["pde"]})
    ds = ct.contraction(cfg)
    assert ds.fitted_rate.item() == pytest.approx(1 / 3, rel=0.01)


@pytest.mark.parametrize("change,key", [
    ({"contraction": {"beta": []}}, "contraction.beta"),
    ({"contraction": {"beta": [-1.0]}}, "contraction.beta[0]"),
    ({"contraction": {"sources": []}}, "contraction.sources"),
    ({"contraction": {"sources": ["pde", "tokens"]}}, "contraction.sources[1]"),
    ({"contraction": {"fit_below": 1e-9}}, "contraction.fit_above"),
    ({"contraction": {"other": {"kind": "nope"}}}, "contraction.other.kind"),
    ({"particles": {"n": None}}, "particles.n"),
    ({"model": {"kappa": 2.0}, "time": {"dt": "auto"}}, "time.dt"),
    ({"model": {"normalized": False}, "contraction": {"beta": [800.0]}}, "contraction.beta"),
    ({"particles": {"n": 10**11}}, "particles.n"),
    # a start the grid does not resolve: refused before the members (it failed in each
    # PDE member, after the token members had run: exit 1 instead of 2)
    ({"discretization": {"resolution": 64}}, "discretization.resolution"),
    ({"contraction": {"other": {"kind": "von_mises", "concentration": 5000.0}}},
     "discretization.resolution"),
    ({"domain": {"geometry": "sphere"}, "discretization": {"resolution": 64},
      "contraction": {"sources": ["pde"],
                      "other": {"kind": "von_mises", "center": [1.0, 0.0, 0.0]}}},
     "contraction.other"),
    ({"domain": {"geometry": "sphere"}, "discretization": {"resolution": 64},
      "model": {"kappa": 2.0}, "time": {"dt": 0.01}, "particles": {"n": 10**5}},
     "particles.n"),
])
def test_bad_input_before_any_work(change, key, monkeypatch):
    monkeypatch.setattr(ct, "run_member", lambda *a: pytest.fail("work started"))
    cfg = {s: {**CIRCLE.get(s, {}), **change.get(s, {})} for s in {*CIRCLE, *change}}
    if cfg["particles"].get("n", 0) is None:
        del cfg["particles"]["n"]
    with pytest.raises(ConfigError) as err:
        ct.contraction(cfg)
    assert err.value.key == key


def test_cli_one_line(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text("[contraction]\nsources = []\n")
    assert main(["contraction", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "contraction.sources" in err[0]


def test_cli_run_and_plot(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text('[model]\nnormalized = true\n[discretization]\nresolution = 256\n'
                    '[initial]\nkind = "von_mises"\nconcentration = 30.0\n'
                    '[time]\nt_final = 2.0\nsave_every = 0.1\n[particles]\nn = 50\n'
                    '[contraction]\nbeta = [1.0]\n')
    out = tmp_path / "c.nc"
    assert main(["contraction", str(path), "--out", str(out), "--no-progress"]) == 0
    assert "fitted / predicted rate" in capsys.readouterr().out
    ds = read_netcdf(out)
    assert ds.attrs["target"] == "dirac" and "predicted_rate" in ds
    assert main(["plot", str(out), "--out", str(tmp_path / "figs")]) == 0
    assert any(p.suffix == ".png" for p in (tmp_path / "figs").iterdir())


# Acceptance 5 of issue 10. Windows: the circle's 1024 points resolve the cluster down to
# 4 spacings = 0.025 rad, under the default window top 0.1; on S^2 the band limit 320
# resolves it down to 4 pi/320 = 0.039 rad, and the window top is 0.06, where the local
# rate of USA at beta = 2 is within 2 % of e^beta (the O(beta W^2) correction, measured on
# tokens: 7 % at W = 0.1). The tokens' window opens once all 300 are within fit_below of
# the limit point: on S^2 from t = 2.56 for SA and t = 1.59 for USA at beta = 0.5 (hence
# t_final 3.5 and 1.8, were 2.5 and 1.3; the PDE stops earlier, its core unresolved).
ACCEPTANCE = {
    "circle": {"discretization": {"resolution": 1024}, "fit_below": 0.1,
               "save_every": {True: 0.05, False: 0.01}, "t_final": {True: 5.0, False: 2.0}},
    "sphere": {"discretization": {"resolution": 320}, "fit_below": 0.06,
               "save_every": {True: 0.02, False: 0.005}, "t_final": {True: 3.5, False: 1.8}},
}


@pytest.mark.slow
@pytest.mark.parametrize("geometry", ["circle", "sphere"])
@pytest.mark.parametrize("normalized", [True, False])
def test_acceptance_rates_without_noise(geometry, normalized):
    """beta = 0.5, 1, 2: the fitted rates of the PDE and of 300 tokens within 5 % of
    1 (SA) and e^beta (USA)."""
    a = ACCEPTANCE[geometry]
    cfg = {"model": {"normalized": normalized}, "domain": {"geometry": geometry},
           "discretization": a["discretization"],
           "initial": {"kind": "von_mises", "concentration": 30.0},
           "time": {"t_final": a["t_final"][normalized],
                    "save_every": a["save_every"][normalized]},
           "particles": {"n": 300, "seed": 1},
           "contraction": {"beta": [0.5, 1.0, 2.0], "fit_below": a["fit_below"]}}
    ds = ct.contraction(cfg)
    ratio = (ds.fitted_rate / ds.predicted_rate).to_pandas()
    print(f"\n{geometry} {'SA' if normalized else 'USA'} fitted / predicted:\n{ratio}")
    assert np.all(np.abs(ratio.values - 1) < 0.05), ratio


@pytest.mark.slow
@pytest.mark.parametrize("geometry,kappa,rate", [("circle", 1.5, 1 / 6),
                                                 ("sphere", 2.0, 1 / 3)])
def test_acceptance_rates_with_noise(geometry, kappa, rate):
    """beta = 0: noisy Kuramoto on S^1 at kappa = 1.5 and S^2 at kappa = 2: the PDE's W_2
    rate to the uniform state within 1 % of the slowest mode's |sigma|."""
    initial = ({"kind": "perturbed", "amplitude": 0.3} if geometry == "circle" else
               {"kind": "perturbed", "degree": 1, "amplitude": 0.5})
    cfg = {"model": {"kappa": kappa}, "domain": {"geometry": geometry},
           "discretization": {"resolution": 256 if geometry == "circle" else 48},
           "initial": initial, "time": {"t_final": 30.0, "save_every": 0.1, "dt": 0.01},
           "contraction": {"beta": [0.0], "sources": ["pde"]}}
    ds = ct.contraction(cfg)
    print(f"\n{geometry} kappa = {kappa}: fitted {ds.fitted_rate.item():.6f}, "
          f"|sigma| {ds.predicted_rate.item():.6f}")
    assert ds.predicted_rate.item() == pytest.approx(rate, rel=1e-12)
    assert ds.fitted_rate.item() == pytest.approx(rate, rel=0.01)


def test_progress_counts_the_members(capsys):
    cfg = _config(time={"t_final": 1.0, "save_every": 0.1},
                  discretization={"resolution": 256}, contraction={"beta": [0.5, 1.0]})
    ct.contraction(cfg, progress=True)
    err = capsys.readouterr().err
    assert "contraction" in err and "4/4" in err


@pytest.mark.slow
def test_noisy_kuramoto_above_threshold_decays_at_the_leading_eigenvalue():
    """kappa = 3 > kappa_c = 2: the stationary state is the von Mises exp(kappa r cos);
    W_2 to it (modulo rotation) decays at -Re of the leading non-zero eigenvalue of F'
    there, measured by the dense Jacobian (an independent method: time stepping against
    linear algebra), 1 % in the tail below 0.004 rad (the local rate at 0.1 is 13 % lower:
    the approach is nonlinear longer than at a uniform state). ~70 s."""
    cfg = _config(model={"kappa": 3.0}, discretization={"resolution": 64},
                  initial={"kind": "perturbed", "amplitude": 0.3},
                  time={"t_final": 30.0, "save_every": 0.2, "dt": 0.01},
                  contraction={"beta": [0.0], "sources": ["pde"], "fit_below": 0.004})
    ds = ct.contraction(cfg)
    assert ds.predicted_rate.item() > 0  # measured (no closed form above kappa_c)
    assert ds.fitted_rate.item() == pytest.approx(ds.predicted_rate.item(), rel=0.01)
