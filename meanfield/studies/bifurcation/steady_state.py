"""Time integration of a spectral state to a steady state (the scan's first stage,
``meanfield.studies.bifurcation.scan``): the discretization's own stepper until the
residual ``||F(u)||``, as ``stationary_state`` reports it, falls below a tolerance."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from meanfield.studies.bifurcation.spectral_state import RealView, moment_weights
from solvers.steppers import integrate


class _Steady(Exception):
    """Raised from the step check when the residual is below the tolerance."""

    def __init__(self, t: float, u: np.ndarray, norm: float):
        super().__init__()
        self.t, self.u, self.norm = t, u, norm


@dataclass
class SteadyResult:
    """A time integration to steady state.

    Attributes:
        state: the last state.
        time: when ``||F|| < tolerance`` (NaN if ``t_max`` came first).
        residual: ``||F(state)||``.
        steps: accepted steps.
    """

    state: np.ndarray
    time: float
    residual: float
    steps: int


def residual_norm(disc, u: np.ndarray, view: RealView | None = None) -> float:
    """``||F(u)||``: the 2-norm over the real components that change the density (as
    ``stationary_state`` reports it); on the zonal geometry over the moments' rows
    ``F_l / Q_l(1)`` (the time derivatives of the moments ``<P_l>``, as the
    continuation measures them: the rows of ``F`` itself grow with d like
    ``Q_l(1)``)."""
    view = view if view is not None else RealView(disc, u)
    f = view.to_real(disc.residual(u))
    if disc.geometry == "zonal":
        f = f * moment_weights(disc.grid.dim, f.size - 1)
    return float(np.linalg.norm(f))


def steady_state(disc, u0: np.ndarray, tolerance: float, t_max: float,
                 view: RealView | None = None) -> SteadyResult:
    """Integrate ``u0`` with the discretization's stepper until ``||F(u)|| < tolerance``
    (checked after every accepted step) or ``t = t_max``.

    Args:
        disc: the spectral discretization at the wanted parameters.
        u0: the start (state).
        tolerance: on ``residual_norm``.
        t_max: the time limit.
        view: the ``RealView`` of ``disc`` (made here if None).

    Raises:
        SolverError: the run became unstable (``disc.check``) or its step underflowed.
    """
    view = view if view is not None else RealView(disc, u0)
    steps = 0
    norm0 = residual_norm(disc, u0, view)
    if norm0 < tolerance:
        return SteadyResult(np.array(u0), 0.0, norm0, 0)

    def check(u: np.ndarray, t: float) -> None:
        nonlocal steps
        steps += 1
        disc.check(u, t)
        norm = residual_norm(disc, u, view)
        if norm < tolerance:
            raise _Steady(t, u, norm)

    saved = {}

    def on_save(t: float, u: np.ndarray, h: float) -> None:
        saved["u"] = u

    try:
        res = integrate(disc.stepper(), np.array(u0), 0.0, np.array([t_max]),
                        disc.first_step(t_max), on_save=on_save, check=check,
                        h_min=1e-14 * t_max,
                        underflow_advice="raise discretization.resolution or loosen "
                                         "time.tolerance")
    except _Steady as done:
        return SteadyResult(np.array(done.u), float(done.t), done.norm, steps)
    if res.status == -1:
        raise KeyboardInterrupt
    u = saved["u"]
    return SteadyResult(np.array(u), math.nan, residual_norm(disc, u, view), steps)
