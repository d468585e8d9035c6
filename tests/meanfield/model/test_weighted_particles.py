"""The token models with general weights (``meanfield.model.weighted_particles``) run by
``simulate``, against closed forms (uniform attention: ``x_i' = V mean(x)``), today's SA
model, the pure flow mapped by e^{tV}, the order of RK4 on a time-dependent field, and
the overflow of the pure flow (stopped, never garbage)."""
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.linalg import expm

from meanfield.errors import SolverError
from meanfield.model.particles import AttentionParticles, TokenStepper, simulate
from meanfield.model.weighted_attention import Head, attention_matrix
from meanfield.model.weighted_particles import RescaledParticles, WeightedParticles
from solvers.particles.direct import normalize_rows
from solvers.steppers import RetractedRK4, StepDoubling, integrate


def random_head(rng, d, scale=1.0):
    return Head(*(scale * rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3)))


def uniform_head(value):
    """Q = K = 0: every logit is 0, so the attention is uniform (P_ij = 1/n)."""
    d = value.shape[0]
    return Head(np.zeros((d, d)), np.zeros((d, d)), value)


# --- time-dependent fields in the RK4 stepper ------------------------------------------

def test_rk4_passes_the_stage_times_to_a_time_dependent_field():
    # x' = cos(t) x: x(t) = x0 e^{sin t}. Fixed steps from t0 = 0.3 (a wrong stage time
    # or a step started at 0 would show at once): error order 4 (measured 4.05, 4.03 for
    # 40 -> 80 -> 160 steps; 4.10 already from 20 steps).
    def field(x, t):
        return np.cos(t) * x

    x0, t0, t1 = np.array([[1.0, -2.0]]), 0.3, 2.3
    exact = x0 * np.exp(np.sin(t1) - np.sin(t0))
    errors = []
    for m in (40, 80, 160):
        rk4 = RetractedRK4(field, None, time_dependent=True)
        x, t, h = x0, t0, (t1 - t0) / m
        for _ in range(m):
            x, t = rk4.step(x, h, t), t + h
        errors.append(np.abs(x - exact).max())
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all((orders > 3.95) & (orders < 4.1)), orders
    # adaptive: step doubling through the driver, which passes t
    saved = {}
    rk4 = RetractedRK4(field, None, time_dependent=True)
    integrate(StepDoubling(rk4, 1e-10), x0, t0, np.array([t1]), 0.01,
              on_save=lambda t, x, h: saved.update(x=x))
    np.testing.assert_allclose(saved["x"], exact, rtol=1e-8)


# --- pure self-attention in R^d ---------------------------------------------------------

@pytest.mark.parametrize("dt", [None, 0.01])
def test_uniform_attention_moves_the_mean_by_e_tV_and_keeps_the_deviations(dt):
    # Q = K = 0: x_i' = V mean(x), so mean(t) = e^{tV} mean(0) and x_i - mean constant.
    rng = np.random.default_rng(0)
    value = rng.standard_normal((3, 3))
    x0 = rng.standard_normal((12, 3)) + 2.0
    model = WeightedParticles(uniform_head(value), beta=1.0, on_sphere=False)
    run = simulate(model, x0, [0.5, 1.0], dt=dt, tolerance=1e-10)
    m0 = x0.mean(axis=0)
    for t, x in zip(run.times, run.positions):
        exact = x0 - m0 + expm(t * value) @ m0
        np.testing.assert_allclose(x, exact, rtol=1e-9, atol=1e-9 * np.abs(exact).max())


def test_uniform_attention_with_value_c_identity_is_the_scalar_closed_form():
    # V = c I: x_i(t) = x_i(0) + (e^{ct} - 1) mean(x(0)) (the check of the pure run)
    rng = np.random.default_rng(1)
    c, x0 = -0.7, rng.standard_normal((20, 2))
    run = simulate(WeightedParticles(uniform_head(c * np.eye(2)), on_sphere=False), x0,
                   [1.0, 2.0], tolerance=1e-12)
    for t, x in zip(run.times, run.positions):
        np.testing.assert_allclose(x, x0 + np.expm1(c * t) * x0.mean(axis=0), rtol=0,
                                   atol=1e-10)


@pytest.mark.parametrize("rescaled", [False, True])
def test_tokens_on_a_line(rescaled):
    # d = 1, Q = K = 0, V = c: x_i(t) = x_i(0) + (e^{ct} - 1) m, z_i = e^{-ct} x_i
    c, x0 = 0.5, np.array([[-1.0], [0.0], [2.0]])
    head = uniform_head(np.array([[c]]))
    model = RescaledParticles(head) if rescaled else WeightedParticles(head, on_sphere=False)
    run = simulate(model, x0, [1.0, 2.0], tolerance=1e-12)
    # the error per step is at most tolerance * max|x| (measured in all: 1.0e-10 after 49
    # steps of x, max|x| = 2.6)
    bound = run.steps * 1e-12 * np.abs(run.positions).max()
    for t, x in zip(run.times, run.positions):
        exact = x0 + np.expm1(c * t) * x0.mean()
        np.testing.assert_allclose(x, np.exp(-c * t) * exact if rescaled else exact,
                                   rtol=0, atol=bound)


