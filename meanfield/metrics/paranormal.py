"""Theorem 5.1 of [GLPR23]: a paranormal value matrix, the polytope K and the distance
of the rescaled tokens to (dK u {0}) x G.

[GLPR23, Definition 2]: (Q, K, V) is a *good triple with multiplicity* when

- ``Q^T K`` is positive definite (its symmetric part: ``<Q^T K x, x> > 0`` for x != 0);
- V is *paranormal*: ``R^d = F (+) G`` with F and G invariant under V, ``V|_F = lambda I``
  for some ``lambda > 0``, and the spectral radius of ``V|_G`` below ``lambda``.

So lambda is V's eigenvalue of largest modulus, real and positive, *semisimple* (as many
independent eigenvectors as its multiplicity), and every other eigenvalue has a smaller
modulus. Then (numerically) ``F = ker(V - lambda I)`` and ``G = range(V - lambda I)``:
both are invariant, their dimensions add up to d, and they meet only at 0 exactly when
lambda is semisimple (``paranormal_split`` checks all three).

[GLPR23, Theorem 5.1]: for any start, there is a bounded convex polytope ``K in F`` such
that every rescaled token ``z_i(t) = e^{-tV} x_i(t)`` approaches
``H = (dK u {0}) x G`` (here "x" is the direct sum ``F (+) G``: the points ``k + g``,
``k`` in ``dK u {0}``, ``g`` in G). Why: write ``z = z_F + z_G`` along ``F (+) G``; the
logits ``<Q e^{tV} z_i, K e^{tV} z_j>`` carry ``e^{2 lambda t}`` on the F parts and less
on everything else, and ``d/dt z_F,i = lambda sum_j P_ij (z_F,j - z_F,i)`` exactly
(V commutes with the projection along G). The F parts therefore move by convex
combinations: the convex hull of ``{z_F,i(t)}`` shrinks with t, and its limit is K
([GLPR23, Claim 1 and Proposition C.2]; "for generic choices of initial sequences, we do
not see a way to predict K explicitly besides running the full dynamics", §3). The
authors' figures draw K as the convex hull of the tokens at the time shown
(ConvexHull of the token positions in their simulation script), and so does
``theorem51_distance`` by default: K is the convex hull of the tokens' F parts at the
time given (or of ``polytope`` points given in its place). The G parts are free (along
eigenvalues of modulus below lambda they may diverge, e.g. ``e^{t/2}`` along an
eigenvalue -1/2).

The distance is the Euclidean distance in R^d. With ``P`` the orthogonal projection onto
the complement of G, ``dist(z, A + G) = dist(P z, P A)`` for any set A in F (each
``a + g`` equals ``P a + (a - P a + g)`` and ``a - P a`` lies in G), and P is one-to-one
on F (F and G meet only at 0), so ``P K`` is a polytope of full dimension ``dim F`` in
``G^perp`` and ``P dK`` its boundary there. A point inside ``P K`` is at distance
``min_f (b_f - <a_f, p>)`` from the boundary (the hull's facets ``<a_f, x> <= b_f``,
``|a_f| = 1``); a point outside, or any point when K is flat (no interior in F, so
``dK = K``), is at the distance to ``P K`` itself, a non-negative least-squares problem
over the convex weights of the vertices (``scipy.optimize.nnls``). The distance to ``H``
is the smaller of that and ``|P z|`` (the distance to ``{0} + G``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import null_space, orth
from scipy.optimize import nnls
from scipy.spatial import ConvexHull, QhullError

from meanfield.metrics.limit_geometry import hull_vertices

# Eigenvalues within this (relative to lambda) of lambda count as lambda.
EIGEN_TOLERANCE = 1e-8
# The weight of the row "sum of the convex weights = 1" in the least-squares distance to
# a polytope (the constraint holds to about 1/weight of the points' scale).
CONVEX_WEIGHT = 1e8


@dataclass(frozen=True)
class ParanormalSplit:
    """The split ``R^d = F (+) G`` of a paranormal V.

    Attributes:
        eigenvalue: lambda, ``V|_F = lambda I``.
        f_basis: ``(d, m)`` orthonormal basis of F = ker(V - lambda I), m its dimension.
        g_basis: ``(d, d - m)`` orthonormal basis of G = range(V - lambda I).
        radius_g: the spectral radius of ``V|_G`` (below lambda).
        to_complement: ``(d, m)`` orthonormal basis of the complement of G, onto which
            ``theorem51_distance`` projects.
    """

    eigenvalue: float
    f_basis: np.ndarray
    g_basis: np.ndarray
    radius_g: float
    to_complement: np.ndarray


def _square(matrix: np.ndarray, name: str) -> np.ndarray:
    a = np.asarray(matrix, dtype=float)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] < 1:
        raise ValueError(f"{name} must be a square (d, d) matrix, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return a


def paranormal_split(value_matrix: np.ndarray,
                     tolerance: float = EIGEN_TOLERANCE) -> ParanormalSplit:
    """F and G of a paranormal V ([GLPR23, Definition 2 (ii)]; module docstring).

    Args:
        value_matrix: ``(d, d)`` real V.
        tolerance: eigenvalues within ``tolerance * lambda`` of lambda are lambda.

    Returns:
        The ``ParanormalSplit``.

    Raises:
        ValueError: V is not paranormal: its eigenvalue of largest modulus is not real and
            positive, not semisimple (fewer eigenvectors than its multiplicity: no
            invariant complement on which V is smaller), or shares its modulus with
            another eigenvalue.
    """
    v = _square(value_matrix, "value_matrix")
    d = v.shape[0]
    lam = np.linalg.eigvals(v)
    top = lam[np.argmax(np.abs(lam))]
    scale = max(float(np.abs(top)), np.finfo(float).tiny)
    shown = ", ".join(f"{x:.4g}" for x in sorted(lam, key=lambda x: -abs(x))[:4])
    if not (abs(top.imag) <= tolerance * scale and top.real > 0):
        raise ValueError("a paranormal V needs a real, positive eigenvalue of largest "
                         f"modulus ([GLPR23, Definition 2]); its eigenvalues by modulus "
                         f"are {shown}")
    lam_top = float(top.real)
    near = np.abs(lam - lam_top) <= tolerance * lam_top
    multiplicity = int(near.sum())
    others = lam[~near]
    radius_g = float(np.abs(others).max()) if others.size else 0.0
    if radius_g >= lam_top * (1 - tolerance):
        raise ValueError(f"a paranormal V needs every eigenvalue but lambda = {lam_top:.6g} "
                         f"of modulus below it ([GLPR23, Definition 2]); its eigenvalues "
                         f"by modulus are {shown}")
    shifted = v - lam_top * np.eye(d)
    rcond = tolerance * max(1.0, float(np.linalg.norm(v, 2)))
    f = null_space(shifted, rcond=rcond)
    g = orth(shifted, rcond=rcond) if multiplicity < d else np.zeros((d, 0))
    if f.shape[1] != multiplicity or g.shape[1] != d - multiplicity or \
            np.linalg.matrix_rank(np.hstack([f, g]), tol=1e-8) < d:
        raise ValueError(f"lambda = {lam_top:.6g} has multiplicity {multiplicity} but "
                         f"{f.shape[1]} independent eigenvectors: V restricted to F is not "
                         "lambda I (V is not paranormal, [GLPR23, Definition 2])")
    complement = null_space(g.T) if g.shape[1] else np.eye(d)
    return ParanormalSplit(lam_top, f, g, radius_g, complement)


def is_good_triple_with_multiplicity(query: np.ndarray, key: np.ndarray,
                                     value: np.ndarray) -> bool:
    """[GLPR23, Definition 2]: ``Q^T K`` positive definite and V paranormal."""
    q, k = _square(query, "query"), _square(key, "key")
    a = q.T @ k
    if np.linalg.eigvalsh((a + a.T) / 2).min() <= 0:
        return False
    try:
        paranormal_split(value)
    except ValueError:
        return False
    return True


def _tokens(z: np.ndarray, d: int) -> np.ndarray:
    z = np.asarray(z, dtype=float)
    if z.ndim != 2 or z.shape[0] < 1 or z.shape[1] != d:
        raise ValueError(f"tokens must be an (n, {d}) array for a {d} x {d} V, got shape "
                         f"{z.shape}")
    if not np.all(np.isfinite(z)):
        raise ValueError("tokens must be finite (found NaN or inf)")
    return z


def _distance_to_hull(points: np.ndarray, vertices: np.ndarray) -> np.ndarray:
    """Each point's distance to the convex hull of ``vertices`` (0 inside)."""
    m = vertices.shape[0]
    scale = max(1.0, float(np.abs(vertices).max()))
    a = np.vstack([vertices.T / scale, np.full((1, m), CONVEX_WEIGHT)])
    out = np.empty(points.shape[0])
    for i, p in enumerate(points):
        w, _ = nnls(a, np.concatenate([p / scale, [CONVEX_WEIGHT]]))
        out[i] = float(np.linalg.norm(vertices.T @ w - p))
    return out


