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
   evaluation off the grid; both inverted by bisection to 1e-12). For the uniform density
   these are exactly the spherical Fibonacci points. Its own error W2(atoms, density)
   decays like M^{-1/2} (no log: a lattice, not a sample); measured in
   ``tests/meanfield/metrics/test_sphere_assignment.py`` and the convergence module.
2. ``assignment_w2``: the exact W2 between n equal-mass tokens and M = k n equal-mass
   atoms (each token split into k copies: an assignment problem of size k n) by the
   auction algorithm with eps-scaling (Bertsekas) on a sparse candidate graph, each copy
   bidding for the ``neighbours`` nearest atoms, in numba. It is certified: eps-
   complementary slackness holds on the candidates, and the check
   ``c_i,s(i) + p_s(i) <= c_ij + p_j + 2 eps`` for ALL atoms j (a pass over all pairs,
   pruned by the dot product: only atoms nearer than the assigned cost + price - min
   price can break it) extends it to the full problem: the value is then within 2 eps
   (rad^2, on W2^2) of the optimum. Atoms that break it join the candidates (column
   generation) and the auction goes on from its prices.
   Agrees with scipy's dense ``linear_sum_assignment`` to 1e-17 at n = 1000, 3000.
   Cost: O(k n neighbours) memory (no dense n x M array); measured (2 shared cores)
   0.07 s at n = 3000, 0.5 / 1.7 / 5.8 s at n = 1e4 for k = 1 / 2 / 4 (the dense
   ``linear_sum_assignment`` took 17.6 s at n = 1e4, k = 1, and 0.8 GB).
