"""The debiased Sinkhorn divergence on S^{d-1} with the geodesic cost d^p
(``sinkhorn_divergence``): ``S_eps = OT_eps(a, b) - (OT_eps(a, a) + OT_eps(b, b)) / 2``
([FSV+19]), with ``OT_eps`` the entropic transport with cost d^p and the
entropy relative to a x b, by Sinkhorn iterations with eps-annealing and absorbed
potentials (nothing overflows). It estimates W_p^p, not W_p; its bias is measured in
``SINKHORN_BIAS``: for p = 2, ``0 <= W2^2 - S_eps <= 0.15 eps log(1/eps)`` on those
problems.

The atoms, their validation and the exact transport it is measured against are
``meanfield.metrics.sphere_transport``'s.
"""
from __future__ import annotations

import math

import numpy as np

from meanfield.metrics.sphere_transport import _check_memory, _prepare, geodesic_cost

# Dense n x m arrays of our Sinkhorn: the cost and two work arrays of the log-sum-exp.
SINKHORN_COPIES = 4

# Measured bias of the debiased Sinkhorn divergence (p = 2, cost d^2 in rad^2) against
# the exact W2^2 (network simplex), on 6 random problems on S^2 (uniform and clustered
# atoms, random weights in [0.5, 1.5], sizes n x m = 100 x 150, 100 x 100, 300 x 200,
# 300 x 300, 1000 x 700, 700 x 1000): eps -> max over problems of W2^2 - S_eps. In all
# 24 cases S_eps <= W2^2 (an underestimate), largest on the smallest, most spread
# problem (100 x 150 uniform); on the 1000-atom problems it was 2.6-3.6e-3 (eps = 0.1,
# 0.03), 1.8-1.9e-3 (0.01), 0.9e-3 (0.003).
SINKHORN_BIAS = {0.1: 2.75e-2, 0.03: 1.32e-2, 0.01: 5.41e-3, 0.003: 1.72e-3}
# max |S_eps - W2^2| / (eps log(1/eps)) over those 24 cases was 0.125
SINKHORN_BIAS_CONSTANT = 0.15
def sinkhorn_bias_bound(eps: float) -> float:
    """The stated bias bound |S_eps - W2^2| <= 0.15 eps log(1/eps) (rad^2), measured for
    0.003 <= eps <= 0.1 on the problems of ``SINKHORN_BIAS`` (an empirical bound, not a
    theorem: at fixed eps the bias does not vanish as n grows, and it is largest for
    small, spread-out samples)."""
    eps = float(eps)
    return SINKHORN_BIAS_CONSTANT * eps * math.log(1.0 / eps)


def _lse_rows(z: np.ndarray) -> np.ndarray:
    """log sum_j exp(z_ij) for each row, stably."""
    zmax = z.max(axis=1, keepdims=True)
    out = np.exp(z - zmax).sum(axis=1)
    return np.log(out) + zmax[:, 0]


def _entropic(cost, a, b, eps, tol, max_iter, symmetric=False):
    """OT_eps(a, b) by stabilised Sinkhorn with eps-annealing; its dual value.

    Potentials f (rows), g (columns) with the plan ``P_ij = a_i b_j exp((f_i + g_j -
    C_ij)/eps)``. (1) Annealing in the log domain: eps from the cost's maximum down to the
    target by a factor 0.7 per step, one f, g update each (f = -eps LSE_j((g_j - C_ij)/eps
    + log b_j), the same for g). (2) At the target, scaling iterations on the kernel with
    the potentials absorbed ([Sch19]): ``K_ij = a_i b_j exp((f_i + g_j - C_ij)/eps)``
    (entries <= ~1, nothing overflows; far pairs underflow to 0, carrying no mass),
    ``u = a / (K v)``, ``v = b / (K^T u)`` (matrix-vector products, ~10x cheaper than
    log-sum-exps), absorbed into f, g every 50 iterations, until the L1 marginal error is
    below ``tol``. The dual value <a, f> + <b, g> equals OT_eps = <P, C> + eps KL(P | a x b)
    at convergence (its error is about the marginal error times the cost's range).
    ``symmetric`` (a = b, C = C^T): the averaged update f = (f + T f) / 2 of Feydy et al.
    (u = sqrt(u a / (K u))), which converges where the alternating one oscillates.
    """
    la, lb = np.log(a), np.log(b)
    big = float(cost.max()) if cost.size else 1.0
    f = np.zeros(a.size)
    g = np.zeros(b.size)
    e = max(big, eps)
    while True:
        if symmetric:
            f = 0.5 * (f - e * _lse_rows((f[None, :] - cost) / e + la[None, :]))
            g = f
        else:
            g = -e * _lse_rows((f[None, :] - cost.T) / e + la[None, :])
            f = -e * _lse_rows((g[None, :] - cost) / e + lb[None, :])
        if e == eps:
            break
        e = max(e * 0.7, eps)
    err = np.inf
    done = 0
    while done < max_iter:
        kernel = np.exp((f[:, None] + g[None, :] - cost) / eps + la[:, None] + lb[None, :])
        u = np.ones(a.size)
        v = np.ones(b.size)
        for it in range(50):
            if symmetric:
                u = np.sqrt(u * a / (kernel @ u))
                v = u
            else:
                u = a / (kernel @ v)
                v = b / (kernel.T @ u)
        done += 50
        f = f + eps * np.log(u)
        g = f if symmetric else g + eps * np.log(v)
        ku = kernel.T @ u
        err = np.abs(v * ku - b).sum() + np.abs(u * (kernel @ v) - a).sum()
        if not np.isfinite(err):
            break
        if err < tol:
            return float(a @ f + b @ g)
    raise RuntimeError(f"Sinkhorn did not converge at eps = {eps:g}: marginal error "
                       f"{err:.3g} > {tol:g} after {done} iterations (raise reg)")


