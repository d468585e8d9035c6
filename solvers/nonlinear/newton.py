"""Newton-Krylov for square systems ``F(x) = 0``, ``F: R^m -> R^m``.

Each Newton step solves ``F'(x) d = -F(x)`` with restarted GMRES (scipy) on a
``LinearOperator`` that only needs Jacobian-vector products, so the Jacobian is never
formed. With an exact ``jvp`` and inner solves to a small relative tolerance the method
converges quadratically near a regular root (``||x_{k+1} - x*|| <= C ||x_k - x*||^2``);
with the finite-difference ``jvp`` the convergence is quadratic until the
``O(sqrt(eps))`` error of the directional derivative limits it, then linear with a rate
of about ``sqrt(eps) * cond``, which still reaches ``tol`` in one or two extra steps for a
well-conditioned problem.

Globalisation: a backtracking line search on ``||F||^2`` (Armijo condition
``||F(x + a d)|| <= (1 - 1e-4 a) ||F(x)||``, step reductions by a safeguarded parabola
in ``[0.1 a, 0.5 a]``). It makes the iteration converge from farther away; it cannot
find a root that does not exist, and stops with a message when the step becomes too
small (a local minimum of ``||F||`` that is not a root, or a singular Jacobian).

Constraints (a bordered system): to solve ``F(x, p) = 0`` together with ``g(x, p) = 0``
for an extra unknown ``p``, enlarge the unknown vector: ``y = concatenate([x, [p]])``,
``R(y) = concatenate([F(x, p), [g(x, p)]])`` and, for an exact ``jvp``,
``R'(y) (v, q) = (F_x v + F_p q, g_x . v + g_p q)``; then call ``newton_krylov(R, y0)``.
``solvers.nonlinear.continuation`` does this with the arclength condition.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse.linalg import LinearOperator, gmres

__all__ = ["NewtonResult", "finite_difference_jvp", "newton_krylov"]

_EPS = np.finfo(float).eps
_GMRES_RTOL = "rtol" if "rtol" in inspect.signature(gmres).parameters else "tol"
_ARMIJO = 1e-4
_MIN_STEP = 1e-8


@dataclass
class NewtonResult:
    """What ``newton_krylov`` returns; it never raises on non-convergence.

    Attributes:
        x: the last iterate (the root when ``converged``).
        converged: whether ``||F(x)||_2 <= tol``.
        iterations: Newton steps taken.
        residual_norm: ``||F(x)||_2`` at ``x``.
        message: on success a one-line summary; on failure where and why (the
            iteration, the residual norm, and what failed: GMRES not converging, the
            line search's step becoming too small, a non-finite residual, the
            iteration limit).
        history: ``||F||_2`` at the start and after each Newton step
            (``len(history) == iterations + 1``).
        linear_iterations: total GMRES (inner) iterations over all Newton steps.
    """

    x: np.ndarray
    converged: bool
    iterations: int
    residual_norm: float
    message: str
    history: list = field(default_factory=list)
    linear_iterations: int = 0


def finite_difference_jvp(residual: Callable[[np.ndarray], np.ndarray], x: np.ndarray,
                          v: np.ndarray, fx: np.ndarray | None = None) -> np.ndarray:
    """Forward-difference directional derivative ``F'(x) v ~ (F(x + h v) - F(x)) / h``.

    The step is ``h = sqrt(eps) * max(1, ||x||) / ||v||`` so that the perturbation
    ``h v`` is ``sqrt(eps)`` relative to ``x``: the truncation error ``O(h ||v||^2)`` and
    the rounding error ``O(eps ||F|| / h)`` balance, and the result has a relative
    accuracy of ``O(sqrt(eps))`` (about 1e-8), first order in ``h``.

    Args:
        residual: ``F``.
        x: the point.
        v: the direction.
        fx: ``F(x)`` if already known (saves one evaluation).

    Returns:
        The approximation of ``F'(x) v`` (zeros for ``v = 0``).
    """
    vnorm = float(np.linalg.norm(v))
    if vnorm == 0.0:
        return np.zeros_like(x)
    if fx is None:
        fx = np.asarray(residual(x), dtype=float)
    h = np.sqrt(_EPS) * max(1.0, float(np.linalg.norm(x))) / vnorm
    return (np.asarray(residual(x + h * v), dtype=float) - fx) / h


def _gmres(op: LinearOperator, b: np.ndarray, rtol: float, atol: float, max_krylov: int):
    """GMRES with at most ``max_krylov`` inner iterations; returns (y, info, iterations)."""
    m = b.size
    restart = max(1, min(m, max_krylov))
    count = [0]

    def _count(_):
        count[0] += 1

    kwargs = {_GMRES_RTOL: rtol, "atol": atol, "restart": restart,
              "maxiter": -(-max_krylov // restart), "callback": _count,
              "callback_type": "pr_norm"}
    y, info = gmres(op, b, **kwargs)
    return y, info, count[0]


def newton_krylov(residual: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, *,
                  jvp: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
                  precondition: Callable[[np.ndarray], np.ndarray] | None = None,
                  tol: float = 1e-10, max_iter: int = 30, krylov_rtol: float = 1e-12,
                  max_krylov: int = 300, line_search: bool = True) -> NewtonResult:
    """Solve ``F(x) = 0`` by Newton's method with GMRES inner solves.

    Convergence: quadratic near a regular root with an exact ``jvp`` (and the inner
    tolerance small), superlinear-then-linear at rate ``~ sqrt(eps) * cond(F')`` with the
    finite-difference ``jvp``; global behaviour improved by the line search, no
    guarantee without a root or with a singular Jacobian.

    Args:
        residual: ``F(x) -> array (m,)`` for ``x`` of shape ``(m,)`` (real, square).
        x0: the starting point, finite.
        jvp: ``jvp(x, v) -> F'(x) v``. If None, a forward finite difference
            (``finite_difference_jvp``: step ``sqrt(eps) max(1, ||x||) / ||v||``, relative
            accuracy ``O(sqrt(eps))``, one extra residual evaluation per GMRES iteration);
            the inner relative tolerance is then not taken below ``sqrt(eps)``, since the
            operator is not known more precisely.
        precondition: ``precondition(r) -> M r ~ F'(x)^{-1} r``, applied on the *right*:
            GMRES solves ``F'(x) M y = -F(x)`` and the step is ``d = M y``. Right
            preconditioning leaves GMRES minimising the true linear residual
            ``||F'(x) d + F(x)||``, so its stopping test means what it says. A fixed
            ``M`` (for instance the inverse diagonal of the Jacobian at ``x0``) is the
            usual choice; it is called once per GMRES iteration plus once per step.
        tol: absolute tolerance: converged when ``||F(x)||_2 <= tol``. Scale ``F`` so
            that this is meaningful.
        max_iter: maximum number of Newton steps.
        krylov_rtol: GMRES relative tolerance on the linear residual (the absolute
            tolerance is ``tol / 10``: solving beyond it cannot help).
        max_krylov: maximum GMRES iterations per Newton step (restart ``min(m,
            max_krylov)``). A step that GMRES did not solve to tolerance is still tried:
            the line search decides, and the message names GMRES if it then fails.
        line_search: backtrack on ``||F||^2`` (Armijo); if False, take full steps.

    Returns:
        NewtonResult; ``converged`` False with a message on failure (never raises then).

    Raises:
        ValueError: ``x0`` not a finite real vector, ``tol <= 0``, ``max_iter < 1``,
            ``max_krylov < 1``, ``krylov_rtol < 0``, or ``F(x0)`` not of the shape of
            ``x0`` (the system must be square).
    """
    x = _checked_start(x0, tol, max_iter, max_krylov, krylov_rtol)
    evaluate = _square_residual(residual, x.size)
    f = evaluate(x)
    norm = float(np.linalg.norm(f))
    it = _Iterate(x, f, norm, [norm])
    if not np.isfinite(norm):
        return it.result(False, 0, "residual is not finite (NaN or inf) at x0")
    if norm <= tol:
        return it.result(True, 0, f"converged at x0: ||F|| = {norm:.3e} <= tol = {tol:.1e}")
    rtol = krylov_rtol if jvp is not None else max(krylov_rtol, np.sqrt(_EPS))
    prec = precondition if precondition is not None else (lambda r: r)
    for k in range(1, int(max_iter) + 1):
        try:
            d, gmres_note = _newton_step(residual, jvp, prec, it, rtol, 0.1 * tol,
                                         int(max_krylov))
            it.x, it.f, it.norm = _line_search(evaluate, it, d, line_search, gmres_note)
        except _StepFailed as failure:
            return it.result(False, k - 1, f"iteration {k}: {failure}")
        it.history.append(it.norm)
        if it.norm <= tol:
            return it.result(True, k, f"converged in {k} iterations: ||F|| = "
                                      f"{it.norm:.3e} <= tol = {tol:.1e}")
    return it.result(False, int(max_iter),
                     f"no convergence in {max_iter} iterations: ||F|| = {it.norm:.3e} > "
                     f"tol = {tol:.1e}" + gmres_note)


def _checked_start(x0: np.ndarray, tol: float, max_iter: int, max_krylov: int,
                   krylov_rtol: float) -> np.ndarray:
    """``x0`` as a float vector, after the checks of ``newton_krylov``'s arguments."""
    x = np.asarray(x0)
    if np.iscomplexobj(x):
        raise ValueError("newton_krylov: x0 must be real (split complex unknowns into "
                         "real and imaginary parts)")
    x = np.array(x, dtype=float).ravel() if x.ndim != 1 else np.array(x, dtype=float)
    if x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError("newton_krylov: x0 must be a non-empty finite vector")
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"newton_krylov: tol must be > 0, got {tol}")
    if int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(f"newton_krylov: max_iter must be an integer >= 1, got {max_iter}")
    if int(max_krylov) != max_krylov or max_krylov < 1:
        raise ValueError(f"newton_krylov: max_krylov must be an integer >= 1, "
                         f"got {max_krylov}")
    if not (np.isfinite(krylov_rtol) and krylov_rtol >= 0):
        raise ValueError(f"newton_krylov: krylov_rtol must be >= 0, got {krylov_rtol}")
    return x


