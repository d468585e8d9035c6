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
- ``BatchGeodesicEulerMaruyama`` / ``integrate_sde_batch``: the scheme of
  ``solvers.steppers.GeodesicEulerMaruyama`` (strong order 1/2, weak order 1) on a batch,
  system ``s`` drawing its increments from its own generator ``rngs[s]`` in step order,
  so that its path is the single-system path of ``integrate_sde`` with that generator.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from solvers.errors import StepSizeError


def normalize_rows_batch(x: np.ndarray) -> np.ndarray:
    """``x_i / |x_i|`` along the last axis (a new array)."""
    return x / np.sqrt(np.einsum("...i,...i->...", x, x))[..., None]


def tangent_projection_batch(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``y_i - <x_i, y_i> x_i`` along the last axis, for unit rows ``x_i``."""
    return y - np.einsum("...i,...i->...", x, y)[..., None] * x


def sphere_exp_batch(x: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The exponential map ``cos|u| x + sin|u| u/|u|`` along the last axis, renormalised
    (``u`` tangent at ``x``)."""
    a = np.sqrt(np.einsum("...i,...i->...", u, u))
    return normalize_rows_batch(np.cos(a)[..., None] * x + np.sinc(a / np.pi)[..., None] * u)


def rms_rows(x: np.ndarray) -> np.ndarray:
    """``sqrt(mean_i |x_i|^2)`` per system of a ``(B, n, m)`` array: shape ``(B,)``."""
    return np.sqrt(np.einsum("bij,bij->b", x, x) / x.shape[1])


class BatchRK4:
    """Classical RK4 on a batch with a step per system, then a retraction: order 4.

    Args:
        field: ``f(x) -> dx/dt`` for ``x`` of shape ``(B', n, m)``, any ``B'``.
        retract: applied after each step (default ``normalize_rows_batch``; ``None`` for
            systems in R^m).
    """

    order = 4

    def __init__(self, field: Callable[[np.ndarray], np.ndarray],
                 retract: Callable[[np.ndarray], np.ndarray] | None = normalize_rows_batch):
        self.field = field
        self.retract = retract
        self.evaluations = 0  # field evaluations (each on the whole batch given)

    def step(self, x: np.ndarray, h: float | np.ndarray) -> np.ndarray:
        """One step of ``h`` (a number, or an array with one step per system)."""
        h = np.asarray(h, dtype=float).reshape((-1,) + (1,) * (x.ndim - 1))
        f = self.field
        k1 = f(x)
        k2 = f(x + (0.5 * h) * k1)
        k3 = f(x + (0.5 * h) * k2)
        k4 = f(x + h * k3)
        self.evaluations += 4
        new = x + (h / 6.0) * (k1 + 2.0 * (k2 + k3) + k4)
        return new if self.retract is None else self.retract(new)


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
    steps = np.zeros(batch, dtype=np.int64)
    rejected = np.zeros(batch, dtype=np.int64)
    states = np.empty((save_times.size,) + x.shape)
    span = float(save_times[-1] - t0)
    h_min = 1e-14 * span if h_min is None else h_min
    t = np.full(batch, float(t0))
    if dt is not None:
        h = np.full(batch, float(dt))
    else:
        h = np.full(batch, min(float(h0), float(save_times[0] - t0)))
    p = method.order
    for k, t_save in enumerate(save_times):
        t_save = float(t_save)
        while True:
            live = np.nonzero(t < t_save)[0]
            if live.size == 0:
                break
            remaining = t_save - t[live]
            h_live = h[live]
            clip = h_live >= remaining * (1 - 1e-9)
            h_try = np.where(clip, remaining, h_live)
            whole = live.size == batch
            xs = x if whole else x[live]
            if dt is not None:
                new = method.step(xs, h_try)
                accept = np.ones(live.size, dtype=bool)
                h_next = h_live
            else:
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
                new = half
            acc = live[accept]
            if whole and accept.all():
                x = new
            else:
                x[acc] = new[accept]
            # Land exactly on the save time when the step was the remainder.
            t[acc] = np.where(clip[accept], t_save, t[acc] + h_try[accept])
            steps[acc] += 1
            rejected[live[~accept]] += 1
            # A step clipped to land on a save says nothing about the next one.
            keep = accept & clip & (h_try < h_live)
            h[live] = np.where(keep, h_live, h_next)
            if dt is None and np.any(h[live] < h_min):
                s = int(live[np.argmin(h[live])])
                raise StepSizeError(f"the time step of system {s} fell to {h[s]:.3g} at "
                                    f"t = {t[s]:.6g}: loosen the tolerance")
            if check is not None:
                check(x, float(np.min(t)))
        states[k] = x
        if on_save is not None:
            on_save(t_save, x)
    return {"states": states, "steps": steps, "rejected": rejected, "h_next": h.copy()}


class BatchGeodesicEulerMaruyama:
    """``X <- exp_X(P^perp_X (v(X) h + sqrt(2/kappa) dW))`` on a batch: strong order 1/2,
    weak order 1 (as ``solvers.steppers.GeodesicEulerMaruyama``).

    Args:
        drift: ``v(x)`` for ``x`` of shape ``(B, n, m)`` (rows tangent), or ``None``.
        kappa: inverse noise strength, > 0 (``inf``: geodesic Euler).
    """

    strong_order = 0.5
    weak_order = 1.0

    def __init__(self, drift: Callable[[np.ndarray], np.ndarray] | None, kappa: float):
        self.drift = drift
        self.sigma = 0.0 if math.isinf(kappa) else math.sqrt(2.0 / kappa)

    def step(self, x: np.ndarray, h: float, dw: np.ndarray) -> np.ndarray:
        """One step of ``h`` with ambient increments ``dw ~ N(0, h I)`` of ``x``'s shape."""
        u = self.sigma * dw
        if self.drift is not None:
            u = u + h * self.drift(x)
        return sphere_exp_batch(x, tangent_projection_batch(x, u))


def integrate_sde_batch(stepper: BatchGeodesicEulerMaruyama, x0: np.ndarray,
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
