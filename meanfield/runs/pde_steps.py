"""The stepping of an adaptive spectral PDE run: steps that do not depend on the saves, a
continuous extension for the saves, and the resolution raised as the solution needs.

- The steps are those of ``SpectralDiscretization.global_stepper`` (error per unit step,
  ``solvers.steppers.dense``) and are cut short only at the end of the run: a save at t
  changes no step. The state saved at t inside a step from ``prev`` (at ``prev_t``) is
  the stepper's ``dense(prev, t - prev_t, h)``; a step that ends on t is saved as it is.
  So the final state is the same, bit for bit, whatever the saves, and every saved state
  is as accurate as the steps.
- ``resolution = "auto"``: after each step the tail of the new state's spectrum is
  measured; past ``discretization.accuracy`` (or below the allowed undershoot) the step
  is taken again from its start, prolonged exactly to the resolution the tail asks for
  (``AdaptiveSpectral.resolution_needed``), on a solver rebuilt there. At the largest
  resolution the run stops with ``ResolutionLimit``.
- Every accepted step is checked (``solver.check``: NaN, and an undershoot beyond what
  the accuracy asked for allows, which stops a run of fixed resolution with the one line
  that names the resolution or tolerance that would pass).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from meanfield.discretizations.adaptive import REFINE_AT, REFINE_TO, ResolutionLimit
from solvers.errors import StepSizeError
from solvers.steppers.dense import advance_to


@dataclass
class Stepping:
    """Where an adaptive run is: ``u`` at time ``t``, the next step ``h``; the start of
    the last step, ``prev`` at ``prev_t`` (None before the first step), and its size
    ``prev_h``; ``resolution`` of ``u`` and ``prev``."""

    u: np.ndarray
    t: float
    h: float
    resolution: int
    prev: np.ndarray | None = None
    prev_t: float = 0.0
    prev_h: float = 0.0


class DenseRun:
    """The adaptive stepping of one spectral run (module docstring).

    Args:
        solver: the spectral discretization (replaced by a finer one as "auto" needs:
            read ``solver`` after each call).
        t_end: the end of the run (the only time a step is cut short for).
        h_min: the run stops with ``StepSizeError`` when the step falls below this.
        underflow_advice: what that error tells the user to change.
    """

    def __init__(self, solver, t_end: float, h_min: float, underflow_advice: str):
        self.solver = solver
        self.t_end = float(t_end)
        self.stepper = solver.global_stepper(self.t_end)
        self.h_min, self.advice = h_min, underflow_advice
        self.steps = 0
        self.refinements: list[tuple[float, int]] = []

    def start(self, u: np.ndarray, h: float) -> Stepping:
        return Stepping(u, 0.0, float(h), self.solver.resolution)

    def at_resolution(self, resolution: int) -> None:
        """Continue on a solver rebuilt at ``resolution`` (a checkpoint's)."""
        if resolution != self.solver.resolution:
            self.solver = self.solver.rebuilt(resolution)
            self.stepper = self.solver.global_stepper(self.t_end)

    def advance(self, st: Stepping, point: float, on_step: Callable[[float], None],
                on_state: Callable[[Stepping], None] | None = None
                ) -> tuple[Stepping, np.ndarray]:
        """Step on until ``t >= point``; the new stepping state and the state at
        ``point`` (coefficients at the solver's resolution, checked)."""
        return advance_to(st, point, self._step, self._interpolate, on_step, on_state)

    def _interpolate(self, st: Stepping, point: float) -> np.ndarray:
        """The checked state at ``point`` inside the last step (its ``dense``)."""
        value = self.stepper.dense(st.prev, point - st.prev_t, st.prev_h)
        self.solver.check(value, point)
        return value

    def _step(self, st: Stepping) -> Stepping:
        """One accepted step from ``st`` (retried after rejections and refinements)."""
        h = st.h
        while True:
            remaining = self.t_end - st.t
            h_try = remaining if h >= remaining * (1 - 1e-9) else h
            h_taken, u_new, h_next = self.stepper.attempt(st.u, h_try)
            if h_taken > 0 and self.solver.auto and self._refine(st, u_new):
                st = self._prolonged(st)  # the same step again, on the finer grid
                continue
            if h_taken > 0:
                t_new = self.t_end if h_taken == remaining else st.t + h_taken
                self.solver.check(u_new, t_new)
                self.steps += 1
                # a step cut short at the end says nothing about the next one
                h_keep = h_next if (h_taken < h_try or h_try == h) else h
                return Stepping(u_new, t_new, h_keep, self.solver.resolution, st.u, st.t,
                                h_taken)
            h = h_next
            if h < self.h_min:
                raise StepSizeError(
                    f"the time step fell to {h:.3g} at t = {st.t:.6g}: {self.advice}")

    def _refine(self, st: Stepping, u_new: np.ndarray) -> bool:
        """Whether ``u_new`` needs a finer grid; if so, switch the solver to it."""
        solver = self.solver
        rho = solver._pointwise(u_new)
        high = float(np.max(np.abs(rho)))
        negative = float(rho.min()) < -solver.allowed_undershoot * high
        if not negative and solver.tail(u_new) <= solver.accuracy * REFINE_AT:
            return False
        top = solver.max_resolution(solver.config)
        if solver.resolution >= top:
            raise ResolutionLimit(
                f"the spectral solution outgrew the largest resolution {top} at t = "
                f"{st.t:.6g} (the tail of its spectrum is {solver.tail(u_new):.2g} of the "
                f"max, more than discretization.accuracy = {solver.accuracy:g}): the "
                f"accuracy cannot be kept; loosen discretization.accuracy or "
                f"{solver.other_method}")
        needed = min(solver.resolution_needed(u_new, solver.accuracy * REFINE_TO), top)
        self.solver = solver.rebuilt(needed)
        self.stepper = self.solver.global_stepper(self.t_end)
        self.refinements.append((st.t, needed))
        self._old = solver
        return True

    def _prolonged(self, st: Stepping) -> Stepping:
        """``st`` on the new solver's grid (exact zero-padding)."""
        old, res = self._old, self.solver.resolution
        prev = None if st.prev is None else old.prolong(st.prev, res)
        return replace(st, u=old.prolong(st.u, res), prev=prev, resolution=res)
