"""The convergence study: rates against n (i.i.d. n^{-1/2}, quantile points n^{-1}), the
error split and bounded as the theory says, resume without recomputing, the same numbers
on a dask cluster, bad input before any work."""
from __future__ import annotations

import numpy as np
import pytest

from meanfield.cli import main
from meanfield.errors import ConfigError
from meanfield.io import read_netcdf
from meanfield.runs.schedule import checkpoint_path
from meanfield.studies.transport import convergence as conv

CFG = {"model": {"beta": 1.0},
       "initial": {"kind": "von_mises", "concentration": 2.0},
       "discretization": {"resolution": 64},
       "time": {"t_final": 1.0, "save_every": 0.5, "dt": 0.1},
       "convergence": {"n": [100, 400, 1600], "replicas": 6, "p": 1}}


@pytest.fixture(scope="module")
def iid():
    return conv.convergence(CFG)


def test_iid_rate_is_one_half(iid):
    """18 points (3 n x 6 replicas) per time: the fitted slope's 95 % interval must hold
    -1/2 and stay within [-0.75, -0.3] (a failure rate of ~5 % per time would show as a
    miss of -1/2; the fixed seeds make it a fixed outcome)."""
    assert np.all(iid.slope_low <= -0.5) and np.all(iid.slope_high >= -0.5)
    assert np.all((iid.slope > -0.75) & (iid.slope < -0.3))
    assert iid.sizes == {"n": 3, "replica": 6, "time": 3}


def test_errors_split_and_bounded(iid):
    d, c, f = iid.distance, iid.coupling, iid.sampling_floor
    # W_p(mu^n, mu) <= W_p(mu^n, nu^n) + W_p(nu^n, mu) <= coupling + sampling floor
    assert bool((d <= c + f + 1e-12).all())
    np.testing.assert_array_equal(c.isel(time=0), 0.0)  # X(0) = Y(0)
    np.testing.assert_array_equal(d.isel(time=0), f.isel(time=0))
    assert bool((d <= iid.dobrushin_bound).all())  # no noise: Dobrushin holds
    assert bool((c.isel(time=-1) > 0).all())


def test_quantile_points_converge_at_rate_one():
    cfg = {**CFG, "convergence": {**CFG["convergence"], "points": "quantile"}}
    ds = conv.convergence(cfg)
    assert ds.sizes["replica"] == 1
    assert np.all(ds.slope <= -0.9), ds.slope.values


def test_noise_gives_propagation_of_chaos_without_a_bound():
    cfg = {**CFG, "model": {"beta": 1.0, "kappa": 4.0},
           "convergence": {"n": [100, 400], "replicas": 3, "p": 2}}
    ds = conv.convergence(cfg)
    assert bool(ds.dobrushin_bound.isnull().all())
    assert bool((ds.distance <= ds.coupling + ds.sampling_floor + 1e-12).all())
    assert ds.attrs["p"] == 2


def test_resume_skips_the_members_done(tmp_path, monkeypatch, iid):
    out = tmp_path / "c.nc"
    real, calls = conv.run_member, []

    def interrupt_third(cfg, plan, table, params):
        calls.append((params["n"], params["replica"]))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(cfg, plan, table, params)

    monkeypatch.setattr(conv, "run_member", interrupt_third)
    part = conv.convergence(CFG, out=out)
    assert part.attrs["status"] == -1 and checkpoint_path(out).exists()
    assert "2 of 18 members" in part.attrs["message"]
    calls.clear()
    monkeypatch.setattr(conv, "run_member",
                        lambda *a: calls.append(a[3]["n"]) or real(*a))
    resumed = conv.convergence(CFG, out=out, resume=True)
    assert len(calls) == 16  # the two members done are not run again
    for name in ("distance", "coupling", "sampling_floor", "dobrushin_bound", "slope"):
        np.testing.assert_array_equal(resumed[name].values, iid[name].values)
        np.testing.assert_array_equal(read_netcdf(out)[name].values, iid[name].values)


