"""Spherical-harmonic transforms of real fields on Gauss–Legendre grids: the packed
coefficient layout, the two backends and their ring FFTs. The grid itself (nodes, weights,
the transforms as methods) is ``solvers.grids.sphere.SphereGrid``.

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
``nlat >= L + 1`` and ``nlon >= 2L + 1`` (the sizes a ``solvers.grids.sphere.SphereGrid(L)`` accepts), and
``analysis`` by Gauss–Legendre quadrature recovers them to round-off. Products of two fields
band-limited to ``L`` have degree ``2L``; their coefficients up to ``L`` are computed exactly
on ``solvers.grids.sphere.product_grid(L)`` (``nlat >= (3L)//2 + 1``, ``nlon >= 3L + 1``: the 3/2 rule in both
directions, as ``solvers.grids.circle.padded_size``).

Backends:

- ``"ducc0"`` (default when importable): ``ducc0.sht.experimental.synthesis_2d`` /
  ``analysis_2d`` with geometry ``"GL"``. ducc0 orders rings north to south (colatitude
  ascending) with the first longitude at 0: the rows are flipped (a view) on the way in
  and out.
- ``"numpy"``: this module's own (``LegendreTransforms``, with the compiled kernels of
  ``solvers.transforms.sht_kernels``). Batched real FFTs along the rings (pyfftw, planned once;
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

import numpy as np

from solvers.signals import DeferredSignals
from solvers.transforms import fft as _fft
from solvers.transforms.legendre import lambda_mm
from solvers.transforms.sht_kernels import sht_kernels

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


def alm_degrees(lmax: int) -> tuple[np.ndarray, np.ndarray]:
    """Arrays ``(l, m)`` of the packed coefficients of degree ``lmax``."""
    m = np.concatenate([np.full(lmax + 1 - k, k) for k in range(lmax + 1)])
    l = np.concatenate([np.arange(k, lmax + 1) for k in range(lmax + 1)])
    return l, m


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


# recurrence steps (an order's (lmax + 1 - m) degrees on its active rings) of one round of
# the numba kernels: ~0.3 s on one core, so that Ctrl-C waits at most that long (one
# transform at L = 2047 is ~2.9e9 steps, seconds)
ROUND_WORK = 2**28

_thread_pool = None


def thread_pool() -> ThreadPoolExecutor:
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


class RingFFT:
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


def ducc0_synthesis(alm: np.ndarray, lmax: int, shape: tuple[int, int],
                    threads: int) -> np.ndarray:
    """Grid values (a new ``shape`` array, rings south to north) of packed ``alm`` of
    degree ``lmax`` by ducc0 (which orders rings north to south: a flipped view)."""
    out = np.empty(shape)
    ducc0.sht.experimental.synthesis_2d(
        alm=alm[None], spin=0, lmax=lmax, geometry="GL", map=out[None, ::-1],
        nthreads=threads)
    return out


def ducc0_analysis(field: np.ndarray, lmax: int, threads: int) -> np.ndarray:
    """Packed coefficients of degree ``lmax`` of Gauss-Legendre grid values by ducc0."""
    return ducc0.sht.experimental.analysis_2d(
        map=field[None, ::-1], spin=0, lmax=lmax, mmax=lmax, geometry="GL",
        nthreads=threads)[0]


class LegendreTransforms:
    """The numpy backend on one Gauss-Legendre grid: ring FFTs and the compiled Legendre
    sums, with their tables (sectoral ``lambda_mm``, recurrence coefficients, active rings
    per order) computed once.

    Args:
        lmax: the grid's largest degree (the tables' size).
        lat: ``(nlat,)`` Gauss-Legendre latitudes, ascending.
        ring_weights: ``(nlat,)`` quadrature weights of the rings.
        nlon: longitudes per ring.
        threads: threads over the orders ``m``.

    Transforms go through buffers of this object: one must not be used from two threads
    at once.
    """

    def __init__(self, lmax: int, lat: np.ndarray, ring_weights: np.ndarray, nlon: int,
                 threads: int):
        nlat = lat.shape[0]
        self.lgrid, self.threads, self.ring_weights = lmax, threads, ring_weights
        nh = (nlat + 1) // 2
        # northern rings, equator first, and their mirrors
        self._i_north = np.arange(nlat - nh, nlat, dtype=np.int64)
        self._i_south = np.arange(nh - 1, -1, -1, dtype=np.int64)
        self._xh = np.ascontiguousarray(np.sin(lat)[self._i_north])
        self._xh[self._i_north == self._i_south] = 0.0
        sh = np.cos(lat[self._i_north])
        self._mant, self._ex = lambda_mm(lmax, sh)
        a = np.zeros(alm_size(lmax))
        c = np.zeros(alm_size(lmax))
        degree, order = alm_degrees(lmax)
        l, m = degree.astype(float), order.astype(float)
        up = degree > order
        lu, mu = l[up], m[up]
        a[up] = np.sqrt((4 * lu * lu - 1) / ((lu - mu) * (lu + mu)))
        c[up] = a[up] * np.sqrt((lu - 1 - mu) * (lu - 1 + mu) / (4 * (lu - 1) ** 2 - 1))
        self._A, self._C = a, c
        self._nact = sht_kernels()[2](self._xh, self._mant, self._ex, a, c, lmax,
                                      POLAR_TOL, np.empty(lmax + 1, dtype=np.int64))
        # the FFTs are ~10% of the work: threads by ring length, as solvers.transforms.fft
        self._rfft = RingFFT(nlat, nlon, min(threads, _fft.default_threads(nlon)))
        self._ranges: dict[int, list[int]] = {}

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
        """Run a kernel over the orders ``0..lmax``, split over ``self.threads`` threads;
        beyond ``ROUND_WORK`` recurrence steps, in rounds of at most that much work each,
        with Ctrl-C taken between rounds (``DeferredSignals``): an order's sums are its
        own, so the rounds change no bit."""
        m = np.arange(lmax + 1)
        work = (lmax + 1 - m) * np.maximum(self._nact[: lmax + 1], 1)
        rounds = int(np.ceil(work.sum() / ROUND_WORK))
        if rounds <= 1:
            self._round(kernel, lmax, 0, lmax + 1, args)
            return
        cuts = np.searchsorted(np.cumsum(work), work.sum() * np.arange(1, rounds) / rounds)
        bounds = sorted({0, lmax + 1, *(int(c) + 1 for c in cuts)})
        with DeferredSignals() as signals:
            for lo, hi in zip(bounds[:-1], bounds[1:]):
                signals.check()
                self._round(kernel, lmax, lo, hi, args)

    def _round(self, kernel, lmax: int, lo: int, hi: int, args: tuple) -> None:
        """The orders ``lo..hi - 1``, split over ``self.threads`` threads (the orders
        ``0..lmax`` of equal work, ``_order_ranges``, cut to ``[lo, hi)``)."""
        if self.threads == 1 or lmax < 4 * self.threads:
            kernel(*args, lo, hi)
            return
        b = [min(max(c, lo), hi) for c in self._order_ranges(lmax)]
        parts = [(b[i], b[i + 1]) for i in range(len(b) - 1) if b[i] < b[i + 1]]
        futures = [thread_pool().submit(kernel, *args, a, z) for a, z in parts[1:]]
        kernel(*args, *parts[0])
        for fut in futures:
            fut.result()

    def synthesis(self, alm: np.ndarray, lmax: int) -> np.ndarray:
        """Grid values (a new array) of packed complex ``alm`` of degree ``lmax``."""
        spec = self._rfft.spec
        spec[:, lmax + 1:] = 0.0
        syn = sht_kernels()[0]
        self._run(syn, lmax, alm, lmax, self._xh, self._mant, self._ex, self._A, self._C,
                  self.lgrid, self._nact, self._i_north, self._i_south, spec)
        return self._rfft.inverse().copy()

    def analysis(self, field: np.ndarray, lmax: int) -> np.ndarray:
        """Packed coefficients (a new array) of degree ``lmax`` of grid values ``field``."""
        spec = self._rfft.forward(field)
        alm = np.empty(alm_size(lmax), dtype=complex)
        ana = sht_kernels()[1]
        self._run(ana, lmax, spec, self.ring_weights, lmax, self._xh, self._mant, self._ex,
                  self._A, self._C, self.lgrid, self._nact, self._i_north, self._i_south,
                  alm)
        return alm
