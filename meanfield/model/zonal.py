"""The attention model on zonal densities of S^{d-1} (any d >= 2) and its Gegenbauer solver.

State: the coefficients ``c_l`` (l = 0..L) of rho in the orthonormal Gegenbauer polynomials
``Q_l(t)``, ``t = cos theta = <x, e>``, against the normalized surface measure (uniform
density 1, mass ``c_0``; ``solvers.grids.zonal``). With the multipliers ``a_l`` of
``meanfield.model.zonal_kernels`` (USA scaled by ``e^{-beta}``):

- USA: ``U = c e^beta phi``, ``phi = sum_l a_l c_l Q_l`` (a polynomial of degree
  ``a_lmax``, the last degree whose multiplier is above round-off);
- SA: ``U = c Psi``, ``Psi = (1/beta) log(K*rho) = (1/beta) log1p(beta phi / M)`` up to a
  constant (``M = c_0``, ``phi`` with SA's multipliers); only its slope enters the
  transport, ``(1 - t^2) Psi' = (1 - t^2) phi' / K``, ``K = M + beta phi``, formed
  pointwise (exact as beta -> 0): nothing about Psi is truncated before the products.

Transport in weak form: ``<Q_l, -div(rho grad U)> = int (1 - t^2) Q_l' U' rho dsigma``,
and ``G = (1 - t^2) d/dt`` takes ``Q_m`` to two neighbours (``gegenbauer.gradient_
recurrence``), so the coefficients are ``G^T`` of the projection (degrees 0..L + 1) of the
weighted flux ``w rho U'`` at the Gauss nodes of a product grid, and ``(1 - t^2) U'`` is a
synthesis of ``G phi`` (SA: divided by ``K`` pointwise). One values table serves the
synthesis of rho, that of the potential's few degrees and the projection (transposed): at
L = 511 one right-hand side is two passes over one table in cache, where the Laplacian
identity it replaced took seven matrix-vector products over three tables. Exact
(dealiased) for USA (nodes for degree ``2L + a_lmax``), the 3/2 rule for SA. ETDRK4 takes
the diffusion ``-l(l + d - 2)/kappa`` exactly, as on the circle and the sphere.

Diagnostics: mass ``c_0``... by quadrature at the output nodes; energy ``E_beta(rho) -
E_beta(uniform) = (1/2) e^beta sum_{l>=1} a_l c_l^2`` (USA's multipliers, for both
models); free energy ``(1/kappa) int rho log rho dsigma - c energy`` (entropy against the
normalized measure: on S^2 it is the sphere's plus ``log 4 pi``); order parameter
``|int t dmu|`` (the other components vanish by symmetry), mean direction its sign.
"""
from __future__ import annotations

import math

import numpy as np

from meanfield.metrics.diagnostics import summarize
from meanfield.model.kernels import log1p_ratio
from meanfield.model.zonal_flux import (
    parity_divergence_kernel,
    parity_flux_kernel,
    potential_rows_kernel,
    zonal_flux_kernel,
)
from meanfield.model.zonal_kernels import log_uniform_weights, zonal_multipliers
from solvers.grids.zonal import ZonalGrid, product_nodes
from solvers.transforms import gegenbauer

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


# From this many degrees on, a right-hand side splits its table by parity (half the
# multiply-adds, the mirrored nodes paired in the compiled flux; measured at d = 3, one
# thread, SA/USA right-hand side: L = 63 even, L = 127 1.2x/1.1x, L = 255 1.7x/1.3x,
# L = 383 1.9x/1.6x faster).
PARITY_MIN_DEGREES = 96