def _square_residual(residual: Callable[[np.ndarray], np.ndarray], m: int):
    """``residual`` as a float array, checked to be of shape ``(m,)``."""
    def evaluate(y: np.ndarray) -> np.ndarray:
        f = np.asarray(residual(y), dtype=float)
        if f.shape != (m,):
            raise ValueError(f"newton_krylov: residual returned shape {f.shape} for an "
                             f"unknown of shape ({m},); the system must be square")
        return f

    return evaluate


@dataclass
class _Iterate:
    """The current Newton iterate, its residual, and the counts kept for the result."""

    x: np.ndarray
    f: np.ndarray
    norm: float
    history: list
    linear_iterations: int = 0

    def result(self, converged: bool, k: int, message: str) -> NewtonResult:
        return NewtonResult(x=self.x, converged=converged, iterations=k,
                            residual_norm=self.norm, message=message, history=self.history,
                            linear_iterations=self.linear_iterations)


class _StepFailed(Exception):
    """A Newton step that could not be taken (the message says why, at which ``||F||``)."""


def _newton_step(residual: Callable[[np.ndarray], np.ndarray],
                 jvp: Callable[[np.ndarray, np.ndarray], np.ndarray] | None,
                 prec: Callable[[np.ndarray], np.ndarray], it: _Iterate, rtol: float,
                 atol: float, max_krylov: int) -> tuple[np.ndarray, str]:
    """The Newton step ``d = M y`` from GMRES on ``F'(x) M y = -F(x)`` at ``it.x``, and a
    note for the messages when GMRES did not converge (its inner iterations are added to
    ``it``).

    Raises:
        _StepFailed: GMRES failed, or the step is not finite or zero.
    """
    xk, fk, m = it.x, it.f, it.x.size
    if jvp is None:
        def matvec(v):
            return finite_difference_jvp(residual, xk, prec(np.ravel(v)), fk)
    else:
        def matvec(v):
            return np.asarray(jvp(xk, prec(np.ravel(v))), dtype=float)
    op = LinearOperator((m, m), matvec=matvec, dtype=float)
    try:
        y, info, inner = _gmres(op, -fk, rtol, atol, max_krylov)
    except (ValueError, FloatingPointError, np.linalg.LinAlgError) as err:
        raise _StepFailed(f"GMRES failed ({err}) at ||F|| = {it.norm:.3e}") from err
    it.linear_iterations += inner
    d = np.asarray(prec(y), dtype=float)
    gmres_note = "" if info == 0 else (
        f"; GMRES did not converge (inner residual above {rtol:.1e} relative after "
        f"{inner} iterations: raise max_krylov or give a preconditioner)")
    if not np.all(np.isfinite(d)):
        raise _StepFailed(f"the Newton step is not finite (NaN from the Jacobian-vector "
                          f"products or the preconditioner) at ||F|| = {it.norm:.3e}"
                          + gmres_note)
    if not np.any(d):
        raise _StepFailed(f"the Newton step is zero at ||F|| = {it.norm:.3e}" + gmres_note)
    return d, gmres_note


