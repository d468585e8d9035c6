"""The ensemble engine and the span reduction (meanfield.model.ensemble; issue 12).

References are independent of the engine: the single-system fields and ``simulate`` of
meanfield.model.particles, scipy's DOP853 at rtol = atol = 1e-13 on the full tokens,
the equiangular ODEs (docs/conventions.md), exact distributions of inner products of
uniform points.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.integrate import solve_ivp

from meanfield.errors import ConfigError, SolverError
from meanfield.initial.tokens import equiangular_tokens
from meanfield.model import ensemble as E
from meanfield.model.particles import (
    AttentionParticles,
    HardmaxParticles,
    PreLNParticles,
    simulate,
)

MODELS = {
    "SA": lambda: AttentionParticles(2.0),
    "USA": lambda: AttentionParticles(1.5, normalized=False),
    "Pre-LN": lambda: PreLNParticles(1.0),
    "hardmax": lambda: HardmaxParticles(),
}


def row_distance(a, b):
    """``max_i |a_i - b_i|`` over tokens (and systems, times)."""
    return float(np.max(np.linalg.norm(np.asarray(a) - np.asarray(b), axis=-1)))


def orders(errors):
    e = np.asarray(errors)
    return np.log2(e[:-1] / e[1:])


# ---------------------------------------------------------------------------------------
# The batched fields are those of meanfield.model.particles.

@pytest.mark.parametrize("name", list(MODELS))
def test_batch_velocity_equals_the_single_system_velocity(name):
    model = MODELS[name]()
    x = E.uniform_ensemble(4, 7, 5, seed=1)
    if name == "Pre-LN":
        x = x * np.random.default_rng(2).uniform(0.5, 2.0, (4, 7, 1))
    v = E.batch_velocity(model, x)
    for s in range(4):
        assert np.max(np.abs(v[s] - model.velocity(x[s]))) < 1e-14


def test_usa_velocity_at_large_beta_agrees_to_the_conditioning():
    # At beta = 300 the USA attention vectors carry e^300 (no overflow: shifted sums).
    # The single-system velocity projects a_i, dominated by its self term: it holds the
    # velocity to round-off relative to |a_i|, and so does the batch.
    model = AttentionParticles(300.0, normalized=False)
    x = E.uniform_ensemble(2, 6, 3, seed=7)
    v = E.batch_velocity(model, x)
    for s in range(2):
        scale = np.linalg.norm(model.attention(x[s]), axis=-1)
        assert np.all(np.isfinite(v[s])) and np.min(scale) > 1e120
        assert np.max(np.linalg.norm(v[s] - model.velocity(x[s]), axis=-1) / scale) < 1e-14


@pytest.mark.parametrize("name", list(MODELS))
def test_gram_velocity_is_the_derivative_of_the_gram_matrix(name):
    # G' = V X^T + X V^T: the closed forms of the module docstring, checked to round-off.
    model = MODELS[name]()
    x = E.uniform_ensemble(3, 6, 9, seed=3)
    if name == "Pre-LN":
        x = x * np.random.default_rng(4).uniform(0.5, 2.0, (3, 6, 1))
    v = E.batch_velocity(model, x)
    direct = v @ x.swapaxes(1, 2) + x @ v.swapaxes(1, 2)
    g = x @ x.swapaxes(1, 2)
    assert np.max(np.abs(E.gram_velocity(model, g) - direct)) < 1e-14 * max(
        1.0, np.max(np.abs(direct)))


# ---------------------------------------------------------------------------------------
# Batch against single-system runs; per-system seeds.

@pytest.mark.parametrize("name", list(MODELS))
def test_fixed_step_batch_equals_single_system_simulate(name):
    model = MODELS[name]()
    x0 = E.uniform_ensemble(3, 5, 4, seed=5)
    run = E.simulate_ensemble(model, x0, [0.5, 1.0], dt=0.05)
    for s in range(3):
        single = simulate(model, x0[s], [0.5, 1.0], dt=0.05)
        assert row_distance(run.states[:, s], single.positions) < 1e-13
    assert np.all(run.steps == 20)


def test_adaptive_batch_agrees_with_adaptive_simulate_within_the_tolerance():
    # Different error norms (rms rows vs max entry), so different steps: both are within
    # their tolerance-controlled error of DOP853 at 1e-13, hence of each other.
    model, tol = MODELS["SA"](), 1e-10
    x0 = E.uniform_ensemble(2, 6, 3, seed=6)
    run = E.simulate_ensemble(model, x0, [2.0], tolerance=tol)
    for s in range(2):
        single = simulate(model, x0[s], [2.0], tolerance=tol)
        ref = solve_ivp(lambda t, y: model.velocity(y.reshape(6, 3)).ravel(), (0, 2),
                        x0[s].ravel(), method="DOP853", rtol=1e-13, atol=1e-13).y[:, -1]
        ref = ref.reshape(6, 3)
        e_batch = row_distance(run.states[-1, s], ref)
        e_single = row_distance(single.positions[-1], ref)
        assert e_batch < 4 * run.steps[s] * tol and e_single < 1e-8
        assert row_distance(run.states[-1, s], single.positions[-1]) < 1e-8


def test_noise_batch_equals_simulate_with_the_system_seed_and_splits_freely():
    model = MODELS["SA"]()
    x0 = E.uniform_ensemble(4, 5, 3, seed=8)
    kw = {"kappa": 5.0, "dt": 0.05, "seed": 123}
    whole = E.simulate_ensemble(model, x0, [0.3, 0.6], **kw)
    for s in range(4):
        single = simulate(model, x0[s], [0.3, 0.6], kappa=5.0, dt=0.05,
                          seed=E.system_rng(123, s))
        assert row_distance(whole.states[:, s], single.positions) < 1e-13
    halves = [E.simulate_ensemble(model, x0[a:b], [0.3, 0.6], first=a, **kw)
              for a, b in ((0, 2), (2, 4))]
    assert row_distance(np.concatenate([h.states for h in halves], axis=1),
                        whole.states) < 1e-14
    # The noise moves the systems (a different seed gives other paths).
    other = E.simulate_ensemble(model, x0, [0.3, 0.6], kappa=5.0, dt=0.05, seed=124)
    assert row_distance(other.states[-1], whole.states[-1]) > 1e-2


def test_adaptive_runs_split_freely():
    model = MODELS["USA"]()
    x0 = E.uniform_ensemble(5, 6, 4, seed=9)
    whole = E.simulate_ensemble(model, x0, [1.0, 2.0], tolerance=1e-9)
    parts = [E.simulate_ensemble(model, x0[a:b], [1.0, 2.0], tolerance=1e-9)
             for a, b in ((0, 3), (3, 5))]
    assert np.array_equal(np.concatenate([p.steps for p in parts]), whole.steps)
    assert row_distance(np.concatenate([p.states for p in parts], axis=1),
                        whole.states) < 1e-14


def test_initial_ensembles_do_not_depend_on_the_split():
    a = E.uniform_ensemble(5, 4, 6, seed=3)
    b = np.concatenate([E.uniform_ensemble(2, 4, 6, seed=3),
                        E.uniform_ensemble(3, 4, 6, seed=3, first=2)])
    assert np.array_equal(a, b)
    c = E.uniform_span(5, 4, 6, seed=3)
    d = np.concatenate([E.uniform_span(2, 4, 6, seed=3),
                        E.uniform_span(3, 4, 6, seed=3, first=2)])
    assert np.array_equal(c, d)


# ---------------------------------------------------------------------------------------
# The span reduction (acceptance 1 of issue 12).

_REFERENCES: dict = {}


def reference(name, d, x0, t):
    """DOP853 at 1e-13 on the full d-dimensional tokens, single-system field."""
    key = (name, d)
    if key not in _REFERENCES:
        model = MODELS[name]()
        n = x0.shape[1]
        _REFERENCES[key] = np.stack([
            solve_ivp(lambda _, y: model.velocity(y.reshape(n, d)).ravel(), (0, t),
                      x.ravel(), method="DOP853", rtol=1e-13, atol=1e-13).y[:, -1]
            .reshape(n, d) for x in x0])
    return _REFERENCES[key]


@pytest.mark.parametrize("d", [64, 1024])
@pytest.mark.parametrize("name", ["SA", "USA", "Pre-LN"])
def test_reduced_and_full_runs_converge_together_adaptive(name, d):
    # n = 8 tokens, 2 systems, t = 2. Reduced and full take the same steps (the error
    # norm is rotation invariant) and agree to round-off at every tolerance; both
    # converge to the DOP853 reference, within 4 x steps x tol (the errors per step add
    # up), below 1e-8 at the tightest tolerance.
    model, t = MODELS[name](), 2.0
    x0 = E.uniform_ensemble(2, 8, d, seed=4)
    if name == "Pre-LN":
        x0 = x0 * np.random.default_rng(5).uniform(0.5, 2.0, (2, 8, 1))
    ref = reference(name, d, x0, t)
    errors = []
    for tol in (1e-5, 1e-7, 1e-9, 1e-11):
        full = E.simulate_ensemble(model, x0, [t], tolerance=tol)
        red = E.simulate_ensemble(model, x0, [t], tolerance=tol, reduce=True)
        assert red.states.shape[-1] == 8 and red.frame.shape == (2, 8, d)
        assert np.array_equal(full.steps, red.steps)
        assert row_distance(full.positions(), red.positions()) < 1e-13
        err = row_distance(red.positions(-1), ref)
        assert err < 4 * red.steps.max() * tol, (tol, err)
        errors.append(err)
    assert np.all(orders(errors) > 3), errors   # at least x 10 per x 100 in tolerance
    assert errors[-1] < 1e-8


@pytest.mark.parametrize("d", [64, 1024])
@pytest.mark.parametrize("name", ["SA", "USA", "Pre-LN"])
def test_reduced_and_full_runs_converge_together_fixed_step(name, d):
    model, t = MODELS[name](), 2.0
    x0 = E.uniform_ensemble(2, 8, d, seed=4)
    if name == "Pre-LN":
        x0 = x0 * np.random.default_rng(5).uniform(0.5, 2.0, (2, 8, 1))
    ref = reference(name, d, x0, t)
    errors = []
    for dt in (0.2, 0.1, 0.05, 0.025, 0.0125):
        full = E.simulate_ensemble(model, x0, [t], dt=dt)
        red = E.simulate_ensemble(model, x0, [t], dt=dt, reduce=True)
        assert row_distance(full.positions(), red.positions()) < 1e-13
        errors.append(row_distance(red.positions(-1), ref))
    assert errors[-1] < 1e-8
    # RK4: order 4 (the last two refinements within 0.3; the first ones above 3.7).
    assert np.all(np.abs(orders(errors)[-2:] - 4) < 0.3), orders(errors)
    assert np.all(orders(errors) > 3.7), orders(errors)


def test_reduced_hardmax_equals_full_hardmax():
    # The hardmax field is discontinuous (no convergence order); the reduced run still
    # takes the same steps through the same argmax sets.
    x0 = E.uniform_ensemble(3, 6, 64, seed=6)
    full = E.simulate_ensemble(MODELS["hardmax"](), x0, [0.5, 1.0], dt=0.05)
    red = E.simulate_ensemble(MODELS["hardmax"](), x0, [0.5, 1.0], dt=0.05, reduce=True)
    assert row_distance(full.positions(), red.positions()) < 1e-13


@pytest.mark.parametrize("name", ["SA", "USA", "Pre-LN"])
def test_reduced_equiangular_tokens_follow_the_equiangular_ode(name):
    # Analytic reference: equiangular tokens stay equiangular (docs/conventions.md).
    model, n, d, rho0, t = MODELS[name](), 8, 1024, 0.1, 3.0
    x0 = equiangular_tokens(n, d, rho0)[None]
    run = E.simulate_ensemble(model, x0, [1.0, t], tolerance=1e-12, reduce=True)
    y0 = [rho0] if model.on_sphere else [rho0, 1.0]
    ode = solve_ivp(model.equiangular_rhs(n), (0, t), y0, t_eval=[1.0, t],
                    method="DOP853", rtol=1e-13, atol=1e-14)
    g = run.gram()[1:, 0]
    r = np.sqrt(np.einsum("kii->ki", g))
    cos = g / r[:, :, None] / r[:, None, :]
    off = cos[:, ~np.eye(n, dtype=bool)]
    assert np.max(np.abs(off - ode.y[0][:, None])) < 1e-9
    if not model.on_sphere:
        assert np.max(np.abs(r - ode.y[1][:, None])) < 1e-9


@pytest.mark.parametrize("name", ["SA", "USA", "Pre-LN"])
def test_gram_ode_integrated_matches_the_full_tokens(name):
    # The closed Gram flow, integrated on its own (DOP853), against the full tokens.
    model, t, d = MODELS[name](), 2.0, 64
    x0 = E.uniform_ensemble(2, 8, d, seed=4)
    if name == "Pre-LN":
        x0 = x0 * np.random.default_rng(5).uniform(0.5, 2.0, (2, 8, 1))
    ref = reference(name, d, x0, t)
    for s in range(2):
        g0 = x0[s] @ x0[s].T
        sol = solve_ivp(lambda _, y: E.gram_velocity(model, y.reshape(1, 8, 8)).ravel(),
                        (0, t), g0.ravel(), method="DOP853", rtol=1e-13, atol=1e-13)
        assert np.max(np.abs(sol.y[:, -1].reshape(8, 8) - ref[s] @ ref[s].T)) < 1e-10


# ---------------------------------------------------------------------------------------
# Sampling the coefficients without d-dimensional tokens (Bartlett).

def test_bartlett_coefficients_have_the_law_of_uniform_tokens():
    # n = 5 tokens in d = 7 (small d - n + 1: the chi^2 degrees of freedom matter).
    # Exact law of <x_i, x_j>, i != j: (1 + c)/2 ~ Beta((d-1)/2, (d-1)/2); mean 0,
    # variance 1/d. 20000 systems (200000 pairs, correlated within a system): the margins
    # are 5 standard errors of independent samples (mean 5 sqrt(1/(d N)), variance
    # 5 x its standard error), and p > 1e-3 for the KS tests (fixed seeds).
    n, d, systems = 5, 7, 20000
    c = E.uniform_span(systems, n, d, seed=11)
    assert c.shape == (systems, n, n)
    assert np.max(np.abs(np.linalg.norm(c, axis=-1) - 1)) < 1e-15
    g = c @ c.swapaxes(1, 2)
    for i, j in ((0, 1), (3, 4), (0, 4)):   # the first and last rows' degrees of freedom
        x = g[:, i, j]
        assert abs(x.mean()) < 5 * math.sqrt(1 / d / systems)
        m4 = 3 / (d * (d + 2))   # E c^4 for uniform points
        assert abs(x.var() - 1 / d) < 5 * math.sqrt((m4 - 1 / d**2) / systems)
        law = stats.beta((d - 1) / 2, (d - 1) / 2, loc=-1, scale=2)
        assert stats.kstest(x, law.cdf).pvalue > 1e-3
    # Joint law: the Gram determinant against that of full d-dimensional tokens.
    full = E.uniform_ensemble(systems, n, d, seed=12)
    det_full = np.linalg.det(full @ full.swapaxes(1, 2))
    assert stats.ks_2samp(np.linalg.det(g), det_full).pvalue > 1e-3
    # The same test tells the right degrees of freedom from d + 3 (power check).
    wrong = E.uniform_span(systems, n, d + 3, seed=11)
    assert stats.ks_2samp(np.linalg.det(wrong @ wrong.swapaxes(1, 2)),
                          det_full).pvalue < 1e-6


def test_positions_from_bartlett_coefficients_and_haar_frames_are_uniform():
    # C0 Q with Q Haar: tokens i.i.d. uniform on S^{d-1}: coordinates have mean 0 and
    # variance 1/d, tokens unit; one coordinate's law is that of <x, e_1> (Beta above).
    n, d, systems = 4, 6, 5000
    c = E.uniform_span(systems, n, d, seed=1)
    q = E.haar_frames(systems, n, d, seed=1)
    assert np.max(np.abs(q @ q.swapaxes(1, 2) - np.eye(n))) < 1e-14
    x = c @ q
    assert np.max(np.abs(np.linalg.norm(x, axis=-1) - 1)) < 1e-14
    coord = x[:, :, 2].ravel()
    law = stats.beta((d - 1) / 2, (d - 1) / 2, loc=-1, scale=2)
    assert stats.kstest(coord, law.cdf).pvalue > 1e-3
    run = E.simulate_ensemble(MODELS["SA"](), c[:2], [0.5], dt=0.1, reduce=True,
                              frame=q[:2])
    full = E.simulate_ensemble(MODELS["SA"](), x[:2], [0.5], dt=0.1)
    assert row_distance(run.positions(), full.states) < 1e-14
    lazy = E.simulate_ensemble(MODELS["SA"](), c[:2], [0.5], dt=0.1, reduce=True,
                               frame=d, seed=1)
    assert isinstance(lazy.frame, int)   # no (B, n, d) array until asked
    assert np.array_equal(lazy.positions(), run.positions())


def test_dataset_has_a_system_dimension():
    x0 = E.uniform_ensemble(3, 4, 8, seed=2)
    run = E.simulate_ensemble(MODELS["SA"](), x0, [0.5, 1.0], dt=0.1, reduce=True,
                              first=10)
    ds = run.to_dataset()
    assert ds["position"].dims == ("time", "system", "particle", "component")
    assert ds["position"].shape == (3, 3, 4, 8)
    assert list(ds["system"].values) == [10, 11, 12]
    assert np.allclose(ds["position"].values[0], x0, atol=1e-15)
    coeff = run.to_dataset(positions=False)
    assert coeff["coefficient"].shape == (3, 3, 4, 4)


# ---------------------------------------------------------------------------------------
# Bad input: ConfigError before any work.

@pytest.fixture
def no_work(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("work started before the input was checked")
    monkeypatch.setattr(E, "batch_velocity", boom)


@pytest.mark.parametrize("shape, kw, key", [
    ((2, 1, 4), {}, "particles.n"),
    ((2, 3, 1), {}, "domain.dim"),
    ((3, 4), {}, "initial"),
    ((2, 3, 4, 1), {}, "initial"),
    ((2, 3, 8), {"kappa": 2.0, "dt": 0.1, "reduce": True}, "model.kappa"),
    ((2, 5, 3), {"reduce": True}, "domain.dim"),
    ((2, 3, 4), {"kappa": 2.0}, "time.dt"),
    ((2, 3, 4), {"dt": -0.1}, "time.dt"),
    ((2, 3, 4), {"kappa": 0.0, "dt": 0.1}, "model.kappa"),
    ((2, 3, 4), {"kappa": 2.0, "dt": 0.1, "seed": None}, "particles.seed"),
    ((2, 3, 3), {"reduce": True, "frame": np.zeros((2, 4, 8))}, "initial"),
    ((2, 3, 3), {"reduce": True, "frame": 2}, "domain.dim"),
    ((2, 3, 3), {"frame": 8}, "domain.dim"),
])
def test_bad_input_is_refused_before_any_work(no_work, shape, kw, key):
    x0 = np.ones(shape) / math.sqrt(shape[-1])
    with pytest.raises(ConfigError) as err:
        E.simulate_ensemble(AttentionParticles(1.0), x0, [1.0], **kw)
    assert err.value.key == key


def test_noise_with_the_reduction_says_why(no_work):
    x0 = E.uniform_ensemble(2, 3, 8, seed=0)
    with pytest.raises(ConfigError, match="deterministic runs only"):
        E.simulate_ensemble(AttentionParticles(1.0), x0, [1.0], kappa=2.0, dt=0.1,
                            reduce=True)
    with pytest.raises(ConfigError, match="kappa = inf"):
        E.simulate_ensemble(PreLNParticles(1.0), x0, [1.0], kappa=2.0, dt=0.1)


def test_bad_sizes_of_the_samplers_and_bad_save_times():
    for args in ((3, 1, 4), (3, 4, 1), (0, 3, 4), (3, 5, 4)):
        with pytest.raises(ConfigError):
            E.uniform_span(*args)
    with pytest.raises(ConfigError):
        E.uniform_ensemble(2, 1, 3)
    x0 = E.uniform_ensemble(2, 3, 4, seed=0)
    for times in ([], [0.0, 1.0], [1.0, 0.5], [math.nan]):
        with pytest.raises(ConfigError):
            E.simulate_ensemble(AttentionParticles(1.0), x0, times, dt=0.1)
    with pytest.raises(ConfigError):
        E.simulate_ensemble(AttentionParticles(1.0), 2 * x0, [1.0], dt=0.1)
    with pytest.raises(ConfigError):
        E.batch_velocity(object(), x0)


def test_non_finite_tokens_stop_the_run_with_advice():
    # USA at beta = 700 with dt = 1: the speeds carry e^700, the first step overflows.
    x0 = E.uniform_ensemble(3, 4, 3, seed=1)
    with pytest.raises(SolverError, match="lower time.dt"):
        E.simulate_ensemble(AttentionParticles(700.0, normalized=False), x0, [1.0], dt=1.0)
