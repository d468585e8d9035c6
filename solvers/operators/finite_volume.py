"""Finite volumes on a periodic 1-D grid for gradient flows ``d rho/dt = d/dx (rho d xi/dx)``
with ``xi = D log rho - psi`` (``psi`` a potential computed from ``rho``).

The scheme is that of Carrillo, Chertock & Huang [CCH15]:

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

On the sphere (``GradientFlowMeshFV``, on a ``solvers.grids.mesh.SphereMesh``: Voronoi
cells, whose sides are orthogonal to the arcs joining the generators) the same scheme
reads, per edge ``e = (a, b)`` with side length ``l``, generator distance ``d``:

- ``u_e = -(xi_b - xi_a)/d`` (positive from a to b), ``F_e = l (u+ rho^f_a - u- rho^f_b)``,
  ``d rho_c/dt = -(1/A_c) sum_e F_e`` (out of c): mass to round-off;
- face values ``rho^f = rho_c + phi_c g_c . r_f`` at the side midpoints, ``g_c`` the
  least-squares gradient (weights 1/d^2) in the tangent plane, ``phi_c`` the largest
  factor in [0, 1] keeping every face value in ``[min, min(max, 2 rho_c)]`` of the cell
  and its neighbours (Barth-Jespersen plus the cap ``2 rho_c``): faces stay >= 0;
- ``dF/dt = sum_c A_c xi_c d rho_c/dt = -sum_e l_e d_e rho_up u_e^2 <= 0`` for
  ``F = sum A (D rho log rho) - E_h`` whenever ``psi_c = (1/A_c) dE_h/d rho_c``.

Positivity of a forward-Euler step (so of SSP-RK3): the inflows are >= 0 and the outflow
of cell c is ``sum_out l u+ rho^f_c <= 2 rho_c sum_out l u+``, so ``rho_c^new >= 0`` if
``dt <= A_c / (2 sum_out l_e u_e+)`` for every c (the step is within a factor 2 of
failing: twice that bound gives negative cells on rough data). Linear stability of the
diffusion: about a constant state the scheme is ``d rho/dt = D L rho`` with the
two-point Laplacian ``(L f)_c = (1/A_c) sum (l/d) (f_b - f_c)`` (the reconstruction drops
out of the linearisation), real spectrum, so SSP-RK3 needs ``dt <= 2.51 / (D
lambda_max(-L))``; ``lambda_max ~ 7-8.3/dbar^2`` (``SphereMesh.laplacian_radius``). Both
bounds are multiplied by ``cfl``. Measured orders (relative L1 error against exact cell
averages, levels 2..6): diffusion 1.75, 1.90, 1.95, 1.97 (the coarsest pair is not yet
asymptotic), drift 2.01, 2.00, 1.97, 1.97; L-infinity 1.8-1.9 for diffusion but ~1 for
pure drift, near the 12 pentagons.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

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


# The compiled kernels: compiled on first use, cached on disk by numba.
cch_tendency_kernel = functools.cache(make_cch_tendency)


class _CachedRhs:
    """The evaluation bookkeeping both CCH right-hand sides share.

    ``__call__(rho)`` returns ``d rho/dt`` only; the kernel also gives the largest
    velocity, from which ``max_step(rho)`` derives the step bound. The bound of the last
    state evaluated is kept with that array, so that ``max_step`` right after ``__call__``
    on the same array object costs nothing, not a second potential: a stepper asks for
    both at every step. Identity, not equality (comparing the values would cost 5% of a
    step at 1024 cells): do not modify an array in place between the two calls. Changing
    ``diffusion`` or the potential (the model's parameters) must go through ``invalidate``.
    """

    def __init__(self, potential_difference: Callable[[np.ndarray], np.ndarray],
                 diffusion: float, cfl: float):
        self.potential_difference = potential_difference
        self.diffusion = float(diffusion)
        self.cfl = cfl
        self.evaluations = 0
        self._last_rho: np.ndarray | None = None
        self._last_rate = 0.0

    def invalidate(self) -> None:
        """Forget the last evaluation (after a change of the potential or the diffusion)."""
        self._last_rho = None

    def __call__(self, rho: np.ndarray) -> np.ndarray:
        """The tendency ``d rho/dt``."""
        out, rate = self._evaluate(rho)
        self.evaluations += 1
        self._last_rho, self._last_rate = rho, rate
        return out

    def max_step(self, rho: np.ndarray) -> float:
        """The largest step keeping positivity (forward Euler, so SSP-RK3) and stability
        at ``rho``, times ``cfl``."""
        if rho is not self._last_rho:
            self(rho)
        rate = self._last_rate
        h_pos = np.inf if rate == 0 else self._positivity_step(rate)
        return self.cfl * min(h_pos, self.max_step_diffusion())


class GradientFlowFV(_CachedRhs):
    """Right-hand side and step bound of the CCH scheme on a periodic grid.

    Args:
        dx: cell width.
        potential_difference: ``dpsi(rho)`` returning ``psi_{j+1} - psi_j`` (length n).
        diffusion: ``D >= 0`` (the noise ``1/kappa``).
        cfl: safety factor in (0, 1] on both step bounds.
    """

    def __init__(self, dx: float, potential_difference: Callable[[np.ndarray], np.ndarray],
                 diffusion: float, cfl: float = 0.8):
        super().__init__(potential_difference, diffusion, cfl)
        self.dx = dx
        self.kernel = cch_tendency_kernel()

    def max_step_diffusion(self) -> float:
        return np.inf if self.diffusion == 0 else 2.51 * self.dx**2 / (4 * self.diffusion)

    def _positivity_step(self, speed: float) -> float:
        return self.dx / (2 * speed)

    def _evaluate(self, rho: np.ndarray) -> tuple[np.ndarray, float]:
        out = np.empty_like(rho)
        a = self.kernel(rho, self.potential_difference(rho), self.diffusion, self.dx, out)
        return out, a


# ---------------------------------------------------------------------------------------
# The same scheme on a spherical Voronoi mesh (see ``solvers.grids.mesh``).

def make_cch_mesh_tendency() -> Callable:
    """Compile the CCH flux kernel for an unstructured mesh with orthogonal dual edges.

    The kernel is ``tendency(rho, dpsi, diffusion, edges, edge_slot, edge_coupling, areas,
    neighbor_start, neighbor, gradient_weights, face_offset, out) -> rate`` with
    ``dpsi[e] = psi_b - psi_a`` on edge ``e = (a, b)`` and ``edge_coupling = l/d``; it fills
    ``out`` with ``d rho/dt`` and returns ``rate = max_c (sum_out l_e u_e^+) / A_c`` for
    the positivity bound ``dt <= 1 / (2 rate)``.
    """

    @numba.njit(cache=True, fastmath=False)
    def tendency(rho, dpsi, diffusion, edges, edge_slot, edge_coupling, areas,
                 neighbor_start, neighbor, gradient_weights, face_offset, out):
        n = rho.shape[0]
        m = edges.shape[0]
        tiny = 1e-300
        # Limited linear reconstruction: least-squares gradient, then one factor phi per
        # cell keeping every face value in [lo, hi], lo = min of the cell and its
        # neighbours, hi = min(max of them, 2 rho_c) (Barth-Jespersen plus the cap 2 rho_c
        # that the positivity bound needs).
        face = np.empty(neighbor.shape[0])
        for c in range(n):
            rc = rho[c]
            k0 = neighbor_start[c]
            k1 = neighbor_start[c + 1]
            gx = 0.0
            gy = 0.0
            lo = rc
            hi = rc
            for k in range(k0, k1):
                rb = rho[neighbor[k]]
                gx += gradient_weights[k, 0] * (rb - rc)
                gy += gradient_weights[k, 1] * (rb - rc)
                lo = min(lo, rb)
                hi = max(hi, rb)
            hi = max(rc, min(hi, 2.0 * rc))
            phi = 1.0
            up = hi - rc
            down = lo - rc
            for k in range(k0, k1):
                delta = gx * face_offset[k, 0] + gy * face_offset[k, 1]
                face[k] = delta
                if delta > up:  # (divide only where the limiter acts)
                    phi = min(phi, up / delta)
                elif delta < down:
                    phi = min(phi, down / delta)
            for k in range(k0, k1):
                # (the clip only removes round-off: rc + (lo - rc)/delta * delta != lo)
                face[k] = min(max(rc + phi * face[k], lo), hi)
        if diffusion > 0.0:
            logr = np.empty(n)
            for c in range(n):
                logr[c] = np.log(max(rho[c], tiny))
        net = np.zeros(n)
        outflow = np.zeros(n)
        # Upwind fluxes l u rho_face with u = -(xi_b - xi_a)/d, xi = D log rho - psi.
        for e in range(m):
            a = edges[e, 0]
            b = edges[e, 1]
            x = dpsi[e]
            if diffusion > 0.0:
                x -= diffusion * (logr[b] - logr[a])
            lu = edge_coupling[e] * x
            if lu > 0.0:
                f = lu * face[edge_slot[e, 0]]
                outflow[a] += lu
            else:
                f = lu * face[edge_slot[e, 1]]
                outflow[b] -= lu
            net[a] += f
            net[b] -= f
        rate = 0.0
        for c in range(n):
            out[c] = -net[c] / areas[c]
            rate = max(rate, outflow[c] / areas[c])
        return rate

    return tendency


cch_mesh_tendency_kernel = functools.cache(make_cch_mesh_tendency)


class _CellRateBounds(_CachedRhs):
    """The step bounds of a CCH right-hand side whose kernel returns the largest outflow
    rate per cell measure (the mesh's and the zonal cells'): positivity ``1 / (2 rate)``,
    diffusion ``2.51 / (D lambda_max)`` with ``lambda_max = self.laplacian_radius``, the
    radius of the linearised (two-point) diffusion."""

    laplacian_radius: float

    def max_step_diffusion(self) -> float:
        """``2.51 / (D lambda_max)``: SSP-RK3 on the linearised (two-point) diffusion."""
        if self.diffusion == 0:
            return np.inf
        return 2.51 / (self.diffusion * self.laplacian_radius)

    def _positivity_step(self, rate: float) -> float:
        return 1.0 / (2 * rate)


class GradientFlowMeshFV(_CellRateBounds):
    """Right-hand side and step bound of the CCH scheme on a ``SphereMesh``.

    The state is the vector of cell averages ``rho_c`` (mass ``mesh.integrate(rho)``, initial
    data from ``solvers.grids.mesh.cell_averages``); ``psi`` is sampled at the generators
    ``mesh.centers``. Free-energy decay needs ``psi_c = (1/A_c) dE_h/d rho_c``: for
    ``psi = K rho``, ``K`` symmetric in the product ``sum_c A_c f_c g_c``.

    Args:
        mesh: a ``solvers.grids.mesh.SphereMesh``.
        potential_difference: ``dpsi(rho)`` returning ``psi_b - psi_a`` on every edge
            ``(a, b) = mesh.edges[e]`` (``mesh.difference(psi)`` of the cell values).
        diffusion: ``D >= 0``.
        cfl: safety factor in (0, 1] on both step bounds.
    """

    def __init__(self, mesh, potential_difference: Callable[[np.ndarray], np.ndarray],
                 diffusion: float, cfl: float = 0.8):
        super().__init__(potential_difference, diffusion, cfl)
        self.mesh = mesh
        self.kernel = cch_mesh_tendency_kernel()
        self.edge_coupling = mesh.edge_length / mesh.edge_distance
        self.laplacian_radius = mesh.laplacian_radius

    def _evaluate(self, rho: np.ndarray) -> tuple[np.ndarray, float]:
        m = self.mesh
        rho = np.ascontiguousarray(rho, dtype=float)
        dpsi = np.ascontiguousarray(self.potential_difference(rho), dtype=float)
        out = np.empty_like(rho)
        rate = self.kernel(rho, dpsi, self.diffusion, m.edges,
                           m.edge_slot, self.edge_coupling, m.weights, m.neighbor_start,
                           m.neighbor, m.gradient_weights, m.face_offset, out)
        return out, rate
