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

A cheap certificate comes first: if the mean ``m`` of the points has ``<m, x_i> >
tolerance`` for every i, ``w = m`` proves the answer without a program (clustered points,
and almost every start with d >= n... never wrongly: it is a witness, not a guess).

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
    m = x.mean(axis=0)
    norm = float(np.linalg.norm(m))
    if norm > 0 and float(np.min(x @ m)) / norm > tolerance:
        w = m / norm
        return float(np.min(x @ w)), w
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


def in_hemisphere(points, tolerance: float = TOLERANCE) -> bool:
    """Whether ``points`` ``(n, d)`` lie in an open hemisphere: some ``w`` with ``<w, x_i>
    > tolerance`` for all i (exact, by linear programming; module docstring)."""
    return hemisphere_margin(points, tolerance)[0] > 0


def hemisphere_share(systems, tolerance: float = TOLERANCE) -> np.ndarray:
    """``in_hemisphere`` of each system of a batch ``(B, n, d)``, as a boolean array (B,)."""
    x = np.asarray(systems, dtype=float)
    if x.ndim != 3:
        raise ConfigError(f"systems must be an array (B, n, d), got shape {x.shape}",
                          "points")
    return np.array([in_hemisphere(s, tolerance) for s in x], dtype=bool)


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