def _line_search(evaluate: Callable[[np.ndarray], np.ndarray], it: _Iterate,
                 d: np.ndarray, line_search: bool, gmres_note: str
                 ) -> tuple[np.ndarray, np.ndarray, float]:
    """The next iterate along ``d``: the full step, or (``line_search``) the first step
    ``alpha d`` that passes the Armijo test, ``alpha`` cut by the safeguarded parabola.

    Raises:
        _StepFailed: ``alpha`` below ``_MIN_STEP``, or a non-finite residual.
    """
    norm, alpha = it.norm, 1.0
    while True:
        x_new = it.x + alpha * d
        f_new = evaluate(x_new)
        norm_new = float(np.linalg.norm(f_new))
        if not line_search:
            break
        if np.isfinite(norm_new) and norm_new <= (1.0 - _ARMIJO * alpha) * norm:
            break
        if np.isfinite(norm_new):
            # minimiser of the parabola through phi(0), phi'(0) = -2 phi(0), phi(alpha)
            phi0, phia = norm * norm, norm_new * norm_new
            denom = 2.0 * (phia - phi0 + 2.0 * phi0 * alpha)
            trial = 2.0 * phi0 * alpha * alpha / denom if denom > 0 else 0.5 * alpha
            alpha = min(max(trial, 0.1 * alpha), 0.5 * alpha)
        else:
            alpha *= 0.5
        if alpha < _MIN_STEP:
            raise _StepFailed(f"step too small in the line search (below {_MIN_STEP:.0e} "
                              f"of the Newton step) at ||F|| = {norm:.3e}: no descent, a "
                              f"local minimum of ||F|| that is not a root or a singular "
                              f"Jacobian" + gmres_note)
    if not np.isfinite(norm_new):
        raise _StepFailed(f"the residual is not finite (NaN or inf) after a full step "
                          f"from ||F|| = {norm:.3e}" + gmres_note)
    return x_new, f_new, norm_new
