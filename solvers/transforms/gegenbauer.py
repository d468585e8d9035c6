"""Orthonormal Gegenbauer polynomials of the normalized zonal measure on S^{d-1}, and the
Gauss quadrature of that measure.

A function on S^{d-1} (d >= 2) that depends only on ``t = <x, e>`` integrates against the
normalized surface measure as ``int f dsigma = int_{-1}^{1} f(t) w_d (1 - t^2)^{(d-3)/2}
dt`` with ``w_d = Gamma(d/2) / (sqrt(pi) Gamma((d-1)/2))``. The polynomials orthonormal for
that weight are the Gegenbauer polynomials ``C_l^{(lambda)}``, ``lambda = (d-2)/2``,
rescaled: ``Q_l(t) = C_l(t) / ||C_l||`` (so ``Q_0 = 1``); ``Q_l(<x, e>)`` is a spherical
harmonic of degree l, an eigenfunction of the Laplace-Beltrami operator with eigenvalue
``-l(l + d - 2)``.

Everything is computed from the three-term recurrence of the orthonormal polynomials,
``t Q_l = b_{l+1} Q_{l+1} + b_l Q_{l-1}``, whose coefficients are the square roots of the
monic ones, ``b_l^2 = l (l + 2 lambda - 1) / (4 (l + lambda)(l + lambda - 1))`` (l >= 2)
and ``b_1^2 = 1 / (2 (1 + lambda))`` (the limit, also at lambda = 0: Chebyshev, d = 2).
No Gamma function of d appears, so d = 4096 costs what d = 3 costs and nothing overflows
at the nodes (``|Q_l(t)| <= Q_l(1) = sqrt(dim of the degree-l harmonics)``, which only
overflows for l in the hundreds at d in the thousands, far outside where the nodes lie).

Gauss quadrature (Golub-Welsch): the nodes are the eigenvalues of the Jacobi matrix
(zero diagonal, off-diagonal ``b_1 .. b_{n-1}``), polished by one Newton step on ``Q_n``;
the weights are the Christoffel numbers ``1 / sum_{l<n} Q_l(t_i)^2`` (they sum to 1, the
measure's mass). ``n`` nodes integrate polynomials of degree ``2n - 1`` exactly.
"""
from __future__ import annotations

import numpy as np
from scipy import linalg


def recurrence(n: int, dim: int) -> np.ndarray:
    """``b_0 .. b_n`` of the orthonormal recurrence (``b_0 = 0``) for S^{dim-1}."""
    lam = (dim - 2) / 2
    b = np.zeros(n + 1)
    if n >= 1:
        b[1] = np.sqrt(1 / (2 * (1 + lam)))
    l = np.arange(2, n + 1, dtype=float)
    b[2:] = np.sqrt(l * (l + 2 * lam - 1) / (4 * (l + lam) * (l + lam - 1)))
    return b


def table(lmax: int, dim: int, t: np.ndarray, derivative: bool = False
          ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """``Q_l(t)`` for l = 0..lmax at the points ``t`` (shape ``(lmax + 1, len(t))``), and
    with ``derivative`` also ``Q_l'(t)`` (the recurrence differentiated)."""
    t = np.asarray(t, dtype=float)
    b = recurrence(lmax + 1, dim)
    q = np.zeros((lmax + 1,) + t.shape)
    dq = np.zeros_like(q) if derivative else None
    q[0] = 1.0
    if lmax >= 1:
        q[1] = t / b[1]
        if derivative:
            dq[1] = 1 / b[1]
    for l in range(1, lmax):
        q[l + 1] = (t * q[l] - b[l] * q[l - 1]) / b[l + 1]
        if derivative:
            dq[l + 1] = (q[l] + t * dq[l] - b[l] * dq[l - 1]) / b[l + 1]
    return (q, dq) if derivative else q


def degree_values(l: int, dim: int, t: np.ndarray) -> np.ndarray:
    """``P_l(t) = Q_l(t) / Q_l(1)``, the Gegenbauer polynomial normalized to 1 at t = 1
    (``cos(l theta)`` for d = 2, Legendre's ``P_l`` for d = 3); ``|P_l| <= 1`` on [-1, 1]."""
    t = np.asarray(t, dtype=float)
    values = table(l, dim, np.concatenate([t.ravel(), [1.0]]))[l]
    return (values[:-1] / values[-1]).reshape(t.shape)


def gauss_nodes(n: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``n`` Gauss nodes (increasing) and weights (summing to 1) of the normalized
    zonal measure of S^{dim-1}."""
    if n < 1:
        raise ValueError(f"a Gauss rule needs n >= 1 nodes, got {n}")
    b = recurrence(n, dim)
    if n == 1:
        return np.zeros(1), np.ones(1)
    t = linalg.eigh_tridiagonal(np.zeros(n), b[1:n], eigvals_only=True)
    # one Newton step on Q_n (the eigenvalues are accurate to a few ulps of the largest;
    # the step brings every node to its own ulps)
    q, dq = table(n, dim, t, derivative=True)
    t = t - q[n] / dq[n]
    t = 0.5 * (t - t[::-1])  # the rule is symmetric: make it so to the last bit
    q = table(n - 1, dim, t)
    w = 1.0 / np.sum(q * q, axis=0)
    w = 0.5 * (w + w[::-1])
    return t, w / w.sum()


def gradient_recurrence(lmax: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``(down, up)`` with ``(1 - t^2) Q_m'(t) = down_m Q_{m-1}(t) + up_m Q_{m+1}(t)``,
    m = 0..lmax: ``down_m = (m + d - 2) b_m``, ``up_m = -m b_{m+1}`` (``down_0 = 0``).

    ``(1 - t^2) f'(t)`` is the surface gradient of a zonal f paired with that of t
    (``grad f . grad g = (1 - t^2) f' g'``). Why two terms: ``G = (1 - t^2) d/dt`` raises
    the degree by one, and integrating by parts against the weight ``(1 - t^2)^{(d-3)/2}``
    gives ``<Q_k, G Q_m> + <Q_m, G Q_k> = (d - 1) <Q_m, t Q_k>``, which vanishes unless
    ``|k - m| = 1``; the leading coefficients give ``<Q_{m+1}, G Q_m> = -m b_{m+1}``, and
    the identity the other. The coefficients grow like m and d: no Gamma function of d."""
    b = recurrence(lmax + 1, dim)
    m = np.arange(lmax + 1, dtype=float)
    return (m + dim - 2) * b[: lmax + 1], -m * b[1: lmax + 2]


def laplacian_symbol(lmax: int, dim: int) -> np.ndarray:
    """``-l(l + d - 2)`` for l = 0..lmax: the Laplace-Beltrami eigenvalues of degree l."""
    l = np.arange(lmax + 1, dtype=float)
    return -l * (l + dim - 2)
