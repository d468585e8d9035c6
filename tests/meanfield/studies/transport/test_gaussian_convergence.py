"""Tokens of pure self-attention against the exact Gaussian mean field (issue 20,
acceptance 7): the errors of the mean and covariance fall like n^{-1/2}; checked also
against the closed form of uniform attention (A = 0), and the RK4 order of the tokens."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from scipy.linalg import expm

from meanfield.initial.samplers import gaussian_tokens
from meanfield.model.tokens import initial_rng
from meanfield.model.weighted_attention import Head, pure_velocity
from meanfield.studies.transport import gaussian_convergence as gc


def weights(d: int) -> tuple[Head, np.ndarray, np.ndarray]:
    """Non-trivial Q, K, V (fixed seed) with a small tilt ||Sigma^{1/2} A|| ~ 0.3, and
    (alpha_0, Sigma_0)."""
    rng = np.random.default_rng(10 + d)
    eye = np.eye(d)
    head = Head(0.4 * (eye + 0.3 * rng.standard_normal((d, d))),
                0.4 * (eye + 0.3 * rng.standard_normal((d, d))),
                0.5 * eye + 0.2 * rng.standard_normal((d, d)))
    mean = np.linspace(0.5, -0.3, d)
    b = rng.standard_normal((d, d))
    cov = 0.6 * eye + 0.1 * b @ b.T
    return head, mean, cov


def tilt(head: Head, cov: np.ndarray) -> float:
    return float(np.linalg.norm(np.linalg.cholesky(cov).T @ head.key.T @ head.query, 2))


@pytest.mark.parametrize("engine", ["numba", "numpy",
                                    pytest.param("torch", marks=pytest.mark.skipif(
                                        importlib.util.find_spec("torch") is None,
                                        reason="torch not installed"))])
def test_attention_average_is_pure_velocity(engine, monkeypatch):
    """The blocked/parallel evaluation equals ``pure_velocity`` (which forms P), also with
    logits of 1e3 (the row shift) and with several blocks."""
    head, _, _ = weights(3)
    x = np.random.default_rng(0).standard_normal((301, 3))
    np.testing.assert_allclose(gc.pure_field(head, 1.0, engine)(x), pure_velocity(x, head),
                               rtol=0, atol=1e-13)
    for name in ("BLOCK_BYTES", "GPU_BLOCK_BYTES"):
        monkeypatch.setattr(gc, name, 8 * 301 * 7)  # 7 rows per block
    np.testing.assert_allclose(gc.pure_field(head, 300.0, engine)(x),
                               pure_velocity(x, head, beta=300.0), rtol=0, atol=1e-12)


def test_uniform_attention_closed_form():
    """A = 0 (Q = 0): P_ij = 1/n, so x_i' = V mean(x): the mean follows e^{tV} and each
    token x_i(t) = x_i(0) + (e^{tV} - I) mean_0; the Gaussian keeps Sigma_0 and its
    mean e^{tV} alpha_0, and the partners move by (e^{tV} - I) alpha_0. So
    mean_error = |e^{tV}(xbar_0 - alpha_0)|, covariance_error = ||cov_0 - Sigma_0||_F
    for all t, coupling = |(e^{tV} - I)(xbar_0 - alpha_0)|: from the samples alone."""
    head, mean, cov = weights(3)
    head = Head(np.zeros((3, 3)), head.key, head.value)
    times = [0.5, 1.0]
    ds = gc.gaussian_convergence(mean, cov, head, [500], 2, times, 0.05, seed=7)
    for r in range(2):
        x0 = gaussian_tokens(mean, cov, 500, initial_rng(7 + r))
        dev = x0.mean(axis=0) - mean
        cov0 = np.cov(x0.T, bias=True)
        for k, t in enumerate([0.0, *times]):
            e = expm(t * head.value)
            got = ds.isel(n=0, replica=r, time=k)
            # RK4 at h = 0.05 on |V| ~ 1: relative error ~ h^4/120 per unit time ~ 1e-7
            np.testing.assert_allclose(float(got.mean_error), np.linalg.norm(e @ dev),
                                       rtol=1e-6)
            np.testing.assert_allclose(float(got.covariance_error),
                                       np.linalg.norm(cov0 - cov), rtol=1e-9)
            np.testing.assert_allclose(float(got.coupling),
                                       np.linalg.norm((e - np.eye(3)) @ dev),
                                       rtol=1e-6, atol=1e-12)


def test_rk4_order_and_step_error_far_below_sampling():
    """The tokens' RK4: halving the step divides the error by ~16 (order 4); at the
    tests' step h = 0.25 to t = 0.5, the error of the tokens' mean, covariance and
    positions (rms) is below 3e-5 in d = 3 (measured 2e-5 at n = 2000), 1/180 of the
    sampling error sqrt(tr Sigma_t / n) of n = 1e5 tokens (5.5e-3)."""
    head, mean, cov = weights(3)
    x0 = gaussian_tokens(mean, cov, 400, initial_rng(0))
    field = gc.pure_field(head)
    save = np.array([0.5])
    ref = gc.gaussian_reference(mean, cov, head, 1.0, save, 1 / 64)
    fine = gc.coupled_paths(field, ref, x0, save, 1 / 64)[0][-1]
    errors = []
    for dt in (0.5, 0.25, 0.125):
        r = gc.gaussian_reference(mean, cov, head, 1.0, save, dt)
        x = gc.coupled_paths(field, r, x0, save, dt)[0][-1]
        errors.append(np.sqrt(np.mean(np.sum((x - fine) ** 2, axis=1))))
        if dt == 0.25:
            mean_cov = gc.moment_errors(x, fine.mean(axis=0), np.cov(fine.T, bias=True))
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((ratios > 12) & (ratios < 20)), ratios
    assert max(errors[1], *mean_cov) < 3e-5, (errors, mean_cov)


def test_coupled_start_and_partners_are_exact_samples():
    """At t = 0 the tokens are the partners (coupling 0, equal errors); the partners'
    errors are those of exact samples: E|mean - alpha|^2 = tr Sigma_t / n, checked over
    the replicas against the chi-square spread."""
    head, mean, cov = weights(2)
    ds = gc.gaussian_convergence(mean, cov, head, [200], 40, [0.5], 0.25)
    np.testing.assert_array_equal(ds.coupling.isel(time=0), 0.0)
    np.testing.assert_array_equal(ds.mean_error.isel(time=0),
                                  ds.mean_sampling_floor.isel(time=0))
    sol = gc.gaussian_reference(mean, cov, head, 1.0, np.array([0.5]), 0.25)
    trace = np.trace(sol.covariance[sol.index(0.5)])
    ratio = float((ds.mean_sampling_floor.isel(time=-1) ** 2).mean()) * 200 / trace
    # 40 replicas of a chi-square with 2 degrees of freedom over 2: sd 1/sqrt(40) = 0.16
    assert 0.5 < ratio < 1.5, ratio


@pytest.mark.parametrize("d", [2, 3])
def test_errors_fall_like_n_to_minus_one_half(d):
    """Acceptance 7, fast: n = 100 and 1000, 96 replicas each, t = 0.5 in one RK4 step
    (its error, 2.4e-4 in d = 3, is 1/200 of the sampling error at n = 1000). The log of
    one error has sd ~0.5 (measured 0.46-0.69: the log of a chi-like variable), so the
    slope of 192 points over log n in {log 100, log 1000} has standard error
    0.5 / (sqrt(192) 1.15) = 0.031: [-0.6, -0.4] is +-3.2 standard errors. The 99 %
    interval must hold -1/2 (a 95 % one misses it on 1 seed in 20 by design). The slow
    test pins the slope at n = 1e3..1e5."""
    from meanfield.studies.transport.convergence import fit_slope

    head, mean, cov = weights(d)
    assert 0.2 < tilt(head, cov) < 0.5
    ds = gc.gaussian_convergence(mean, cov, head, [100, 1000], 96, [0.5], 0.5)
    n = np.repeat(ds.n.values.astype(float), ds.sizes["replica"])
    for name in ("mean_error", "covariance_error"):
        slope = float(ds[f"{name}_slope"].isel(time=-1))
        assert -0.6 <= slope <= -0.4, (name, slope)
        _, low, high = fit_slope(n, ds[name].isel(time=-1).values.ravel(), level=0.99)
        assert low <= -0.5 <= high, (name, low, high)


def slow_engine() -> str:
    """torch on a GPU where there is one (seconds), else numba on the CPU threads."""
    try:
        import torch
    except ImportError:
        return "numba"
    return "torch" if torch.cuda.is_available() else "numba"


@pytest.mark.slow
@pytest.mark.parametrize("d", [2, 3])
def test_errors_fall_like_n_to_minus_one_half_to_1e5(d):
    """Acceptance 7: n = 1e3, 3e3, 1e4, 3e4, 1e5 with 48 replicas each, t = 0.5 in two
    RK4 steps of 0.25 (the step error of the mean, 2e-5 in d = 3, is 1/280 of the
    sampling error at n = 1e5). The log of one error has sd 0.3-0.9, so the slope of
    240 points has standard error 0.02-0.03.

    Measured (H200, torch, 71 s and 77 s; numba on its 16 CPU cores takes 10.8 s per
    evaluation at n = 1e5, about an hour per d): d = 2 mean -0.481 [-0.534, -0.428],
    covariance -0.525 [-0.563, -0.487], coupling -0.495 [-0.538, -0.452]; d = 3 mean
    -0.444 [-0.485, -0.404], covariance -0.487 [-0.513, -0.460], coupling -0.464
    [-0.496, -0.431] (95 %). The d = 3 mean's offset from -1/2 is in the draws: the
    i.i.d. samples at t = 0 give -0.441 [-0.481, -0.401] before any dynamics, so the
    test asserts the slopes in [-0.6, -0.4] and that the interaction moves them from
    those of n exact samples (the partners Y) by less than 0.03 (measured <= 0.002)."""
    head, mean, cov = weights(d)
    ns = [1000, 3000, 10000, 30000, 100000]
    ds = gc.gaussian_convergence(mean, cov, head, ns, 48, [0.5], 0.25, engine=slow_engine())
    for name in ("mean_error", "covariance_error", "coupling"):
        slope = float(ds[f"{name}_slope"].isel(time=-1))
        assert -0.6 <= slope <= -0.4, (name, slope)
    for name, floor in (("mean_error", "mean_sampling_floor"),
                        ("covariance_error", "covariance_sampling_floor")):
        gap = float(ds[f"{name}_slope"].isel(time=-1) - ds[f"{floor}_slope"].isel(time=-1))
        assert abs(gap) < 0.03, (name, gap)


CFG = {"domain": {"geometry": "euclidean", "dim": 2},
       "initial": {"kind": "gaussian", "mean": [0.5, -0.3],
                   "covariance": [[0.7, 0.1], [0.1, 0.6]]},
       "weights": {"query": [[0.4, 0.1], [0.0, 0.4]], "key": 0.5,
                   "value": [[0.5, 0.1], [-0.1, 0.6]]},
       "particles": {"seed": 3},
       "time": {"t_final": 0.5, "save_every": 0.25, "dt": 0.25},
       "convergence": {"n": [50, 200], "replicas": 2, "p": 2}}


def test_config_study_is_the_python_study(tmp_path):
    """meanfield.convergence of Gaussian tokens in R^d dispatches here: the same numbers
    as ``gaussian_convergence`` with the config's weights and seeds, written as a
    convergence dataset."""
    from meanfield.io import read_netcdf
    from meanfield.studies.transport.convergence import convergence

    ds = convergence(CFG, out=tmp_path / "g.nc")
    head = Head(np.array([[0.4, 0.1], [0.0, 0.4]]), 0.5 * np.eye(2),
                np.array([[0.5, 0.1], [-0.1, 0.6]]))
    ref = gc.gaussian_convergence(CFG["initial"]["mean"], CFG["initial"]["covariance"], head,
                                  [50, 200], 2, [0.25, 0.5], 0.25, seed=3)
    for name in gc.MEASURES:
        np.testing.assert_array_equal(ds[name].values, ref[name].values)
    assert ds.attrs["kind"] == "convergence" and ds.attrs["reference"] == "gaussian"
    assert read_netcdf(tmp_path / "g.nc").sizes == {"n": 2, "replica": 2, "time": 3}
    # its figures: the three errors against n with their slopes, and against time
    from meanfield.errors import ConfigError
    from meanfield.plotting.output import plot_result

    paths = plot_result(ds, tmp_path / "fig", stem="g", dpi=40)
    assert sorted(p.name for p in paths) == ["g_rates.png", "g_summary.png"]
    with pytest.raises(ConfigError, match="covariance_error_slope"):
        plot_result(ds.drop_vars("covariance_error_slope"), tmp_path / "fig2", dpi=40)


@pytest.mark.parametrize("change, key", [
    ({"initial": {"kind": "uniform"}}, "initial.kind"),
    ({"particles": {"mask": "causal"}}, "particles.mask"),
    ({"particles": {"rescaled": True}}, "particles.rescaled"),
    ({"weights": {"heads": [{"query": 1.0}, {"query": 2.0}]}}, "weights.heads"),
    ({"weights": {"query": 1.0, "key": 1.0, "value": 1.0},
      "time": {"t_final": 50.0, "save_every": 1.0, "dt": 0.25}}, "time.t_final"),
    ({"domain": {"geometry": "circle", "dim": 2}, "initial": {"kind": "uniform"},
      "weights": {"value": 2.0}}, "weights"),
    ({"convergence": {"n": [3 * 10**6], "replicas": 8}}, "convergence.n"),  # 5.8e14 pairs
])
def test_config_refused_before_any_work(change, key, tmp_path, monkeypatch):
    """Bad input names its key before any member runs (a blow-up of the Gaussian before
    t_final: d = 2, Q = K = V = I, Sigma = 0.7 I blows up at t ~ 0.7)."""
    from meanfield.errors import ConfigError
    from meanfield.studies.transport.convergence import convergence

    monkeypatch.setattr(gc, "member_errors", lambda *a, **k: pytest.fail("work started"))
    with pytest.raises(ConfigError) as info:
        convergence({**CFG, **change}, out=tmp_path / "bad.nc")
    assert info.value.key == key


def test_resume_skips_the_members_done(tmp_path, monkeypatch):
    """Ctrl-C after two members keeps them in the checkpoint; the resumed study runs
    only the others and gives the numbers of an uninterrupted one."""
    from meanfield.runs.schedule import checkpoint_path
    from meanfield.studies.transport.convergence import convergence

    out = tmp_path / "g.nc"
    real, calls = gc.run_member, []

    def interrupt_third(cfg, plan, params):
        calls.append(params)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(cfg, plan, params)

    monkeypatch.setattr(gc, "run_member", interrupt_third)
    part = convergence(CFG, out=out)
    assert part.attrs["status"] == -1 and checkpoint_path(out).exists()
    calls.clear()
    monkeypatch.setattr(gc, "run_member", lambda *a: calls.append(a[2]) or real(*a))
    resumed = convergence(CFG, out=out, resume=True)
    assert len(calls) == 2  # of 4 members
    whole = convergence(CFG, out=tmp_path / "whole.nc")
    for name in gc.MEASURES:
        np.testing.assert_array_equal(resumed[name].values, whole[name].values)
