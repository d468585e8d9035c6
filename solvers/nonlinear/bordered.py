"""The bordered system of pseudo-arclength continuation: ``F(x, lam)`` in the joined
unknown ``y = (x, lam)`` of ``R^{m+1}``, its Jacobian-vector products ``[F_x F_lam] w``
(exact where the caller gives them, forward differences of accuracy ``O(sqrt(eps))``
else), the corrector (Newton on ``[F(y); <row, y> - target] = 0``: the chord method of
``solvers.nonlinear.dense`` for small systems, ``newton_krylov`` for larger ones) and the
unit tangent (the null vector of ``[F_x F_lam]`` from the bordered system
``[F_x F_lam; ref^T] z = [0; 1]``). ``solvers.nonlinear.continuation`` drives it.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.sparse.linalg import LinearOperator

from solvers.nonlinear.dense import DENSE_UP_TO, DenseJacobian, chord_newton
from solvers.nonlinear.newton import _gmres, newton_krylov

__all__ = ["LINEAR_SOLVERS", "BorderedSystem", "Residual"]

_SQRT_EPS = float(np.sqrt(np.finfo(float).eps))
LINEAR_SOLVERS = ("auto", "dense", "krylov")

Residual = Callable[[np.ndarray, float], np.ndarray]


class BorderedSystem:
    """``F`` and its derivatives in the joined unknown ``y = (x, lam)``, and the two
    bordered solves of the continuation: the corrector and the tangent.

    Args:
        residual: ``F(x, lam) -> array (m,)``.
        jvp_x: ``jvp_x(x, lam, v) -> F_x v``, or None (forward differences).
        dF_dlam: ``dF_dlam(x, lam) -> F_lam``, or None (forward differences).
        m: the size of ``x``.
        precondition: ``M r ~ F_x^{-1} r``, or None.
        linear_solver: "auto", "dense" or "krylov" (see ``continue_branch``).
        jacobian: ``jacobian(x, lam) -> F_x`` for the dense solver, or None.

    Raises:
        ValueError: an unknown ``linear_solver``.
    """

    def __init__(self, residual: Residual, jvp_x, dF_dlam, m: int, precondition=None,
                 linear_solver: str = "auto", jacobian=None):
        self.residual, self.jvp_x, self.dF_dlam, self.m = residual, jvp_x, dF_dlam, m
        self.precondition = precondition
        self._cache_y: np.ndarray | None = None
        self._cache_f: np.ndarray | None = None
        self._cache_flam: np.ndarray | None = None
        if linear_solver not in LINEAR_SOLVERS:
            raise ValueError(f"linear_solver must be one of {LINEAR_SOLVERS}, got "
                             f"{linear_solver!r}")
        dense = (linear_solver == "dense" or jacobian is not None
                 or (linear_solver == "auto" and m + 1 <= DENSE_UP_TO))
        self.jacobian_x = jacobian
        # A user's jacobian is one call (S^1: the cost of 5-15 products): the tangent
        # forms it anew at each point (2 refinement products first never sufficed on
        # the S^1 branches: 150 formations for 149 points). Formed column by column
        # (m + 1 products) the refinement may spend up to half that first (Bratu,
        # m = 40: 0.54 formations a point, against 1.2 with 4 refinement steps).
        refine = 0 if jacobian is not None else max(2, (m + 1) // 2)
        self.dense = (DenseJacobian(self._dense_jacobian, refine_steps=refine)
                      if dense else None)
        # a correction this short lets ds grow: Newton converges quadratically (3 steps
        # from a good predictor), the chord method linearly (about twice as many)
        self.easy_iterations = 6 if dense else 3

    def _dense_jacobian(self, y: np.ndarray) -> np.ndarray:
        """``[F_x F_lam]`` at ``y``: the user's ``jacobian`` or one product a column."""
        if self.jacobian_x is not None:
            fx = np.asarray(self.jacobian_x(y[:-1], float(y[-1])), dtype=float)
            if fx.shape != (self.m, self.m):
                raise ValueError(f"jacobian returned shape {fx.shape}, expected "
                                 f"({self.m}, {self.m})")
            return np.column_stack([fx, self._flam(y)])
        eye = np.eye(self.m + 1)
        return np.column_stack([self.jvp(y, e) for e in eye])

    def f(self, y: np.ndarray) -> np.ndarray:
        out = np.asarray(self.residual(y[:-1], float(y[-1])), dtype=float)
        if out.shape != (self.m,):
            raise ValueError(f"residual returned shape {out.shape} for x of shape "
                             f"({self.m},); the system must be square in x")
        return out

    def _at(self, y: np.ndarray) -> None:
        if self._cache_y is None or not np.array_equal(self._cache_y, y):
            self._cache_y, self._cache_f, self._cache_flam = y.copy(), None, None

    def _fy(self, y: np.ndarray) -> np.ndarray:
        self._at(y)
        if self._cache_f is None:
            self._cache_f = self.f(y)
        return self._cache_f

    def _flam(self, y: np.ndarray) -> np.ndarray:
        self._at(y)
        if self._cache_flam is None:
            if self.dF_dlam is not None:
                self._cache_flam = np.asarray(self.dF_dlam(y[:-1], float(y[-1])),
                                              dtype=float)
            else:
                h = _SQRT_EPS * max(1.0, abs(float(y[-1])))
                yh = y.copy()
                yh[-1] += h
                self._cache_flam = (self.f(yh) - self._fy(y)) / h
        return self._cache_flam

    def jvp(self, y: np.ndarray, w: np.ndarray) -> np.ndarray:
        """``[F_x F_lam] w``: exact where given, forward differences (O(sqrt eps)) else."""
        if self.jvp_x is None and self.dF_dlam is None:
            wn = float(np.linalg.norm(w))
            if wn == 0.0:
                return np.zeros(self.m)
            h = _SQRT_EPS * max(1.0, float(np.linalg.norm(y))) / wn
            return (self.f(y + h * w) - self._fy(y)) / h
        if self.jvp_x is None:
            v = w[:-1]
            vn = float(np.linalg.norm(v))
            jv = np.zeros(self.m)
            if vn > 0.0:
                h = _SQRT_EPS * max(1.0, float(np.linalg.norm(y[:-1]))) / vn
                yh = y.copy()
                yh[:-1] += h * v
                jv = (self.f(yh) - self._fy(y)) / h
        else:
            jv = np.asarray(self.jvp_x(y[:-1], float(y[-1]), w[:-1]), dtype=float)
        return jv + w[-1] * self._flam(y)

    def correct(self, y_pred: np.ndarray, row: np.ndarray, target: float, tol: float,
                max_iter: int):
        """Newton on ``[F(y); <row, y> - target] = 0`` from ``y_pred``."""
        def g(y):
            return np.append(self.f(y), row @ y - target)

        if self.dense is not None:
            return chord_newton(g, y_pred, self.dense, row, tol=tol, max_iter=3 * max_iter)

        def g_jvp(y, w):
            return np.append(self.jvp(y, w), row @ w)

        return newton_krylov(g, y_pred, jvp=g_jvp, precondition=self.prec, tol=tol,
                             max_iter=max_iter)

    @property
    def prec(self):
        """The block preconditioner ``diag(M, 1)`` on ``(x, lam)``, or None."""
        if self.precondition is None:
            return None

        def apply(w):
            w = np.ravel(w)
            return np.append(np.asarray(self.precondition(w[:-1]), dtype=float), w[-1])

        return apply

    def tangent(self, y: np.ndarray, ref: np.ndarray) -> np.ndarray | None:
        """Unit null vector of ``[F_x F_lam]`` at ``y`` with ``<t, ref> > 0``, or None."""
        n = self.m + 1
        if self.dense is not None:
            rhs = np.zeros(n)
            rhs[-1] = 1.0
            if self.dense.y is None:
                self.dense.refresh(y)
            z = self.dense.solve_exact(y, ref, rhs, self.jvp)
            norm = float(np.linalg.norm(z))
            if not np.isfinite(norm) or norm == 0.0:
                return None
            t = z / norm
            return t if ref @ t > 0 else -t

        prec = self.prec or (lambda w: np.ravel(w))

        def matvec(w):
            w = np.ravel(w)
            return np.append(self.jvp(y, w), ref @ w)

        rhs = np.zeros(n)
        rhs[-1] = 1.0
        try:
            z, info, _ = _gmres(LinearOperator((n, n), matvec=lambda w: matvec(prec(w)),
                                               dtype=float), rhs, 1e-12, 0.0, max(300, 2 * n))
            z = prec(z)
        except (ValueError, FloatingPointError, np.linalg.LinAlgError):
            return None
        norm = float(np.linalg.norm(z))
        if not np.isfinite(norm) or norm == 0.0:
            return None
        if info != 0 and np.linalg.norm(matvec(z) - rhs) > 1e-8:
            return None
        t = z / norm
        return t if ref @ t > 0 else -t
