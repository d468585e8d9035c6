"""Time steppers for ``du/dt = L u + N(u)`` and a driver that lands on save times.

- ``ETDRK4``: the exponential time-differencing Runge-Kutta scheme of Cox & Matthews
  (2002), order 4, for a *diagonal* linear part ``L`` (a Fourier or spherical-harmonic
  Laplacian), with the phi-function coefficients evaluated by the contour integrals of
  Kassam & Trefethen (2005) so that small ``h L`` loses no digits. The diffusion is
  integrated exactly; ``L = 0`` reduces it to the classical RK4.
- ``StepDoubling``: error control for any one-step method of order p: a step of h against
  two of h/2, error estimate ``|u_h/2 - u_h| / (2^p - 1)``, standard step-size update.
- ``SSPRK3``: the three-stage, third-order strong-stability-preserving Runge-Kutta scheme
  of Shu & Osher (a convex combination of forward-Euler steps: keeps positivity of a
  positivity-preserving Euler step under the same step bound).

A stepper exposes ``attempt(u, h) -> (h_taken, u_new, h_next)``: ``h_taken`` is 0 for a
rejected step, and may be smaller than ``h`` when a stability bound cuts it. ``integrate``
drives a stepper to a list of save times, landing on each exactly.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from solvers.errors import StepSizeError


def phi_coefficients(hl: np.ndarray, contour_points: int = 32) -> tuple[np.ndarray, ...]:
    """ETDRK4 coefficients for the (real, diagonal) values ``hl = h * L``.

    Returns ``(e, e2, q, f1, f2, f3)`` divided by ``h`` where the formulas carry an ``h``:
    multiply ``q, f1, f2, f3`` by ``h``. Contour of radius 1 around each ``hl``
    (Kassam & Trefethen 2005, eq. 2.5 and the mean over ``contour_points`` roots).
    """
    hl = np.asarray(hl, dtype=float)
    r = np.exp(1j * np.pi * (np.arange(1, contour_points + 1) - 0.5) / contour_points)
    z = hl[..., None] + r
    ez = np.exp(z)
    ez2 = np.exp(z / 2)
    q = np.real(np.mean((ez2 - 1) / z, axis=-1))
    f1 = np.real(np.mean((-4 - z + ez * (4 - 3 * z + z**2)) / z**3, axis=-1))
    f2 = np.real(np.mean((2 + z + ez * (z - 2)) / z**3, axis=-1))
    f3 = np.real(np.mean((-4 - 3 * z - z**2 + ez * (4 - z)) / z**3, axis=-1))
    return np.exp(hl), np.exp(hl / 2), q, f1, f2, f3


class ETDRK4:
    """Fixed-step ETDRK4 for ``du/dt = L u + N(u)``, ``L`` diagonal and real (order 4).

    Args:
        linear: the diagonal of ``L`` (same shape as the state).
        nonlinear: callable ``N(u) -> array`` (must return a new array).
        dt: the step; ``attempt`` takes at most this.
    """

    order = 4

    def __init__(self, linear: np.ndarray, nonlinear: Callable[[np.ndarray], np.ndarray],
                 dt: float | None = None):
        self.linear = np.asarray(linear, dtype=float)
        self.nonlinear = nonlinear
        self.dt = dt
        self._cache: dict[float, tuple] = {}
        self.evaluations = 0

    def _coeffs(self, h: float) -> tuple:
        co = self._cache.get(h)
        if co is None:
            if len(self._cache) > 16:  # adaptive runs see many h: keep the cache small
                self._cache.clear()
            e, e2, q, f1, f2, f3 = phi_coefficients(h * self.linear)
            co = (e, e2, h * q, h * f1, h * f2, h * f3)
            self._cache[h] = co
        return co

    def step(self, u: np.ndarray, h: float) -> np.ndarray:
        """One ETDRK4 step of size ``h`` (Cox-Matthews form)."""
        e, e2, q, f1, f2, f3 = self._coeffs(h)
        n = self.nonlinear
        nu = n(u)
        a = e2 * u + q * nu
        na = n(a)
        b = e2 * u + q * na
        nb = n(b)
        c = e2 * a + q * (2 * nb - nu)
        nc = n(c)
        self.evaluations += 4
        return e * u + f1 * nu + 2 * f2 * (na + nb) + f3 * nc

    def attempt(self, u: np.ndarray, h: float) -> tuple[float, np.ndarray, float]:
        return h, self.step(u, h), self.dt if self.dt is not None else h


class StepDoubling:
    """Adaptive steps for a one-step method by step doubling (Richardson error estimate).

    Args:
        method: object with ``step(u, h)`` and ``order``.
        tolerance: the accepted error per step, relative to ``norm(u)``.
        norm: vector norm (default: max abs).
        h_max: the largest step.
    """

    def __init__(self, method: Any, tolerance: float,
                 norm: Callable[[np.ndarray], float] | None = None, h_max: float = math.inf):
        self.method = method
        self.tolerance = tolerance
        self.h_max = h_max
        self.norm = norm or (lambda x: float(np.max(np.abs(x))))
        self.rejected = 0

    def attempt(self, u: np.ndarray, h: float) -> tuple[float, np.ndarray, float]:
        big = self.method.step(u, h)
        half = self.method.step(self.method.step(u, h / 2), h / 2)
        p = self.method.order
        scale = self.tolerance * max(self.norm(u), self.norm(half))
        err = self.norm(half - big) / (2**p - 1) / scale
        if not math.isfinite(err):
            # NaN from an unstable trial step: retry much smaller; the driver stops the run
            # if the step underflows.
            self.rejected += 1
            return 0.0, u, h / 10
        factor = 0.9 * err ** (-1.0 / (p + 1)) if err > 0 else 5.0
        h_next = min(self.h_max, h * min(5.0, max(0.2, factor)))
        if err <= 1.0:
            return h, half, h_next
        self.rejected += 1
        return 0.0, u, h_next


class SSPRK3:
    """Shu-Osher SSP-RK3 (order 3) with a step bound from the state.

    Args:
        rhs: callable ``rhs(u) -> (du/dt, h_max)``: the tendency and the largest stable
            step at ``u`` (for example a CFL bound); the step is cut to ``h_max`` there.
        dt: fixed step, or ``None`` to take ``h_max`` each step.
    """

    order = 3

    def __init__(self, rhs: Callable[[np.ndarray], tuple[np.ndarray, float]],
                 dt: float | None = None):
        self.rhs = rhs
        self.dt = dt

    def step(self, u: np.ndarray, h: float) -> np.ndarray:
        k1, _ = self.rhs(u)
        return self._finish(u, k1, h)

    def _finish(self, u, k1, h):
        u1 = u + h * k1
        k2, _ = self.rhs(u1)
        u2 = 0.75 * u + 0.25 * (u1 + h * k2)
        k3, _ = self.rhs(u2)
        # u/3 + 2/3 (u2 + h k3), written as an increment: 2/3 is not a double, and
        # scaling u itself by it would bias the mass by ~1e-16 per step (seen: 2e-12 after
        # 66k steps); scaling the small increment makes that bias negligible.
        return u + (2.0 / 3.0) * ((u2 - u) + h * k3)

    def attempt(self, u: np.ndarray, h: float) -> tuple[float, np.ndarray, float]:
        k1, h_max = self.rhs(u)
        if self.dt is not None and self.dt > h_max * (1 + 1e-12):
            raise StepSizeError(
                f"the fixed step dt = {self.dt:.3g} exceeds the stability bound "
                f"{h_max:.3g} of this state; lower time.dt or use dt = \"auto\"")
        h = min(h, h_max)
        return h, self._finish(u, k1, h), (self.dt if self.dt is not None else h_max)


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
              h_min: float | None = None,
              underflow_advice: str = "loosen the tolerance or check the problem"
              ) -> IntegrationResult:
    """Advance ``u0`` from ``t0`` through ``save_times`` (all > t0), landing on each.

    Args:
        stepper: object with ``attempt(u, h) -> (h_taken, u_new, h_next)``.
        u0, t0: initial state and time.
        save_times: increasing times at which ``on_save(t, u, h_next)`` is called.
        h0: first step to try.
        check: called as ``check(u, t)`` after each accepted step; raises to stop.
        on_step: called with the new time after each accepted step (progress bars).
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
    try:
        for t_save in save_times:
            t_save = float(t_save)
            while t < t_save:
                remaining = t_save - t
                # Take the remainder at once if the step would leave a sliver behind.
                h_try = remaining if h >= remaining * (1 - 1e-9) else h
                h_taken, u_new, h_next = stepper.attempt(u, h_try)
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
