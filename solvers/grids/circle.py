"""The circle S^1: an equispaced grid and its Fourier transforms (the transport operator
built on them is ``solvers.operators.transport``).

Grid space: ``n`` values at ``theta_j = 2 pi j / n`` (for the finite-volume method, the
centres of cells ``[theta_j - dx/2, theta_j + dx/2]``). Coefficient space: the ``n//2 + 1``
coefficients ``c_k`` of the real series ``f = sum_k c_k e^{ik theta}`` (see
``solvers.transforms.fft``); the Nyquist coefficient ``k = n/2`` is kept at zero by the spectral
operators (its derivative is not real).
"""
from __future__ import annotations

import functools

import numpy as np

from solvers.grids.coordinates import angle, circle_points, read_only
from solvers.transforms.fft import RealFFT, real_fft


def padded_size(n: int) -> int:
    """Grid size for exact products of two fields band-limited to ``n//2``: the 3/2 rule
    of Orszag, rounded up to an even size."""
    m = -(-3 * n // 2)
    return m + (m % 2)


class CircleGrid:
    """Equispaced grid of ``n`` points on [0, 2 pi) with its FFTs.

    A ``solvers.grids.SpectralGrid`` (geometry ``"circle"``, dims ``("theta",)``).

    Args:
        n: number of points (cells), ``n >= 8``.
        threads: FFT threads (``None``: chosen from ``n``).
        backend: FFT backend (``None``: pyfftw when importable).
    """

    geometry = "circle"
    dims = ("theta",)
    components = ("x", "y")
    has_transforms = True

    def __init__(self, n: int, threads: int | None = None, backend: str | None = None):
        if n < 8:
            raise ValueError(f"a circle grid needs n >= 8 points, got {n}")
        self.n = int(n)
        self.dx = 2 * np.pi / self.n
        self.theta = self.dx * np.arange(self.n)
        self.weights = np.full(self.n, self.dx)
        self.k = np.arange(self.n // 2 + 1)
        self.fft: RealFFT = real_fft(self.n, threads, backend)
        self.m = padded_size(self.n)
        self.fft_padded: RealFFT = real_fft(self.m, threads, backend)
        self._threads, self._backend = threads, backend

    @property
    def shape(self) -> tuple[int]:
        return (self.n,)

    @functools.cached_property
    def points(self) -> np.ndarray:
        """``(n, 2)`` unit vectors ``(cos theta, sin theta)`` of the nodes (read-only)."""
        return read_only(circle_points(self.theta))

    def coords(self) -> dict[str, np.ndarray]:
        """Dataset coordinates: ``theta`` (a new array)."""
        return {"theta": self.theta.copy()}

    def locate(self, x: np.ndarray) -> np.ndarray:
        """Index of the nearest node (whose cell ``[theta_j - dx/2, theta_j + dx/2)`` holds
        the point) of each point ``(..., 2)`` (a direction of the plane)."""
        return np.floor(angle(np.asarray(x, dtype=float)) / self.dx + 0.5).astype(
            np.int64) % self.n

    def analysis(self, f: np.ndarray) -> np.ndarray:
        """Fourier coefficients (a new array) of grid values ``f``."""
        return self.fft.forward(f).copy()

    def synthesis(self, c: np.ndarray, n: int | None = None) -> np.ndarray:
        """Grid values (a new array) of coefficients ``c`` on this grid or on ``n`` points."""
        if n is None or n == self.n:
            return self.fft.inverse(c).copy()
        return real_fft(n, self._threads, self._backend).inverse(c[: n // 2 + 1]).copy()

    def integrate(self, f: np.ndarray) -> float:
        """Integral over the circle of grid values (periodic trapezoid / midpoint rule)."""
        return float(self.dx * np.sum(f, axis=-1))
