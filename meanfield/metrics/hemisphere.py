"""Do points lie in an open hemisphere? An exact test by linear programming, and Wendel's
probability that random points do ([GLPR25, Theorem 6.7, Lemma 6.4]).

Points ``x_1, ..., x_n`` of S^{d-1} lie in an open hemisphere when some ``w`` has
``<w, x_i> > 0`` for every i. The test solves the linear program

    maximise s   subject to   <w, x_i> >= s (i = 1..n),   -1 <= w_k <= 1 (k = 1..d)

(``scipy.optimize.linprog``, HiGHS): the box keeps it bounded, and its optimum ``s*`` is
> 0 exactly when such a ``w`` exists (scale any ``w`` into the box: the margin stays
positive), and 0 otherwise (``w = 0`` is feasible with ``s = 0``). The points lie in an
open hemisphere iff ``s* > tolerance``; ``tolerance`` (1e-9 by default, against points
of unit length) separates a configuration from one on the boundary of a closed
hemisphere, such as the vertices of the octahedron (every ``w`` has some ``<w, x_i> <=
0``: ``s* = 0`` up to the solver's round-off). The returned margin is
``min_i <w/|w|, x_i>``: the cosine of the largest angle from the cap's centre ``w/|w|``.

Cheap exact answers come first, so that a study testing thousands of starts runs no
program for most of them: if the mean ``m`` of the points has ``<m, x_i> > tolerance``
for every i, ``w = m`` proves the answer (clustered points, most starts with d >= n); if
the points are linearly independent (n <= d, full rank), ``w`` with ``<w, x_i> = 1`` for
all i does (the least-squares solution, checked); on the circle (d = 2) the points lie
in an open half-circle iff the largest gap between consecutive angles exceeds pi, and
the gap's opposite direction is the witness. Each is a certificate, never a guess:
where none holds, the program decides.

**Wendel** [Wen62]: n >= 1 points i.i.d. uniform on S^{d-1} lie in one open hemisphere
with probability ``p(n, d) = 2^{1 - n} sum_{k = 0}^{d - 1} C(n - 1, k)`` (1 for n <= d).

**Cone collapse** ([GLPR25, Lemma 6.4]; [Rig25, Theorem 3]): tokens of (SA) or (USA)
that start in an open hemisphere with centre ``w`` stay in it, ``min_i <w, x_i(t)>``
never decreases, and they converge to one point ``x*`` exponentially: ``|x_i(t) - x*| <=
C e^{-lambda t}``. Near the cluster the attention rows become uniform (SA: ``1/n``; USA:
``e^beta/n``), so each token relaxes to the mean at rate 1 (SA) or ``e^beta`` (USA):
``1 - <x_i, x_j> ~ e^{-2 lambda t}`` with ``2 lambda = 2`` (SA) and ``2 e^beta`` (USA),
the rates of the equiangular reduction near rho = 1 ([Rig25, §6.1]); ``cone_rate``.
"""
from __future__ import annotations

import math

import numpy as np

from meanfield.errors import ConfigError

TOLERANCE = 1e-9


def _points(points) -> np.ndarray:
    x = np.asarray(points, dtype=float)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ConfigError(f"points must be an array (n, d) with n, d >= 1, got shape "
                          f"{x.shape}", "points")
    if not np.all(np.isfinite(x)):
        raise ConfigError("points must be finite", "points")
    return x


def hemisphere_margin(points, tolerance: float = TOLERANCE) -> tuple[float, np.ndarray]:
    """A witness of an open hemisphere holding ``points`` (module docstring): the mean's
    when it is one, else the program's optimum (the largest margin in the box).

    Args:
        points: ``(n, d)`` points (unit vectors for the geometric reading; the test
            itself holds for any non-zero vectors: cones).
        tolerance: margins at or below this count as none.

    Returns:
        ``(margin, w)``: ``w`` a unit vector with ``min_i <w, x_i> = margin`` (``margin >
        tolerance``: the points lie in the open hemisphere about ``w``), or ``(0.0,
        zeros)`` when no open hemisphere holds them.
    """
    x = _points(points)
    found = _certificate(x, tolerance)
    if found is not None:
        return found
    if x.shape[1] == 2:  # (the circle: the gap rule is exact; no witness, none exists)
        return 0.0, np.zeros(2)
    if _surrounds_origin(x, tolerance):
        return 0.0, np.zeros(x.shape[1])
    return _program_margin(x, tolerance)


