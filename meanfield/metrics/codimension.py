"""The codimension conjecture and good triples of [GLPR23, §4].

[GLPR23, Conjecture 4.2]: with k >= 1 the number of eigenvalues of V with positive real
part, the rescaled tokens ``z_i(t)`` approach at most three parallel affine subspaces of
codimension k. Written in V's eigenbasis, ``z = sum_j c_j(z) phi_j``, the subspaces are
the level sets of the k coordinates ``c_j`` along the eigenvectors with ``Re lambda_j >
0``: the conjecture says the k-vector ``(c_j(z_i))_j`` takes at most three values in the
limit. ``positive_eigen_coordinates`` gives these k real coordinates (a complex pair
``lambda, conj(lambda)`` gives the real and imaginary parts of the coefficient of its
eigenvector: the coordinates of its real invariant plane), ``codimension_values`` their
distinct values at a tolerance, the subspaces the tokens are on.

Why they converge where Re lambda_j > 0: ``c_j(V w) = lambda_j c_j(w)``, so the
coordinates obey ``d/dt c_j(z_i) = lambda_j sum_j' P_ij' (c_j(z_j') - c_j(z_i))``
exactly; once P is Boolean (each token attends to one leader, its row ``e_l``) every
coordinate moves as ``d/dt (c_j(z_i) - c_j(z_l)) = -lambda_j (c_j(z_i) - c_j(z_l))``: the
spread about the leader decays like ``e^{-Re lambda_j t}`` and grows like
``e^{|lambda_j| t}`` along a negative eigenvalue (the divergence of [GLPR23, Figure 7]).

[GLPR23, Definition 1]: (Q, K, V) is a *good triple* when V's eigenvalue of largest
modulus is real, positive and simple (``lambda_1 > |lambda_2|``) and ``<Q phi_1, K phi_1>
> 0``. ``good_triple`` tests one; ``good_triple_shares`` draws Gaussian triples (the real
Ginibre ensemble: i.i.d. N(0, 1/d) entries) and counts how many pass each condition (the
paper reports "about 14%" of Ginibre matrices in d = 128 for the first condition;
``examples/weights_good_triples.py`` measures both shares).
"""
from __future__ import annotations

import numpy as np

from meanfield.metrics.limit_geometry import groups

# An eigenvalue counts as positive (real part) above this share of the largest modulus;
# a real eigenvalue is real when its imaginary part is below it.
EIGEN_TOLERANCE = 1e-10


