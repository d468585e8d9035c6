"""Finite volumes on a periodic 1-D grid for gradient flows ``d rho/dt = d/dx (rho d xi/dx)``
with ``xi = D log rho - psi`` (``psi`` a potential computed from ``rho``).

The scheme is that of Carrillo, Chertock & Huang (Commun. Comput. Phys. 17, 2015):

- velocities at the interfaces ``u_{j+1/2} = -(xi_{j+1} - xi_j)/dx``;
- upwind fluxes ``F = max(u, 0) rho^E_j + min(u, 0) rho^W_{j+1}`` with the interface values
  of a piecewise-linear reconstruction limited by the generalized minmod (theta = 2,
  which keeps ``rho^E, rho^W >= 0`` when the cell averages are);
- ``d rho_j/dt = -(F_{j+1/2} - F_{j-1/2})/dx``: mass is conserved to round-off.

Semi-discretely, the discrete free energy ``sum_j dx (D rho_j log rho_j) - E_h`` (with
``E_h`` whose gradient is ``psi``) decays: ``dF/dt = -sum dx rho_upwind u^2 <= 0``. With
forward Euler (and so with SSP Runge-Kutta) the averages stay non-negative if
``dt <= dx / (2 max|u|)``. The diffusion is explicit here: SSP-RK3 is stable for the
discrete Laplacian when ``dt <= 2.51 dx^2 / (4 D)`` (its stability interval on the negative
real axis is [-2.51, 0]); both bounds are multiplied by the safety factor ``cfl``.
Second order in space on smooth solutions (the limiter only acts at extrema; it drops out
of the linearisation about a constant state, so growth rates are second-order accurate).
"""
from __future__ import annotations

from typing import Callable

import numba
import numpy as np

LIMITER_THETA = 2.0


def make_cch_tendency() -> Callable:
    """Compile the CCH flux-difference kernel.

    The kernel is ``tendency(rho, dpsi, diffusion, dx, out) -> a`` with ``dpsi[j] =
    psi_{j+1} - psi_j`` (periodic), filling ``out`` with ``d rho/dt`` and returning
    ``a = max(u+_{j+1/2}, -u-_{j-1/2})`` for the positivity bound ``dt <= dx/(2a)``.
    """

    @numba.njit(cache=True, fastmath=False)
    def tendency(rho, dpsi, diffusion, dx, out):
        n = rho.shape[0]
        tiny = 1e-300
        th = LIMITER_THETA
        # Reconstructed east/west interface values of each cell.
        east = np.empty(n)
        west = np.empty(n)
        for j in range(n):
            rm = rho[j - 1]
            rp = rho[(j + 1) % n]
            a = th * (rho[j] - rm)
            b = 0.5 * (rp - rm)
            c = th * (rp - rho[j])
            if a > 0.0 and b > 0.0 and c > 0.0:
                s = min(a, min(b, c))
            elif a < 0.0 and b < 0.0 and c < 0.0:
                s = max(a, max(b, c))
            else:
                s = 0.0
            east[j] = rho[j] + 0.5 * s
            west[j] = rho[j] - 0.5 * s
        flux = np.empty(n)
        amax = 0.0
        if diffusion > 0.0:
            logr = np.empty(n)
            for j in range(n):
                logr[j] = np.log(max(rho[j], tiny))
        for j in range(n):
            jp = (j + 1) % n
            u = dpsi[j]
            if diffusion > 0.0:
                u -= diffusion * (logr[jp] - logr[j])
            u /= dx
            if u > 0.0:
                flux[j] = u * east[j]
                amax = max(amax, u)
            else:
                flux[j] = u * west[jp]
                amax = max(amax, -u)
        for j in range(n):
            out[j] = -(flux[j] - flux[j - 1]) / dx
        return amax

    return tendency


_cch_tendency = None


def cch_tendency_kernel() -> Callable:
    """The compiled kernel (compiled on first use, cached on disk by numba)."""
    global _cch_tendency
    if _cch_tendency is None:
        _cch_tendency = make_cch_tendency()
    return _cch_tendency


class GradientFlowFV:
    """Right-hand side and step bound of the CCH scheme on a periodic grid.

    Args:
        dx: cell width.
        potential_difference: ``dpsi(rho)`` returning ``psi_{j+1} - psi_j`` (length n).
        diffusion: ``D >= 0`` (the noise ``1/kappa``).
        cfl: safety factor in (0, 1] on both step bounds.
    """

    def __init__(self, dx: float, potential_difference: Callable[[np.ndarray], np.ndarray],
                 diffusion: float, cfl: float = 0.8):
        self.dx = dx
        self.potential_difference = potential_difference
        self.diffusion = float(diffusion)
        self.cfl = cfl
        self.kernel = cch_tendency_kernel()
        self.evaluations = 0

    def max_step_diffusion(self) -> float:
        return np.inf if self.diffusion == 0 else 2.51 * self.dx**2 / (4 * self.diffusion)

    def __call__(self, rho: np.ndarray) -> tuple[np.ndarray, float]:
        """Tendency ``d rho/dt`` and the largest step keeping positivity and stability."""
        out = np.empty_like(rho)
        a = self.kernel(rho, self.potential_difference(rho), self.diffusion, self.dx, out)
        self.evaluations += 1
        h_pos = np.inf if a == 0 else self.dx / (2 * a)
        return out, self.cfl * min(h_pos, self.max_step_diffusion())
