"""Lipschitz constants of the attention velocity field and Dobrushin's stability bound.

Two solutions of the continuity equation (no noise) stay close in W1: if the empirical
measure ``mu^n`` of the tokens and the PDE solution ``mu`` start ``W1`` apart, then

    W1(mu^n_t, mu_t) <= (pi/2) exp( int_0^t (L_x + L_mu(s)) ds ) W1(mu^n_0, mu_0)

(geodesic W1 on both sides; docs/dobrushin.md has the derivation). The constants bound
the velocity field ``v[nu](x) = P^perp_x a(x)`` extended to the closed unit ball ``B``
(the chord between two points of the sphere lies in it):

- USA, ``a = m = int e^{beta <x, y>} y dnu``: ``|m| <= e^beta``, ``|Dm| <= beta e^beta``,
  so ``L_x = 2 (1 + beta) e^beta`` (``Dv[t] = Dm[t] - <t, m> x - <x, Dm[t]> x - <x, m>
  t``) and ``L_mu = (1 + beta) e^beta`` (the Lipschitz constant of ``z -> e^{beta <y, z>}
  z`` on ``B``, with Kantorovich-Rubinstein);
- SA, ``a = m/Z``, ``Z = int e^{beta <x, y>} dnu``: ``|a| <= 1`` and ``Da[t] = beta
  Cov_w(<t, y>, y)`` under the attention weights, ``|Da| <= beta``, so ``L_x = 2 (1 +
  beta)``; ``a_n - a = (m_n - m)/Z + a_n (Z - Z_n)/Z`` gives ``L_mu(t) = (1 + 2 beta)
  e^beta / Z_min(t)``, with ``Z_min(t) = min_y (K*mu_t)(y) >= e^{-beta r(t)}`` by Jensen
  (``r`` the order parameter of the PDE solution ``mu_t``).

These are worst-case constants: the bound is valid, and far above the measured errors
(``e^{17 t}`` at beta = 1, SA). With noise the empirical measure is not a solution of
the PDE and the bound does not apply (propagation of chaos is then measured, not
bounded): ``dobrushin_bound`` is for ``kappa = inf`` only.
"""
from __future__ import annotations

import math

import numpy as np


def lipschitz_constants(beta: float, normalized: bool,
                        order_parameter: np.ndarray | float = 1.0
                        ) -> tuple[float, np.ndarray]:
    """``(L_x, L_mu)`` of the module docstring; SA's ``L_mu`` at the order parameters
    ``r`` of the PDE solution (1: the bound for any measure)."""
    beta = float(beta)
    r = np.asarray(order_parameter, dtype=float)
    if normalized:
        return 2 * (1 + beta), (1 + 2 * beta) * np.exp(beta * (1 + r))
    return 2 * (1 + beta) * math.exp(beta), np.full(r.shape, (1 + beta) * math.exp(beta))


def dobrushin_bound(initial_distance: np.ndarray | float, times: np.ndarray,
                    order_parameter: np.ndarray, beta: float, normalized: bool
                    ) -> np.ndarray:
    """``(pi/2) exp(int_0^t (L_x + L_mu)) W1_0`` at ``times`` (increasing, from 0), the
    integral by the trapezoid rule on ``times`` with the PDE's order parameter there.

    Args:
        initial_distance: ``W1(mu^n_0, mu_0)`` (geodesic), scalar or array (broadcast
            against the times on a new last axis).
        times: (k,) times, ``times[0] = 0``.
        order_parameter: (k,) the PDE solution's ``r(t)`` at ``times`` (SA's ``L_mu``).
        beta, normalized: the model.

    Returns:
        ``initial_distance[..., None] * factor[times]``.
    """
    times = np.asarray(times, dtype=float)
    lx, lmu = lipschitz_constants(beta, normalized, order_parameter)
    rate = lx + np.broadcast_to(lmu, times.shape)
    exponent = np.concatenate([[0.0], np.cumsum(0.5 * (rate[1:] + rate[:-1])
                                                * np.diff(times))])
    with np.errstate(over="ignore"):
        factor = 0.5 * math.pi * np.exp(exponent)
    return np.asarray(initial_distance, dtype=float)[..., None] * factor