def test_a_dask_cluster_gives_the_same_numbers():
    cfg = {**CFG, "convergence": {"n": [100, 200], "replicas": 2, "p": 1},
           "parallel": {"workers": 2}}
    serial = conv.convergence({**cfg, "parallel": {"workers": 1}})
    cluster = conv.convergence(cfg)
    for name in ("distance", "coupling", "sampling_floor"):
        np.testing.assert_array_equal(cluster[name].values, serial[name].values)


def test_the_sphere():
    cfg = {**CFG, "domain": {"geometry": "sphere"}, "discretization": {"resolution": 33},
           "convergence": {"n": [50, 200], "replicas": 2, "p": 2}}
    ds = conv.convergence(cfg)
    assert bool(np.isfinite(ds.distance).all()) and bool((ds.distance > 0).all())
    assert bool((ds.distance <= ds.coupling + ds.sampling_floor + 1e-9).all())


@pytest.mark.parametrize("change,key", [
    ({"convergence": {"n": []}}, "convergence.n"),
    ({"convergence": {"n": [1, 10]}}, "convergence.n[0]"),
    ({"convergence": {"p": 0.5}}, "convergence.p"),
    ({"convergence": {"points": "grid"}}, "convergence.points"),
    ({"domain": {"geometry": "sphere"}, "discretization": {"resolution": 33},
      "convergence": {"points": "quantile"}}, "convergence.points"),
    ({"discretization": {"method": "finite-volume"}}, "discretization.method"),
    ({"model": {"kappa": 2.0}, "time": {"dt": "auto"}}, "time.dt"),
    ({"domain": {"geometry": "sphere"}, "discretization": {"resolution": 64},
      "convergence": {"n": [10, 10**6]}}, "convergence.n"),
    ({"convergence": {"n": [100, 10**11]}}, "convergence.n"),
])
def test_bad_input_before_any_work(change, key, monkeypatch):
    monkeypatch.setattr(conv, "run_member", lambda *a: pytest.fail("work started"))
    cfg = {s: {**CFG.get(s, {}), **change.get(s, {})} for s in {*CFG, *change}}
    with pytest.raises(ConfigError) as err:
        conv.convergence(cfg)
    assert err.value.key == key


