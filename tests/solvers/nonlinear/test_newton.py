"""Newton-Krylov against problems with known roots."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from solvers.nonlinear import newton_krylov


def circle_line(x):
    """x^2 + y^2 = 1, x = y: root (1/sqrt 2, 1/sqrt 2) in the first quadrant."""
    return np.array([x[0] ** 2 + x[1] ** 2 - 1.0, x[0] - x[1]])


def circle_line_jvp(x, v):
    return np.array([2 * x[0] * v[0] + 2 * x[1] * v[1], v[0] - v[1]])


ROOT_2D = np.full(2, 1 / np.sqrt(2))

M = 200
_A = (np.diag(np.full(M, 3.0)) - np.diag(np.ones(M - 1), 1) - np.diag(np.ones(M - 1), -1))
X_STAR = np.sin(np.linspace(0.0, 3.0, M)) + 0.5
_B = _A @ X_STAR + X_STAR ** 3


def cubic(x):
    """A x + x^3 = b with A symmetric positive definite: a monotone map, unique root."""
    return _A @ x + x ** 3 - _B


def cubic_jvp(x, v):
    return _A @ v + 3 * x ** 2 * v


def test_two_dimensional_root():
    res = newton_krylov(circle_line, np.array([2.0, 0.5]), jvp=circle_line_jvp, tol=1e-13)
    assert res.converged, res.message
    assert np.max(np.abs(res.x - ROOT_2D)) < 1e-13
    assert res.residual_norm <= 1e-13
    assert len(res.history) == res.iterations + 1
    assert res.iterations <= 8


def test_two_hundred_dimensional_root():
    res = newton_krylov(cubic, np.zeros(M), jvp=cubic_jvp, tol=1e-11)
    assert res.converged, res.message
    assert np.max(np.abs(res.x - X_STAR)) < 1e-11
    assert res.iterations <= 10


def test_quadratic_convergence_with_exact_jvp():
    """e_{k+1} / e_k^2 stays bounded (the iterates from max_iter = k, k = 1, 2, ...)."""
    x0 = X_STAR + 0.3 * np.cos(np.arange(M))
    errors = [np.max(np.abs(x0 - X_STAR))]
    for k in range(1, 12):
        res = newton_krylov(cubic, x0, jvp=cubic_jvp, tol=1e-12, max_iter=k)
        errors.append(np.max(np.abs(res.x - X_STAR)))
        if res.converged:
            break
    ratios = [e1 / e0 ** 2 for e0, e1 in itertools.pairwise(errors) if e0 > 1e-6]
    assert len(ratios) >= 3
    assert max(ratios) < 2.0, (errors, ratios)
    assert errors[-1] < 1e-13


def test_finite_difference_jvp_converges():
    res = newton_krylov(cubic, np.zeros(M), tol=1e-10)
    assert res.converged, res.message
    assert np.max(np.abs(res.x - X_STAR)) < 1e-10
    res2 = newton_krylov(circle_line, np.array([2.0, 0.5]), tol=1e-12)
    assert res2.converged, res2.message
    assert np.max(np.abs(res2.x - ROOT_2D)) < 1e-12


def test_no_root_returns_a_message():
    """x^2 + y^2 + 1 = 0 has no real root: no exception, converged False, a reason."""
    def f(x):
        return np.array([x[0] ** 2 + x[1] ** 2 + 1.0, x[0] - x[1]])

    res = newton_krylov(f, np.array([1.0, 2.0]), max_iter=50)
    assert not res.converged
    assert res.residual_norm >= 1.0 - 1e-12
    assert "iteration" in res.message and "||F||" in res.message
    assert np.all(np.isfinite(res.x))

    res = newton_krylov(f, np.array([1.0, 2.0]), max_iter=3, line_search=False)
    assert not res.converged and res.iterations == 3
    assert "3 iterations" in res.message


def test_non_finite_residual():
    """log x = 0 from x0 = 3: the full Newton step leaves the domain (NaN); the line
    search backtracks into it and converges."""
    def f(x):
        return np.log(x) if x[0] > 0 else np.full(1, np.nan)

    def jvp(x, v):
        return v / x

    res = newton_krylov(f, np.array([3.0]), jvp=jvp, line_search=False)
    assert not res.converged and "not finite" in res.message
    res = newton_krylov(f, np.array([3.0]), jvp=jvp)
    assert res.converged, res.message
    assert abs(res.x[0] - 1.0) < 1e-10


def test_diagonal_preconditioner_cuts_gmres_iterations():
    """A diagonally dominant system with diagonal from 1 to 1e6: GMRES without a
    preconditioner needs about one iteration per distinct scale; with the inverse
    diagonal (right preconditioning) a handful, and the same root."""
    rng = np.random.default_rng(0)
    m = 150
    d = np.logspace(0, 6, m)
    off = 0.2 * d[:, None] * rng.uniform(-1, 1, (m, m)) / m
    np.fill_diagonal(off, 0.0)
    a = np.diag(d) + off
    x_star = rng.standard_normal(m)
    b = a @ x_star + 0.1 * np.sin(x_star)

    def f(x):
        return a @ x + 0.1 * np.sin(x) - b

    def jvp(x, v):
        return a @ v + 0.1 * np.cos(x) * v

    def prec(r):
        return r / d

    plain = newton_krylov(f, np.zeros(m), jvp=jvp, tol=1e-8)
    pre = newton_krylov(f, np.zeros(m), jvp=jvp, precondition=prec, tol=1e-8)
    assert plain.converged and pre.converged, (plain.message, pre.message)
    assert np.max(np.abs(pre.x - x_star)) < 1e-8
    assert np.max(np.abs(plain.x - x_star)) < 1e-8
    assert pre.linear_iterations * 4 < plain.linear_iterations, (
        pre.linear_iterations, plain.linear_iterations)


def test_gmres_limit_is_reported():
    """With one inner iteration per step on a badly scaled system Newton stalls; the
    message names GMRES."""
    d = np.logspace(0, 4, 50)

    res = newton_krylov(lambda x: d * x - 1.0, np.zeros(50), jvp=lambda x, v: d * v,
                        max_krylov=1, max_iter=3)
    assert not res.converged
    assert "GMRES" in res.message


@pytest.mark.parametrize("kwargs", [{"x0": np.array([np.nan, 1.0])},
                                    {"tol": 0.0}, {"tol": -1.0}, {"max_iter": 0},
                                    {"max_krylov": 0}, {"x0": np.array([1j, 0])}])
def test_bad_arguments_raise(kwargs):
    calls = []

    def f(x):
        calls.append(1)
        return circle_line(x)

    args = {"x0": np.array([1.0, 0.0])}
    args.update(kwargs)
    x0 = args.pop("x0")
    with pytest.raises(ValueError):
        newton_krylov(f, x0, **args)
    assert not calls


def test_non_square_system_raises():
    with pytest.raises(ValueError, match="square"):
        newton_krylov(lambda x: np.array([x[0], x[1], 1.0]), np.zeros(2))


def test_already_converged():
    res = newton_krylov(circle_line, ROOT_2D, tol=1e-10)
    assert res.converged and res.iterations == 0 and res.history == [res.residual_norm]
