"""Pseudo-arclength continuation of ``F(x, lam) = 0``, ``F: R^m x R -> R^m``.

The branch is followed in the unknown ``y = (x, lam)`` of ``R^{m+1}`` (Keller's
pseudo-arclength method):

- predictor: the unit tangent ``t`` at the last point, the null vector of ``[F_x F_lam]``
  found from the bordered system ``[F_x F_lam; t_prev^T] z = [0; 1]`` (GMRES on
  Jacobian-vector products), ``y_pred = y + ds t`` (first order: error ``O(ds^2)``); the
  secant through the last two points if that solve fails;
- corrector: Newton on the augmented system ``[F(x, lam); <t, y - y_pred>] = 0`` (the
  arclength condition); it passes folds, where ``lam`` alone is a bad parameter. Small
  systems (``m + 1 <= DENSE_UP_TO``, or ``linear_solver = "dense"``) use the chord method
  of ``solvers.nonlinear.dense``: the bordered Jacobian formed and LU-factorised once and
  reused along the branch while it contracts (linear convergence, refreshed where it
  stops contracting; the tangents are solved exactly by refinement); larger ones
  ``newton_krylov`` (GMRES on Jacobian-vector products, quadratic with exact
  derivatives).
- step control: ``ds`` grows by 1.5 after a correction of at most 3 Newton (6 chord)
  steps, up to
  ``ds_max``; a failed correction (or one that moved farther than ``ds`` from the
  predictor: a jump to another branch) halves it; below ``ds_min`` the run stops with
  status "failed" and keeps the branch computed so far.

Special points between two consecutive points ``y_a, y_b`` of the branch are located on
the branch itself: a point at chord coordinate ``s`` in ``[0, |y_b - y_a|]`` solves
``F = 0`` with ``<c, y - y_a> = s`` (``c`` the unit chord), and Brent's method (bracketed
secant / inverse quadratic, superlinear) finds ``s`` where

- fold: the ``lam``-component of the tangent changes sign (at a fold ``lam`` is
  quadratic in ``s``, so an error ``d`` in ``s`` costs only ``O(d^2)`` in ``lam``);
- bifurcation: the number of eigenvalues with ``Re > eig_tol`` (from the user's
  ``eigenvalues(x, lam)``) changes; the located quantity is the real part of the
  eigenvalue that crosses (the ``min(n_a, n_b)``-th largest real part) minus
  ``eig_tol``; ``multiplicity = |n_b - n_a|`` (2 for a Hopf pair or a double real
  eigenvalue from a symmetry). A change by one at a located fold is the fold itself and
  is reported only as the fold.

The arclength norm is Euclidean in ``(x, lam)``: scale ``x`` (for instance by the
square root of the quadrature weights of a grid) so that ``x`` and ``lam`` are
comparable, or ``ds`` will mostly move ``x``.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import brentq
from scipy.sparse.linalg import LinearOperator
from threadpoolctl import threadpool_limits

from solvers.nonlinear.dense import DENSE_UP_TO, DenseJacobian, chord_newton
from solvers.nonlinear.newton import _gmres, newton_krylov

__all__ = ["Branch", "SpecialPoint", "continue_branch", "switch_branch"]

_SQRT_EPS = float(np.sqrt(np.finfo(float).eps))
LINEAR_SOLVERS = ("auto", "dense", "krylov")

Residual = Callable[[np.ndarray, float], np.ndarray]


@dataclass
class SpecialPoint:
    """A fold or a bifurcation located on a branch.

    Attributes:
        kind: "fold" or "bifurcation".
        lam: the parameter at the point.
        x: the state at the point.
        index: the point lies between ``branch.lam[index]`` and ``branch.lam[index + 1]``.
        multiplicity: 1 for a fold; for a bifurcation the change in the number of
            eigenvalues with positive real part (absolute value).
        eigenvalues: ``eigenvalues(x, lam)`` at the point when they were given.
        located: False when the location failed (a correction between the two points
            did not converge); the point is then ``branch.x[index]``.
    """

    kind: str
    lam: float
    x: np.ndarray
    index: int
    multiplicity: int = 1
    eigenvalues: np.ndarray | None = None
    located: bool = True


@dataclass
class Branch:
    """A computed branch.

    Attributes:
        lam: the parameter at each point, shape ``(p,)``.
        x: the states, shape ``(p, m)``.
        stable: per point, no eigenvalue with real part ``> eig_tol``; None when no
            ``eigenvalues`` were given.
        eigenvalues: per point the array returned by ``eigenvalues`` (empty list if none).
        special: the folds and bifurcations found, in the order met.
        status: "completed" (left ``lam_bounds``; the last point lies on the bound),
            "stopped" (``max_points`` reached or the callback asked to stop) or "failed"
            (the corrector failed with ``ds`` at ``ds_min``; the points so far are kept).
        message: what happened, with the ``lam`` and the reason on failure.
    """

    lam: np.ndarray
    x: np.ndarray
    stable: np.ndarray | None = None
    eigenvalues: list = field(default_factory=list)
    special: list = field(default_factory=list)
    status: str = "completed"
    message: str = ""


class _System:
    """F and its derivatives in the joined unknown ``y = (x, lam)``."""

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


def _count(eigs: np.ndarray, eig_tol: float) -> int:
    return int(np.sum(np.real(eigs) > eig_tol))


def _crossing(eigs: np.ndarray, idx: int, eig_tol: float) -> float:
    re = np.sort(np.real(np.asarray(eigs)))[::-1]
    return float(re[idx] - eig_tol) if idx < re.size else -np.inf


def _one_blas_thread(fn):
    """Run ``fn`` with BLAS on one thread. The dense linear algebra of small systems (and
    the user's ``eigenvalues``) is of matrices of a few hundred rows: OpenBLAS's threads
    spin on a core another process holds, and the LU of a 258 x 258 matrix then took
    11-90 ms instead of 1 ms, the eigenvalues of a 128 x 128 one up to 0.5 s (measured on
    the 2-core machine beside other jobs); for these sizes a second thread gains little
    even on an idle machine."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with threadpool_limits(limits=1, user_api="blas"):
            return fn(*args, **kwargs)
    return wrapper


@_one_blas_thread
def continue_branch(residual: Residual, x0: np.ndarray, lam0: float, *,
                    jvp_x: Callable[[np.ndarray, float, np.ndarray], np.ndarray] | None = None,
                    dF_dlam: Callable[[np.ndarray, float], np.ndarray] | None = None,
                    ds: float = 0.05, ds_min: float = 1e-6, ds_max: float = 0.5,
                    direction: int = 1,
                    lam_bounds: tuple[float, float] = (-np.inf, np.inf),
                    max_points: int = 200, tol: float = 1e-10,
                    eigenvalues: Callable[[np.ndarray, float], np.ndarray] | None = None,
                    eig_tol: float = 0.0, locate_tol: float = 1e-12,
                    newton_max_iter: int = 10, tangent: np.ndarray | None = None,
                    precondition: Callable[[np.ndarray], np.ndarray] | None = None,
                    callback: Callable[[int, np.ndarray, float], bool | None] | None = None,
                    linear_solver: str = "auto",
                    jacobian: Callable[[np.ndarray, float], np.ndarray] | None = None
                    ) -> Branch:
    """Follow the branch of ``F(x, lam) = 0`` through ``(x0, lam0)``.

    Args:
        residual: ``F(x, lam) -> array (m,)``, ``x`` of shape ``(m,)``.
        x0: a guess of the first point; corrected at fixed ``lam0`` by Newton first.
        lam0: the parameter of the first point, inside ``lam_bounds``.
        jvp_x: ``jvp_x(x, lam, v) -> F_x(x, lam) v``; forward differences if None.
        dF_dlam: ``dF_dlam(x, lam) -> dF/dlam``; forward differences if None. With both
            None one residual evaluation per Jacobian-vector product (accuracy
            ``O(sqrt(eps))``; the corrector then converges linearly at that rate).
        ds, ds_min, ds_max: first, smallest and largest arclength step.
        direction: +1 to start toward increasing ``lam``, -1 toward decreasing.
        lam_bounds: the run ends (status "completed") when ``lam`` leaves these; the
            last point is then solved at the bound exactly (at fixed ``lam``; if that
            fails the last point is the one beyond the bound and the message says so).
        max_points: the most points on the branch, the first one included.
        tol: absolute Newton tolerance on ``||F||`` (with the arclength row).
        eigenvalues: ``eigenvalues(x, lam) -> array`` of the leading (complex)
            eigenvalues of the linearisation; gives stability and bifurcations.
        eig_tol: an eigenvalue counts as unstable when its real part exceeds this; raise
            it above round-off when symmetries give exact zero eigenvalues.
        locate_tol: tolerance in chord arclength of the location of special points
            (the error in ``lam`` is at most this, much less at a fold).
        newton_max_iter: Newton iterations per correction.
        precondition: ``precondition(r) -> M r ~ F_x^{-1} r`` for ``r`` of shape
            ``(m,)``; applied on the right as ``diag(M, 1)`` to the bordered systems
            (corrector and tangent), see ``newton_krylov``. A fixed ``M`` (the inverse
            of the stiff linear part) is the usual choice.
        tangent: an initial direction in ``(x, lam)``, shape ``(m + 1,)``, that orients
            the first tangent instead of ``direction`` (``switch_branch`` uses it).
        callback: ``callback(index, x, lam)`` after each accepted point; a true return
            value stops the run (status "stopped").
        linear_solver: "krylov" (Newton-Krylov, matrix-free), "dense" (the chord method
            of ``solvers.nonlinear.dense``: the bordered Jacobian formed and
            LU-factorised, refreshed only when it stops contracting) or "auto" (dense
            for ``m + 1 <= DENSE_UP_TO`` unknowns or when ``jacobian`` is given).
        jacobian: ``jacobian(x, lam) -> F_x``, shape ``(m, m)``, for the dense solver
            (faster than its default of one ``jvp_x`` per column).

    Returns:
        Branch (never raises on a failed correction: status "failed" and the points so
        far). BLAS runs on one thread meanwhile (``_one_blas_thread``).

    Raises:
        ValueError: non-finite ``x0`` or ``lam0``, ``lam0`` outside ``lam_bounds``,
            step sizes not ``0 < ds_min <= ds <= ds_max``, ``direction`` not +-1,
            ``max_points < 1``, ``tol <= 0``, a wrong ``tangent`` shape.
    """
    x0 = np.array(x0, dtype=float).ravel()
    lo, hi = (float(b) for b in lam_bounds)
    if x0.size == 0 or not np.all(np.isfinite(x0)) or not np.isfinite(lam0):
        raise ValueError("continue_branch: x0 and lam0 must be finite")
    if not lo <= lam0 <= hi:
        raise ValueError(f"continue_branch: lam0 = {lam0} is outside lam_bounds {lam_bounds}")
    if not 0 < ds_min <= ds <= ds_max:
        raise ValueError(f"continue_branch: need 0 < ds_min <= ds <= ds_max, got "
                         f"{ds_min}, {ds}, {ds_max}")
    if direction not in (1, -1):
        raise ValueError(f"continue_branch: direction must be +1 or -1, got {direction}")
    if max_points < 1 or not tol > 0:
        raise ValueError("continue_branch: need max_points >= 1 and tol > 0")
    m = x0.size
    if tangent is not None and np.shape(tangent) != (m + 1,):
        raise ValueError(f"continue_branch: tangent must have shape ({m + 1},)")
    sys = _System(residual, jvp_x, dF_dlam, m, precondition, linear_solver, jacobian)
    e_last = np.zeros(m + 1)
    e_last[-1] = 1.0

    # the first point, at fixed lam0
    first = sys.correct(np.append(x0, lam0), e_last, float(lam0), tol, 4 * newton_max_iter)
    ys: list[np.ndarray] = []
    eigs: list[np.ndarray] = []
    special: list[SpecialPoint] = []

    def branch(status: str, message: str) -> Branch:
        arr = np.array(ys) if ys else np.zeros((0, m + 1))
        stable = (np.array([_count(e, eig_tol) == 0 for e in eigs], dtype=bool)
                  if eigenvalues is not None else None)
        return Branch(lam=arr[:, -1].copy(), x=arr[:, :-1].copy(), stable=stable,
                      eigenvalues=eigs, special=special, status=status, message=message)

    if not first.converged:
        return branch("failed", f"the first point at lam = {lam0:.6g} did not converge: "
                                f"{first.message}")

    def accept(y: np.ndarray) -> bool:
        ys.append(y)
        if eigenvalues is not None:
            eigs.append(np.asarray(eigenvalues(y[:-1], float(y[-1]))))
        return bool(callback(len(ys) - 1, y[:-1].copy(), float(y[-1]))) if callback else False

    y = first.x
    if accept(y):
        return branch("stopped", "the callback stopped the run")
    ref = np.asarray(tangent, dtype=float) if tangent is not None else direction * e_last
    t = sys.tangent(y, ref)
    if t is None:
        t = ref / np.linalg.norm(ref)

    def point_at(ya: np.ndarray, chord: np.ndarray, length: float, s: float) -> np.ndarray:
        res = sys.correct(ya + s * chord, chord, chord @ ya + s, tol, 4 * newton_max_iter)
        if not res.converged:
            raise RuntimeError(res.message)
        return res.x

    def locate(ya, yb, g, kind, multiplicity, index):
        """The special point between ya and yb where g(point) changes sign."""
        length = float(np.linalg.norm(yb - ya))
        chord = (yb - ya) / length
        cache = {}

        def gs(s):
            p = ya if s == 0 else yb if s == length else point_at(ya, chord, length, s)
            cache[s] = p
            return g(p, chord)

        try:
            ga, gb = gs(0.0), gs(length)
            if ga == 0:
                s = 0.0
            elif gb == 0:
                s = length
            elif np.sign(ga) == np.sign(gb):
                raise RuntimeError("no sign change")
            else:
                s = brentq(gs, 0.0, length, xtol=locate_tol, rtol=4 * np.finfo(float).eps)
            p = cache.get(s)
            if p is None:
                p = point_at(ya, chord, length, s)
        except (RuntimeError, ValueError):
            # not located (a correction failed): reported at the point before it
            p, located = ya, False
        else:
            located = True
        ev = (np.asarray(eigenvalues(p[:-1], float(p[-1])))
              if eigenvalues is not None else None)
        special.append(SpecialPoint(kind=kind, lam=float(p[-1]), x=p[:-1].copy(),
                                    index=index, multiplicity=multiplicity, eigenvalues=ev,
                                    located=located))

    def fold_g(p, chord):
        tp = sys.tangent(p, chord)
        if tp is None:
            raise RuntimeError("tangent failed")
        return float(tp[-1])

    y_prev = None
    while len(ys) < max_points:
        step = ds
        while True:
            y_pred = y + step * t
            res = sys.correct(y_pred, t, t @ y_pred, tol, newton_max_iter)
            ok = res.converged and np.linalg.norm(res.x - y_pred) <= step
            if ok:
                break
            step *= 0.5
            if step < ds_min:
                why = (res.message if not res.converged else
                       "the corrector jumped farther than ds from the predictor")
                return branch("failed", f"correction failed after lam = {y[-1]:.10g} "
                                        f"(ds below ds_min = {ds_min:.1e}; Newton from "
                                        f"the predictor at lam = {y_pred[-1]:.10g}): "
                                        f"{why}")
        y_new = res.x
        ds = min(1.5 * step, ds_max) if res.iterations <= sys.easy_iterations else step
        t_new = sys.tangent(y_new, t)
        if t_new is None:
            sec = y_new - y
            t_new = sec / np.linalg.norm(sec)
        # leaving the parameter window: land on the bound and finish
        bound = hi if y_new[-1] > hi else lo if y_new[-1] < lo else None
        if bound is not None:
            frac = (bound - y[-1]) / (y_new[-1] - y[-1])
            guess = y + frac * (y_new - y)
            land = sys.correct(guess, e_last, bound, tol, 4 * newton_max_iter)
            if land.converged:
                y_new = land.x
                t_new = sys.tangent(y_new, t)
                t_new = t if t_new is None else t_new
                end = f"reached lam = {bound:.10g} (the bound) after"
            else:
                end = (f"left lam_bounds at lam = {y_new[-1]:.10g} (solving at the bound "
                       f"failed: {land.message}) after")
        index = len(ys) - 1
        fold = t[-1] * t_new[-1] < 0
        if fold:
            locate(y, y_new, fold_g, "fold", 1, index)
        y_prev, y, t = y, y_new, t_new
        stop = accept(y)
        if eigenvalues is not None:
            na, nb = _count(eigs[-2], eig_tol), _count(eigs[-1], eig_tol)
            if na != nb and not (fold and abs(nb - na) == 1):
                idx = min(na, nb)
                locate(y_prev, y, lambda p, _c, idx=idx: _crossing(
                    eigenvalues(p[:-1], float(p[-1])), idx, eig_tol),
                    "bifurcation", abs(nb - na), index)
        if bound is not None:
            return branch("completed", f"{end} {len(ys)} points")
        if stop:
            return branch("stopped", f"the callback stopped the run at lam = {y[-1]:.10g}")
    return branch("stopped", f"max_points = {max_points} reached at lam = {y[-1]:.10g}")


def switch_branch(residual: Residual, x_bif: np.ndarray, lam_bif: float,
                  direction_vector: np.ndarray, *, h: float = 1e-2,
                  jvp_x: Callable[[np.ndarray, float, np.ndarray], np.ndarray] | None = None,
                  dF_dlam: Callable[[np.ndarray, float], np.ndarray] | None = None,
                  tol: float = 1e-10, newton_max_iter: int = 40, **kwargs) -> Branch:
    """Start the branch that leaves a bifurcation point along ``direction_vector``.

    The caller gives the direction: the critical eigenvector (a null vector of ``F_x``
    at the bifurcation; for a pitchfork the new branch is tangent to it, for a
    transcritical one nearly). The first point is ``x = x_bif + h v + w``, ``lam``
    free, with ``<v, x - x_bif> = h`` held fixed (``v`` normalised): Newton on
    ``[F(x, lam); <v, x - x_bif> - h] = 0`` from ``(x_bif + h v, lam_bif)``. Fixing the
    amplitude along ``v`` instead of ``lam`` also works for a pitchfork, where the
    bifurcating branch has ``lam - lam_bif = O(h^2)`` and may lie on either side.
    The new branch is then followed with ``continue_branch``, oriented away from the
    bifurcation point. Use ``-v`` for the other half of a pitchfork.

    Args:
        residual: ``F(x, lam)``.
        x_bif, lam_bif: the bifurcation point (e.g. a ``SpecialPoint``'s ``x`` and
            ``lam``).
        direction_vector: ``v``, shape ``(m,)``, not zero.
        h: the offset along ``v``; small (the first point is ``O(h)`` from the
            bifurcation) but large enough for Newton to leave the trivial branch.
        jvp_x, dF_dlam, tol: as in ``continue_branch`` (``precondition`` too, in
            ``kwargs``).
        newton_max_iter: Newton iterations for the first point.
        **kwargs: passed to ``continue_branch`` (``ds``, ``lam_bounds``,
            ``max_points``, ``eigenvalues``, ...; not ``direction`` nor ``tangent``).

    Returns:
        Branch whose first point is the corrected offset point (the bifurcation point
        itself is not included); status "failed" with a message if that point does not
        converge.
    """
    x_bif = np.array(x_bif, dtype=float).ravel()
    v = np.array(direction_vector, dtype=float).ravel()
    if v.shape != x_bif.shape or not np.all(np.isfinite(v)) or not np.any(v):
        raise ValueError("switch_branch: direction_vector must be a finite non-zero "
                         "vector of the shape of x_bif")
    if not h > 0:
        raise ValueError(f"switch_branch: h must be > 0, got {h}")
    v = v / np.linalg.norm(v)
    m = x_bif.size
    sys = _System(residual, jvp_x, dF_dlam, m, kwargs.get("precondition"),
                  kwargs.get("linear_solver", "auto"), kwargs.get("jacobian"))
    row = np.append(v, 0.0)
    y_bif = np.append(x_bif, float(lam_bif))
    res = sys.correct(np.append(x_bif + h * v, lam_bif), row, v @ x_bif + h, tol,
                      newton_max_iter)
    if not res.converged:
        return Branch(lam=np.zeros(0), x=np.zeros((0, m)),
                      stable=None if kwargs.get("eigenvalues") is None else np.zeros(0, bool),
                      status="failed",
                      message=f"switch_branch: the offset point at h = {h:g} did not "
                              f"converge: {res.message}")
    y1 = res.x
    lo, hi = kwargs.get("lam_bounds", (-np.inf, np.inf))
    if not lo <= y1[-1] <= hi:
        kwargs["lam_bounds"] = (min(lo, y1[-1]), max(hi, y1[-1]))
    return continue_branch(residual, y1[:-1], float(y1[-1]), jvp_x=jvp_x, dF_dlam=dF_dlam,
                           tol=tol, tangent=y1 - y_bif, **kwargs)
