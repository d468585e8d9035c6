"""Steps of a particle run not cut by its saves: ``FreeStepping``, the part of
``meanfield.model.particles.TokenStepper`` that steps freely.

Steps not cut by saves (``free``: adaptive, no noise, ``t_end`` given): the steps are
those of ``solvers.steppers.dense`` (``GlobalStepDoubling``: the error of the whole
run to ``t_end`` held to ``tolerance``, the PDE's control), cut short only at
``t_end``; ``advance_free`` gives the tokens at a save inside a step by the step's
continuous extension (``dense`` with the step's end: the quintic Hermite interpolant of
the step's start, middle and end and their velocities, all computed by the step, the
end's shared with the next step, so a save costs no velocity; retracted, so saved tokens
on the sphere are unit vectors to round-off), the loop of the PDE's
(``meanfield.runs.pde_steps``, whose saves are one or two steps from the step's start). The steps, and the final
tokens bit for bit, do not depend on the saves. Fixed ``dt`` and noise runs land
on each save (a save at a multiple of ``dt`` cuts no step; the noise increments are
drawn per step, so a seed's path stays the same).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from solvers.steppers.dense import FreeState, advance_to, step_free


class FreeStepping:
    """The free stepping of ``TokenStepper`` (which sets ``free``, ``t_end``, ``stepper``
    (a ``GlobalStepDoubling``), ``rk4``, ``check``, ``steps`` and ``first_step``)."""

    free = False
    free_state: FreeState | None = None

    def start_free(self, x: np.ndarray, t: float, h: float | None = None) -> FreeState:
        """The free stepping state of tokens ``x`` at ``t`` (``h``: the step to try first)."""
        return FreeState(x, float(t), self.first_step(t, self.t_end) if h is None else h)

    def advance_free(self, st: FreeState, point: float,
                     on_step: Callable[[float], None] | None = None,
                     h_min: float | None = None,
                     on_state: Callable[[FreeState], None] | None = None
                     ) -> tuple[FreeState, np.ndarray]:
        """Step on from ``st`` until its time reaches ``point`` (<= ``t_end``); the new
        state and the tokens at ``point`` (the state's own when a step ends on it, else
        the step's continuous extension, retracted on the sphere). ``on_state(st)``
        after each step: ``advance_free`` from it continues exactly (a checkpoint)."""
        h_min = 1e-14 * self.stepper.span if h_min is None else h_min
        advice = ("the tokens move too fast for time.tolerance; loosen it, or use a "
                  "fixed time.dt")

        def step(state: FreeState) -> FreeState:
            self.free_state = step_free(self.stepper, state, self.t_end, h_min, advice,
                                        self.check)
            self.steps += 1
            return self.free_state

        def interpolate(state: FreeState, at: float) -> np.ndarray:
            timed = self.rk4.time_dependent
            value = self.stepper.dense(state.prev, at - state.prev_t, state.prev_h,
                                       state.prev_t if timed else None, end=state.u,
                                       end_t=state.t if timed else None)
            self.check(value, at)
            return value

        self.free_state = st
        return advance_to(st, float(point), step, interpolate, on_step, on_state)
