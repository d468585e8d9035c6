"""Gauss–Legendre quadrature and normalised associated Legendre functions.

Conventions (those of ducc0, healpy and libsharp):

- ``x = cos(colatitude) = sin(latitude)``; nodes are returned in ascending ``x`` (south to
  north); ``s = sqrt(1 - x^2) = cos(latitude)``.
- ``lambda_lm(x) = sqrt((2l+1)/(4 pi) (l-m)!/(l+m)!) P_l^m(x)`` for ``0 <= m <= l``, with the
  Condon–Shortley phase ``(-1)^m`` inside ``P_l^m`` (as in ``scipy.special.lpmv``), so that
  ``Y_lm(theta, phi) = lambda_lm(cos theta) e^{i m phi}`` are orthonormal on the unit sphere:
  ``int_{-1}^{1} lambda_lm lambda_l'm dx = delta_ll' / (2 pi)``. E.g.
  ``lambda_00 = 1/sqrt(4 pi)``, ``lambda_11 = -sqrt(3/(8 pi)) s``.

Why the care:

- Gauss–Legendre nodes and weights: ``scipy.special.roots_legendre`` weights are off by up
  to 1.5e-9 near the poles at 512 points, which spoils a 1e-12 transform round trip. Here
  the nodes are found by Newton's method in the colatitude ``theta`` (not in ``x``, where
  the polar nodes crowd together) on the three-term recurrence, and the weights are
  ``2 / (dP_n/dtheta)^2 = 2 / ((1 - x^2) P_n'(x)^2)``, both accurate to a few ulps.
- ``lambda_mm = (-1)^m sqrt((2m+1)!!/(4 pi (2m)!!)) s^m`` underflows double precision for
  large ``m`` near the poles (``s^m`` ~ 1e-2700 at ``m = 1023``, ``s = 2e-3``) although the
  ``lambda_lm`` it seeds grow by hundreds of orders of magnitude along ``l``. Values are
  therefore carried as ``mantissa * BIG^e`` with an integer exponent ``e <= 0`` (the
  extended-range scheme of libsharp; cf. Holmes & Featherstone, J. Geodesy 76, 2002) and
  rescaled whenever the mantissa leaves ``[1/BIG, BIG]``; a value with ``e <= -2`` is below
  ``2^-600`` and contributes exactly nothing in double precision.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numba
import numpy as np

SCALE_BITS = 600
BIG = 2.0 ** SCALE_BITS
SMALL = 2.0 ** -SCALE_BITS


def _legendre_pn_theta(n: int, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``P_n(cos theta)`` and ``dP_n/dtheta`` for ``0 < theta <= pi/2``.

    The plain recurrence in ``x = cos theta`` is not good enough near the pole: rounding
    ``x`` to double moves ``theta`` by ``1e-16 / sin(theta)``, i.e. a relative 5e-12 at the
    first of 512 nodes. With ``u = 1 - x = 2 sin^2(theta/2)`` (computed from ``theta``)
    and the differences ``D_k = P_k - P_{k-1}``, Bonnet's recurrence reads
    ``D_k = ((k - 1) D_{k-1} - (2k - 1) u P_{k-1}) / k`` (Reinsch's modification), which
    never forms ``x`` and stays accurate at the pole.
    """
    u = 2.0 * np.sin(0.5 * theta) ** 2
    p = np.ones_like(theta)
    d = np.zeros_like(theta)
    for k in range(1, n + 1):
        d = ((k - 1) * d - (2 * k - 1) * u * p) / k
        p = p + d
    # dP_n/dtheta = n (x P_n - P_{n-1}) / sin(theta) = n (D_n - u P_n) / sin(theta)
    return p, n * (d - u * p) / np.sin(theta)


