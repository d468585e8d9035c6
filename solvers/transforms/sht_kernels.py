"""Compiled Legendre stages of the numpy spherical-harmonic backend
(``solvers.transforms.sht.LegendreTransforms``): synthesis and analysis sums by the
three-term recurrence in ``l``, and the polar skip of negligible orders.

The layouts (packed ``a_lm``, Gauss-Legendre rings south to north) are those of
``solvers.transforms.sht``; the extended range (mantissa, exponent in units of ``BIG``)
is that of ``solvers.transforms.legendre.lambda_mm``.
"""
from __future__ import annotations

import numba
import numpy as np

from solvers.transforms.legendre import BIG, SMALL

# Recurrence steps between two checks of the extended-range mantissas (the growth over a
# block is at most ~1e20, far inside the headroom 2^(1023 - 600) above BIG), and steps per
# pass over the rings (fewer loads and stores per flop).
_BLOCK = 16
_UNROLL = 4


def make_sht_kernels() -> tuple:
    """Compile the Legendre stages of the numpy backend (threads split the orders ``m``).

    Common arguments: ``x`` (nh,) the ``sin(lat) >= 0`` of the northern rings, equator
    first; ``mant, ex`` (mmax + 1, nh) the sectoral ``lambda_mm`` in extended range (see
    ``solvers.transforms.legendre.lambda_mm``); ``A, C`` the recurrence coefficients
    ``lambda_lm = A x lambda_{l-1,m} - C lambda_{l-2,m}`` packed with the grid's degree
    ``lgrid``; ``nact`` (mmax + 1,) the number of rings, from the equator, on which
    order ``m`` is not negligible (the others are skipped); ``i_north, i_south`` (nh,) the
    rows of each northern ring and of its mirror (equal for an equatorial ring);
    ``m_lo, m_hi``: the call handles the orders ``m_lo <= m < m_hi``, so that calls on
    disjoint ranges can run in threads (the kernels release the GIL). Contiguous ranges,
    not interleaved orders: neighbouring ``m`` share cache lines of ``F``.

    Returns:
        ``(synthesis, analysis, active)``:
        ``synthesis(alm, lmax, x, mant, ex, A, C, lgrid, nact, i_north, i_south, F,
        m_lo, m_hi)`` writes the ring Fourier coefficients ``F[:, m] = sum_l a_lm
        lambda_lm``, ``m <= lmax``;
        ``analysis(G, wring, lmax, x, mant, ex, A, C, lgrid, nact, i_north, i_south, alm,
        m_lo, m_hi)`` fills ``alm[index(l, m)] = sum_rings wring G[ring, m] lambda_lm``;
        ``active(x, mant, ex, A, C, lgrid, tol, nact)`` fills ``nact``: rings nearer the
        pole than ``nact[m]`` have ``|lambda_lm| < tol`` for all ``l <= lgrid`` (checked
        ring by ring from the pole).
    """

    @numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False,
                fastmath={"contract"})
    def synthesis(alm, lmax, x, mant, ex, A, C, lgrid, nact, i_north, i_south, F,
                  m_lo, m_hi):
        nh = x.shape[0]
        p1 = np.empty(nh)
        p2 = np.empty(nh)
        sc = np.empty(nh)
        e = np.empty(nh, dtype=np.int64)
        er = np.empty(nh)
        ei = np.empty(nh)
        orr = np.empty(nh)
        oi = np.empty(nh)
        ka = np.zeros(lmax + _UNROLL + 2)     # coefficients indexed by k = l - m,
        kc = np.zeros(lmax + _UNROLL + 2)     # zero-padded past lmax
        kr = np.zeros(lmax + _UNROLL + 2)
        ki = np.zeros(lmax + _UNROLL + 2)
        for m in range(m_lo, min(m_hi, lmax + 1)):
            base = m * (2 * lmax + 1 - m) // 2
            gbase = m * (2 * lgrid + 1 - m) // 2
            nst = lmax - m
            for k in range(nst + 1):
                ka[k] = A[gbase + m + k]
                kc[k] = C[gbase + m + k]
                kr[k] = alm[base + m + k].real
                ki[k] = alm[base + m + k].imag
            for k in range(nst + 1, nst + _UNROLL + 1):
                ka[k] = 0.0
                kc[k] = 0.0
                kr[k] = 0.0
                ki[k] = 0.0
            nj = nact[m]
            for j in range(nj):
                e[j] = ex[m, j]
                sc[j] = 1.0 if e[j] == 0 else (SMALL if e[j] == -1 else 0.0)
                p1[j] = mant[m, j]
                p2[j] = 0.0
                v = p1[j] * sc[j]
                er[j] = kr[0] * v
                ei[j] = ki[0] * v
                orr[j] = 0.0
                oi[j] = 0.0
            nu = 0                   # rings [0, nu) hold true values (exponent 0)
            while nu < nj and e[nu] == 0:
                nu += 1
            k0 = 1
            while k0 <= nst:
                kend = min(k0 + _BLOCK, nst + 1)
                for k in range(k0, kend, _UNROLL):
                    a1, a2, a3, a4 = ka[k], ka[k + 1], ka[k + 2], ka[k + 3]
                    c1, c2, c3, c4 = kc[k], kc[k + 1], kc[k + 2], kc[k + 3]
                    r1, r2, r3, r4 = kr[k], kr[k + 1], kr[k + 2], kr[k + 3]
                    i1, i2, i3, i4 = ki[k], ki[k + 1], ki[k + 2], ki[k + 3]
                    for j in range(nu):
                        xj = x[j]
                        q1 = p1[j]
                        q2 = p2[j]
                        t1 = a1 * (xj * q1) - c1 * q2      # k odd: odd in x
                        t2 = a2 * (xj * t1) - c2 * q1
                        t3 = a3 * (xj * t2) - c3 * t1
                        t4 = a4 * (xj * t3) - c4 * t2
                        p2[j] = t3
                        p1[j] = t4
                        orr[j] += r1 * t1 + r3 * t3
                        oi[j] += i1 * t1 + i3 * t3
                        er[j] += r2 * t2 + r4 * t4
                        ei[j] += i2 * t2 + i4 * t4
                    for j in range(nu, nj):               # the same, scaled
                        xj = x[j]
                        q1 = p1[j]
                        q2 = p2[j]
                        t1 = a1 * (xj * q1) - c1 * q2
                        t2 = a2 * (xj * t1) - c2 * q1
                        t3 = a3 * (xj * t2) - c3 * t1
                        t4 = a4 * (xj * t3) - c4 * t2
                        p2[j] = t3
                        p1[j] = t4
                        s = sc[j]
                        orr[j] += s * (r1 * t1 + r3 * t3)
                        oi[j] += s * (i1 * t1 + i3 * t3)
                        er[j] += s * (r2 * t2 + r4 * t4)
                        ei[j] += s * (i2 * t2 + i4 * t4)
                for j in range(nu, nj):  # extended range: renormalise growing mantissas
                    if e[j] < 0 and abs(p1[j]) > BIG:
                        p1[j] *= SMALL
                        p2[j] *= SMALL
                        e[j] += 1
                        sc[j] = 1.0 if e[j] == 0 else SMALL
                while nu < nj and e[nu] == 0:
                    nu += 1
                k0 = kend
            for j in range(nj):
                F[i_north[j], m] = complex(er[j] + orr[j], ei[j] + oi[j])
                F[i_south[j], m] = complex(er[j] - orr[j], ei[j] - oi[j])
            for j in range(nj, nh):
                F[i_north[j], m] = 0.0
                F[i_south[j], m] = 0.0
        return F

    @numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False,
                fastmath={"reassoc", "contract", "nsz"})
    def analysis(G, wring, lmax, x, mant, ex, A, C, lgrid, nact, i_north, i_south, alm,
                 m_lo, m_hi):
        nh = x.shape[0]
        p1 = np.empty(nh)
        p2 = np.empty(nh)
        e = np.empty(nh, dtype=np.int64)
        g0 = np.empty((4, nh))      # even re, even im, odd re, odd im (unscaled)
        ger = np.empty(nh)
        gei = np.empty(nh)
        gor = np.empty(nh)
        goi = np.empty(nh)
        ka = np.zeros(lmax + _UNROLL + 2)
        kc = np.zeros(lmax + _UNROLL + 2)
        for m in range(m_lo, min(m_hi, lmax + 1)):
            base = m * (2 * lmax + 1 - m) // 2
            gbase = m * (2 * lgrid + 1 - m) // 2
            nst = lmax - m
            for k in range(nst + 1):
                ka[k] = A[gbase + m + k]
                kc[k] = C[gbase + m + k]
            for k in range(nst + 1, nst + _UNROLL + 1):
                ka[k] = 0.0
                kc[k] = 0.0
            nj = nact[m]
            s0r = 0.0
            s0i = 0.0
            for j in range(nj):
                jn = i_north[j]
                js = i_south[j]
                gn = G[jn, m] * wring[jn]
                if jn == js:
                    gs = 0.0j
                    ge = gn
                else:
                    gs = G[js, m] * wring[js]
                    ge = gn + gs
                go = gn - gs
                g0[0, j] = ge.real
                g0[1, j] = ge.imag
                g0[2, j] = go.real
                g0[3, j] = go.imag
                e[j] = ex[m, j]
                s = 1.0 if e[j] == 0 else (SMALL if e[j] == -1 else 0.0)
                ger[j] = ge.real * s
                gei[j] = ge.imag * s
                gor[j] = go.real * s
                goi[j] = go.imag * s
                p1[j] = mant[m, j]
                p2[j] = 0.0
                s0r += ger[j] * p1[j]
                s0i += gei[j] * p1[j]
            alm[base + m] = complex(s0r, s0i)
            k0 = 1
            while k0 <= nst:
                kend = min(k0 + _BLOCK, nst + 1)
                for k in range(k0, kend, _UNROLL):
                    a1, a2, a3, a4 = ka[k], ka[k + 1], ka[k + 2], ka[k + 3]
                    c1, c2, c3, c4 = kc[k], kc[k + 1], kc[k + 2], kc[k + 3]
                    s1r = 0.0
                    s1i = 0.0
                    s2r = 0.0
                    s2i = 0.0
                    s3r = 0.0
                    s3i = 0.0
                    s4r = 0.0
                    s4i = 0.0
                    for j in range(nj):
                        xj = x[j]
                        q1 = p1[j]
                        q2 = p2[j]
                        t1 = a1 * (xj * q1) - c1 * q2
                        t2 = a2 * (xj * t1) - c2 * q1
                        t3 = a3 * (xj * t2) - c3 * t1
                        t4 = a4 * (xj * t3) - c4 * t2
                        p2[j] = t3
                        p1[j] = t4
                        s1r += gor[j] * t1
                        s1i += goi[j] * t1
                        s2r += ger[j] * t2
                        s2i += gei[j] * t2
                        s3r += gor[j] * t3
                        s3i += goi[j] * t3
                        s4r += ger[j] * t4
                        s4i += gei[j] * t4
                    alm[base + m + k] = complex(s1r, s1i)
                    if k + 1 <= nst:
                        alm[base + m + k + 1] = complex(s2r, s2i)
                    if k + 2 <= nst:
                        alm[base + m + k + 2] = complex(s3r, s3i)
                    if k + 3 <= nst:
                        alm[base + m + k + 3] = complex(s4r, s4i)
                for j in range(nj):
                    if e[j] < 0 and abs(p1[j]) > BIG:
                        p1[j] *= SMALL
                        p2[j] *= SMALL
                        e[j] += 1
                        s = 1.0 if e[j] == 0 else SMALL
                        ger[j] = g0[0, j] * s
                        gei[j] = g0[1, j] * s
                        gor[j] = g0[2, j] * s
                        goi[j] = g0[3, j] * s
                k0 = kend
        return alm

    @numba.njit(cache=True, error_model="numpy")
    def active(x, mant, ex, A, C, lgrid, tol, nact):
        nh = x.shape[0]
        for m in range(nact.shape[0]):
            gbase = m * (2 * lgrid + 1 - m) // 2
            nj = nh
            while nj > 1:             # from the pole towards the equator
                j = nj - 1
                p2 = 0.0
                p1 = mant[m, j]
                e = ex[m, j]
                sc = 1.0 if e == 0 else (SMALL if e == -1 else 0.0)
                big = abs(p1) * sc >= tol
                for l in range(m + 1, lgrid + 1):
                    if big:
                        break
                    t = A[gbase + l] * x[j] * p1 - C[gbase + l] * p2
                    p2 = p1
                    p1 = t
                    if e < 0 and abs(p1) > BIG:
                        p1 *= SMALL
                        p2 *= SMALL
                        e += 1
                        sc = 1.0 if e == 0 else SMALL
                    big = abs(p1) * sc >= tol
                if big:
                    break
                nj -= 1
            nact[m] = nj
        return nact

    return synthesis, analysis, active


_sht_kernels = None


def sht_kernels() -> tuple:
    """The compiled kernels (compiled on first use, cached on disk by numba)."""
    global _sht_kernels
    if _sht_kernels is None:
        _sht_kernels = make_sht_kernels()
    return _sht_kernels
