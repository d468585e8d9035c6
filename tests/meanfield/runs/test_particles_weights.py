"""Particle runs with general weights through ``meanfield.particles(config)`` and the CLI:
today's SA (Q = K = V = I on the sphere) to 1e-13, the closed form of uniform attention
in R^d, the rescaled run mapped back by e^{tV}, the causal mask, the saved attention
against ``attention_matrix`` of the saved tokens, the pure flow's overflow stopped,
exact resume of the time-dependent rescaled flow, and the memory of saved attention
refused before any work."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.linalg import expm

import meanfield
from meanfield import ConfigError
from meanfield.cli import main
from meanfield.errors import SolverError
from meanfield.io import read_netcdf
from meanfield.metrics import attention as am
from meanfield.metrics import clusters as cl
from meanfield.model import particles as pm
from meanfield.model.weighted_attention import Head, attention_matrix
from meanfield.runs import budget
from meanfield.runs.schedule import checkpoint_path

SA = {"domain": {"geometry": "sphere"}, "model": {"beta": 2.0},
      "initial": {"kind": "von_mises", "center": [0.0, 0.0, 1.0], "concentration": 0.5},
      "time": {"t_final": 2.0, "save_every": 0.5}, "particles": {"n": 60}}
IDENTITY_ROWS = np.eye(3).tolist()
# tokens in R^2, one random head (Q, K gaussian, V symmetric with eigenvalues 1, 0.3)
PURE = {"domain": {"geometry": "euclidean", "dim": 2},
        "initial": {"kind": "gaussian", "mean": [0.5, 0.0], "covariance": 1.0},
        "weights": {"query": {"kind": "gaussian", "seed": 1},
                    "key": {"kind": "gaussian", "seed": 2},
                    "value": {"kind": "symmetric", "eigenvalues": [1.0, 0.3], "seed": 3}},
        "time": {"t_final": 1.5, "save_every": 0.5, "tolerance": 1e-11},
        "particles": {"n": 16}}


def with_particles(cfg: dict, **options) -> dict:
    return {**cfg, "particles": {**cfg["particles"], **options}}


# --- acceptance 1: Q = K = V = I on the sphere is today's SA ----------------------------

@pytest.mark.parametrize("dt", ["auto", 0.05])
def test_identity_weights_on_the_sphere_give_todays_sa(dt):
    sa = {**SA, "time": {**SA["time"], "dt": dt}}
    today = meanfield.particles(sa)
    assert today.attrs["model"] == "SA"
    # explicit identity weights; saved attention sends the run through the weighted model
    weighted = meanfield.particles({**with_particles(sa, save_attention=True), "weights": {
        "query": IDENTITY_ROWS, "key": "identity", "value": 1.0}})
    assert weighted.attrs["model"] == "SA with weights"
    # measured: 4.4e-16 (adaptive), 3.3e-16 (dt = 0.05)
    np.testing.assert_allclose(weighted.position.values, today.position.values, rtol=0,
                               atol=1e-13)
    np.testing.assert_allclose(weighted.energy.values, today.energy.values, rtol=1e-12)
    np.testing.assert_array_equal(weighted.clusters.values, today.clusters.values)


# --- tokens in R^d ------------------------------------------------------------------------

def test_uniform_attention_in_r_d_is_the_closed_form():
    # Q = K = 0: P_ij = 1/n, x_i' = c mean(x): x_i(t) = x_i(0) + (e^{ct} - 1) mean(x(0))
    c = 0.8
    cfg = {**PURE, "weights": {"query": 0.0, "key": 0.0, "value": c}}
    ds = meanfield.particles(cfg)
    x0 = ds.position.values[0]
    for t, x in zip(ds.time.values, ds.position.values):
        exact = x0 + np.expm1(c * t) * x0.mean(axis=0)
        np.testing.assert_allclose(x, exact, rtol=0, atol=1e-9 * np.abs(exact).max())
        np.testing.assert_allclose(ds.mean_position.sel(time=t).values, np.exp(c * t) * x0.mean(0),
                                   rtol=1e-9)
    # the deviations from the mean do not move
    np.testing.assert_allclose(ds.spread.values, ds.spread.values[0], rtol=1e-9)
    assert ds.attrs["architecture"] == "pure" and ds.attrs["position_holds"] == "x"
    assert "angle" not in ds and "order_parameter" not in ds and "energy" not in ds
    assert "in R^2" in ds.attrs["title"]


def test_rescaled_run_mapped_back_is_the_pure_run_and_its_attention():
    pure = meanfield.particles(with_particles(PURE, save_attention=True))
    rescaled = meanfield.particles(with_particles(PURE, save_attention=True, rescaled=True))
    assert rescaled.attrs["rescaled"] == 1 and rescaled.attrs["position_holds"] == "z"
    assert "z_i = e^(-tV) x_i" in rescaled.position.attrs["long_name"]
    np.testing.assert_array_equal(rescaled.position.values[0], pure.position.values[0])
    from meanfield.config import validate
    from meanfield.model.weighted_attention import build_heads
    head = build_heads(validate(PURE, "particles"))[0]
    for k, t in enumerate(pure.time.values):
        x = rescaled.position.values[k] @ expm(t * head.value).T
        np.testing.assert_allclose(x, pure.position.values[k], rtol=0,
                                   atol=1e-8 * np.abs(x).max())
        # the same attention coefficients (eq. (4)): P(t) of the pure flow at x = e^{tV} z
        np.testing.assert_allclose(rescaled.attention.values[k], pure.attention.values[k],
                                   atol=1e-8)


def test_saved_attention_is_row_stochastic_and_that_of_the_saved_tokens():
    ds = meanfield.particles(with_particles(PURE, save_attention=True, mask="causal"))
    p = ds.attention.values
    assert ds.attention.dims == ("time", "particle", "key")
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, rtol=0, atol=1e-14)
    assert np.all(p[:, np.triu_indices(16, 1)[0], np.triu_indices(16, 1)[1]] == 0.0)
    from meanfield.config import validate
    from meanfield.model.weighted_attention import build_heads
    head = build_heads(validate(PURE, "particles"))[0]
    for k in range(ds.sizes["time"]):
        ref = attention_matrix(ds.position.values[k], head, 1.0, "causal")
        np.testing.assert_array_equal(p[k], ref)
        assert ds.boolean_distance.values[k] == am.boolean_distance(ref)
        assert ds.attention_rank.values[k] == am.numerical_rank(ref, 1e-6)


def test_several_heads_save_one_attention_matrix_per_head():
    cfg = {**with_particles(PURE, save_attention=True),
           "weights": {"heads": [{"value": 1.0}, {"query": 0.0, "value": -0.5}]}}
    ds = meanfield.particles(cfg)
    assert ds.attention.dims == ("time", "head", "particle", "key")
    assert ds.attention_rank.dims == ("time", "head") and ds.attrs["heads"] == 2
    # the second head has Q = 0: uniform rows, rank 1, Boolean distance 1 - 1/n
    np.testing.assert_allclose(ds.attention.values[:, 1], 1 / 16, rtol=1e-15)
    np.testing.assert_array_equal(ds.attention_rank.values[:, 1], 1)
    np.testing.assert_allclose(ds.boolean_distance.values[:, 1], 1 - 1 / 16, rtol=1e-15)


def test_causal_mask_on_the_sphere_first_token_fixed_second_follows_its_ode():
    # token 1 attends to itself: P^perp_{x_1} x_1 = 0, it does not move. Token 2 attends
    # to tokens 1 and 2: v_2 = P_21 (x_1 - cos(theta) x_2), so the angle theta between them
    # obeys theta' = -sin(theta) e^{beta cos theta} / (e^{beta cos theta} + e^beta).
    beta = 2.0
    cfg = {**with_particles(SA, mask="causal"), "time": {"t_final": 3.0, "save_every": 1.0,
                                                         "tolerance": 1e-10}}
    ds = meanfield.particles(cfg)
    x = ds.position.values
    assert np.abs(x[:, 0] - x[0, 0]).max() < 1e-15  # (measured 0.0)
    theta = np.arccos(np.clip(np.einsum("tj,tj->t", x[:, 0], x[:, 1]), -1, 1))

    def rhs(t, y):
        e = np.exp(beta * (np.cos(y[0]) - 1))  # divided through by e^beta
        return [-np.sin(y[0]) * e / (e + 1)]

    ref = solve_ivp(rhs, (0, 3), [theta[0]], t_eval=ds.time.values, rtol=1e-12,
                    atol=1e-14).y[0]
    np.testing.assert_allclose(theta, ref, rtol=1e-7)  # (measured 3.4e-10)


def test_pure_overflow_stops_with_advice():
    cfg = {**PURE, "weights": {"value": 40.0}, "time": {"t_final": 20.0, "save_every": 5.0}}
    with pytest.raises(SolverError, match="rescaled = true"):
        meanfield.particles(cfg)


# --- checkpoints: the time-dependent rescaled flow resumes bit for bit --------------------

RESUMED = with_particles({**PURE, "time": {"t_final": 1.5, "save_every": 0.25,
                                             "tolerance": 1e-10}},
                         rescaled=True, save_attention=True)


def test_rescaled_resume_from_a_save_is_bit_identical(tmp_path, monkeypatch):
    full = meanfield.particles(RESUMED)
    out = tmp_path / "r.nc"
    real, calls = cl.euclidean_cluster_count, {"n": 0}

    def interrupting(x, threshold):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return real(x, threshold)

    monkeypatch.setattr(cl, "euclidean_cluster_count", interrupting)
    part = meanfield.particles(RESUMED, out=out)
    monkeypatch.setattr(cl, "euclidean_cluster_count", real)
    assert part.attrs["status"] == -1 and checkpoint_path(out).exists()
    resumed = meanfield.particles(RESUMED, out=out, resume=True)
    assert resumed.attrs["status"] == 0
    for var in ("position", "attention", "boolean_distance", "attention_rank"):
        np.testing.assert_array_equal(resumed[var].values, full[var].values)


def test_rescaled_resume_between_saves_is_bit_identical(tmp_path, monkeypatch):
    full = meanfield.particles(RESUMED)
    out = tmp_path / "r.nc"
    real, steps = pm.TokenStepper.advance, {"n": 0}

    def advance(stepper, *args, on_state=None, **kw):
        def spy(t, *rest):
            on_state(t, *rest)  # (checkpoint_every tiny: written after each step)
            steps["n"] += 1
            if steps["n"] == 9:
                raise KeyboardInterrupt
        return real(stepper, *args, on_state=spy, **kw)

    monkeypatch.setattr(pm.TokenStepper, "advance", advance)
    cfg = {**RESUMED, "output": {"checkpoint_every": 1e-9}}
    part = meanfield.particles(cfg, out=out)
    monkeypatch.undo()
    ckpt = read_netcdf(checkpoint_path(out))
    assert part.attrs["status"] == -1 and "checkpoint_t" in ckpt.attrs  # between saves
    t_mid = float(ckpt.attrs["checkpoint_t"])
    assert t_mid not in full.time.values
    resumed = meanfield.particles(cfg, out=out, resume=True)
    assert resumed.attrs["status"] == 0
    for var in ("position", "attention", "boolean_distance"):
        np.testing.assert_array_equal(resumed[var].values, full[var].values)


# --- memory, bad input, the CLI -----------------------------------------------------------

def test_saved_attention_too_large_is_refused_before_any_work(monkeypatch):
    def no_work(*a, **k):
        raise AssertionError("stepping started")

    monkeypatch.setattr(pm.TokenStepper, "advance", no_work)
    monkeypatch.setattr(budget, "available_memory", lambda: 2 * 2**30)
    # 101 frames of 4000^2 doubles: 12.9 GB of attention alone
    cfg = {**with_particles(PURE, n=4000, save_attention=True),
           "time": {"t_final": 1.0, "save_every": 0.01}}
    with pytest.raises(ConfigError, match="attention frames") as err:
        meanfield.particles(cfg)
    assert err.value.key == "particles.n" and "fits" in str(err.value)
    # the same run without saved attention fits
    assert budget.estimate(meanfield.config.validate(
        with_particles(cfg, save_attention=False), "particles"), "particles").bytes < \
        budget.MEMORY_MARGIN * 2 * 2**30


@pytest.mark.parametrize("raw, key, words", [
    (with_particles({**SA, "weights": {"value": -1.0}}, sum_method="harmonic"),
     "particles.sum_method", "'direct'"),
    ({**with_particles(SA, save_attention=True), "model": {"beta": 1.0, "normalized": False}},
     "model.normalized", "normalized = true"),
    (with_particles(PURE, save_attention=True, n=6000), "particles.save_attention", "5000"),
])
def test_bad_weighted_config(raw, key, words, monkeypatch):
    monkeypatch.setattr(pm.TokenStepper, "advance", lambda *a, **k: 1 / 0)
    with pytest.raises(ConfigError) as err:
        meanfield.particles(raw)
    assert err.value.key == key and words in str(err.value), str(err.value)


def test_cli_runs_a_toml_with_weights(tmp_path, capsys):
    toml = tmp_path / "w.toml"
    toml.write_text('[domain]\ngeometry = "euclidean"\ndim = 2\n'
                    '[initial]\nkind = "gaussian"\n'
                    '[particles]\nn = 12\nrescaled = true\nsave_attention = true\n'
                    '[weights]\nvalue = [[1.0, 0.0], [0.0, 0.5]]\n'
                    'query = {kind = "gaussian", seed = 1}\n'
                    '[time]\nt_final = 1.0\nsave_every = 0.5\n')
    assert main(["particles", str(toml), "--no-progress"]) == 0
    ds = read_netcdf(tmp_path / "w.nc")
    assert ds.attrs["architecture"] == "pure" and ds.attrs["rescaled"] == 1
    assert ds.attention.shape == (3, 12, 12)
    assert main(["particles", str(toml), "--no-progress", "--set",
                 "weights.value=[[1.0]]"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "weights.value" in err


@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_euclidean_cluster_count_is_single_linkage(d):
    # against scipy's single-linkage hierarchy cut at the threshold (points in R^d, not on
    # a sphere: the circle's angles and the sphere's hull do not apply), with far-out
    # points (1e200) where the snapping grid would pass int64
    from scipy.cluster.hierarchy import fcluster, linkage
    rng = np.random.default_rng(d)
    centres = 3.0 * rng.standard_normal((6, d))
    x = (centres[rng.integers(0, 6, 200)] + 0.05 * rng.standard_normal((200, d)))
    for threshold in (0.02, 0.2, 1.0):
        ref = fcluster(linkage(x, "single"), threshold, criterion="distance").max()
        assert cl.euclidean_cluster_count(x, threshold) == ref
    far = np.vstack([x[:5], 1e200 * np.ones((1, d))])
    assert cl.euclidean_cluster_count(far, 0.2) == fcluster(
        linkage(far[:5], "single"), 0.2, criterion="distance").max() + 1


def test_the_title_names_v_equal_c_identity():
    """V = c I on the sphere is named in the model attribute and the title (c < 0:
    repulsive), so a figure of a repulsive run does not read as plain SA."""
    ds = meanfield.particles({"domain": {"geometry": "sphere", "dim": 3},
                              "weights": {"value": -1.0}, "particles": {"n": 4},
                              "time": {"t_final": 0.5, "save_every": 0.5}})
    assert ds.attrs["model"] == "SA with V = -I (repulsive)"
    assert "repulsive" in ds.attrs["title"]
