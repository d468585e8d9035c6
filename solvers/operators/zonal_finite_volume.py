"""The CCH finite volumes of ``solvers.operators.finite_volume`` on the zonal cells of
S^{d-1} (``solvers.grids.zonal.ZonalCells``: equal widths h in theta on [0, pi]).

For a zonal density the divergence of a flux ``J e_theta`` is ``(1/s) d(s J)/d theta``
with ``s(theta) = w_d sin^{d-2} theta`` the measure per unit theta, so the cell averages
obey

    d rho_j/dt = -(s_{j+1/2} F_{j+1/2} - s_{j-1/2} F_{j-1/2}) / A_j
               = -(up_j F_{j+1/2} - down_j F_{j-1/2})

with ``F = u+ rho^E_j + u- rho^W_{j+1}`` the upwind flux per unit face measure, ``u_{j+1/2}
= -(xi_{j+1} - xi_j)/h``, ``xi = D log rho - psi``, and ``rho^E, rho^W`` the interface
values of the minmod-limited (theta = 2) linear reconstruction, which stay in ``[0, 2
rho_j]``; the pole faces carry no flux. Mass ``sum A_j rho_j`` telescopes (to round-off:
``A_j up_j = s_{j+1/2}`` to an ulp); the discrete free energy decays, ``dF/dt = -sum
s h rho_up u^2 <= 0``, when ``psi_j = (1/A_j) dE_h/d rho_j``.

Step bounds (times ``cfl``): positivity of forward Euler (so of SSP-RK3), ``dt <= 1 / (2
max_j (up_j u+_{j+1/2} + down_j u-_{j-1/2}))``; the explicit diffusion, ``dt <= 2.51 /
(D lambda_max)`` with Gershgorin's ``lambda_max <= max_j 2 (up_j + down_j) / h`` for the
two-point Laplacian. Second order in theta on smooth solutions (first at the two pole
cells, whose reconstruction is flat).
"""
from __future__ import annotations

import functools
from collections.abc import Callable

import numba
import numpy as np

from solvers.operators.finite_volume import LIMITER_THETA, _CellRateBounds


def make_zonal_cch_tendency() -> Callable:
    """Compile ``tendency(rho, dpsi, diffusion, h, up, down, out) -> rate``: ``dpsi[j] =
    psi_{j+1} - psi_j`` (n - 1 interior faces); fills ``out`` with ``d rho/dt`` and
    returns the largest outflow rate (``dt <= 1/(2 rate)`` keeps positivity)."""

    @numba.njit(cache=True, fastmath=False)
    def tendency(rho, dpsi, diffusion, h, up, down, out):
        n = rho.shape[0]
        tiny = 1e-300
        th = LIMITER_THETA
        east = np.empty(n)
        west = np.empty(n)
        for j in range(n):
            s = 0.0
            if 0 < j < n - 1:
                a = th * (rho[j] - rho[j - 1])
                b = 0.5 * (rho[j + 1] - rho[j - 1])
                c = th * (rho[j + 1] - rho[j])
                if a > 0.0 and b > 0.0 and c > 0.0:
                    s = min(a, min(b, c))
                elif a < 0.0 and b < 0.0 and c < 0.0:
                    s = max(a, max(b, c))
            east[j] = rho[j] + 0.5 * s
            west[j] = rho[j] - 0.5 * s
        flux = np.zeros(n + 1)  # flux[j] across the face below cell j; poles: 0
        speed = np.zeros(n + 1)
        for j in range(n - 1):
            u = dpsi[j]
            if diffusion > 0.0:
                u -= diffusion * (np.log(max(rho[j + 1], tiny)) - np.log(max(rho[j], tiny)))
            u /= h
            speed[j + 1] = u
            flux[j + 1] = u * east[j] if u > 0.0 else u * west[j + 1]
        rate = 0.0
        for j in range(n):
            out[j] = -(up[j] * flux[j + 1] - down[j] * flux[j])
            rate = max(rate, up[j] * max(speed[j + 1], 0.0) + down[j] * max(-speed[j], 0.0))
        return rate

    return tendency


zonal_cch_tendency_kernel = functools.cache(make_zonal_cch_tendency)


class GradientFlowZonalFV(_CellRateBounds):
    """Right-hand side and step bounds of the CCH scheme on ``ZonalCells``.

    Args:
        cells: a ``solvers.grids.zonal.ZonalCells``.
        potential_difference: ``dpsi(rho)`` returning ``psi_{j+1} - psi_j`` (n - 1).
        diffusion: ``D >= 0``.
        cfl: safety factor in (0, 1] on both step bounds.
    """

    def __init__(self, cells, potential_difference: Callable[[np.ndarray], np.ndarray],
                 diffusion: float, cfl: float = 0.8):
        super().__init__(potential_difference, diffusion, cfl)
        self.cells = cells
        self.kernel = zonal_cch_tendency_kernel()
        self.laplacian_radius = float(np.max(2 * (cells.up + cells.down) / cells.h))

    def _evaluate(self, rho: np.ndarray) -> tuple[np.ndarray, float]:
        c = self.cells
        rho = np.ascontiguousarray(rho, dtype=float)
        dpsi = np.ascontiguousarray(self.potential_difference(rho), dtype=float)
        out = np.empty_like(rho)
        rate = self.kernel(rho, dpsi, self.diffusion, c.h, c.up, c.down, out)
        return out, rate
