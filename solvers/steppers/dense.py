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

The drivers step freely and cut a step short only at the end of the run, so the steps
taken do not depend on the saves: ``advance_to`` is the one loop of both (the PDE's,
``meanfield.runs.pde_steps``, and the tokens', ``meanfield.model.particles.TokenStepper``),
over a ``FreeState``-like state (``u, t, h, prev, prev_t, prev_h``), with
``step_free`` the particles' step (the PDE's adds its grid refinement). Methods whose
field takes the time (``time_dependent``) get it in ``attempt`` and ``dense``; a method
with a ``retract`` (``RetractedRK4`` on the sphere) has the extrapolated state retracted
too (the dense values come from its own retracted steps): saved tokens stay unit vectors. The calibration (the
error obtained against the tolerance asked, over S^1 and S^2, SA and USA) is in
docs/schemes.md §2.6.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers.errors import StepSizeError

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

    @property
    def time_dependent(self) -> bool:
        """Whether the method's field takes the time (then ``attempt`` and ``dense`` need
        it)."""
        return bool(getattr(self.method, "time_dependent", False))

    def _step(self, u: np.ndarray, h: float, t: float | None, k1: Any = None
              ) -> np.ndarray:
        more = {} if k1 is None else {"k1": k1}
        return self.method.step(u, h, t, **more) if self.time_dependent else \
            self.method.step(u, h, **more)

    def _first(self, u: np.ndarray, t: float | None) -> Any:
        """The first stage of the method's steps from ``u`` (a method with
        ``first_stage``: ``RetractedRK4``), shared by the steps from ``u``: the big and
        the first half step of ``attempt``, and ``dense``'s (one per save inside the step
        from ``u``); the same k1, so the same bits, one field evaluation fewer a step and
        a save (issue 32). Kept for the last ``u``, matched by identity, time and value
        (an array changed in place is not matched). None: the method has no stages."""
        first = getattr(self.method, "first_stage", None)
        if first is None:
            return None
        kept = getattr(self, "_kept_first", None)
        if kept is not None and kept[0] is u and kept[1] == t and \
                np.array_equal(u, kept[2]):
            return kept[3]
        k1 = first(u, t) if self.time_dependent else first(u)
        self._kept_first = (u, t, u.copy(), k1)
        return k1

    def attempt(self, u: np.ndarray, h: float, t: float | None = None
                ) -> tuple[float, np.ndarray, float]:
        """One trial step of ``h`` from ``u`` (at time ``t``: time-dependent methods
        only): ``(h or 0 if rejected, state, next h)``."""
        k1 = self._first(u, t)
        big = self._step(u, h, t, k1)
        t_mid = None if t is None else t + h / 2
        mid = self._step(u, h / 2, t, k1)
        k_mid = self._stage(mid, t_mid)  # (the second half step's k1, kept for dense)
        half = self._step(mid, h / 2, t_mid, k_mid)
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
            kept = half + (half - big) / (2**p - 1)
            retract = getattr(self.method, "retract", None)  # (the sphere's tokens)
            kept = kept if retract is None else retract(kept)
            if k1 is not None:  # the continuous extension's data (``dense``)
                self._last_step = (u, t, h, k1, mid, k_mid)
            return h, kept, h_next
        self.rejected += 1
        return 0.0, u, h_next

    def _stage(self, u: np.ndarray, t: float | None) -> Any:
        """``first_stage`` of ``u`` (uncached), or None for a method without stages."""
        first = getattr(self.method, "first_stage", None)
        if first is None:
            return None
        return first(u, t) if self.time_dependent else first(u)

    def _step_data(self, u: np.ndarray, h: float, t: float | None) -> tuple:
        """``(k1, mid, k_mid)`` of the accepted step of ``h`` from ``u``: kept by
        ``attempt``, else (a resumed run, whose checkpoint keeps ``u``) computed again
        the same way, so the same bits."""
        kept = getattr(self, "_last_step", None)
        if kept is not None and kept[0] is u and kept[1] == t and kept[2] == h:
            return kept[3:]
        k1 = self._stage(u, t)
        mid = self._step(u, h / 2, t, k1)
        return k1, mid, self._stage(mid, None if t is None else t + h / 2)

    def _extension(self, u: np.ndarray, h: float, t: float | None, end: np.ndarray,
                   end_t: float | None) -> np.ndarray:
        """The rows ``(h k1, mid - u, h k_mid, end - u, h k_end)`` (5, size) of the step
        of ``h`` from ``u`` to ``end``, whose products with the Hermite weights are the
        saves inside it: made at its first save, kept for the others (one product a
        save)."""
        kept = getattr(self, "_rows", None)
        if kept is not None and kept[0] is u and kept[1] is end and kept[2] == (h, t):
            return kept[3]
        k1, mid, k_mid = self._step_data(u, h, t)
        if end_t is None and t is not None:
            end_t = t + h
        k_end = self._first(end, end_t)
        rows = np.stack([h * k1, mid - u, h * k_mid, end - u, h * k_end]).reshape(5, -1)
        self._rows = (u, end, (h, t), rows)
        return rows

    def dense(self, u: np.ndarray, s: float, h: float, t: float | None = None,
              end: np.ndarray | None = None, end_t: float | None = None) -> np.ndarray:
        """The state ``s`` after ``u`` (at time ``t``: time-dependent methods) inside an
        accepted step of ``h`` from ``u`` (``0 < s < h``; the driver saves a step that
        ends on the time as it is).

        With ``end`` (the step's result, at ``end_t``) and a method with stages
        (``first_stage``: RK4 on tokens), the quintic Hermite interpolant of the step's
        three states, its start, its first half step's end and its result, and their
        fields (``hermite_weights``): no field evaluation but ``end``'s, which is the
        next step's first stage (``_first`` keeps it). Its error: the half step's, about
        half the step's estimate, plus ``h^6 |u^(6)| / 720`` times ``theta^2 (theta -
        1/2)^2 (theta - 1)^2 <= 2.2e-3`` (order 6 in the step). Else (the PDE's methods,
        whose stiff linear part a polynomial in time would not follow): one step of
        ``s`` when ``s <= h / 2^{p/(p+1)}`` (its error, ``(s/h)^{p+1}`` times the big
        step's ``2^p`` times the estimate, is then at most the estimate), else two half
        steps. Either way the value is as accurate as the steps, and asking for it
        changes no step."""
        p = self.method.order
        if end is not None and getattr(self.method, "first_stage", None) is not None:
            rows = self._extension(u, h, t, end, end_t)
            # (the weights of the values add up to 1: in differences from u, a token that
            # does not move stays where it is bit for bit)
            value = u + (hermite_weights(s / h)[1:] @ rows).reshape(u.shape)
            retract = getattr(self.method, "retract", None)
            return value if retract is None else retract(value)
        k1 = self._first(u, t)
        if s < h * 2.0 ** (-p / (p + 1)):
            return self._step(u, s, t, k1)
        return self._step(self._step(u, s / 2, t, k1), s / 2,
                          None if t is None else t + s / 2)


