"""Dense linear algebra for small continuation problems: the chord method.

For a system of a few hundred unknowns the Jacobian is cheap to form (one Jacobian-vector
product per column, or a user's ``jacobian``) and a dense LU solves with it in
microseconds, while GMRES spends most of its time in Python overhead. Along a branch the
Jacobian changes slowly, so one factorisation serves many points:

- ``DenseJacobian`` holds ``[F_x F_lam]`` formed at one point ``y_J`` and the LU of the
  bordered matrix ``[[F_x, F_lam], [row]]`` for the current border ``row`` (the
  arclength, parameter or chord row of ``solvers.nonlinear.continuation``).
- ``chord_newton`` solves ``g(y) = 0`` (``g = [F; <row, y> - target]``) by
  ``y <- y - A(y_J)^{-1} g(y)``: one residual and one triangular solve per iteration.
  With ``A(y_J)`` the exact Jacobian at a point ``O(d)`` away the iteration converges
  linearly with rate ``O(d)`` (Newton's own quadratic rate when ``y_J`` is the current
  iterate). When a step does not contract the residual by ``contraction`` (default
  1/2), the Jacobian is formed anew at the current iterate and the step retaken: a true
  Newton step, with a backtracking line search if even that does not descend. The
  Jacobian is thus refreshed only where the branch has moved enough to need it.
- ``DenseJacobian.solve_exact`` solves a bordered system with the Jacobian at ``y``
  exactly (to ``rtol``) from the stale factorisation by iterative refinement with exact
  Jacobian-vector products at ``y`` (linear convergence at the same rate), refreshing
  when that does not contract: the tangents, whose ``lam``-component signals folds,
  stay exact.

Which problems: ``DENSE_UP_TO`` unknowns at most by default (forming the Jacobian costs
``m`` products and ``O(m^2)`` memory, the LU ``O(m^3)``); larger ones keep Newton-Krylov.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
from scipy.linalg import LinAlgWarning, lu_factor, lu_solve

from solvers.nonlinear.newton import NewtonResult

__all__ = ["DENSE_UP_TO", "DenseJacobian", "chord_newton"]

DENSE_UP_TO = 400
SM_MIN = 1e-2  # a border row's rank-one update is solved from the old LU above this
_ARMIJO = 1e-4
_MIN_STEP = 1.0 / 64


class DenseJacobian:
    """``[F_x F_lam]`` formed at one point, and LU factorisations of its bordered form.

    Args:
        build: ``build(y) -> array (m, m + 1)``, the Jacobian ``[F_x F_lam]`` at
            ``y = (x, lam)``.
        refine_steps: refinement steps ``solve_exact`` tries before it forms the
            Jacobian anew (0: form it at once; right when forming is cheap).
        refine_rate: the least reduction of the residual per refinement step.

    Attributes:
        y: the point of the current Jacobian (None before the first ``refresh``).
        refreshes: how many times the Jacobian was formed.
    """

    def __init__(self, build: Callable[[np.ndarray], np.ndarray], refine_steps: int = 8,
                 refine_rate: float = 0.5):
        self.build = build
        self.refine_steps, self.refine_rate = int(refine_steps), float(refine_rate)
        self.y: np.ndarray | None = None
        self.matrix: np.ndarray | None = None
        self.refreshes = 0
        self._row: np.ndarray | None = None
        self._lu = None
        self._u: np.ndarray | None = None

    def refresh(self, y: np.ndarray) -> None:
        """Form the Jacobian at ``y`` (drops the factorisation)."""
        matrix = np.asarray(self.build(y), dtype=float)
        self.matrix, self.y = matrix, np.array(y, dtype=float)
        self.refreshes += 1
        self._row, self._lu = None, None

    def fresh_at(self, y: np.ndarray) -> bool:
        """Whether the Jacobian was formed at ``y`` itself."""
        return self.y is not None and np.array_equal(self.y, y)

    def solve(self, row: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """``[[F_x, F_lam], [row]]^{-1} rhs`` with the current Jacobian (NaN where the
        bordered matrix is singular).

        One LU serves every border row: the matrix with another row is a rank-one change
        of the factored one (``+ e_last w^T``, ``w = row - row_0``), solved by the
        Sherman-Morrison formula with ``u = A_0^{-1} e_last`` (kept); the matrix is
        factored anew only when ``|1 + w^T u| < SM_MIN`` (the update nearly singular)."""
        if self._row is not None and not np.array_equal(self._row, row):
            w = np.asarray(row, dtype=float) - self._row
            denominator = 1.0 + float(w @ self._u)
            if abs(denominator) >= SM_MIN:
                z = self._lu_solve(rhs)
                return z - self._u * (float(w @ z) / denominator)
        if self._row is None or not np.array_equal(self._row, row):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LinAlgWarning)
                self._lu = lu_factor(np.vstack([self.matrix, row]), check_finite=False)
            self._row = np.array(row, dtype=float)
            e_last = np.zeros(self._row.size)
            e_last[-1] = 1.0
            self._u = self._lu_solve(e_last)
        return self._lu_solve(rhs)

    def _lu_solve(self, rhs: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return lu_solve(self._lu, rhs, check_finite=False)

    def solve_exact(self, y: np.ndarray, row: np.ndarray, rhs: np.ndarray,
                    jvp: Callable[[np.ndarray, np.ndarray], np.ndarray],
                    rtol: float = 1e-10, max_iter: int = 12) -> np.ndarray:
        """Solve ``[[F_x(y), F_lam(y)], [row]] z = rhs`` with the Jacobian at ``y``.

        From the current factorisation by iterative refinement with the exact products
        ``jvp(y, w) = [F_x F_lam](y) w``; the Jacobian is formed at ``y`` when the
        refinement does not halve the residual (or is not finite), or when the products
        still needed at its observed rate would cost more than forming the Jacobian
        (both timed as they run).
        """
        z = self.solve(row, rhs)
        if self.fresh_at(y):
            return z
        target = rtol * max(float(np.linalg.norm(rhs)), float(np.linalg.norm(z)))
        previous = math.inf
        for _ in range(self.refine_steps + 1 if self.refine_steps else 0):
            r = rhs - np.append(jvp(y, z), row @ z)
            norm = float(np.linalg.norm(r))
            if norm <= target:
                return z
            if not math.isfinite(norm) or norm > self.refine_rate * previous:
                break
            z = z + self.solve(row, r)
            previous = norm
        self.refresh(y)
        return self.solve(row, rhs)


def chord_newton(g: Callable[[np.ndarray], np.ndarray], y0: np.ndarray,
                 jacobian: DenseJacobian, row: np.ndarray, *, tol: float, max_iter: int,
                 contraction: float = 0.5) -> NewtonResult:
    """Solve ``g(y) = 0``, ``g = [F(y); <row, y> - target]``, by the chord method of the
    module docstring.

    Args:
        g: the bordered residual, ``(m + 1,) -> (m + 1,)``.
        y0: the start (a predictor).
        jacobian: the ``DenseJacobian`` (formed at ``y0`` if it has none yet); refreshed
            in place when a step does not contract.
        row: the border row of ``g``'s last component.
        tol: converged when ``||g(y)||_2 <= tol``.
        max_iter: accepted steps at most (a step retaken with a refreshed Jacobian
            counts once).
        contraction: a chord step must reduce ``||g||`` by this factor, else the Jacobian
            is formed at the iterate.

    Returns:
        ``NewtonResult`` (never raises on non-convergence); ``linear_iterations`` holds
        the number of Jacobian refreshes.
    """
    y = np.array(y0, dtype=float)
    refreshes_before = jacobian.refreshes
    if jacobian.y is None:
        jacobian.refresh(y)
    f = np.asarray(g(y), dtype=float)
    norm = float(np.linalg.norm(f))
    history = [norm]

    def result(converged: bool, k: int, message: str) -> NewtonResult:
        return NewtonResult(x=y, converged=converged, iterations=k, residual_norm=norm,
                            message=message, history=history,
                            linear_iterations=jacobian.refreshes - refreshes_before)

    if not np.isfinite(norm):
        return result(False, 0, "residual is not finite (NaN or inf) at the start")
    if norm <= tol:
        return result(True, 0, f"converged at the start: ||F|| = {norm:.3e}")
    k = 0
    while k < max_iter:
        d = -jacobian.solve(row, f)
        y_new = y + d
        f_new = np.asarray(g(y_new), dtype=float) if np.all(np.isfinite(d)) else d
        norm_new = float(np.linalg.norm(f_new))
        if not (np.isfinite(norm_new) and norm_new <= contraction * norm):
            if not jacobian.fresh_at(y):
                jacobian.refresh(y)  # the stale Jacobian no longer contracts: Newton
                continue
            # a Newton step that does not contract enough: backtrack (Armijo)
            alpha = 1.0
            while not (np.isfinite(norm_new) and norm_new <= (1 - _ARMIJO * alpha) * norm):
                alpha *= 0.5
                if alpha < _MIN_STEP or not np.all(np.isfinite(d)):
                    return result(False, k, f"iteration {k + 1}: no descent along the Newton "
                                            f"step at ||F|| = {norm:.3e} (a singular "
                                            "bordered Jacobian, or no root nearby)")
                y_new = y + alpha * d
                f_new = np.asarray(g(y_new), dtype=float)
                norm_new = float(np.linalg.norm(f_new))
        k += 1
        y, f, norm = y_new, f_new, norm_new
        history.append(norm)
        if norm <= tol:
            return result(True, k, f"converged in {k} iterations: ||F|| = {norm:.3e} "
                                   f"<= tol = {tol:.1e}")
    return result(False, k, f"no convergence in {max_iter} chord iterations: ||F|| = "
                            f"{norm:.3e} > tol = {tol:.1e}")
