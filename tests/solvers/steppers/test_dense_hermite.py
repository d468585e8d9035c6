"""``GlobalStepDoubling.dense`` with the step's end: the quintic Hermite interpolant of
the step's start, middle and end and their fields (saves cost no field evaluation)."""
import numpy as np
from scipy.linalg import expm

from solvers.particles.direct import normalize_rows
from solvers.steppers.dense import (FreeState, GlobalStepDoubling, advance_to,
                                    hermite_weights, step_free)
from solvers.steppers.sphere import RetractedRK4

# a rotation of S^2 (x' = A x, A skew): the exact flow is e^{tA} x
A = np.array([[0.0, 1.0, 0.3], [-1.0, 0.0, 0.2], [-0.3, -0.2, 0.0]])
X0 = normalize_rows(np.random.default_rng(2).standard_normal((6, 3)))


def exact(t: float) -> np.ndarray:
    return X0 @ expm(t * A).T


def test_weights_interpolate_the_nodes_and_reproduce_quintics():
    np.testing.assert_allclose(hermite_weights(0.0), [1, 0, 0, 0, 0, 0], atol=1e-14)
    np.testing.assert_allclose(hermite_weights(0.5), [0, 0, 1, 0, 0, 0], atol=1e-14)
    np.testing.assert_allclose(hermite_weights(1.0), [0, 0, 0, 0, 1, 0], atol=1e-13)
    c = np.random.default_rng(0).standard_normal(6)  # p(theta) = sum c_j theta^j

    def p(x):
        return sum(c[j] * x**j for j in range(6))

    def dp(x):
        return sum(j * c[j] * x ** (j - 1) for j in range(1, 6))

    data = np.array([p(0.0), dp(0.0), p(0.5), dp(0.5), p(1.0), dp(1.0)])
    for theta in (0.1, 0.37, 0.8):
        assert abs(hermite_weights(theta) @ data - p(theta)) < 1e-13


def _run(saves: np.ndarray, tolerance: float, span: float = 4.0):
    rk4 = RetractedRK4(lambda x: x @ A.T, normalize_rows)
    stepper = GlobalStepDoubling(rk4, tolerance, span)
    st = FreeState(X0, 0.0, 0.05)
    out = []
    for point in saves:
        st, x = advance_to(st, point, lambda s: step_free(stepper, s, span, 1e-12, ""),
                           lambda s, at: stepper.dense(s.prev, at - s.prev_t, s.prev_h,
                                                       end=s.u))
        out.append(x)
    return np.array(out), rk4.evaluations, stepper


def test_saves_within_the_tolerance_of_the_exact_flow_at_no_extra_evaluation():
    many = np.arange(1, 401) * 0.01  # many saves inside each step
    for tol in (1e-4, 1e-7):
        x, evals_many, _ = _run(many, tol)
        err = max(np.abs(xi - exact(t)).max() for xi, t in zip(x, many))
        assert err < tol  # the global target, relative to max|x| = 1
        np.testing.assert_allclose(np.linalg.norm(x, axis=-1), 1.0, atol=1e-15)
        _, evals_one, _ = _run(np.array([4.0]), tol)
        # the end's field is the next step's first stage: the saves add none (one
        # save at the end skips the last step's end field at most)
        assert evals_many <= evals_one + 1


def test_order_of_the_extension_inside_one_step():
    # one accepted step of h from X0, the value at 0.3 h against the exact flow: the
    # middle state's error is a half step's, O(h^5), the interpolation's O(h^6)
    errors = []
    for h in (0.4, 0.2, 0.1):
        rk4 = RetractedRK4(lambda x: x @ A.T, normalize_rows)
        stepper = GlobalStepDoubling(rk4, 1.0, 1.0)
        taken, end, _ = stepper.attempt(X0, h)
        assert taken == h
        errors.append(np.abs(stepper.dense(X0, 0.3 * h, h, end=end) - exact(0.3 * h)).max())
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(orders > 4.5), orders


def test_resumed_extension_is_the_same_bits():
    # a checkpoint keeps the step's start only: the middle state and the fields are
    # computed again, the same way, so a resumed run saves the same bits
    rk4 = RetractedRK4(lambda x: x @ A.T, normalize_rows)
    stepper = GlobalStepDoubling(rk4, 1e-6, 4.0)
    _, end, _ = stepper.attempt(X0, 0.3)
    cached = stepper.dense(X0, 0.1, 0.3, end=end)
    fresh = GlobalStepDoubling(RetractedRK4(lambda x: x @ A.T, normalize_rows), 1e-6, 4.0)
    np.testing.assert_array_equal(fresh.dense(X0.copy(), 0.1, 0.3, end=end.copy()), cached)
