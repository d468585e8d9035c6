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

Folds and bifurcations between two consecutive points are detected and located on the
branch itself by ``solvers.nonlinear.special_points`` (Brent's method in the chord
arclength); the bordered system (corrector and tangent) is
``solvers.nonlinear.bordered``, the result ``solvers.nonlinear.branch``.

The arclength norm is Euclidean in ``(x, lam)``: scale ``x`` (for instance by the
square root of the quadrature weights of a grid) so that ``x`` and ``lam`` are
comparable, or ``ds`` will mostly move ``x``.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from threadpoolctl import threadpool_limits

from solvers.nonlinear.bordered import BorderedSystem, Residual
from solvers.nonlinear.branch import Branch, BranchRecord
from solvers.nonlinear.special_points import SpecialPointFinder

__all__ = ["continue_branch", "switch_branch"]

Jvp = Callable[[np.ndarray, float, np.ndarray], np.ndarray]
OfPoint = Callable[[np.ndarray, float], np.ndarray]  # dF_dlam, eigenvalues, jacobian


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
                    jvp_x: Jvp | None = None, dF_dlam: OfPoint | None = None,
                    ds: float = 0.05, ds_min: float = 1e-6, ds_max: float = 0.5,
                    direction: int = 1, lam_bounds: tuple[float, float] = (-np.inf, np.inf),
                    max_points: int = 200, tol: float = 1e-10,
                    eigenvalues: OfPoint | None = None, eig_tol: float = 0.0,
                    locate_tol: float = 1e-12, newton_max_iter: int = 10,
                    tangent: np.ndarray | None = None,
                    precondition: Callable[[np.ndarray], np.ndarray] | None = None,
                    callback: Callable[[int, np.ndarray, float], bool | None] | None = None,
                    linear_solver: str = "auto", jacobian: OfPoint | None = None) -> Branch:
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
    _check_arguments(x0, lam0, ds, ds_min, ds_max, direction, lam_bounds, max_points, tol,
                     tangent)
    system = BorderedSystem(residual, jvp_x, dF_dlam, x0.size, precondition, linear_solver,
                            jacobian)
    run = _Continuation(system, BranchRecord(x0.size, eigenvalues, eig_tol, callback),
                        steps=(ds, ds_min, ds_max), lam_bounds=lam_bounds, tol=tol,
                        newton_max_iter=newton_max_iter, locate_tol=locate_tol)
    return run.follow(x0, lam0, direction, tangent, max_points)


def _check_arguments(x0: np.ndarray, lam0: float, ds: float, ds_min: float, ds_max: float,
                     direction: int, lam_bounds: tuple[float, float], max_points: int,
                     tol: float, tangent: np.ndarray | None) -> None:
    """The checks of ``continue_branch``'s arguments (``ValueError`` naming the bad one)."""
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


class _CorrectionFailed(Exception):
    """The corrector failed with the step below ``ds_min`` (the message says where)."""


