"""The limit geometry of the rescaled tokens ([GLPR23, Table 1]).

Tokens are the rows of an ``(n, d)`` array z (the rescaled tokens ``z_i = e^{-tV} x_i``
of ``meanfield.model.weighted_attention.rescaled_velocity``, or plain tokens x):

- ``V = I``, ``Q^T K`` positive definite (Theorem 3.1): every z_i tends to 0 or to the
  boundary of a convex polytope K; for almost every initial sequence to a vertex of K
  (the leaders), and K has far fewer vertices than there are tokens. ``hull_vertices``
  and ``vertex_distance`` measure it on a configuration: the vertices of the convex hull of
  the tokens, tokens closer than ``tolerance`` counted as one point (a cluster that has
  not yet collapsed to its vertex would otherwise contribute several vertices), and each
  token's distance to the nearest vertex.
- A simple top eigenvalue ``lambda_1(V) > |lambda_2(V)|`` with ``<Q phi_1, K phi_1> > 0``
  (a good triple, Theorem 4.1): the coordinate of z_i along the leading eigenvector
  ``phi_1`` tends to one of at most three values (tokens end on at most three parallel
  hyperplanes). ``hyperplane_values`` returns those values: the coordinates clustered at
  ``tolerance``. The coordinate is the coefficient of ``phi_1`` when z is written in V's
  eigenbasis, ``<psi_1, z> / <psi_1, phi_1>`` with ``psi_1`` the left eigenvector: it is
  what the dynamics drives (``d/dt c_1(z_i) = lambda_1 sum_j P_ij (c_1(z_j) - c_1(z_i))``
  exactly, since ``c_1(V w) = lambda_1 c_1(w)``), and equals ``<z, phi_1>`` (unit
  ``phi_1``) for a symmetric (normal) V. The other eigen-coordinates may diverge (negative
  eigenvalues), so the orthogonal projection on ``phi_1`` of a non-normal V would not
  converge.
- ``V = -I``, ``Q^T K = I`` (Theorem C.5): the original tokens x (not the rescaled
  ``z = e^{t} x``, which grow) collapse to the origin. ``origin_distance`` is
  ``max_i |x_i|``.
"""
from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import ConvexHull, QhullError, cKDTree

# A direction along which the tokens extend less than this share of their diameter is
# flat (the set lies in a lower-dimensional affine subspace): qhull needs full dimension.
FLAT = 1e-12


def _tokens(z: np.ndarray, batch: bool = False) -> np.ndarray:
    z = np.asarray(z, dtype=float)
    if z.ndim < 2 or (not batch and z.ndim != 2) or z.shape[-2] < 1 or z.shape[-1] < 1:
        shape = "(..., n, d)" if batch else "(n, d)"
        raise ValueError(f"tokens must be an {shape} array of n >= 1 tokens of d >= 1 "
                         f"components, got shape {z.shape}")
    if not np.all(np.isfinite(z)):
        raise ValueError("tokens must be finite (found NaN or inf)")
    return z


def _check_tolerance(tolerance: float, name: str = "tolerance") -> float:
    if not (isinstance(tolerance, (int, float)) and np.isfinite(tolerance)
            and tolerance >= 0):
        raise ValueError(f"{name} must be a finite number >= 0 (a distance in units of "
                         f"the tokens), got {tolerance!r}")
    return float(tolerance)


def groups(z: np.ndarray, tolerance: float = 0.0) -> np.ndarray:
    """Single-linkage groups of tokens: i and j share a group when a chain of tokens, each
    within ``tolerance`` of the next, joins them (``tolerance = 0``: equal tokens only).

    Args:
        z: ``(n, d)`` tokens.
        tolerance: linking distance >= 0.

    Returns:
        ``(n,)`` int labels 0, 1, ... numbered by each group's first token.
    """
    z = _tokens(z)
    tolerance = _check_tolerance(tolerance)
    n = z.shape[0]
    pairs = cKDTree(z).query_pairs(tolerance, output_type="ndarray")
    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    _, first = np.unique(labels, return_index=True)
    rank = np.empty(first.size, dtype=int)
    rank[np.argsort(first)] = np.arange(first.size)  # number groups by first member
    return rank[labels]


