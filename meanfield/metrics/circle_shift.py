"""The minimum over the mass shift alpha of the cost C(alpha) of ``circle_transport``
(its module docstring has the formulation), for nu rotated by phi: W_p(mu, R_phi nu)
(``shift_distance``) and the minimiser, for each pair of kinds: atoms / atoms by
``circle_atoms``, atoms / density with p = 1, 2 by ``circle_panels``, anything else by
Gauss-Legendre (``circle_quadrature``).
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar

from meanfield.metrics.circle_atoms import EPS, shift_minimum, slope_root
from meanfield.metrics.circle_measures import CircleMeasure
from meanfield.metrics.circle_panels import atoms_panels_shift
from meanfield.metrics.circle_quadrature import density as _density
from meanfield.metrics.circle_quadrature import gl_scaled

# The slope of C(alpha) for a density nu is a quadrature of 1 / rho(G^{-1}): trusted when
# min rho >= SLOPE_DENSITY_RATIO max rho (measured on von Mises pairs: exact to 1e-16 down
# to a ratio 1e-9, off by 2e-7 at 3e-14, wrong at 1e-15).
SLOPE_DENSITY_RATIO = 1e-8


def shift_solve(mu: CircleMeasure, nu: CircleMeasure, p: float, phi: float = 0.0):
    """min over alpha of C(alpha)^{1/p} for nu rotated by phi: ``(W_p, argmin)``.

    Atoms / atoms: ``circle_atoms.shift_minimum``. Atoms / density, p = 1, 2: the
    compiled moment sweep. Otherwise Gauss-Legendre (``circle_quadrature.gl_scaled``, the
    powers relative to the largest difference, so any p): ``slope_root`` on the slope,
    stopped when the better end's value is within 4 eps of the lower bound its tangent
    gives over the bracket (or the bracket is at round-off); with (nearly) empty cells,
    where 1/rho(G^{-1}) cannot be integrated (measured: von Mises 30 gave C' = -3.8 for
    a finite-difference -14.3, and a wrong minimum), bounded Brent on log C (C is
    convex, so log C is unimodal).
    """
    if mu.kind == "atoms" and nu.kind == "atoms":
        return shift_minimum(mu, nu, p, phi)
    if nu.kind == "atoms":
        mu, nu, phi = nu, mu, -phi  # W(mu, R_phi nu) = W(nu, R_-phi mu): nu is a density
    if p in (1, 2) and mu.kind == "atoms":
        value, arg = atoms_panels_shift(mu, nu, phi, int(p))
        return float(max(value, 0.0) ** (1 / p)), arg

    def ev(a):
        return gl_scaled(mu, nu, a, phi, p)

    def log_c(triple):
        return triple[0] + np.log(triple[1]) if triple[1] > 0 else -np.inf

    dens = _density(nu, nu.centers)
    if dens.min() >= SLOPE_DENSITY_RATIO * dens.max() and np.isfinite(ev(0.0)[2]):
        def certified(lo, plo, hi, phi_):
            # At the end b with the smaller C: C(x*) >= C(b) - |C'(b)| (hi - lo) for the
            # minimiser x* in [lo, hi] (convexity), in b's own scale (no underflow).
            _, value, slope = plo if log_c(plo) <= log_c(phi_) else phi_
            return True if abs(slope) * (hi - lo) <= 4 * EPS * value else None

        lo, plo, hi, phi_, found = slope_root(ev, stop=certified, tol=4 * EPS)
        if found is not None and found[0] == "zero":
            return 0.0, float(found[1])
        x, t = (lo, plo) if log_c(plo) <= log_c(phi_) else (hi, phi_)
        return float(np.exp(log_c(t) / p)), float(x)
    res = minimize_scalar(lambda a: log_c(ev(a)), bounds=(-1.0, 1.0), method="bounded",
                          options={"xatol": 1e-12, "maxiter": 500})
    return float(np.exp(res.fun / p)), float(res.x)


def shift_cost(mu: CircleMeasure, nu: CircleMeasure, p: float, phi: float = 0.0):
    """min over alpha of C(alpha) for nu rotated by phi (W_p^p), and the argmin (W_p^p
    under- or overflows at large p: the solvers work with W_p, ``shift_solve``)."""
    dist, arg = shift_solve(mu, nu, p, phi)
    return dist**p, arg


def shift_distance(mu: CircleMeasure, nu: CircleMeasure, p: float,
                    phi: float = 0.0) -> float:
    """W_p(mu, R_phi nu) (not its p-th power)."""
    return shift_solve(mu, nu, p, phi)[0]
