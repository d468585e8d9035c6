"""Orders of the time steppers, measured by convergence studies."""
from __future__ import annotations

import numpy as np

from meanfield import evolve
from solvers.steppers import ETDRK4, SSPRK3, StepDoubling, integrate

LAM = np.array([-0.5, -5.0, -50.0])  # stiff diagonal part


def bernoulli_exact(t, u0):
    """u' = lam u + u^2: u = lam u0 e^{lam t} / (lam + u0 (1 - e^{lam t}))."""
    e = np.exp(LAM * t)
    return LAM * u0 * e / (LAM + u0 * (1 - e))


def observed_orders(errors):
    e = np.asarray(errors)
    return np.log2(e[:-1] / e[1:])


def test_etdrk4_is_fourth_order_on_a_stiff_problem():
    u0 = np.array([0.3, 0.2, 0.1])
    scheme = ETDRK4(LAM, lambda u: u**2)
    errors = []
    for steps in (8, 16, 32, 64):
        h, u = 1.0 / steps, u0.copy()
        for _ in range(steps):
            u = scheme.step(u, h)
        errors.append(np.abs(u - bernoulli_exact(1.0, u0)).max())
    orders = observed_orders(errors)
    assert np.all(orders > 3.8) and np.all(orders < 4.4), orders


def test_etdrk4_without_linear_part_is_rk4():
    scheme = ETDRK4(np.zeros(1), lambda u: -u**2)
    errors = []
    for steps in (10, 20, 40):
        u = np.array([1.0])
        for _ in range(steps):
            u = scheme.step(u, 1.0 / steps)
        errors.append(abs(u[0] - 0.5))
    assert np.all(np.abs(observed_orders(errors) - 4) < 0.2)


def test_ssprk3_is_third_order():
    scheme = SSPRK3(lambda u: -u**2)
    errors = []
    for steps in (10, 20, 40, 80):
        u = np.array([1.0])
        for _ in range(steps):
            u = scheme.step(u, 1.0 / steps)
        errors.append(abs(u[0] - 0.5))
    assert np.all(np.abs(observed_orders(errors) - 3) < 0.15)


def test_step_doubling_meets_its_tolerance_and_lands_on_save_times():
    u0 = np.array([0.3, 0.2, 0.1])
    saved = {}
    for tol in (1e-6, 1e-9):
        stepper = StepDoubling(ETDRK4(LAM, lambda u: u**2), tol)
        out = []
        res = integrate(stepper, u0, 0.0, np.array([0.5, 1.0]), 1e-3,
                        on_save=lambda t, u, h, out=out: out.append((t, u.copy())))
        assert [t for t, _ in out] == [0.5, 1.0] and res.status == 0
        saved[tol] = np.abs(out[-1][1] - bernoulli_exact(1.0, u0)).max()
    assert saved[1e-6] < 1e-5 and saved[1e-9] < 1e-8 and saved[1e-9] < saved[1e-6]


def test_spectral_solver_is_fourth_order_in_time():
    def final(dt):
        return evolve({"model": {"beta": 2.0, "kappa": 10.0},
                       "discretization": {"resolution": 64},
                       "initial": {"kind": "von_mises", "concentration": 2.0},
                       "time": {"t_final": 2.0, "save_every": 2.0, "dt": dt}}
                      ).density.values[-1]
    ref = final(0.005)
    errors = [np.abs(final(dt) - ref).max() for dt in (0.2, 0.1, 0.05)]
    orders = observed_orders(errors)
    assert np.all(orders > 3.7), orders


def test_finite_volume_time_stepping_is_third_order():
    def final(dt):
        return evolve({"model": {"beta": 2.0},
                       "discretization": {"method": "finite-volume", "resolution": 64},
                       "initial": {"kind": "von_mises", "concentration": 1.0},
                       "time": {"t_final": 1.0, "save_every": 1.0, "dt": dt}}
                      ).density.values[-1]
    ref = final(0.0025)
    errors = [np.abs(final(dt) - ref).max() for dt in (0.04, 0.02, 0.01)]
    assert np.all(observed_orders(errors) > 2.7), observed_orders(errors)
