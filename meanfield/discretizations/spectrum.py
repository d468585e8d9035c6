"""The leading eigenvalues of the linearised PDE, ``F'(u)``, at a state.

``F'(u) v`` is the discretization's ``jvp`` (spectral entries: exact). Spectral states are
complex coefficients of a real density, and ``F`` is only real-linear in them, so the
operator is taken on ``R^{2m}`` (real and imaginary parts), restricted to the components
that change the density (the imaginary parts of the mean, of a Nyquist mode, of the
sphere's m = 0 coefficients do not; the diffusion alone would give them spurious
eigenvalues -l(l+1)/kappa). The symmetries (mass, rotations of a stationary state) give
zero eigenvalues; they are dropped (``|lambda| <= ZERO_RTOL`` times the spectral radius)
so that what is returned is the dynamics'.

Cost: dense (``2m <= DENSE_MAX``): 2m JVPs and one O((2m)^3) eigenvalue problem, every
eigenvalue to round-off; larger: ARPACK (``scipy.sparse.linalg.eigs``, largest real part).
"""
from __future__ import annotations

import numpy as np

DENSE_MAX = 3000
ZERO_RTOL = 1e-9


def _real_operator(disc, u: np.ndarray):
    """``F'(u)`` on the real components that change the density, and their number."""
    complex_state = np.iscomplexobj(u)
    m = u.size

    def to_state(x: np.ndarray) -> np.ndarray:
        return ((x[:m] + 1j * x[m:]) if complex_state else x).reshape(u.shape)

    def to_real(w: np.ndarray) -> np.ndarray:
        w = np.asarray(w).ravel()
        return np.concatenate([w.real, w.imag]) if complex_state else w.real

    size = 2 * m if complex_state else m
    used = np.array([np.any(disc.to_density(to_state(e)) != 0) for e in np.eye(size)])

    def matvec(x: np.ndarray) -> np.ndarray:
        full = np.zeros(size)
        full[used] = x
        return to_real(disc.jvp(u, to_state(full)))[used]

    return matvec, int(used.sum())


def leading_eigenvalues(disc, u: np.ndarray, count: int = 4) -> np.ndarray:
    """The ``count`` eigenvalues of ``F'(u)`` with the largest real parts, zero modes
    dropped, in decreasing order of the real part.

    Args:
        disc: a discretization with ``jvp(u, v)``.
        u: the state (e.g. a stationary state).
        count: how many to return.

    Returns:
        Complex array of at most ``count`` eigenvalues (units 1/time).
    """
    matvec, size = _real_operator(disc, np.asarray(u))
    if size <= DENSE_MAX:
        jac = np.column_stack([matvec(e) for e in np.eye(size)])
        lam = np.linalg.eigvals(jac)
    else:
        from scipy.sparse.linalg import LinearOperator, eigs

        op = LinearOperator((size, size), matvec=matvec, dtype=float)
        lam = eigs(op, k=min(count + 8, size - 2), which="LR", return_eigenvectors=False)
    scale = float(np.max(np.abs(lam))) if lam.size else 0.0
    lam = lam[np.abs(lam) > ZERO_RTOL * max(scale, 1.0)]
    return lam[np.argsort(-lam.real)][:count]
