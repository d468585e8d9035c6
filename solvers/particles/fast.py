"""Fast interaction sums of the kernel ``e^{beta <q, y>}`` on S^1 and S^2.

Same convention as ``solvers.particles.direct.exp_kernel_sums`` (the direct O(m n d) kernel):
``(s, z, shift)`` with ``sum_j e^{beta <q_i, y_j>} y_j = e^{shift_i} s_i`` and
``sum_j e^{beta <q_i, y_j>} = e^{shift_i} z_i``. The fast methods scale every row by the
kernel's maximum, ``shift_i = beta`` (multipliers times ``e^{-beta}``), and need
``beta >= 0``. They take the points as directions (``q/|q|``, ``y/|y|``); the direct
kernel takes the rows as they are (RK4 stage points off the sphere: the fast methods
evaluate the field at their directions, another extension of the same tangent field).

- ``fourier_kernel_sums`` (S^1, angles ``theta``): ``e^{beta cos phi} = sum_k I_k(beta)
  e^{ik phi}``. Moments ``M_k = sum_j e^{-ik theta_j}``, ``|k| <= K + 1``, by one type-1
  NUFFT (finufft, ``isign = -1``); then ``z_i = sum_{|k|<=K} I_k M_k e^{ik theta_i}`` and
  ``s_i^x + i s_i^y = sum_{|k|<=K} I_k M_{k-1} e^{ik theta_i}`` (the kernel times
  ``e^{i theta_j}``: ``e^{ik(theta_i - theta_j)} e^{i theta_j} = e^{ik theta_i}
  e^{-i(k-1) theta_j}``) by one type-2 NUFFT of two transforms.
  Order: the smallest ``K >= 0`` with ``2 sum_{k>K} I_k(beta) e^{-beta} <= accuracy/2``
  (the kernel's truncation error relative to its maximum ``e^beta``; ``|y_j| = 1`` makes
  it a bound for ``s`` too). ``K = 10, 17, 31, 67`` at ``beta = 1, 5, 20, 100`` for 1e-10;
  for large beta ``K ~ sqrt(2 beta log(1/accuracy))``. The issue's ``beta + 10 sqrt(beta)
  + 20`` gives far below its 1e-14 (tail <= 3e-43 for beta = 0.1..1e4; tested) and is
  2-5x larger than needed: a tail of 1e-14 needs ``K = 13, 21, 38, 79, 245`` at
  ``beta = 1, 5, 20, 100, 1000``.
- ``harmonic_kernel_sums`` (S^2): Funk-Hecke and the addition theorem,
  ``e^{beta <x, y>} = sum_l 4 pi i_l(beta) sum_m Y_lm(x) conj(Y_lm(y))``. Moments
  ``a_lm = sum_j conj(Y_lm(y_j))`` by one adjoint synthesis at the keys
  (``ducc0.sht.experimental.adjoint_synthesis_general``, ``loc`` = (colatitude,
  longitude)); at the queries ``z`` by a synthesis with ``k_l = 4 pi i_l e^{-beta}``, the
  radial part ``<q, s> = dZ/dbeta`` with ``k'_l = 4 pi i_l' e^{-beta}``, and the tangent
  part ``(1/beta) grad Z`` by a spin-1 synthesis (``mode="DERIV1"``: the gradient
  ``(d/dtheta, (1/sin theta) d/dphi)``, sign checked against the direct sum) with
  ``g_l = 4 pi i_l e^{-beta}/beta``; then ``s = g_theta e_theta + g_phi e_phi + <q, s> q``
  with ``e_theta = (cos th cos ph, cos th sin ph, -sin th)``, ``e_phi = (-sin ph, cos ph,
  0)``. Below ``beta = 1``, ``g_l = 4 pi (i_{l-1} - i_{l+1}) e^{-beta}/(2l+1)`` (no
  ``1/beta``; at beta = 0 only ``g_1 = 4 pi/3``). Transforming the four weights
  ``(1, y_x, y_y, y_z)`` instead (4 adjoint + 4 syntheses) measured 2.1x slower (n = 1e6,
  one thread: 0.93-0.98 s against 0.44-0.48 s).
  Order: the smallest ``L >= 1`` with ``sum_{l>L} (l(l+1)/2 + 2l + 1) i_{l-1}(beta)
  e^{-beta} <= accuracy/2``, a bound for the tangent part (``|grad P_l(<q, y>)| <=
  l(l+1)/2`` and ``i_l/beta <= i_{l-1}/(2l+1)``) plus the radial part (``i_l' <=
  i_{l-1}``), and so for ``z``. ``L = 12, 20, 35, 75`` at ``beta = 1, 5, 20, 100`` for
  1e-10. The issue's ``beta + 25`` holds (bound <= 1.2e-16 for beta = 0.1..1e4; tested);
  1e-13 needs ``L = 14, 23, 40, 84, 263`` at ``beta = 1, 5, 20, 100, 1000``.

Accuracy: every component of ``e^{shift} s_i`` and ``e^{shift} z_i`` is within
``accuracy * n * e^beta`` of the exact sum: half for the truncation (the bounds above,
rigorous), half for the transforms, run at tolerance ``accuracy/4``. Measured (n = 1e4,
uniform and two-cluster points, beta = 0..100, accuracy 1e-6..floor): total errors at
most 0.36 (S^1) and 0.26 (S^2) times ``accuracy n e^beta``. Floors: S^1 1e-13 (finufft's
double limit ~1e-14 on its tolerance), S^2 1e-12 (ducc0 asserts ``epsilon > 2e-13``;
at 2.5e-13 its errors reach 9e-14); and ``L <= 1000`` (``check_fast_accuracy`` says what
is reachable, ``max_fast_beta``: about beta 1.7e4 at 1e-10).

``interaction_sums(..., relative_rows=True)`` (SA divides ``s`` by ``z``): the fast error
relative to row ``i`` is at most ``a n e^beta / Z_i`` (``Z_i = e^{shift} z_i``, ``a`` the
accuracy run). The fast method runs at ``a = accuracy * u(beta) / 10``, ``u`` the mean of
``e^{beta(<x, y> - 1)}`` over uniform ``y`` (``I_0(beta) e^{-beta}`` on S^1, ``(1 -
e^{-2 beta})/(2 beta)`` on S^2; not below the floor; the order grows like
``log(1/a)``), so rows at the uniform density or denser pass with a margin 10; the rows
whose bound, with ``z_i`` lowered by its own error, still exceeds ``accuracy`` are
recomputed by the direct kernel (those rows against all keys; cost rows x n) and carry
the direct shift. Then ``s_i`` and ``z_i`` are within ``accuracy Z_i`` and ``s_i/z_i``
within ``2 accuracy``.

Determinism (measured, finufft 2.5.1, ducc0 0.42): with ``nthreads = 2``, finufft's
type-1 spreading gave 4-5 different results in 5 runs (n = 1e5, 1e6) and ducc0's adjoint
synthesis 2 in 5 (n = 1e4) (threads adding into the grid in the order they finish). The
interpolations (type 2, synthesis) repeat run to run but their rounding depends on
``nthreads`` (finufft: the automatic upsampling factor and the FFT batch size
``maxbatchsize = min(nthreads, n_trans)``; ducc0: even with ``sigma_min/max`` fixed).
Here every library call runs with ``nthreads = 1`` (finufft also with ``upsampfac = 2``,
the faster choice for these tolerances, and FFTW_ESTIMATE, its default), on chunks of the
points whose number is a function of n alone (``chunk_slices``: one below 131072 points,
up to 8); up to ``threads`` Python threads run the chunks (both libraries release the
GIL), and the chunk moments are added in chunk order. So the results are bit for bit the
same run to run and for any ``threads`` (tested with 1, 2, 3). It is also faster than the
libraries' threads on these 2 cores (free at the time): one S^2 transform at n = 1e6,
0.06 s in two single-threaded chunks against 0.09-0.10 s with ``nthreads = 2``.

Timings (``benchmarks/bench_particles.py``; 2-core AMD EPYC shared with other jobs, so
+-30%; one evaluation, m = n, beta = 5, accuracy 1e-10):

    n        S^1 fast   direct     S^2 fast   direct
    1e3      1.2 ms     1.9 ms     1.8 ms     3.3 ms
    1e4      3.0 ms     0.18 s     6.4 ms     0.30 s
    1e5      20 ms      20 s       40 ms      ~30 s
    1e6      0.12 s     ~2000 s    0.25 s     ~3000 s      (~: extrapolated as n^2)

With ``project=True`` (what the models call; machine free, 2026-11-22): n = 1e6,
S^1 0.088 s, S^2 0.17 s; n = 1e4: 2.7 ms, 5.2 ms. One thread at n = 1e6 (full sums):
S^1 0.21-0.27 s, S^2 0.38-0.43 s. Plain numpy: Gram blocks and ``exp`` 5-7x slower
than the direct kernel; on S^1 the same moments by dense ``exp(-1j k theta)`` blocks
2.4x (n = 1e3) to 32x (n = 1e6) slower than the NUFFTs.
Chunks: one below 131072 points (two chunks measured no faster there), then 2, 4, 8.

``choose_method`` (``"auto"``) takes the fast method from ``crossover_n(d, beta,
accuracy)`` keys on: a cost model of measured constants (below); at 1e-10 about 850 on
S^1 (1030 at beta = 1e4), 740-840 on S^2 up to beta = 5, rising with ``L^2`` (1600 at
beta = 100, 4600 at beta = 1000); a function of n, d, beta and accuracy only, so a run
never changes method.
"""
from __future__ import annotations

