"""The exact Gaussian mean field of pure self-attention with general weights in R^d.

Tokens x in R^d move by dx/dt = V E_{P(x, .)}[y] with attention weights
P(x, y) ∝ e^{<Q x, K y>} = e^{y^T A x}, A = K^T Q. For mu = N(alpha, Sigma) the weights
tilt the Gaussian: y ~ N(alpha, Sigma) reweighted by e^{y^T A x} is N(alpha + Sigma A x,
Sigma), so the mean-field velocity is the affine field

    v(x) = V (alpha + Sigma A x).

An affine field maps a Gaussian to a Gaussian, so mu_t = N(alpha_t, Sigma_t) for all
times, with (M = V Sigma A)

    alpha' = V (I + Sigma A) alpha,        Sigma' = M Sigma + Sigma M^T.

This module integrates that ODE (``solve_ivp``, DOP853, relative tolerance ``rtol``) and
stops with an error where Sigma blows up in finite time (it can: in d = 1 with
v a sigma0 > 0, sigma(t) = sigma0 / (1 - 2 v a sigma0 t)). The equations are those of
docs/conventions.md (general weights); they are the reference of a token system started
from i.i.d. Gaussian tokens.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

# Sigma larger than this (spectral norm) is taken as a finite-time blow-up: the tilt
# Sigma A x of the attention mean is then carried by ever fewer extreme tokens
BLOWUP_NORM = 1e12


@dataclass
class GaussianMeanField:
    """The Gaussian solution at the requested times.

    Attributes:
        times: ``(T,)`` times.
        mean: ``(T, d)`` the means alpha_t.
        covariance: ``(T, d, d)`` the covariances Sigma_t (symmetric).
    """

    times: np.ndarray
    mean: np.ndarray
    covariance: np.ndarray


def _matrix(name: str, value, d: int) -> np.ndarray:
    m = np.asarray(value, dtype=float)
    if m.shape != (d, d) or not np.all(np.isfinite(m)):
        raise ValueError(f"{name} must be a finite {d} x {d} matrix, got shape {m.shape}")
    return m


def gaussian_mean_field(mean, covariance, times, *, query=None, key=None, value=None,
                        rtol: float = 1e-11) -> GaussianMeanField:
    """Solve the Gaussian mean field N(alpha_t, Sigma_t) of pure self-attention.

    Args:
        mean: ``(d,)`` alpha_0.
        covariance: ``(d, d)`` Sigma_0, symmetric positive semi-definite.
        times: increasing times >= 0 at which to report the solution.
        query, key, value: ``(d, d)`` Q, K, V (None: the identity).
        rtol: relative tolerance of the DOP853 integration (atol is ``rtol * 1e-3``).

    Returns:
        The means and covariances at ``times``.

    Raises:
        ValueError: bad shapes, a covariance that is not symmetric positive
            semi-definite, times not increasing, or a covariance that blows up before
            the last time (the message gives the time).
    """
    alpha0 = np.asarray(mean, dtype=float).ravel()
    d = alpha0.size
    if d == 0 or not np.all(np.isfinite(alpha0)):
        raise ValueError(f"mean must be a finite vector, got {mean!r}")
    sigma0 = _matrix("covariance", covariance, d)
    if not np.allclose(sigma0, sigma0.T, rtol=0, atol=1e-12 * max(1.0, np.abs(sigma0).max())):
        raise ValueError("covariance must be symmetric")
    if np.linalg.eigvalsh(sigma0).min() < -1e-12 * max(1.0, np.abs(sigma0).max()):
        raise ValueError("covariance must be positive semi-definite")
    eye = np.eye(d)
    q = eye if query is None else _matrix("query", query, d)
    k = eye if key is None else _matrix("key", key, d)
    v = eye if value is None else _matrix("value", value, d)
    a = k.T @ q
    times = np.asarray(times, dtype=float).ravel()
    if times.size == 0 or times[0] < 0 or np.any(np.diff(times) <= 0):
        raise ValueError("times must be increasing and >= 0")

    def rhs(_t, y):
        alpha, sigma = y[:d], y[d:].reshape(d, d)
        m = v @ sigma @ a
        return np.concatenate([v @ (alpha + sigma @ (a @ alpha)),
                               (m @ sigma + sigma @ m.T).ravel()])

    def blowup(_t, y):
        return BLOWUP_NORM - np.abs(y[d:]).max()
    blowup.terminal = True

    y0 = np.concatenate([alpha0, sigma0.ravel()])
    sol = solve_ivp(rhs, (0.0, times[-1]), y0, method="DOP853", t_eval=times, rtol=rtol,
                    atol=rtol * 1e-3, events=blowup)
    if sol.status == 1 or not sol.success:
        when = sol.t_events[0][0] if sol.status == 1 else sol.t[-1]
        raise ValueError(f"the covariance blows up at t = {when:.6g} (before t = "
                         f"{times[-1]:g}): end the times before it ({sol.message})")
    mean_t = sol.y[:d].T
    cov = sol.y[d:].T.reshape(-1, d, d)
    cov = 0.5 * (cov + np.swapaxes(cov, 1, 2))  # symmetric to round-off
    return GaussianMeanField(times, mean_t, cov)
