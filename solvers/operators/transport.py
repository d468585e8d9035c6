"""The dealiased spectral transport operator ``-d/dtheta (rho v)`` on the circle."""
from __future__ import annotations

from typing import Callable

import numpy as np

from solvers.grids.circle import CircleGrid
from solvers.transforms.fft import RealFFT


def make_transport_operator(grid: CircleGrid,
                            velocity: Callable[[np.ndarray, RealFFT], np.ndarray]
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
    ik = 1j * grid.k
    ik[-1] = 0.0 if grid.n % 2 == 0 else ik[-1]  # the Nyquist mode stays zero

    def tendency(c: np.ndarray) -> np.ndarray:
        v = velocity(c, fft_m)
        flux = fft_m.inverse(c) * v
        out = fft_m.forward(flux)[: grid.n // 2 + 1] * (-ik)
        return out

    return tendency