def test_pure_overflow_stops_with_advice_and_never_returns_garbage():
    rng = np.random.default_rng(2)
    model = WeightedParticles(Head.identity(2, value=40.0), on_sphere=False)
    x0 = rng.standard_normal((6, 2))
    for dt in (None, 0.01):  # |x| ~ e^{40 t} passes 1e150 near t = 8.6
        with pytest.raises(SolverError, match="rescaled = true") as info:
            simulate(model, x0, [5.0, 20.0], dt=dt)
        assert "time.t_final" in str(info.value)


def test_several_heads_and_a_feedforward_layer_reach_the_run():
    rng = np.random.default_rng(3)
    heads = [random_head(rng, 3) for _ in range(2)]
    w = rng.standard_normal((3, 3))
    model = WeightedParticles(heads, beta=0.5, feedforward=(w, "tanh"), on_sphere=False)
    x = rng.standard_normal((5, 3))
    a = sum(attention_matrix(x, h, 0.5) @ x @ h.value.T for h in heads)
    np.testing.assert_allclose(model.velocity(x), np.tanh(a) @ w.T, rtol=1e-13)
    assert model.attention(x).shape == (2, 5, 5)
    assert "2 heads" in model.name and "tanh" in model.name


# --- the sphere -------------------------------------------------------------------------

@pytest.mark.parametrize("dt", [None, 0.05])
def test_identity_weights_on_the_sphere_are_todays_sa(dt):
    x0 = normalize_rows(np.random.default_rng(4).standard_normal((30, 3)))
    times = [0.5, 1.0, 2.0]
    ours = simulate(WeightedParticles(Head.identity(3), beta=2.0), x0, times, dt=dt)
    sa = simulate(AttentionParticles(2.0, method="direct"), x0, times, dt=dt)
    np.testing.assert_allclose(ours.positions, sa.positions, rtol=0, atol=1e-13)


def test_causal_first_token_fixed_on_the_sphere_and_in_the_rescaled_flow():
    rng = np.random.default_rng(5)
    x0 = normalize_rows(rng.standard_normal((8, 3)))
    run = simulate(WeightedParticles(Head.identity(3), beta=1.0, mask="causal"), x0,
                   [1.0, 4.0])
    # P^perp_{x_1} x_1 = 0 exactly up to the rounding of the projection
    assert np.abs(run.positions[:, 0] - x0[0]).max() < 1e-15
    z0 = rng.standard_normal((8, 3))
    rescaled = simulate(RescaledParticles(random_head(rng, 3), mask="causal"), z0,
                        [1.0, 3.0])
    np.testing.assert_array_equal(rescaled.positions[:, 0], np.broadcast_to(z0[0], (3, 3)))


# --- the rescaled flow ------------------------------------------------------------------

def test_rescaled_flow_mapped_back_is_the_pure_flow():
    rng = np.random.default_rng(6)
    head = random_head(rng, 3)
    x0 = rng.standard_normal((10, 3))
    times = [0.5, 1.0, 1.5]
    pure = simulate(WeightedParticles(head, on_sphere=False), x0, times, tolerance=1e-11)
    model = RescaledParticles(head)
    rescaled = simulate(model, x0, times, tolerance=1e-11)
    for t, z, x in zip(rescaled.times, rescaled.positions, pure.positions):
        np.testing.assert_allclose(model.positions(z, t), x, rtol=1e-8,
                                   atol=1e-8 * np.abs(x).max())
        np.testing.assert_allclose(model.attention(z, t)[0],
                                   attention_matrix(model.positions(z, t), head), atol=1e-8)


def test_rescaled_rk4_is_fourth_order_in_time():
    # fixed steps h, h/2, h/4 against a run at h/32: errors fall by 2^4 (measured 4.08, 4.05)
    rng = np.random.default_rng(7)
    model = RescaledParticles(random_head(rng, 2, scale=2.0))
    z0 = rng.standard_normal((6, 2))
    ref = simulate(model, z0, [2.0], dt=0.2 / 32).positions[-1]
    errors = [np.abs(simulate(model, z0, [2.0], dt=dt).positions[-1] - ref).max()
              for dt in (0.2, 0.1, 0.05)]
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all((orders > 3.7) & (orders < 4.3)), orders


def test_rescaled_refusals():
    rng = np.random.default_rng(8)
    with pytest.raises(ValueError, match="one head"):
        RescaledParticles([random_head(rng, 2), random_head(rng, 2)])
    with pytest.raises(ValueError, match="noise"):
        TokenStepper(RescaledParticles(Head.identity(2)), kappa=1.0, dt=0.1)


def test_a_stage_that_overflows_is_a_solver_error_with_advice():
    """V = 1e300 I: the rescaled flow's speed |V| |z| overflows within the first step;
    the run stops with a SolverError saying what to change (it raised the ValueError of
    a bad argument from inside the field)."""
    z0 = np.random.default_rng(0).standard_normal((6, 2))
    head = Head(np.eye(2), np.eye(2), 1e300 * np.eye(2))
    with pytest.raises(SolverError, match="lower time.dt"), \
            np.errstate(over="ignore", invalid="ignore"):
        simulate(RescaledParticles(head), z0, [1.0], dt=None, tolerance=1e-8)
