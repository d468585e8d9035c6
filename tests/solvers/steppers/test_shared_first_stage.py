"""``GlobalStepDoubling`` shares the first RK4 stage of the steps from one state (the
big and first half step of a trial, and the continuous extension's steps from a step's
start): the same states bit for bit as without sharing, with fewer field evaluations."""
import numpy as np

from solvers.particles.direct import normalize_rows
from solvers.steppers.dense import FreeState, GlobalStepDoubling, advance_to, step_free
from solvers.steppers.sphere import RetractedRK4


class Unshared:
    """RetractedRK4 without ``first_stage``: every step evaluates its own k1."""

    order = 4

    def __init__(self, rk4):
        self.rk4, self.retract = rk4, rk4.retract

    def step(self, x, h, t=0.0):
        return self.rk4.step(x, h, t)


def _run(shared: bool):
    a = np.array([[0.0, 1.0, 0.3], [-1.0, 0.0, 0.2], [-0.3, -0.2, 0.0]])
    rk4 = RetractedRK4(lambda x: x @ a.T - np.sum(x * (x @ a.T), axis=1)[:, None] * x,
                       normalize_rows)
    stepper = GlobalStepDoubling(rk4 if shared else Unshared(rk4), 1e-5, 4.0)
    st = FreeState(normalize_rows(np.random.default_rng(2).standard_normal((6, 3))),
                   0.0, 0.05)
    saved = []
    for point in np.arange(1, 41) * 0.1:  # several saves inside each step
        st, x = advance_to(st, point, lambda s: step_free(stepper, s, 4.0, 1e-12, ""),
                           lambda s, at: stepper.dense(s.prev, at - s.prev_t, s.prev_h))
        saved.append(x)
    return np.array(saved), rk4.evaluations


def test_shared_first_stage_changes_no_bit_and_saves_evaluations():
    shared, fewer = _run(True)
    unshared, more = _run(False)
    np.testing.assert_array_equal(shared, unshared)
    assert fewer < more
