"""Build the discretization of a validated config: grid, model, solver and initial density."""
from __future__ import annotations

import math

import numpy as np

from meanfield import config as cfgmod
from meanfield.discretizations.circle import FiniteVolumeCircle, SpectralCircle
from meanfield.discretizations.sphere import FiniteVolumeSphere, SpectralSphere
from meanfield.errors import ConfigError
from meanfield.initial import circle as initial, sphere as initial_sphere
from meanfield.model.circle import CircleModel
from meanfield.model.kernels import required_resolution, sphere_required_lmax
from meanfield.model.sphere import SphereFVModel, SphereModel, mesh_level
from solvers.grids.circle import CircleGrid
from solvers.grids.mesh import SphereMesh, cell_averages, icosahedral_mesh
from solvers.grids.sphere import SphereGrid


def build_solver(cfg: dict, threads: int | None = None):
    """Grid, model and solver for a validated config (raises ConfigError on mismatch).

    ``resolution`` is the number of points (cells) on the circle and the band limit
    ``lmax`` on the sphere (Gauss-Legendre grid of lmax + 1 by 2 lmax + 2 points).
    """
    disc, model_cfg = cfg["discretization"], cfg["model"]
    sphere = cfg["domain"]["geometry"] == "sphere"
    n = disc["resolution"]
    needed = (sphere_required_lmax if sphere else required_resolution)(model_cfg["beta"])
    if sphere and disc["method"] == "finite-volume":
        # as many cells as the degrees of freedom of the band limit the kernel needs
        needed = next(c for c in cfgmod.SPHERE_MESH_CELLS + (10**9,) if c >= (needed + 1)**2)
    if n < needed:
        raise ConfigError(
            f"discretization.resolution = {n} is too small for model.beta = "
            f"{model_cfg['beta']:g}: the kernel needs resolution >= {needed}",
            "discretization.resolution")
    if threads is None and disc["threads"] != "auto":
        threads = disc["threads"]
    args = (model_cfg["beta"], model_cfg["kappa"], model_cfg["normalized"])
    if sphere and disc["method"] == "finite-volume":
        grid = icosahedral_mesh(mesh_level(n))
        model = SphereFVModel(grid, *args)
    elif sphere:
        grid = SphereGrid(n, threads=threads)
        model = SphereModel(grid, *args, threads=threads)
    else:
        grid = CircleGrid(n, threads=threads)
        model = CircleModel(grid, *args)
    t = cfg["time"]
    dt = t["dt"]
    if dt != "auto":
        # A fixed step that divides save_every, so that saves fall on steps.
        dt = t["save_every"] / math.ceil(t["save_every"] / dt * (1 - 1e-12))
    if sphere and disc["method"] == "finite-volume":
        solver = FiniteVolumeSphere(model, dt, disc["cfl"])
    elif sphere:
        solver = SpectralSphere(model, dt, t["tolerance"], disc["negativity_tolerance"])
    elif disc["method"] == "spectral":
        solver = SpectralCircle(model, dt, t["tolerance"], disc["negativity_tolerance"])
    else:
        solver = FiniteVolumeCircle(model, dt, disc["cfl"])
    return grid, model, solver


def initial_density(cfg: dict, grid: CircleGrid | SphereGrid | SphereMesh) -> np.ndarray:
    """Checked initial grid values of mass 1 (raises ConfigError)."""
    if isinstance(grid, SphereMesh):
        f = initial_sphere.density_function(cfg["initial"])
        return initial.normalized_density(cell_averages(grid, f), grid.integrate)
    if isinstance(grid, SphereGrid):
        return initial_sphere.initial_values(cfg["initial"], grid)
    return initial.initial_values(cfg["initial"], grid.theta, grid.dx,
                                  cfg["discretization"]["method"])
