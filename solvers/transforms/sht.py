"""Spherical-harmonic transforms of real fields on Gauss–Legendre grids.

Grid space: ``nlat`` Gauss–Legendre latitudes, ascending (south to north), in
(-pi/2, pi/2), times ``nlon`` equispaced longitudes ``lon_k = 2 pi k / nlon`` starting at 0;
fields are arrays of shape ``(nlat, nlon)``.

Coefficient space: complex ``a_lm`` for ``0 <= m <= l <= lmax`` in one 1-D array, m-major
packed as in ducc0 and healpy: ``index(l, m) = m (2 lmax + 1 - m) / 2 + l``. A real field is

    f = sum_l [ a_l0 Y_l0 + 2 Re sum_{m=1}^{l} a_lm Y_lm ],

(``a_l0`` real), with the orthonormal harmonics ``Y_lm = lambda_lm(sin lat) e^{i m lon}``,
``int |Y_lm|^2 dsigma = 1`` on the unit sphere, Condon–Shortley phase included (so
``Y_11 = -sqrt(3/(8 pi)) cos(lat) e^{i lon}``; see ``solvers.transforms.legendre``). Then
``a_lm = int f conj(Y_lm) dsigma`` and ``Delta Y_lm = -l(l+1) Y_lm``.

Exactness: ``synthesis`` of coefficients up to degree ``L`` is exact on any grid with
``nlat >= L + 1`` and ``nlon >= 2L + 1`` (the sizes a ``SphereGrid(L)`` accepts), and
``analysis`` by Gauss–Legendre quadrature recovers them to round-off. Products of two fields
band-limited to ``L`` have degree ``2L``; their coefficients up to ``L`` are computed exactly
on ``product_grid(L)`` (``nlat >= (3L)//2 + 1``, ``nlon >= 3L + 1``: the 3/2 rule in both
directions, as ``solvers.grids.circle.padded_size``).

Backends:

- ``"ducc0"`` (default when importable): ``ducc0.sht.experimental.synthesis_2d`` /
  ``analysis_2d`` with geometry ``"GL"``. ducc0 orders rings north to south (colatitude
  ascending) with the first longitude at 0: the rows are flipped (a view) on the way in
  and out.
- ``"numpy"``: this module's own. Batched real FFTs along the rings (pyfftw, planned once;
  scipy.fft otherwise), then the Legendre sums by the three-term recurrence in ``l``
  computed on the fly (no tables: they would take 0.5 GiB at ``L = 511``) in numba
  kernels, which use the equatorial symmetry ``lambda_lm(-x) = (-1)^(l+m) lambda_lm(x)`` to
  treat a northern and a southern ring together, run the innermost loop over rings (so it
  vectorises), carry ``lambda`` in the extended range of ``solvers.transforms.legendre`` near the
  poles, and split the orders ``m`` over threads.

Why both: ducc0 (and shtns, 0.76 ms per pair at ``L = 255`` on 2 cores, but rarely
installable) are the fast libraries; dense numpy Legendre matrices took 14 ms there and
0.5 GiB of tables at ``L = 511``. The numpy backend keeps the package working without ducc0,
checks it, and measured as fast as the ducc0 PyPI wheel up to ``L = 255`` and 1.2-1.4x
slower at ``L = 511``, single-threaded (``benchmarks/bench_sht.py``). The ducc0 wheels are
built for generic x86-64: ``pip install --no-binary ducc0 ducc0`` (a 15-minute build)
measured 1.3-1.6x faster than the wheel at ``L = 127..255``.

Accuracy: round trips are exact to ~1e-13 (``L = 255..1023``). Values within a few rings of
the poles are conditioned by ``cos(colatitude)`` being rounded to double (a relative
``~L^2 1e-16`` in the field there): the two backends agree to 3e-13 of the maximum at
``L = 255``, 2e-12 at 511, 4e-12 at 1023.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from solvers.transforms import fft as _fft
from solvers.transforms.legendre import BIG, SMALL, gauss_legendre_latitudes, lambda_mm

try:  # optional: the fast backend
    import ducc0
    HAVE_DUCC0 = True
except ImportError:  # pragma: no cover - depends on the environment
    ducc0 = None
    HAVE_DUCC0 = False

BACKENDS = ("ducc0", "numpy")
# Below this degree one thread is used: a pair of transforms takes < 1 ms there, and a
# second thread measured no faster on 2 shared cores (hand-off ~0.1 ms).
THREADS_MIN_LMAX = 128
# Recurrence steps between two checks of the extended-range mantissas (the growth over a
# block is at most ~1e20, far inside the headroom 2^(1023 - 600) above BIG), and steps per
# pass over the rings (fewer loads and stores per flop).
_BLOCK = 16
_UNROLL = 4
# Orders m whose lambda_lm stay below this on a polar ring for all l are skipped there.
POLAR_TOL = 2.0 ** -100


def default_threads(lmax: int) -> int:
    """Threads for transforms of degree ``lmax``: 1 when small, up to 4 cores otherwise."""
    if lmax < THREADS_MIN_LMAX:
        return 1
    return max(1, min(os.cpu_count() or 1, 4))


def alm_size(lmax: int) -> int:
    """Number of coefficients ``a_lm``, ``0 <= m <= l <= lmax``."""
    return (lmax + 1) * (lmax + 2) // 2


def alm_index(l, m, lmax: int):
    """Position of ``a_lm`` in the packed array of degree ``lmax`` (ints or int arrays)."""
    return m * (2 * lmax + 1 - m) // 2 + l


def alm_lmax(size: int) -> int:
    """The ``lmax`` of a packed coefficient array of length ``size``."""
    lmax = round(float(np.sqrt(8 * size + 1) - 3) / 2)
    if alm_size(lmax) != size:
        raise ValueError(f"{size} is not a number of coefficients (l+1)(l+2)/2")
    return lmax


def resize_alm(alm: np.ndarray, lmax: int) -> np.ndarray:
    """Coefficients (a new array) truncated or zero-padded to degree ``lmax``."""
    lmax_in = alm_lmax(alm.shape[-1])
    out = np.zeros(alm.shape[:-1] + (alm_size(lmax),), dtype=complex)
    lo = min(lmax, lmax_in)
    for m in range(lo + 1):
        out[..., alm_index(m, m, lmax): alm_index(lo, m, lmax) + 1] = \
            alm[..., alm_index(m, m, lmax_in): alm_index(lo, m, lmax_in) + 1]
    return out


def _fft_size(n: int) -> int:
    """Smallest even ``2^a 3^b 5^c >= n``."""
    k = max(2, n + n % 2)
    while True:
        r = k
        for p in (2, 3, 5):
            while r % p == 0:
                r //= p
        if r == 1 and k % 2 == 0:
            return k
        k += 1


def product_sizes(lmax: int, other_lmax: int | None = None) -> tuple[int, int]:
    """``(nlat, nlon)`` of ``product_grid(lmax, other_lmax)``.

    The integrand ``f g conj(Y_lm)`` of the truncated product of ``f`` (degree ``lmax``)
    and ``g`` (degree ``other_lmax``, default ``lmax``) has degree ``D = 2 lmax +
    other_lmax``: ``nlat >= (D + 1)/2`` Gauss nodes (even) and ``nlon >= D + 1``
    longitudes (an even 5-smooth FFT size) integrate it exactly. ``other_lmax = lmax``
    is the 3/2 rule.
    """
    degree = 2 * lmax + (lmax if other_lmax is None else min(int(other_lmax), lmax))
    nlat = degree // 2 + 1
    return nlat + nlat % 2, _fft_size(degree + 1)


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
_thread_pool = None


def sht_kernels() -> tuple:
    """The compiled kernels (compiled on first use, cached on disk by numba)."""
    global _sht_kernels
    if _sht_kernels is None:
        _sht_kernels = make_sht_kernels()
    return _sht_kernels


def _pool() -> ThreadPoolExecutor:
    """The threads running chunks of orders (created on first use).

    Python threads blocked on futures, rather than numba's OpenMP layer: OpenMP threads
    spin at barriers, which cost 10-20 ms per transform when the cores are shared with
    other processes.
    """
    global _thread_pool
    if _thread_pool is None:
        _thread_pool = ThreadPoolExecutor(max_workers=max(1, (os.cpu_count() or 1) - 1),
                                          thread_name_prefix="sht")
    return _thread_pool


class _RingFFT:
    """Real FFTs of all rings at once (axis 1 of an (nlat, nlon) array), planned once.

    ``forward`` is unnormalised (``sum_k f_k e^{-i m lon_k}``) and ``inverse`` is the
    unnormalised sum of the real series (``solvers.transforms.fft``'s inverse, batched); both return
    internal buffers.
    """

    def __init__(self, nlat: int, nlon: int, threads: int):
        self.shape = (nlat, nlon)
        self.nfreq = nlon // 2 + 1
        self.threads = threads
        self.pyfftw = _fft.HAVE_PYFFTW
        if self.pyfftw:
            pyfftw = _fft.pyfftw
            with _fft._lock:
                _fft._load_wisdom()
                self.real = pyfftw.empty_aligned(self.shape, dtype="float64")
                self.spec = pyfftw.empty_aligned((nlat, self.nfreq), dtype="complex128")
                had = pyfftw.export_wisdom()
                self._fwd = pyfftw.FFTW(self.real, self.spec, axes=(1,),
                                        direction="FFTW_FORWARD", flags=("FFTW_MEASURE",),
                                        threads=threads)
                self._bwd = pyfftw.FFTW(self.spec, self.real, axes=(1,),
                                        direction="FFTW_BACKWARD",
                                        flags=("FFTW_MEASURE", "FFTW_DESTROY_INPUT"),
                                        threads=threads)
                if pyfftw.export_wisdom() != had:
                    _fft._save_wisdom()
        else:  # pragma: no cover - pyfftw is a dependency
            self.real = np.empty(self.shape)
            self.spec = np.empty((nlat, self.nfreq), dtype=complex)

    def forward(self, f: np.ndarray) -> np.ndarray:
        if self.pyfftw:
            self.real[...] = f
            self._fwd.execute()
            return self.spec
        import scipy.fft
        self.spec[...] = scipy.fft.rfft(f, axis=1, workers=self.threads)
        return self.spec

    def inverse(self) -> np.ndarray:
        """Samples of the series whose coefficients were written into ``self.spec``."""
        if self.pyfftw:
            self._bwd.execute()
            return self.real
        import scipy.fft
        self.real[...] = scipy.fft.irfft(self.spec, n=self.shape[1], axis=1, norm="forward",
                                         workers=self.threads)
        return self.real


class SphereGrid:
    """Gauss–Legendre grid on the unit sphere with its spherical-harmonic transforms.

    Args:
        lmax: largest degree of the coefficients (``>= 0``).
        nlat: number of latitudes, ``>= lmax + 1`` (default ``lmax + 1``).
        nlon: number of longitudes, ``>= 2 lmax + 1`` (default ``2 nlat``).
        threads: threads of the transforms (``None``: chosen from ``lmax``).
        backend: ``"ducc0"`` or ``"numpy"`` (``None``: ducc0 when importable).

    Attributes:
        lat, lon: latitudes (ascending, in (-pi/2, pi/2)) and longitudes (``2 pi k/nlon``).
        x: ``sin(lat)``, the Gauss–Legendre nodes.
        ring_weights: ``(nlat,)`` Gauss weights times ``2 pi / nlon``.
        weights: ``(nlat, nlon)`` area weights (sum ``4 pi``; a read-only broadcast of
            ``ring_weights``): ``sum(weights * f)`` is the exact integral of fields of
            degree ``<= 2 nlat - 1`` and ``< nlon`` in longitude.
        l, m: degree and order of each packed coefficient; ``laplacian = -l(l+1)``.

    The numpy backend transforms through buffers of the grid: one grid must not be used
    from two threads at once.
    """

    def __init__(self, lmax: int, nlat: int | None = None, nlon: int | None = None,
                 threads: int | None = None, backend: str | None = None):
        lmax = int(lmax)
        if lmax < 0:
            raise ValueError(f"lmax must be >= 0, got {lmax}")
        nlat = lmax + 1 if nlat is None else int(nlat)
        nlon = 2 * nlat if nlon is None else int(nlon)
        if nlat < lmax + 1:
            raise ValueError(f"nlat = {nlat} is too small for lmax = {lmax}: "
                             f"accepted nlat >= lmax + 1 = {lmax + 1}")
        if nlon < 2 * lmax + 1 or nlon < 2:
            raise ValueError(f"nlon = {nlon} is too small for lmax = {lmax}: "
                             f"accepted nlon >= max(2 lmax + 1, 2) = {max(2 * lmax + 1, 2)}")
        if backend is None:
            backend = "ducc0" if HAVE_DUCC0 else "numpy"
        if backend not in BACKENDS:
            raise ValueError(f"unknown SHT backend {backend!r}; valid: {BACKENDS}")
        if backend == "ducc0" and not HAVE_DUCC0:
            raise ValueError("backend 'ducc0' requested but ducc0 cannot be imported")
        self.lmax, self.nlat, self.nlon, self.backend = lmax, nlat, nlon, backend
        self.threads = default_threads(lmax) if threads is None else max(1, int(threads))
        self.lat, wx = gauss_legendre_latitudes(nlat)
        self.lon = 2 * np.pi * np.arange(nlon) / nlon
        self.x = np.sin(self.lat)
        self.ring_weights = wx * (2 * np.pi / nlon)
        self.weights = np.broadcast_to(self.ring_weights[:, None], (nlat, nlon))
        self.l, self.m = self.degrees(lmax)
        self.laplacian = -(self.l * (self.l + 1.0))
        self._numpy_ready = False

    @staticmethod
    def degrees(lmax: int) -> tuple[np.ndarray, np.ndarray]:
        """Arrays ``(l, m)`` of the packed coefficients of degree ``lmax``."""
        m = np.concatenate([np.full(lmax + 1 - k, k) for k in range(lmax + 1)])
        l = np.concatenate([np.arange(k, lmax + 1) for k in range(lmax + 1)])
        return l, m

    def index(self, l, m):
        """Position of ``a_lm`` in this grid's packed coefficients."""
        return alm_index(l, m, self.lmax)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.nlat, self.nlon)

    def integrate(self, f: np.ndarray) -> float:
        """Integral over the sphere of grid values (Gauss–Legendre x trapezoid)."""
        return float(np.sum(self.ring_weights @ f))

    # --- numpy backend -----------------------------------------------------------------
    def _prepare_numpy(self) -> None:
        if self._numpy_ready:
            return
        nh = (self.nlat + 1) // 2
        # northern rings, equator first, and their mirrors
        self._i_north = np.arange(self.nlat - nh, self.nlat, dtype=np.int64)
        self._i_south = np.arange(nh - 1, -1, -1, dtype=np.int64)
        self._xh = np.ascontiguousarray(self.x[self._i_north])
        self._xh[self._i_north == self._i_south] = 0.0
        sh = np.cos(self.lat[self._i_north])
        self._mant, self._ex = lambda_mm(self.lmax, sh)
        a = np.zeros(alm_size(self.lmax))
        c = np.zeros(alm_size(self.lmax))
        l, m = self.l.astype(float), self.m.astype(float)
        up = self.l > self.m
        lu, mu = l[up], m[up]
        a[up] = np.sqrt((4 * lu * lu - 1) / ((lu - mu) * (lu + mu)))
        c[up] = a[up] * np.sqrt((lu - 1 - mu) * (lu - 1 + mu) / (4 * (lu - 1) ** 2 - 1))
        self._A, self._C = a, c
        self._nact = sht_kernels()[2](self._xh, self._mant, self._ex, a, c, self.lmax,
                                      POLAR_TOL, np.empty(self.lmax + 1, dtype=np.int64))
        # the FFTs are ~10% of the work: threads by ring length, as solvers.transforms.fft
        self._rfft = _RingFFT(self.nlat, self.nlon,
                              min(self.threads, _fft.default_threads(self.nlon)))
        self._ranges: dict[int, list[int]] = {}
        self._numpy_ready = True

    def _order_ranges(self, lmax: int) -> list[int]:
        """Bounds splitting the orders ``0..lmax`` into ``self.threads`` contiguous ranges
        of equal work (``(lmax + 1 - m)`` recurrence steps on ``nact[m]`` rings)."""
        bounds = self._ranges.get(lmax)
        if bounds is None:
            m = np.arange(lmax + 1)
            work = np.cumsum((lmax + 1 - m) * np.maximum(self._nact[: lmax + 1], 1))
            cuts = np.searchsorted(work, work[-1] * np.arange(1, self.threads) / self.threads)
            bounds = [0] + [int(c) + 1 for c in cuts] + [lmax + 1]
            self._ranges[lmax] = bounds
        return bounds

    def _run(self, kernel, lmax: int, *args) -> None:
        """Run a kernel over the orders ``0..lmax``, split over ``self.threads`` threads."""
        if self.threads == 1 or lmax < 4 * self.threads:
            kernel(*args, 0, lmax + 1)
            return
        b = self._order_ranges(lmax)
        futures = [_pool().submit(kernel, *args, b[i], b[i + 1]) for i in range(1, len(b) - 1)]
        kernel(*args, b[0], b[1])
        for fut in futures:
            fut.result()

    # --- transforms --------------------------------------------------------------------
    def _check_lmax(self, lmax: int) -> int:
        if not 0 <= lmax <= self.lmax:
            raise ValueError(f"lmax = {lmax} does not fit this grid: accepted "
                             f"0 <= lmax <= {self.lmax}")
        return lmax

    def synthesis(self, alm: np.ndarray) -> np.ndarray:
        """Grid values (a new ``(nlat, nlon)`` array) of the real field with coefficients
        ``alm`` (packed, of any degree ``<= self.lmax``; the degree is read from the size)."""
        alm = np.ascontiguousarray(alm, dtype=complex)
        if alm.ndim != 1:
            raise ValueError(f"alm must be 1-D, got shape {alm.shape}")
        lmax = self._check_lmax(alm_lmax(alm.size))
        if self.backend == "ducc0":
            out = np.empty(self.shape)
            ducc0.sht.experimental.synthesis_2d(
                alm=alm[None], spin=0, lmax=lmax, geometry="GL", map=out[None, ::-1],
                nthreads=self.threads)
            return out
        self._prepare_numpy()
        spec = self._rfft.spec
        spec[:, lmax + 1:] = 0.0
        syn = sht_kernels()[0]
        self._run(syn, lmax, alm, lmax, self._xh, self._mant, self._ex, self._A, self._C,
                    self.lmax, self._nact, self._i_north, self._i_south, spec)
        return self._rfft.inverse().copy()

    def analysis(self, field: np.ndarray, lmax: int | None = None) -> np.ndarray:
        """Coefficients (a new packed array of degree ``lmax``, default ``self.lmax``) of
        grid values ``field`` (Gauss–Legendre quadrature: exact for band-limited fields).

        A smaller ``lmax`` gives the truncated (dealiased) coefficients directly.
        """
        lmax = self._check_lmax(self.lmax if lmax is None else int(lmax))
        field = np.asarray(field, dtype=float)
        if field.shape != self.shape:
            raise ValueError(f"field has shape {field.shape}, the grid {self.shape}")
        if self.backend == "ducc0":
            return ducc0.sht.experimental.analysis_2d(
                map=field[None, ::-1], spin=0, lmax=lmax, mmax=lmax, geometry="GL",
                nthreads=self.threads)[0]
        self._prepare_numpy()
        spec = self._rfft.forward(field)
        alm = np.empty(alm_size(lmax), dtype=complex)
        ana = sht_kernels()[1]
        self._run(ana, lmax, spec, self.ring_weights, lmax, self._xh, self._mant, self._ex,
                    self._A, self._C, self.lmax, self._nact, self._i_north, self._i_south,
                    alm)
        return alm

    def __repr__(self) -> str:
        return (f"SphereGrid(lmax={self.lmax}, nlat={self.nlat}, nlon={self.nlon}, "
                f"backend={self.backend!r}, threads={self.threads})")


def product_grid(lmax: int, threads: int | None = None,
                 backend: str | None = None, other_lmax: int | None = None) -> SphereGrid:
    """Grid on which the product of two fields of degree ``<= lmax`` (or of one of degree
    ``lmax`` and one of degree ``other_lmax``) is sampled exactly enough that ``analysis``
    (to degree ``lmax``) returns its exact truncation (sizes: ``product_sizes``). A
    smooth factor of low degree, such as a convolution potential, needs a grid barely
    larger than ``SphereGrid(lmax)`` instead of the 3/2 rule's 2.25 times the points.
    """
    nlat, nlon = product_sizes(lmax, other_lmax)
    return SphereGrid(lmax, nlat, nlon, threads=threads, backend=backend)
