"""The attention model on the sphere S^2 and its spherical-harmonic solver.

State: the packed coefficients ``a_lm`` of rho (``solvers.transforms.sht`` layout, orthonormal
harmonics). With ``g_l, s_l`` the scaled Funk-Hecke multipliers of ``meanfield.model.kernels``:

- USA: ``v = grad Phi``, ``Phi_lm = e^beta g_l a_lm``;
- SA:  ``v = grad Psi``, ``Psi = (1/beta) log(K*rho)``; since ``e^{-beta} K*rho = s_0 a_00
  Y_00 + beta (g*rho)``, ``Psi = (1/beta) log1p(beta phi / M)`` up to a constant, with
  ``phi = g*rho`` and ``M = s_0 a_00 Y_00``: evaluated on the grid as
  ``(phi/M) log1p(y)/y``, exact as beta -> 0, then analysed (it is smooth, not
  band-limited: it is truncated at the band limit like everything else);
- ``value = c`` (the value matrix ``V = c I``, ``[weights] value``) multiplies the
  potential ``U`` (so the velocity and the transport) by c (``c < 0``: repulsive);
  ``c = 1`` is the model above, bit for bit.

Transport through scalar transforms only (docs/conventions.md): for a gradient field,
``div(rho grad U) = (Delta(rho U) + rho Delta U - U Delta rho) / 2``. The products are
formed on the 3/2-rule ``product_grid`` and analysed back to the band limit, so they are
exact truncations (dealiased). Per right-hand side: 4 syntheses and 2 analyses (USA), 5
and 3 (SA). Time stepping: ETDRK4 with the diffusion ``-l(l+1)/kappa`` exact, as on the
circle.

Diagnostics from the coefficients and the output grid: mass ``sqrt(4 pi) a_00``; energy
``E_beta(rho) - E_beta(uniform) = (1/2) e^beta sum_{l>=1} g_l sum_m |a_lm|^2`` (all
orders m = -l..l); free energy ``(1/kappa) int rho log rho - c energy``; order
parameter and mean direction by Gauss quadrature of ``int x rho`` (exact for band-limited
rho).
"""
from __future__ import annotations

import math

import numpy as np

from meanfield.metrics.diagnostics import summarize
from meanfield.model.kernels import (
    log1p_ratio,
    sphere_kernel_multiplier,
    sphere_potential_multiplier,
)
from solvers.grids.coordinates import colat_lon
from solvers.grids.sphere import SphereGrid, product_grid
from solvers.transforms.pointwise import sphere_synthesis_at
from solvers.transforms.sht import alm_lmax, product_sizes, resize_alm

Y00 = 1 / math.sqrt(4 * math.pi)
# Potential coefficients below this fraction of the largest are dropped before synthesis:
# under round-off, and the cost of a synthesis grows with the degree it carries.
POTENTIAL_CUTOFF = 1e-17


def effective_lmax(coeffs: np.ndarray, degrees: np.ndarray) -> int:
    """Largest degree whose coefficients exceed ``POTENTIAL_CUTOFF`` of the largest."""
    mag = np.abs(coeffs)
    keep = mag > POTENTIAL_CUTOFF * mag.max() if mag.max() > 0 else mag > 0
    return int(degrees[keep].max()) if keep.any() else 0


