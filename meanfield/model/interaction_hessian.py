"""The gradient and Hessian of the interaction energy of n tokens on S^{d-1}, in tangent
coordinates (``meanfield.model.particles.interaction_energy`` is the energy).

With ``K_ij = e^{beta <x_i, x_j>}`` the energy is ``E = (1/(2 beta n^2)) sum_ij K_ij``
(less a constant), and its Euclidean gradient is ``d E/d x_i = (1/n^2) sum_j K_ij x_j``.
On the product of spheres the Riemannian gradient projects it on the tangent spaces, and
the Riemannian Hessian is ``P (nabla^2 E) P - <x_i, d E/d x_i> P`` (the second term is the
sphere's curvature: the Weingarten map). For tangent vectors ``u_i, v_i`` (``u_i ⟂ x_i``)
and ``i != j`` this gives (docs/studies/critical-points.md derives it)

    grad_i        = (1/n^2) sum_{k != i} K_ik P_i x_k,
    Hess[u, v]_ij = (1/n^2) K_ij (<u_i, v_j> + beta <u_i, x_j> <x_i, v_j>),
    Hess[u, v]_ii = (1/n^2) sum_{k != i} K_ik (beta <u_i, x_k> <x_k, v_i>
                                               - <x_i, x_k> <u_i, v_i>),

the self-term ``K_ii = e^beta`` dropping out (it is constant on the sphere). Both are
written in an orthonormal basis ``B_i`` (d, d - 1) of each tangent space: on S^1
``B_i = (-sin theta_i, cos theta_i)``, so the coordinates are the angles and the Hessian is
the Hessian of E in the angles. The Hessian is that along geodesics (the exponential map
``exp_map``), so a second difference of the energy along a geodesic checks it at any
point, and at a critical point it is the Hessian in any chart.

The kernel is formed as ``e^{beta (<x_i, x_j> - 1)}`` and the results multiplied by
``e^beta`` (finite while ``beta`` <= 700), so that no intermediate overflows.
"""
from __future__ import annotations

import numpy as np


def tangent_basis(x: np.ndarray) -> np.ndarray:
    """An orthonormal basis of each token's tangent space.

    Args:
        x: (n, d) unit vectors.

    Returns:
        (n, d, d - 1): ``B[i]``'s columns span ``x_i^⟂``. On S^1 (d = 2) the single
        column is ``(-sin theta, cos theta)`` (the direction of increasing angle); for
        d >= 3 the last d - 1 columns of the Householder reflection that maps ``x_i`` to
        ``±e_1`` (no cancellation: the sign is ``x_i1``'s).
    """
    x = np.asarray(x, dtype=float)
    n, d = x.shape
    if d == 2:
        return np.stack([-x[:, 1], x[:, 0]], axis=1)[:, :, None]
    s = np.where(x[:, 0] >= 0, 1.0, -1.0)
    w = x.copy()
    w[:, 0] += s  # x + s e_1, |.| >= 1
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    q = np.eye(d)[None] - 2.0 * w[:, :, None] * w[:, None, :]  # Q e_1 = -s x
    return q[:, :, 1:]


def exp_map(x: np.ndarray, step: np.ndarray, basis: np.ndarray | None = None) -> np.ndarray:
    """Each token moved along its geodesic: ``exp_{x_i}(B_i s_i)``.

    Args:
        x: (n, d) unit vectors.
        step: (n, d - 1) tangent coordinates (the flattened (n (d - 1),) is accepted).
        basis: ``tangent_basis(x)`` if already at hand.

    Returns:
        (n, d) unit vectors (on S^1: the angles plus ``step``, exactly).
    """
    x = np.asarray(x, dtype=float)
    b = tangent_basis(x) if basis is None else basis
    n, d = x.shape
    v = np.einsum("ida,ia->id", b, np.reshape(step, (n, d - 1)))
    r = np.linalg.norm(v, axis=1, keepdims=True)
    sinc = np.where(r > 0, np.sin(r) / np.where(r > 0, r, 1.0), 1.0)
    y = np.cos(r) * x + sinc * v
    return y / np.linalg.norm(y, axis=1, keepdims=True)