"""
from __future__ import annotations

import math

import numpy as np

GOLDEN = (1.0 + 5.0**0.5) / 2.0
BISECTIONS = 45  # interval halvings: 2^-45 of [-1, 1] or [0, 2 pi] ~ 1e-13
DEFAULT_NEIGHBOURS = 24
DEFAULT_EPS = 1e-9  # rad^2 on W2^2
DENSE_BELOW = 1500  # atoms: below, scipy's dense assignment (faster there)
EXTRA_COLUMNS = 4  # atoms that break eps-CS added per token and round


# --- the reference: equal-mass atoms of a band-limited density ------------------------
def _legendre_series_of_marginal(grid, density: np.ndarray) -> np.ndarray:
    """Legendre coefficients b_l (z = sin lat) of g(z) = int rho(z, phi) dphi.

    The ring means of the grid values are g at the Gauss nodes exactly (the trapezoid rule
    in longitude is exact for degree < nlon); g has degree <= L < nlat, so the Gauss
    quadrature b_l = (2l+1)/2 sum_j w_j g(x_j) P_l(x_j) is exact."""
    from numpy.polynomial import legendre as leg

    nodes, w = leg.leggauss(grid.nlat)
    if not np.allclose(nodes, grid.x, atol=1e-12):
        raise ValueError("the grid's latitudes are not the Gauss-Legendre nodes")
    g = 2.0 * np.pi * np.asarray(density, dtype=float).mean(axis=1)
    deg = grid.nlat - 1
    vander = leg.legvander(nodes, deg)  # (nlat, deg + 1)
    return (vander * (w * g)[:, None]).sum(axis=0) * (2 * np.arange(deg + 1) + 1) / 2.0


def _bisect(f, target: np.ndarray, low: float, high: float) -> np.ndarray:
    """x with f(x) = target for a nondecreasing f on [low, high] (vectorised)."""
    lo = np.full(target.shape, low)
    hi = np.full(target.shape, high)
    for _ in range(BISECTIONS):
        mid = 0.5 * (lo + hi)
        below = f(mid) < target
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 0.5 * (lo + hi)


def quantize_density(grid, alm: np.ndarray, m: int, *, threads: int = 1) -> np.ndarray:
    """``m`` equal-mass atoms ``(m, 3)`` of the density with coefficients ``alm`` on the
    Gauss-Legendre ``grid`` (``solvers.grids.SphereGrid``): the Knothe-Rosenblatt image
    of the spherical Fibonacci lattice (module docstring). The density must be (nearly)
    nonnegative; its normalisation does not matter."""
    from numpy.polynomial import legendre as leg

    from solvers.transforms.pointwise import sphere_synthesis_at

    m = int(m)
    if m < 1:
        raise ValueError(f"m must be >= 1, got {m}")
    lmax = grid.lmax
    density = grid.synthesis(alm)
    b = _legendre_series_of_marginal(grid, density)
    cdf = leg.legint(b, lbnd=-1.0)
    total = leg.legval(1.0, cdf)
    if not total > 0:
        raise ValueError("the density has no positive mass")
    u = (np.arange(m) + 0.5) / m
    z = _bisect(lambda t: leg.legval(t, cdf) / total, u, -1.0, 1.0)
    # the conditional CDF in longitude: Fourier coefficients c_k(z_i), k = 0..L, from
    # 2L + 2 equispaced values on each latitude circle (exact for degree <= L)
    nphi = 2 * lmax + 2
    phi = 2 * np.pi * np.arange(nphi) / nphi
    s = np.sqrt(np.maximum(1.0 - z * z, 0.0))
    pts = np.stack([s[:, None] * np.cos(phi)[None], s[:, None] * np.sin(phi)[None],
                    np.broadcast_to(z[:, None], (m, nphi))], axis=-1).reshape(-1, 3)
    values = np.asarray(sphere_synthesis_at(alm, lmax, pts, threads=threads)).real
    c = np.fft.rfft(values.reshape(m, nphi), axis=1)[:, :lmax + 1] / nphi
    c0 = c[:, 0].real
    k = np.arange(1, lmax + 1)
    ck = c[:, 1:] / (1j * k)[None]  # rho = c0 + 2 Re sum_k c_k e^{ik phi}

    def h(t):
        e = np.exp(1j * t[:, None] * k[None]) - 1.0
        return (c0 * t + 2.0 * np.real((ck * e).sum(axis=1))) / (2 * np.pi * np.maximum(
            c0, 1e-300))

    v = np.mod(np.arange(m) / GOLDEN, 1.0)
    phi_i = _bisect(h, v, 0.0, 2 * np.pi)
    x = np.stack([s * np.cos(phi_i), s * np.sin(phi_i), z], axis=-1)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# --- the exact assignment ---------------------------------------------------------------
def _numba_auction():
    import math

    import numba

    @numba.njit(cache=True)
    def auction(cand, cost, prices, eps_start, eps_final, factor, max_bids):
        npers, kk = cand.shape
        nobj = prices.size
        owner = np.empty(nobj, np.int64)
        assign = np.empty(npers, np.int64)
        queue = np.empty(npers, np.int64)
        eps = eps_start
        bids = 0
        while True:
            owner[:] = -1
            assign[:] = -1
            for i in range(npers):
                queue[i] = i
            head = 0
            count = npers
            while count > 0:
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
                if bids > max_bids:
                    return assign, prices, False
            if eps <= eps_final:
                return assign, prices, True
            eps = max(eps / factor, eps_final)

    @numba.njit(cache=True)
    def violations(x, y, k, assign_cost, prices, eps, cap):
        # for each token, up to ``cap`` atoms j (the best) with c_ij + p_j below the
        # largest c_i,s + p_s of its copies minus eps (-1: none); only atoms with c_ij <
        # that - min p can be such atoms, the others are skipped by their dot product
        n = x.shape[0]
        m = y.shape[0]
        pmin = prices.min()
        out = np.full((n, cap), -1, np.int64)
        val = np.full((n, cap), np.inf)
        for i in range(n):
            v = -np.inf
            for r in range(k):
                v = max(v, assign_cost[i * k + r])
            v -= eps
            reach = v - pmin
            if reach <= 0.0:
                continue
            ang = math.sqrt(reach)
            thresh = -2.0 if ang >= math.pi else math.cos(ang)
            for j in range(m):
                dot = x[i, 0] * y[j, 0] + x[i, 1] * y[j, 1] + x[i, 2] * y[j, 2]
                if dot <= thresh:
                    continue
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


_KERNELS = None


def _kernels():
    global _KERNELS
    if _KERNELS is None:
        _KERNELS = _numba_auction()
    return _KERNELS


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
        raise RuntimeError(f"the sparse auction of {big_m} atoms did not finish and the "
                           "dense assignment does not fit in memory")
    cost = np.repeat(geodesic_cost(x, y, 2.0), k, axis=0)
    rows, cols = linear_sum_assignment(cost)
    if info is not None:
        info.update(dense=True)
    return math.sqrt(max(float(cost[rows, cols].mean()), 0.0))


def assignment_w2(x: np.ndarray, y: np.ndarray, *, neighbours: int = DEFAULT_NEIGHBOURS,
                  eps: float = DEFAULT_EPS, info: dict | None = None) -> float:
    """Exact W2 (radians, geodesic cost) between n equal-mass points ``x`` and M = k n
    equal-mass points ``y`` (unit vectors ``(n, 3)``, ``(M, 3)``), by the certified sparse
    auction (module docstring): W2^2 within ``eps`` of the optimum.

    Args:
        x, y: the two point sets; ``y.shape[0]`` must be a multiple of ``x.shape[0]``.
        neighbours: candidate atoms per copy of a token (doubled until certified).
        eps: the final eps of the auction (rad^2): W2^2 is within 2 eps of the optimum.
        info: a dict to receive ``neighbours`` used and ``eps``.

    Raises:
        ValueError: sizes that are not multiples.
    """
    from meanfield.metrics.sphere_transport import validate_points

    x = validate_points(x, "the tokens", dim=3)
    y = validate_points(y, "the atoms", dim=3)
    n, big_m = x.shape[0], y.shape[0]
    if big_m % n:
        raise ValueError(f"the atoms ({big_m}) must be a multiple of the tokens ({n})")
    k = big_m // n
    if big_m <= DENSE_BELOW:
        return _dense_w2(x, y, k, info)
    cand, cost = _candidates(x, y, k, max(2, int(neighbours)))
    auction, violations = _kernels()
    prices = np.zeros(big_m)
    eps = float(eps)
    eps_start = max(float(np.median(cost[:, -1])) / 4.0, eps)
    rounds = 0
    while True:
        max_bids = 2000 * big_m * max(1, int(math.log2(eps_start / eps) + 1))
        assign, prices, done = auction(cand, cost, prices, eps_start, eps, 4.0, max_bids)
        if not done:  # a price war of the k identical copies: the dense solver
            return _dense_w2(x, y, k, info)
        rows = np.arange(big_m)
        pos = np.argmax(cand == assign[:, None], axis=1)
        chosen = cost[rows, pos]
        # eps-CS holds on the candidates; checked against every atom: atoms that break
        # it join the candidates (column generation) and the auction goes on from its
        # prices, eps-scaled again from the largest violation, until none does
        # (2 eps: the bid's eps-CS, c + p = second best + eps, holds to round-off)
        extra = violations(x, y, k, chosen + prices[assign], prices, 2.0 * eps,
                           EXTRA_COLUMNS)
        if np.all(extra < 0):
            if info is not None:
                info.update(neighbours=int(neighbours), eps=eps, rounds=rounds,
                            candidates=int(cand.shape[1]))
            return math.sqrt(max(float(chosen.mean()), 0.0))
        rounds += 1
        extra = np.repeat(extra, k, axis=0)
        ok = extra >= 0
        xe = np.repeat(x, k, axis=0)
        ye = y[np.where(ok, extra, 0)]
        dots = np.clip(np.einsum("pd,pcd->pc", xe, ye), -1.0, 1.0)
        new_cost = np.where(ok, np.arccos(dots) ** 2, np.inf)
        cand = np.concatenate([cand, np.where(ok, extra, cand[:, :1])], axis=1)
        cost = np.concatenate([cost, new_cost], axis=1)
        # from the prices, scaled again from the size of the largest violation
        gap = (chosen + prices[assign])[ok.any(axis=1)] - np.min(
            np.where(ok, new_cost + prices[np.where(ok, extra, 0)], np.inf), axis=1)[
            ok.any(axis=1)]
        eps_start = max(float(gap.max()) / 4.0, eps)