import functools
import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np
from scipy import special

from solvers.particles.direct import exp_kernel_sums, normalize_rows, tangent_projection

try:  # optional: the S^1 method
    import finufft
except ImportError:  # pragma: no cover - depends on the environment
    finufft = None
try:  # optional: the S^2 method
    import ducc0
except ImportError:  # pragma: no cover - depends on the environment
    ducc0 = None

METHODS = ("auto", "direct", "fourier", "harmonic")
FAST_METHOD = {2: "fourier", 3: "harmonic"}  # dimension -> its fast method
ACCURACY_FLOOR = {2: 1e-13, 3: 1e-12}
MAX_ORDER = {2: 100_000, 3: 1000}  # K resp. L beyond this: too expensive
TOOL_SAFETY = 4.0  # transform tolerance = accuracy / this (measured errors <= 0.8 tol)
TOOL_EPS_MIN = {2: 1e-14, 3: 2.5e-13}  # finufft's double limit; ducc0 asserts > 2e-13
RELATIVE_MARGIN = 10.0  # relative_rows: uniform-density rows pass with this margin
CHUNK_POINTS = 1 << 16  # points per chunk at least ...
MAX_CHUNKS = 8  # ... and at most this many chunks (a power of two)
# choose_method's cost model, seconds (2-core AMD EPYC; fast: one chunk, one thread, as
# below 2 * CHUNK_POINTS; direct: exp_kernel_sums, numba, 2 threads).
DIRECT_PAIRS_PER_S = {2: 5.0e8, 3: 3.5e8}  # n ~ 1e3 (5e8 in d = 3 from n = 5e3)
FAST_FIXED_S = {2: 1.2e-3, 3: 1.2e-3}
FAST_PER_ORDER_S = {2: 1.0e-6, 3: 0.0}  # the FFTs of 2K + 3 modes
FAST_PER_ORDER2_S = {2: 0.0, 3: 1.0e-6}  # ducc0's grid work: L = 237, 414, 762: 48, 167, 580 ms
FAST_PER_POINT_S = {2: 2.5e-7, 3: 4.8e-7}  # m = n: keys and queries