class _Continuation:
    """One run of ``continue_branch``: the bordered system, the branch so far, the finder
    of special points and the adaptive step ``ds``.

    Args:
        system: the bordered system.
        record: the (empty) record of the branch.
        steps: ``(ds, ds_min, ds_max)``.
        lam_bounds: the parameter window.
        tol, newton_max_iter, locate_tol: as in ``continue_branch``.
    """

    def __init__(self, system: BorderedSystem, record: BranchRecord, *,
                 steps: tuple[float, float, float], lam_bounds: tuple[float, float],
                 tol: float, newton_max_iter: int, locate_tol: float):
        self.system, self.record = system, record
        self.ds, self.ds_min, self.ds_max = steps
        self.lo, self.hi = (float(b) for b in lam_bounds)
        self.tol, self.newton_max_iter = tol, newton_max_iter
        self.finder = SpecialPointFinder(system, record.eigenvalues, record.eig_tol, tol,
                                         4 * newton_max_iter, locate_tol)
        self.e_last = np.zeros(system.m + 1)
        self.e_last[-1] = 1.0

    def follow(self, x0: np.ndarray, lam0: float, direction: int,
               tangent: np.ndarray | None, max_points: int) -> Branch:
        """The branch from the first point (corrected at fixed ``lam0``) on."""
        record = self.record
        first = self.system.correct(np.append(x0, lam0), self.e_last, float(lam0),
                                    self.tol, 4 * self.newton_max_iter)
        if not first.converged:
            return record.result("failed", f"the first point at lam = {lam0:.6g} did not "
                                           f"converge: {first.message}")
        y = first.x
        if record.accept(y):
            return record.result("stopped", "the callback stopped the run")
        ref = (np.asarray(tangent, dtype=float) if tangent is not None
               else direction * self.e_last)
        t = self.system.tangent(y, ref)
        if t is None:
            t = ref / np.linalg.norm(ref)
        while len(record) < max_points:
            try:
                y_new, t_new, end = self.step(y, t)
            except _CorrectionFailed as failure:
                return record.result("failed", str(failure))
            stop = self.add_point(y, t, y_new, t_new)
            y, t = y_new, t_new
            if end is not None:
                return record.result("completed", f"{end} {len(record)} points")
            if stop:
                return record.result("stopped", f"the callback stopped the run at lam = "
                                                f"{y[-1]:.10g}")
        return record.result("stopped", f"max_points = {max_points} reached at lam = "
                                        f"{y[-1]:.10g}")

    def step(self, y: np.ndarray, t: np.ndarray):
        """The next point and its tangent from ``(y, t)``, and, when the step left
        ``lam_bounds`` (the point then lies on the bound), how the run ends (else None).

        Raises:
            _CorrectionFailed: the corrector failed with the step below ``ds_min``.
        """
        res, step = self._predict_correct(y, t)
        y_new = res.x
        self.ds = (min(1.5 * step, self.ds_max)
                   if res.iterations <= self.system.easy_iterations else step)
        t_new = self.system.tangent(y_new, t)
        if t_new is None:
            sec = y_new - y
            t_new = sec / np.linalg.norm(sec)
        lam = y_new[-1]
        bound = self.hi if lam > self.hi else self.lo if lam < self.lo else None
        if bound is None:
            return y_new, t_new, None
        return self._land(y, t, y_new, t_new, bound)

    def _predict_correct(self, y: np.ndarray, t: np.ndarray):
        """The tangent predictor and the arclength corrector, the step halved until the
        correction converges no farther than the step from the predictor; returns the
        correction and the step taken."""
        step = self.ds
        while True:
            y_pred = y + step * t
            res = self.system.correct(y_pred, t, t @ y_pred, self.tol, self.newton_max_iter)
            if res.converged and np.linalg.norm(res.x - y_pred) <= step:
                return res, step
            step *= 0.5
            if step < self.ds_min:
                why = (res.message if not res.converged else
                       "the corrector jumped farther than ds from the predictor")
                raise _CorrectionFailed(
                    f"correction failed after lam = {y[-1]:.10g} (ds below ds_min = "
                    f"{self.ds_min:.1e}; Newton from the predictor at lam = "
                    f"{y_pred[-1]:.10g}): {why}")

    def _land(self, y: np.ndarray, t: np.ndarray, y_new: np.ndarray, t_new: np.ndarray,
              bound: float):
        """The point on ``bound`` (solved at fixed ``lam``, from the chord's crossing),
        its tangent and the end message; ``y_new`` itself when that solve fails."""
        frac = (bound - y[-1]) / (y_new[-1] - y[-1])
        guess = y + frac * (y_new - y)
        land = self.system.correct(guess, self.e_last, bound, self.tol,
                                   4 * self.newton_max_iter)
        if not land.converged:
            return y_new, t_new, (f"left lam_bounds at lam = {y_new[-1]:.10g} (solving "
                                  f"at the bound failed: {land.message}) after")
        t_land = self.system.tangent(land.x, t)
        return (land.x, t if t_land is None else t_land,
                f"reached lam = {bound:.10g} (the bound) after")

    def add_point(self, y: np.ndarray, t: np.ndarray, y_new: np.ndarray,
                  t_new: np.ndarray) -> bool:
        """Accept ``y_new`` after ``y``, with the fold (before it) and the bifurcation
        (after its eigenvalues) between them; True when the callback asks to stop."""
        record = self.record
        index = len(record) - 1
        fold = self.finder.fold(y, t, y_new, t_new, index)
        if fold is not None:
            record.special.append(fold)
        stop = record.accept(y_new)
        if record.eigenvalues is not None:
            bifurcation = self.finder.bifurcation(y, y_new, record.eigs[-2],
                                                  record.eigs[-1], fold is not None, index)
            if bifurcation is not None:
                record.special.append(bifurcation)
        return stop


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
    sys = BorderedSystem(residual, jvp_x, dF_dlam, m, kwargs.get("precondition"),
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
