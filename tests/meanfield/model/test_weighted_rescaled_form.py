"""``RescaledForm`` (e^{t(V - cI)} of the rescaled flow, V decomposed once, stage times
cached) against scipy's expm at each time and against the flow that calls expm at every
stage (what the model did before), and against closed forms where E is known exactly."""
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.linalg import expm

from meanfield.model import weighted_attention as wa
from meanfield.model.particles import simulate
from meanfield.model.weighted_attention import (
    Head, RescaledForm, rescaled_attention, rescaled_velocity)
from meanfield.model.weighted_particles import RescaledParticles
from meanfield.runs.threads import one_blas_thread

TIMES = (0.0, 0.3, 1.0, 4.0, 12.0)


def similar(rng, core):
    """``S core S^{-1}`` with a random S of moderate condition (a non-normal matrix with
    the eigenvalues of ``core``)."""
    d = core.shape[0]
    s = np.eye(d) + 0.3 * rng.standard_normal((d, d))
    return s @ core @ np.linalg.inv(s)


def values():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3))
    rotation = np.array([[0.2, -1.1], [1.1, 0.2]])  # eigenvalues 0.2 +- 1.1i (normal)
    return {
        "symmetric": (a + a.T) / 2,                       # eigh, P orthogonal
        "random": rng.standard_normal((3, 3)),            # eig, real or complex pairs
        "rotation": rotation,                              # complex pair, normal
        "rotation, non-normal": similar(rng, rotation),    # complex pair, cond(P) > 1
        "hyperplanes": similar(rng, np.diag([1.35, -0.07])),
    }


@pytest.mark.parametrize("name", list(values()))
def test_the_eigen_path_is_expm_to_round_off(name):
    v = values()[name]
    d = v.shape[0]
    rng = np.random.default_rng(1)
    head = Head(rng.standard_normal((d, d)), rng.standard_normal((d, d)), v)
    form, reference = RescaledForm(head), RescaledForm(head, method="expm")
    assert form.method == "eigen" and reference.method == "expm"
    c = float(np.max(np.linalg.eigvals(v).real))  # the abscissa, computed independently
    assert abs(form.abscissa - c) <= 1e-14 * max(1.0, abs(c))
    for t in TIMES:
        exact = expm(t * (v - c * np.eye(d)))
        e = form.exponential(t)
        assert e.dtype == float
        assert np.linalg.norm(e - exact) <= 1e-13 * np.linalg.norm(exact), (name, t)
        (b, s), (b_ref, s_ref) = form(t), reference(t)
        assert np.linalg.norm(b - b_ref) <= 1e-13 * np.linalg.norm(b_ref), (name, t)
        assert abs(s - s_ref) <= 1e-14 * max(1.0, abs(s_ref))


def test_a_defective_value_matrix_takes_expm_and_eigen_is_refused():
    # a Jordan block: e^{t(V - I)} = [[1, t], [0, 1]]
    v = np.array([[1.0, 1.0], [0.0, 1.0]])
    head = Head(np.eye(2), np.eye(2), v)
    form = RescaledForm(head)
    assert form.method == "expm"
    for t in TIMES:
        np.testing.assert_allclose(form.exponential(t), [[1.0, t], [0.0, 1.0]], rtol=1e-15,
                                   atol=1e-15)
    with pytest.raises(ValueError, match="condition number .* use 'expm' or 'auto'"):
        RescaledForm(head, method="eigen")


def test_identity_values_are_exact_on_both_paths():
    # V = I: c = 1 and E = I exactly, so the rescaled run is bit-identical to expm's
    head = Head.identity(3)
    for method in ("eigen", "expm"):
        form = RescaledForm(head, method=method)
        for t in TIMES:
            b, s = form(t)
            np.testing.assert_array_equal(b, np.eye(3))
            assert s == 2.0 * t


def test_bad_arguments_are_refused_naming_what_is_accepted():
    with pytest.raises(ValueError, match="must be one of auto, eigen, expm, got 'lu'"):
        RescaledForm(Head.identity(2), method="lu")
    with pytest.raises(ValueError, match="takes one head, got 2"):
        RescaledForm([Head.identity(2), Head.identity(2)])
    with pytest.raises(ValueError, match="dimension 2, got 3"):
        rescaled_velocity(np.ones((4, 3)), 1.0, RescaledForm(Head.identity(2)))


def test_repeated_stage_times_are_computed_once(monkeypatch):
    calls = []
    exponential = RescaledForm.exponential

    def counted(self, t):
        calls.append(t)
        return exponential(self, t)
    monkeypatch.setattr(RescaledForm, "exponential", counted)
    rng = np.random.default_rng(2)
    v = values()["hyperplanes"]
    model = RescaledParticles(Head(np.eye(2), np.eye(2), v))
    evaluations = []
    velocity = model.velocity
    model.velocity = lambda z, t: evaluations.append(t) or velocity(z, t)
    simulate(model, rng.standard_normal((10, 2)), [2.0], dt=None, tolerance=1e-10)
    # each step-doubling attempt: 12 stages at the times t, t + h/4, t + h/2, t + 3h/4,
    # t + h (the last possibly twice, rounded two ways)
    assert len(calls) <= 0.5 * len(evaluations), (len(calls), len(evaluations))
    # the cache holds at most CACHED_TIMES times
    assert len(model.form._cache) <= wa.CACHED_TIMES


@pytest.mark.parametrize("name", ["symmetric", "random", "rotation, non-normal"])
def test_a_run_agrees_with_the_flow_that_calls_expm_at_every_stage(name):
    v = values()[name]
    d = v.shape[0]
    rng = np.random.default_rng(3)
    head = Head(np.eye(d), rng.standard_normal((d, d)), v)
    z0 = rng.standard_normal((20, d))
    times = [0.5, 1.0, 2.0]  # 100 RK4 steps

    def per_stage(z, t):  # the previous model: a new expm at every evaluation
        return rescaled_velocity(z, t, RescaledForm(head, method="expm"))
    before = SimpleNamespace(on_sphere=False, euclidean=True, time_dependent=True,
                             name="expm per stage", velocity=per_stage)
    after = RescaledParticles(head)
    assert after.form.method == "eigen"
    with one_blas_thread():  # (expm per stage on BLAS threads beside other jobs: slow)
        ref = simulate(before, z0, times, dt=0.02)
    run = simulate(after, z0, times, dt=0.02)
    scale = np.max(np.abs(ref.positions))
    np.testing.assert_allclose(run.positions, ref.positions, rtol=0, atol=1e-12 * scale)
    # and the attention of the cached form is the per-call one's, to the round-off of
    # logits of size |L|: dP_ij <= P_ij |dL_i. - dL_ij| ~ 1e-13 |L| at most
    for t, z in zip(times, run.positions):
        expm_form = RescaledForm(head, "expm")
        b, s = expm_form(t)
        size = np.exp(s) * np.max(np.abs(z @ b @ z.T))
        np.testing.assert_allclose(after.attention(z, t)[0],
                                   rescaled_attention(z, t, expm_form), rtol=0,
                                   atol=1e-13 * max(1.0, size))
