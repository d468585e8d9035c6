"""W2 between n tokens and a band-limited density on S^2, for n up to ~1e4 and beyond.

Exact transport against the density's grid atoms (``sphere_transport.grid_atoms``) errs
by O(h), h ~ pi/L the grid spacing: at L = 33 about 0.03 rad, as large as the sampling
error sqrt(log n / n) of n = 1e4 tokens, and a finer grid does not fit the 2 GiB of a
dense n x M network simplex. Here instead:

1. ``quantize_density``: M equal-mass atoms of the density (the Knothe-Rosenblatt map of
   the spherical Fibonacci lattice): the latitude of atom i solves ``G(z_i) = (i + 1/2)/M``
   with G the exact CDF of the z-marginal (a polynomial of degree L, integrated in
   Legendre form), its longitude solves ``H(phi_i | z_i) = frac(i / golden ratio)`` with H
   the exact conditional CDF (the latitude circle's Fourier series, degree L, from ducc0's
   evaluation off the grid; the latitude by bisection, the longitude by Newton inside a
   bracket (numba), both to ~1e-13; 1.9 s for M = 1e5 at L = 33, was 7.6 s by
   bisection). For the uniform density these are exactly the spherical Fibonacci points. Its own error W2(atoms, density)
   decays like M^{-1/2} (no log: a lattice, not a sample); measured, see the docstring of
   ``meanfield.studies.transport.convergence``.
2. ``assignment_w2``: the exact W2 between n equal-mass tokens and M = k n equal-mass
   atoms (each token split into k copies: an assignment problem of size k n) by the
   auction algorithm with eps-scaling (Bertsekas) on a sparse candidate graph, each copy
   bidding for the ``neighbours`` nearest atoms, in numba. It is certified: eps-
   complementary slackness holds on the candidates, and the check
   ``c_i,s(i) + p_s(i) <= c_ij + p_j + 2 eps`` for ALL atoms j extends it to the full
   problem: the value is then within 2 eps (rad^2, on W2^2) of the optimum. The check
   sorts the atoms into cubes of [-1, 1]^3 and opens only the cubes whose nearest point
   and lowest price could break it (a token looks at its neighbourhood, not at all M
   atoms). Atoms that break it join the candidates (column generation); the auction goes
   on from its prices and assignment, letting go only of the copies whose eps-CS fails
   (at every eps phase, not only there). Points are sorted along a Morton curve first
   (the price lookups stay in cache). A candidate graph that misses the transport (the
   measures far apart) is widened, or solved densely when small.
   Agrees with scipy's dense ``linear_sum_assignment`` to 1e-12
   (``tests/meanfield/metrics/test_sphere_assignment.py``).
   Cost: O(k n neighbours) memory (no dense n x M array). Measured (2 cores, i.i.d.
   uniform points on both sides, the hardest case: the dual potential is rough at every
   scale): k = 2, n = 1e4: 2.0 s (3.6 s before the neighbourhood check and warm phases);
   n = 3e4: 7-12 s (39 s before), of which the auction is ~85 %; cost ~ n^1.6. The dense
   ``linear_sum_assignment`` took 17.6 s at n = 1e4, k = 1, and 0.8 GB.
   The auction runs in compiled calls of at most ``AUCTION_WORK`` candidate looks (its
   whole state in arrays: the next call makes the same bids in the same order, so the
   value is the one call's bit for bit); Ctrl-C and SIGTERM are raised between them
   (``solvers.signals.DeferredSignals``). Measured: the longest call 0.12-0.21 s, 7 calls
   at n = 1e4 and 38 at n = 3e4 (k = 2), the total unchanged (4.1 s at n = 3e4).
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from meanfield.metrics.sphere_quantize import GOLDEN, quantize_density
from solvers.signals import DeferredSignals

__all__ = ["GOLDEN", "assignment_w2", "quantize_density"]

DEFAULT_NEIGHBOURS = 24
DEFAULT_EPS = 1e-9  # rad^2 on W2^2
DENSE_BELOW = 1500  # atoms: below, scipy's dense assignment (faster there)
DENSE_UP_TO = 5000  # atoms: a sparse auction that fails falls back on the dense one
EXTRA_COLUMNS = 4  # atoms that break eps-CS added per token and round
MAX_CUBES_PER_SIDE = 160
WIDEN_ABOVE = 0.05  # share of tokens breaking eps-CS that doubles the candidates
AUCTION_WORK = 1 << 25  # candidate looks (bids x candidates) of one compiled call of
# the auction (measured ~0.05-0.15 s; the whole auction 0.5-2 s at n = 1e4)


# --- the exact assignment ---------------------------------------------------------------
def _numba_auction():
    import math

    import numba

    @numba.njit(cache=True)
    def auction(cand, cost, prices, assign, owner, queue, state, eps_now, eps_final,
                factor, max_bids, chunk):
        # Gauss-Seidel auction with eps-scaling (Bertsekas) on the candidate graph. Each
        # phase starts from the assignment and prices it was given or the last phase
        # reached, and lets go only of the persons whose eps-CS fails at the phase's eps
        # (the others keep their objects: an eps-CS perfect assignment is within n eps
        # of the optimum whatever the prices of the objects nobody holds).
        # Resumable: all of its state is in the arrays (prices, assign, owner = the
        # person holding each object, queue; state = [stage (0: a phase begins, 1: its
        # bids), head, count, bids so far]; eps_now = [the phase's eps]); after ``chunk``
        # bids it returns 2 with the state kept, and the next call goes on with the same
        # bid: the bids are the same sequence as in one call, the same bits.
        # Returns 0: done (eps-CS perfect at eps_final), 1: more than max_bids bids.
        npers, kk = cand.shape
        stage, head, count, bids = state[0], state[1], state[2], state[3]
        eps = eps_now[0]
        done = 0
        while True:
            if stage == 0:
                count = 0
                for i in range(npers):
                    if assign[i] >= 0:
                        best = np.inf
                        mine = np.inf
                        for q in range(kk):
                            v = cost[i, q] + prices[cand[i, q]]
                            best = min(best, v)
                            if cand[i, q] == assign[i]:
                                mine = min(mine, v)
                        if mine <= best + eps:
                            continue
                        owner[assign[i]] = -1
                        assign[i] = -1
                    queue[count] = i
                    count += 1
                head = 0
                stage = 1
            while count > 0:
                if done >= chunk:
                    state[0], state[1], state[2], state[3] = stage, head, count, bids
                    eps_now[0] = eps
                    return 2
                i = queue[head]
                head = (head + 1) % npers
                count -= 1
                best1 = np.inf
                best2 = np.inf
                j1 = -1
                for q in range(kk):
                    v = cost[i, q] + prices[cand[i, q]]
                    if v < best1:
                        best2 = best1
                        best1 = v
                        j1 = cand[i, q]
                    elif v < best2:
                        best2 = v
                prices[j1] += best2 - best1 + eps
                prev = owner[j1]
                owner[j1] = i
                assign[i] = j1
                if prev >= 0:
                    assign[prev] = -1
                    queue[(head + count) % npers] = prev
                    count += 1
                bids += 1
                done += 1
                if bids > max_bids:
                    return 1
            if eps <= eps_final:
                return 0
            eps = max(eps / factor, eps_final)
            stage = 0

    @numba.njit(cache=True)
    def violations(x, y, order, starts, cellmin, h, g, k, assign_cost, prices, eps, cap):
        # for each token, up to ``cap`` atoms j (the best) with c_ij + p_j below the
        # largest c_i,s + p_s of its copies minus eps (-1: none). The atoms are sorted
        # into cubes of side h (``order``, ``starts``; ``cellmin``: each cube's lowest
        # price): a cube is opened only if its nearest point's cost plus that price can
        # break the bound, so a token looks at its neighbourhood, not at all M atoms.
        n = x.shape[0]
        pmin = prices.min()
        out = np.full((n, cap), -1, np.int64)
        val = np.full((n, cap), np.inf)
        lo = np.empty(3, np.int64)
        hi = np.empty(3, np.int64)
        for i in range(n):
            v = -np.inf
            for r in range(k):
                v = max(v, assign_cost[i * k + r])
            v -= eps
            reach = v - pmin
            if reach <= 0.0:
                continue
            ang = math.sqrt(reach)
            radius = 2.0 if ang >= math.pi else 2.0 * math.sin(0.5 * ang)
            for d in range(3):
                lo[d] = min(max(math.floor((x[i, d] - radius + 1.0) / h), 0), g - 1)
                hi[d] = min(max(math.floor((x[i, d] + radius + 1.0) / h), 0), g - 1)
            for a in range(lo[0], hi[0] + 1):
                ga = max(-1.0 + a * h - x[i, 0], 0.0, x[i, 0] + 1.0 - (a + 1) * h)
                for b in range(lo[1], hi[1] + 1):
                    gb = max(-1.0 + b * h - x[i, 1], 0.0, x[i, 1] + 1.0 - (b + 1) * h)
                    base = (a * g + b) * g
                    for c in range(lo[2], hi[2] + 1):
                        cell = base + c
                        if starts[cell] == starts[cell + 1]:
                            continue
                        gc = max(-1.0 + c * h - x[i, 2], 0.0, x[i, 2] + 1.0 - (c + 1) * h)
                        chord = math.sqrt(ga * ga + gb * gb + gc * gc)
                        if chord >= 2.0:
                            continue
                        near = 2.0 * math.asin(0.5 * chord)
                        if near * near + cellmin[cell] >= v:
                            continue
                        for s in range(starts[cell], starts[cell + 1]):
                            j = order[s]
                            dot = x[i, 0] * y[j, 0] + x[i, 1] * y[j, 1] + x[i, 2] * y[j, 2]
                            d = math.acos(min(max(dot, -1.0), 1.0))
                            w = d * d + prices[j]
                            if w < v and w < val[i, cap - 1]:
                                q = cap - 1
                                while q > 0 and val[i, q - 1] > w:
                                    val[i, q] = val[i, q - 1]
                                    out[i, q] = out[i, q - 1]
                                    q -= 1
                                val[i, q] = w
                                out[i, q] = j
        return out

    return auction, violations


def _cubes(y: np.ndarray, prices: np.ndarray, per_cube: int = 16):
    """The atoms sorted into cubes of side h of [-1, 1]^3 (about ``per_cube`` atoms in
    each cube the sphere crosses): ``order`` (atom indices by cube), ``starts`` (cube c
    holds order[starts[c]:starts[c + 1]]), each cube's lowest price, h, cubes per side."""
    # at most MAX_CUBES_PER_SIDE^3 cubes (4.1e6: 66 MB of starts and prices)
    h = max(min(0.5, math.sqrt(per_cube * 4.0 * math.pi / y.shape[0])),
            2.0 / (MAX_CUBES_PER_SIDE - 1))
    g = math.ceil(2.0 / h) + 1
    ijk = np.clip(np.floor((y + 1.0) / h).astype(np.int64), 0, g - 1)
    cube = (ijk[:, 0] * g + ijk[:, 1]) * g + ijk[:, 2]
    order = np.argsort(cube, kind="stable")
    starts = np.searchsorted(cube[order], np.arange(g**3 + 1))
    lowest = np.full(g**3, np.inf)
    np.minimum.at(lowest, cube, prices)
    return order, starts, lowest, h, g