def _boundary_distance(points: np.ndarray, polytope: np.ndarray) -> np.ndarray:
    """Each point's distance to the boundary (in its own space, of dimension m) of the
    convex hull of ``polytope``: the facets' slack inside, the hull distance outside and
    whenever the hull is flat (its boundary is then the hull itself)."""
    m = points.shape[1]
    if m == 1:
        lo, hi = polytope.min(), polytope.max()
        p = points[:, 0]
        return np.where((p >= lo) & (p <= hi), np.minimum(p - lo, hi - p),
                        np.maximum(lo - p, p - hi))
    try:
        hull = ConvexHull(polytope)
    except QhullError:  # flat: no interior, the boundary is the hull
        return _distance_to_hull(points, polytope)
    normals, offsets = hull.equations[:, :-1], hull.equations[:, -1]  # <a, x> + b <= 0
    slack = -(points @ normals.T + offsets)  # >= 0 for each facet inside
    inside = slack.min(axis=1) >= 0
    out = slack.min(axis=1)
    if not inside.all():
        out[~inside] = _distance_to_hull(points[~inside], polytope[hull.vertices])
    return out


def theorem51_distance(z: np.ndarray, value_matrix: np.ndarray,
                       polytope: np.ndarray | None = None,
                       split: ParanormalSplit | None = None) -> np.ndarray:
    """Each token's distance to ``H = (dK u {0}) x G`` of [GLPR23, Theorem 5.1].

    Args:
        z: ``(n, d)`` rescaled tokens.
        value_matrix: ``(d, d)`` paranormal V.
        polytope: ``(p, d)`` points whose F parts span K (their convex hull); None: the
            tokens ``z`` themselves (K is then the hull of the tokens' F parts at this
            time, as [GLPR23, Figure 8] draws it; module docstring).
        split: ``paranormal_split(value_matrix)``, if already made.

    Returns:
        ``(n,)`` Euclidean distances in R^d.

    Raises:
        ValueError: V not paranormal, or tokens of the wrong shape or not finite.
    """
    split = split if split is not None else paranormal_split(value_matrix)
    d = split.f_basis.shape[0]
    z = _tokens(z, d)
    k = z if polytope is None else _tokens(polytope, d)
    basis = split.to_complement  # coordinates in G^perp
    p, pk = z @ basis, k @ basis
    return np.minimum(_boundary_distance(p, pk), np.linalg.norm(p, axis=1))


def polytope_vertices(z: np.ndarray, value_matrix: np.ndarray, tolerance: float = 0.0,
                      split: ParanormalSplit | None = None) -> np.ndarray:
    """The tokens at the vertices of K, the convex hull of the tokens' F parts (in
    ``G^perp`` coordinates; tokens closer than ``tolerance`` there count as one point,
    reported by their first token: ``limit_geometry.hull_vertices``)."""
    split = split if split is not None else paranormal_split(value_matrix)
    return hull_vertices(_tokens(z, split.f_basis.shape[0]) @ split.to_complement,
                         tolerance)
