"""The two discretizations of the circle: Fourier pseudo-spectral (ETDRK4) and CCH finite
volumes (SSP-RK3)."""
from __future__ import annotations

import numpy as np

from meanfield.discretizations.base import FiniteVolumeSolver, SpectralSolver
from meanfield.model.circle import CircleModel
from solvers.operators.finite_volume import GradientFlowFV
from solvers.operators.transport import make_transport_operator


class SpectralCircle(SpectralSolver):
    """Fourier pseudo-spectral solver: state = coefficients, ETDRK4 (order 4 in time),
    diffusion exact, products dealiased by the 3/2 rule; fixed or step-doubling steps."""

    def __init__(self, model: CircleModel, dt: float | str, tolerance: float,
                 negativity_tolerance: float):
        grid = model.grid
        super().__init__(model, -model.noise * grid.k.astype(float) ** 2,
                         make_transport_operator(grid, model.velocity), dt, tolerance,
                         negativity_tolerance, f"the {grid.n} points")

    def to_state(self, rho: np.ndarray) -> np.ndarray:
        c = self.model.grid.analysis(rho)
        if self.model.grid.n % 2 == 0:
            c[-1] = 0.0
        return c

    def to_density(self, state: np.ndarray) -> np.ndarray:
        return self.model.grid.synthesis(state)


class FiniteVolumeCircle(FiniteVolumeSolver):
    """Carrillo-Chertock-Huang finite volumes (second order in space) with SSP-RK3 (third
    order in time) under the positivity and diffusion step bounds."""

    def __init__(self, model: CircleModel, dt: float | str, cfl: float):
        super().__init__(model, GradientFlowFV(model.grid.dx, model.potential_difference,
                                               model.noise, cfl), dt)