_KERNELS = None


def _kernels():
    global _KERNELS
    if _KERNELS is None:
        _KERNELS = _numba_auction()
    return _KERNELS


def _morton_order(points: np.ndarray, bits: int = 10) -> np.ndarray:
    """The permutation that sorts unit vectors along the Z-order (Morton) curve of
    [-1, 1]^3 (``bits`` per axis): neighbours on the sphere get nearby indices, so the
    auction's price lookups stay in cache (measured 1.5x faster at n = 3e4)."""
    q = np.clip(((points + 1.0) * (0.5 * (2**bits - 1))).astype(np.int64), 0,
                2**bits - 1)
    code = np.zeros(points.shape[0], np.int64)
    for b in range(bits):
        for d in range(3):
            code |= ((q[:, d] >> b) & 1) << (3 * b + d)
    return np.argsort(code, kind="stable")


def _candidates(x: np.ndarray, y: np.ndarray, k: int, neighbours: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """Candidate atoms (the ``neighbours`` k nearest of each token, for each of its k
    copies) and their costs d^2; the copies of token i are persons i k .. i k + k - 1."""
    from scipy.spatial import cKDTree

    kk = min(neighbours * k, y.shape[0])
    chord, idx = cKDTree(y).query(x, kk)
    chord = np.asarray(chord).reshape(x.shape[0], kk)
    idx = np.asarray(idx).reshape(x.shape[0], kk)
    cost = (2.0 * np.arcsin(np.minimum(chord / 2.0, 1.0))) ** 2
    return np.repeat(idx, k, axis=0), np.repeat(cost, k, axis=0)


def _dense_w2(x: np.ndarray, y: np.ndarray, k: int, info: dict | None) -> float:
    """The same W2 by scipy's dense ``linear_sum_assignment`` (rows: the k copies of
    each token), for small problems; refused above ``MEMORY_LIMIT_BYTES``."""
    from scipy.optimize import linear_sum_assignment

    from meanfield.metrics.sphere_transport import (
        MEMORY_LIMIT_BYTES,
        dense_memory,
        geodesic_cost,
    )

    big_m = y.shape[0]
    if dense_memory(big_m, big_m, 2) > MEMORY_LIMIT_BYTES:
        raise RuntimeError(f"the transport of these {x.shape[0]} tokens onto {big_m} atoms "
                           "reaches too far for the sparse auction (the measures are far "
                           "apart) and the dense assignment does not fit in memory: use "
                           "method 'sinkhorn' or 'sliced'")
    cost = np.repeat(geodesic_cost(x, y, 2.0), k, axis=0)
    rows, cols = linear_sum_assignment(cost)
    if info is not None:
        info.update(dense=True)
    return math.sqrt(max(float(cost[rows, cols].mean()), 0.0))


def _add_columns(x: np.ndarray, y: np.ndarray, k: int, extra: np.ndarray,
                 broken: np.ndarray, cand: np.ndarray, cost: np.ndarray,
                 chosen: np.ndarray, prices: np.ndarray, assign: np.ndarray,
                 eps: float) -> tuple[np.ndarray, np.ndarray, float]:
    """One round of column generation of ``assignment_w2``: the atoms ``extra`` (per
    token, ``EXTRA_COLUMNS`` of them, -1 for none) that break eps-CS join the candidates
    of the token's k copies, and the ``broken`` copies let go of their atoms (``assign``
    is changed in place).

    Returns:
        The widened ``(cand, cost)`` and the eps to start the auction again from.
    """
    assign_before = assign.copy()
    extra = np.repeat(extra, k, axis=0)
    ok = extra >= 0
    xe = np.repeat(x, k, axis=0)
    ye = y[np.where(ok, extra, 0)]
    dots = np.clip(np.einsum("pd,pcd->pc", xe, ye), -1.0, 1.0)
    new_cost = np.where(ok, np.arccos(dots) ** 2, np.inf)
    cand = np.concatenate([cand, np.where(ok, extra, cand[:, :1])], axis=1)
    cost = np.concatenate([cost, new_cost], axis=1)
    assign[broken] = -1
    # eps-scaled again from the largest violation (at the final eps at once, the
    # released copies start price wars: measured, the bid bound stopped it)
    gap = (chosen + prices[assign_before])[broken] - np.min(
        np.where(ok, new_cost + prices[np.where(ok, extra, 0)], np.inf), axis=1)[broken]
    return cand, cost, max(float(gap.max()) / 4.0, eps)


def _run_auction(cand: np.ndarray, cost: np.ndarray, prices: np.ndarray,
                 assign: np.ndarray, eps_start: float, eps: float, max_bids: int,
                 check: Callable[[], None]) -> bool:
    """The compiled auction (``prices`` and ``assign`` changed in place) in calls of at
    most ``AUCTION_WORK`` candidate looks, ``check`` between them: the same bids in the
    same order as one call (its state is kept in arrays), so the same bits.

    Returns:
        True when done, False when more than ``max_bids`` bids were needed.
    """
    auction = _kernels()[0]
    owner = np.full(prices.size, -1, np.int64)
    held = np.flatnonzero(assign >= 0)
    owner[assign[held]] = held  # (an assignment: distinct objects)
    queue = np.empty(assign.size, np.int64)
    state = np.zeros(4, np.int64)
    eps_now = np.array([float(eps_start)])
    chunk = max(1, AUCTION_WORK // cand.shape[1])
    while True:
        status = auction(cand, cost, prices, assign, owner, queue, state, eps_now, eps,
                         4.0, max_bids, chunk)
        if status != 2:
            return status == 0
        check()


def assignment_w2(x: np.ndarray, y: np.ndarray, *, neighbours: int = DEFAULT_NEIGHBOURS,
                  eps: float = DEFAULT_EPS, info: dict | None = None,
                  check: Callable[[], None] | None = None) -> float:
    """Exact W2 (radians, geodesic cost) between n equal-mass points ``x`` and M = k n
    equal-mass points ``y`` (unit vectors ``(n, 3)``, ``(M, 3)``), by the certified sparse
    auction (module docstring): W2^2 within ``eps`` of the optimum.

    Args:
        x, y: the two point sets; ``y.shape[0]`` must be a multiple of ``x.shape[0]``.
        neighbours: candidate atoms per copy of a token (doubled until certified).
        eps: the final eps of the auction (rad^2): W2^2 is within 2 eps of the optimum.
        info: a dict to receive ``neighbours`` used and ``eps``.
        check: called between the compiled calls of the auction (may raise); None: a
            ``DeferredSignals`` of its own (Ctrl-C and SIGTERM noted during a call,
            raised after it).

    Raises:
        ValueError: sizes that are not multiples.
    """
    if check is None:
        with DeferredSignals() as signals:
            return _sparse_w2(x, y, neighbours, eps, info, signals.check)
    return _sparse_w2(x, y, neighbours, eps, info, check)


def _sparse_w2(x: np.ndarray, y: np.ndarray, neighbours: int, eps: float,
               info: dict | None, check: Callable[[], None]) -> float:
    """``assignment_w2`` with its ``check`` given."""
    from meanfield.metrics.sphere_transport import validate_points

    x = validate_points(x, "the tokens", dim=3)
    y = validate_points(y, "the atoms", dim=3)
    n, big_m = x.shape[0], y.shape[0]
    if big_m % n:
        raise ValueError(f"the atoms ({big_m}) must be a multiple of the tokens ({n})")
    k = big_m // n
    if big_m <= DENSE_BELOW:
        return _dense_w2(x, y, k, info)
    from meanfield.metrics.sphere_transport import MEMORY_LIMIT_BYTES

    # the candidate arrays: k n x (neighbours k) indices and costs
    if big_m * min(neighbours * k, big_m) * 16 > MEMORY_LIMIT_BYTES:
        return _dense_w2(x, y, k, info)
    x = x[_morton_order(x)]
    y = y[_morton_order(y)]
    cand, cost = _candidates(x, y, k, max(2, int(neighbours)))
    violations = _kernels()[1]
    prices = np.zeros(big_m)
    assign = np.full(big_m, -1, np.int64)
    eps = float(eps)
    eps_start = max(float(np.median(cost[:, -1])) / 4.0, eps)
    rounds = 0
    rows = np.arange(big_m)
    while True:
        # measured ~170 M bids in all on i.i.d. points (n = 3e4, k = 2): a bound 200 M
        # per phase stops a price war of a candidate graph that misses the transport
        max_bids = 200 * big_m * max(1, int(math.log(eps_start / eps, 4.0) + 1))
        if not _run_auction(cand, cost, prices, assign, eps_start, eps, max_bids, check):
            # a price war the bound stopped: the candidate graph misses the transport
            # (it may hold no perfect assignment at all): wider, or dense when small
            if big_m <= DENSE_UP_TO or neighbours * k >= big_m:
                return _dense_w2(x, y, k, info)
            return _sparse_w2(x, y, 4 * neighbours, eps, info, check)
        pos = np.argmax(cand == assign[:, None], axis=1)
        chosen = cost[rows, pos]
        # eps-CS holds on the candidates; checked against every atom (2 eps: the bid's
        # eps-CS, c + p = second best + eps, holds to round-off)
        extra = violations(x, y, *_cubes(y, prices), k, chosen + prices[assign], prices,
                           2.0 * eps, EXTRA_COLUMNS)
        check()
        if np.all(extra < 0):
            if info is not None:
                info.update(neighbours=int(neighbours), eps=eps, rounds=rounds,
                            candidates=int(cand.shape[1]))
            return math.sqrt(max(float(chosen.mean()), 0.0))
        # column generation: the atoms that break it join the candidates of the token's
        # copies, those copies let go of their atoms and bid again at the final eps from
        # the prices reached; every other copy keeps eps-CS against all atoms, so the
        # auction goes on warm (no new eps-scaling: measured 3x faster at n = 3e4)
        rounds += 1
        broken = np.repeat((extra >= 0).any(axis=1), k)
        if broken.mean() > WIDEN_ABOVE and neighbours * k < big_m:
            # the transport reaches beyond the candidates of many tokens (measures
            # far apart): more candidates at once rather than a column at a time
            return _sparse_w2(x, y, 2 * neighbours, eps, info, check)
        cand, cost, eps_start = _add_columns(x, y, k, extra, broken, cand, cost, chosen,
                                             prices, assign, eps)
