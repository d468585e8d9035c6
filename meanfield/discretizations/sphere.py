"""The two discretizations of the sphere S^2: spherical harmonics on a Gauss-Legendre grid
(ETDRK4) and CCH finite volumes on the icosahedral Voronoi mesh (SSP-RK3)."""
from __future__ import annotations

import numpy as np

from meanfield import config as cfgmod
from meanfield.discretizations.base import (
    FiniteVolumeDiscretization,
    SpectralDiscretization,
    model_arguments,
    model_value,
)
from meanfield.initial import circle as initial_circle
from meanfield.initial import sphere as initial_sphere
from meanfield.model.kernels import sphere_required_lmax
from meanfield.model.sphere import SphereFVModel, SphereModel, mesh_level
from solvers.grids.mesh import cell_averages, icosahedral_mesh
from solvers.grids.sphere import SphereGrid
from solvers.operators.finite_volume import GradientFlowMeshFV


class SpectralSphere(SpectralDiscretization):
    """Spherical-harmonic solver (ETDRK4, diffusion exact, fixed or adaptive steps).

    The Jacobian-vector product is exact (``SphereModel.tendency_jvp``): the transport is
    bilinear in the density and the potential, USA's potential is linear in the density
    and SA's ``Psi = log(K*rho)/beta`` is differentiated in closed form."""

    geometry = "sphere"

    def __init__(self, model: SphereModel, dt: float | str, tolerance: float,
                 negativity_tolerance: float):
        super().__init__(model, model.tendency, model.tendency_jvp, dt, tolerance,
                         negativity_tolerance, f"band limit {model.grid.lmax}")

    @classmethod
    def needed_resolution(cls, beta: float, dim: int | None = None) -> int:
        return sphere_required_lmax(beta)

    @classmethod
    def build(cls, cfg: dict, dt: float | str, threads: int | None) -> SpectralSphere:
        grid = SphereGrid(cfg["discretization"]["resolution"], threads=threads)
        model = SphereModel(grid, *model_arguments(cfg), threads=threads,
                            value=model_value(cfg))
        return cls(model, dt, cfg["time"]["tolerance"],
                   cfg["discretization"]["negativity_tolerance"])

    @property
    def resolution(self) -> int:
        return self.model.grid.lmax

    def initial_density(self, initial: dict) -> np.ndarray:
        return initial_sphere.initial_values(initial, self.model.grid)

    def _linear_part(self) -> np.ndarray:
        return self.model.noise * self.model.laplacian

    def to_state(self, rho: np.ndarray) -> np.ndarray:
        return self.model.grid.analysis(rho)

    def to_density(self, state: np.ndarray) -> np.ndarray:
        return self.model.grid.synthesis(state)


class FiniteVolumeSphere(FiniteVolumeDiscretization):
    """CCH finite volumes on the icosahedral Voronoi mesh with SSP-RK3."""

    geometry = "sphere"

    def __init__(self, model: SphereFVModel, dt: float | str, cfl: float):
        super().__init__(model, GradientFlowMeshFV(model.mesh, model.potential_difference,
                                                   model.noise, cfl), dt)

    @classmethod
    def needed_resolution(cls, beta: float, dim: int | None = None) -> int:
        """As many cells as the degrees of freedom of the band limit the kernel needs."""
        dof = (sphere_required_lmax(beta) + 1) ** 2
        return next(c for c in cfgmod.SPHERE_MESH_CELLS + (10**9,) if c >= dof)

    @classmethod
    def build(cls, cfg: dict, dt: float | str, threads: int | None) -> FiniteVolumeSphere:
        mesh = icosahedral_mesh(mesh_level(cfg["discretization"]["resolution"]))
        return cls(SphereFVModel(mesh, *model_arguments(cfg), value=model_value(cfg)), dt,
                   cfg["discretization"]["cfl"])

    @property
    def grid(self):
        return self.model.mesh

    @property
    def resolution(self) -> int:
        return self.model.mesh.n_cells

    def initial_density(self, initial: dict) -> np.ndarray:
        """Cell averages of the initial density, of mass 1."""
        mesh = self.model.mesh
        f = initial_sphere.density_function(initial)
        return initial_circle.unit_mass_density(cell_averages(mesh, f), mesh.integrate)
