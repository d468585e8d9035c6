"""Step doubling with a global error target and a continuous extension of its steps.

``GlobalStepDoubling`` controls the error of a one-step method of order p so that the
error of the solution at every time of a run of length ``span`` stays below ``tolerance``
(relative, in the caller's measure), whatever times the caller asks for:

- the estimate: step doubling, ``|u_{h/2} - u_h| / (2^p - 1)``, the error of the two half
  steps; the state kept is their Richardson extrapolation ``u_{h/2} + (u_{h/2} - u_h) /
  (2^p - 1)`` (local extrapolation), of order p + 1, so the estimate bounds the kept
  state's error with room to spare;
- the target: ``FLOOR x tolerance`` per step for steps shorter than ``FLOOR x span`` (a
  run of many steps), ``tolerance x h / span`` for longer ones (error per unit step: the
  few long steps of a loose tolerance are where the estimate is least reliable, and a
  per-step control there let an S^1 run at tolerance 1e-4 undershoot by 2.7e-4);
- ``dense(u, s, h)``: the state a time ``s`` after ``u`` inside an accepted step of ``h``
  from ``u``: one step of s when ``s <= h / 2^{p/(p+1)}`` (its error, ``(s/h)^{p+1}``
  times the big step's ``2^p`` times the estimate, is then at most the estimate), else
  two half steps: a saved value is as accurate as the steps, and asking for it changes
  no step.

The driver (``meanfield.runs.pde_steps``) steps freely and cuts a step short only at the
end of the run, so the steps taken do not depend on the saves. The calibration (the
error obtained against the tolerance asked, over S^1 and S^2, SA and USA) is in
docs/schemes.md §2.6.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

# The smallest relative error a step is asked for: two solutions of a step differ by
# round-off (a few hundred eps through the transforms) however small it is, so a target
# below this would shrink the step without end near the end of a run (tolerance 1e-13,
# h / span 1e-3).
ROUNDOFF = 1e-14
SHARE = 1.0  # the share of the tolerance the targets are set from
# Steps shorter than this fraction of the span are held to FLOOR x tolerance each (the
# runs of many steps), longer ones to tolerance x h / span (error per unit step: the few
# long steps of a loose tolerance, whose estimates are least reliable)
FLOOR = 0.1
LADDER = 8  # steps per factor 2


def ladder(h: float) -> float:
    """``h`` rounded down to a power of ``2^(1/LADDER)``: the controller's steps then
    repeat, and an exponential integrator reuses the coefficients it computed for a step
    (their contour integrals cost as much as a step on the sphere) at most 9 % smaller."""
    if not (h > 0 and math.isfinite(h)):
        return h
    return 2.0 ** (math.floor(math.log2(h) * LADDER) / LADDER)


def max_relative(diff: np.ndarray, u: np.ndarray, half: np.ndarray) -> float:
    """``max|diff| / max(max|u|, max|half|)``: the default relative error."""
    scale = max(float(np.max(np.abs(u))), float(np.max(np.abs(half))))
    return float(np.max(np.abs(diff))) / scale if scale > 0 else float(np.max(np.abs(diff)))


class GlobalStepDoubling:
    """Adaptive steps whose errors add up to ``tolerance`` over ``span`` (module
    docstring).

    Args:
        method: a one-step method with ``step(u, h)`` and ``order``.
        tolerance: the target of the global error, relative (``relative_error``).
        span: the length of the run the errors add up over (> 0).
        relative_error: ``(diff, u, half) -> float``, the size of the difference ``diff``
            of two solutions relative to the state (``u`` before the step, ``half`` after
            it); default ``max_relative``.
        h_max: the largest step.
    """

    def __init__(self, method: Any, tolerance: float, span: float,
                 relative_error: Callable[[np.ndarray, np.ndarray, np.ndarray], float]
                 | None = None, h_max: float = math.inf):
        if not span > 0:
            raise ValueError(f"span must be > 0, got {span!r}")
        self.method = method
        self.tolerance = float(tolerance)
        self.span = float(span)
        self.relative_error = relative_error or max_relative
        self.h_max = h_max
        self.rejected = 0

    time_dependent = False

    def attempt(self, u: np.ndarray, h: float) -> tuple[float, np.ndarray, float]:
        """One trial step of ``h`` from ``u``: ``(h or 0 if rejected, state, next h)``."""
        big = self.method.step(u, h)
        half = self.method.step(self.method.step(u, h / 2), h / 2)
        p = self.method.order
        frac = min(1.0, h / self.span)
        long_step = frac > FLOOR
        target = max(SHARE * self.tolerance * max(frac, FLOOR), ROUNDOFF)
        err = self.relative_error(half - big, u, half) / (2**p - 1) / target
        if not math.isfinite(err):
            # NaN from an unstable trial step: retry much smaller
            self.rejected += 1
            return 0.0, u, h / 10
        # error per unit step: err ~ h^(p+1) / h = h^p, hence the exponent 1/p
        # err ~ h^(p+1) against a fixed target, h^p per unit step
        factor = 0.9 * err ** (-1.0 / (p if long_step else p + 1)) if err > 0 else 5.0
        h_next = ladder(min(self.h_max, h * min(5.0, max(0.2, factor))))
        if err <= 1.0:
            # local extrapolation: the kept state is of order p + 1, its error well below
            # the estimate the step was accepted on
            return h, half + (half - big) / (2**p - 1), h_next
        self.rejected += 1
        return 0.0, u, h_next

    def dense(self, u: np.ndarray, s: float, h: float) -> np.ndarray:
        """The state ``s`` after ``u`` inside an accepted step of ``h`` from ``u``
        (``0 < s < h``; the driver saves a step that ends on the time as it is)."""
        p = self.method.order
        if s < h * 2.0 ** (-p / (p + 1)):
            return self.method.step(u, s)
        return self.method.step(self.method.step(u, s / 2), s / 2)
