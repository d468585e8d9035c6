"""Sinkhorn (doubly stochastic) attention: the scaling of a kernel matrix to a doubly
stochastic one ([SABP22]; [GLPR25, Remark 3.5]; docs/conventions.md, "Sinkhorn
attention").

Given logits ``L`` (``n x n``, e.g. ``L_ij = beta <Q x_i, K x_j>``), the attention matrix is

    P_ij = e^{f_i + L_ij + g_j},   sum_j P_ij = 1,   sum_i P_ij = 1,

with potentials ``f, g`` (``u = e^f``, ``v = e^g``: ``P = diag(u) e^L diag(v)``), unique
up to ``(f + c, g - c)`` (the kernel is positive). Where ``L`` is symmetric the scaling
is symmetric, ``f = g``, ``u_i (K u)_i = 1`` with ``K = e^L``: the gauge is fixed and
``G = sum_i f_i = sum_i log u_i`` is defined (``ScalingResult.potential``).

Everything is solved in the log domain: the potentials are logarithms, and the kernel is
only exponentiated after the potentials are folded in (``e^{L_ij + f_i + g_j}``, entries
of the size of P's), so no ``e^{beta}`` is ever formed and any beta works.

**Symmetric positive semidefinite logits** (``L = X A X^T`` with A symmetric PSD, e.g.
``beta <x_i, x_j>``; ``symmetric_scaling``): start from ``f_i = -L_ii/2``, so that the
folded kernel ``k_ij = e^{L_ij - (L_ii + L_jj)/2}`` has a unit diagonal and entries
<= 1 (``L_ij <= (L_ii + L_jj)/2`` for a PSD form), and iterate on the correction
``a = e^{f - f_0}`` the fixed point ``a <- sqrt(a / (k a))`` (the log-domain
``f <- (f - log(e^L e^f))/2``). Every iterate stays in ``[1/n, 1]`` (``(k a)_i >= a_i``
by the unit diagonal, ``(k a)_i <= n``), so nothing overflows or underflows whatever
beta. Convergence: linearised at the solution the map is ``e -> (I - P) e / 2``; ``P``
is doubly stochastic and positive semidefinite (``diag(u) K diag(u)``, K a PSD
exponential kernel by Schur's product theorem), so its eigenvalues lie in [0, 1] and the
local rate is at most 1/2 (``(1 - lambda_min(P))/2``); clustered tokens (P close to
block diagonal) converge fastest. Globally the map contracts the oscillation of
``log a - log a*`` by ``(1 + tanh(Delta/4))/2`` (Birkhoff-Hopf, ``Delta`` the
projective diameter of K, ``<= 4 beta`` on the unit sphere), a slow bound at large beta
that the local rate beats in practice (about 40 iterations to 1e-12 on S^2 at beta = 2).

**General logits** (``two_sided_scaling``): the alternating Sinkhorn iteration
``f <- -log(e^L e^g)``, ``g <- -log(e^{L^T} e^f)`` on a folded kernel that is
re-exponentiated (the corrections absorbed into f, g) whenever a correction leaves
``[e^-ABSORB, e^ABSORB]``; its local rate is ``sigma_2(P)^2``, slow when P is close to
block diagonal. So after ``FIXED_POINT_ITERATIONS`` sweeps without reaching the
tolerance both solvers switch to Newton's method on the convex function
``Phi(f, g) = sum_ij e^{L_ij + f_i + g_j} - sum f - sum g`` (gradient: the marginal
errors; Hessian ``[[diag(P 1), P], [P^T, diag(P^T 1)]]``, positive semidefinite,
shifted by a relative 1e-13 that fixes the gauge), with a backtracking line search:
quadratic convergence near the solution. Newton forms a dense ``2n x 2n`` system
(``n <= NEWTON_MAX``); beyond, the fixed point continues to ``MAX_ITERATIONS``. A scaling that does not reach the
tolerance raises ``SolverError`` naming ``particles.sinkhorn_tolerance``.

The tolerance is on the marginals of the P returned: ``max(|P 1 - 1|, |P^T 1 - 1|)``,
computed from P itself (round-off included: ~n 1e-16).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from meanfield.errors import SolverError

# Fixed-point sweeps before Newton takes over (the symmetric map needs ~40 to 1e-12)
FIXED_POINT_ITERATIONS = 200
# Newton steps at most, and the largest n for its dense 2n x 2n solve (~0.1 s at 1000)
NEWTON_STEPS = 60
NEWTON_MAX = 2000
# The fixed point's sweeps at most where Newton is not used (n > NEWTON_MAX)
MAX_ITERATIONS = 20_000
# A multiplicative correction beyond e^ABSORB is folded into the potentials and the
# kernel re-exponentiated (two-sided iteration)
ABSORB = 30.0
# Newton's Hessian is shifted by this times its largest diagonal entry (``_newton``)
REGULARIZATION = 1e-13
TOLERANCE_KEY = "particles.sinkhorn_tolerance"


@dataclass
class ScalingResult:
    """A doubly stochastic scaling ``P = e^{f_i + L_ij + g_j}``.

    Attributes:
        matrix: P, ``(n, n)``.
        f, g: the log potentials (symmetric scalings: ``f = g``).
        error: ``max(|P 1 - 1|, |P^T 1 - 1|)`` of ``matrix``.
        iterations: fixed-point sweeps; newton: Newton steps.
        symmetric: whether ``f = g`` (then ``potential`` is ``G = sum_i f_i``).
    """

    matrix: np.ndarray
    f: np.ndarray
    g: np.ndarray
    error: float
    iterations: int
    newton: int
    symmetric: bool

    @property
    def potential(self) -> float:
        """``G = sum_i log u_i`` of a symmetric scaling (NaN otherwise)."""
        return float(np.sum(self.f)) if self.symmetric else math.nan


def marginal_error(p: np.ndarray) -> float:
    """``max(|P 1 - 1|, |P^T 1 - 1|)``: how far P is from doubly stochastic."""
    return float(max(np.max(np.abs(p.sum(axis=1) - 1.0)),
                     np.max(np.abs(p.sum(axis=0) - 1.0))))


def _folded(logits: np.ndarray, f: np.ndarray, g: np.ndarray) -> np.ndarray:
    with np.errstate(under="ignore", over="ignore"):
        return np.exp(logits + f[:, None] + g[None, :])


def _check(logits: np.ndarray, tolerance: float) -> np.ndarray:
    logits = np.asarray(logits, dtype=float)
    if logits.ndim != 2 or logits.shape[0] != logits.shape[1] or logits.shape[0] < 1:
        raise ValueError(f"logits must be a square (n, n) array, got shape {logits.shape}")
    if not np.all(np.isfinite(logits)):
        raise ValueError("logits must be finite (found NaN or inf)")
    if not (isinstance(tolerance, (int, float)) and 0 < tolerance < 1):
        raise ValueError(f"tolerance must be in (0, 1), got {tolerance!r}")
    return logits


def symmetric_scaling(logits: np.ndarray, tolerance: float = 1e-12) -> ScalingResult:
    """The symmetric scaling ``u_i (e^L u)_i = 1`` of symmetric positive semidefinite
    logits (module docstring: start, bounds, convergence).

    Args:
        logits: ``(n, n)`` symmetric PSD (e.g. ``beta X X^T``); not checked for PSD,
            but then the iterates' bounds and rate no longer hold.
        tolerance: of the marginals of the returned P.

    Raises:
        SolverError: the tolerance is not reached (the message names
            ``particles.sinkhorn_tolerance``).
    """
    logits = _check(logits, tolerance)
    n = logits.shape[0]
    f0 = -0.5 * np.diag(logits)
    k = _folded(logits, f0, f0)  # unit diagonal, entries <= 1 (PSD logits)
    a = np.ones(n)
    sweeps = MAX_ITERATIONS if n > NEWTON_MAX else FIXED_POINT_ITERATIONS
    for it in range(1, sweeps + 1):
        s = k @ a
        if np.max(np.abs(a * s - 1.0)) <= 0.5 * tolerance:
            break
        a = np.sqrt(a / s)
    f = f0 + np.log(a)
    p = a[:, None] * k * a[None, :]
    error = marginal_error(p)
    if error <= tolerance:
        return ScalingResult(p, f, f.copy(), error, it, 0, True)
    return _finish(logits, f, f.copy(), tolerance, it, symmetric=True)


def two_sided_scaling(logits: np.ndarray, tolerance: float = 1e-12,
                      symmetric: bool = False) -> ScalingResult:
    """The two-sided scaling ``P = diag(e^f) e^L diag(e^g)`` of any finite logits
    (module docstring). ``symmetric``: the logits are symmetric; the result is then put
    in the gauge ``f = g`` (the symmetric scaling, whose ``potential`` is defined).

    Raises:
        SolverError: the tolerance is not reached.
    """
    logits = _check(logits, tolerance)
    n = logits.shape[0]
    f = -np.max(logits, axis=1)
    g = -logsumexp(logits + f[:, None], axis=0)
    k = _folded(logits, f, g)
    b = np.ones(n)
    sweeps = MAX_ITERATIONS if n > NEWTON_MAX else FIXED_POINT_ITERATIONS
    for it in range(1, sweeps + 1):
        with np.errstate(divide="ignore", over="ignore"):
            a = 1.0 / (k @ b)
            b = 1.0 / (k.T @ a)
        la, lb = np.log(a), np.log(b)
        if not (np.all(np.isfinite(la)) and np.all(np.isfinite(lb))) or \
                max(np.max(np.abs(la)), np.max(np.abs(lb))) > ABSORB:
            # a row or column of the folded kernel under- or overflowed: one exact
            # log-domain sweep from g, then a fresh kernel
            f = -logsumexp(logits + g[None, :], axis=1)
            g = -logsumexp(logits + f[:, None], axis=0)
            k, b = _folded(logits, f, g), np.ones(n)
            continue
        if np.max(np.abs(a * (k @ b) - 1.0)) <= 0.5 * tolerance:
            break
    else:
        a = 1.0 / (k @ b)
    f, g = f + np.log(a), g + np.log(b)
    if symmetric:
        f, g = _symmetric_gauge(f, g)
    p = _folded(logits, f, g)
    error = marginal_error(p)
    if error <= tolerance:
        return ScalingResult(p, f, g, error, it, 0, symmetric)
    return _finish(logits, f, g, tolerance, it, symmetric)


def _symmetric_gauge(f: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(f + c, g - c)`` with equal sums, then both their mean (equal for a symmetric
    kernel up to the solver's error)."""
    c = 0.5 * (np.sum(g) - np.sum(f)) / f.size
    h = 0.5 * ((f + c) + (g - c))
    return h, h.copy()


