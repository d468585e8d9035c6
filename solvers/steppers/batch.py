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
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import array_api_compat
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


# ---------------------------------------------------------------------------------------
# Dormand-Prince 5(4) with one step per system, dense output and systems leaving early.

# The Dormand-Prince pair ([DP80]; the coefficients of
# ``scipy.integrate.RK45``): order 5 with local extrapolation, embedded order 4, FSAL
# (6 field evaluations per step), and Shampine's continuous extension of order 4 (``P``).
DOPRI_C = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0])
DOPRI_A = (
    (),
    (1 / 5,),
    (3 / 40, 9 / 40),
    (44 / 45, -56 / 15, 32 / 9),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
)
DOPRI_B = np.array([35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84])
# the order-5 result minus the order-4 one, per stage (the seventh is f(y_new), FSAL)
DOPRI_E = np.array([71 / 57600, 0.0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525,
                    -1 / 40])
DOPRI_P = np.array([
    [1.0, -2.8535800653862835, 3.0717434641059005, -1.1270175653862835],
    [0.0, 0.0, 0.0, 0.0],
    [0.0, 4.023133379230305, -6.249321565289, 2.675424484351598],
    [0.0, -3.7324019615885042, 10.068970589843675, -5.685526961588504],
    [0.0, 2.5548038301849423, -6.399112377351017, 3.5219323679207912],
    [0.0, -1.3744241142186024, 3.272657752246729, -1.7672812570757455],
    [0.0, 1.3824689317781436, -3.764937863556287, 2.382468931778144],
])


def _combine(x, h, coefs, ks: list):
    """``x + h sum_j coefs[j] ks[j]`` (``h`` per system, shape (B, 1, 1))."""
    acc = None
    for c, k in zip(coefs, ks):
        if c == 0.0:
            continue
        acc = c * k if acc is None else acc + c * k
    return x + h * acc


def _host(a) -> np.ndarray:
    """A numpy copy (or view) of an array of any of the supported libraries."""
    if isinstance(a, np.ndarray):
        return a
    return np.asarray(array_api_compat.to_device(a, "cpu"))


def integrate_batch_dopri(field: Callable[[Any, np.ndarray], Any],
                          x0: Any, save_times: Sequence[float], *,
                          tolerance: float = 1e-6, observe: Callable | None = None,
                          leave: Callable | None = None, t0: float = 0.0,
                          h0: float = 0.05, h_max: float | None = None,
                          max_steps: int = 1_000_000) -> dict:
    """Dormand-Prince 5(4) on a batch, one adaptive step per system (order 5).

    Each system has its own time and step: a system's path does not depend on the rest of
    the batch (a batch can be split anywhere; ``field`` must act row by row on systems).
    The error of a step is ``h |sum_j E_j k_j|_rms`` (rms over the entries of the system's
    array) relative to ``tolerance`` (absolute: for states whose entries are O(1), as unit
    rows or Gram matrices); the step update is ``0.9 err^{-1/5}`` clipped to [0.2, 5]
    (at most 1 after a rejection). Steps are not cut at the save times: states there
    come from the continuous extension of order 4 (Shampine), so saves cost no steps.
    Nothing projects the states back to a manifold: for fields under which it is
    invariant and attracting (unit rows, unit Gram diagonals) it is kept to the
    tolerance.

    Array libraries: the states may be numpy arrays or arrays of another library of the
    array API (torch, CuPy; ``array_api_compat.array_namespace(x0)``), on its device: the
    stages, the dense output and the errors are computed there; the bookkeeping of the
    systems (times, steps, which are live, the system indices) stays in numpy on the
    host, and one ``(B,)`` vector of errors per step comes back to it. Besides the
    standard, the namespace must have ``einsum`` (numpy, torch and CuPy do) and integer
    array indexing (a getter and a setter along the first axis). On numpy the numbers
    are those of numpy's own functions (the namespace wraps them).

    Args:
        field: ``f(x, index) -> dx/dt`` for ``x`` (B', ...) the systems ``index`` (B',)
            of the batch (per-system parameters are looked up by ``index``, a numpy
            integer array on the host whatever the library of ``x``).
        x0: ``(B, ...)`` initial states at ``t0``; the dtype, library and device are kept
            (float32 allowed).
        save_times: increasing times >= ``t0``.
        tolerance: error per step (see above).
        observe: ``observe(k, index, x)`` with the states ``x`` of the systems ``index``
            at ``save_times[k]`` (each system once per save it reaches; a save at ``t0``
            is observed from ``x0``).
        leave: ``leave(x, index) -> mask`` after each accepted step: the systems whose
            mask is true stop there (they are not observed at later saves; the caller
            knows what their later saves hold, ``"left"`` gives their times); the mask
            may be an array of the states' library.
        h0: first step; h_max: largest step (default: the span of the saves).
        max_steps: steps (accepted or not) per system before ``StepSizeError``.

    Returns:
        ``{"steps": (B,) accepted, "rejected": (B,), "left": (B,) time a system left
        (``inf`` if it did not), "evaluations": field evaluations (row-weighted sum /
        B, i.e. per system on average)}``, numpy arrays.
    """
    s = np.atleast_1d(np.asarray(save_times, dtype=float))
    if s.size == 0 or not np.all(np.isfinite(s)) or s[0] < t0 or np.any(np.diff(s) <= 0):
        raise ValueError(f"save times must be finite, increasing and >= t0 = {t0}")
    run = _DopriBatch(field, x0, s, t0=t0, h0=h0, h_max=h_max, tolerance=tolerance,
                      observe=observe, leave=leave)
    live, k1 = run.start(t0)
    while live.size:
        live, k1 = run.step(live, k1, max_steps)
    return {"steps": run.steps, "rejected": run.rejected, "left": run.left,
            "evaluations": run.evaluations / max(run.batch, 1)}


