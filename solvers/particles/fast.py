"""Fast interaction sums of the kernel ``e^{beta <q, y>}`` on S^1 and S^2: dispatch.

Same convention as ``solvers.particles.direct.exp_kernel_sums`` (the direct O(m n d) kernel):
``(s, z, shift)`` with ``sum_j e^{beta <q_i, y_j>} y_j = e^{shift_i} s_i`` and
``sum_j e^{beta <q_i, y_j>} = e^{shift_i} z_i``. The fast methods scale every row by the
kernel's maximum, ``shift_i = beta`` (multipliers times ``e^{-beta}``), and need
``beta >= 0``. They take the points as directions (``q/|q|``, ``y/|y|``); the direct
kernel takes the rows as they are (RK4 stage points off the sphere: the fast methods
evaluate the field at their directions, another extension of the same tangent field).

- ``"fourier"`` (S^1): ``solvers.particles.fourier`` (NUFFTs of Fourier moments);
- ``"harmonic"`` (S^2): ``solvers.particles.harmonic`` (spherical-harmonic moments);
- their kernel multipliers and truncation orders (Bessel functions of beta) are the
  caller's: ``FastMultipliers`` (``solvers.particles.multipliers``), made by
  ``meanfield.model.kernels.fast_multipliers``, which also states the truncation bounds.

Accuracy: every component of ``e^{shift} s_i`` and ``e^{shift} z_i`` is within
``accuracy * n * e^beta`` of the exact sum: half for the truncation (rigorous bounds),
half for the transforms, run at tolerance ``accuracy/4``. Measured (n = 1e4, uniform and
two-cluster points, beta = 0..100, accuracy 1e-6..floor): total errors at most 0.36
(S^1) and 0.26 (S^2) times ``accuracy n e^beta``. Floors: S^1 1e-13 (finufft's double
limit ~1e-14 on its tolerance), S^2 1e-12 (ducc0 asserts ``epsilon > 2e-13``; at 2.5e-13
its errors reach 9e-14); and ``L <= 1000``.

``interaction_sums(..., relative_rows=True)`` (SA divides ``s`` by ``z``): the fast error
relative to row ``i`` is at most ``a n e^beta / Z_i`` (``Z_i = e^{shift} z_i``, ``a`` the
accuracy the multipliers were made for, below the rows' target ``row_accuracy``; see
``meanfield.model.kernels.fast_multipliers``). The rows whose bound, with ``z_i`` lowered
by its own error, still exceeds ``row_accuracy`` are recomputed (``relative_sums``) and
carry their own shift: on S^1 by Chebyshev interpolation on arcs
(``solvers.particles.arcs``: O(n p + rows B p), B arcs of p nodes set by beta and the
accuracy), on S^2 (and where that is not the cheaper) by the direct kernel (rows x n).
Then ``s_i`` and ``z_i`` are within ``row_accuracy Z_i`` and ``s_i/z_i`` within ``2
row_accuracy``. The arcs keep a clustering run O(n K) per step on S^1: tokens left
between the clusters, whose rows the Fourier sums cannot resolve, cost the direct kernel
rows x n before (see ``benchmarks/bench_clustering.py``).

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
than the direct kernel.

``choose_method`` (``"auto"``) takes the fast method from ``crossover_n(d, order)`` keys
on: a cost model of measured constants (below); at 1e-10 about 850 on S^1 (1030 at beta =
1e4), 740-840 on S^2 up to beta = 5, rising with ``L^2`` (1600 at beta = 100, 4600 at
beta = 1000); a function of n, d and the order only, so a run never changes method.
"""
from __future__ import annotations

import math

import numpy as np

from solvers.particles import arcs, fourier, harmonic
from solvers.particles.direct import exp_kernel_sums, normalize_rows, tangent_projection
from solvers.particles.multipliers import (
    FAST_METHOD,
    METHODS,
    FastMultipliers,
    check_multipliers,
)

# choose_method's cost model, seconds (2-core AMD EPYC; fast: one chunk, one thread, as
# below 2 * CHUNK_POINTS; direct: exp_kernel_sums, numba, 2 threads).
DIRECT_PAIRS_PER_S = {2: 5.0e8, 3: 3.5e8}  # n ~ 1e3 (5e8 in d = 3 from n = 5e3)
FAST_FIXED_S = {2: 1.2e-3, 3: 1.2e-3}
FAST_PER_ORDER_S = {2: 1.0e-6, 3: 0.0}  # the FFTs of 2K + 3 modes
FAST_PER_ORDER2_S = {2: 0.0, 3: 1.0e-6}  # ducc0's grid work: L = 237, 414, 762: 48, 167, 580 ms
FAST_PER_POINT_S = {2: 2.5e-7, 3: 4.8e-7}  # m = n: keys and queries
_REQUIRE = {"fourier": fourier.require, "harmonic": harmonic.require}


def available(method: str) -> bool:
    """Whether the package of the fast ``method`` is installed."""
    return (fourier.finufft if method == "fourier" else harmonic.ducc0) is not None


