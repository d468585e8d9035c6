"""``integrate``: drive any stepper with ``attempt(u, h)`` through save times, landing on
each; Ctrl-C ends the run with status -1 and keeps the saves."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvers.errors import StepSizeError


@dataclass
class IntegrationResult:
    """What ``integrate`` returns (in the spirit of scipy's ``OdeResult``).

    ``status``: 0 finished, 1 stopped by a terminal event, -1 interrupted (Ctrl-C).
    """

    t: list[float] = field(default_factory=list)
    status: int = 0
    message: str = "finished"
    steps: int = 0
    h_next: float = 0.0


def integrate(stepper: Any, u0: np.ndarray, t0: float, save_times: np.ndarray, h0: float,
              *, on_save: Callable[[float, np.ndarray, float], None],
              check: Callable[[np.ndarray, float], None] | None = None,
              on_step: Callable[[float], None] | None = None,
              on_state: Callable[[float, np.ndarray, float], None] | None = None,
              h_min: float | None = None,
              underflow_advice: str = "loosen the tolerance or check the problem"
              ) -> IntegrationResult:
    """Advance ``u0`` from ``t0`` through ``save_times`` (all > t0), landing on each.

    Args:
        stepper: object with ``attempt(u, h) -> (h_taken, u_new, h_next)``; one whose
            ``time_dependent`` is true is called as ``attempt(u, h, t)``.
        u0, t0: initial state and time.
        save_times: increasing times at which ``on_save(t, u, h_next)`` is called.
        h0: first step to try.
        check: called as ``check(u, t)`` after each accepted step; raises to stop.
        on_step: called with the new time after each accepted step (progress bars).
        on_state: called as ``on_state(t, u, h)`` after each accepted step, ``h`` the step
            to try next: ``integrate(stepper, u, t, later saves, h)`` continues exactly as
            this run (a checkpoint in the middle of an interval).
        h_min: the run stops with ``StepSizeError`` if the step falls below this.
        underflow_advice: what that error tells the user to change (the caller knows
            its settings).

    Returns:
        IntegrationResult. A KeyboardInterrupt is caught: the result then has status -1
        and holds the saves made so far.
    """
    res = IntegrationResult()
    u, t, h = u0, float(t0), float(h0)
    span = float(save_times[-1] - t0) if len(save_times) else 1.0
    h_min = h_min if h_min is not None else 1e-14 * span
    timed = getattr(stepper, "time_dependent", False)  # its field takes the time
    try:
        for t_save in save_times:
            t_save = float(t_save)
            while t < t_save:
                remaining = t_save - t
                # Take the remainder at once if the step would leave a sliver behind.
                h_try = remaining if h >= remaining * (1 - 1e-9) else h
                h_taken, u_new, h_next = stepper.attempt(u, h_try, t) if timed else \
                    stepper.attempt(u, h_try)
                if h_taken > 0:
                    u = u_new
                    t = t_save if h_taken == remaining else t + h_taken
                    res.steps += 1
                    if check is not None:
                        check(u, t)
                    if on_step is not None:
                        on_step(t)
                    # A step clipped to land on a save time says nothing about the next one.
                    if h_taken < h_try or h_try == h:
                        h = h_next
                    if on_state is not None:
                        on_state(t, u, h)
                else:
                    h = h_next
                if h < h_min:
                    raise StepSizeError(
                        f"the time step fell to {h:.3g} at t = {t:.6g}: {underflow_advice}")
            res.t.append(t_save)
            res.h_next = h
            on_save(t_save, u, h)
    except KeyboardInterrupt:
        res.status = -1
        res.message = f"interrupted at t = {t:.6g} (last save t = {res.t[-1] if res.t else t0:.6g})"
    return res
