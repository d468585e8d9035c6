"""Dormand-Prince 5(4) for a batch of independent systems ``(B, ...)``, one adaptive
step per system, saves from the continuous extension, and systems that may leave early
(``integrate_batch_dopri``); the states may be arrays of any library of the array API
(numpy, torch, CuPy) on their device, the bookkeeping stays in numpy on the host.

Order 5 (local extrapolation), embedded order 4 for the error, FSAL (6 field
evaluations per step), dense output of order 4 (Shampine). The tables ``DOPRI_*`` are
also those of the compiled phase-diagram engine of ``meanfield``.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import array_api_compat
import numpy as np

from solvers.errors import StepSizeError

__all__ = ["DOPRI_A", "DOPRI_B", "DOPRI_C", "DOPRI_E", "DOPRI_P", "integrate_batch_dopri",
           "to_host"]

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


def to_host(a) -> np.ndarray:
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
            sq = to_host(xp.einsum("bi,bi->b", flat, flat))
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
            out[acc] = np.asarray(to_host(self.leave(new_acc, live[acc])), dtype=bool)
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
