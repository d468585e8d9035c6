"""The attention model on zonal densities of S^{d-1} (any d >= 2) and its Gegenbauer solver.

State: the coefficients ``c_l`` (l = 0..L) of rho in the orthonormal Gegenbauer polynomials
``Q_l(t)``, ``t = cos theta = <x, e>``, against the normalized surface measure (uniform
density 1, mass ``c_0``; ``solvers.grids.zonal``). With the multipliers ``a_l`` of
``meanfield.model.zonal_kernels`` (USA scaled by ``e^{-beta}``):

- USA: ``U = c e^beta phi``, ``phi = sum_l a_l c_l Q_l`` (a polynomial of degree
  ``a_lmax``, the last degree whose multiplier is above round-off);
- SA: ``U = c Psi``, ``Psi = (1/beta) log(K*rho) = (1/beta) log1p(beta phi / M)`` up to a
  constant (``M = c_0``, ``phi`` with SA's multipliers), evaluated pointwise as
  ``(phi/M) log1p(y)/y`` (exact as beta -> 0), with ``Delta Psi = Delta phi / K - beta
  (1 - t^2) phi'^2 / K^2``, ``K = M + beta phi``, also pointwise (``phi'`` from the
  differentiated recurrence): nothing about Psi is truncated before the products.

Transport through scalar transforms only: ``div(rho grad U) = (Delta(rho U) + rho Delta U -
U Delta rho)/2``, the Laplacian diagonal (``-l(l + d - 2)``). The products are formed at
the Gauss nodes of a product grid and analysed to degree L: exact (dealiased) for USA
(``2L + a_lmax``), the 3/2 rule for SA. One right-hand side is two matrix products (the
four fields at the nodes in one, the two products analysed in the other). ETDRK4 takes the
diffusion ``-l(l + d - 2)/kappa`` exactly, as on the circle and the sphere.

Diagnostics: mass ``c_0``... by quadrature at the output nodes; energy ``E_beta(rho) -
E_beta(uniform) = (1/2) e^beta sum_{l>=1} a_l c_l^2`` (USA's multipliers, for both
models); free energy ``(1/kappa) int rho log rho dsigma - c energy`` (entropy against the
normalized measure: on S^2 it is the sphere's plus ``log 4 pi``); order parameter
``|int t dmu|`` (the other components vanish by symmetry), mean direction its sign.
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np

from meanfield.metrics.diagnostics import summarize
from meanfield.model.kernels import log1p_ratio
from meanfield.model.zonal_kernels import log_uniform_weights, zonal_multipliers
from solvers.grids.zonal import ZonalGrid, product_nodes

# Degrees whose part of the kernel is below this fraction of the largest part (in the sup
# norm, ``log_uniform_weights``) are dropped: under round-off wherever the density is.
MULTIPLIER_CUTOFF = 1e-17


def effective_degree(a: np.ndarray, dim: int) -> int:
    """Largest degree whose part of the kernel, ``|a_l| N(d, l)`` (the multiplier times
    the dimension of its harmonics: a concentrated density has coefficients up to
    ``sqrt(N)``), exceeds ``MULTIPLIER_CUTOFF`` of the largest. The multipliers alone
    would stop far too early at large d (d = 512, beta = 22.6: degree 13, a potential off
    by 2.6e-4 for a von Mises density of concentration 300)."""
    w = log_uniform_weights(a, dim)
    if not np.isfinite(w).any():
        return 1
    keep = np.nonzero(w > math.log(MULTIPLIER_CUTOFF) + np.max(w))[0]
    return max(int(keep[-1]), 1)


# From this many degrees on, a right-hand side splits its tables by parity (half the
# multiply-adds, a few more elementwise operations; measured at d = 3: L = 255 even,
# L = 383 1.7-2x faster, L = 127 1.2-1.7x slower).
PARITY_MIN_DEGREES = 300


def set_value_and_noise(model, value: float | None, kappa: float | None) -> None:
    """What both zonal models do with a new value c and kappa: the potential's factor
    ``scale`` (c e^beta for USA, c for SA) and the noise ``1/kappa`` (0 without)."""
    if value is not None:
        model.value = float(value)
    model.scale = model.value * (1.0 if model.normalized else math.exp(model.beta))
    if kappa is not None:
        model.kappa = kappa
        model.noise = 0.0 if math.isinf(kappa) else 1.0 / kappa


def make_zonal_products():
    """Compile the pointwise part of a right-hand side, fused in one loop over the nodes.

    ``products(fields, t, normalized, scale, value, beta, mean, dphi, out)``: ``fields``
    holds rho, Delta rho, phi, Delta phi at the product nodes (rows), ``dphi`` phi' (SA);
    fills ``out`` with ``rho U`` and ``rho Delta U - U Delta rho`` (the two products of
    the transport), U = ``scale phi`` (USA) or ``value Psi`` (SA, ``ZonalModel.
    potential_fields``). Below L ~ 128 the numpy version spent 70-85 % of a right-hand
    side on a dozen elementwise calls and their temporaries."""

    @numba.njit(cache=True, fastmath=False)
    def products(fields, t, normalized, scale, value, beta, mean, dphi, out):
        for i in range(fields.shape[1]):
            rho = fields[0, i]
            lap_rho = fields[1, i]
            phi = fields[2, i]
            lap_phi = fields[3, i]
            if normalized:
                kernel = mean + beta * phi
                y = beta * phi / mean
                ratio = 1.0 - y / 2 if abs(y) < 1e-8 else math.log1p(y) / y
                pot = value * ((phi / mean) * ratio)
                grad2 = (1.0 - t[i] ** 2) * dphi[i] ** 2
                lap_pot = value * (lap_phi / kernel - beta * grad2 / kernel ** 2)
            else:
                pot = scale * phi
                lap_pot = scale * lap_phi
            out[0, i] = rho * pot
            out[1, i] = rho * lap_pot - pot * lap_rho

    return products


zonal_products_kernel = functools.cache(make_zonal_products)


class ZonalModel:
    """USA or SA dynamics with noise ``1/kappa`` on zonal densities of S^{dim-1}.

    Args:
        grid: the output grid (``ZonalGrid(L, dim)``).
        beta, kappa, normalized: as on the circle and the sphere.
        value: the c of the value matrix ``V = c I`` (multiplies the potential).
    """

    def __init__(self, grid: ZonalGrid, beta: float, kappa: float, normalized: bool,
                 value: float = 1.0):
        self.grid, self.normalized, self.dim = grid, normalized, grid.dim
        self.value = float(value)
        self.laplacian = grid.laplacian
        self.points = grid.points
        self._products: dict[int, ZonalGrid] = {}
        self.beta = None
        self.set_parameters(beta, kappa)

    def set_parameters(self, beta: float | None = None, kappa: float | None = None,
                       value: float | None = None) -> None:
        """Change beta, kappa and/or value in place (the grids are kept, one product grid
        per size)."""
        if beta is not None and beta != self.beta:
            lmax = self.grid.lmax
            self.beta = float(beta)
            self.energy_multiplier = zonal_multipliers(lmax, self.dim, beta, False)
            self.a = (zonal_multipliers(lmax, self.dim, beta, True) if self.normalized
                      else self.energy_multiplier)
            self.a_lmax = effective_degree(self.a, self.dim)
            nodes = product_nodes(lmax, None if self.normalized else self.a_lmax)
            if nodes not in self._products:
                self._products[nodes] = ZonalGrid(lmax, self.dim, nodes)
            self.products = self._products[nodes]
            self._lap_a = self.laplacian * self.a
        set_value_and_noise(self, value, kappa)

    # --- the potential ---------------------------------------------------------------------
    def _phi_fields(self, coeffs: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``phi``, ``Delta phi`` and ``phi'`` at the product nodes (``coeffs`` (..., L+1));
        ``phi'`` only for SA (None for USA, whose potential needs no gradient: one matrix
        product fewer per right-hand side)."""
        p = self.products
        phi_c = self.a * coeffs
        stacked = np.stack([phi_c, self.laplacian * phi_c], axis=-2) @ p.synthesis_matrix
        dphi = p.derivative(phi_c) if self.normalized else None
        return stacked[..., 0, :], stacked[..., 1, :], dphi

    def potential_fields(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``U`` and ``Delta U`` at the product nodes."""
        phi, lap_phi, dphi = self._phi_fields(c)
        if not self.normalized:
            return self.scale * phi, self.scale * lap_phi
        mean = c[0]
        kernel = mean + self.beta * phi
        grad2 = (1 - self.products.t**2) * dphi**2
        return (self.value * self._log_ratio(phi, mean),
                self.value * (lap_phi / kernel - self.beta * grad2 / kernel**2))

    def _log_ratio(self, phi: np.ndarray, mean: float) -> np.ndarray:
        """``log(1 + beta phi/M)/beta`` as ``(phi/M) log1p(y)/y``: exact as beta -> 0."""
        return log1p_ratio(phi, mean, self.beta)

    def velocity_at(self, c: np.ndarray, points: np.ndarray) -> np.ndarray:
        """The velocity ``U'(t) (e - t x)`` at unit vectors ``points`` (m, d), off the grid
        (``t = x_1``; ``e - t x`` is the surface gradient of ``t``)."""
        points = np.asarray(points, dtype=float)
        points = points / np.linalg.norm(points, axis=1, keepdims=True)  # (directions)
        t = np.clip(points[:, 0], -1.0, 1.0)
        phi, dphi = self.grid.evaluate(self.a * c, t, derivative=True)
        speed = self.scale * dphi if not self.normalized else \
            self.value * dphi / (c[0] + self.beta * phi)
        tangent = -t[:, None] * points
        tangent[:, 0] += 1.0
        return speed[:, None] * tangent

    # --- the transport -----------------------------------------------------------------------
    def tendency(self, c: np.ndarray) -> np.ndarray:
        """Coefficients of ``-div(rho grad U)`` (mass exactly conserved): the four fields
        at the product nodes in one matrix product, the pointwise work in one compiled
        loop (``make_zonal_products``), the two products analysed in one matrix product.
        Equal to ``_transport(c, *potential_fields(c))`` to round-off (a test checks)."""
        if np.ndim(c) != 1:
            return self._transport(c, *self.potential_fields(c))
        p, lap = self.products, self.laplacian
        rows = np.empty((4, c.size))
        rows[0] = c
        np.multiply(lap, c, out=rows[1])
        np.multiply(self.a, c, out=rows[2])
        np.multiply(self._lap_a, c, out=rows[3])
        parity = c.size > PARITY_MIN_DEGREES
        fields = p.parity_synthesis(rows) if parity else rows @ p.synthesis_matrix
        if not self.normalized:
            dphi = fields[2]  # (unused)
        else:
            dphi = (p.parity_synthesis(rows[2], derivative=True) if parity
                    else rows[2] @ p.derivative_table)
        products = np.empty((2, fields.shape[1]))
        zonal_products_kernel()(fields, p.t, self.normalized, self.scale, self.value,
                                self.beta, float(c[0]), dphi, products)
        first, second = (p.parity_analysis(products) if parity
                         else products @ p.analysis_matrix)
        out = -0.5 * (lap * first + second)
        out[0] = 0.0
        return out

    def _transport(self, c: np.ndarray, pot: np.ndarray, lap_pot: np.ndarray) -> np.ndarray:
        p, lap = self.products, self.laplacian
        rho, lap_rho = np.stack([c, lap * c]) @ p.synthesis_matrix
        first, second = np.stack([rho * pot, rho * lap_pot - pot * lap_rho]) @ p.analysis_matrix
        out = -0.5 * (lap * first + second)
        out[0] = 0.0  # a divergence has zero mean
        return out

    def tendency_jvp(self, c: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Derivative of ``tendency`` at ``c`` along ``w``, exact: ``T(w, U(c)) + T(c,
        U'(c) w)`` (the transport is bilinear in rho and the potential fields)."""
        pot, lap_pot, dpot, dlap_pot = self.potential_fields_jvp(c, w)
        return self._transport(w, pot, lap_pot) + self._transport(c, dpot, dlap_pot)

    def potential_fields_jvp(self, c: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, ...]:
        """``U, Delta U`` at ``c`` and their derivatives along ``w``. SA, with ``K = M +
        beta phi``: ``dPsi = dphi/K - dM phi/(K M)`` and ``d Delta Psi = Delta dphi/K -
        Delta phi dK/K^2 - beta dG/K^2 + 2 beta G dK/K^3``, ``G = (1 - t^2) phi'^2``."""
        phi, lap_phi, dphi_t = self._phi_fields(c)
        dphi, lap_dphi, ddphi_t = self._phi_fields(w)
        if not self.normalized:
            return tuple(self.scale * f for f in (phi, lap_phi, dphi, lap_dphi))
        mean, dmean = c[0], w[0]
        kernel = mean + self.beta * phi
        dkernel = dmean + self.beta * dphi
        sin2 = 1 - self.products.t**2
        grad2, dgrad2 = sin2 * dphi_t**2, 2 * sin2 * dphi_t * ddphi_t
        psi = self._log_ratio(phi, mean)
        dpsi = dphi / kernel - dmean * phi / (kernel * mean)
        lap_psi = lap_phi / kernel - self.beta * grad2 / kernel**2
        dlap_psi = (lap_dphi / kernel - lap_phi * dkernel / kernel**2
                    - self.beta * dgrad2 / kernel**2
                    + 2 * self.beta * grad2 * dkernel / kernel**3)
        return tuple(self.value * f for f in (psi, lap_psi, dpsi, dlap_psi))

    # --- diagnostics ---------------------------------------------------------------------------
    def energy(self, c: np.ndarray) -> float:
        """``E_beta(rho) - E_beta(uniform) = (1/2) sum_{l>=1} (lambda_l/beta) c_l^2``."""
        s = 0.5 * float(np.sum(self.energy_multiplier * np.asarray(c) ** 2))
        with np.errstate(over="ignore"):
            return s * (1.0 if self.beta == 0 else math.exp(self.beta)) if s > 0 else 0.0

    def diagnostics(self, rho: np.ndarray, c: np.ndarray | None = None) -> dict:
        """Mass, energy, free energy, order parameter and mean direction.

        With the state's coefficients ``c``, mass and order parameter are read from them
        exactly: ``c_0`` and ``|c_1| / sqrt(d)`` (``t = Q_1 / sqrt(d)``). The quadrature of
        the node values would add round-off of the size of the largest coefficient, which
        a concentrated density at large d makes large (d = 64 clustered: 3e-11 of mass).
        """
        known = c is not None
        if c is None:
            c = self.grid.analysis(rho)
        out = summarize(self.grid.weights, rho, self.points, self.energy(c), self.noise,
                        value=self.value)
        if known:
            out["mass"] = float(c[0])
            out["order_parameter"] = abs(float(c[1])) / math.sqrt(self.dim)
            out["mean_direction"] = np.array([math.copysign(1.0, c[1])]) if c[1] != 0 \
                else np.full(1, np.nan)
        return out


# --- finite volumes on cells of equal width in theta ------------------------------------------
def kernel_multipliers(dim: int, beta: float, normalized: bool) -> np.ndarray:
    """The multipliers ``a_0 .. a_L`` up to the kernel's own effective degree L (the last
    above ``MULTIPLIER_CUTOFF`` of the largest): the count doubles until it holds it (a
    fixed 400 once dropped SA degrees carrying 1e-7 of a_1 at beta = 5000, 2% at 2e4)."""
    count = 256
    while True:
        a = zonal_multipliers(count, dim, beta, normalized)
        lmax = effective_degree(a, dim)
        if lmax < count:
            return a[: lmax + 1]
        count *= 2


class ZonalFVModel:
    """The attention model on ``ZonalCells`` (finite volumes).

    The potential at the cell centres is ``phi = Q^T diag(a) Q (A rho)``, ``Q`` the
    Gegenbauer table at the centres up to the multipliers' degree and ``A`` the cell
    measures: a symmetric operator in the product ``sum_j A_j f_j g_j``, so ``phi`` is the
    exact gradient of the discrete energy ``E_h = (1/2) sum_j A_j rho_j phi_j`` and the
    CCH fluxes keep ``sum_j A_j rho_j log rho_j / kappa - c E_h`` non-increasing (USA).
    """

    def __init__(self, cells, beta: float, kappa: float, normalized: bool,
                 value: float = 1.0):
        from solvers.transforms import gegenbauer

        self.cells, self.grid, self.normalized = cells, cells, normalized
        self.dim = cells.dim
        self.value = float(value)
        self.points = cells.points
        self._table = gegenbauer.table
        self.beta = None
        self.set_parameters(beta, kappa)

    def set_parameters(self, beta: float | None = None, kappa: float | None = None,
                       value: float | None = None) -> None:
        """Change beta, kappa and/or value in place (the cells are kept)."""
        if beta is not None and beta != self.beta:
            self.beta = float(beta)
            self.a = kernel_multipliers(self.dim, self.beta, self.normalized)
            self.lmax = self.a.size - 1
            self.energy_multiplier = zonal_multipliers(self.lmax, self.dim, beta, False)
            self.q = self._table(self.lmax, self.dim, self.cells.t)
        set_value_and_noise(self, value, kappa)

    def _coefficients(self, rho: np.ndarray) -> np.ndarray:
        return self.q @ (self.cells.weights * rho)

    def potential_difference(self, rho: np.ndarray) -> np.ndarray:
        """``psi_{j+1} - psi_j`` on the n - 1 interior faces."""
        c = self._coefficients(rho)
        phi = (self.a * c) @ self.q
        dphi = np.diff(phi)
        if not self.normalized:
            return self.scale * dphi
        kernel = c[0] + self.beta * phi  # K*rho / lambda_0 at the centres
        out = log1p_ratio(dphi / kernel[:-1], 1.0, self.beta)
        return out if self.value == 1 else self.value * out

    def diagnostics(self, rho: np.ndarray) -> dict:
        c = self._coefficients(rho)
        s = 0.5 * float(np.sum(self.energy_multiplier[1:] * c[1:] ** 2))
        with np.errstate(over="ignore"):
            energy = s * (1.0 if self.beta == 0 else math.exp(self.beta)) if s > 0 else 0.0
        return summarize(self.cells.weights, rho, self.points, energy, self.noise,
                         value=self.value)
