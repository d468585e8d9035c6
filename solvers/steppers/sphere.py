"""Integrators on the sphere S^{d-1}, row by row (no model in them: they take a vector
field ``f(x) -> array``).

- ``RetractedRK4``: the classical RK4 step in the ambient space R^{n x d} for a field that
  is tangent on the sphere, followed by the retraction ``x -> x/|x|`` row by row. The exact
  flow of the ambient field leaves the sphere invariant, RK4 is O(h^5) close to it per
  step, and the retraction moves the result by no more than its O(h^5) distance to the
  sphere: order 4, norms 1 to round-off (~1e-16). ``retract=None`` gives plain RK4
  (tokens in R^d, the Pre-LN model). Adaptive steps: ``solvers.steppers.StepDoubling``
  around it.
- ``GeodesicEulerMaruyama``: for ``dX = v dt + sqrt(2/kappa) dW`` (Brownian motion on the
  sphere), ``X <- exp_X(P_X^perp(v h + sqrt(2/kappa) dW))`` with ``dW ~ N(0, h I_d)`` in the
  ambient space and ``exp_X(u) = cos|u| X + sin|u| u/|u|`` the exponential map. The
  second-order term of ``cos|u|`` supplies the Ito drift ``-(d-1)/kappa X h`` of spherical
  Brownian motion, so the scheme is weakly of order 1; with the noise not commuting
  (no Levy areas) it is strongly of order 1/2. Noise comes in from outside (``step(x, h,
  dw)``), so a reference path can be driven by the same increments, summed.
  Measured (tests/meanfield/model/test_particle_models.py): RK4 orders 3.96-3.99 with norms within 2e-16
  of 1; Euler-Maruyama strong order 0.52 (SA, 300 tokens on S^2), weak order 1.05 on
  Brownian motion on S^2 (the scheme's exact weak error has order 1.03 there).
- ``integrate_sde``: fixed steps landing on the save times, increments from a
  ``numpy.random.Generator``: the same generator state gives the same path bit for bit.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from solvers.particles.direct import normalize_rows, sphere_exp, tangent_projection


class RetractedRK4:
    """Classical RK4 in the ambient space, then a retraction (order 4; module docstring).

    Args:
        field: ``f(x) -> dx/dt`` (a new array), tangent to the sphere on it; with
            ``time_dependent``, ``f(x, t)``.
        retract: applied to the result of each step; default ``normalize_rows``; ``None``
            for tokens in R^d.
        dt: the fixed step reported by ``attempt`` (``None``: the step it was given).
        time_dependent: the field takes the time (the stages at ``t``, ``t + h/2``,
            ``t + h``); ``step``/``attempt`` then need the time of ``x``, and
            ``integrate`` (and ``StepDoubling``) pass it.
    """

    order = 4

    def __init__(self, field: Callable[..., np.ndarray],
                 retract: Callable[[np.ndarray], np.ndarray] | None = normalize_rows,
                 dt: float | None = None, time_dependent: bool = False):
        self.field = field
        self.retract = retract
        self.dt = dt
        self.time_dependent = bool(time_dependent)
        self.evaluations = 0

    def first_stage(self, x: np.ndarray, t: float = 0.0) -> np.ndarray:
        """``k1 = f(x, t)``, the first stage of every step from ``x`` (``step``'s ``k1``:
        steps from one state can share it)."""
        self.evaluations += 1
        return self.field(x, t) if self.time_dependent else self.field(x)

    def step(self, x: np.ndarray, h: float, t: float = 0.0,
             k1: np.ndarray | None = None) -> np.ndarray:
        """One step of size ``h`` from ``x`` at time ``t`` (used by time-dependent fields
        only); ``k1``: ``first_stage(x, t)`` when the caller has it."""
        if self.time_dependent:
            field = self.field
        else:  # the autonomous field, evaluated exactly as it always was
            def field(y, s):
                return self.field(y)
        half = t + 0.5 * h
        k1 = self.first_stage(x, t) if k1 is None else k1
        k2 = field(x + (0.5 * h) * k1, half)
        k3 = field(x + (0.5 * h) * k2, half)
        k4 = field(x + h * k3, t + h)
        self.evaluations += 3
        new = x + (h / 6.0) * (k1 + 2.0 * (k2 + k3) + k4)
        return new if self.retract is None else self.retract(new)

    def attempt(self, x: np.ndarray, h: float, t: float = 0.0
                ) -> tuple[float, np.ndarray, float]:
        return h, self.step(x, h, t), self.dt if self.dt is not None else h


class GeodesicEulerMaruyama:
    """``X <- exp_X(P^perp_X (v(X) h + sqrt(2/kappa) dW))``: strong order 1/2, weak order 1.

    Args:
        drift: ``v(x)`` (rows tangent at the rows of ``x``), or ``None`` for zero drift
            (Brownian motion on the sphere).
        kappa: inverse noise strength, > 0 (``inf``: the geodesic Euler method).
    """

    strong_order = 0.5
    weak_order = 1.0

    def __init__(self, drift: Callable[[np.ndarray], np.ndarray] | None, kappa: float):
        self.drift = drift
        self.sigma = 0.0 if math.isinf(kappa) else math.sqrt(2.0 / kappa)

    def step(self, x: np.ndarray, h: float, dw: np.ndarray) -> np.ndarray:
        """One step of size ``h`` with the ambient Brownian increment ``dw ~ N(0, h I)``."""
        u = self.sigma * dw
        if self.drift is not None:
            u = u + h * self.drift(x)
        return sphere_exp(x, tangent_projection(x, u))


def integrate_sde(stepper: GeodesicEulerMaruyama, x0: np.ndarray, t0: float,
                  save_times: np.ndarray, dt: float, rng: np.random.Generator, *,
                  on_save: Callable[[float, np.ndarray], None],
                  on_step: Callable[[float], None] | None = None,
                  on_state: Callable[[int, np.ndarray], None] | None = None,
                  taken: int = 0) -> int:
    """Fixed steps from ``t0`` through ``save_times``, landing on each.

    Each interval between saves is cut into ``ceil(length/dt)`` equal steps (exactly
    ``dt`` when the saves are multiples of it). The increments are
    ``sqrt(h) * rng.standard_normal(x.shape)``, drawn in step order.

    ``on_state(k, x)`` is called after each step, ``k`` the steps of the interval taken:
    with the generator as it is then, ``integrate_sde(..., x, t_start, later saves, ...,
    taken=k)`` from the interval's start ``t_start`` continues exactly as this run (a
    checkpoint in the middle of an interval; ``x0`` is then the state after ``taken``
    steps of the first interval).

    Returns:
        The number of steps taken.
    """
    x, t, steps = x0, float(t0), 0
    for t_save in save_times:
        length = float(t_save) - t
        m = max(1, math.ceil(length / dt * (1 - 1e-12)))
        h = length / m
        for k in range(taken, m):
            dw = rng.standard_normal(x.shape)
            dw *= math.sqrt(h)
            x = stepper.step(x, h, dw)
            steps += 1
            if on_step is not None:
                on_step(t + (k + 1) * h)
            if on_state is not None:
                on_state(k + 1, x)
        t, taken = float(t_save), 0
        on_save(t, x)
    return steps