def crossover_n(d: int, order: int) -> int:
    """Keys from which ``"auto"`` takes the fast method of order ``order``: where the
    measured cost model ``fast(n) = fixed + per_order * K (S^1) or per_order2 * L^2 (S^2)
    + per_point * n`` falls below ``direct(n) = n^2 / pairs_per_s`` (m = n)."""
    fixed = FAST_FIXED_S[d] + FAST_PER_ORDER_S[d] * order + FAST_PER_ORDER2_S[d] * order ** 2
    a, b, c = 1.0 / DIRECT_PAIRS_PER_S[d], -FAST_PER_POINT_S[d], -fixed
    return int(math.ceil((-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)))


def choose_method(n: int, d: int, order: int | None) -> str:
    """``"auto"``: the fast method of ``d`` when its package is there, its ``order``
    affordable (None: it cannot reach the accuracy) and ``n >= crossover_n``; else
    ``"direct"``. Depends on n, d and the order only."""
    fast = FAST_METHOD.get(d)
    if fast is None or not available(fast) or order is None:
        return "direct"
    return fast if n >= crossover_n(d, order) else "direct"


def resolve_method(method: str, n: int, d: int, order: int | None = None) -> str:
    """The method ``interaction_sums`` runs: ``"auto"`` resolved by ``choose_method``
    (with the order of the multipliers at hand); a fast method checked against ``d`` and
    its package (``ValueError``)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid: "
                         + ", ".join(repr(v) for v in METHODS))
    if method == "auto":
        return choose_method(n, d, order)
    if method == "direct":
        return method
    if FAST_METHOD.get(d) != method:
        valid = ["auto", "direct"] + ([FAST_METHOD[d]] if d in FAST_METHOD else [])
        raise ValueError(f"method {method!r} is for d = {2 if method == 'fourier' else 3}; "
                         f"for d = {d} use one of " + ", ".join(repr(v) for v in valid))
    _REQUIRE[method]()
    return method


def interaction_sums(queries: np.ndarray, keys: np.ndarray, beta: float,
                     method: str = "auto", multipliers: FastMultipliers | None = None,
                     threads: int | None = None, backend: str = "auto",
                     relative_rows: bool = False, project: bool = False
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(s, z, shift)`` of the kernel ``e^{beta <q, y>}`` by the chosen method.

    Args:
        queries: (m, d) points.
        keys: (n, d) points.
        beta: inverse temperature.
        method: one of ``METHODS``: ``"direct"`` (``exp_kernel_sums``), ``"fourier"``
            (d = 2), ``"harmonic"`` (d = 3) or ``"auto"`` (``choose_method`` with the
            order of ``multipliers``; without them, ``"direct"``).
        multipliers: the kernel's, for the fast methods (``FastMultipliers`` of this d
            and beta; with ``relative_rows`` made for it); unused by ``"direct"``.
        threads: threads of the fast methods (the result does not depend on it).
        backend: of the direct kernel: ``"auto"``, ``"numba"`` or ``"blas"``.
        relative_rows: make the fast error of each row at most ``row_accuracy`` relative
            to that row's sum (``e^{shift} z_i``) by recomputing the rows that need it
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
    resolved = resolve_method(method, n, d, None if multipliers is None else multipliers.order)
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
    check_multipliers(multipliers, d, float(beta))
    fast = (fourier.fourier_kernel_sums if resolved == "fourier"
            else harmonic.harmonic_kernel_sums)
    if not relative_rows:
        return fast(q, y, multipliers, threads, project)
    if multipliers.row_accuracy is None:
        raise ValueError("relative_rows needs multipliers made for it (row_accuracy)")
    s, z, shift = fast(q, y, multipliers, threads, project)
    err = multipliers.accuracy * n  # the bound on |z_i - exact| (units of e^beta)
    low = z - err
    redo = np.flatnonzero(~(low > 0) | (err > multipliers.row_accuracy
                                        * np.where(low > 0, low, 1.0)))
    if redo.size:
        qd = normalize_rows(q[redo])
        sd, zd, hd = relative_sums(qd, y, beta, multipliers.row_accuracy, backend)
        s[redo], z[redo], shift[redo] = (tangent_projection(qd, sd) if project else sd), zd, hd
    return s, z, shift


def relative_sums(queries: np.ndarray, keys: np.ndarray, beta: float, tolerance: float,
                  backend: str = "auto") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sums of the rows ``relative_rows`` recomputes (``queries`` unit vectors),
    each within ``tolerance`` of its own sum: on S^1 by Chebyshev interpolation on arcs
    (``solvers.particles.arcs``, O(n p + rows B p)) when it is the cheaper, else by the
    direct kernel (rows x n)."""
    rows, (n, d) = queries.shape[0], keys.shape
    if d == 2 and tolerance >= arcs.MIN_TOLERANCE:
        plan = arcs.arc_plan(float(beta), float(tolerance))
        if plan is not None and arcs.arc_cost(n, rows, plan) < rows * n:
            return arcs.arc_kernel_sums(queries, keys, plan)
    return exp_kernel_sums(queries, normalize_rows(keys), beta, backend)