@lru_cache(maxsize=32)
def _gauss_legendre_theta(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Colatitudes in (0, pi/2] of the northern nodes (pole first) and their weights."""
    nh = (n + 1) // 2
    k = np.arange(1, nh + 1)
    # Tricomi's asymptotic guess x = (1 - 1/(8n^2) + 1/(8n^3)) cos(t0), taken to theta.
    t0 = np.pi * (4 * k - 1) / (4 * n + 2)
    theta = t0 + (1 / (8 * n**2) - 1 / (8 * n**3)) / np.tan(t0)
    for _ in range(20):  # Newton: quadratic, so one more step after 1e-10 reaches round-off
        pn, dp = _legendre_pn_theta(n, theta)
        step = pn / dp
        theta = theta - step
        if np.max(np.abs(step) / theta) <= 1e-10:
            pn, dp = _legendre_pn_theta(n, theta)
            theta = theta - pn / dp
            break
    if n % 2 == 1:
        theta[-1] = np.pi / 2
    _, dp = _legendre_pn_theta(n, theta)
    w = 2.0 / dp**2           # = 2 / ((1 - x^2) P_n'(x)^2)
    theta.setflags(write=False)
    w.setflags(write=False)
    return theta, w


def _mirror(north: np.ndarray, n: int, sign: float) -> np.ndarray:
    """Ascending array of ``n`` values from the northern ones (pole first): the southern
    half is ``sign * north``, the middle node (odd n) is shared."""
    south = sign * north[: n // 2]
    return np.concatenate([south, north[::-1]])


def gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes ``x`` (ascending, in (-1, 1)) and weights (sum 2) of order ``n``.

    The rule integrates polynomials of degree ``<= 2n - 1`` on [-1, 1] exactly. Nodes and
    weights are exactly symmetric (``x[::-1] == -x``); for odd ``n`` the middle node is 0.
    """
    if n < 1:
        raise ValueError(f"a Gauss-Legendre rule needs n >= 1 nodes, got {n}")
    theta, w = _gauss_legendre_theta(int(n))
    x = np.cos(theta)
    if n % 2 == 1:
        x[-1] = 0.0
    return _mirror(x, n, -1.0), _mirror(w, n, 1.0)


def gauss_legendre_latitudes(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Latitudes (radians, ascending, in (-pi/2, pi/2)) of the Gauss–Legendre nodes, and
    the weights (sum 2). Computed from the colatitudes, so accurate near the poles too:
    ``sin(lat)`` equals the node ``x`` and ``cos(lat)`` is the accurate ``sqrt(1 - x^2)``."""
    if n < 1:
        raise ValueError(f"a Gauss-Legendre rule needs n >= 1 nodes, got {n}")
    theta, w = _gauss_legendre_theta(int(n))
    return _mirror(np.pi / 2 - theta, n, -1.0), _mirror(w, n, 1.0)


def lambda_mm(mmax: int, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sectoral values ``lambda_mm`` at ``s = sqrt(1 - x^2)`` for ``m = 0..mmax``.

    Returns:
        ``(mant, e)``, both of shape ``(mmax + 1, len(s))``, with
        ``lambda_mm = mant * BIG^e``, ``e <= 0`` integer (int64) and
        ``SMALL <= |mant| <= 1`` whenever ``e < 0``.
    """
    s = np.asarray(s, dtype=float)
    mant = np.empty((mmax + 1, s.size))
    ex = np.zeros((mmax + 1, s.size), dtype=np.int64)
    cur = np.full(s.size, 1.0 / np.sqrt(4 * np.pi))
    e = np.zeros(s.size, dtype=np.int64)
    mant[0] = cur
    for m in range(1, mmax + 1):
        cur = cur * (-np.sqrt((2 * m + 1) / (2 * m)) * s)
        low = (np.abs(cur) < SMALL) & (cur != 0.0)
        cur[low] *= BIG
        e[low] -= 1
        mant[m] = cur
        ex[m] = e
    return mant, ex


def recurrence_coefficients(lmax: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Coefficients of ``lambda_lm = a_l x lambda_{l-1,m} - c_l lambda_{l-2,m}``.

    Returns arrays ``a, c`` indexed by ``l - m`` (entries 0 unused), with
    ``a_l = sqrt((4l^2 - 1)/(l^2 - m^2))`` and
    ``c_l = a_l sqrt(((l-1)^2 - m^2)/(4(l-1)^2 - 1))`` (so ``c_{m+1} = 0``).
    """
    ll = np.arange(m, lmax + 1, dtype=float)
    a = np.zeros(ll.size)
    c = np.zeros(ll.size)
    l1 = ll[1:]
    a[1:] = np.sqrt((4 * l1 * l1 - 1) / ((l1 - m) * (l1 + m)))
    c[1:] = a[1:] * np.sqrt(((l1 - 1 - m) * (l1 - 1 + m)) / (4 * (l1 - 1) ** 2 - 1))
    return a, c


def make_legendre_table() -> Callable:
    """Compile the extended-range recurrence ``table(x, mant, e, a, c, out)``.

    Fills ``out[l - m, i] = lambda_lm(x_i)`` from the sectoral values
    ``mant[i] * BIG^e[i]`` and the coefficients of ``recurrence_coefficients``.
    """

    @numba.njit(cache=True)
    def table(x, mant, e, a, c, out):
        nl, npts = out.shape
        for i in range(npts):
            p2 = 0.0
            p1 = mant[i]
            ei = e[i]
            sc = 1.0 if ei == 0 else (SMALL if ei == -1 else 0.0)
            out[0, i] = p1 * sc
            for k in range(1, nl):
                t = a[k] * x[i] * p1 - c[k] * p2
                p2 = p1
                p1 = t
                if ei < 0 and abs(p1) > BIG:
                    p1 *= SMALL
                    p2 *= SMALL
                    ei += 1
                    sc = 1.0 if ei == 0 else SMALL
                out[k, i] = p1 * sc
        return out

    return table


_legendre_table_kernel = None


def legendre_table(lmax: int, m: int, x: np.ndarray) -> np.ndarray:
    """``lambda_lm(x)`` for ``l = m..lmax`` at the points ``x`` (see the module docstring).

    Args:
        lmax: largest degree.
        m: order, ``0 <= m <= lmax``.
        x: points in [-1, 1].

    Returns:
        Array of shape ``(lmax + 1 - m, len(x))``; row ``l - m`` holds ``lambda_lm``.
        Values below about ``2^-600`` (deep in the polar evanescent zone) are returned as 0.
    """
    global _legendre_table_kernel
    if not 0 <= m <= lmax:
        raise ValueError(f"need 0 <= m <= lmax, got m = {m}, lmax = {lmax}")
    x = np.ascontiguousarray(np.atleast_1d(x), dtype=float)
    if np.any(np.abs(x) > 1):
        raise ValueError("Legendre functions need |x| <= 1")
    s = np.sqrt((1.0 - x) * (1.0 + x))
    mant, e = lambda_mm(m, s)
    a, c = recurrence_coefficients(lmax, m)
    if _legendre_table_kernel is None:
        _legendre_table_kernel = make_legendre_table()
    out = np.empty((lmax + 1 - m, x.size))
    return _legendre_table_kernel(x, mant[m].copy(), e[m].copy(), a, c, out)