def test_cli_one_line(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text("[convergence]\np = 0.5\n")
    assert main(["convergence", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "convergence.p" in err[0]


def test_plot(tmp_path, iid):
    out = tmp_path / "c.nc"
    iid.to_netcdf(out)
    assert main(["plot", str(out), "--out", str(tmp_path / "figs")]) == 0
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == ["c_rates.png",
                                                                     "c_summary.png"]
    assert main(["plot", str(out), "--animate", "--out", str(tmp_path / "g")]) == 2


@pytest.mark.slow
@pytest.mark.parametrize("normalized", [True, False])
def test_acceptance_circle_rates(normalized):
    """Issue 10, acceptance 3: beta = 1, no noise, t in {0, 1, 2}, n = 1e2..1e5 (4 values,
    8 replicas): the W1 slope of i.i.d. starts in [-0.6, -0.4] at every time, of quantile
    points <= -0.9 (W1 of the midpoint quantiles is 2 pi/(4n) to leading order, for any
    density, and the flow keeps them quantiles); the error never above Dobrushin's bound."""
    # von Mises 0.5: USA concentrates it 4.7 times by t = 2 (from 2.0 it nearly collapses,
    # beyond 256 points). 256 points and tolerance 1e-10: quantile points reach W1 =
    # 2 pi/(4n) = 1.6e-5 at n = 1e5, below the PDE's own error at 64 points (4e-5 at t = 2).
    cfg = {"model": {"beta": 1.0, "normalized": normalized},
           "initial": {"kind": "von_mises", "concentration": 0.5},
           "discretization": {"resolution": 256},
           "time": {"t_final": 2.0, "save_every": 1.0, "dt": 0.05, "tolerance": 1e-10},
           "convergence": {"n": [100, 1000, 10_000, 100_000], "replicas": 8, "p": 1}}
    iid = conv.convergence(cfg)
    assert np.all((iid.slope >= -0.6) & (iid.slope <= -0.4)), iid.slope.values
    assert bool((iid.distance <= iid.dobrushin_bound).all())
    quantile = conv.convergence({**cfg, "convergence": {**cfg["convergence"],
                                                        "points": "quantile"}})
    assert np.all(quantile.slope <= -0.9), quantile.slope.values
    assert bool((quantile.distance <= quantile.dobrushin_bound).all())


def test_sphere_reference_is_the_exact_assignment():
    """On the sphere (p = 2) the distance is the exact W2 against reference x n equal-mass
    atoms of the density: the dense assignment of scipy gives the same number."""
    from scipy.optimize import linear_sum_assignment

    from meanfield.discretizations.base import Discretization
    from meanfield.metrics import sphere_assignment as sa
    from meanfield.metrics.sphere_transport import geodesic_cost

    cfg = {**CFG, "domain": {"geometry": "sphere"}, "discretization": {"resolution": 33},
           "convergence": {"n": [1000], "replicas": 1, "p": 2, "reference": 2}}
    from meanfield import config as cfgmod

    cfg = cfgmod.validate(cfg)
    solver = Discretization.from_config(cfg, threads=1)
    state = solver.to_state(solver.initial_density(cfg["initial"]))
    x = conv.initial_points(cfg, {"dim": 3}, solver, 1000, 0)
    atoms = sa.quantize_density(solver.grid, state, 2000)
    info = {}
    fast = sa.assignment_w2(x, atoms, info=info)
    assert "dense" not in info
    cost = np.repeat(geodesic_cost(x, atoms, 2.0), 2, axis=0)
    rows, cols = linear_sum_assignment(cost)
    assert abs(fast - np.sqrt(cost[rows, cols].mean())) < 1e-12
    assert conv.reference_w2(cfg, solver, state, [x])[0] == fast


def n_w2sq_fit(n: np.ndarray, w: np.ndarray, level: float = 0.95):
    """Least-squares fit of n W2^2 against log n over all (n, replica): slope, its
    ``level`` interval (Student t, len - 2 degrees of freedom), intercept."""
    from scipy import stats

    fit = stats.linregress(np.log(n), n * w**2)
    half = stats.t.ppf(0.5 + level / 2, n.size - 2) * fit.stderr
    return fit.slope, fit.slope - half, fit.slope + half, fit.intercept


@pytest.mark.slow
def test_acceptance_sphere_rates():
    """Issue 10, acceptance 4: S^2, beta = 1 (SA), no noise, t in {0, 1}, n = 1e2..1e4
    (5 values x 8 replicas): W2(mu^n_t, mu_t) follows n^{-1/2} (log n)^{1/2}. W2 is the
    exact assignment against 2n equal-mass atoms of the PDE density (module docstring of
    meanfield.studies.transport.convergence).

    The law, with its constant: for n i.i.d. samples of a probability density bounded
    away from zero and Hoelder continuous on a compact 2-dimensional Riemannian manifold
    M, lim n E W2^2(mu^n, mu) / log n = |M| / (4 pi), whatever the density. Ambrosio,
    Stra & Trevisan, "A PDE approach to a 2-dimensional matching problem", Probab. Theory
    Relat. Fields 173 (2019), arXiv:1611.04960 (uniform, unit square: 1/(4 pi));
    Ambrosio & Glaudo, "Finer estimates on the 2-dimensional matching problem", J. Ec.
    polytech. Math. 6 (2019) 737-765 (uniform, compact 2-D manifolds: |M|/(4 pi));
    Ambrosio, Goldman & Trevisan, "On the quadratic random matching problem in two-
    dimensional domains", Electron. J. Probab. (2022) (Hoelder densities bounded away from
    zero, domains and manifolds: the same |M|-only constant, conjectured by Benedetto &
    Caglioti, arXiv:1911.10523). On the unit sphere |M| = 4 pi: n E W2^2 ~ log n, a
    slope of exactly 1 of n W2^2 against log n (the corrections are lower order: a
    constant c in n W2^2 = log n + c, as the linearised theory of Benedetto, Caglioti,
    Caracciolo, D'Achille, Sicuro & Sportiello, arXiv:2008.01462, predicts). The
    reference atoms add about 0.6/(2n) rad^2 to W2^2 (module docstring): 0.3 to n W2^2,
    a constant, no change to the slope.

    Asserted at each saved time, for the sampling floor (the n nonlinear partners, i.i.d.
    samples of mu_t: the law itself) and the distance (the interacting tokens: the floor
    plus a coupling error of order n^{-1/2} without log, printed: n W2^2 moves from the
    floor's by at most 2 (n coupling^2 n floor^2)^{1/2} + n coupling^2 = O((log n)^{1/2}),
    o(log n), so the same asymptotic slope 1):
    - the least-squares slope of n W2^2 against log n over the 40 (n, replica) has a
      95 % interval that holds 1, the law's constant, and excludes 0, a plain n^{-1/2}
      rate (n W2^2 constant): the log is there and its coefficient is the theorem's.
      Measured (first run; the same by the fixed seeds): t = 0 0.86 [0.61, 1.12],
      t = 1 floor 0.87 [0.64, 1.10], distance 0.88 [0.29, 1.47]; the 40 points pin the
      coefficient to +-0.25 only (n W2^2 varies 15 % between replicas, log n spans 4.6).
    - the issue's log-log fit, printed: log W2 - (1/2) log log n against log n, slope
      within 0.05 of -1/2 (the constant c steepens it by about c / (2 L (L + c)),
      L = log n ~ 7: 0.02-0.04 for the measured intercepts c ~ 2-5, so the 95 %
      interval, +-0.015, misses -1/2: t = 0 -0.526 [-0.540, -0.511]); the raw slope of
      log W2 against log n in [-0.5, -0.35] (the law's local slope -1/2 + 1/(2 log n):
      -0.39 to -0.45 here)."""
    cfg = {"model": {"beta": 1.0, "normalized": True},
           "initial": {"kind": "von_mises", "concentration": 1.0},
           "domain": {"geometry": "sphere"}, "discretization": {"resolution": 33},
           "time": {"t_final": 1.0, "save_every": 1.0, "dt": 0.1},
           "convergence": {"n": [100, 316, 1000, 3162, 10_000], "replicas": 8, "p": 2,
                           "reference": 2}}
    ds = conv.convergence(cfg)
    n = np.broadcast_to(ds.n.values[:, None], (ds.sizes["n"], ds.sizes["replica"])).ravel()
    fits = []
    for k in range(ds.sizes["time"]):
        t = float(ds.time[k])
        for name in ("sampling_floor", "distance"):
            w = ds[name].isel(time=k).values.ravel()
            law = n_w2sq_fit(n, w)
            fit, raw = conv.fit_slope(n, w / np.sqrt(np.log(n))), conv.fit_slope(n, w)
            means = (n * w**2).reshape(ds.sizes["n"], -1).mean(axis=1)
            print(f"t = {t:g} {name}: n W2^2 against log n: slope {law[0]:.3f} "
                  f"[{law[1]:.3f}, {law[2]:.3f}] (law: 1), intercept {law[3]:.2f}; "
                  f"mean n W2^2 per n {np.round(means, 2).tolist()}")
            print(f"t = {t:g} {name}: log W2 - (1/2) log log n: slope {fit[0]:.3f} "
                  f"[{fit[1]:.3f}, {fit[2]:.3f}] (law: -1/2); raw log-log slope "
                  f"{raw[0]:.3f} [{raw[1]:.3f}, {raw[2]:.3f}]")
            fits.append((name, t, law, fit, raw))
        c = ds.coupling.isel(time=k).values.ravel()
        print(f"t = {t:g} coupling: mean n coupling^2 per n "
              f"{np.round((n * c**2).reshape(ds.sizes['n'], -1).mean(axis=1), 2).tolist()}")
    for name, t, law, fit, raw in fits:
        assert law[1] <= 1.0 <= law[2] and law[1] > 0, (name, t, law)
        assert abs(fit[0] + 0.5) <= 0.05, (name, t, fit)
        assert -0.5 <= raw[0] <= -0.35, (name, t, raw)
