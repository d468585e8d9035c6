"""The two discretizations of the sphere S^2: spherical harmonics on a Gauss-Legendre grid
(ETDRK4) and CCH finite volumes on the icosahedral Voronoi mesh (SSP-RK3)."""
from __future__ import annotations

import numpy as np

from meanfield.discretizations.base import FiniteVolumeSolver, SpectralSolver
from meanfield.model.sphere import SphereFVModel, SphereModel
from solvers.operators.finite_volume import GradientFlowMeshFV


class SpectralSphere(SpectralSolver):
    """Spherical-harmonic solver (ETDRK4, diffusion exact, fixed or adaptive steps)."""

    def __init__(self, model: SphereModel, dt: float | str, tolerance: float,
                 negativity_tolerance: float):
        super().__init__(model, model.noise * model.laplacian, model.tendency, dt, tolerance,
                         negativity_tolerance, f"band limit {model.grid.lmax}")

    def to_state(self, rho: np.ndarray) -> np.ndarray:
        return self.model.grid.analysis(rho)

    def to_density(self, state: np.ndarray) -> np.ndarray:
        return self.model.grid.synthesis(state)


class FiniteVolumeSphere(FiniteVolumeSolver):
    """CCH finite volumes on the icosahedral Voronoi mesh with SSP-RK3."""

    def __init__(self, model: SphereFVModel, dt: float | str, cfl: float):
        super().__init__(model, GradientFlowMeshFV(model.mesh, model.potential_difference,
                                                   model.noise, cfl), dt)