def _square(matrix: np.ndarray, name: str) -> np.ndarray:
    a = np.asarray(matrix, dtype=float)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] < 1:
        raise ValueError(f"{name} must be a square (d, d) matrix, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return a


def positive_coordinate_map(value_matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The real ``(k, d)`` matrix W with ``W z`` the k coordinates of ``z`` along V's
    eigenvectors of positive real part (module docstring), and their eigenvalues.

    Args:
        value_matrix: ``(d, d)`` real V, diagonalisable (its eigenvector matrix
            invertible).

    Returns:
        ``(W, eigenvalues)``: rows ordered by decreasing real part; a complex pair gives
        two rows (the real and imaginary parts of its coefficient) and its eigenvalue
        twice.

    Raises:
        ValueError: V not square and finite, no eigenvalue with positive real part, or V
            not diagonalisable (eigenvectors numerically dependent).
    """
    v = _square(value_matrix, "value_matrix")
    lam, right = np.linalg.eig(v)
    scale = max(float(np.abs(lam).max()), np.finfo(float).tiny)
    if np.linalg.cond(right) > 1e12:
        raise ValueError("the value matrix is not diagonalisable (its eigenvectors are "
                         "numerically dependent): the eigen-coordinates are undefined")
    left = np.linalg.inv(right)  # rows: the coefficients of the eigenvectors
    rows, values = [], []
    for j in np.argsort(-lam.real):
        mu = lam[j]
        if mu.real <= EIGEN_TOLERANCE * scale:
            continue
        if abs(mu.imag) <= EIGEN_TOLERANCE * scale:
            rows.append(np.real(left[j]))
            values.append(float(mu.real))
        elif mu.imag > 0:  # one row pair per conjugate pair
            rows += [np.real(left[j]), np.imag(left[j])]
            values += [complex(mu), complex(mu)]
    if not rows:
        raise ValueError("the value matrix has no eigenvalue with positive real part "
                         "(k = 0): Conjecture 4.2 needs k >= 1")
    return np.array(rows), np.array(values)


def positive_eigen_coordinates(z: np.ndarray, value_matrix: np.ndarray) -> np.ndarray:
    """``(..., n, k)``: each token's k coordinates along V's eigenvectors of positive real
    part (``positive_coordinate_map``); ``z`` may be a stack ``(..., n, d)``."""
    w, _ = positive_coordinate_map(value_matrix)
    z = np.asarray(z, dtype=float)
    if z.ndim < 2 or z.shape[-1] != w.shape[1]:
        raise ValueError(f"tokens must be an (..., n, {w.shape[1]}) array for a "
                         f"{w.shape[1]} x {w.shape[1]} V, got shape {z.shape}")
    return z @ w.T


def codimension_values(z: np.ndarray, value_matrix: np.ndarray, tolerance: float
                       ) -> tuple[np.ndarray, np.ndarray]:
    """The distinct k-vectors of positive eigen-coordinates (Conjecture 4.2).

    Args:
        z: ``(n, d)`` rescaled tokens.
        value_matrix: ``(d, d)`` V.
        tolerance: k-vectors closer than this (in chains, Euclidean) are one value.

    Returns:
        ``(values, labels)``: ``(m, k)`` group means (the m parallel subspaces of
        codimension k; at most three in the limit, by the conjecture) and the ``(n,)``
        group of each token.
    """
    c = positive_eigen_coordinates(z, value_matrix)
    if c.ndim != 2:
        raise ValueError("codimension_values takes one (n, d) configuration")
    labels = groups(c, tolerance)
    count = int(labels.max()) + 1
    means = np.zeros((count, c.shape[1]))
    np.add.at(means, labels, c)
    return means / np.bincount(labels, minlength=count)[:, None], labels


def group_spread(coordinates: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``(..., k)``: per coordinate, the largest range within a group of ``labels``
    (coordinates ``(..., n, k)``, e.g. a time series with the groups of the last
    time)."""
    c = np.asarray(coordinates, dtype=float)
    out = np.zeros(c.shape[:-2] + c.shape[-1:])
    for g in np.unique(labels):
        part = c[..., labels == g, :]
        out = np.maximum(out, part.max(axis=-2) - part.min(axis=-2))
    return out


def good_triple(query: np.ndarray, key: np.ndarray, value: np.ndarray,
                tolerance: float = EIGEN_TOLERANCE) -> bool:
    """[GLPR23, Definition 1]: V's eigenvalue of largest modulus real, positive and simple
    (``lambda_1 > |lambda_2|``), and ``<Q phi_1, K phi_1> > 0``."""
    q, k, v = _square(query, "query"), _square(key, "key"), _square(value, "value")
    ok, phi = _leading_real(v, tolerance)
    return bool(ok and (q @ phi) @ (k @ phi) > 0)


def _top_eigenvalue(lam: np.ndarray, tolerance: float) -> tuple[complex, bool, bool]:
    """``(lambda_1, real, good)``: the eigenvalue of largest modulus, whether it is real,
    and whether it is real, positive and simple (Definition 1's first condition)."""
    order = np.argsort(-np.abs(lam))
    top = lam[order[0]]
    scale = max(float(abs(top)), np.finfo(float).tiny)
    simple = lam.size == 1 or abs(top) - abs(lam[order[1]]) > tolerance * scale
    real = abs(top.imag) <= tolerance * scale
    return complex(top), bool(real), bool(real and top.real > 0 and simple)


def _leading_real(v: np.ndarray, tolerance: float) -> tuple[bool, np.ndarray]:
    top, _, ok = _top_eigenvalue(np.linalg.eigvals(v), tolerance)
    if not ok:
        return False, np.zeros(v.shape[0])
    # the eigenvector of a simple real eigenvalue: the null space of V - lambda_1 I
    _, _, vt = np.linalg.svd(v - top.real * np.eye(v.shape[0]))
    return True, vt[-1]


def good_triple_shares(d: int, samples: int, seed: int = 0) -> dict:
    """Draw ``samples`` Gaussian triples (i.i.d. N(0, 1/d) entries, independent Q, K, V)
    and count the good ones.

    Returns:
        ``{"value": share of V whose top eigenvalue is real, positive and simple,
        "real": share whose top eigenvalue is real (either sign), "triple": share of good
        triples, "samples": samples, "d": d}``; each share with its binomial standard
        error under the key ``<name>_error``.
    """
    if not (isinstance(d, int) and d >= 1 and isinstance(samples, int) and samples >= 1):
        raise ValueError(f"d and samples must be integers >= 1, got {d!r}, {samples!r}")
    rng = np.random.default_rng(seed)
    counts = {"value": 0, "real": 0, "triple": 0}
    for _ in range(samples):
        q, k, v = rng.standard_normal((3, d, d)) / np.sqrt(d)
        top, real, ok = _top_eigenvalue(np.linalg.eigvals(v), EIGEN_TOLERANCE)
        counts["real"] += real
        counts["value"] += ok
        if ok:
            _, _, vt = np.linalg.svd(v - top.real * np.eye(d))
            phi = vt[-1]
            counts["triple"] += bool((q @ phi) @ (k @ phi) > 0)
    out: dict = {"samples": samples, "d": d}
    for name, c in counts.items():
        p = c / samples
        out[name], out[f"{name}_error"] = p, float(np.sqrt(p * (1 - p) / samples))
    return out
