"""The saddle search of the critical-points study: starts, a Levenberg-Marquardt
iteration on the Riemannian gradient of E_beta that ends in Newton's method, and the
comparison of two critical points modulo rotations, reflections and permutations.

**The iteration.** A critical point is a zero of the gradient g (tangent coordinates,
``meanfield.model.interaction_hessian``), whatever its index, so the search minimises
|g|^2 rather than E_beta: with the Hessian H (the Jacobian of g, symmetric) and its
eigendecomposition ``H = V diag(w) V^T``, a step is

    s = -V diag(w/(w^2 + lambda)) V^T g,

taken along geodesics (``exp_map``); lambda shrinks tenfold after a step that lowers |g|
and grows fourfold until one does. As lambda -> 0 this is Newton's step -H^+ g with the
pseudo-inverse: it has no component along the zero modes of the rotations (modulo
rotations by construction), and near a non-degenerate critical point it converges
quadratically. The residual is ``max |g|/(e^beta/n)`` (``e^beta/n`` bounds every entry
of g); a start converges when it drops below the tolerance, and fails when lambda passes
``LAMBDA_MAX`` times ``max w^2`` (a local minimum of |g|^2 that is no critical point) or
the iterations run out. Up to three pure Newton steps then polish the point to round-off.

**Starts** (``FAMILIES``): "random" (iid uniform tokens), "clusters" (k clusters of random
sizes summing to n, centred on a regular polygon of a random great circle for even starts
and at iid uniform points for odd ones, k = 1 .. n in turn; the first starts are the two
antipodal clusters of sizes m and n - m, m = 0 .. n/2), "equally_spaced" (n tokens on a
regular polygon of a random great circle). Every token of the last two is moved by a
Gaussian tangent step of standard deviation ``jitter`` (radians).

**Same point.** On S^1: the sorted angles' gaps (their sum is 2 pi) agree up to a cyclic
shift, or up to a shift of the reversed gaps (a reflection); on S^{d-1}: the Gram
matrices with each row sorted agree once their rows are matched one to one (an
assignment): an invariant of rotations, reflections and permutations. Both within
``match_tolerance``.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from scipy.optimize import linear_sum_assignment

from meanfield.config.landscape_studies import CRITICAL_FAMILIES
from meanfield.model.interaction_hessian import (exp_map, gradient, hessian, orbit_dimension,
                                                 tangent_basis)

FAMILIES = CRITICAL_FAMILIES  # ("random", "clusters", "equally_spaced")
LAMBDA_MAX = 1e16  # relative damping beyond which a start has failed
POLISH_STEPS = 3


def _uniform(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _great_circle(rng: np.random.Generator, angles: np.ndarray, d: int) -> np.ndarray:
    """Points at ``angles`` on a random great circle (on S^1: the circle turned)."""
    q, _ = np.linalg.qr(rng.normal(size=(d, 2)))
    return np.cos(angles)[:, None] * q[:, 0] + np.sin(angles)[:, None] * q[:, 1]


def _jittered(rng: np.random.Generator, x: np.ndarray, jitter: float) -> np.ndarray:
    if jitter == 0:
        return x
    return exp_map(x, jitter * rng.normal(size=(x.shape[0], x.shape[1] - 1)))


def _cluster_start(rng: np.random.Generator, n: int, d: int, s: int) -> np.ndarray:
    """Start ``s`` of the cluster family (module docstring): the antipodal splits first."""
    if s <= n // 2:
        sizes = np.array([n - s, s]) if s else np.array([n])
        centres = _great_circle(rng, np.array([0.0, np.pi])[:sizes.size], d)
    else:
        k = 1 + (s - n // 2 - 1) % n
        cuts = np.sort(rng.choice(np.arange(1, n), size=k - 1, replace=False))
        sizes = np.diff(np.concatenate([[0], cuts, [n]]))
        if s % 2 == 0:
            centres = _great_circle(rng, 2 * np.pi * np.arange(k) / k, d)
        else:
            centres = _uniform(rng, k, d)
    return np.repeat(centres, sizes, axis=0)


def starts(family: str, count: int, n: int, d: int, jitter: float,
           rng: np.random.Generator) -> Iterator[np.ndarray]:
    """``count`` starts of one family (module docstring), each (n, d) unit vectors, one
    at a time (``critical_points.starts`` up to 1e6 of 64 x 16 tokens: 8 GB at once)."""
    for s in range(count):
        if family == "random":
            yield _uniform(rng, n, d)
        elif family == "clusters":
            yield _jittered(rng, _cluster_start(rng, n, d, s), jitter)
        else:
            x = _great_circle(rng, 2 * np.pi * np.arange(n) / n, d)
            yield _jittered(rng, x, jitter)


def residual(x: np.ndarray, beta: float, basis: np.ndarray | None = None) -> float:
    """``max |grad E_beta| / (e^beta/n)``: 0 at a critical point, at most 1."""
    n = x.shape[0]
    return float(np.max(np.abs(gradient(x, beta, basis)), initial=0.0) / (np.exp(beta) / n))


def solve(x: np.ndarray, beta: float, tolerance: float, max_iterations: int
          ) -> tuple[np.ndarray, bool, float]:
    """Levenberg-Marquardt on the gradient, then Newton (module docstring).

    Returns:
        The last point, whether it converged, its residual.
    """
    lam = None
    for _ in range(max_iterations):
        basis = tangent_basis(x)
        g = gradient(x, beta, basis)
        res = residual(x, beta, basis)
        if res <= tolerance:
            y = _polish(x, beta, res)
            return y, True, residual(y, beta)
        w, v = np.linalg.eigh(hessian(x, beta, basis))
        gv = v.T @ g
        top = float(np.max(w**2))
        lam = 1e-3 * top if lam is None else lam
        norm = float(g @ g)
        while True:
            y = exp_map(x, -v @ (w * gv / (w**2 + lam)), basis)
            gy = gradient(y, beta)
            if float(gy @ gy) < norm:
                x, lam = y, lam / 10.0
                break
            lam *= 4.0
            if lam > LAMBDA_MAX * top:
                return x, False, res
    return x, False, residual(x, beta)


def _polish(x: np.ndarray, beta: float, res: float) -> np.ndarray:
    """Pure Newton steps ``-H^+ g`` while they lower the residual; the pseudo-inverse drops
    the ``orbit_dimension`` eigenvalues of least magnitude (the rotations: near a critical
    point they are O(|g|), and a fixed threshold would keep some and divide by them)."""
    for _ in range(POLISH_STEPS):
        basis = tangent_basis(x)
        w, v = np.linalg.eigh(hessian(x, beta, basis))
        keep = np.ones(w.size, dtype=bool)
        keep[np.argsort(np.abs(w))[:orbit_dimension(x)]] = False
        gv = v.T @ gradient(x, beta, basis)
        step = -v[:, keep] @ (gv[keep] / w[keep])
        y = exp_map(x, step, basis)
        r = residual(y, beta)
        if not r < res:
            break
        x, res = y, r
    return x


def canonical(x: np.ndarray) -> np.ndarray:
    """A representative of the point's orbit: on S^1 the tokens sorted by angle, turned so
    that the token after the largest gap is at angle 0; on S^{d-1} turned onto the
    principal axes of the tokens (``x V`` with ``x = U S V^T``)."""
    x = np.asarray(x, dtype=float)
    if x.shape[1] == 2:
        th = np.sort(np.mod(np.arctan2(x[:, 1], x[:, 0]), 2 * np.pi))
        gaps = np.diff(np.concatenate([th, [th[0] + 2 * np.pi]]))
        first = (int(np.argmax(gaps)) + 1) % th.size
        th = np.mod(np.roll(th, -first) - th[first], 2 * np.pi)
        return np.stack([np.cos(th), np.sin(th)], axis=1)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    y = x @ vt.T
    if y.shape[1] < x.shape[1]:  # fewer tokens than dimensions: pad the axes
        y = np.concatenate([y, np.zeros((x.shape[0], x.shape[1] - y.shape[1]))], axis=1)
    return y


def invariant(x: np.ndarray) -> np.ndarray:
    """What ``same`` compares: the gaps of the sorted angles (S^1) or the sorted Gram
    rows (S^{d-1})."""
    if x.shape[1] == 2:
        th = np.sort(np.mod(np.arctan2(x[:, 1], x[:, 0]), 2 * np.pi))
        return np.diff(np.concatenate([th, [th[0] + 2 * np.pi]]))
    return np.sort(x @ x.T, axis=1)


def same(a: np.ndarray, b: np.ndarray, d: int, tolerance: float) -> bool:
    """Whether two invariants (``invariant``) are of one orbit, within ``tolerance``."""
    if d > 2:  # the rows matched by an assignment (a sort of rows is not robust)
        cost = np.max(np.abs(a[:, None, :] - b[None, :, :]), axis=2)
        rows, cols = linear_sum_assignment(cost)
        return bool(np.max(cost[rows, cols]) < tolerance)
    for gaps in (b, b[::-1]):
        for s in range(gaps.size):
            if np.max(np.abs(a - np.roll(gaps, s))) < tolerance:
                return True
    return False
