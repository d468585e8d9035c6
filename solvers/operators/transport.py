"""The dealiased spectral transport operator ``-d/dtheta (rho v)`` on the circle, and its
derivative."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from solvers.grids.circle import CircleGrid
from solvers.transforms.fft import BatchRealFFT, RealFFT

Velocity = Callable[[np.ndarray, RealFFT], np.ndarray]


def _derivative_symbol(grid: CircleGrid) -> np.ndarray:
    """``-ik`` on the kept modes; the Nyquist mode stays zero (its derivative is not real)."""
    ik = 1j * grid.k
    ik[-1] = 0.0 if grid.n % 2 == 0 else ik[-1]
    return -ik


def make_transport_operator(grid: CircleGrid, velocity: Velocity
                            ) -> Callable[[np.ndarray], np.ndarray]:
    """Build ``N(c) = -ik P[rho v]``: the dealiased spectral transport tendency.

    Args:
        grid: the grid.
        velocity: ``velocity(c, fft)`` returns the velocity on the grid of ``fft`` (the
            padded grid) from the density coefficients ``c``, as a new array (not one of
            the transform's buffers).

    Returns:
        A function of the coefficients ``c`` (length ``n//2 + 1``) returning the
        coefficients of ``-d(rho v)/dtheta``, truncated to ``|k| < n/2``.
    """
    fft_m = grid.fft_padded
    minus_ik = _derivative_symbol(grid)
    kept = grid.n // 2 + 1

    def tendency(c: np.ndarray) -> np.ndarray:
        v = velocity(c, fft_m)
        flux = fft_m.inverse(c) * v
        return fft_m.forward(flux)[:kept] * minus_ik

    return tendency


def make_transport_jvp(grid: CircleGrid, velocity: Velocity,
                       velocity_derivative: Callable[[np.ndarray, np.ndarray, RealFFT],
                                                     np.ndarray],
                       batch: bool = False
                       ) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Build the derivative of ``N`` at ``c`` along ``w``, by the product rule:
    ``N'(c) w = -ik P[rho(w) v(c) + rho(c) v'(c) w]``.

    Args:
        grid: the grid.
        velocity: as for ``make_transport_operator``.
        velocity_derivative: ``dv(c, w, fft)``, the derivative of the velocity at ``c``
            along ``w`` on the grid of ``fft`` (a new array).

        batch: if True, ``w`` is a stack ``(B, n//2 + 1)`` of directions and the result
            the stack of derivatives, with transforms of the whole stack at once
            (``BatchRealFFT``; ``velocity_derivative`` must broadcast over the leading
            axis, as the models' do): a dense Jacobian in one call.

    Returns:
        ``jvp(c, w)``: coefficients of the derivative, truncated like ``N``. It is exact
        (not a difference quotient): the products are dealiased as in ``N``, so it is the
        derivative of the discrete operator to round-off.
    """
    fft_m = grid.fft_padded
    fft_w = BatchRealFFT(fft_m.n) if batch else fft_m
    minus_ik = _derivative_symbol(grid)
    kept = grid.n // 2 + 1

    def jvp(c: np.ndarray, w: np.ndarray) -> np.ndarray:
        # (each velocity first: the inverse transform returns a buffer it overwrites)
        dv = velocity_derivative(c, w, fft_w)
        flux = fft_m.inverse(c) * dv
        v = velocity(c, fft_m)
        flux += fft_w.inverse(w) * v
        return fft_w.forward(flux)[..., :kept] * minus_ik

    return jvp