def _extreme_points(points: np.ndarray) -> np.ndarray:
    """Indices of the vertices of the convex hull of distinct ``points`` (m, d), in the
    affine subspace they span (a flat set has its vertices there: d = 1 or a collinear
    set, the two ends)."""
    m = points.shape[0]
    if m == 1:
        return np.array([0])
    centred = points - points.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    coords = centred @ vt.T
    extent = np.ptp(coords, axis=0)
    keep = extent > FLAT * max(float(extent.max()), np.finfo(float).tiny)
    coords = coords[:, keep]
    if coords.shape[1] == 1:
        return np.unique([np.argmin(coords[:, 0]), np.argmax(coords[:, 0])])
    try:
        return np.sort(ConvexHull(coords).vertices)
    except QhullError as err:  # full-dimensional after the projection: should not happen
        raise ValueError(f"the convex hull of the tokens could not be computed ({err}); "
                         "a larger tolerance merges nearly coincident tokens") from err


def hull_vertices(z: np.ndarray, tolerance: float = 0.0) -> np.ndarray:
    """The tokens at the vertices of the convex hull of ``z``.

    Tokens are first merged into ``groups`` at ``tolerance`` and the hull is that of the
    group means; each vertex is reported by the first token of its group. A set that
    spans a lower-dimensional affine subspace (d = 1, collinear or coplanar tokens) has
    its hull taken in that subspace (in 1D: the smallest and the largest token).

    Args:
        z: ``(n, d)`` tokens, any d >= 1.
        tolerance: tokens closer than this (in chains) count as one point; 0 merges only
            equal tokens. Use it at the end of a run, where clusters have not fully
            collapsed: each cluster then counts once.

    Returns:
        Sorted int indices of the vertex tokens (one per vertex).

    Raises:
        ValueError: bad tokens or tolerance.
    """
    z = _tokens(z)
    labels = groups(z, tolerance)
    count = int(labels.max()) + 1
    means = np.zeros((count, z.shape[1]))
    np.add.at(means, labels, z)
    means /= np.bincount(labels, minlength=count)[:, None]
    _, first = np.unique(labels, return_index=True)  # labels are numbered by first token
    return np.sort(first[_extreme_points(means)])


def vertex_distance(z: np.ndarray, vertices: np.ndarray | None = None, *,
                    tolerance: float = 0.0) -> np.ndarray:
    """Each token's distance to the nearest vertex token.

    Args:
        z: ``(n, d)`` tokens.
        vertices: indices of the vertex tokens; None: ``hull_vertices(z, tolerance)``.
        tolerance: passed to ``hull_vertices`` when ``vertices`` is None.

    Returns:
        ``(n,)`` Euclidean distances (0 at the vertices themselves).

    Raises:
        ValueError: bad tokens, or vertex indices that are not tokens of ``z``.
    """
    z = _tokens(z)
    if vertices is None:
        vertices = hull_vertices(z, tolerance)
    idx = np.asarray(vertices)
    if idx.ndim != 1 or idx.size == 0 or idx.dtype.kind not in "iu" or np.any(idx < 0) \
            or np.any(idx >= z.shape[0]):
        raise ValueError(f"vertices must be a non-empty list of token indices in "
                         f"[0, {z.shape[0]}), got {vertices!r}")
    distance, _ = cKDTree(z[idx]).query(z)
    return distance


