"""Spectral fields evaluated at arbitrary points, off the grid (the grids' ``synthesis_at``
and ``gradient_at``).

- Circle: the real series ``f(theta) = sum_{|k| <= K} f_k e^{ik theta}`` of the packed
  coefficients ``c_k``, ``k = 0..K`` (``solvers.transforms.fft``: ``f_{-k} = conj(c_k)``),
  by one type-2 NUFFT (finufft) at tolerance ``SERIES_EPS`` relative to ``sum |f_k|``;
  O(K log K + m) for m points. An even grid's last coefficient (Nyquist, ``K = n/2``)
  enters as ``Re(c_K) cos(K theta)``, as the inverse FFT takes it on the grid.
- Sphere: ``f = sum a_lm Y_lm`` (``solvers.transforms.sht``'s packing and normalisation)
  and its surface gradient by ducc0's ``synthesis_general`` (spin 0, and spin 1 with
  ``mode="DERIV1"``: ``(d/dtheta, (1/sin theta) d/dphi)`` in colatitude theta, longitude
  phi), then ``grad = g_theta e_theta + g_phi e_phi`` in R^3; tolerance ``SPHERE_EPS``
  (ducc0 asserts ``epsilon > 2e-13``).

Both are exact evaluations of the band-limited field to these tolerances (tested against
direct sums of the series in tests/solvers/transforms/test_pointwise.py).
"""
from __future__ import annotations

import numpy as np

from solvers.grids.coordinates import angle, colat_lon

try:  # finufft and ducc0 are dependencies; a missing one fails on use, not at import
    import finufft
except ImportError:  # pragma: no cover - depends on the environment
    finufft = None
try:
    import ducc0
except ImportError:  # pragma: no cover - depends on the environment
    ducc0 = None

SERIES_EPS = 1e-14
SPHERE_EPS = 3e-13


def _require(module, name: str) -> None:
    if module is None:
        raise ValueError(f"evaluating a field off the grid needs the package {name}")


def series_at(c: np.ndarray, theta: np.ndarray, nyquist: bool = False,
              derivative: bool = False) -> np.ndarray:
    """Values (or, with ``derivative``, d/dtheta) at the angles ``theta`` of the real
    series with coefficients ``c`` (k = 0..K); ``nyquist``: the last one is an even
    grid's Nyquist coefficient (module docstring)."""
    _require(finufft, "finufft")
    c = np.asarray(c, dtype=complex)
    big_k = c.size - 1
    full = np.empty(2 * big_k + 1, dtype=complex)  # modes -K..K (finufft's default order)
    full[big_k:] = c
    full[:big_k] = np.conj(c[:0:-1])
    if nyquist and big_k > 0:
        full[0] = full[-1] = 0.5 * c[-1].real
    if derivative:
        full *= 1j * np.arange(-big_k, big_k + 1)
    theta = np.ascontiguousarray(theta, dtype=np.float64).ravel()
    if theta.size == 0:
        return np.zeros(0)
    # One thread: the result does not depend on the thread count (solvers.particles.chunks)
    # and small transforms gain nothing from more.
    return finufft.nufft1d2(theta, full, eps=SERIES_EPS, isign=1, nthreads=1).real


def circle_series_at(c: np.ndarray, points: np.ndarray, nyquist: bool = False
                     ) -> np.ndarray:
    """``series_at`` at the directions of ``points`` (m, 2)."""
    return series_at(c, angle(np.asarray(points, dtype=float)), nyquist)


def sphere_synthesis_at(alm: np.ndarray, lmax: int, points: np.ndarray,
                        gradient: bool = False, threads: int = 1
                        ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Values of ``sum a_lm Y_lm`` at the directions of ``points`` (m, 3); with
    ``gradient``, also the surface gradient (m, 3), tangent at each point."""
    _require(ducc0, "ducc0")
    alm = np.ascontiguousarray(alm, dtype=complex)[None]
    p = np.asarray(points, dtype=float)
    loc = np.ascontiguousarray(colat_lon(p))
    opts = {"lmax": int(lmax), "loc": loc, "epsilon": SPHERE_EPS, "nthreads": int(threads)}
    values = ducc0.sht.experimental.synthesis_general(alm=alm, spin=0, **opts)[0]
    if not gradient:
        return values
    g = ducc0.sht.experimental.synthesis_general(alm=alm, spin=1, mode="DERIV1", **opts)
    ct, st = np.cos(loc[:, 0]), np.sin(loc[:, 0])
    cp, sp = np.cos(loc[:, 1]), np.sin(loc[:, 1])
    grad = (g[0][:, None] * np.stack([ct * cp, ct * sp, -st], axis=-1)
            + g[1][:, None] * np.stack([-sp, cp, np.zeros_like(cp)], axis=-1))
    return values, grad
