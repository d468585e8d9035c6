"""Tokens on S^1 for the ensembles, by Fourier moments: ``O(B n K)`` per field evaluation
instead of the dense ``O(B n^2)``, the same field to round-off.

On the circle the kernel is ``Z(phi) = e^{beta cos phi} = sum_k I_k(beta) e^{ik phi}``.
With the moments ``S_m = sum_j e^{i m theta_j}`` of a system, the attention sums of token
i are

    D_i = sum_j Z(theta_j - theta_i)            = sum_k I_k S_k e^{-ik theta_i},
    N_i = sum_j Z(theta_j - theta_i) e^{i(theta_j - theta_i)}
                                                = sum_k I_k S_{k+1} e^{-i(k+1) theta_i},

``|k| <= K`` with ``I_{K+1}(beta) <= accuracy I_0(beta)`` (``S_{-m} = conj(S_m)``), and
the angular speed is ``theta_i' = Im N_i / D_i`` (SA) or ``Im N_i / n`` (USA): the
fields of ``meanfield.model.particles.AttentionParticles`` on S^1 (their ``P^perp x_j``
has the angular component ``sin(theta_j - theta_i)``). As a velocity in the plane,
``v_i = theta_i' J x_i`` (``J`` the quarter turn): tangent to the circle of radius
``|x_i|``, so the RK4 stages off the circle see a smooth extension of the field that keeps
every circle, and the retraction keeps the order.

Cost per evaluation: the powers ``z_i^m`` (``m <= K + 1``, one cumulative product: an
error ``~m eps``), two moment sums and two contractions, ``~10 B n K`` flops; for beta =
4 and accuracy 1e-15, K = 24: at n = 3200 about 90x fewer than the dense field.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special

from meanfield.model.particles import check_beta


def moment_order(beta: float, accuracy: float = 1e-15) -> int:
    """The smallest K with ``I_{K+1}(beta) <= accuracy I_0(beta)`` (at least 1)."""
    k = 1
    while special.ive(k + 1, beta) > accuracy * special.ive(0, beta):
        k += 1
    return k


def powers(theta: np.ndarray, order: int) -> np.ndarray:
    """``e^{i m theta}`` for ``m = 0..order``, shape ``theta.shape + (order + 1,)``."""
    z = np.exp(1j * theta)[..., None]
    out = np.repeat(z, order + 1, axis=-1)
    out[..., 0] = 1.0
    return np.cumprod(out, axis=-1)


class CircleMomentParticles:
    """SA or USA tokens on S^1 whose velocity takes a batch ``(B, n, 2)`` (the ensemble
    protocol of ``meanfield.model.ensemble``), by Fourier moments (module docstring).

    Args:
        beta: inverse temperature >= 0 (USA: its speeds carry ``e^beta``).
        normalized: True for SA, False for USA.
        accuracy: the Bessel tail dropped, relative to ``I_0(beta)``.
    """

    on_sphere = True

    def __init__(self, beta: float, normalized: bool = True, accuracy: float = 1e-15):
        self.beta = check_beta(beta)
        self.normalized = bool(normalized)
        self.order = moment_order(self.beta, accuracy)
        # I_k(beta) e^{-beta}, k = 0..K+1 (scaled: no overflow; USA multiplies back)
        self.coefficients = special.ive(np.arange(self.order + 2), self.beta)
        self.name = "SA" if self.normalized else "USA"

    def angular_velocity(self, theta: np.ndarray) -> np.ndarray:
        """``theta_i'`` for angles ``(..., n)`` (each leading index one system)."""
        k, c = self.order, self.coefficients
        p = powers(theta, k + 1)                    # e^{i m theta_i}, m = 0..K+1
        s = p.sum(axis=-2)                          # S_m, (..., K+2)
        # N_i = sum_{m=-K+1}^{K+1} c_{|m-1|} S_m e^{-i m theta_i}
        cm = c[np.abs(np.arange(k + 2) - 1)]        # m = 0..K+1
        num = np.einsum("...nm,...m->...n", p.conj(), cm * s)
        neg = c[2:k + 1] * s[..., 1:k].conj()       # m = -1..-(K-1): c_{|m|+1} S_m
        num += np.einsum("...nm,...m->...n", p[..., 1:k], neg)
        if not self.normalized:
            return num.imag * (math.exp(self.beta) / theta.shape[-1])
        den = c[0] * s[..., :1].real + 2.0 * np.einsum(
            "...nm,...m->...n", p[..., 1:k + 1].conj(), c[1:k + 1] * s[..., 1:k + 1]).real
        return num.imag / den

    def velocity(self, x: np.ndarray) -> np.ndarray:
        """``v_i = theta_i' J x_i`` for tokens ``(n, 2)`` or a batch ``(B, n, 2)``."""
        x = np.asarray(x, dtype=float)
        w = self.angular_velocity(np.arctan2(x[..., 1], x[..., 0]))
        return np.stack([-w * x[..., 1], w * x[..., 0]], axis=-1)