SIMPLEX_TRIES = 64


def _surrounds_origin(x: np.ndarray, tolerance: float) -> bool:
    """A certificate that no open hemisphere holds ``x``: d + 1 of the points whose
    simplex holds the origin inside (``sum lambda_i x_i = 0``, ``sum lambda_i = 1``, every
    ``lambda_i > tolerance``: then each ``w`` has ``<w, x_i> < 0`` for one of them, or
    all zero). ``SIMPLEX_TRIES`` subsets in one batched solve, from a generator fixed by
    (n, d): which subsets are tried changes the time, never the answer."""
    n, d = x.shape
    if n <= d:  # (no simplex of d + 1 points; and such points are handled above)
        return False
    rng = np.random.default_rng([n, d])
    subsets = np.argsort(rng.random((SIMPLEX_TRIES, n)), axis=1)[:, : d + 1]
    system = np.ones((SIMPLEX_TRIES, d + 1, d + 1))
    system[:, :d, :] = np.swapaxes(x[subsets], 1, 2)
    rhs = np.zeros((SIMPLEX_TRIES, d + 1, 1))
    rhs[:, d] = 1.0
    with np.errstate(all="ignore"):
        try:
            weights = np.linalg.solve(system, rhs)[..., 0]
        except np.linalg.LinAlgError:  # (a singular subset: leave it to the program)
            return False
    residual = np.abs(np.einsum("kj,kjd->kd", weights, x[subsets])).max(axis=1)
    good = np.all(weights > tolerance, axis=1) & (residual < 1e-12)
    return bool(good.any())


def _program_margin(x: np.ndarray, tolerance: float) -> tuple[float, np.ndarray]:
    """The linear program of the module docstring: ``(margin, w)`` or ``(0, zeros)``."""
    from scipy.optimize import linprog

    n, d = x.shape
    c = np.zeros(d + 1)
    c[-1] = -1.0  # maximise s
    a_ub = np.hstack([-x, np.ones((n, 1))])  # s - <w, x_i> <= 0
    bounds = [(-1.0, 1.0)] * d + [(None, None)]
    res = linprog(c, A_ub=a_ub, b_ub=np.zeros(n), bounds=bounds, method="highs")
    if res.status != 0:  # pragma: no cover - bounded and feasible (w = 0, s = 0)
        raise RuntimeError(f"the hemisphere program failed: {res.message}")
    w = res.x[:d]
    norm = float(np.linalg.norm(w))
    if -res.fun <= tolerance or norm == 0:
        return 0.0, np.zeros(d)
    w = w / norm
    margin = float(np.min(x @ w))
    if margin <= tolerance:
        return 0.0, np.zeros(d)
    return margin, w


def _witnesses(x: np.ndarray):
    """Candidate centres ``w`` (module docstring): the mean; for linearly independent
    points the solution of ``<w, x_i> = 1``; on the circle the direction opposite the
    middle of the largest gap between consecutive angles."""
    yield x.mean(axis=0)
    n, d = x.shape
    if n <= d:
        w, _, rank, _ = np.linalg.lstsq(x, np.ones(n), rcond=None)
        if rank == n:
            yield w
    if d == 2:
        angles = np.sort(np.arctan2(x[:, 1], x[:, 0]))
        gaps = np.diff(np.concatenate([angles, angles[:1] + 2 * math.pi]))
        k = int(np.argmax(gaps))
        middle = angles[k] + 0.5 * gaps[k]  # the middle of the empty arc; w opposite it
        yield np.array([-math.cos(middle), -math.sin(middle)])


