"""min over rotations R of W_p(mu, R_# nu) on S^{d-1}: a local search (alternating the
exact coupling of ``sphere_transport`` and a weighted Kabsch rotation) with several
starts. See ``wasserstein_modulo_rotation``.
"""
from __future__ import annotations

import numpy as np

from meanfield.metrics.sphere_transport import (
    EMD_COPIES,
    _check_memory,
    _prepare,
    geodesic_cost,
)

def _kabsch(h: np.ndarray) -> np.ndarray:
    """The rotation R maximising trace(R^T h), i.e. sum w <x, R y> for h = sum w x y^T."""
    u, _, vt = np.linalg.svd(h)
    s = np.ones(h.shape[0])
    s[-1] = np.sign(np.linalg.det(u @ vt)) or 1.0
    return (u * s) @ vt


def _random_rotation(d: int, rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    q *= np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def wasserstein_modulo_rotation(x, y, a=None, b=None, p: float = 2.0, *, starts: int = 8,
                                max_iter: int = 50, seed: int = 0
                                ) -> tuple[float, np.ndarray]:
    """min over rotations R of W_p(mu, R_# nu) on S^{d-1}, by alternating minimisation.

    From each start R (the identity, the rotation taking nu's mean direction to mu's, and
    ``starts - 2`` Haar-random ones), alternate (1) the exact coupling P of mu and R_# nu
    (network simplex) and (2) the rotation of the weighted Procrustes (Kabsch) problem
    max sum P_ij w_ij <x_i, R y_j>, with w_ij = d_ij^p / (2 - 2 cos d_ij) so that the
    chordal cost it minimises matches the geodesic cost d^p at the current R. Each
    candidate R is kept only if it lowers the cost, so the value never increases.

    A LOCAL method: the value is an upper bound on the minimum, exact when one start
    lands in the global basin (more starts, more confidence). Cost: up to
    ``starts x max_iter`` exact transports (each as ``sphere_wasserstein``) plus d x d SVDs.

    Returns:
        ``(value, R)``: the smallest W_p found and its rotation (``(d, d)``, det 1).
    """
    x, y, a, b, p = _prepare(x, y, a, b, p)
    n, m, d = x.shape[0], y.shape[0], x.shape[1]
    _check_memory(n, m, EMD_COPIES, "exact transport modulo rotation",
                  "a smaller sample (the rotation is a global parameter)")
    import ot

    rng = np.random.default_rng(seed)
    inits = [np.eye(d)]
    mx, my = a @ x, b @ y
    if np.linalg.norm(mx) > 1e-12 and np.linalg.norm(my) > 1e-12:
        inits.append(_kabsch(np.outer(mx, my)))
    while len(inits) < max(int(starts), 1):
        inits.append(_random_rotation(d, rng))
    best, best_r = np.inf, np.eye(d)
    bb = b * (a.sum() / b.sum())
    for r in inits:
        value = np.inf
        for _ in range(int(max_iter)):
            ry = y @ r.T
            cost = geodesic_cost(x, ry, p)
            plan = ot.emd(a, bb, cost, numItermax=max(10**6, 50 * n * m))
            new = float(np.sum(plan * cost))
            if not new < value * (1 - 1e-12):
                break
            value, r_cur = new, r
            cosine = np.clip(x @ ry.T, -1.0, 1.0)
            chord = 2.0 - 2.0 * cosine
            wts = np.where(chord > 1e-14, cost / np.maximum(chord, 1e-300), 1.0)
            r = _kabsch(x.T @ (plan * wts) @ y)
        if value < best:
            best, best_r = value, r_cur
    return max(best, 0.0) ** (1.0 / p), best_r