def leading_eigenvector(value_matrix: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """The leading eigenpair of a value matrix with a simple top eigenvalue.

    Args:
        value_matrix: ``(d, d)`` real V.

    Returns:
        ``(lambda_1, phi_1, psi_1)``: the eigenvalue, the unit right eigenvector (sign:
        its largest-magnitude component positive) and the left eigenvector scaled so that
        ``<psi_1, phi_1> = 1`` (so ``<psi_1, z>`` is the coefficient of ``phi_1`` in V's
        eigenbasis).

    Raises:
        ValueError: V not a finite square matrix, or its eigenvalue of largest modulus
            not real, positive and simple (``lambda_1 > |lambda_2|``, [GLPR23, Definition
            1]): then no single direction phi_1 exists and Theorem 4.1 says nothing.
    """
    v = np.asarray(value_matrix, dtype=float)
    if v.ndim != 2 or v.shape[0] != v.shape[1] or v.shape[0] < 1:
        raise ValueError(f"value_matrix must be a square (d, d) matrix, got shape "
                         f"{v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError("value_matrix must be finite (found NaN or inf)")
    lam, right = np.linalg.eig(v)
    order = np.argsort(-np.abs(lam))
    lam, right = lam[order], right[:, order]
    top = lam[0]
    scale = max(float(np.abs(top)), np.finfo(float).tiny)
    gap_ok = lam.size == 1 or np.abs(top) - np.abs(lam[1]) > 1e-9 * scale
    if not (abs(top.imag) <= 1e-12 * scale and top.real > 0 and gap_ok):
        shown = ", ".join(f"{x:.4g}" for x in lam[:3])
        raise ValueError(f"the value matrix needs a real, positive, simple eigenvalue of "
                         f"largest modulus (lambda_1 > |lambda_2|, a good triple of "
                         f"Theorem 4.1); its eigenvalues by modulus are {shown}")
    phi = np.real(right[:, 0])
    phi /= np.linalg.norm(phi)
    phi *= np.sign(phi[np.argmax(np.abs(phi))])
    lam_left, left = np.linalg.eig(v.T)
    psi = np.real(left[:, np.argmin(np.abs(lam_left - top.real))])
    psi /= psi @ phi  # psi_1 is not orthogonal to phi_1 for a simple eigenvalue
    return float(top.real), phi, psi


def leading_coordinates(z: np.ndarray, value_matrix: np.ndarray) -> np.ndarray:
    """The coefficient of ``phi_1`` of each token in V's eigenbasis, ``<psi_1, z_i>``
    (``<phi_1, z_i>`` for a symmetric V); ``z`` may be ``(..., n, d)``."""
    z = _tokens(z, batch=True)
    _, phi, psi = leading_eigenvector(value_matrix)
    if phi.size != z.shape[-1]:
        raise ValueError(f"value_matrix is {phi.size} x {phi.size} but the tokens have "
                         f"d = {z.shape[-1]} components")
    return z @ psi


def hyperplane_values(z: np.ndarray, value_matrix: np.ndarray,
                      tolerance: float) -> np.ndarray:
    """The distinct values of the tokens' coordinates along ``phi_1`` (Theorem 4.1).

    Args:
        z: ``(n, d)`` (rescaled) tokens.
        value_matrix: ``(d, d)`` V with a real, positive, simple eigenvalue of largest
            modulus.
        tolerance: sorted coordinates closer than this (in chains) are one value.

    Returns:
        The sorted values: the mean coordinate of each group. Tokens lie on the
        hyperplanes ``{z : <psi_1, z> = value}`` (perpendicular to ``phi_1`` when V is
        symmetric); at most three of them in the limit for a good triple.

    Raises:
        ValueError: bad tokens or tolerance, a V without a simple leading eigenvalue (see
            ``leading_eigenvector``) or of another dimension.
    """
    z = _tokens(z)
    tolerance = _check_tolerance(tolerance)
    c = np.sort(leading_coordinates(z, value_matrix))
    cuts = np.flatnonzero(np.diff(c) > tolerance) + 1
    return np.array([part.mean() for part in np.split(c, cuts)])


def origin_distance(z: np.ndarray) -> float | np.ndarray:
    """``max_i |z_i|``: the farthest token's distance to the origin (a float for
    ``(n, d)``; an array of the leading shape for a stack ``(..., n, d)``)."""
    r = np.max(np.linalg.norm(_tokens(z, batch=True), axis=-1), axis=-1)
    return float(r) if r.ndim == 0 else r
