"""Interacting particles on the unit sphere S^{d-1} of R^d: kernel sums and integrators.

Interaction sums (direct, O(m n d) for m queries and n keys, no approximation):

- ``exp_kernel_sums``: for queries ``q_i`` and keys ``y_j`` (the values are the keys),
  ``s_i = sum_j w_ij y_j`` and ``z_i = sum_j w_ij`` with
  ``w_ij = exp(beta <q_i, y_j> - m_i)``,
  ``m_i = max_j beta <q_i, y_j>`` (returned as ``shift``): so
  ``sum_j e^{beta <q_i, y_j>} y_j = e^{m_i} s_i``. Subtracting the row maximum keeps every
  weight in (0, 1] and ``z_i >= 1``, so nothing overflows at ``beta = 100`` or
  ``beta = 10^4``; a weight below ``e^-708`` is returned as ``~e^-708`` instead of a
  subnormal, a relative change below 1e-307 of ``z_i``.
  Two backends, chosen by ``choose_backend``:

  * ``"numba"``: blocks of 32 rows processed in parallel (prange over row blocks), keys in
    tiles of 512 shared by the rows of a block; per row and tile: the dot products, the
    tile maximum, ``exp``, the sums. The row maximum is kept online (flash-attention
    style): when a tile raises it, the row's partial sums are rescaled by
    ``exp(old - new)``. ``exp`` is a Cody-Waite reduction and a degree-13 Taylor
    polynomial whose ``2^k`` scaling is an integer add on the exponent bits, so the loop
    vectorises (max relative error 2.2e-16 against libm, measured).
  * ``"blas"``: blocks of rows, the Gram block ``(beta Q_b) Y^T`` by GEMM, ``exp(G - m)``
    in place by the same ``exp`` (one thread: numba's OpenMP workers spinning beside
    OpenBLAS's cost more than this pass), then ``z = G 1`` and ``s = G Y`` (GEMM again).

  Each row is summed by one thread in a fixed order (key tiles in ascending order; inside
  a tile the order the compiled code fixes), so a result does not depend on the number of
  numba threads: there are no reductions across threads. (BLAS results may depend on the
  OpenBLAS build and CPU, not on numba's threads.) The two backends differ from each
  other by rounding (~1e-16 relative, times the conditioning ``beta d eps`` of the
  weights).
  Measured on a 2-core AMD EPYC (AVX2, no AVX-512), pair interactions per second for
  n = 2000..20000 (m = n): d = 3: numba 2.8-3.8e8, BLAS 1.2-1.5e8; d = 512: numba
  6.1-6.7e6, BLAS 1.6-2.3e7; at n = 5000 the two meet near d = 32 (d = 16: 1.3e8 each,
  d = 48: 6.8e7 vs 8.0e7). ``choose_backend`` takes numba for ``d <= 32``, BLAS above.

- ``hardmax_means``: the beta -> infinity limit without self-attention: the mean of the
  keys ``y_j`` (``j != i``) with the largest ``<x_i, y_j>``, ties (within ``tolerance``)
  averaged. Same two backends.

Nothing is compiled at import: the numba kernels are built on first use by ``make_*``
factories (cached on disk by numba).

A compiled call is not interruptible: Ctrl-C's ``KeyboardInterrupt`` waits for it to
return. So the numba backend takes the queries ``call_rows`` rows at a time, each call at
most ``CALL_TERMS`` pair terms (``rows x n x (d + 1)``, about 0.1-0.4 s at the measured
rates below), and an optional ``check`` runs between calls (a ``DeferredSignals``'s
check: it raises the noted signal there). Without one, a sum of more than one call opens
its own ``DeferredSignals`` (``solvers.signals``): a Ctrl-C or SIGTERM during a call is
noted and raised after it (a particle run's velocity at large n stops between calls, not
inside a numba callback). A row's sum does not depend on the rows around it, so the
chunks change no bit (at n = 10^6 in R^2 the one call was ~10^3 s).
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numba
import numpy as np

from solvers.signals import DeferredSignals

ROWS = 32      # rows per block of the numba kernel (one thread each)
COLS = 512     # keys per tile
NUMBA_MAX_DIM = 32  # choose_backend: numba up to this dimension, BLAS above
BLAS_BLOCK_ELEMENTS = 1 << 21  # Gram block of the BLAS backend: rows x n <= this (16 MiB)
CALL_TERMS = 1 << 27  # rows x n x (d + 1) of one compiled call (1.3e8: <= ~0.4 s measured)

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_MAGIC = 6755399441055744.0  # 1.5 * 2^52: adding it rounds to an integer in the low bits
_EXP_FLOOR = -708.0  # e^-708 is still a normal double


def make_exp_kernels() -> tuple[Callable, Callable, Callable]:
    """Compile the exponential-kernel sums.

    Returns ``(tiled, rows_exp, hardmax)``:

    - ``tiled(q, yT, beta, s, z, shift)``: the numba backend; ``q`` (m, d) queries and
      ``yT`` (d, n) the keys transposed, both C-contiguous; fills ``s`` (m, d), ``z`` (m,),
      ``shift`` (m,).
    - ``rows_exp(g, z, shift)``: on a Gram block ``g`` (rows, n) of ``beta <q_i, y_j>``,
      replaces ``g`` by ``exp(g - max_j g)`` row by row, fills ``z`` with the row sums
      and ``shift`` with the maxima.
    - ``hardmax(x, yT, self_index, tolerance, out)``: means of the nearest keys; row ``i``
      skips key ``self_index[i]`` (-1: none).

    Vectorisation notes (measured: these decide a factor 3-5): the inner loops run over
    1-D slices (2-D indexing in an inner loop defeats LLVM's vectoriser); the dot
    products add three components per pass over the tile (fewer loads and stores, the
    same left-to-right order); the sums over keys are compiled with reassociation allowed
    (``fastmath={"reassoc"}``), which LLVM turns into a fixed set of vector partial sums:
    a fixed order for a given build, whatever the thread count.

    The helpers are reached by the kernels as module globals rather than closure cells:
    numba keys its disk cache on the pickled closure cells, which differ from process to
    process for dispatchers, so closures over them recompiled on every run (~10 s).
    """
    global _exp_shifted, _vmax, _vsum, _vdot, _dots, _tiled_block, _tiled_serial

    @numba.njit(error_model="numpy", boundscheck=False)
    def exp_shifted(buf, kbuf, length, shift):
        # buf[:length] <- exp(buf[:length] - shift) for arguments <= 0 (floored at -708).
        for t in range(length):
            v = max(buf[t] - shift, _EXP_FLOOR)
            kf = v * _LOG2E + _MAGIC
            k = kf - _MAGIC
            r = (v - k * _LN2_HI) - k * _LN2_LO
            p = 1.0 / 6227020800.0
            p = p * r + 1.0 / 479001600.0
            p = p * r + 1.0 / 39916800.0
            p = p * r + 1.0 / 3628800.0
            p = p * r + 1.0 / 362880.0
            p = p * r + 1.0 / 40320.0
            p = p * r + 1.0 / 5040.0
            p = p * r + 1.0 / 720.0
            p = p * r + 1.0 / 120.0
            p = p * r + 1.0 / 24.0
            p = p * r + 1.0 / 6.0
            p = p * r + 0.5
            p = p * r + 1.0
            buf[t] = p * r + 1.0
            kbuf[t] = kf
        bi = buf.view(np.int64)
        ki = kbuf.view(np.int64)
        for t in range(length):  # times 2^k: add k to the exponent field
            bi[t] += ki[t] << 52

    @numba.njit(error_model="numpy", boundscheck=False)
    def vmax(a, start):
        # max(start, max a): four running maxima (exact in any order), for the pipelines.
        m0 = m1 = m2 = m3 = start
        n4 = a.shape[0] - a.shape[0] % 4
        for t in range(0, n4, 4):
            m0 = max(m0, a[t])
            m1 = max(m1, a[t + 1])
            m2 = max(m2, a[t + 2])
            m3 = max(m3, a[t + 3])
        for t in range(n4, a.shape[0]):
            m0 = max(m0, a[t])
        return max(max(m0, m1), max(m2, m3))

    @numba.njit(fastmath={"reassoc"}, error_model="numpy", boundscheck=False)
    def vsum(a):
        s = 0.0
        for t in range(a.shape[0]):
            s += a[t]
        return s

    @numba.njit(fastmath={"reassoc"}, error_model="numpy", boundscheck=False)
    def vdot(a, b):
        s = 0.0
        for t in range(a.shape[0]):
            s += a[t] * b[t]
        return s

    @numba.njit(error_model="numpy", boundscheck=False)
    def dots(t, qi, yT, j0, c):
        # t[:c] = sum_k qi[k] yT[k, j0:j0+c], left to right in k, three k per pass.
        d = qi.shape[0]
        q0 = qi[0]
        y0 = yT[0, j0:j0 + c]
        for jj in range(c):
            t[jj] = q0 * y0[jj]
        k = 1
        while k + 3 <= d:
            q1, q2, q3 = qi[k], qi[k + 1], qi[k + 2]
            y1, y2, y3 = yT[k, j0:j0 + c], yT[k + 1, j0:j0 + c], yT[k + 2, j0:j0 + c]
            for jj in range(c):
                t[jj] = ((t[jj] + q1 * y1[jj]) + q2 * y2[jj]) + q3 * y3[jj]
            k += 3
        while k < d:
            qk = qi[k]
            yk = yT[k, j0:j0 + c]
            for jj in range(c):
                t[jj] += qk * yk[jj]
            k += 1

    _exp_shifted, _vmax, _vsum, _vdot, _dots = exp_shifted, vmax, vsum, vdot, dots

    @numba.njit(cache=True, error_model="numpy", boundscheck=False)
    def tiled_block(q, yT, beta, s, z, shift, b):
        # rows b ROWS .. (b + 1) ROWS - 1: what one thread of ``tiled`` does
        m, d = q.shape
        n = yT.shape[1]
        i0 = b * ROWS
        w = min(ROWS, m - i0)
        qb = np.empty((w, d))
        for r in range(w):
            for k in range(d):
                qb[r, k] = beta * q[i0 + r, k]
        t = np.empty(COLS)
        kbuf = np.empty(COLS)
        acc = np.zeros((w, d))
        zr = np.zeros(w)
        mx = np.full(w, -np.inf)
        for j0 in range(0, n, COLS):  # one key tile for all rows of the block
            c = min(COLS, n - j0)
            for r in range(w):
                tc = t[:c]
                _dots(t, qb[r], yT, j0, c)
                bm = _vmax(tc, mx[r])
                if bm > mx[r]:  # the row maximum rose: rescale the partial sums
                    sc = math.exp(mx[r] - bm)
                    zr[r] *= sc
                    for k in range(d):
                        acc[r, k] *= sc
                    mx[r] = bm
                _exp_shifted(t, kbuf, c, mx[r])
                zr[r] += _vsum(tc)
                for k in range(d):
                    acc[r, k] += _vdot(tc, yT[k, j0:j0 + c])
        for r in range(w):
            z[i0 + r] = zr[r]
            shift[i0 + r] = mx[r]
            for k in range(d):
                s[i0 + r, k] = acc[r, k]

    _tiled_block = tiled_block

    @numba.njit(parallel=True, cache=True, error_model="numpy", boundscheck=False)
    def tiled(q, yT, beta, s, z, shift):
        for b in numba.prange((q.shape[0] + ROWS - 1) // ROWS):
            _tiled_block(q, yT, beta, s, z, shift, b)

    @numba.njit(cache=True, error_model="numpy", boundscheck=False)
    def tiled_serial(q, yT, beta, s, z, shift):
        # ``tiled`` on the calling thread: its blocks in turn, each summed as there (the
        # same bits); for one block (m <= ROWS) it skips the thread pool's start, 10-15
        # us of a 20 us call at n = 32, d = 16 (exp_kernel_sums)
        for b in range((q.shape[0] + ROWS - 1) // ROWS):
            _tiled_block(q, yT, beta, s, z, shift, b)

    _tiled_serial = tiled_serial

    @numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
    def rows_exp(g, z, shift):
        # One thread: numba's OpenMP workers spinning next to OpenBLAS's cost more than
        # this pass (measured 14 ms per call at n = 16; 1 pass vs 2 GEMMs of 2d flops).
        rows, n = g.shape
        for i in range(rows):
            row = g[i]
            mx = _vmax(row, -np.inf)
            kbuf = np.empty(n)
            _exp_shifted(row, kbuf, n, mx)
            z[i] = _vsum(row)
            shift[i] = mx

    @numba.njit(parallel=True, cache=True, error_model="numpy", boundscheck=False)
    def hardmax(x, yT, self_index, tolerance, out):
        m, d = x.shape
        n = yT.shape[1]
        for i in numba.prange(m):
            t = np.empty(n)
            _dots(t, x[i], yT, 0, n)
            own = self_index[i]
            if own >= 0:
                t[own] = -np.inf
            cut = _vmax(t, -np.inf) - tolerance
            count = 0
            for k in range(d):
                out[i, k] = 0.0
            for j in range(n):
                if t[j] >= cut:
                    count += 1
                    for k in range(d):
                        out[i, k] += yT[k, j]
            for k in range(d):
                out[i, k] /= count

    return tiled, rows_exp, hardmax


_kernels: tuple | None = None
_exp_shifted = _vmax = _vsum = _vdot = _dots = None  # set by make_exp_kernels
_tiled_block = _tiled_serial = None  # set by make_exp_kernels


def exp_kernels() -> tuple[Callable, Callable, Callable]:
    """The compiled kernels (compiled on first use, cached on disk by numba)."""
    global _kernels
    if _kernels is None:
        _kernels = make_exp_kernels()
    return _kernels


def choose_backend(n: int, d: int) -> str:
    """The faster backend for ``n`` keys in dimension ``d`` (measured; see the module doc).

    A function of ``d`` alone, so that a run never changes backend (and rounding) midway.
    """
    return "numba" if d <= NUMBA_MAX_DIM else "blas"


def _check_backend(backend: str, n: int, d: int) -> str:
    if backend == "auto":
        return choose_backend(n, d)
    if backend not in ("numba", "blas"):
        raise ValueError(f"backend must be 'auto', 'numba' or 'blas', not {backend!r}")
    return backend


def exp_kernel_sums(queries: np.ndarray, keys: np.ndarray, beta: float,
                    backend: str = "auto", check: Callable[[], None] | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row-shifted sums of the kernel ``e^{beta <q, y>}`` (see the module docstring).

    Args:
        queries: (m, d) points ``q_i``.
        keys: (n, d) points ``y_j`` (also the values).
        beta: the inverse temperature (any finite real).
        backend: ``"auto"``, ``"numba"`` or ``"blas"``.
        check: called between compiled calls (``call_rows`` rows each); may raise.

    Returns:
        ``(s, z, shift)`` of shapes (m, d), (m,), (m,):
        ``sum_j e^{beta <q_i, y_j>} y_j = e^{shift_i} s_i`` and
        ``sum_j e^{beta <q_i, y_j>} = e^{shift_i} z_i``, with ``z_i >= 1``.
    """
    q = np.asarray(queries, dtype=np.float64)
    y = np.asarray(keys, dtype=np.float64)
    m, d = q.shape
    n = y.shape[0]
    tiled, rows_exp, _ = exp_kernels()
    backend = _check_backend(backend, n, d)
    z = np.empty(m)
    shift = np.empty(m)
    if backend == "numba":
        s = np.empty((m, d))
        q, yT = np.ascontiguousarray(q), np.ascontiguousarray(y.T)
        rows = call_rows(n, d)
        # one block of rows: on this thread (the same bits; the choice depends on m only)
        kernel = _tiled_serial if m <= ROWS else tiled
        _in_calls(lambda i0, i1: kernel(q[i0:i1], yT, float(beta), s[i0:i1], z[i0:i1],
                                        shift[i0:i1]), m, rows, check)
        return s, z, shift
    s = np.empty((m, d))
    y = np.ascontiguousarray(y)
    qb = float(beta) * q
    rows = max(1, min(m, BLAS_BLOCK_ELEMENTS // max(n, 1)))
    g = np.empty((rows, n))

    def block(i0: int, i1: int) -> None:
        gb = g[: i1 - i0]
        np.matmul(qb[i0:i1], y.T, out=gb)
        rows_exp(gb, z[i0:i1], shift[i0:i1])
        np.matmul(gb, y, out=s[i0:i1])

    _in_calls(block, m, rows, check)
    return s, z, shift


def _in_calls(call: Callable[[int, int], None], m: int, rows: int,
              check: Callable[[], None] | None) -> None:
    """``call(i0, i1)`` on the row chunks ``rows`` long of ``m`` rows, ``check`` between
    them: the caller's, else (more than one chunk) that of a ``DeferredSignals`` of its
    own (a signal during a compiled call raised after it; module docstring)."""
    if check is None and m > rows:
        with DeferredSignals() as signals:
            _in_calls(call, m, rows, signals.check)
        return
    for i0 in range(0, m, rows):
        i1 = min(m, i0 + rows)
        call(i0, i1)
        if check is not None and i1 < m:
            check()


def call_rows(n: int, d: int) -> int:
    """Query rows per compiled call: ``rows x n x (d + 1) <= CALL_TERMS``, a multiple of
    ``ROWS`` (at least one block)."""
    rows = CALL_TERMS // (max(n, 1) * (d + 1))
    return max(ROWS, rows - rows % ROWS)


def hardmax_means(x: np.ndarray, keys: np.ndarray | None = None, tolerance: float = 1e-12,
                  backend: str = "auto", check: Callable[[], None] | None = None
                  ) -> np.ndarray:
    """Mean of the keys maximising ``<x_i, y_j>``, ties within ``tolerance`` averaged.

    Args:
        x: (m, d) queries.
        keys: (n, d) keys; ``None``: the queries themselves, and query ``i`` then skips key
            ``i`` (no self-attention).
        tolerance: keys with ``<x_i, y_j> >= max - tolerance`` count as maximisers.
        backend: ``"auto"``, ``"numba"`` or ``"blas"``.
        check: called between compiled calls (``call_rows`` rows each); may raise.

    Returns:
        (m, d) the means.
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    own = keys is None
    y = x if own else np.ascontiguousarray(keys, dtype=np.float64)
    m, d = x.shape
    n = y.shape[0]
    backend = _check_backend(backend, n, d)
    if backend == "numba":
        out = np.empty((m, d))
        index = np.arange(m) if own else np.full(m, -1)
        yT, rows = np.ascontiguousarray(y.T), call_rows(n, d)
        _in_calls(lambda i0, i1: exp_kernels()[2](x[i0:i1], yT, index[i0:i1],
                                                  float(tolerance), out[i0:i1]),
                  m, rows, check)
        return out
    out = np.empty((m, d))

    def block(i0: int, i1: int) -> None:
        g = x[i0:i1] @ y.T
        if own:
            g[np.arange(i1 - i0), np.arange(i0, i1)] = -np.inf
        mask = g >= g.max(axis=1, keepdims=True) - tolerance
        out[i0:i1] = (mask @ y) / mask.sum(axis=1, keepdims=True)

    _in_calls(block, m, max(1, min(m, BLAS_BLOCK_ELEMENTS // max(n, 1))), check)
    return out


# ---------------------------------------------------------------------------------------
# Geometry of the sphere, row by row.

def normalize_rows(x: np.ndarray) -> np.ndarray:
    """``x_i / |x_i|`` for each row, along the last axis (``(n, d)`` tokens or a batch
    ``(B, n, d)``; a new array)."""
    return x / np.sqrt(np.einsum("...i,...i->...", x, x))[..., None]


def tangent_projection(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``P^perp_{x_i} y_i = y_i - <x_i, y_i> x_i`` for unit rows ``x_i``, along the last
    axis (a new array)."""
    return y - np.einsum("...i,...i->...", x, y)[..., None] * x


def sphere_exp(x: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The exponential map ``cos|u_i| x_i + sin|u_i| u_i/|u_i|``, renormalised, along the
    last axis.

    ``u`` must be tangent (``<x_i, u_i> = 0``); the final normalisation only removes
    round-off.
    """
    a = np.sqrt(np.einsum("...i,...i->...", u, u))
    sinc = np.sinc(a / np.pi)  # sin(a)/a, = 1 at a = 0
    return normalize_rows(np.cos(a)[..., None] * x + sinc[..., None] * u)
