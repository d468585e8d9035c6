"""The two discretizations of zonal densities on S^{d-1} (``domain.geometry = "zonal"``,
``domain.dim = d``, any d >= 2): Gegenbauer coefficients at Gauss nodes (ETDRK4) and CCH
finite volumes on cells of equal width in theta (SSP-RK3).

``discretization.resolution`` is the band limit L (degrees 0..L, so L + 1 unknowns, at
L + 1 Gauss nodes) for the spectral method and the number of cells for finite volumes.
"""
from __future__ import annotations

import numpy as np

from meanfield.discretizations.base import (
    FiniteVolumeDiscretization,
    SpectralDiscretization,
    model_arguments,
    model_value,
)
from meanfield.discretizations.adaptive import DegreeResolution, ResolutionLimit
from meanfield.initial import zonal as initial
from meanfield.model.zonal import ZonalFVModel, ZonalModel
from meanfield.model.zonal_kernels import zonal_required_lmax
from solvers.grids.zonal import ZonalCells, ZonalGrid
from solvers.operators.zonal_finite_volume import GradientFlowZonalFV
from solvers.steppers import StepDoubling

MAX_AUTO_LMAX = 4095  # the largest band limit resolution = "auto" takes (dense tables)


class _ZonalEntry:
    """What both zonal discretizations share: the dimension, the initial data."""

    geometry = "zonal"
    method: str
    model: ZonalModel | ZonalFVModel
    dim: int = 3  # (the instance's, from domain.dim)

    @classmethod
    def needed_resolution(cls, beta: float, dim: int | None = None) -> int:
        return zonal_required_lmax(cls.dim if dim is None else dim, beta)

    def _check_beta(self, beta: float) -> None:
        self.check_resolution(self.resolution, beta, self.dim)

    def initial_density(self, initial_cfg: dict) -> np.ndarray:
        return initial.initial_values(initial_cfg, self.grid,
                                      averages=self.method == "finite-volume")