class _DopriBatch:
    """The state of ``integrate_batch_dopri``: the states on their device, and on the
    host each system's time, step, counts, next save and leaving time."""

    def __init__(self, field: Callable[[Any, np.ndarray], Any], x0: Any, s: np.ndarray, *,
                 t0: float, h0: float, h_max: float | None, tolerance: float,
                 observe: Callable | None, leave: Callable | None):
        if not array_api_compat.is_array_api_obj(x0):
            x0 = np.asarray(x0)
        self.xp = array_api_compat.array_namespace(x0)
        self.x = self.xp.asarray(x0, copy=True)
        self.dev = array_api_compat.device(self.x)
        self.field, self.saves, self.tolerance = field, s, tolerance
        self.observe, self.leave = observe, leave
        self.batch = batch = self.x.shape[0]
        self.t_end = float(s[-1])
        self.h_max = self.t_end - t0 if h_max is None else float(h_max)
        self.t = np.full(batch, float(t0))
        self.h = np.full(batch, min(float(h0), self.h_max))
        self.steps = np.zeros(batch, dtype=np.int64)
        self.rejected = np.zeros(batch, dtype=np.int64)
        self.left = np.full(batch, math.inf)
        self.nxt = np.zeros(batch, dtype=np.int64)  # the next save each system has to reach
        self.shape1 = (-1,) + (1,) * (self.x.ndim - 1)
        self.ns = math.prod(self.x.shape[1:])
        self.evaluations = batch

    def on_dev(self, a: np.ndarray, dtype=None):
        """A host array on the states' device."""
        return self.xp.asarray(a, dtype=dtype, device=self.dev)

    def start(self, t0: float):
        """The live systems and their first stage, after observing a save at ``t0``."""
        index = np.arange(self.batch)
        if self.saves[0] == t0:
            if self.observe is not None:
                self.observe(0, index, self.x)
            self.nxt[:] = 1
        live = index[self.nxt < self.saves.size]
        return live, (self.field(self.x, index) if live.size else None)

    def step(self, live: np.ndarray, k1: Any, max_steps: int):
        """One step of each live system (``k1`` its first stage): the systems still live
        after it and their next first stage (FSAL)."""
        xp = self.xp
        xs = self.x[self.on_dev(live)] if live.size < self.batch else self.x
        ts, hs = self.t[live], self.h[live]
        hs = np.minimum(hs, self.t_end - ts)
        hb = self.on_dev(hs.reshape(self.shape1), self.x.dtype)
        ks, new = self._stages(xs, hb, k1, live)
        accept, h_new = self._control(xs, hb, ks, hs)
        self.rejected[live[~accept]] += 1
        acc = np.nonzero(accept)[0]
        new_acc = self._advance(live, acc, xs, ks, hs, ts, new) if acc.size else None
        self.h[live] = h_new
        # FSAL: the last stage is the next step's first for the accepted systems
        k1_next = xp.where(self.on_dev(accept.reshape(self.shape1)), ks[-1], ks[0])
        stay = self._staying(live, acc, new_acc)
        self._check_steps(live, max_steps)
        if stay.all():
            return live, k1_next
        return live[stay], k1_next[self.on_dev(np.nonzero(stay)[0])]

    def _stages(self, xs: Any, hb: Any, k1: Any, live: np.ndarray):
        """The seven stages (the last one at the order-5 result) and that result."""
        ks = [k1]  # (kept aligned with ``live``)
        for a in DOPRI_A[1:]:
            ks.append(self.field(_combine(xs, hb, a, ks), live))
        new = _combine(xs, hb, DOPRI_B, ks)
        ks.append(self.field(new, live))
        self.evaluations += 6 * live.size
        return ks, new

    def _control(self, xs: Any, hb: Any, ks: list, hs: np.ndarray):
        """Which steps pass the error test, and each system's next step."""
        xp = self.xp
        err_vec = _combine(xp.zeros_like(xs), hb, DOPRI_E, ks)
        with np.errstate(invalid="ignore", over="ignore"):
            flat = xp.reshape(err_vec, (err_vec.shape[0], -1))
            sq = _host(xp.einsum("bi,bi->b", flat, flat))
            err = np.sqrt(sq.astype(float) / self.ns) / self.tolerance
        finite = np.isfinite(err)
        accept = finite & (err <= 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = np.where(err > 0, 0.9 * err ** -0.2, 5.0)
        factor = np.where(accept, np.clip(factor, 0.2, 5.0), np.clip(factor, 0.2, 1.0))
        h_new = np.where(finite, hs * factor, hs / 10)
        return accept, np.minimum(h_new, self.h_max)

    def _advance(self, live: np.ndarray, acc: np.ndarray, xs: Any, ks: list,
                 hs: np.ndarray, ts: np.ndarray, new: Any):
        """Move the accepted systems (rows ``acc`` of ``live``) to their new time, after
        observing the saves they pass; returns their new states."""
        sys_acc = live[acc]
        t_old, t_new = ts[acc], ts[acc] + hs[acc]
        t_end = self.t_end
        t_new = np.where(t_end - t_new <= 1e-12 * max(1.0, abs(t_end)), t_end, t_new)
        if self.observe is not None:
            _observe_dense(self.observe, self.saves, self.nxt, sys_acc, acc, xs, ks, hs,
                           t_old, t_new, self.xp, self.on_dev)
        else:  # the saves passed (the loop ends when every system passed the last)
            self.nxt[sys_acc] = np.searchsorted(self.saves, t_new, side="right")
        new_acc = new[self.on_dev(acc)]
        self.x[self.on_dev(sys_acc)] = new_acc
        self.t[sys_acc] = t_new
        self.steps[sys_acc] += 1
        return new_acc

    def _staying(self, live: np.ndarray, acc: np.ndarray, new_acc: Any) -> np.ndarray:
        """Per live system: a save is still ahead and ``leave`` did not take it out."""
        stay = self.nxt[live] < self.saves.size
        if self.leave is not None and acc.size:
            out = np.zeros(live.size, dtype=bool)
            out[acc] = np.asarray(_host(self.leave(new_acc, live[acc])), dtype=bool)
            self.left[live[out]] = self.t[live[out]]
            stay &= ~out
        return stay

    def _check_steps(self, live: np.ndarray, max_steps: int) -> None:
        """``StepSizeError`` after too many steps or on a vanishing step."""
        if np.any(self.steps[live] + self.rejected[live] > max_steps):
            raise StepSizeError(f"more than {max_steps} steps for one system: loosen the "
                                "tolerance")
        h, t = self.h, self.t
        if np.any(h[live] < 1e-14 * max(1.0, self.t_end)):
            bad = int(live[np.argmin(h[live])])
            raise StepSizeError(f"the time step of system {bad} fell to {h[bad]:.3g} at "
                                f"t = {t[bad]:.6g}: loosen the tolerance")


def _observe_dense(observe, s, nxt, sys_acc, acc, xs, ks, hs, t_old, t_new, xp,
                   on_dev) -> None:
    """Observe the saves in ``(t_old, t_new]`` of the accepted systems from the
    continuous extension ``x + h sum_j k_j (P theta)_j`` (weights on the host, the sum on
    the states' device)."""
    while True:
        has = nxt[sys_acc] < s.size
        when = np.where(has, s[np.minimum(nxt[sys_acc], s.size - 1)], np.inf)
        due = np.nonzero(when <= t_new)[0]
        if due.size == 0:
            return
        rows = acc[due]
        rows_d = on_dev(rows)
        theta = (when[due] - t_old[due]) / hs[rows]
        # the weight of stage j: sum_q P[j, q] theta^{q+1} (elementwise: the same
        # numbers whatever the number of systems, unlike a BLAS product)
        w = np.zeros((theta.size, DOPRI_P.shape[0]))
        power = np.ones_like(theta)
        for q in range(DOPRI_P.shape[1]):
            power = power * theta
            w += power[:, None] * DOPRI_P[:, q]
        xv = xs[rows_d]
        shape1 = (-1,) + (1,) * (xv.ndim - 1)
        acc_sum = None
        for j, k in enumerate(ks):
            if not np.any(w[:, j]):
                continue
            term = on_dev(w[:, j].reshape(shape1), xv.dtype) * k[rows_d]
            acc_sum = term if acc_sum is None else acc_sum + term
        values = xv + on_dev(hs[rows].reshape(shape1), xv.dtype) * acc_sum
        # group by save index: each call sees one save time
        ks_idx = nxt[sys_acc[due]]
        for k in np.unique(ks_idx):
            pick = np.nonzero(ks_idx == k)[0]
            observe(int(k), sys_acc[due][pick], values[on_dev(pick)])
        nxt[sys_acc[due]] += 1
