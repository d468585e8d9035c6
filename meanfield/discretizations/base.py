"""What the two methods share, whatever the geometry: the stepper, the first step, and the
checks that stop an unstable or unresolved run with an error that says what to change.

A solver adapts a model to ``solvers.steppers.integrate``: ``to_state``/``to_density``
convert between grid values and the stepped state (spectral coefficients, or the cell
values themselves), ``stepper()`` gives the object with ``attempt``, ``check`` runs after
every accepted step.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from meanfield.errors import SolverError
from solvers.steppers import ETDRK4, SSPRK3, StepDoubling


class SpectralSolver:
    """ETDRK4 (order 4, the diagonal linear part exact) on spectral coefficients; fixed
    steps or step doubling with ``tolerance``. Subclasses give ``to_state``/``to_density``.

    Args:
        model: the model (its ``scale`` sets the first step of USA runs).
        linear: diagonal of the linear (diffusion) operator on the coefficients.
        tendency: the nonlinear transport tendency of the coefficients.
        dt: fixed step or ``"auto"``.
        tolerance: error per step of the adaptive stepper.
        negativity_tolerance: the run stops when ``min rho < -tol * max rho``.
        resolution_hint: what to raise when unresolved (for the error message).
    """

    method = "spectral"

    def __init__(self, model, linear: np.ndarray, tendency: Callable, dt: float | str,
                 tolerance: float, negativity_tolerance: float, resolution_hint: str):
        self.model = model
        self.scheme = ETDRK4(linear, tendency, None if dt == "auto" else float(dt))
        self.adaptive = dt == "auto"
        self.tolerance = tolerance
        self.negativity_tolerance = negativity_tolerance
        self.resolution_hint = resolution_hint

    def first_step(self, t_final: float) -> float:
        """The fixed step, or a cautious first adaptive step (USA runs on e^-beta)."""
        if not self.adaptive:
            return self.scheme.dt
        return min(1e-3 * t_final, 1e-2 / max(self.model.scale, 1.0))

    def stepper(self):
        return StepDoubling(self.scheme, self.tolerance) if self.adaptive else self.scheme

    def check(self, state: np.ndarray, t: float) -> None:
        """Stop on NaN, or on a density that goes negative (the solution is unresolved)."""
        if not np.all(np.isfinite(state)):
            raise SolverError(
                f"the spectral solution became NaN/inf at t = {t:.6g}: raise "
                f"{self.resolution_hint}, lower time.dt (or use dt = \"auto\"), or use "
                "method = \"finite-volume\"")
        rho = self.to_density(state)
        low, high = float(rho.min()), float(rho.max())
        if low < -self.negativity_tolerance * high:
            raise SolverError(
                f"the spectral density went negative at t = {t:.6g} (min {low:.3g}, max "
                f"{high:.3g}; tolerance {self.negativity_tolerance:g} of the max): the "
                f"solution is not resolved; raise discretization.resolution "
                f"({self.resolution_hint}) or use method = \"finite-volume\"")


class FiniteVolumeSolver:
    """SSP-RK3 (order 3) on cell values under the step bound of a CCH right-hand side.

    Args:
        model: the model.
        rhs: ``rhs(rho) -> (drho/dt, h_max)`` (``GradientFlowFV`` or ``GradientFlowMeshFV``).
        dt: fixed step (refused if above the bound) or ``"auto"``.
    """

    method = "finite-volume"

    def __init__(self, model, rhs: Callable, dt: float | str):
        self.model = model
        self.rhs = rhs
        self.scheme = SSPRK3(rhs, None if dt == "auto" else float(dt))

    def to_state(self, rho: np.ndarray) -> np.ndarray:
        return np.array(rho, dtype=float)

    def to_density(self, state: np.ndarray) -> np.ndarray:
        return state.copy()

    def first_step(self, t_final: float) -> float:
        return self.scheme.dt if self.scheme.dt is not None else t_final

    def stepper(self):
        return self.scheme

    def check(self, state: np.ndarray, t: float) -> None:
        if not np.all(np.isfinite(state)):
            raise SolverError(f"the finite-volume solution became NaN/inf at t = {t:.6g}: "
                              "lower discretization.cfl or time.dt")
        if state.min() < 0:
            raise SolverError(f"the finite-volume density went negative at t = {t:.6g} "
                              f"(min {state.min():.3g}): lower discretization.cfl")