def _pieces(x: np.ndarray, beta: float, basis: np.ndarray | None):
    """The Gram matrix, the scaled kernel (diagonal zeroed), ``T_ik = B_i^T x_k``."""
    x = np.asarray(x, dtype=float)
    b = tangent_basis(x) if basis is None else basis
    gram = np.clip(x @ x.T, -1.0, 1.0)
    k = np.exp(beta * (gram - 1.0))
    np.fill_diagonal(k, 0.0)  # the self-term is constant on the sphere
    t = np.einsum("ida,kd->ika", b, x)
    return x, b, gram, k, t


def gradient(x: np.ndarray, beta: float, basis: np.ndarray | None = None) -> np.ndarray:
    """The Riemannian gradient of E_beta in tangent coordinates.

    Args:
        x: (n, d) unit vectors.
        beta: the inverse temperature (>= 0, <= 700).
        basis: ``tangent_basis(x)`` if already at hand.

    Returns:
        (n (d - 1),): token i's block is ``(1/n^2) sum_k K_ik B_i^T x_k``, which is
        ``v(x_i)/n`` of the USA field (on S^1: ``dE/dtheta_i``).
    """
    x, _, _, k, t = _pieces(x, beta, basis)
    n = x.shape[0]
    g = np.einsum("ik,ika->ia", k, t) * (np.exp(beta) / n**2)
    return g.reshape(-1)


def hessian(x: np.ndarray, beta: float, basis: np.ndarray | None = None) -> np.ndarray:
    """The Riemannian Hessian of E_beta in tangent coordinates (module docstring).

    Args:
        x: (n, d) unit vectors.
        beta: the inverse temperature (>= 0, <= 700).
        basis: ``tangent_basis(x)`` if already at hand.

    Returns:
        (n (d - 1), n (d - 1)) symmetric; token i's rows are ``i (d - 1) .. (i + 1)(d - 1)``
        (on S^1: the Hessian in the angles, whose rows sum to 0).
    """
    x, b, gram, k, t = _pieces(x, beta, basis)
    n, d = x.shape
    m = d - 1
    # off-diagonal blocks: K_ij (B_i^T B_j + beta T_ij T_ji^T)
    bb = np.einsum("ida,jdc->ijac", b, b)
    outer = t[:, :, :, None] * t.transpose(1, 0, 2)[:, :, None, :]  # T_ij T_ji^T
    blocks = k[:, :, None, None] * (bb + beta * outer)
    # diagonal blocks: sum_k K_ik (beta T_ik T_ik^T - G_ik I)
    diag = beta * np.einsum("ik,ika,ikc->iac", k, t, t) \
        - np.einsum("ik,ik->i", k, gram)[:, None, None] * np.eye(m)[None]
    idx = np.arange(n)
    blocks[idx, idx] = diag
    h = blocks.transpose(0, 2, 1, 3).reshape(n * m, n * m) * (np.exp(beta) / n**2)
    return 0.5 * (h + h.T)  # symmetric to round-off; exactly so


def orbit_dimension(x: np.ndarray, tolerance: float = 1e-8) -> int:
    """The dimension of the orbit of the configuration under the rotations SO(d): the
    number of zero modes of the Hessian that the symmetry forces at a critical point.

    Rotations that fix every token fix their span (dimension r), so the continuous
    stabiliser is SO(d - r) and the orbit has dimension ``d(d - 1)/2 - (d - r)(d - r - 1)/2``
    (on S^1: 1; a single cluster or two antipodal ones on S^{d-1}: d - 1).

    Args:
        x: (n, d) unit vectors.
        tolerance: singular values of ``x`` below ``tolerance`` times the largest do not
            count toward the span.
    """
    x = np.asarray(x, dtype=float)
    d = x.shape[1]
    s = np.linalg.svd(x, compute_uv=False)
    r = int(np.sum(s > tolerance * s[0]))
    return d * (d - 1) // 2 - (d - r) * (d - r - 1) // 2