def in_hemisphere(points, tolerance: float = TOLERANCE) -> bool:
    """Whether ``points`` ``(n, d)`` lie in an open hemisphere: some ``w`` with ``<w, x_i>
    > tolerance`` for all i (exact, by linear programming; module docstring)."""
    return hemisphere_margin(points, tolerance)[0] > 0


def hemisphere_share(systems, tolerance: float = TOLERANCE) -> np.ndarray:
    """``in_hemisphere`` of each system of a batch ``(B, n, d)``, as a boolean array (B,).

    The certificates decide most systems one by one; those left go into one linear
    program (``_block_programs``): a study's thousands of starts cost one solve, not one
    each (d = 8, n = 32, 2048 starts: 10 s one by one)."""
    x = np.asarray(systems, dtype=float)
    if x.ndim != 3:
        raise ConfigError(f"systems must be an array (B, n, d), got shape {x.shape}",
                          "points")
    out = np.zeros(x.shape[0], dtype=bool)
    left = []
    for b, points in enumerate(x):
        if _certificate(_points(points), tolerance) is not None:
            out[b] = True
        elif points.shape[1] != 2 and not _surrounds_origin(points, tolerance):
            left.append(b)
    if left:
        out[left] = _block_programs(x[left], tolerance)
    return out


def _certificate(x: np.ndarray, tolerance: float) -> tuple[float, np.ndarray] | None:
    """``(margin, unit w)`` of the first witness (``_witnesses``) that proves an open
    hemisphere, else None."""
    for w in _witnesses(x):
        norm = float(np.linalg.norm(w))
        if norm > 0 and np.all(np.isfinite(w)) and float(np.min(x @ w)) / norm > tolerance:
            return float(np.min(x @ w)) / norm, w / norm
    return None


def _block_programs(x: np.ndarray, tolerance: float) -> np.ndarray:
    """The programs of B systems ``(B, n, d)`` as one: the variables ``(w_b, s_b)`` of
    each system in its own block, the objective ``sum_b s_b``; the blocks share nothing,
    so its optimum is each system's own (the margin ``s_b`` of the module docstring)."""
    from scipy import sparse
    from scipy.optimize import linprog

    count, n, d = x.shape
    blocks = [sparse.csr_matrix(np.hstack([-points, np.ones((n, 1))])) for points in x]
    a_ub = sparse.block_diag(blocks, format="csr")
    c = np.zeros(count * (d + 1))
    c[d::d + 1] = -1.0
    bounds = ([(-1.0, 1.0)] * d + [(None, None)]) * count
    res = linprog(c, A_ub=a_ub, b_ub=np.zeros(count * n), bounds=bounds, method="highs")
    if res.status != 0:  # pragma: no cover - bounded and feasible (w = 0, s = 0)
        raise RuntimeError(f"the hemisphere program failed: {res.message}")
    solution = res.x.reshape(count, d + 1)
    inside = np.zeros(count, dtype=bool)
    for b in range(count):  # (the margin of the normalized centre, as in_hemisphere's)
        w = solution[b, :d]
        norm = float(np.linalg.norm(w))
        inside[b] = (solution[b, d] > tolerance and norm > 0
                     and float(np.min(x[b] @ w)) / norm > tolerance)
    return inside


def wendel_probability(n: int, d: int) -> float:
    """``2^{1-n} sum_{k<d} C(n-1, k)``: the probability that n i.i.d. uniform points of
    S^{d-1} lie in one open hemisphere [Wen62]."""
    if n < 1 or d < 1:
        raise ConfigError(f"Wendel's formula needs n, d >= 1, got n = {n}, d = {d}", "n")
    return math.fsum(math.comb(n - 1, k) for k in range(min(d, n))) / 2.0 ** (n - 1)


def cone_rate(beta: float, normalized: bool = True) -> float:
    """The rate ``2 lambda`` of ``1 - <x_i, x_j> ~ e^{-2 lambda t}`` near one cluster: 2
    (SA), ``2 e^beta`` (USA) (module docstring)."""
    return 2.0 if normalized else 2.0 * math.exp(beta)
