"""W_p modulo rotation on the circle: min over phi of W_p(mu, R_phi nu) (the method is
in the module docstring of ``circle_transport``). p = 2: exact between atoms by the
enumeration of the breakpoints (``rotation_w2_atoms``), a search over the shift with a
density (``rotation_w2_densities``); other p: a search over phi (``rotation_search``).
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar

from meanfield.metrics.circle_atoms import atoms_cost
from meanfield.metrics.circle_measures import TWO_PI, CircleMeasure
from meanfield.metrics.circle_quadrature import gl_cost
from meanfield.metrics.circle_shift import shift_distance

ROTATION_GRID = 64


def rotation_w2_atoms(mu: CircleMeasure, nu: CircleMeasure) -> float:
    """W_2^2 modulo rotation between atoms, exact: min over the breakpoints alpha in
    [0, 1) of V(alpha) = C(alpha) - mean(alpha)^2 (``circle_transport``'s docstring).

    The right slope of C jumps where the level V_j (between y_j and y_{j+1}) crosses U_i
    (between x_i and x_{i+1}), at alpha = V_j - U_i mod 1, by the Monge difference
    2 (x_{i+1} - x_i)(y_{j+1} - y_j) (the gaps, wrapping across 2 pi); C between
    breakpoints follows from the slopes. That running sum locates the minimiser; C is
    then re-evaluated exactly (``atoms_cost``) at the 8 best breakpoints, so the value
    returned is exact to round-off. O(n m log(n m)) time, O(n m) memory.
    """
    x, y = mu.angles, nu.angles
    gx = np.diff(np.concatenate([x, [x[0] + TWO_PI]]))
    gy = np.diff(np.concatenate([y, [y[0] + TWO_PI]]))
    alpha = np.mod(nu.levels[None, :] - mu.levels[:, None], 1.0).ravel()
    jump = (2 * gx[:, None] * gy[None, :]).ravel()
    alpha[alpha >= 1.0] = 0.0
    order = np.argsort(alpha, kind="stable")
    alpha, jump = alpha[order], jump[order]
    at0 = alpha <= 0.0  # already in the right slope at 0
    c0, s0 = atoms_cost(mu, nu, 0.0, 0.0, 2.0)
    slope = s0 + np.cumsum(np.where(at0, 0.0, jump))
    # C at each breakpoint: C(0) plus the slope of each interval times its length.
    c = c0 + np.concatenate([[0.0], np.cumsum(slope[:-1] * np.diff(alpha))])
    mean_f = float(np.dot(mu.weights, x))
    mean_g = float(np.dot(nu.weights, y))

    def v(a, cval):
        return cval - (mean_f - mean_g - a * TWO_PI) ** 2

    cand = alpha[np.argsort(v(alpha, c))[:8]]
    return float(min(v(a, atoms_cost(mu, nu, a, 0.0, 2.0)[0]) for a in cand))


def _mean_angle(m: CircleMeasure, k: int = 512) -> float:
    """The angle of the circular mean, from ``k`` quantiles (a starting point only)."""
    theta = m.quantile((np.arange(k) + 0.5) / k)
    return float(np.angle(np.mean(np.exp(1j * theta))))


def rotation_w2_densities(mu: CircleMeasure, nu: CircleMeasure) -> float:
    """W_2^2 modulo rotation with a density among the two: for a shift alpha of the
    levels the best rotation is the mean difference of the quantiles, so the minimum is
    that of V(alpha) = C(alpha) - (int D_alpha)^2 over alpha in [0, 1) (as for atoms).
    V is not convex: ``ROTATION_GRID`` values of alpha, then bounded Brent on the cells
    of the three best. Cost ~ROTATION_GRID + 100 quadratures of C (each O(N) panels)."""
    if nu.kind == "atoms":
        mu, nu = nu, mu

    def v(alpha: float) -> float:
        value, _, mean = gl_cost(mu, nu, alpha, 0.0, 2.0, with_mean=True)
        return value - mean**2

    grid = np.arange(ROTATION_GRID) / ROTATION_GRID
    vals = np.array([v(a) for a in grid])
    h = 1.0 / ROTATION_GRID
    best = vals.min()
    for i in np.argsort(vals)[:3]:
        res = minimize_scalar(v, bounds=(grid[i] - h, grid[i] + h), method="bounded",
                              options={"xatol": 1e-12})
        best = min(best, float(res.fun))
    return best


def rotation_search(mu: CircleMeasure, nu: CircleMeasure, p: float) -> float:
    """min over phi of W_p(mu, R_phi nu): ``ROTATION_GRID`` values of phi plus the two
    rotations that align the circular means, then bounded Brent around the three best grid
    values and each alignment. Cost (ROTATION_GRID + ~100) exact solves; the function of
    phi is not convex, so the result is the best local minimum found: global whenever the
    grid resolves the basins (spacing 2 pi / 64) or, for two concentrated measures whose
    basin is narrower than that, when the aligned means fall in it (a cluster against a
    cluster)."""
    grid = TWO_PI * np.arange(ROTATION_GRID) / ROTATION_GRID
    vals = np.array([shift_distance(mu, nu, p, phi) for phi in grid])
    h = TWO_PI / ROTATION_GRID
    best = vals.min()
    delta = _mean_angle(nu) - _mean_angle(mu)
    centres = [grid[i] for i in np.argsort(vals)[:3]] + [delta, -delta]
    for c in centres:
        res = minimize_scalar(lambda f: shift_distance(mu, nu, p, f),
                              bounds=(c - h, c + h), method="bounded",
                              options={"xatol": 1e-10})
        best = min(best, float(res.fun))
    return best