def _finish(logits: np.ndarray, f: np.ndarray, g: np.ndarray, tolerance: float,
            sweeps: int, symmetric: bool) -> ScalingResult:
    """Newton steps from the fixed point's potentials (``n <= NEWTON_MAX``), else the
    failure."""
    n = logits.shape[0]
    steps = 0
    if n <= NEWTON_MAX:
        f, g, steps = _newton(logits, f, g, tolerance)
        if symmetric:
            f, g = _symmetric_gauge(f, g)
    p = _folded(logits, f, g)
    error = marginal_error(p)
    if error <= tolerance:
        return ScalingResult(p, f, g, error, sweeps, steps, symmetric)
    raise SolverError(
        f"the Sinkhorn scaling of the attention matrix did not reach "
        f"{TOLERANCE_KEY} = {tolerance:g}: marginal error {error:.3g} after {sweeps} "
        f"fixed-point sweeps and {steps} Newton steps (n = {n}); loosen "
        f"{TOLERANCE_KEY} (round-off alone is ~n 1e-16) or lower beta")


def _objective(logits: np.ndarray, f: np.ndarray, g: np.ndarray) -> float:
    """``Phi(f, g) = sum_ij e^{L_ij + f_i + g_j} - sum f - sum g`` (inf past the double
    range)."""
    top = float(logsumexp(logits + f[:, None] + g[None, :]))
    if top > 700:
        return math.inf
    return math.exp(top) - float(np.sum(f) + np.sum(g))