@functools.cache
def _hermite_inverse() -> np.ndarray:
    # p(theta) = sum_j c_j theta^j, j <= 5: the values at 0, 1/2, 1 and the derivatives
    # there; rows of the inverse map (y0, y0', ym, ym', y1, y1') to c
    rows = []
    for node in (0.0, 0.5, 1.0):
        rows.append([node**j for j in range(6)])
        rows.append([j * node ** (j - 1) if j else 0.0 for j in range(6)])
    return np.linalg.inv(np.array(rows))


def hermite_weights(theta: float) -> np.ndarray:
    """The weights of ``(y0, h f0, y_mid, h f_mid, y1, h f1)`` in the quintic Hermite
    interpolant at ``theta`` in [0, 1] of a step (nodes 0, 1/2, 1; exact for quintics)."""
    t2 = theta * theta
    return np.array([1.0, theta, t2, t2 * theta, t2 * t2, t2 * t2 * theta]) @ \
        _hermite_inverse()


@dataclass
class FreeState:
    """Where a freely stepping run is: ``u`` at time ``t``, the next step ``h``; the start
    of the last step, ``prev`` at ``prev_t`` (None before the first step), and its size
    ``prev_h`` (``meanfield.runs.pde_steps.Stepping`` adds the PDE's resolution)."""

    u: np.ndarray
    t: float
    h: float
    prev: np.ndarray | None = None
    prev_t: float = 0.0
    prev_h: float = 0.0


def advance_to(st: Any, point: float, step: Callable[[Any], Any],
               interpolate: Callable[[Any, float], np.ndarray],
               on_step: Callable[[float], None] | None = None,
               on_state: Callable[[Any], None] | None = None) -> tuple[Any, np.ndarray]:
    """Step on with ``step(st) -> st`` (one accepted step) until ``st.t >= point``; the
    new state and the value at ``point``: the state itself when a step ends on it,
    else ``interpolate(st, point)`` inside the last step (``dense`` from ``st.prev``).
    A save changes no step: the steps are those of the run whatever its saves."""
    while st.t < point:
        st = step(st)
        if on_step is not None:
            on_step(st.t)
        if on_state is not None:
            on_state(st)
    if point == st.t or st.prev is None:
        return st, st.u
    return st, interpolate(st, point)


def step_free(stepper: GlobalStepDoubling, st: FreeState, t_end: float, h_min: float,
              advice: str, check: Callable[[np.ndarray, float], None] | None = None
              ) -> FreeState:
    """One accepted step from ``st`` (after any rejections), cut short only to land on
    ``t_end``; ``check(u, t)`` on it. ``StepSizeError`` (with ``advice``) when the step
    falls below ``h_min``."""
    h, timed = st.h, stepper.time_dependent
    while True:
        remaining = t_end - st.t
        h_try = remaining if h >= remaining * (1 - 1e-9) else h
        h_taken, u_new, h_next = stepper.attempt(st.u, h_try, st.t) if timed else \
            stepper.attempt(st.u, h_try)
        if h_taken > 0:
            t_new = t_end if h_taken == remaining else st.t + h_taken
            if check is not None:
                check(u_new, t_new)
            # a step cut short at the end says nothing about the next one
            h_keep = h_next if (h_taken < h_try or h_try == h) else h
            return FreeState(u_new, t_new, h_keep, st.u, st.t, h_taken)
        h = h_next
        if h < h_min:
            raise StepSizeError(f"the time step fell to {h:.3g} at t = {st.t:.6g}: {advice}")