class SphereModel:
    """USA or SA dynamics with noise ``1/kappa`` at band limit ``grid.lmax``.

    Args:
        grid: the output grid (``SphereGrid(lmax)``); products use ``product_grid(lmax)``.
        beta, kappa, normalized: as on the circle.
        threads: threads of the transforms.
        value: the c of the value matrix ``V = c I``: the potential is multiplied by c
            (1: today's model; < 0: repulsive).
    """

    def __init__(self, grid: SphereGrid, beta: float, kappa: float, normalized: bool,
                 threads: int | None = None, value: float = 1.0):
        self.grid, self.normalized, self.threads = grid, normalized, threads
        self.value = float(value)
        self.laplacian = grid.laplacian
        # weight of each packed coefficient in sums over all orders m = -l..l
        self.order_weight = np.where(grid.m == 0, 1.0, 2.0)
        self.points = grid.points
        self._degree_cache: dict[int, np.ndarray] = {}
        self._product_grids: dict[tuple[int, int], SphereGrid] = {}
        self.beta = None
        self.set_parameters(beta, kappa)

    def set_parameters(self, beta: float | None = None, kappa: float | None = None,
                       value: float | None = None) -> None:
        """Change beta, kappa and/or value in place: the multipliers, the potential's
        degree and the noise are recomputed; product grids are kept, one per size (a beta
        that changes the potential's degree takes a grid of another size, made once)."""
        if beta is not None and beta != self.beta:
            grid, l = self.grid, self.grid.l
            self.beta = beta
            self.g = sphere_potential_multiplier(grid.lmax, beta)[l]
            # The kernel multipliers decay super-exponentially in l: g*rho carries degrees
            # up to about beta + O(sqrt(beta)) only, and is synthesised at that band limit.
            self.g_lmax = effective_lmax(self.g, l)
            # Every product pairs rho (or Delta rho) with the potential. USA's potential
            # has degree g_lmax, so a grid for degree lmax + g_lmax is exact (1.1-1.3
            # times the output grid instead of 2.25); SA's log-potential is not
            # band-limited: 3/2 rule.
            self.products = self._product_grid(None if self.normalized else self.g_lmax)
            self.s = sphere_kernel_multiplier(grid.lmax, beta)[l]
        if value is not None:
            self.value = float(value)
        # The potential's factor: c e^beta (USA) or c (SA, applied by _scaled).
        self.scale = self.value * (1.0 if self.normalized else math.exp(self.beta))
        if kappa is not None:
            self.kappa = kappa
            self.noise = 0.0 if math.isinf(kappa) else 1.0 / kappa

    def _scaled(self, *fields: np.ndarray) -> tuple[np.ndarray, ...]:
        """SA's potential fields times the value c (left as they are for c = 1)."""
        return fields if self.value == 1 else tuple(self.value * f for f in fields)

    def _product_grid(self, other_lmax: int | None) -> SphereGrid:
        size = product_sizes(self.grid.lmax, other_lmax)
        grid = self._product_grids.get(size)
        if grid is None:
            grid = product_grid(self.grid.lmax, threads=self.threads, other_lmax=other_lmax)
            self._product_grids[size] = grid
        return grid

    def _laplacian_of(self, coeffs: np.ndarray) -> np.ndarray:
        d = self._degrees(coeffs.size)
        return -(d * (d + 1.0)) * coeffs

    def potential_fields(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The velocity potential U and its Laplacian on the product grid.

        USA: ``U = e^beta phi`` with ``phi = g*rho`` of degree ``g_lmax``: two syntheses
        at that degree. SA: ``U = Psi = log(K)/beta`` with ``K = M + beta phi`` the scaled
        ``K*rho``, evaluated pointwise (never truncated), and
        ``Delta Psi = Delta phi / K - beta |grad phi|^2 / K^2`` with
        ``|grad phi|^2 = Delta(phi^2)/2 - phi Delta phi``; ``phi^2`` has degree
        ``2 g_lmax``, so every transform here runs at degree <= 2 g_lmax, not L.
        """
        p = self.products
        phi_lm = resize_alm(self.g * a, self.g_lmax)
        phi = p.synthesis(phi_lm)
        lap_phi = p.synthesis(self._laplacian_of(phi_lm))
        if not self.normalized:
            return self.scale * phi, self.scale * lap_phi
        square_lmax = 2 * self.g_lmax
        if square_lmax > p.lmax:  # kernel barely resolved: Psi through its coefficients
            return self._scaled(*self._potential_fields_by_analysis(a, phi))
        grad2 = 0.5 * self._lap_product(phi, phi, square_lmax) - phi * lap_phi
        mean = self.s[0] * a[0].real * Y00
        kernel = mean + self.beta * phi
        return self._scaled(self._log_ratio(phi, mean),
                            lap_phi / kernel - self.beta * grad2 / kernel**2)

    def velocity_at(self, a: np.ndarray, points: np.ndarray) -> np.ndarray:
        """The velocity field ``grad U`` of the density with coefficients ``a`` at the
        directions of ``points`` (m, 3), off the grid (tangent vectors): USA ``e^beta
        grad phi``, SA ``grad phi / K`` with ``K = M + beta phi`` (``potential_fields``),
        ``phi = g*rho`` of degree ``g_lmax`` evaluated exactly (``sphere_synthesis_at``)."""
        phi_lm = resize_alm(self.g * a, self.g_lmax)
        phi, grad = sphere_synthesis_at(phi_lm, self.g_lmax, points, gradient=True,
                                        threads=self.threads or 1)
        if not self.normalized:
            return self.scale * grad
        kernel = self.s[0] * a[0].real * Y00 + self.beta * phi
        return self._scaled(grad / kernel[:, None])[0]

    def _log_ratio(self, phi: np.ndarray, mean: float) -> np.ndarray:
        """``log(1 + beta phi/M)/beta`` as ``(phi/M) log1p(y)/y``: exact as beta -> 0."""
        return log1p_ratio(phi, mean, self.beta)

    def _potential_fields_by_analysis(self, a: np.ndarray, phi: np.ndarray):
        p = self.products
        psi_lm = p.analysis(self._log_ratio(phi, self.s[0] * a[0].real * Y00))
        psi_lm = resize_alm(psi_lm, effective_lmax(psi_lm, self.grid.l))
        return p.synthesis(psi_lm), p.synthesis(self._laplacian_of(psi_lm))

    def tendency(self, a: np.ndarray) -> np.ndarray:
        """Coefficients of ``-div(rho grad U)`` (dealiased)."""
        return self._transport(a, *self.potential_fields(a))

    def _transport(self, a: np.ndarray, pot: np.ndarray, lap_pot: np.ndarray) -> np.ndarray:
        """``-div(rho grad U)`` for the density ``a`` and the potential fields: bilinear."""
        p, lap = self.products, self.laplacian
        rho = p.synthesis(a)
        lap_rho = p.synthesis(lap * a)
        first = p.analysis(rho * pot)
        second = p.analysis(rho * lap_pot - pot * lap_rho)
        out = -0.5 * (lap * first + second)
        out[0] = 0.0  # a divergence has zero mean: mass is conserved exactly, not to 1e-16
        return out

    def tendency_jvp(self, a: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Derivative of ``tendency`` at ``a`` along ``w``, exact (not a difference
        quotient): the transport is bilinear in (rho, U), so the derivative is
        ``T(w, U(a)) + T(a, U'(a) w)`` with ``U'`` from ``potential_fields_jvp``."""
        pot, lap_pot, dpot, dlap_pot = self.potential_fields_jvp(a, w)
        return self._transport(w, pot, lap_pot) + self._transport(a, dpot, dlap_pot)

    def potential_fields_jvp(self, a: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, ...]:
        """``U, Delta U`` at ``a`` and their derivatives along ``w`` on the product grid.

        USA: linear, ``U'(a) w = U(w)``. SA, with ``K = M + beta phi`` (``M`` the mass
        term ``s_0 a_00 Y_00``): ``Psi = log(K/M)/beta`` has the derivative
        ``dPsi = dphi/K - dM phi/(K M)`` (no 1/beta: exact as beta -> 0; ``dM`` is the
        mass of ``w``), and ``Delta Psi = Delta phi/K - beta G/K^2`` with ``G = |grad
        phi|^2`` has ``dDelta Psi = Delta dphi/K - Delta phi dK/K^2 - beta dG/K^2 + 2 beta G
        dK/K^3``, ``dG = Delta(phi dphi) - dphi Delta phi - phi Delta dphi``. When
        ``Psi`` goes through its coefficients (``2 g_lmax > lmax``), ``dPsi`` is analysed
        and truncated at the same degree.
        """
        p = self.products
        fields = []
        for coeffs in (a, w):
            phi_lm = resize_alm(self.g * coeffs, self.g_lmax)
            fields += [p.synthesis(phi_lm), p.synthesis(self._laplacian_of(phi_lm))]
        phi, lap_phi, dphi, lap_dphi = fields
        if not self.normalized:
            return tuple(self.scale * f for f in fields)
        mean, dmean = (self.s[0] * c[0].real * Y00 for c in (a, w))
        kernel = mean + self.beta * phi
        dkernel = dmean + self.beta * dphi
        dpsi = dphi / kernel - dmean * phi / (kernel * mean)
        square_lmax = 2 * self.g_lmax
        if square_lmax > p.lmax:
            psi_lm = p.analysis(self._log_ratio(phi, mean))
            degree = effective_lmax(psi_lm, self.grid.l)
            out = []
            for lm in (resize_alm(psi_lm, degree), resize_alm(p.analysis(dpsi), degree)):
                out += [p.synthesis(lm), p.synthesis(self._laplacian_of(lm))]
            return self._scaled(*out)
        grad2 = 0.5 * self._lap_product(phi, phi, square_lmax) - phi * lap_phi
        dgrad2 = self._lap_product(phi, dphi, square_lmax) - dphi * lap_phi - phi * lap_dphi
        lap_psi = lap_phi / kernel - self.beta * grad2 / kernel**2
        dlap_psi = (lap_dphi / kernel - lap_phi * dkernel / kernel**2
                    - self.beta * dgrad2 / kernel**2
                    + 2 * self.beta * grad2 * dkernel / kernel**3)
        return self._scaled(self._log_ratio(phi, mean), lap_psi, dpsi, dlap_psi)

    def _lap_product(self, f: np.ndarray, g: np.ndarray, lmax: int) -> np.ndarray:
        """``Delta(f g)`` on the product grid, for a product of degree <= ``lmax``."""
        p = self.products
        return p.synthesis(self._laplacian_of(p.analysis(f * g, lmax)))

    def _degrees(self, size: int) -> np.ndarray:
        """Degrees ``l`` of a packed coefficient array of ``size`` entries."""
        cached = self._degree_cache.get(size)
        if cached is None:
            cached = SphereGrid.degrees(alm_lmax(size))[0].astype(float)
            self._degree_cache[size] = cached
        return cached

    def diagnostics(self, rho: np.ndarray, a: np.ndarray | None = None) -> dict:
        """Mass, energy, free energy, order parameter and mean direction."""
        grid = self.grid
        if a is None:
            a = grid.analysis(rho)
        s = 0.5 * float(np.sum(self.g * self.order_weight * np.abs(a) ** 2))
        with np.errstate(over="ignore"):
            energy = s * (1.0 if self.beta == 0 else math.exp(self.beta)) if s > 0 else 0.0
        return summarize(grid.weights, rho, self.points, energy, self.noise,
                         value=self.value)


# --- finite volumes on the icosahedral Voronoi mesh ---------------------------------------
def mesh_level(cells: int) -> int:
    """The refinement level of an icosahedral mesh of ``cells`` = 10 4^level + 2 cells."""
    for level in range(8):
        if 10 * 4**level + 2 == cells:
            return level
    raise ValueError(cells)


class SphereFVModel:
    """The attention model on the cells of a ``SphereMesh`` (finite volumes).

    The potential at the cell centres is ``phi = S G S^T (A rho)``: ``S^T`` the adjoint
    spherical-harmonic synthesis at the centres (the midpoint-rule coefficients
    ``sum_c A_c rho_c conj(Y_lm(x_c))``), ``G`` the multipliers ``g_l`` up to the degree
    they carry, ``S`` the synthesis at the centres (ducc0's transforms at arbitrary
    points, accuracy 1e-13). The operator is symmetric, so ``phi`` is the exact gradient
    of the discrete energy ``E_h = (1/2) sum_c A_c rho_c phi_c`` and the CCH fluxes keep
    the discrete free energy ``sum_c A_c rho_c log rho_c / kappa - c E_h`` non-increasing
    (``c = value``, the value matrix ``V = c I``, multiplies the potential differences).
    """

    def __init__(self, mesh, beta: float, kappa: float, normalized: bool,
                 value: float = 1.0):
        self.mesh, self.normalized = mesh, normalized
        self.value = float(value)
        self.loc = np.ascontiguousarray(colat_lon(mesh.points))  # (ducc0's point layout)
        self.points = mesh.points
        self.beta = None
        self.set_parameters(beta, kappa)

    def set_parameters(self, beta: float | None = None, kappa: float | None = None,
                       value: float | None = None) -> None:
        """Change beta, kappa and/or value in place (the mesh and the centres are kept)."""
        if beta is not None and beta != self.beta:
            self.beta = beta
            full = sphere_potential_multiplier(400, beta)
            self.lmax = max(1, effective_lmax(full, np.arange(401)))
            l, _ = SphereGrid.degrees(self.lmax)
            self.g = full[l]
            self.s0 = float(sphere_kernel_multiplier(0, beta)[0])
        if value is not None:
            self.value = float(value)
        self.scale = self.value * (1.0 if self.normalized else math.exp(self.beta))
        if kappa is not None:
            self.kappa = kappa
            self.noise = 0.0 if math.isinf(kappa) else 1.0 / kappa

    def _phi(self, rho: np.ndarray) -> tuple[np.ndarray, complex]:
        import ducc0
        coeffs = ducc0.sht.experimental.adjoint_synthesis_general(
            map=(self.mesh.weights * rho)[None], spin=0, lmax=self.lmax, loc=self.loc,
            epsilon=1e-13)[0]
        phi = ducc0.sht.experimental.synthesis_general(
            alm=(self.g * coeffs)[None], spin=0, lmax=self.lmax, loc=self.loc,
            epsilon=1e-13)[0]
        return phi, coeffs[0]

    def potential_difference(self, rho: np.ndarray) -> np.ndarray:
        """``psi_b - psi_a`` on every edge ``(a, b)``."""
        phi, c00 = self._phi(rho)
        dphi = self.mesh.difference(phi)
        if not self.normalized:
            return self.scale * dphi
        kernel = self.s0 * c00.real * Y00 + self.beta * phi  # e^{-beta} K*rho at centres
        out = log1p_ratio(dphi / kernel[self.mesh.edges[:, 0]], 1.0, self.beta)
        return out if self.value == 1 else self.value * out

    def diagnostics(self, rho: np.ndarray) -> dict:
        phi, _ = self._phi(rho)
        with np.errstate(over="ignore"):
            energy = 0.5 * float(self.mesh.weights @ (rho * phi)) * (
                1.0 if self.beta == 0 else math.exp(self.beta))
        return summarize(self.mesh.weights, rho, self.points, energy, self.noise,
                         value=self.value)
