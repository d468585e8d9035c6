"""The attention model on the circle: velocity fields, diagnostics, and the two solvers.

With ``c_k`` the Fourier coefficients of rho (``solvers.transforms.fft`` convention), ``g_k`` and
``s_k`` the scaled multipliers of ``meanfield.model.kernels``:

- USA: ``v = d/dtheta Phi``, ``Phi-hat_k = e^beta g_k c_k``;
- SA:  ``v = d/dtheta Psi = (d/dtheta (g*rho)) / (s*rho)``, the ``e^beta`` cancelling;
- the PDE ``d rho/dt = -d/dtheta (rho v) + (1/kappa) d^2 rho/dtheta^2``;
- ``value = c`` (the value matrix ``V = c I``, ``[weights] value``) multiplies both
  velocities by c (``c < 0``: repulsive); ``c = 1`` is the model above, bit for bit.

Diagnostics, all from the grid values: mass ``int rho``; energy ``E_beta(rho) -
E_beta(uniform) = 2 pi e^|beta| sum_{k>=1} g_k |c_k|^2`` (the interaction energy of
docs/conventions.md less its value at the uniform density, a constant for mass 1, so that
it is finite at beta = 0, where it equals ``r^2 / 2``); free energy ``(1/kappa) int rho
log rho - c energy``; order parameter ``r = |int x d mu|``; mean direction
``int x d mu / r``.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from meanfield.metrics.diagnostics import summarize
from meanfield.model.circle_multipliers import circle_multipliers_kernel
from meanfield.model.kernels import (
    RESOLUTION_TOLERANCE,
    kernel_multiplier,
    potential_multiplier,
)
from solvers.grids.circle import CircleGrid
from solvers.grids.coordinates import angle
from solvers.transforms.fft import RealFFT
from solvers.transforms.pointwise import series_at


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


def _aligned(size: int, dtype: type, alignment: int = 64) -> np.ndarray:
    """An empty array of ``size`` items whose data starts on an ``alignment`` boundary."""
    itemsize = np.dtype(dtype).itemsize
    raw = np.empty(size * itemsize + alignment, dtype=np.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start:start + size * itemsize].view(dtype)


def _multiplier_buffers(kmax: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Aligned buffers for ``s``, ``g`` (real) and ``ikg`` (complex), k = 0..kmax."""
    return _aligned(kmax + 1, float), _aligned(kmax + 1, float), _aligned(kmax + 1, complex)


