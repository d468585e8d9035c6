"""Integrators for a batch of independent systems stored as one array ``(B, n, m)``
(system, row, component), stepped together: the field is evaluated once per stage for the
whole batch (no model in here: it takes a vector field ``f(x) -> array`` that works on
any number of systems).

- ``BatchRK4``: classical RK4 with one step ``h[s]`` per system, then (optionally) the
  retraction ``x -> x/|x|`` row by row, as ``solvers.steppers.RetractedRK4`` (order 4).
- ``integrate_batch``: fixed steps (one ``dt`` for all, the last step of each interval
  clipped to land on the save time, as ``solvers.steppers.integrate``) or adaptive steps
  by step doubling **per system**: each system has its own time and step; the error of a
  trial step ``h`` is ``rms(x_{h/2,h/2} - x_h) / (2^4 - 1)``, relative to
  ``tolerance * max(rms(x), rms(x_new))`` with ``rms`` the root mean square of the rows'
  lengths, ``sqrt(mean_i |x_i|^2)`` (invariant under a rotation of R^m: a system and its
  image by an isometry take the same steps), and the step update of
  ``solvers.steppers.StepDoubling``. Per-system steps make a system's path independent
  of the other systems in the batch (a batch can be split anywhere).
- ``integrate_sde_batch``: ``solvers.steppers.GeodesicEulerMaruyama`` (strong order
  1/2, weak order 1; its maps act along the last axis, so it steps a batch as it is) on
  a batch, system ``s`` drawing its increments from its own generator ``rngs[s]`` in
  step order, so that its path is the single-system path of ``integrate_sde`` with that
  generator.

Dormand-Prince 5(4) with one step per system, for states of any array library:
``solvers.steppers.dormand_prince``.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from solvers.errors import StepSizeError
from solvers.particles.direct import normalize_rows
from solvers.steppers.sphere import GeodesicEulerMaruyama, RetractedRK4


def rms_rows(x: np.ndarray) -> np.ndarray:
    """``sqrt(mean_i |x_i|^2)`` per system of a ``(B, n, m)`` array: shape ``(B,)``."""
    return np.sqrt(np.einsum("bij,bij->b", x, x) / x.shape[1])


class BatchRK4(RetractedRK4):
    """Classical RK4 on a batch with a step per system, then a retraction: order 4.
    ``RetractedRK4``'s step (its maps act along the last axis), with ``h`` one number or
    one step per system.

    Args:
        field: ``f(x) -> dx/dt`` for ``x`` of shape ``(B', n, m)``, any ``B'``.
        retract: applied after each step (default ``normalize_rows``; ``None`` for
            systems in R^m).
    """

    def __init__(self, field: Callable[[np.ndarray], np.ndarray],
                 retract: Callable[[np.ndarray], np.ndarray] | None = normalize_rows):
        super().__init__(field, retract)

    def step(self, x: np.ndarray, h: float | np.ndarray) -> np.ndarray:
        """One step of ``h`` (a number, or an array with one step per system)."""
        return super().step(x, np.asarray(h, dtype=float).reshape((-1,) + (1,) * (x.ndim - 1)))


def _check_saves(t0: float, save_times: np.ndarray) -> np.ndarray:
    s = np.atleast_1d(np.asarray(save_times, dtype=float))
    if s.size == 0 or not np.all(np.isfinite(s)) or s[0] <= t0 or np.any(np.diff(s) <= 0):
        raise ValueError(f"save times must be finite, increasing and > t0 = {t0}")
    return s


def integrate_batch(method: BatchRK4, x0: np.ndarray, save_times: Sequence[float], *,
                    dt: float | None = None, tolerance: float = 1e-8, t0: float = 0.0,
                    h0: float = 0.01, h_min: float | None = None,
                    on_save: Callable[[float, np.ndarray], None] | None = None,
                    check: Callable[[np.ndarray, float], None] | None = None) -> dict:
    """Advance a batch through ``save_times`` (fixed ``dt``, or adaptive when None).

    Args:
        method: a ``BatchRK4`` (anything with ``step(x, h)`` and ``order``).
        x0: ``(B, n, m)`` initial states at ``t0``.
        save_times: increasing times > ``t0``.
        dt: fixed step for all systems; ``None``: step doubling per system (module doc).
        tolerance: error per adaptive step (module doc).
        h0: first adaptive step (cut to the first interval).
        h_min: an adaptive step below this raises ``StepSizeError`` (default
            ``1e-14 * (t_end - t0)``).
        on_save: ``on_save(t, x)`` at each save (``x`` the batch, not to be kept as is).
        check: ``check(x, t)`` after each step (fixed) or sweep of steps (adaptive).

    Returns:
        ``{"states": (k, B, n, m) at the save times, "steps": (B,) accepted steps,
        "rejected": (B,) rejected adaptive steps, "h_next": (B,)}``.
    """
    save_times = _check_saves(t0, save_times)
    x = np.array(x0, dtype=float)
    batch = x.shape[0]
    clock = _BatchClock(np.full(batch, float(t0)),
                        np.full(batch, float(dt) if dt is not None
                                else min(float(h0), float(save_times[0] - t0))))
    states = np.empty((save_times.size,) + x.shape)
    h_min = 1e-14 * float(save_times[-1] - t0) if h_min is None else h_min
    for k, t_save in enumerate(save_times):
        x = _advance_to(method, x, float(t_save), clock, dt, tolerance, h_min, check)
        states[k] = x
        if on_save is not None:
            on_save(float(t_save), x)
    return {"states": states, "steps": clock.steps, "rejected": clock.rejected,
            "h_next": clock.h.copy()}


class _BatchClock:
    """Each system's time ``t`` and next step ``h``, and its accepted and rejected steps."""

    def __init__(self, t: np.ndarray, h: np.ndarray):
        self.t, self.h = t, h
        self.steps = np.zeros(t.size, dtype=np.int64)
        self.rejected = np.zeros(t.size, dtype=np.int64)


def _advance_to(method: BatchRK4, x: np.ndarray, t_save: float, clock: _BatchClock,
                dt: float | None, tolerance: float, h_min: float,
                check: Callable[[np.ndarray, float], None] | None) -> np.ndarray:
    """Step the systems behind ``t_save`` until all are on it (a step that would reach
    it, to a relative ``1e-9``, or pass it is cut to land on it); returns the batch
    (``x`` itself, updated, or a new array)."""
    t, h = clock.t, clock.h
    while True:
        live = np.nonzero(t < t_save)[0]
        if live.size == 0:
            return x
        remaining = t_save - t[live]
        h_live = h[live]
        clip = h_live >= remaining * (1 - 1e-9)
        h_try = np.where(clip, remaining, h_live)
        whole = live.size == x.shape[0]
        xs = x if whole else x[live]
        new, accept, h_next = _trial_step(method, xs, h_try, h_live, dt, tolerance)
        acc = live[accept]
        if whole and accept.all():
            x = new
        else:
            x[acc] = new[accept]
        # Land exactly on the save time when the step was the remainder.
        t[acc] = np.where(clip[accept], t_save, t[acc] + h_try[accept])
        clock.steps[acc] += 1
        clock.rejected[live[~accept]] += 1
        # A step clipped to land on a save says nothing about the next one.
        keep = accept & clip & (h_try < h_live)
        h[live] = np.where(keep, h_live, h_next)
        if dt is None and np.any(h[live] < h_min):
            s = int(live[np.argmin(h[live])])
            raise StepSizeError(f"the time step of system {s} fell to {h[s]:.3g} at "
                                f"t = {t[s]:.6g}: loosen the tolerance")
        if check is not None:
            check(x, float(np.min(t)))


def _trial_step(method: BatchRK4, xs: np.ndarray, h_try: np.ndarray, h_live: np.ndarray,
                dt: float | None, tolerance: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A step of ``h_try`` per system: ``(new states, accepted, next steps)``; fixed
    (``dt``) steps are all accepted, adaptive ones judged by step doubling (module
    doc)."""
    if dt is not None:
        return method.step(xs, h_try), np.ones(xs.shape[0], dtype=bool), h_live
    p = method.order
    big = method.step(xs, h_try)
    half = method.step(method.step(xs, 0.5 * h_try), 0.5 * h_try)
    with np.errstate(invalid="ignore", over="ignore"):
        scale = tolerance * np.maximum(rms_rows(xs), rms_rows(half))
        err = rms_rows(half - big) / (2**p - 1) / scale
    finite = np.isfinite(err)
    accept = finite & (err <= 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(err > 0, 0.9 * err ** (-1.0 / (p + 1)), 5.0)
    h_next = np.where(finite, h_try * np.clip(factor, 0.2, 5.0), h_try / 10)
    return half, accept, h_next


def integrate_sde_batch(stepper: GeodesicEulerMaruyama, x0: np.ndarray,
                        save_times: Sequence[float], dt: float,
                        rngs: Sequence[np.random.Generator], *, t0: float = 0.0,
                        on_save: Callable[[float, np.ndarray], None] | None = None,
                        chunk_bytes: int = 1 << 26) -> dict:
    """Fixed steps through ``save_times`` (each interval cut into ``ceil(length/dt)``
    equal steps, as ``solvers.steppers.integrate_sde``); system ``s`` draws
    ``sqrt(h) * rngs[s].standard_normal((n, m))`` per step, in step order (drawn a block
    of steps at a time: the same numbers, as a generator fills arrays in order).
    ``on_save(t, x)`` at each save.

    Returns:
        ``{"states": (k, B, n, m), "steps": number of steps}``.
    """
    save_times = _check_saves(t0, save_times)
    x = np.array(x0, dtype=float)
    batch = x.shape[0]
    if len(rngs) != batch:
        raise ValueError(f"one generator per system needed: {len(rngs)} for {batch}")
    states = np.empty((save_times.size,) + x.shape)
    t, steps = float(t0), 0
    per_step = x[0].size
    block = max(1, chunk_bytes // (8 * per_step * batch))
    for k, t_save in enumerate(save_times):
        length = float(t_save) - t
        m = max(1, math.ceil(length / dt * (1 - 1e-12)))
        h = length / m
        done = 0
        while done < m:
            c = min(block, m - done)
            dw = np.stack([g.standard_normal((c,) + x.shape[1:]) for g in rngs], axis=1)
            dw *= math.sqrt(h)
            for j in range(c):
                x = stepper.step(x, h, dw[j])
            done += c
        steps += m
        t = float(t_save)
        states[k] = x
        if on_save is not None:
            on_save(t, x)
    return {"states": states, "steps": steps}