# ---------------------------------------------------------------------------------------
# Multipliers and truncation orders.

def spherical_ive(degree: np.ndarray, beta: float) -> np.ndarray:
    """``i_l(beta) e^{-beta}`` (modified spherical Bessel) for ``l = degree``; at beta = 0
    ``[l == 0]``."""
    ell = np.asarray(degree)
    if beta == 0:
        return (ell == 0).astype(float)
    return np.sqrt(np.pi / (2 * beta)) * special.ive(ell + 0.5, beta)


def sphere_multipliers(lmax: int, beta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(k_l, k'_l, g_l)`` for l = 0..lmax: ``4 pi e^{-beta}`` times ``i_l(beta)``,
    ``i_l'(beta)`` and ``i_l(beta)/beta`` (``g_0 = 0``; stable as beta -> 0)."""
    ell = np.arange(lmax + 1)
    e = spherical_ive(np.arange(lmax + 2), beta)
    below = np.concatenate([[0.0], e[:lmax]])  # i_{l-1}, unused at l = 0
    k = 4 * np.pi * e[: lmax + 1]
    dk = 4 * np.pi * (ell * below + (ell + 1) * e[1:]) / (2 * ell + 1)
    g = np.zeros(lmax + 1)
    if beta >= 1:
        g[1:] = k[1:] / beta
    else:  # i_l/beta = (i_{l-1} - i_{l+1})/(2l + 1): no 1/beta, no cancellation here
        g[1:] = 4 * np.pi * (below[1:] - e[2:]) / (2 * ell[1:] + 1)
    return k, dk, g


def _tails(d: int, beta: float) -> np.ndarray:
    """``tail[o]``: the truncation bound (relative to ``n e^beta``) at order ``o``.

    Orders up to ``min(beta, 60 sqrt(beta)) + 40 sqrt(beta) + 100``: beyond, the terms are
    below ``e^{-800}`` (``I_k(beta) e^{-beta} ~ e^{-k^2/(2 beta)}`` for ``k << beta``); but
    at most ``10 MAX_ORDER[d]`` (``_fast_order`` checks the last term then).
    """
    root = math.sqrt(beta)
    top = int(min(beta, 60 * root, 10 * MAX_ORDER[d]) + 40 * root + 100)
    top = min(top, 10 * MAX_ORDER[d])
    if d == 2:
        terms = 2 * special.ive(np.arange(top + 1), beta)  # the k and -k terms
    else:
        ell = np.arange(top + 1)
        terms = (ell * (ell + 1) / 2 + 2 * ell + 1) * spherical_ive(np.maximum(ell - 1, 0),
                                                                    beta)
        terms[0] = 0.0
    tail = np.cumsum(terms[::-1])[::-1]  # tail[o] = sum_{k >= o} terms: small ones first
    return np.append(tail[1:], 0.0)  # tail[o] = sum_{k > o}


def fast_order(d: int, beta: float, accuracy: float) -> int:
    """The truncation order of the fast method: ``K`` on S^1 (d = 2), ``L`` on S^2.

    The smallest order whose truncation bound (module docstring) is ``<= accuracy/2``
    (at least 0 on S^1, 1 on S^2).
    """
    _check_dimension(d)
    return _fast_order(d, float(beta), float(accuracy))


@functools.lru_cache(maxsize=256)
def _fast_order(d: int, beta: float, accuracy: float) -> int:
    tail = _tails(d, beta)
    order = max(int(np.argmax(tail <= accuracy / 2)), d - 2)
    if not np.isfinite(tail).all() or (tail.size == 10 * MAX_ORDER[d] + 1
                                       and tail[-2] - tail[-1] > accuracy * 1e-6):
        return 10 * MAX_ORDER[d] + 1  # the terms reach the search limit: beyond any cap
    return order


def max_fast_beta(d: int, accuracy: float) -> float:
    """The largest beta (to 1%) whose fast order stays within ``MAX_ORDER[d]``."""
    lo, hi = 1.0, 1.0
    while fast_order(d, hi, accuracy) <= MAX_ORDER[d]:
        lo, hi = hi, 2 * hi
    while hi - lo > 0.01 * lo:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if fast_order(d, mid, accuracy) <= MAX_ORDER[d] else (lo, mid)
    return lo


def _check_dimension(d: int) -> None:
    if d not in FAST_METHOD:
        raise ValueError(f"fast sums exist for d = 2 ('fourier') and d = 3 ('harmonic'), "
                         f"not d = {d}; use method 'direct'")


def check_fast_accuracy(d: int, beta: float, accuracy: float) -> None:
    """Raise ``ValueError`` (saying what is reachable) if the fast method of dimension
    ``d`` cannot deliver ``accuracy`` at ``beta``."""
    _check_dimension(d)
    name = FAST_METHOD[d]
    if not (math.isfinite(beta) and beta >= 0):
        raise ValueError(f"method {name!r} needs a finite beta >= 0, not {beta}; use "
                         "'direct'")
    if not (math.isfinite(accuracy) and ACCURACY_FLOOR[d] <= accuracy < 1):
        raise ValueError(f"method {name!r} reaches accuracies in [{ACCURACY_FLOOR[d]:g}, 1), "
                         f"not {accuracy!r}; use 'direct' for more")
    order = fast_order(d, beta, accuracy)
    if order > MAX_ORDER[d]:
        needed = f"> {order - 1}" if order > 10 * MAX_ORDER[d] else str(order)
        raise ValueError(f"method {name!r} at beta = {beta:g} and accuracy {accuracy:g} "
                         f"needs order {needed} > {MAX_ORDER[d]} (too expensive); it reaches "
                         f"beta <= {max_fast_beta(d, accuracy):.4g} at this accuracy; use "
                         "'direct'")


def _tool_eps(d: int, accuracy: float) -> float:
    return min(1e-2, max(accuracy / TOOL_SAFETY, TOOL_EPS_MIN[d]))


# ---------------------------------------------------------------------------------------
# Chunks and threads.

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


def _run(func: Callable, items: list, threads: int | None) -> list:
    """``[func(item) for item in items]``, on up to ``threads`` Python threads."""
    workers = min(len(items), default_threads() if threads is None else max(1, int(threads)))
    if workers <= 1:
        return [func(item) for item in items]
    if workers not in _pools:
        _pools[workers] = ThreadPoolExecutor(max_workers=workers,
                                             thread_name_prefix="fast_sums")
    return list(_pools[workers].map(func, items))


def _points(x: np.ndarray, d: int, name: str) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != d:
        raise ValueError(f"{name} must have shape (n, {d}), not {x.shape}")
    return x


def _query_jobs(q: np.ndarray, y: np.ndarray, key_chunks: list[slice], parts: list
                ) -> list[tuple[slice, np.ndarray | None]]:
    """Chunks of the queries with the keys' coordinates (``parts[i][1]``) when the
    queries are the keys, else ``None`` (computed by the job)."""
    if q is y or (q.shape == y.shape and np.shares_memory(q, y) and np.array_equal(q, y)):
        return [(sl, part[1]) for sl, part in zip(key_chunks, parts)]
    return [(sl, None) for sl in chunk_slices(q.shape[0])]


def _require(name: str, module) -> None:
    if module is None:
        raise ValueError(f"method {name!r} needs the package "
                         f"{'finufft' if name == 'fourier' else 'ducc0'}; use 'direct'")


# ---------------------------------------------------------------------------------------
# Per-point work in numba (no GIL: the chunks' threads run it in parallel).

def _angles_py(p: np.ndarray, out: np.ndarray) -> None:
    # out[i] = atan2(p[i, 1], p[i, 0]) (the angle on S^1).
    for i in range(p.shape[0]):
        out[i] = math.atan2(p[i, 1], p[i, 0])


def _sphere_loc_py(p: np.ndarray, loc: np.ndarray) -> None:
    # loc[i] = (colatitude, longitude in [0, 2 pi)) of p[i]; atan2 for both (no
    # cancellation at the poles).
    for i in range(p.shape[0]):
        x, y, z = p[i, 0], p[i, 1], p[i, 2]
        loc[i, 0] = math.atan2(math.sqrt(x * x + y * y), z)
        phi = math.atan2(y, x)
        loc[i, 1] = phi + 2 * math.pi if phi < 0 else phi


def _assemble_py(p: np.ndarray, loc: np.ndarray, radial: np.ndarray, grad: np.ndarray,
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


_compiled: dict[str, Callable] = {}


def _kernel(name: str) -> Callable:
    """The numba version of ``_<name>_py`` (compiled on first use, cached on disk; nogil:
    the chunks' Python threads run it in parallel)."""
    if name not in _compiled:
        import numba
        _compiled[name] = numba.njit(cache=True, nogil=True, error_model="numpy",
                                     boundscheck=False)(globals()[f"_{name}_py"])
    return _compiled[name]


def _angles(p: np.ndarray) -> np.ndarray:
    out = np.empty(p.shape[0])
    _kernel("angles")(p, out)
    return out


def _sphere_loc(p: np.ndarray) -> np.ndarray:
    loc = np.empty((p.shape[0], 2))
    _kernel("sphere_loc")(p, loc)
    return loc


# ---------------------------------------------------------------------------------------
# S^1: Fourier moments by NUFFT.

_FINUFFT_OPTIONS = {"nthreads": 1, "upsampfac": 2.0}  # maxbatchsize: 1 (= nthreads)
# Sorting the points before spreading pays for fine grids that leave the cache; the grids
# here have 2 (2K + 3) points: up to this K, no sorting (measured at n = 1e6, K = 17:
# type 1 0.073 -> 0.047 s, type 2 0.152 -> 0.132 s, one thread).
UNSORTED_MAX_ORDER = 2000


def fourier_kernel_sums(queries: np.ndarray, keys: np.ndarray, beta: float,
                        accuracy: float = 1e-12, threads: int | None = None,
                        project: bool = False
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kernel sums on S^1 by Fourier moments (module docstring).

    Args:
        queries: (m, 2) points (used as their angles).
        keys: (n, 2) points (used as their angles, i.e. as unit vectors).
        beta: inverse temperature, >= 0.
        accuracy: every component of ``e^{shift} s`` and ``e^{shift} z`` is within
            ``accuracy * n * e^beta`` of the exact sum.
        threads: Python threads running the chunks (default: all cores); the result does
            not depend on it.
        project: return the tangent part ``P^perp_q s`` instead of ``s``: one type-2
            transform instead of two (``z + i T`` packed, both real with Hermitian
            coefficients; ``T = <s, e_theta> = Z'/beta`` has coefficients
            ``(I_{k+1} - I_{k-1}) M_k/(2i)``, taken to order K + 1 so that its tail is
            bounded by the same Bessel tail).

    Returns:
        ``(s, z, shift)`` of shapes (m, 2), (m,), (m,), ``shift = beta``.
    """
    _require("fourier", finufft)
    q, y = _points(queries, 2, "queries"), _points(keys, 2, "keys")
    check_fast_accuracy(2, beta, accuracy)
    m, n = q.shape[0], y.shape[0]
    s, z, shift = np.zeros((m, 2)), np.zeros(m), np.full(m, float(beta))
    if m == 0 or n == 0:
        return s, z, shift
    order = fast_order(2, beta, accuracy)
    eps = _tool_eps(2, accuracy)

    key_chunks = chunk_slices(n)
    options = {**_FINUFFT_OPTIONS, "spread_sort": 0 if order <= UNSORTED_MAX_ORDER else 2}

    def moments(sl: slice) -> tuple[np.ndarray, np.ndarray]:
        th = _angles(y[sl])
        ones = np.ones(th.size, dtype=complex)
        return finufft.nufft1d1(th, ones, 2 * order + 3, eps=eps, isign=-1,
                                **options), th

    parts = _run(moments, key_chunks, threads)
    mom = parts[0][0]
    for part, _ in parts[1:]:  # chunk order: deterministic
        mom = mom + part
    if project:
        ik = special.ive(np.arange(-order - 2, order + 3), float(beta))  # I_k, |k| <= K+2
        coef = (mom * (ik[1:-1] + 0.5 * (ik[2:] - ik[:-2])))[None]  # k = -(K+1)..K+1
    else:
        ik = special.ive(np.arange(-order, order + 1), float(beta))
        coef = np.empty((2, 2 * order + 1), dtype=complex)
        coef[0] = ik * mom[1:-1]  # I_k M_k, k = -K..K
        coef[1] = ik * mom[:-2]  # I_k M_{k-1}

    def evaluate(job: tuple[slice, np.ndarray | None]) -> None:
        sl, th = job
        if th is None:
            th = _angles(q[sl])
        out = finufft.nufft1d2(th, coef, eps=eps, isign=1, **options)
        z[sl] = out[0].real
        if project:  # T (-sin th, cos th), the direction from the point itself
            p = q[sl]
            tangent = out[0].imag / np.sqrt(np.einsum("ij,ij->i", p, p))
            s[sl, 0] = -p[:, 1] * tangent
            s[sl, 1] = p[:, 0] * tangent
        else:
            s[sl, 0] = out[1].real
            s[sl, 1] = out[1].imag

    _run(evaluate, _query_jobs(q, y, key_chunks, parts), threads)
    return s, z, shift


# ---------------------------------------------------------------------------------------
# S^2: spherical-harmonic moments by ducc0's transforms at arbitrary points.

@functools.lru_cache(maxsize=16)
def _alm_degrees(lmax: int) -> np.ndarray:
    """The degree l of each packed coefficient (healpy order: m outer, l inner)."""
    return np.concatenate([np.arange(m, lmax + 1) for m in range(lmax + 1)])


def harmonic_kernel_sums(queries: np.ndarray, keys: np.ndarray, beta: float,
                         accuracy: float = 1e-12, threads: int | None = None,
                         project: bool = False
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kernel sums on S^2 by spherical-harmonic moments (module docstring).

    Args:
        queries: (m, 3) points (used as their directions).
        keys: (n, 3) points (used as their directions).
        beta: inverse temperature, >= 0.
        accuracy: every component of ``e^{shift} s`` and ``e^{shift} z`` is within
            ``accuracy * n * e^beta`` of the exact sum.
        threads: Python threads running the chunks (default: all cores); the result does
            not depend on it.
        project: return the tangent part ``P^perp_q s`` instead of ``s`` (no radial
            synthesis: two syntheses instead of three).

    Returns:
        ``(s, z, shift)`` of shapes (m, 3), (m,), (m,), ``shift = beta``.
    """
    _require("harmonic", ducc0)
    q, y = _points(queries, 3, "queries"), _points(keys, 3, "keys")
    check_fast_accuracy(3, beta, accuracy)
    m, n = q.shape[0], y.shape[0]
    s, z, shift = np.zeros((m, 3)), np.zeros(m), np.full(m, float(beta))
    if m == 0 or n == 0:
        return s, z, shift
    lmax = fast_order(3, beta, accuracy)
    eps = _tool_eps(3, accuracy)
    sht = ducc0.sht.experimental
    key_chunks = chunk_slices(n)

    def moments(sl: slice) -> tuple[np.ndarray, np.ndarray]:
        loc = _sphere_loc(y[sl])
        alm = sht.adjoint_synthesis_general(map=np.ones((1, loc.shape[0])), spin=0,
                                            lmax=lmax, loc=loc, epsilon=eps, nthreads=1)
        return alm[0], loc

    parts = _run(moments, key_chunks, threads)
    alm = parts[0][0]
    for part, _ in parts[1:]:  # chunk order: deterministic
        alm = alm + part
    degree = _alm_degrees(lmax)
    k, dk, g = sphere_multipliers(lmax, float(beta))
    a_z, a_r, a_g = ((alm * f[degree])[None] for f in (k, dk, g))

    def evaluate(job: tuple[slice, np.ndarray | None]) -> None:
        sl, loc = job
        p = q[sl]
        if loc is None:
            loc = _sphere_loc(p)
        opts = {"lmax": lmax, "loc": loc, "epsilon": eps, "nthreads": 1}
        z[sl] = sht.synthesis_general(alm=a_z, spin=0, **opts)[0]
        radial = (np.zeros(p.shape[0]) if project else
                  sht.synthesis_general(alm=a_r, spin=0, **opts)[0])
        grad = sht.synthesis_general(alm=a_g, spin=1, mode="DERIV1", **opts)
        _kernel("assemble")(p, loc, radial, grad, s[sl])

    _run(evaluate, _query_jobs(q, y, key_chunks, parts), threads)
    return s, z, shift


# ---------------------------------------------------------------------------------------
# Choosing and dispatching.

def crossover_n(d: int, beta: float, accuracy: float) -> int:
    """Keys from which ``"auto"`` takes the fast method: where the measured cost model
    ``fast(n) = fixed + per_order * K (S^1) or per_order2 * L^2 (S^2) + per_point * n``
    falls below
    ``direct(n) = n^2 / pairs_per_s`` (m = n)."""
    order = fast_order(d, beta, accuracy)
    fixed = FAST_FIXED_S[d] + FAST_PER_ORDER_S[d] * order + FAST_PER_ORDER2_S[d] * order ** 2
    a, b, c = 1.0 / DIRECT_PAIRS_PER_S[d], -FAST_PER_POINT_S[d], -fixed
    return int(math.ceil((-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)))


def choose_method(n: int, d: int, beta: float, accuracy: float) -> str:
    """``"auto"``: the fast method of ``d`` when available, able to reach ``accuracy`` at
    ``beta`` and ``n >= crossover_n``; else ``"direct"``. Depends on n, d, beta and
    accuracy only."""
    fast = FAST_METHOD.get(d)
    if fast is None or (finufft if d == 2 else ducc0) is None:
        return "direct"
    try:
        check_fast_accuracy(d, beta, accuracy)
    except ValueError:
        return "direct"
    return fast if n >= crossover_n(d, beta, accuracy) else "direct"


def resolve_method(method: str, n: int, d: int, beta: float, accuracy: float) -> str:
    """The method ``interaction_sums`` runs: ``"auto"`` resolved by ``choose_method``; a
    fast method checked against ``d``, its package and ``accuracy`` (``ValueError``)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid: "
                         + ", ".join(repr(v) for v in METHODS))
    if method == "auto":
        return choose_method(n, d, beta, accuracy)
    if method == "direct":
        return method
    if FAST_METHOD.get(d) != method:
        valid = ["auto", "direct"] + ([FAST_METHOD[d]] if d in FAST_METHOD else [])
        raise ValueError(f"method {method!r} is for d = {2 if method == 'fourier' else 3}; "
                         f"for d = {d} use one of " + ", ".join(repr(v) for v in valid))
    _require(method, finufft if d == 2 else ducc0)
    check_fast_accuracy(d, beta, accuracy)
    return method


def uniform_kernel_mean(d: int, beta: float) -> float:
    """``e^{-beta}`` times the mean of ``e^{beta <x, y>}`` over uniform ``y`` on S^{d-1}."""
    if d == 2:
        return float(special.ive(0, beta))
    return 1.0 if beta == 0 else float(-np.expm1(-2 * beta) / (2 * beta))


def interaction_sums(queries: np.ndarray, keys: np.ndarray, beta: float,
                     method: str = "auto", accuracy: float = 1e-10,
                     threads: int | None = None, backend: str = "auto",
                     relative_rows: bool = False, project: bool = False
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(s, z, shift)`` of the kernel ``e^{beta <q, y>}`` by the chosen method.

    Args:
        queries: (m, d) points.
        keys: (n, d) points.
        beta: inverse temperature.
        method: one of ``METHODS``: ``"direct"`` (``solvers.particles.direct.exp_kernel_sums``),
            ``"fourier"`` (d = 2), ``"harmonic"`` (d = 3) or ``"auto"`` (``choose_method``).
        accuracy: of the fast methods (module docstring); unused by ``"direct"``.
        threads: threads of the fast methods (the result does not depend on it).
        backend: of the direct kernel: ``"auto"``, ``"numba"`` or ``"blas"``.
        relative_rows: make the fast error of each row at most ``accuracy`` relative to
            that row's sum (``e^{shift} z_i``) by recomputing the rows that need it
            directly (module docstring); for ``s/z``.
        project: return ``P^perp_q s = s - <q, s> q`` (the tangent part, what the
            velocities need) instead of ``s``; the fast methods then skip the radial part.

    Returns:
        ``(s, z, shift)`` as ``exp_kernel_sums``; the fast methods take the points as
        directions and return ``shift = beta`` except on recomputed rows. ``beta = 0``:
        the exact sums ``(sum_j y_j, n, 0)`` in O(n d) whatever the method.
    """
    q, y = np.asarray(queries, dtype=np.float64), np.asarray(keys, dtype=np.float64)
    if q.ndim != 2 or y.ndim != 2 or q.shape[1] != y.shape[1]:
        raise ValueError(f"queries (m, d) and keys (n, d) needed, not {q.shape}, {y.shape}")
    if queries is keys:
        y = q
    n, d = y.shape
    resolved = resolve_method(method, n, d, float(beta), accuracy)
    if beta == 0:
        # e^0 = 1: every row's sums are the column sums of the keys, O(n d), exact for
        # every method (the noisy Kuramoto model).
        m = q.shape[0]
        s = np.broadcast_to(y.sum(axis=0), (m, d)).copy()
        return (tangent_projection(q, s) if project else s), np.full(m, float(n)), \
            np.zeros(m)
    if resolved == "direct":
        s, z, shift = exp_kernel_sums(q, y, beta, backend)
        return (tangent_projection(q, s) if project else s), z, shift
    fast = fourier_kernel_sums if resolved == "fourier" else harmonic_kernel_sums
    if not relative_rows:
        return fast(q, y, beta, accuracy, threads, project)
    inner = max(ACCURACY_FLOOR[d], accuracy * min(1.0, uniform_kernel_mean(d, beta))
                / RELATIVE_MARGIN)
    try:
        check_fast_accuracy(d, beta, inner)
    except ValueError:
        inner = accuracy
    s, z, shift = fast(q, y, beta, inner, threads, project)
    err = inner * n  # the bound on |z_i - exact| (units of e^beta)
    low = z - err
    redo = np.flatnonzero(~(low > 0) | (err > accuracy * np.where(low > 0, low, 1.0)))
    if redo.size:
        qd = normalize_rows(q[redo])
        sd, zd, hd = exp_kernel_sums(qd, normalize_rows(y), beta, backend)
        s[redo], z[redo], shift[redo] = (tangent_projection(qd, sd) if project else sd), zd, hd
    return s, z, shift