class CircleModel:
    """USA or SA attention dynamics with noise ``1/kappa`` on a circle grid.

    Args:
        grid: the grid.
        beta: inverse temperature (any finite real: ``I_k(-b) = (-1)^k I_k(b)``).
        kappa: inverse noise, > 0 (``inf``: no noise).
        normalized: True for SA, False for USA.
        value: the c of the value matrix ``V = c I``: the velocity is multiplied by c
            (1: today's model; < 0: repulsive).
    """

    def __init__(self, grid: CircleGrid, beta: float, kappa: float, normalized: bool,
                 value: float = 1.0):
        self.grid, self.normalized = grid, normalized
        self.value = float(value)
        kmax = grid.n // 2
        # Two sets of multiplier buffers (s, g, ikg), the live one and the one a new beta
        # is computed into, swapped by set_parameters; all 64-byte aligned, so that the
        # products with them cost the same whichever set is live (unaligned, a residual
        # was measured 0.8-1.4 times as costly depending on where numpy put them).
        self.s, self.g, self._ikg = _multiplier_buffers(kmax)
        self._spare = _multiplier_buffers(kmax)
        self._bessel = np.empty(kmax + 1)  # the Bessel values prepare_beta computes
        self._multipliers_kernel = circle_multipliers_kernel()  # (looked up once)
        self._set_multipliers(beta, potential_multiplier(kmax, beta),
                              kernel_multiplier(kmax, beta))
        self._set_noise(kappa)
        self.points = grid.points

    def _set_multipliers(self, beta: float, g: np.ndarray, s: np.ndarray) -> None:
        """Copy the multipliers ``g``, ``s`` of ``beta`` into the live buffers."""
        self.beta = beta
        self.g[:], self.s[:] = g, s
        if self.grid.n % 2 == 0:  # the Nyquist mode carries no velocity
            self.g[-1] = 0.0
            self.s[-1] = 0.0
        # USA velocities carry e^beta; SA's cancel it. Both carry the value c.
        self.scale = self._velocity_scale(beta)
        np.multiply(1j * self.grid.k * self.g, self.scale, out=self._ikg)
        self._pending: tuple[float, float, bool] | None = None

    def _velocity_scale(self, beta: float) -> float:
        """The factor of the velocity ``ik g c``: ``c e^|beta|`` (USA; ``ive`` carries
        ``e^{-|beta|}``, whatever the sign of beta) or ``c`` (SA)."""
        return self.value * (1.0 if self.normalized else math.exp(abs(beta)))

    def _set_noise(self, kappa: float) -> None:
        self.kappa = kappa
        self.noise = 0.0 if math.isinf(kappa) else 1.0 / kappa

    def set_parameters(self, beta: float | None = None, kappa: float | None = None,
                       value: float | None = None) -> None:
        """Change beta, kappa and/or value in place (the grid and its FFT plans are kept).

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
            elif beta < 0:  # (the compiled recurrence is written for beta > 0)
                kmax = self.grid.n // 2
                self._set_multipliers(beta, potential_multiplier(kmax, beta),
                                      kernel_multiplier(kmax, beta))
            else:
                self.prepare_beta(beta)
                spare = self._spare
                self._spare = (self.s, self.g, self._ikg)
                self.s, self.g, self._ikg = spare
                self.beta, self.scale = beta, self._pending[1]
                self._pending = None
        if kappa is not None:
            self._set_noise(kappa)
        if value is not None and float(value) != self.value:
            self.value = float(value)
            self._pending = None  # (prepared with the old value's scale)
            self.scale = self._velocity_scale(self.beta)
            np.multiply(1j * self.grid.k * self.g, self.scale, out=self._ikg)

    def prepare_beta(self, beta: float) -> bool:
        """Compute the multipliers of ``beta > 0`` into spare buffers (``set_parameters``
        then swaps them in) and return whether the grid's modes carry the kernel there
        (``required_resolution``'s test on the same Bessel values)."""
        if self._pending is None or self._pending[0] != beta:
            scale = self._velocity_scale(beta)
            ok = self._multipliers_kernel(float(beta), scale, self.grid.n % 2 == 0,
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

    def velocity_at(self, c: np.ndarray, points: np.ndarray) -> np.ndarray:
        """The velocity field of the density with coefficients ``c`` at the directions of
        ``points`` (m, 2), off the grid: tangent vectors ``v(theta) (-sin, cos)``, the
        series the grid velocity samples evaluated exactly (``series_at``, ~1e-14)."""
        p = np.asarray(points, dtype=float)
        theta = angle(p)
        nyquist = self.grid.n % 2 == 0
        v = series_at(self._ikg * c, theta, nyquist)
        if self.normalized:
            v = v / series_at(self.s * c, theta, nyquist)
        return v[:, None] * np.stack([-np.sin(theta), np.cos(theta)], axis=-1)

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
            if self.value != 1:
                out *= self.value
        return out

    # --- diagnostics -------------------------------------------------------------------
    def diagnostics(self, rho: np.ndarray) -> dict[str, float | np.ndarray]:
        """Mass, energy, free energy, order parameter, mean direction of grid values."""
        c = self.grid.fft.forward(rho)
        s = 2 * np.pi * float(np.sum(self.g[1:] * np.abs(c[1:]) ** 2))
        with np.errstate(over="ignore"):
            # (beta < 0: g_k alternates in sign, so s may be negative)
            energy = s * (1.0 if self.beta == 0 else math.exp(abs(self.beta))) if s else 0.0
        return summarize(self.grid.weights, rho, self.points, energy, self.noise,
                         value=self.value)