def _newton(logits: np.ndarray, f: np.ndarray, g: np.ndarray, tolerance: float
            ) -> tuple[np.ndarray, np.ndarray, int]:
    """Damped Newton on ``Phi`` (module docstring), its Hessian shifted by
    ``REGULARIZATION`` (which also fixes the gauge: the shift moves nothing along
    ``(1, -1)``, where the gradient has no part). Returns the potentials and the steps
    taken."""
    n = logits.shape[0]
    phi = _objective(logits, f, g)
    for step in range(1, NEWTON_STEPS + 1):
        p = _folded(logits, f, g)
        rows, cols = p.sum(axis=1), p.sum(axis=0)
        residual = np.concatenate([rows - 1.0, cols - 1.0])
        worst = float(np.max(np.abs(residual)))
        if worst <= tolerance:
            return f, g, step - 1
        hessian = np.block([[np.diag(rows), p], [p.T, np.diag(cols)]])
        # A token whose attention to the others underflows makes (e_i, -e_i) a null
        # direction of the Hessian (the gradient has no part along it): a relative
        # shift REGULARIZATION keeps the solve well posed and moves nothing there.
        hessian[np.diag_indices(2 * n)] += REGULARIZATION * float(np.max(np.diag(hessian)))
        try:
            delta = np.linalg.solve(hessian, -residual)
        except np.linalg.LinAlgError:
            break
        t = 1.0
        for _ in range(40):
            f_new, g_new = f + t * delta[:n], g + t * delta[n:]
            phi_new = _objective(logits, f_new, g_new)
            with np.errstate(over="ignore", invalid="ignore"):  # (a rejected trial)
                closer = marginal_error(_folded(logits, f_new, g_new)) < worst
            if phi_new <= phi or closer:
                break
            t *= 0.5
        else:
            break
        f, g, phi = f_new, g_new, phi_new
    return f, g, NEWTON_STEPS