class SpectralZonal(_ZonalEntry, DegreeResolution, SpectralDiscretization):
    """Gegenbauer pseudo-spectral solver: state = coefficients of the orthonormal ``Q_l``,
    ETDRK4 (order 4 in time, the diffusion ``-l(l + d - 2)/kappa`` exact), products at the
    Gauss nodes of a product grid (dealiased); fixed or step-doubling steps. The
    Jacobian-vector product is exact (``ZonalModel.tendency_jvp``)."""

    geometry = "zonal"
    MIN_DEGREE = 8  # ("auto": a band limit of at least 8)

    def __init__(self, model: ZonalModel, dt: float | str, tolerance: float,
                 negativity_tolerance: float):
        self.dim = model.dim
        super().__init__(model, model.tendency, model.tendency_jvp, dt, tolerance,
                         negativity_tolerance, f"band limit {model.grid.lmax}")

    @classmethod
    def build(cls, cfg: dict, dt: float | str, threads: int | None) -> SpectralZonal:
        grid = ZonalGrid(cfg["discretization"]["resolution"], cfg["domain"]["dim"])
        return cls(ZonalModel(grid, *model_arguments(cfg), value=model_value(cfg)), dt,
                   cfg["time"]["tolerance"], cfg["discretization"]["negativity_tolerance"])

    @property
    def resolution(self) -> int:
        return self.model.grid.lmax

    @classmethod
    def memory_bytes(cls, cfg: dict) -> float:
        """The dense tables: values and derivatives of ``Q_0..Q_L`` at the ~3L/2 product
        nodes and at the L + 1 output nodes, with the analysis copies (x 2 margin)."""
        lmax = cfg["discretization"]["resolution"]
        nodes = 3 * lmax // 2 + 2
        return 2.0 * 8 * (lmax + 1) * (3 * nodes + 3 * (lmax + 1)) + 50e6

    def _linear_part(self) -> np.ndarray:
        return self.model.noise * self.model.laplacian

    def to_state(self, rho: np.ndarray) -> np.ndarray:
        return self.model.grid.analysis(rho)

    def to_density(self, state: np.ndarray) -> np.ndarray:
        return self.model.grid.synthesis(state)

    def first_step(self, t_final: float) -> float:
        """The fixed step, or a first adaptive step of 1e-2 over the fastest transport
        rate about the uniform density, ``max_l l(l + d - 2) |c a_l|`` (the circle's and
        sphere's ``e^beta`` bound overestimates that by a factor ~d at large d)."""
        if not self.adaptive:
            return self.scheme.dt
        m = self.model
        rate = float(np.max(-m.laplacian * np.abs(m.scale * m.a)))
        return min(1e-3 * t_final, 1e-2 / max(rate, 1.0))

    def diagnostics(self, state: np.ndarray, rho: np.ndarray) -> dict:
        """Mass and order parameter from the coefficients (``ZonalModel.diagnostics``)."""
        return self.model.diagnostics(rho, np.asarray(state))

    def _l1(self, c: np.ndarray) -> float:
        """``int |f| dsigma`` of the series with coefficients ``c`` (Gauss quadrature of
        the node values)."""
        grid = self.model.grid
        return float(np.abs(np.asarray(c) @ grid.synthesis_matrix) @ grid.weights)

    def stepper(self):
        """Step doubling whose error is measured in L^1 of the measure (a probability
        density's natural norm), not by the largest coefficient: a concentrated density
        at large d has coefficients up to ``sqrt(N(d, l))``, 1e8 at d = 64, and an error
        of tolerance x 1e8 in the bulk, where the mass is, passed as small (a marginal of
        -0.7 at d = 64, tolerance 1e-8). On S^1-like data the two agree within a factor
        of a few."""
        if not self.adaptive:
            return self.scheme
        return StepDoubling(self.scheme, self.tolerance, norm=self._l1)

    def check(self, state: np.ndarray, t: float) -> None:
        """The base class's checks (NaN; the density below ``-tolerance x max`` at a
        reliable node), and the negative part's mass, ``int rho^- dsigma`` (reliable
        nodes), below ``negativity_tolerance``: relative to the largest value alone, a
        density 1e17 on the axis hides a negative bulk."""
        super().check(state, t)
        grid = self.model.grid
        rho = self.to_density(state)
        negative = float(np.maximum(-rho, 0.0)[grid.reliable] @ grid.weights[grid.reliable])
        if negative > self.allowed_undershoot:
            needed = min(self.resolution_needed(state, self.allowed_undershoot / 20),
                         self.max_resolution(self.config))
            raise ResolutionLimit(
                f"the spectral density went negative at t = {t:.6g}: its negative part "
                f"carries {negative:.3g} of the mass (allowed "
                f"{self.allowed_undershoot:g}: discretization.negativity_tolerance, "
                f"time.tolerance): the solution is not resolved; raise discretization."
                f"resolution to {needed} (from the measured tail: it would pass) or use "
                f"\"auto\", or lower time.tolerance, or {self.other_method}", needed)

    def _pointwise(self, state: np.ndarray) -> np.ndarray:
        """The reliable nodes only: at the others (weight below
        ``solvers.grids.zonal.RELIABLE_WEIGHT``, large d only) the pointwise value is
        round-off of the coefficients, not the solution."""
        return self.to_density(state)[self.model.grid.reliable]

    def relative_error(self, diff: np.ndarray, u: np.ndarray, half: np.ndarray) -> float:
        """The larger of the max-norm error relative to max rho (the base class's) and
        the L^1 error relative to the mass (``stepper``'s reason: a density 1e17 on the
        axis would hide an error in the bulk, where the mass is)."""
        return max(super().relative_error(diff, u, half),
                   self._l1(diff) / max(self._l1(u), self._l1(half)))

    # --- resolution = "auto" (meanfield.discretizations.adaptive) ---------------------
    @staticmethod
    def _amplitudes(grid: ZonalGrid, c: np.ndarray) -> np.ndarray:
        """``|c_l| max |Q_l|`` over the reliable nodes: degree l's share of the max norm
        there."""
        peak = getattr(grid, "_peaks", None)
        if peak is None:
            peak = grid._peaks = np.abs(grid.synthesis_matrix[:, grid.reliable]).max(axis=1)
        return np.abs(np.asarray(c)) * peak

    @staticmethod
    def max_resolution(cfg: dict) -> int:
        return MAX_AUTO_LMAX

    @staticmethod
    def probe_spectrum(cfg: dict, resolution: int, threads: int | None
                       ) -> tuple[np.ndarray, float]:
        grid = ZonalGrid(resolution, cfg["domain"]["dim"])
        rho = initial.initial_values(cfg["initial"], grid)
        return SpectralZonal._amplitudes(grid, grid.analysis(rho)), \
            float(rho[grid.reliable].max())

    def prolong(self, state: np.ndarray, resolution: int) -> np.ndarray:
        """The coefficients of degrees 0..``resolution``, zero-padded."""
        out = np.zeros(resolution + 1)
        out[: len(state)] = state
        return out

    def output_values(self, state: np.ndarray, grid: ZonalGrid) -> np.ndarray:
        """The series at the nodes of ``grid`` (any band limit)."""
        if grid.lmax == self.model.grid.lmax:
            return self.to_density(state)
        return self.model.grid.evaluate(state, grid.t)


class FiniteVolumeZonal(_ZonalEntry, FiniteVolumeDiscretization):
    """CCH finite volumes on cells of equal width in theta with their exact measures
    (``solvers.operators.zonal_finite_volume``; second order in space) and SSP-RK3."""

    geometry = "zonal"

    def __init__(self, model: ZonalFVModel, dt: float | str, cfl: float):
        self.dim = model.dim
        super().__init__(model, GradientFlowZonalFV(model.cells, model.potential_difference,
                                                    model.noise, cfl), dt)

    @classmethod
    def needed_resolution(cls, beta: float, dim: int | None = None) -> int:
        """Twice the band limit the kernel needs (cells per degree of the potential)."""
        return max(16, 2 * zonal_required_lmax(cls.dim if dim is None else dim, beta))

    @classmethod
    def build(cls, cfg: dict, dt: float | str, threads: int | None) -> FiniteVolumeZonal:
        cells = ZonalCells(cfg["discretization"]["resolution"], cfg["domain"]["dim"])
        return cls(ZonalFVModel(cells, *model_arguments(cfg), value=model_value(cfg)), dt,
                   cfg["discretization"]["cfl"])

    @property
    def grid(self):
        return self.model.cells

    @property
    def resolution(self) -> int:
        return self.model.cells.n