def set_value_and_noise(model, value: float | None, kappa: float | None) -> None:
    """What both zonal models do with a new value c and kappa: the potential's factor
    ``scale`` (c e^beta for USA, c for SA) and the noise ``1/kappa`` (0 without)."""
    if value is not None:
        model.value = float(value)
    model.scale = model.value * (1.0 if model.normalized else math.exp(model.beta))
    if kappa is not None:
        model.kappa = kappa
        model.noise = 0.0 if math.isinf(kappa) else 1.0 / kappa


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
        # (1 - t^2) Q_m' = down_m Q_{m-1} + up_m Q_{m+1}, m = 0..L + 1
        self._down, self._up = gegenbauer.gradient_recurrence(grid.lmax + 1, grid.dim)
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
                # one degree above L: the projection of the flux reaches degree L + 1
                # (the gradient raises the degree by one)
                grid = ZonalGrid(lmax + 1, self.dim, nodes)
                one_minus_t2 = (1.0 - grid.t) * (1.0 + grid.t)  # (relative accuracy)
                self._products[nodes] = (grid, grid.weights / one_minus_t2)
            self.products, self._slope_weights = self._products[nodes]
        set_value_and_noise(self, value, kappa)

    # --- the weak form of the transport -----------------------------------------------------
    # <Q_l, -div(rho grad U)> = int grad Q_l . grad U rho dsigma = int (1 - t^2) Q_l' U' rho:
    # with G = (1 - t^2) d/dt (``gegenbauer.gradient_recurrence``: two terms, degree + 1)
    # that is ``sum_i w_i (G Q_l)(t_i) rho_i U'(t_i)``, i.e. ``G^T`` of the projection of
    # ``g = w rho U'``, and ``(1 - t^2) U' = G phi`` (times the model's factor) is a
    # synthesis of coefficients. One table (values), one synthesis of rho, one of the
    # potential's few degrees, one projection: exact on the product grid (degree 2L + a
    # for USA), mass conserved exactly (G Q_0 = 0).

    def _gradient(self, coeffs: np.ndarray) -> np.ndarray:
        """Coefficients of ``G f = (1 - t^2) f'`` (one degree more) of ``f``'s."""
        k = coeffs.shape[-1]
        out = np.zeros(coeffs.shape[:-1] + (k + 1,))
        out[..., 1:] = self._up[:k] * coeffs
        out[..., : k - 1] += self._down[1:k] * coeffs[..., 1:]
        return out

    def _divergence(self, projected: np.ndarray) -> np.ndarray:
        """``sum_k <Q_k, G Q_l> h_k`` for l = 0..L: the transport's coefficients from the
        projection ``h`` (degrees 0..L + 1) of the weighted flux."""
        lmax = self.grid.lmax
        out = self._up[: lmax + 1] * projected[..., 1:]
        out[..., 1:] += self._down[1: lmax + 1] * projected[..., :lmax]
        return out

    def _synthesis(self, coeffs: np.ndarray, parity: bool) -> np.ndarray:
        """Values at the product nodes of the first ``coeffs.shape[-1]`` degrees."""
        p = self.products
        if parity:
            return p.parity_synthesis(coeffs)
        return coeffs @ p.synthesis_matrix[: coeffs.shape[-1]]

    def _potential_rows(self, c: np.ndarray) -> np.ndarray:
        """``G phi`` (and for SA ``phi``, padded) in coefficients, rows ``(..., k, a + 2)``
        (phi = a c to the kernel's effective degree a)."""
        if c.ndim == 1:  # (the hot path: one compiled loop)
            out = np.empty((2 if self.normalized else 1, self.a_lmax + 2))
            potential_rows_kernel()(c, self.a, self._down, self._up, out)
            return out
        phi = self.a[: self.a_lmax + 1] * c[..., : self.a_lmax + 1]
        slope = self._gradient(phi)
        if not self.normalized:
            return slope[..., None, :]
        rows = np.zeros(slope.shape[:-1] + (2, slope.shape[-1]))
        rows[..., 0, :] = slope
        rows[..., 1, :-1] = phi
        return rows

    def _slope(self, c: np.ndarray, slope: np.ndarray, phi: np.ndarray | None) -> np.ndarray:
        """``(1 - t^2) U'`` at the nodes from ``G phi`` and ``phi`` there."""
        if not self.normalized:
            return self.scale * slope
        return self.value * slope / (c[..., :1] + self.beta * phi)

    def slope_fields(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``rho`` and ``(1 - t^2) U'`` at the product nodes (``c`` (..., L + 1))."""
        c = np.asarray(c, dtype=float)
        rho = self._synthesis(c, False)
        pot = self._synthesis(self._potential_rows(c), False)
        return rho, self._slope(c, pot[..., 0, :],
                                pot[..., 1, :] if self.normalized else None)

    def _transport(self, rho: np.ndarray, slope: np.ndarray) -> np.ndarray:
        """Coefficients of ``-div(rho grad U)`` from ``rho`` and ``(1 - t^2) U'`` at the
        product nodes."""
        return self._divergence(self.products.project(self._slope_weights * rho * slope))

    def tendency(self, c: np.ndarray) -> np.ndarray:
        """Coefficients of ``-div(rho grad U)`` (mass exactly conserved), in the weak form
        above: the synthesis of rho and of the potential's few degrees, the weighted flux
        in one compiled loop, one projection, ``G^T`` (``meanfield.model.zonal_flux``);
        tables split by parity from ``PARITY_MIN_DEGREES`` on, the potential stacked
        with rho in one product when its degrees are many."""
        c = np.asarray(c, dtype=float)
        if c.ndim != 1:
            return self._transport(*self.slope_fields(c))
        p = self.products
        parity = c.size > PARITY_MIN_DEGREES
        pot_rows = self._potential_rows(c)
        factor = self.value if self.normalized else self.scale
        arguments = (self._slope_weights, self.normalized, factor, self.beta, float(c[0]))
        if 2 * pot_rows.shape[-1] > c.size:  # (many degrees: one product for all rows)
            stacked = np.zeros((1 + pot_rows.shape[0], max(c.size, pot_rows.shape[-1])))
            stacked[0, : c.size] = c
            stacked[1:, : pot_rows.shape[-1]] = pot_rows
            fields = self._synthesis(stacked, parity)
            flux = np.empty(fields.shape[-1])
            zonal_flux_kernel()(fields[0], fields[1:], *arguments, flux)
            return self._divergence(p.parity_project(flux) if parity else p.project(flux))
        pot = pot_rows @ p.synthesis_matrix[: pot_rows.shape[-1]]
        if not parity:
            rho = c @ p.synthesis_matrix[: c.size]
            flux = np.empty_like(rho)
            zonal_flux_kernel()(rho, pot, *arguments, flux)
            return self._divergence(p.project(flux))
        even, odd = p.parity_tables
        ce, co = c[0::2], c[1::2]
        total = np.empty(even.shape[1])
        difference = np.empty_like(total)
        parity_flux_kernel()(ce @ even[: ce.size], co @ odd[: co.size], pot, *arguments,
                             total, difference)
        out = np.empty(c.size)
        parity_divergence_kernel()(total @ even.T, difference @ odd.T, self._down,
                                   self._up, out)
        return out

    def tendency_jvp(self, c: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Derivative of ``tendency`` at ``c`` along ``w``, exact: the transport is
        bilinear in rho and the slope S = (1 - t^2) U', so ``T(rho_w, S_c) + T(rho_c,
        dS)``; SA, with ``K = M + beta phi``: ``dS = c (G dphi / K - G phi (dM + beta dphi)
        / K^2)``."""
        c, w = np.asarray(c, dtype=float), np.asarray(w, dtype=float)
        rho_c = self._synthesis(c, False)
        rho_w = self._synthesis(w, False)
        pot_c = self._synthesis(self._potential_rows(c), False)
        pot_w = self._synthesis(self._potential_rows(w), False)
        if not self.normalized:
            slope_c, dslope = self.scale * pot_c[..., 0, :], self.scale * pot_w[..., 0, :]
        else:
            kernel = c[..., :1] + self.beta * pot_c[..., 1, :]
            dkernel = w[..., :1] + self.beta * pot_w[..., 1, :]
            slope_c = self.value * pot_c[..., 0, :] / kernel
            dslope = self.value * (pot_w[..., 0, :] / kernel
                                   - pot_c[..., 0, :] * dkernel / kernel**2)
        return self._transport(rho_w, slope_c) + self._transport(rho_c, dslope)

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
