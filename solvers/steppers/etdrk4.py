"""ETDRK4 ([CM02], order 4) for ``du/dt = L u + N(u)`` with a diagonal ``L``;
the phi-function coefficients by the contour integrals of [KT05]."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np


def phi_coefficients(hl: np.ndarray, contour_points: int = 32) -> tuple[np.ndarray, ...]:
    """ETDRK4 coefficients for the (real, diagonal) values ``hl = h * L``.

    Returns ``(e, e2, q, f1, f2, f3)`` divided by ``h`` where the formulas carry an ``h``:
    multiply ``q, f1, f2, f3`` by ``h``. Contour of radius 1 around each ``hl``
    ([KT05], eq. 2.5 and the mean over ``contour_points`` roots).
    """
    hl = np.asarray(hl, dtype=float)
    r = np.exp(1j * np.pi * (np.arange(1, contour_points + 1) - 0.5) / contour_points)
    z = hl[..., None] + r
    ez = np.exp(z)
    ez2 = np.exp(z / 2)
    q = np.real(np.mean((ez2 - 1) / z, axis=-1))
    f1 = np.real(np.mean((-4 - z + ez * (4 - 3 * z + z**2)) / z**3, axis=-1))
    f2 = np.real(np.mean((2 + z + ez * (z - 2)) / z**3, axis=-1))
    f3 = np.real(np.mean((-4 - 3 * z - z**2 + ez * (4 - z)) / z**3, axis=-1))
    return np.exp(hl), np.exp(hl / 2), q, f1, f2, f3


class ETDRK4:
    """Fixed-step ETDRK4 for ``du/dt = L u + N(u)``, ``L`` diagonal and real (order 4).

    Args:
        linear: the diagonal of ``L`` (same shape as the state).
        nonlinear: callable ``N(u) -> array`` (must return a new array).
        dt: the step; ``attempt`` takes at most this.
    """

    order = 4

    def __init__(self, linear: np.ndarray, nonlinear: Callable[[np.ndarray], np.ndarray],
                 dt: float | None = None):
        self._cache: dict[float, tuple] = {}
        self.linear = linear
        self.nonlinear = nonlinear
        self.dt = dt
        self.evaluations = 0

    @property
    def linear(self) -> np.ndarray:
        """The diagonal of ``L``; setting it drops the coefficients computed for the old one."""
        return self._linear

    @linear.setter
    def linear(self, value: np.ndarray) -> None:
        self._linear = np.asarray(value, dtype=float)
        self._cache.clear()

    def _coeffs(self, h: float) -> tuple:
        co = self._cache.get(h)
        if co is None:
            if len(self._cache) > 16:  # adaptive runs see many h: keep the cache small
                self._cache.clear()
            # on the distinct values of L only (a Laplacian repeats each eigenvalue over
            # its degree's orders: 33 values for the 561 coefficients of band limit 32),
            # then spread back: the same numbers, a fraction of the exponentials
            values, where = np.unique(self.linear, return_inverse=True)
            e, e2, q, f1, f2, f3 = (c[where].reshape(self.linear.shape)
                                    for c in phi_coefficients(h * values))
            co = (e, e2, h * q, h * f1, h * f2, h * f3)
            self._cache[h] = co
        return co

    def step(self, u: np.ndarray, h: float) -> np.ndarray:
        """One ETDRK4 step of size ``h`` (Cox-Matthews form)."""
        e, e2, q, f1, f2, f3 = self._coeffs(h)
        n = self.nonlinear
        nu = n(u)
        a = e2 * u + q * nu
        na = n(a)
        b = e2 * u + q * na
        nb = n(b)
        c = e2 * a + q * (2 * nb - nu)
        nc = n(c)
        self.evaluations += 4
        return e * u + f1 * nu + 2 * f2 * (na + nb) + f3 * nc

    def attempt(self, u: np.ndarray, h: float) -> tuple[float, np.ndarray, float]:
        return h, self.step(u, h), self.dt if self.dt is not None else h
