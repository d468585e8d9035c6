"""Steps not cut by saves (issue 32): an adaptive particle run takes the same steps
whatever its saves, its saves come from the step's continuous extension (retracted onto
the sphere), and the thread limit of a small weighted model is entered once per run."""
from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

import meanfield
from meanfield.model import particles as pm
from meanfield.runs import particles as pr
from meanfield.runs import threads as thread_policy

SA = {"domain": {"geometry": "sphere", "dim": 4}, "model": {"beta": 4.0},
      "initial": {"kind": "uniform"}, "particles": {"n": 12, "seed": 3},
      "time": {"t_final": 4.0, "tolerance": 1e-6}}
RESCALED = {"domain": {"geometry": "euclidean", "dim": 2},
            "initial": {"kind": "gaussian", "mean": [0.5, 0.0], "covariance": 1.0},
            "weights": {"query": {"kind": "gaussian", "seed": 1},
                        "key": {"kind": "gaussian", "seed": 2},
                        "value": {"kind": "symmetric", "eigenvalues": [1.0, 0.3], "seed": 3}},
            "time": {"t_final": 2.0, "tolerance": 1e-6},
            "particles": {"n": 10, "rescaled": True}}


# one thread: numba's parallel sums of a dozen tokens beside other jobs on a loaded
# machine took 8-18 s a run instead of 0.15 s (the results do not depend on threads)
ONE_THREAD = thread_policy.ThreadPolicy(1, thread_policy.machine_cores())


def run(cfg: dict, save_every: float):
    with ONE_THREAD.applied():
        return meanfield.particles({**cfg, "time": {**cfg["time"], "save_every": save_every}})


def reference(x0: np.ndarray, beta: float, times: np.ndarray) -> np.ndarray:
    """SA tokens at ``times`` by scipy's DOP853 at rtol 1e-12 (an independent method)."""
    model = pm.AttentionParticles(beta)
    shape = x0.shape
    with ONE_THREAD.applied():
        sol = solve_ivp(lambda t, y: model.velocity(y.reshape(shape)).ravel(), (0, times[-1]),
                        x0.ravel(), method="DOP853", rtol=1e-12, atol=1e-13, t_eval=times)
    return sol.y.T.reshape(len(times), *shape)


def test_saves_cut_no_step_and_stay_within_the_tolerance():
    one, many = run(SA, 4.0), run(SA, 0.1)
    # the steps do not depend on the saves (before: at least one step per save, 40+)
    assert one.attrs["steps"] == many.attrs["steps"] < 40
    assert "steps not cut by saves" in many.attrs["integrator"]
    # the same steps: the final tokens bit for bit
    np.testing.assert_array_equal(one.position.values[-1], many.position.values[-1])
    x = many.position.values
    # interpolated tokens are retracted onto the sphere (unit vectors to round-off)
    np.testing.assert_allclose(np.linalg.norm(x, axis=-1), 1.0, rtol=0, atol=1e-14)
    # every save within the tolerance of an independent reference (measured: 6.8e-8;
    # tolerance 1e-6, a global error target relative to max|x| = 1)
    exact = reference(x[0], SA["model"]["beta"], many.time.values)
    assert np.max(np.abs(x - exact)) < 1e-6


def test_rescaled_saves_cut_no_step():
    one, many = run(RESCALED, 2.0), run(RESCALED, 0.1)
    assert one.attrs["steps"] == many.attrs["steps"] < 20
    np.testing.assert_array_equal(one.position.values[-1], many.position.values[-1])
    # the interpolated saves against a much finer run of the same scheme (tolerance
    # 1e-11 with saves at the same times, a convergent reference; measured 2.3e-8)
    fine = run({**RESCALED, "time": {**RESCALED["time"], "tolerance": 1e-11}}, 0.1)
    scale = np.max(np.abs(fine.position.values))
    assert np.max(np.abs(many.position.values - fine.position.values)) < 1e-6 * scale


def test_fixed_dt_and_noise_runs_land_on_the_saves():
    fixed = {**SA, "time": {"t_final": 1.0, "dt": 0.05}}
    assert run(fixed, 0.1).attrs["steps"] == 20
    noisy = {**fixed, "model": {"beta": 4.0, "kappa": 50.0}}
    a, b = run(noisy, 0.1), run(noisy, 0.1)  # the same seed: the same path
    np.testing.assert_array_equal(a.position.values, b.position.values)


def test_blas_limit_is_entered_once_per_run(monkeypatch):
    entered = []
    real = thread_policy.one_blas_thread
    monkeypatch.setattr(thread_policy, "one_blas_thread",
                        lambda: entered.append(1) or real())
    ds = run({**RESCALED, "time": {**RESCALED["time"], "dt": 0.05}}, 0.1)
    assert ds.sizes["time"] == 21 and len(entered) == 1
    assert pr.SMALL_ATTENTION >= 10 * 10 * 2  # (the case is a small weighted model)
