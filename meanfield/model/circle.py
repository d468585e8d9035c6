"""The attention model on the circle: velocity fields, diagnostics, and the two solvers.

With ``c_k`` the Fourier coefficients of rho (``solvers.transforms.fft`` convention), ``g_k`` and
``s_k`` the scaled multipliers of ``meanfield.model.kernels``:

- USA: ``v = d/dtheta Phi``, ``Phi-hat_k = e^beta g_k c_k``;
- SA:  ``v = d/dtheta Psi = (d/dtheta (g*rho)) / (s*rho)``, the ``e^beta`` cancelling;
- the PDE ``d rho/dt = -d/dtheta (rho v) + (1/kappa) d^2 rho/dtheta^2``.

Diagnostics, all from the grid values: mass ``int rho``; energy ``E_beta(rho) -
E_beta(uniform) = 2 pi e^beta sum_{k>=1} g_k |c_k|^2`` (the interaction energy of
DESIGN.md section 1 less its value at the uniform density, a constant for mass 1, so that
it is finite at beta = 0, where it equals ``r^2 / 2``); free energy ``(1/kappa) int rho
log rho - energy``; order parameter ``r = |int x d mu|``; mean direction ``int x d mu / r``.
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np

from meanfield.metrics.diagnostics import summarize
from meanfield.model.kernels import (
    RESOLUTION_TOLERANCE,
    kernel_multiplier,
    potential_multiplier,
)
from solvers.grids.circle import CircleGrid
from solvers.transforms.fft import RealFFT


def make_potential_differences():
    """Compile the numba kernels for ``psi_{j+1} - psi_j`` (USA and SA)."""

    @numba.njit(cache=True)
    def usa(phi, scale, out):
        n = phi.shape[0]
        for j in range(n):
            out[j] = scale * (phi[(j + 1) % n] - phi[j])

    @numba.njit(cache=True)
    def sa(phi, kernel, beta, out):
        # Psi = log(s*rho)/beta with s*rho = s_0 c_0 + beta (g*rho), so the difference is
        # log1p(beta dphi / K_j)/beta: written as ratio * log1p(y)/y, exact as beta -> 0.
        n = phi.shape[0]
        for j in range(n):
            ratio = (phi[(j + 1) % n] - phi[j]) / kernel[j]
            y = beta * ratio
            if abs(y) < 1e-8:
                out[j] = ratio * (1.0 - 0.5 * y)
            else:
                out[j] = ratio * (np.log1p(y) / y)

    return usa, sa


_usa_difference, _sa_difference = make_potential_differences()


def make_scaled_bessel():
    """Compile ``scaled_bessel(beta, out)``: ``out[k] = e^{-beta} I_k(beta)``, k = 0..len-1.

    Miller's backward recurrence ``I_{k-1} = (2k/beta) I_k + I_{k+1}`` from above the last
    order and the turning point ``k ~ beta`` (where the recurrence is stable for the
    decaying solution ``I_k``), normalised by ``e^{-beta} (I_0 + 2 sum_{k>=1} I_k) = 1``.
    The start: the error of starting at N falls like ``(I_N/I_kmax)^2``, ``(beta/2k)^2``
    per order beyond ``kmax >> beta``: 20 orders are plenty there; near and past the
    turning point ``beta + 30 + 10 sqrt(beta)`` (where the normalising sum has converged).
    All orders in O(kmax + beta) operations, a few ulps from scipy's ``ive``
    (``tests/meanfield/discretizations/test_residual.py``): the multipliers of a new
    beta in a microsecond, where ``ive`` takes 0.1 microsecond per order. Needs beta > 0.
    """

    @numba.njit(cache=True)
    def scaled_bessel(beta, out):
        kmax = out.shape[0] - 1
        top = max(kmax + 20, int(beta + 30.0 + 10.0 * math.sqrt(beta + 1.0)))
        upper = 0.0
        cur = 1.0
        total = 0.0
        for k in range(top, 0, -1):
            if k <= kmax:
                out[k] = cur
            total += 2.0 * cur
            lower = (2.0 * k / beta) * cur + upper
            upper = cur
            cur = lower
            if cur > 1e250:  # rescale what is stored: the orders above k underflow
                cur *= 1e-250
                upper *= 1e-250
                total *= 1e-250
                for j in range(k, kmax + 1):
                    out[j] *= 1e-250
        total += cur
        out[0] = cur
        for j in range(kmax + 1):
            out[j] /= total

    return scaled_bessel


scaled_bessel_kernel = functools.cache(make_scaled_bessel)


def make_circle_multipliers():
    """Compile ``multipliers(beta, scale, nyquist, tolerance, ive, s, g, ikg) -> ok``:
    ``ive[k] = e^{-beta} I_k(beta)`` by ``make_scaled_bessel``'s recurrence, then ``s = 2 pi
    ive``, ``g = s/beta`` (``g_0 = 0``) and ``ikg = i k g scale`` in place, the Nyquist
    entries zero if ``nyquist``; ``ok`` is ``required_resolution``'s test, ``ive[kmax] <=
    tolerance ive[1]``. One call, where numpy takes a microsecond per operation on 129
    modes and scipy's ive a microsecond per 8 orders. Needs beta > 0 and kmax >= 2."""
    scaled_bessel = scaled_bessel_kernel()

    @numba.njit(cache=True)
    def multipliers(beta, scale, nyquist, tolerance, ive, s, g, ikg):
        scaled_bessel(beta, ive)
        n = ive.shape[0]
        for k in range(n):
            s[k] = 2 * np.pi * ive[k]
            g[k] = s[k] / beta if k > 0 else 0.0
        if nyquist:
            s[n - 1] = 0.0
            g[n - 1] = 0.0
        for k in range(n):
            ikg[k] = complex(0.0, k * g[k] * scale)
        return ive[n - 1] <= tolerance * ive[1]

    return multipliers


