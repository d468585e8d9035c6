"""The two discretizations of the circle: Fourier pseudo-spectral (ETDRK4) and CCH finite
volumes (SSP-RK3)."""
from __future__ import annotations

import numpy as np
from scipy import special

from meanfield.discretizations.base import (
    FiniteVolumeDiscretization,
    SpectralDiscretization,
    model_arguments,
    model_value,
)
from meanfield.initial import circle as initial
from meanfield.model.circle import CircleModel
from meanfield.model.kernels import RESOLUTION_TOLERANCE, required_resolution
from solvers.grids.circle import CircleGrid
from solvers.operators.finite_volume import GradientFlowFV
from solvers.operators.transport import make_transport_jvp, make_transport_operator

MAX_AUTO_POINTS = 1 << 16  # the largest grid resolution = "auto" takes on the circle


class _CircleEntry:
    """What both circle discretizations share: the resolution test and the initial data."""

    geometry = "circle"
    model: CircleModel
    method: str

    @classmethod
    def needed_resolution(cls, beta: float, dim: int | None = None) -> int:
        return required_resolution(beta)

    @classmethod
    def resolves(cls, resolution: int, beta: float, dim: int | None = None) -> bool:
        """``required_resolution``'s test without its search: the modes dropped at n
        points (``k >= n/2``) carry ``I_k/I_1 <= tol``, and ``I_k`` decreases in k, so
        checking ``k = n//2`` is enough (two Bessel values instead of a loop)."""
        if resolution < 8:
            return False
        if beta == 0:
            return True
        top, first = special.ive([resolution // 2, 1], abs(beta))  # |I_k(-b)| = I_k(b)
        return bool(top <= RESOLUTION_TOLERANCE * first)

    @property
    def resolution(self) -> int:
        return self.model.grid.n

    def _check_beta(self, beta: float) -> None:
        """``resolves`` with the model's recurrence, whose values the update then reuses;
        the exact test (scipy) decides, and words the error, only when it fails."""
        if beta < 0 or (beta > 0 and not self.model.prepare_beta(beta)):
            self.check_resolution(self.resolution, beta)

    def initial_density(self, initial_cfg: dict) -> np.ndarray:
        """Point values (spectral) or cell averages (finite volumes) of mass 1."""
        grid = self.model.grid
        return initial.initial_values(initial_cfg, grid,
                                      averages=self.method == "finite-volume")


class SpectralCircle(_CircleEntry, SpectralDiscretization):
    """Fourier pseudo-spectral solver: state = coefficients, ETDRK4 (order 4 in time),
    diffusion exact, products dealiased by the 3/2 rule; fixed or step-doubling steps.

    The Jacobian-vector product is exact: ``-d/dtheta(rho v)`` differentiated by the
    product rule, with the velocity's derivative from ``CircleModel.velocity_derivative``
    (USA: the transport is bilinear, ``J v = B(u, v) + B(v, u)``)."""

    geometry = "circle"

    def __init__(self, model: CircleModel, dt: float | str, tolerance: float,
                 negativity_tolerance: float):
        grid = model.grid
        self._k2 = grid.k.astype(float) ** 2  # (the diffusion's symbol, for every kappa)
        super().__init__(model, make_transport_operator(grid, model.velocity),
                         make_transport_jvp(grid, model.velocity, model.velocity_derivative),
                         dt, tolerance, negativity_tolerance, f"the {grid.n} points")
        self._nonlinear_jvp_many = make_transport_jvp(
            grid, model.velocity, model.velocity_derivative, batch=True)

    batched_jvp = True

    def jvp_many(self, u: np.ndarray, vs: np.ndarray) -> np.ndarray:
        """``F'(u) v`` for a stack of states ``vs`` ``(B, n//2 + 1)`` in one batched call
        (the transforms of the whole stack at once: a dense Jacobian of n = 256 in about
        the time of ten single products)."""
        vs = np.asarray(vs)
        return self.scheme.linear * vs + self._nonlinear_jvp_many(u, vs)

    @classmethod
    def build(cls, cfg: dict, dt: float | str, threads: int | None) -> SpectralCircle:
        grid = CircleGrid(cfg["discretization"]["resolution"], threads=threads)
        return cls(CircleModel(grid, *model_arguments(cfg), value=model_value(cfg)), dt,
                   cfg["time"]["tolerance"],
                   cfg["discretization"]["negativity_tolerance"])

    def _linear_part(self) -> np.ndarray:
        return -self.model.noise * self._k2

    def to_state(self, rho: np.ndarray) -> np.ndarray:
        c = self.model.grid.analysis(rho)
        if self.model.grid.n % 2 == 0:
            c[-1] = 0.0
        return c

    def to_density(self, state: np.ndarray) -> np.ndarray:
        return self.model.grid.synthesis(state)

    # --- resolution = "auto" (meanfield.discretizations.adaptive) ---------------------
    @staticmethod
    def _amplitudes(c: np.ndarray) -> np.ndarray:
        """``|c_0|, 2|c_k|``: mode k's share of the max norm (Nyquist left out)."""
        a = 2 * np.abs(np.asarray(c)[: (len(c) - 1 if len(c) > 1 else 1)])
        a[0] /= 2
        return a

    def mode_amplitudes(self, state: np.ndarray) -> np.ndarray:
        return self._amplitudes(state)

    @staticmethod
    def modes_of(resolution: int) -> int:
        return resolution // 2  # (|k| < n/2)

    @staticmethod
    def resolution_for(modes: int) -> int:
        """The smallest even FFT-friendly size (2^a 3^b 5^c) carrying ``modes``."""
        n = max(8, 2 * int(modes))
        while n % 2 or not _smooth(n):
            n += 1
        return n

    @staticmethod
    def max_resolution(cfg: dict) -> int:
        return MAX_AUTO_POINTS

    @staticmethod
    def probe_spectrum(cfg: dict, resolution: int, threads: int | None
                       ) -> tuple[np.ndarray, float]:
        grid = CircleGrid(resolution, threads=threads)
        rho = initial.initial_values(cfg["initial"], grid)
        return SpectralCircle._amplitudes(grid.analysis(rho)), float(rho.max())

    def prolong(self, state: np.ndarray, resolution: int) -> np.ndarray:
        """The coefficients on ``resolution`` points, zero-padded: the same series."""
        out = np.zeros(resolution // 2 + 1, dtype=complex)
        out[: len(state)] = state
        return out

    def output_values(self, state: np.ndarray, grid: CircleGrid) -> np.ndarray:
        """The series at the nodes of ``grid`` (any size): its modes folded onto the
        grid's, ``e^{ik theta_j}`` being periodic in k with the grid's period."""
        if grid.n == self.model.grid.n:
            return self.to_density(state)
        c = np.asarray(state)[:-1]  # (the Nyquist coefficient is zero)
        folded = np.zeros(grid.n, dtype=complex)
        np.add.at(folded, np.arange(len(c)) % grid.n, c)
        np.add.at(folded, (-np.arange(1, len(c))) % grid.n, np.conj(c[1:]))
        return np.real(np.fft.ifft(folded)) * grid.n


def _smooth(n: int) -> bool:
    for p in (2, 3, 5):
        while n % p == 0:
            n //= p
    return n == 1


class FiniteVolumeCircle(_CircleEntry, FiniteVolumeDiscretization):
    """Carrillo-Chertock-Huang finite volumes ([CCH15]; second order in space) with SSP-RK3
    (third order in time) under the positivity and diffusion step bounds."""

    geometry = "circle"

    def __init__(self, model: CircleModel, dt: float | str, cfl: float):
        super().__init__(model, GradientFlowFV(model.grid.dx, model.potential_difference,
                                               model.noise, cfl), dt)

    @classmethod
    def build(cls, cfg: dict, dt: float | str, threads: int | None) -> FiniteVolumeCircle:
        grid = CircleGrid(cfg["discretization"]["resolution"], threads=threads)
        return cls(CircleModel(grid, *model_arguments(cfg), value=model_value(cfg)), dt,
                   cfg["discretization"]["cfl"])
