"""Token models with Sinkhorn (doubly stochastic) attention ([SABP22]; [GLPR25, Remark
3.5]; docs/conventions.md, "Sinkhorn attention"), for the run engine
(``meanfield.model.particles.TokenStepper``, ``simulate``) like the softmax models of
``meanfield.model.weighted_particles``.

Each head ``(Q, K, V)`` attends with the doubly stochastic ``P = diag(u) e^L diag(v)``,
``L_ij = beta <Q x_i, K x_j>`` (``meanfield.model.sinkhorn``), instead of the softmax rows:

- post-LN on the sphere (``on_sphere``): ``dx_i/dt = P^perp_{x_i} sum_h sum_j P^h_ij V_h
  x_j``, with P formed from the directions ``x_j/|x_j|`` (the RK4 stages off the sphere
  are renormalised first: the field is defined on the sphere, where the scaling's bounds
  hold);
- pure in R^d: ``dx_i/dt = sum_h sum_j P^h_ij V_h x_j``;
- a feed-forward layer ``W sigma(.)`` acts on the attention term summed over the heads,
  as for softmax attention (``meanfield.model.weighted_attention``).

Where ``A = Q^T K`` is symmetric positive semidefinite (Q = K = I: ``L = beta X X^T``)
the scaling is symmetric, ``u = v``, ``u_i (e^L u)_i = 1``, solved by the fixed point of
``symmetric_scaling`` (rate <= 1/2); symmetric but indefinite A takes the two-sided
solver in the gauge ``u = v``; any other A the two-sided scaling. With one head and A
symmetric, ``G = sum_i log u_i`` is defined (``potential``): for ``V = A`` (Q = K = V = I
among them) the flow is its gradient descent, ``dx_i/dt = -(1/beta) grad_{x_i} G``, on the
sphere and in R^d, so ``dG/dt = -beta sum_i |dx_i/dt|^2`` (docs/conventions.md derives
it by the envelope theorem).

Not defined here (refused by the config, ``meanfield.config.attention``): masks (a
causal doubly stochastic matrix is the identity), the rescaled flow, the other
architectures.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from meanfield.model.sinkhorn import (
    ScalingResult, marginal_error, symmetric_scaling, two_sided_scaling)
from meanfield.model.weighted_attention import Head, _feedforward
from meanfield.model.weighted_particles import WeightedParticles, _finite_stage, PURE_ADVICE
from solvers.particles.direct import normalize_rows, tangent_projection

# A = Q^T K counts as symmetric (and PSD) within this of its largest entry (eigenvalue)
SYMMETRY_TOLERANCE = 1e-12
KINDS = ("symmetric", "symmetric-indefinite", "general")


def head_kind(head: Head) -> str:
    """How a head's logits ``x_i^T A x_j`` (``A = Q^T K``) are scaled: ``"symmetric"``
    (A symmetric PSD: ``symmetric_scaling``), ``"symmetric-indefinite"`` (two-sided, in
    the gauge u = v) or ``"general"`` (two-sided)."""
    a = np.asarray(head.query, dtype=float).T @ np.asarray(head.key, dtype=float)
    scale = max(float(np.max(np.abs(a))), 1e-300)
    if np.max(np.abs(a - a.T)) > SYMMETRY_TOLERANCE * scale:
        return "general"
    eig = np.linalg.eigvalsh(0.5 * (a + a.T))
    return "symmetric" if eig[0] >= -SYMMETRY_TOLERANCE * max(abs(eig[-1]), 1e-300) \
        else "symmetric-indefinite"


class SinkhornParticles(WeightedParticles):
    """Tokens moved by Sinkhorn attention (module docstring).

    Args:
        heads: one ``Head`` or several (their attention terms add up).
        beta: inverse temperature >= 0 of the logits ``beta <Q x_i, K x_j>``.
        feedforward: ``(W, activation)`` or None.
        on_sphere: True for post-LN on S^{d-1}, False for pure tokens in R^d.
        tolerance: of the doubly stochastic marginals, ``max(|P 1 - 1|, |P^T 1 - 1|)``
            (``particles.sinkhorn_tolerance``).
    """

    def __init__(self, heads: Head | Sequence[Head], beta: float = 1.0,
                 feedforward: tuple | None = None, on_sphere: bool = True,
                 tolerance: float = 1e-12):
        super().__init__(heads, beta, "none", feedforward, on_sphere)
        if not (isinstance(tolerance, (int, float)) and 0 < tolerance < 1):
            raise ValueError(f"tolerance must be in (0, 1), got {tolerance!r}")
        self.tolerance = float(tolerance)
        self.kinds = tuple(head_kind(h) for h in self.heads)
        self.name = "Sinkhorn " + self.name
        # with A = Q^T K (the logits), the gradient-flow identity needs V = A
        self.has_potential = len(self.heads) == 1 and self.kinds[0] != "general"

    def _directions(self, x: np.ndarray) -> np.ndarray:
        return normalize_rows(x) if self.on_sphere else x

    def scalings(self, x: np.ndarray) -> list[ScalingResult]:
        """The scaling of each head at tokens ``x`` (directions on the sphere)."""
        y = self._directions(np.asarray(x, dtype=float))
        out = []
        for head, kind in zip(self.heads, self.kinds):
            logits = self.beta * ((y @ head.query.T) @ (y @ head.key.T).T)
            if kind == "general":
                out.append(two_sided_scaling(logits, self.tolerance))
                continue
            logits = 0.5 * (logits + logits.T)  # A symmetric up to round-off: exactly
            if kind == "symmetric":
                out.append(symmetric_scaling(logits, self.tolerance))
            else:
                out.append(two_sided_scaling(logits, self.tolerance, symmetric=True))
        return out

    def _field(self, x: np.ndarray, scalings: list[ScalingResult]) -> np.ndarray:
        y = self._directions(x)
        a = sum(s.matrix @ (y @ h.value.T) for s, h in zip(scalings, self.heads))
        v = _feedforward(a, self.feedforward)
        return tangent_projection(y, v) if self.on_sphere else v

    def velocity(self, x: np.ndarray) -> np.ndarray:
        """The velocities of the tokens ``x`` (rows; module docstring)."""
        _finite_stage(x, "lower time.dt (or time.tolerance)" if self.on_sphere
                      else PURE_ADVICE)
        return self._field(x, self.scalings(x))

    def attention(self, x: np.ndarray, t: float = 0.0) -> np.ndarray:
        """The doubly stochastic ``P^h``: ``(heads, n, n)`` (``t``: not used)."""
        del t
        return np.stack([s.matrix for s in self.scalings(x)])

    def potential(self, x: np.ndarray) -> float:
        """``G = sum_i log u_i`` (one head, ``Q^T K`` symmetric; else NaN)."""
        if not self.has_potential:
            return math.nan
        return self.scalings(x)[0].potential

    def diagnostics(self, x: np.ndarray) -> dict:
        """Per frame: ``sinkhorn_potential`` (G; only where defined, ``has_potential``),
        ``speed_squared_sum`` (``sum_i |dx_i/dt|^2``) and ``sinkhorn_error`` (the
        largest marginal error over the heads)."""
        x = np.asarray(x, dtype=float)
        scalings = self.scalings(x)
        v = self._field(x, scalings)
        out = {"speed_squared_sum": float(np.einsum("ij,ij->", v, v)),
               "sinkhorn_error": max(marginal_error(s.matrix) for s in scalings)}
        if self.has_potential:
            out["sinkhorn_potential"] = scalings[0].potential
        return out
