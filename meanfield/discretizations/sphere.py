"""The two discretizations of the sphere S^2: spherical harmonics on a Gauss-Legendre grid
(ETDRK4) and CCH finite volumes on the icosahedral Voronoi mesh (SSP-RK3)."""
from __future__ import annotations

import numpy as np

from meanfield import config as cfgmod
from meanfield.discretizations.adaptive import DegreeResolution
from meanfield.discretizations.base import (
    FiniteVolumeDiscretization,
    SpectralDiscretization,
    model_arguments,
    model_value,
)
from meanfield.config.sections import MAX_SPECTRAL_LMAX
from meanfield.initial import circle as initial_circle
from meanfield.initial import sphere as initial_sphere
from meanfield.model.kernels import sphere_required_lmax
from meanfield.model.sphere import SphereFVModel, SphereModel, mesh_level
from solvers.grids.mesh import cell_averages, icosahedral_mesh
from solvers.grids.sphere import SphereGrid
from solvers.transforms import sht
from solvers.transforms.sht import resize_alm
from solvers.operators.finite_volume import GradientFlowMeshFV


class SpectralSphere(DegreeResolution, SpectralDiscretization):
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

    # --- resolution = "auto" (meanfield.discretizations.adaptive) ---------------------
    @staticmethod
    def _amplitudes(grid: SphereGrid, alm: np.ndarray) -> np.ndarray:
        """``sqrt((2l + 1)/4 pi) |a_l.|_2`` (real field: the orders m > 0 twice): degree
        l's share of the max norm (the addition theorem)."""
        power = np.abs(alm) ** 2 * np.where(grid.m > 0, 2.0, 1.0)
        ell = np.arange(grid.lmax + 1)
        return np.sqrt(np.bincount(grid.l, power, grid.lmax + 1) * (2 * ell + 1)
                       / (4 * np.pi))

    @staticmethod
    def max_resolution(cfg: dict) -> int:
        return MAX_SPECTRAL_LMAX

    @staticmethod
    def probe_spectrum(cfg: dict, resolution: int, threads: int | None
                       ) -> tuple[np.ndarray, float]:
        grid = SphereGrid(resolution, threads=threads)
        rho = initial_sphere.initial_values(cfg["initial"], grid)
        return SpectralSphere._amplitudes(grid, grid.analysis(rho)), float(rho.max())

    def prolong(self, state: np.ndarray, resolution: int) -> np.ndarray:
        """The coefficients at band limit ``resolution``, zero-padded (packed by m)."""
        return resize_alm(state, resolution)

    def output_values(self, state: np.ndarray, grid: SphereGrid) -> np.ndarray:
        """The series at the Gauss nodes of ``grid`` (of any band limit: a synthesis of
        degree L on fewer rings is exact at those nodes)."""
        if grid.lmax == self.model.grid.lmax:
            return self.to_density(state)
        return sht.ducc0_synthesis(np.ascontiguousarray(state, dtype=complex),
                                   self.model.grid.lmax, grid.shape, grid.threads)


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