def sinkhorn_divergence(x, y, a=None, b=None, p: float = 2.0, reg: float = 0.01, *,
                        tol: float = 1e-6, max_iter: int = 20000) -> float:
    """Debiased Sinkhorn divergence S_eps with cost d^p: an estimate of W_p^p.

    ``S_eps = OT_eps(a, b) - (OT_eps(a, a) + OT_eps(b, b)) / 2``, ``OT_eps`` the entropic
    transport cost with regularisation ``reg`` (in the cost's units, rad^p) and entropy
    relative to a x b; S_eps >= 0 and -> W_p^p as eps -> 0 ([FSV+19]).

    Bias (p = 2, measured against the exact W2^2 by the network simplex on 6 random
    problems on S^2, uniform and clustered atoms, sizes 100..1000, random weights; see
    ``SINKHORN_BIAS``): always S_eps <= W2^2, and
    ``W2^2 - S_eps <= 0.15 eps log(1/eps)`` (``sinkhorn_bias_bound``) for
    eps in {0.1, 0.03, 0.01, 0.003}: at most 2.8e-2, 1.3e-2, 5.4e-3, 1.7e-3 rad^2. The
    bias of the W_2 estimate ``S_eps^{1/2}`` is then about ``bound / (2 W2)``.

    Cost: three dense solves (n x m, n x n, m x m); per iteration two matrix-vector
    products; measured (2 shared cores) 0.7 / 1.1 / 1.4 / 2.4 s at n = m = 300 for
    eps = 0.1 / 0.03 / 0.01 / 0.003, 5-34 s at 1000 x 700, where the network simplex
    took 0.06 s and 0.2-0.6 s: on CPU it is no faster than the exact method at these
    sizes; it is a smooth, regularised quantity. Memory ``SINKHORN_COPIES`` dense arrays
    of the larger size (refused above ``MEMORY_LIMIT_BYTES``, then use ``"sliced"``).

    Args:
        x, y: unit vectors ``(n, d)``, ``(m, d)``.
        a, b: weights (``None``: uniform; normalised).
        p: order of the cost d^p.
        reg: eps > 0, in rad^p.
        tol: L1 marginal error at which the iterations stop.
        max_iter: iterations at the target eps before a ``RuntimeError``.

    Returns:
        S_eps (in rad^p, comparable to W_p^p).
    """
    x, y, a, b, p = _prepare(x, y, a, b, p)
    reg = float(reg)
    if not (math.isfinite(reg) and reg > 0):
        raise ValueError(f"reg must be a finite number > 0, got {reg}")
    n, m = x.shape[0], y.shape[0]
    _check_memory(max(n, m), max(n, m), SINKHORN_COPIES, "the dense Sinkhorn divergence",
                  'method="sliced"')
    ab = _entropic(geodesic_cost(x, y, p), a, b, reg, tol, max_iter)
    aa = _entropic(geodesic_cost(x, x, p), a, a, reg, tol, max_iter, symmetric=True)
    bb = _entropic(geodesic_cost(y, y, p), b, b, reg, tol, max_iter, symmetric=True)
    return max(ab - 0.5 * (aa + bb), 0.0)