circle_multipliers_kernel = functools.cache(make_circle_multipliers)


class CircleModel:
    """USA or SA attention dynamics with noise ``1/kappa`` on a circle grid.

    Args:
        grid: the grid.
        beta: inverse temperature, >= 0.
        kappa: inverse noise, > 0 (``inf``: no noise).
        normalized: True for SA, False for USA.
    """

    def __init__(self, grid: CircleGrid, beta: float, kappa: float, normalized: bool):
        self.grid, self.normalized = grid, normalized
        kmax = grid.n // 2
        self._set_multipliers(beta, potential_multiplier(kmax, beta),
                              kernel_multiplier(kmax, beta))
        self._set_noise(kappa)
        # buffers of prepare_beta: Bessel values, and the spare s, g, ikg it fills
        self._bessel = np.empty(kmax + 1)
        self._spare = (np.empty(kmax + 1), np.empty(kmax + 1), np.empty(kmax + 1, complex))
        self.points = grid.points

    def _set_multipliers(self, beta: float, g: np.ndarray, s: np.ndarray) -> None:
        self.beta, self.g, self.s = beta, g, s
        if self.grid.n % 2 == 0:  # the Nyquist mode carries no velocity
            self.g[-1] = 0.0
            self.s[-1] = 0.0
        # USA velocities carry e^beta; SA's cancel it.
        self.scale = 1.0 if self.normalized else math.exp(beta)
        self._ikg = 1j * self.grid.k * self.g * self.scale
        self._pending: tuple[float, float, bool] | None = None

    def _set_noise(self, kappa: float) -> None:
        self.kappa = kappa
        self.noise = 0.0 if math.isinf(kappa) else 1.0 / kappa

    def set_parameters(self, beta: float | None = None, kappa: float | None = None) -> None:
        """Change beta and/or kappa in place (the grid and its FFT plans are kept).

        A new beta takes the multipliers of ``prepare_beta`` (two microseconds at n = 256,
        where scipy's ``ive``, which the constructor calls, takes longer than a right-hand
        side): they agree with the constructor's to a few ulps.
        """
        if beta is not None and beta != self.beta:
            if beta == 0:
                kmax = self.grid.n // 2
                g, s = np.zeros(kmax + 1), np.zeros(kmax + 1)
                s[0], g[1] = 2 * np.pi, np.pi  # the limits of 2 pi ive(k, b) (/ b)
                self._set_multipliers(beta, g, s)
            else:
                self.prepare_beta(beta)
                spare = self._spare
                self._spare = (self.s, self.g, self._ikg)
                self.s, self.g, self._ikg = spare
                self.beta, self.scale = beta, self._pending[1]
                self._pending = None
        if kappa is not None:
            self._set_noise(kappa)

    def prepare_beta(self, beta: float) -> bool:
        """Compute the multipliers of ``beta > 0`` into spare buffers (``set_parameters``
        then swaps them in) and return whether the grid's modes carry the kernel there
        (``required_resolution``'s test on the same Bessel values)."""
        if self._pending is None or self._pending[0] != beta:
            scale = 1.0 if self.normalized else math.exp(beta)
            ok = circle_multipliers_kernel()(float(beta), scale, self.grid.n % 2 == 0,
                                             RESOLUTION_TOLERANCE, self._bessel,
                                             *self._spare)
            self._pending = (beta, scale, bool(ok))
        return self._pending[2]

    # --- velocity fields ---------------------------------------------------------------
    def velocity(self, c: np.ndarray, fft: RealFFT) -> np.ndarray:
        """Velocity on the grid of ``fft`` from density coefficients ``c`` (a new array)."""
        dphi = fft.inverse(self._ikg * c).copy()
        if not self.normalized:
            return dphi
        return dphi / fft.inverse(self.s * c)

    def velocity_derivative(self, c: np.ndarray, w: np.ndarray, fft: RealFFT) -> np.ndarray:
        """Derivative of ``velocity`` at ``c`` along ``w`` (a new array).

        USA: the velocity is linear, ``v'(c) w = v(w)``. SA: ``v = dphi/K`` with ``dphi``
        the derivative of ``g*rho`` and ``K = s*rho`` the scaled ``K*rho``, so
        ``v'(c) w = (dphi(w) - v(c) K(w)) / K(c)``. ``K(c) = s_0 c_0 + beta (g*rho)``
        holds the mass mode: it stays positive as beta -> 0 (then ``K = 2 pi c_0``), and
        ``K(w)`` carries the mass of ``w`` when it has one.
        """
        dphi_w = fft.inverse(self._ikg * w).copy()
        if not self.normalized:
            return dphi_w
        kernel = fft.inverse(self.s * c).copy()
        v = fft.inverse(self._ikg * c) / kernel
        return (dphi_w - v * fft.inverse(self.s * w)) / kernel

    def potential_difference(self, rho: np.ndarray) -> np.ndarray:
        """``psi_{j+1} - psi_j`` at the grid values ``rho`` (finite volumes)."""
        grid = self.grid
        c = grid.fft.forward(rho).copy()  # the inverse transforms below reuse the buffer
        phi = grid.fft.inverse(self.g * c).copy()
        out = np.empty_like(phi)
        if not self.normalized:
            _usa_difference(phi, self.scale, out)
        else:
            _sa_difference(phi, grid.fft.inverse(self.s * c), self.beta, out)
        return out

    # --- diagnostics -------------------------------------------------------------------
    def diagnostics(self, rho: np.ndarray) -> dict[str, float | np.ndarray]:
        """Mass, energy, free energy, order parameter, mean direction of grid values."""
        c = self.grid.fft.forward(rho)
        s = 2 * np.pi * float(np.sum(self.g[1:] * np.abs(c[1:]) ** 2))
        with np.errstate(over="ignore"):
            energy = s * (1.0 if self.beta == 0 else math.exp(self.beta)) if s > 0 else 0.0
        return summarize(self.grid.weights, rho, self.points, energy, self.noise)
