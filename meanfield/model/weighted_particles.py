"""Token models with general weights (Q, K, V) for the particle runs: the fields of
``meanfield.model.weighted_attention`` as models of ``meanfield.model.particles``
(``TokenStepper``, ``simulate``), each with ``velocity``, ``on_sphere``,
``time_dependent``, ``name``, the attention matrices ``attention(x, t)`` and
``check_state(x, t)`` (called after each accepted step); ``euclidean``: tokens in R^d,
any d >= 1 (``simulate`` takes them as given).

- ``WeightedParticles(heads, beta, mask, feedforward, on_sphere=True)``: post-LN tokens on
  S^{d-1}, ``dx_i/dt = P^perp_{x_i} sum_h sum_j P^h_ij V_h x_j`` (the field of
  ``sphere_velocity``, extended off the sphere as SA's; ``Q = K = V = I``: the SA model of
  ``AttentionParticles``, its trajectories to round-off);
  ``on_sphere=False``: pure self-attention in R^d, ``dx_i/dt = sum_h sum_j P^h_ij V_h x_j``
  (``pure_velocity``), with the feed-forward layer ``W sigma(.)`` of the attention term
  where given. x grows like ``e^{t |V|}``: the run stops with ``SolverError`` (advising
  the rescaled flow or a shorter ``time.t_final``) once the logits
  ``beta <Q x_i, K x_j>`` or the values ``V x_j`` could pass the double range, before any
  inf or NaN enters the tokens.
- ``RescaledParticles(head, beta, mask)``: ``z_i = e^{-tV} x_i`` of one head,
  ``dz_i/dt = sum_j P_ij(t) V (z_j - z_i)`` (``rescaled_velocity``, P at ``x = e^{tV} z``
  without forming x): the field depends on t (``time_dependent = True``, ``velocity(z,
  t)``), so the stepper passes the time of each RK4 stage (``RescaledForm`` gives
  ``e^{t(V - cI)}`` there without an expm per stage). ``positions(z, t)`` maps back
  to x where it is a double. A V whose ``e^{t(V - cI)}`` cannot be formed up to
  ``time.t_final`` is refused with the config (``meanfield.config.weights``).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.linalg import expm

from meanfield.errors import SolverError
from meanfield.model.particles import check_beta
from meanfield.model.weighted_attention import (
    MASKS, Head, RescaledForm, attention_matrix, check_head, pure_velocity,
    rescaled_attention, rescaled_field)
from solvers.particles.direct import tangent_projection

# The pure flow stops once a bound of its logits or values passes this (the double
# maximum is 1.8e308: the margin covers the growth within one more step, e^{h |V|}).
OVERFLOW_LIMIT = 1e300
PURE_ADVICE = ("use particles.rescaled = true (z = e^{-tV} x stays bounded) or a shorter "
               "time.t_final")


def _as_heads(heads: Head | Sequence[Head]) -> tuple[Head, ...]:
    seq = (heads,) if isinstance(heads, Head) else tuple(heads)
    if not seq:
        raise ValueError("at least one head is needed")
    d = np.asarray(seq[0].query).shape[0]
    return tuple(check_head(h, d) for h in seq)


def _check_mask(mask: str) -> str:
    if mask not in MASKS:
        raise ValueError(f"mask must be one of {', '.join(MASKS)}, got {mask!r}")
    return mask


def _describe(heads: tuple[Head, ...], mask: str, feedforward) -> str:
    parts = [f"{len(heads)} head" + ("s" if len(heads) > 1 else "")]
    if feedforward is not None:
        parts.append(f"feed-forward {feedforward[1]}")
    if mask != "none":
        parts.append(f"{mask} mask")
    return ", ".join(parts)


class WeightedParticles:
    """Post-LN tokens on the sphere (``on_sphere``) or pure self-attention in R^d with
    general weights (module docstring).

    Args:
        heads: one ``Head`` or several (their attention terms add up).
        beta: inverse temperature >= 0 of the logits ``beta <Q x_i, K x_j>``.
        mask: ``"none"`` or ``"causal"``.
        feedforward: ``(W, activation)`` or None (see ``pure_velocity``).
        on_sphere: True for post-LN on S^{d-1}, False for pure tokens in R^d.
    """

    time_dependent = False

    def __init__(self, heads: Head | Sequence[Head], beta: float = 1.0, mask: str = "none",
                 feedforward: tuple | None = None, on_sphere: bool = True):
        self.heads = _as_heads(heads)
        self.beta = check_beta(beta)
        self.mask = _check_mask(mask)
        self.feedforward = feedforward
        self.on_sphere = bool(on_sphere)
        self.euclidean = not self.on_sphere  # tokens in R^d, any d >= 1 (simulate)
        self.dim = self.heads[0].query.shape[0]
        kind = "post-LN SA" if self.on_sphere else "pure SA in R^d"
        self.name = f"{kind} ({_describe(self.heads, self.mask, feedforward)})"
        # bounds of |logit| / |x|^2 and |V x| / |x| over the heads (the overflow check)
        self._logit_bound = self.beta * max(
            np.linalg.norm(h.query, 2) * np.linalg.norm(h.key, 2) for h in self.heads)
        self._value_bound = sum(np.linalg.norm(h.value, 2) for h in self.heads)

    def velocity(self, x: np.ndarray) -> np.ndarray:
        """The velocities of the tokens ``x`` (rows).

        On the sphere: ``P^perp_{x_i}`` of the pure field at ``x`` as given, as
        ``AttentionParticles`` evaluates SA. The RK4 stages lie off the sphere by
        O(h^2); ``sphere_velocity`` renormalises them first, another extension of the
        field off the sphere (same order 4), whose trajectories differ from SA's by
        ~1e-10 per step of 0.05; this one gives SA's to round-off.
        """
        _finite_stage(x, "lower time.dt (or time.tolerance)" if self.on_sphere
                      else PURE_ADVICE)
        v = pure_velocity(x, self.heads, beta=self.beta, mask=self.mask,
                          feedforward=self.feedforward)
        return tangent_projection(x, v) if self.on_sphere else v

    def attention(self, x: np.ndarray, t: float = 0.0) -> np.ndarray:
        """The attention matrices ``P^h`` of the tokens ``x``: ``(heads, n, n)``, rows
        summing to 1 (``t`` is not used: the field is autonomous)."""
        del t
        return np.stack([attention_matrix(x, h, self.beta, self.mask) for h in self.heads])

    def check_state(self, x: np.ndarray, t: float) -> None:
        """Raise ``SolverError`` if the tokens are not finite, or (pure) if their logits
        or values could pass the double range (``OVERFLOW_LIMIT``)."""
        if not np.all(np.isfinite(x)):
            advice = "lower time.dt" if self.on_sphere else PURE_ADVICE
            raise SolverError(f"the tokens became non-finite at t = {t:.6g}; {advice}")
        if self.on_sphere:
            return
        r = float(np.max(np.sqrt(np.einsum("ij,ij->i", x, x))))
        if self._logit_bound * r * r > OVERFLOW_LIMIT or self._value_bound * r > \
                OVERFLOW_LIMIT:
            raise SolverError(
                f"pure self-attention: max |x_i| = {r:.3g} at t = {t:.6g}, where the "
                f"attention logits beta <Q x_i, K x_j> or the values V x_j approach the "
                f"double range (x grows like e^(t |V|)); {PURE_ADVICE}")


def _finite_stage(x: np.ndarray, advice: str, t: float | None = None) -> None:
    """``SolverError`` (not the ValueError of a bad argument) when an integrator stage
    hands the field non-finite tokens: the step overflowed, which is the run's failure."""
    if not np.all(np.isfinite(x)):
        at = "" if t is None else f" at t = {t:.6g}"
        raise SolverError(f"the tokens of an integrator stage became non-finite{at}; "
                          f"{advice}")


