"""Chunks of points, the threads that run them, and the per-point work of the fast sums.

Determinism (measured, finufft 2.5.1, ducc0 0.42): with ``nthreads = 2``, finufft's
type-1 spreading gave 4-5 different results in 5 runs (n = 1e5, 1e6) and ducc0's adjoint
synthesis 2 in 5 (n = 1e4) (threads adding into the grid in the order they finish). The
interpolations (type 2, synthesis) repeat run to run but their rounding depends on
``nthreads`` (finufft: the automatic upsampling factor and the FFT batch size
``maxbatchsize = min(nthreads, n_trans)``; ducc0: even with ``sigma_min/max`` fixed).
So every library call runs with ``nthreads = 1`` (finufft also with ``upsampfac = 2``,
the faster choice for these tolerances, and FFTW_ESTIMATE, its default), on chunks of the
points whose number is a function of n alone (``chunk_slices``: one below 131072 points,
up to 8); up to ``threads`` Python threads run the chunks (both libraries release the
GIL), and the chunk moments are added in chunk order. The results are bit for bit the
same run to run and for any ``threads`` (tested with 1, 2, 3). It is also faster than the
libraries' threads on these 2 cores (free at the time): one S^2 transform at n = 1e6,
0.06 s in two single-threaded chunks against 0.09-0.10 s with ``nthreads = 2``.
Chunks: one below 131072 points (two chunks measured no faster there), then 2, 4, 8.

The per-point work (angles, sphere coordinates, assembling the S^2 vectors) is compiled
by numba (``make_point_kernels``, on first use, cached on disk; ``nogil``: the chunks'
Python threads run it in parallel).
"""
from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from solvers.particles.multipliers import check_multipliers

CHUNK_POINTS = 1 << 16  # points per chunk at least ...
MAX_CHUNKS = 8  # ... and at most this many chunks (a power of two)


def chunk_slices(n: int) -> list[slice]:
    """Fixed chunks of ``n`` points (their number, a power of two <= MAX_CHUNKS, depends
    on n only: the results do not depend on the thread count)."""
    count = 1
    while count < MAX_CHUNKS and 2 * count * CHUNK_POINTS <= n:
        count *= 2
    bounds = [i * n // count for i in range(count + 1)]
    return [slice(bounds[i], bounds[i + 1]) for i in range(count)]


_pools: dict[int, ThreadPoolExecutor] = {}


def default_threads() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def run_chunks(func: Callable, items: list, threads: int | None) -> list:
    """``[func(item) for item in items]``, on up to ``threads`` Python threads."""
    workers = min(len(items), default_threads() if threads is None else max(1, int(threads)))
    if workers <= 1:
        return [func(item) for item in items]
    if workers not in _pools:
        _pools[workers] = ThreadPoolExecutor(max_workers=workers,
                                             thread_name_prefix="fast_sums")
    return list(_pools[workers].map(func, items))


def points(x: np.ndarray, d: int, name: str) -> np.ndarray:
    """``x`` as a C-contiguous float64 ``(n, d)`` array, else ``ValueError``."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != d:
        raise ValueError(f"{name} must have shape (n, {d}), not {x.shape}")
    return x


def prepare(queries: np.ndarray, keys: np.ndarray, d: int, multipliers
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What every fast sum in dimension ``d`` starts from: the checked points ``q``, ``y``
    and the outputs ``s`` (m, d), ``z`` (m,) at zero, ``shift`` = beta (m,)."""
    q, y = points(queries, d, "queries"), points(keys, d, "keys")
    beta = multipliers.beta
    check_multipliers(multipliers, d, beta)
    m = q.shape[0]
    return q, y, np.zeros((m, d)), np.zeros(m), np.full(m, float(beta))


def moments_in_order(func: Callable, key_chunks: list[slice], threads: int | None
                     ) -> tuple[np.ndarray, list]:
    """``func(chunk) -> (moments, extra)`` on every key chunk, the moments summed in chunk
    order (so the result does not depend on the threads); returns the sum and the parts."""
    parts = run_chunks(func, key_chunks, threads)
    total = parts[0][0]
    for part, _ in parts[1:]:
        total = total + part
    return total, parts


def query_jobs(q: np.ndarray, y: np.ndarray, key_chunks: list[slice], parts: list
               ) -> list[tuple[slice, np.ndarray | None]]:
    """Chunks of the queries with the keys' coordinates (``parts[i][1]``) when the
    queries are the keys, else ``None`` (computed by the job)."""
    if q is y or (q.shape == y.shape and np.shares_memory(q, y) and np.array_equal(q, y)):
        return [(sl, part[1]) for sl, part in zip(key_chunks, parts)]
    return [(sl, None) for sl in chunk_slices(q.shape[0])]


@functools.cache
def make_point_kernels() -> tuple[Callable, Callable, Callable]:
    """The compiled per-point kernels ``(angles, sphere_loc, assemble)`` (module
    docstring): ``angles(p, out)``, ``sphere_loc(p, loc)``, ``assemble(p, loc, radial,
    grad, s)``."""
    import numba

    jit = numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)

    @jit
    def angles(p: np.ndarray, out: np.ndarray) -> None:
        # out[i] = atan2(p[i, 1], p[i, 0]) (the angle on S^1).
        for i in range(p.shape[0]):
            out[i] = math.atan2(p[i, 1], p[i, 0])

    @jit
    def sphere_loc(p: np.ndarray, loc: np.ndarray) -> None:
        # loc[i] = (colatitude, longitude in [0, 2 pi)) of p[i]; atan2 for both (no
        # cancellation at the poles).
        for i in range(p.shape[0]):
            x, y, z = p[i, 0], p[i, 1], p[i, 2]
            loc[i, 0] = math.atan2(math.sqrt(x * x + y * y), z)
            phi = math.atan2(y, x)
            loc[i, 1] = phi + 2 * math.pi if phi < 0 else phi

    @jit
    def assemble(p: np.ndarray, loc: np.ndarray, radial: np.ndarray, grad: np.ndarray,
                 s: np.ndarray) -> None:
        # s[i] = g_theta e_theta + g_phi e_phi + radial q_hat at the direction of p[i].
        for i in range(p.shape[0]):
            x, y, z = p[i, 0], p[i, 1], p[i, 2]
            rho = math.sqrt(x * x + y * y)
            r = math.sqrt(rho * rho + z * z)
            if rho > 0:
                cp, sp = x / rho, y / rho
            else:  # a pole: the longitude ducc0 was given
                cp, sp = math.cos(loc[i, 1]), math.sin(loc[i, 1])
            ct, st = z / r, rho / r
            gt, gp, rd = grad[0, i], grad[1, i], radial[i]
            a = gt * ct + rd * st
            s[i, 0] = a * cp - gp * sp
            s[i, 1] = a * sp + gp * cp
            s[i, 2] = rd * ct - gt * st

    return angles, sphere_loc, assemble


def angles(p: np.ndarray) -> np.ndarray:
    """The angles ``atan2(p_y, p_x)`` of the rows of ``p``."""
    out = np.empty(p.shape[0])
    make_point_kernels()[0](p, out)
    return out


def sphere_loc(p: np.ndarray) -> np.ndarray:
    """``(colatitude, longitude)`` of the rows of ``p`` (ducc0's ``loc``)."""
    loc = np.empty((p.shape[0], 2))
    make_point_kernels()[1](p, loc)
    return loc
