"""Kernel sums on S^1 accurate relative to each row: Chebyshev interpolation on arcs.

The Fourier sums (``solvers.particles.fourier``) are accurate to ``a n e^beta`` in
absolute terms; SA divides ``s_i`` by ``z_i``, so a row whose ``Z_i = sum_j e^{beta
cos(theta_i - theta_j)}`` is small (a token far from every cluster) needs more. Those rows
used to be recomputed by the direct kernel, ``rows x n`` work: as a run clusters and
tokens are left between the clusters, that grew to most of the time. Here they cost
``O(n p + rows B p)`` instead, with ``B`` arcs and ``p`` nodes set by beta and the
accuracy alone (beta = 9 at 1e-10: B = 15 arcs of p = 19 nodes).

The method. The circle is cut into ``B`` equal arcs of half-width ``h = pi/B``. On the arc
of centre ``c``, key ``theta_j = c + h tau_j`` (``|tau_j| <= 1``); ``k(tau) = e^{beta
cos(theta - c - h tau)} (1, cos, sin)(c + h tau)`` is replaced by its interpolant in the
``p`` Chebyshev points ``t_l = cos(l pi/(p - 1))``, ``sum_l k(t_l) L_l(tau)``; so the arc's
keys enter through ``W_l = sum_j L_l(tau_j)`` only ("anterpolation", computed once per
call, O(n p)), and a row costs ``B p`` kernel values at the nodes.

Error (the bound that chooses ``B`` and ``p``, ``arc_plan``). ``k`` is entire in ``tau``;
on the Bernstein ellipse ``E_rho`` (semi-axes ``X = (rho + 1/rho)/2``, ``Y = (rho -
1/rho)/2``) ``|k| <= M`` with ``log(M / min_{[-1,1]} e^{beta cos}) <= beta (h (X + 1) +
cosh(h Y) - 1) + h Y`` (``Re cos(u + iv) <= cos u + cosh v - 1``; ``cos`` is 1-Lipschitz
on the real axis, and ``|cos|, |sin| <= cosh`` of the imaginary part). The interpolant
of degree ``p - 1`` is within ``4 M rho^{-(p-1)}/(rho - 1)`` (Trefethen, *Approximation
Theory and Approximation Practice*, Thm 8.2) of ``k``, so each key's term is within
``E = min_rho 4 rho^{-(p-1)}/(rho - 1) e^{...}`` of its own value, and the row's sums
within ``E Z_i`` (every term of ``Z_i`` is positive). ``arc_plan`` takes the cheapest
plan (``p (B + KEY_WEIGHT)``) with ``E <= tolerance/4``. Arcs whose keys together weigh less than
``tolerance/8`` of a lower bound of ``Z_i`` are skipped (large beta: only arcs near the
row are visited). Rounding: the node sums have ``|W_l| <= Lebesgue constant x keys``, so
their rounding stays below ``p Lambda_p e^{2 beta h} eps Z_i`` (~1e-14): the method is
offered for tolerances ``>= MIN_TOLERANCE`` only. Measured against the direct kernel
(tests/solvers/particles/test_arcs.py, beta = 0.5..1000, tolerances 1e-6..1e-12): errors
at most 2e-2 of the tolerance, and ~2e-13 at beta = 1000 (both kernels round the exponent
``beta <q, y>``: ~beta eps).

Cost (2 shared cores): the anterpolation of 1e6 keys 24 ms; a row ~3 us (the direct
kernel's vectorised exp on the node values), against 2-4 ms for a row by the direct
kernel at n = 1e6. Every row is computed on its own (blocks of ``ROWS`` rows, one
thread each) and the anterpolation sums a number of key chunks fixed by n, in order:
the results do not depend on the thread count.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from solvers.signals import DeferredSignals

MIN_TOLERANCE = 1e-12  # below: rounding (~1e-14 relative) would eat the budget
MAX_NODES = 40  # nodes per arc tried by arc_plan
MAX_ARCS = 4096  # beyond (beta > ~1e4): the direct kernel (the moments' memory grows)
# arc_plan minimises nodes x (arcs + KEY_WEIGHT): the evaluation costs rows x arcs x nodes
# and the anterpolation keys x nodes; this weight assumes rows ~ keys/16 (at beta = 9 and
# 1e-10, 20 nodes x 14 arcs rather than 38 x 5: the anterpolation of 1e6 keys 37 -> 20 ms)
KEY_WEIGHT = 16
KEY_CHUNK = 1 << 16  # keys per chunk of the anterpolation at least, and at most
MAX_KEY_CHUNKS = 8  # this many chunks (a function of n only: thread-independent)
ROWS = 32  # rows per block (one thread each) of the evaluation
EVALUATE_ROWS = 1 << 16  # rows per compiled call of the evaluation (~3 us a row: ~0.2 s)
# keys of each chunk per compiled call of the anterpolation, a multiple of LANES (8 chunks
# of 2^19: ~0.25 s at the measured 46-67 ns a key on 2 loaded cores; one call at n = 4e7
# was 1.9-2.7 s)
ANTERPOLATE_KEYS = 1 << 19
LANES = 4  # keys the anterpolation takes at a time, each into its own moments
_RHO = np.exp(np.linspace(math.log(1.0005), math.log(1e4), 2000))  # ellipses tried


@dataclass(frozen=True)
class ArcPlan:
    """Arcs and Chebyshev nodes for one (beta, tolerance): ``arcs`` arcs of half-width
    ``half_width = pi/arcs``, ``nodes`` points each, interpolation bound ``bound``."""

    beta: float
    tolerance: float
    arcs: int
    nodes: int
    bound: float

    @property
    def half_width(self) -> float:
        return math.pi / self.arcs


def interpolation_bound(beta: float, half_width: float, nodes: int) -> float:
    """The relative error bound ``E`` of the module docstring (minimised over rho)."""
    rho = _RHO
    x, y = (rho + 1 / rho) / 2, (rho - 1 / rho) / 2
    h = half_width
    with np.errstate(over="ignore"):  # a huge beta: the bound is inf, the plan refused
        log_m = beta * (h * (x + 1) + np.cosh(np.minimum(h * y, 700.0)) - 1) + h * y
    log_e = math.log(4) - (nodes - 1) * np.log(rho) - np.log(rho - 1) + log_m
    return float(math.exp(min(float(np.min(log_e)), 700.0)))


@functools.lru_cache(maxsize=64)
def arc_plan(beta: float, tolerance: float) -> ArcPlan | None:
    """The cheapest plan (``nodes x (arcs + KEY_WEIGHT)``) whose bound is at most
    ``tolerance/4``; None if none has fewer than ``MAX_ARCS`` arcs."""
    if not (math.isfinite(beta) and beta >= 0 and MIN_TOLERANCE <= tolerance < 1):
        raise ValueError(f"arc sums need a finite beta >= 0 and a tolerance in "
                         f"[{MIN_TOLERANCE:g}, 1), not beta = {beta}, {tolerance}")
    best = None
    for nodes in range(4, MAX_NODES + 1):
        # The bound falls as the arcs narrow: the fewest arcs meeting it, by bisection.
        lo, hi = 1, 2
        while interpolation_bound(beta, math.pi / hi, nodes) > tolerance / 4:
            lo, hi = hi, 2 * hi
            if hi > MAX_ARCS:
                break
        if hi > MAX_ARCS:
            continue
        if interpolation_bound(beta, math.pi / lo, nodes) <= tolerance / 4:
            hi = lo
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if interpolation_bound(beta, math.pi / mid, nodes) <= tolerance / 4:
                hi = mid
            else:
                lo = mid
        if best is None or (hi + KEY_WEIGHT) * nodes < (best.arcs + KEY_WEIGHT) * best.nodes:
            best = ArcPlan(float(beta), float(tolerance), hi, nodes,
                           interpolation_bound(beta, math.pi / hi, nodes))
    return best


@functools.lru_cache(maxsize=16)
def chebyshev_nodes(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """The Chebyshev points of the second kind ``t_l = cos(l pi/N)``, ``N = nodes - 1``,
    and the matrix ``C`` that turns an arc's Chebyshev moments ``mu_k = sum_j
    T_k(tau_j)`` into its node weights ``W_l = sum_j L_l(tau_j) = sum_k C_lk mu_k``.

    The interpolant in these points is ``sum''_k a_k T_k`` with ``a_k = (2/N) sum''_l
    f(t_l) T_k(t_l)`` (the discrete cosine transform; ``''``: first and last terms
    halved), so ``C_lk = (2/N) e_l e_k cos(k l pi/N)``, ``e = 1/2`` at 0 and N, else 1.
    Moments cost one recurrence step per key and node, where the barycentric ``L_l``
    cost a division each (measured 4x slower at n = 1e6).
    """
    big_n = nodes - 1
    idx = np.arange(nodes)
    t = np.cos(np.pi * idx / big_n)
    e = np.ones(nodes)
    e[0] = e[-1] = 0.5
    c = (2.0 / big_n) * e[:, None] * e[None, :] * np.cos(np.pi * np.outer(idx, idx) / big_n)
    t.flags.writeable = c.flags.writeable = False
    return t, c


@functools.cache
def make_arc_kernels() -> tuple[Callable, Callable]:
    """The compiled ``(anterpolate, evaluate)`` (module docstring; cached on disk).

    - ``anterpolate(y, arcs, chunk, moments, counts, lo, hi)``: keys ``y`` (n, 2) at
      angles in [0, 2 pi): ``moments[c, lane, arc, k] += T_k(tau_j)`` and
      ``counts[c, arc] += 1`` for the keys ``lo .. hi`` (multiples of ``LANES``) of
      chunk ``c`` (``chunk`` keys each), each key into one of ``LANES`` lanes
      (``chebyshev_nodes`` makes the moments node weights): calls over consecutive
      ranges add in the order of one call over the whole chunk, the same bits.
    - ``evaluate(q, beta, half_width, centres, counts, nodes_xy, weights, skip, s, z,
      shift)``: the rows ``q`` (unit vectors) against the non-empty arcs (``centres``,
      ``counts``, their node directions ``nodes_xy`` (arc, l, 2) and weights (arc, l));
      an arc whose keys weigh less than ``skip`` times the lower bound of the row's sum
      (module docstring) is left out.
    """
    import numba

    from solvers.particles import direct

    direct.make_exp_kernels()  # sets direct._exp_shifted, the vectorised exp used here
    global _nearest_cos, _arc_of, _dot3, _exp_shifted  # module globals, not a closure cell: numba's disk cache keys on
    # the pickled closure, which differs from process to process for a dispatcher
    jit = numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)

    @jit
    def _arc_of(y, j, arcs, h):
        # (arc, tau) of key j: its angle in [0, 2 pi) = centre + h tau, |tau| <= 1.
        phi = math.atan2(y[j, 1], y[j, 0])
        if phi < 0:
            phi += 2 * math.pi
        b = min(int(phi / (2 * h)), arcs - 1)
        return b, min(1.0, max(-1.0, (phi - (2 * b + 1) * h) / h))

    @numba.njit(parallel=True, cache=True, nogil=True, error_model="numpy",
                boundscheck=False)
    def anterpolate(y, arcs, chunk, moments, counts, lo, hi):
        # Four keys at a time, each lane into its own moments (moments[c, lane]): four
        # independent recurrences and adds hide each other's latency (clustered keys
        # fall in one arc, where one set of moments would chain every add through
        # memory); the lanes are added in a fixed order by the caller.
        n = y.shape[0]
        p = moments.shape[3]
        h = math.pi / arcs
        for c in numba.prange(moments.shape[0]):
            start, stop = c * chunk + lo, min(n, c * chunk + min(hi, chunk))
            m0, m1, m2, m3 = moments[c, 0], moments[c, 1], moments[c, 2], moments[c, 3]
            j = start
            while j + 4 <= stop:
                b0, u0 = _arc_of(y, j, arcs, h)
                b1, u1 = _arc_of(y, j + 1, arcs, h)
                b2, u2 = _arc_of(y, j + 2, arcs, h)
                b3, u3 = _arc_of(y, j + 3, arcs, h)
                counts[c, b0] += 1
                counts[c, b1] += 1
                counts[c, b2] += 1
                counts[c, b3] += 1
                a0 = a1 = a2 = a3 = 1.0  # T_{k-1}
                c0, c1, c2, c3 = u0, u1, u2, u3  # T_k
                m0[b0, 0] += 1.0
                m1[b1, 0] += 1.0
                m2[b2, 0] += 1.0
                m3[b3, 0] += 1.0
                for k in range(1, p):
                    m0[b0, k] += c0
                    m1[b1, k] += c1
                    m2[b2, k] += c2
                    m3[b3, k] += c3
                    a0, c0 = c0, 2 * u0 * c0 - a0
                    a1, c1 = c1, 2 * u1 * c1 - a1
                    a2, c2 = c2, 2 * u2 * c2 - a2
                    a3, c3 = c3, 2 * u3 * c3 - a3
                j += 4
            while j < stop:
                b0, u0 = _arc_of(y, j, arcs, h)
                counts[c, b0] += 1
                a0, c0 = 1.0, u0
                m0[b0, 0] += 1.0
                for k in range(1, p):
                    m0[b0, k] += c0
                    a0, c0 = c0, 2 * u0 * c0 - a0
                j += 1

    @jit
    def _nearest_cos(cq, sq, cc, sc, cos_h, sin_h):
        # cos of the angle from (cq, sq) to the nearest point of the arc of centre
        # (cc, sc) and half-width h: 1 inside, else cos(|delta| - h), delta the angle
        # to the centre (no atan2: cos and |sin| of delta are a dot and a cross product).
        c = cq * cc + sq * sc
        if c >= cos_h:
            return 1.0
        return c * cos_h + abs(sq * cc - cq * sc) * sin_h

    _exp_shifted = direct._exp_shifted

    @numba.njit(fastmath={"reassoc"}, cache=True, nogil=True, error_model="numpy",
                boundscheck=False)
    def _dot3(k, a, b, c, length):
        # (k.a, k.b, k.c) over [:length]; reassociation: fixed vector partial sums.
        za = zb = zc = 0.0
        for t in range(length):
            za += k[t] * a[t]
            zb += k[t] * b[t]
            zc += k[t] * c[t]
        return za, zb, zc

    @numba.njit(parallel=True, cache=True, nogil=True, error_model="numpy",
                boundscheck=False)
    def evaluate(q, beta, half_width, centres, counts, nodes_xy, weights, skip, s, z,
                 shift):
        # weights (3, arcs, p): W_l, W_l cos, W_l sin of the node angles. Blocks of
        # ROWS rows, one thread each, with their buffers (no allocation per row).
        m = q.shape[0]
        arcs, p = weights.shape[1], weights.shape[2]
        cos_h, sin_h = math.cos(half_width), math.sin(half_width)
        cc, sc = np.cos(centres), np.sin(centres)
        # Every key of the arc nearest a row is within 2h of it: Z_i e^{-shift} >=
        # e^{-2 beta h}; arcs weighing less than skip of that in all are left out.
        floor = skip * math.exp(-2 * beta * half_width) / arcs
        size = arcs * p
        for blk in numba.prange((m + ROWS - 1) // ROWS):
            near = np.empty(arcs)
            arg, kbuf = np.empty(size), np.empty(size)
            w0, w1, w2 = np.empty(size), np.empty(size), np.empty(size)
            for i in range(blk * ROWS, min(m, (blk + 1) * ROWS)):
                r = math.sqrt(q[i, 0] ** 2 + q[i, 1] ** 2)
                cq, sq = q[i, 0] / r, q[i, 1] / r
                top = -2.0
                for b in range(arcs):
                    near[b] = _nearest_cos(cq, sq, cc[b], sc[b], cos_h, sin_h)
                    top = max(top, near[b])
                used = 0
                for b in range(arcs):
                    if counts[b] * math.exp(beta * (near[b] - top)) < floor:
                        continue
                    for el in range(p):
                        arg[used] = beta * (cq * nodes_xy[b, el, 0]
                                            + sq * nodes_xy[b, el, 1])
                        w0[used] = weights[0, b, el]
                        w1[used] = weights[1, b, el]
                        w2[used] = weights[2, b, el]
                        used += 1
                _exp_shifted(arg, kbuf, used, beta * top)  # the direct kernel's exp
                z[i], s[i, 0], s[i, 1] = _dot3(arg, w0, w1, w2, used)
                shift[i] = beta * top

    return anterpolate, evaluate


def arc_cost(n: int, rows: int, plan: ArcPlan) -> float:
    """Kernel values (and anterpolation terms) an arc sum of ``rows`` rows against ``n``
    keys costs at most (no arc skipped), to compare with ``rows x n`` directly."""
    return float(n * plan.nodes + rows * min(plan.arcs, n) * plan.nodes)


def arc_kernel_sums(queries: np.ndarray, keys: np.ndarray, plan: ArcPlan,
                    check: Callable[[], None] | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(s, z, shift)`` of ``e^{beta <q, y>}`` on S^1, every row within ``plan.tolerance``
    of its own sum: ``|e^{shift} z_i - Z_i| <= tolerance Z_i`` and each component of
    ``e^{shift} s_i`` within ``tolerance Z_i`` (module docstring).

    Args:
        queries: (m, 2) points, taken as directions.
        keys: (n, 2) points, taken as directions.
        plan: ``arc_plan(beta, tolerance)``.
        check: called between compiled calls (may raise); None: a ``DeferredSignals``
            of its own when there is more than one (a Ctrl-C raised between them).

    Returns:
        ``(s, z, shift)`` as ``solvers.particles.direct.exp_kernel_sums``: ``shift_i`` is
        beta times the cosine of the angle from row i to the nearest non-empty arc.
    """
    q = np.ascontiguousarray(queries, dtype=np.float64)
    y = np.ascontiguousarray(keys, dtype=np.float64)
    m, n = q.shape[0], y.shape[0]
    s, z, shift = np.zeros((m, 2)), np.zeros(m), np.zeros(m)
    if m == 0 or n == 0:
        return s, z, shift
    chunks = min(MAX_KEY_CHUNKS, -(-n // KEY_CHUNK))
    size = -(-n // chunks)
    if check is None and -(-size // ANTERPOLATE_KEYS) + -(-m // EVALUATE_ROWS) > 2:
        with DeferredSignals() as signals:  # more than one call of either kernel
            return arc_kernel_sums(q, y, plan, signals.check)
    anterpolate, evaluate = make_arc_kernels()
    t, to_weights = chebyshev_nodes(plan.nodes)
    moments = np.zeros((chunks, LANES, plan.arcs, plan.nodes))
    counts = np.zeros((chunks, plan.arcs))
    for lo in range(0, size, ANTERPOLATE_KEYS):  # calls of ~0.25 s, check between
        anterpolate(y, plan.arcs, size, moments, counts, lo, lo + ANTERPOLATE_KEYS)
        if check is not None:
            check()
    total_m, total_c = np.zeros((plan.arcs, plan.nodes)), counts[0]
    for c in range(chunks):  # chunk and lane order: the same sums whatever the threads
        for lane in range(LANES):
            total_m += moments[c, lane]
        if c:
            total_c = total_c + counts[c]
    live = np.flatnonzero(total_c > 0)
    weights = total_m[live] @ to_weights.T  # (live arcs, nodes)
    h = plan.half_width
    centres = (2 * live + 1) * h
    angles = centres[:, None] + h * t[None, :]
    nodes_xy = np.ascontiguousarray(np.stack([np.cos(angles), np.sin(angles)], axis=-1))
    weights3 = np.ascontiguousarray(np.stack([weights, weights * nodes_xy[..., 0],
                                              weights * nodes_xy[..., 1]]))
    for i0 in range(0, m, EVALUATE_ROWS):  # calls of ~0.3 s: Ctrl-C is raised between
        i1 = i0 + EVALUATE_ROWS
        evaluate(q[i0:i1], plan.beta, h, centres, total_c[live], nodes_xy, weights3,
                 plan.tolerance / 8, s[i0:i1], z[i0:i1], shift[i0:i1])
        if check is not None and i1 < m:
            check()
    return s, z, shift