class RescaledParticles:
    """The rescaled pure flow ``z = e^{-tV} x`` of one head (module docstring).

    Args:
        head: the weights (one head: the rescaling needs one V; a sequence of one is
            accepted).
        beta: inverse temperature >= 0.
        mask: ``"none"`` or ``"causal"``.
    """

    on_sphere = False
    euclidean = True  # tokens in R^d, any d >= 1 (simulate)
    time_dependent = True
    feedforward = None

    def __init__(self, head: Head | Sequence[Head], beta: float = 1.0, mask: str = "none"):
        heads = _as_heads(head)
        if len(heads) != 1:
            raise ValueError(f"the rescaled dynamics takes one head, got {len(heads)}: "
                             "the rescaling z = e^{-tV} x needs a single value matrix V")
        self.heads, self.head = heads, heads[0]
        # V decomposed once, e^{t(V - cI)} of the last stage times kept: no expm per stage
        self.form = RescaledForm(self.head)
        self.beta = check_beta(beta)
        self.mask = _check_mask(mask)
        self.dim = self.head.query.shape[0]
        self.name = f"rescaled pure SA z = e^(-tV) x ({_describe(heads, self.mask, None)})"
        # V's least real part mu: mu < 0 stretches z = e^{-tV} x like e^{|mu| t} along its
        # direction unless the tokens x shrink as fast (issue 31: V = -I overflowed at t =
        # 357.5, ln(1e154) / 1, where a smaller step was advised)
        self.least_real_part = float(np.min(np.linalg.eigvals(self.head.value).real))
        self.advice = "the rescaled flow moves at speeds ~ |V| |z|: lower time.dt (or " \
            "time.tolerance), or scale V down"
        if self.least_real_part < 0:
            mu = self.least_real_part
            self.advice = (
                f"V has an eigenvalue of real part {mu:.3g} < 0, so z = e^(-tV) x grows "
                f"like e^({-mu:.3g} t) along it (the tokens x do not shrink as fast) and "
                "its logits leave the double range: rescaling cannot keep z bounded here "
                "and a smaller time.dt does not help; give particles.rescaled = false, or "
                "end time.t_final before this time")

    def velocity(self, z: np.ndarray, t: float) -> np.ndarray:
        """``dz_i/dt`` at time ``t``."""
        _finite_stage(z, self.advice, t)
        return rescaled_field(z, t, self.form, self.beta, self.mask)  # (checked above)

    def attention(self, z: np.ndarray, t: float) -> np.ndarray:
        """``P(t)`` of the pure flow at ``x = e^{tV} z``: ``(1, n, n)``."""
        return rescaled_attention(z, t, self.form, beta=self.beta, mask=self.mask)[None]

    def positions(self, z: np.ndarray, t: float) -> np.ndarray:
        """``x = e^{tV} z`` (rows); overflows to inf where x is no double."""
        with np.errstate(over="ignore", invalid="ignore"):
            return z @ expm(t * self.head.value).T

    def check_state(self, z: np.ndarray, t: float) -> None:
        """Raise ``SolverError`` if the rescaled tokens are not finite."""
        if not np.all(np.isfinite(z)):
            raise SolverError(f"the rescaled tokens became non-finite at t = {t:.6g}; "
                              "lower time.dt or time.tolerance")
