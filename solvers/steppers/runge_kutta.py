"""Step doubling (error control for any one-step method) and the SSP-RK3 scheme of
Shu & Osher (order 3, a convex combination of forward-Euler steps)."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from solvers.errors import StepSizeError


class StepDoubling:
    """Adaptive steps for a one-step method by step doubling (Richardson error estimate).

    Args:
        method: object with ``step(u, h)`` and ``order`` (``time_dependent`` methods:
            ``step(u, h, t)``).
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

    @property
    def time_dependent(self) -> bool:
        """Whether the method's field takes the time (then ``attempt`` needs it)."""
        return bool(getattr(self.method, "time_dependent", False))

    def attempt(self, u: np.ndarray, h: float, t: float | None = None
                ) -> tuple[float, np.ndarray, float]:
        """One trial step of ``h`` from ``u`` (at time ``t``: time-dependent methods
        only)."""
        if self.time_dependent:
            big = self.method.step(u, h, t)
            half = self.method.step(self.method.step(u, h / 2, t), h / 2, t + h / 2)
        else:
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
        rhs: callable ``rhs(u) -> du/dt``.
        max_step: callable ``max_step(u) -> h_max``, the largest stable step at ``u`` (for
            example a CFL bound); ``attempt`` cuts the step to it. It is called right after
            ``rhs`` on the same array, so a right-hand side can hand over the bound of the
            evaluation it just made. ``None``: no bound.
        dt: fixed step, or ``None`` to take ``h_max`` each step.
    """

    order = 3

    def __init__(self, rhs: Callable[[np.ndarray], np.ndarray],
                 max_step: Callable[[np.ndarray], float] | None = None,
                 dt: float | None = None):
        self.rhs = rhs
        self.max_step = max_step if max_step is not None else (lambda u: math.inf)
        self.dt = dt

    def step(self, u: np.ndarray, h: float) -> np.ndarray:
        return self._finish(u, self.rhs(u), h)

    def _finish(self, u, k1, h):
        u1 = u + h * k1
        k2 = self.rhs(u1)
        u2 = 0.75 * u + 0.25 * (u1 + h * k2)
        k3 = self.rhs(u2)
        # u/3 + 2/3 (u2 + h k3), written as an increment: 2/3 is not a double, and
        # scaling u itself by it would bias the mass by ~1e-16 per step (seen: 2e-12 after
        # 66k steps); scaling the small increment makes that bias negligible.
        return u + (2.0 / 3.0) * ((u2 - u) + h * k3)

    def attempt(self, u: np.ndarray, h: float) -> tuple[float, np.ndarray, float]:
        k1 = self.rhs(u)
        h_max = self.max_step(u)
        if self.dt is not None and self.dt > h_max * (1 + 1e-12):
            raise StepSizeError(
                f"the fixed step dt = {self.dt:.3g} exceeds the stability bound "
                f"{h_max:.3g} of this state; lower time.dt or use dt = \"auto\"")
        h = min(h, h_max)
        return h, self._finish(u, k1, h), (self.dt if self.dt is not None else h_max)
