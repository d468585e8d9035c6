"""Discrete layers: the transformer itself rather than its ODE (docs/weights.md section 7).

One layer of step ``tau`` ([GLPR23, eq. (3)]; [Ges23]'s step tau) is the forward Euler
step of the model's field followed by the architecture's own normalization:

- Post-LN (``AttentionParticles``, SA or USA, and ``WeightedParticles`` on the sphere):
  ``x^[k+1] = N(x^[k] + tau A(x^[k]))``, ``A`` the attention output before the
  projection (``sum_j P_ij V x_j``, through the feed-forward map where there is one) and
  ``N`` the row normalization onto the sphere: the residual stream, then layer
  normalization. Its directions move by ``tau P^perp A + O(tau^2)``: the ODE's.
- hardmax: the same with the mean of the maximisers for ``A``;
- Pre-LN, pure self-attention in R^d and the other models (Peri-LN, nGPT, ...):
  ``x^[k+1] = x^[k] + tau v(x^[k])`` with the model's velocity ``v`` (its normalizations
  are inside ``v``), renormalized onto the sphere only for a model whose tokens live
  there (``on_sphere``). A model with phases (Mix-LN) steps each layer with the phase of
  the layer's midpoint.
- the rescaled pure form of [GLPR23, Remark 4] (``LayerRescaledParticles``): with
  ``R = I + tau V`` (invertible) and ``z^[k] = R^{-k} x^[k]``,

      z_i^[k+1] = z_i^[k] + tau sum_j P_ij^[k] R^{-1} V (z_j^[k] - z_i^[k]),

  ``P^[k]`` the softmax rows of ``beta <Q R^k z_i, K R^k z_j>`` (the attention of
  ``x^[k]``: the same numbers as the unscaled layer). [GLPR23, Remark 4] prints the denominator
  as ``sum_l e^{<Q R^k z_l, K R^k z_l>}``, a slip for ``z_i, z_l``: only the row sums of
  ``x``'s attention make the display equal to eq. (3) and its rows sum to 1, as its
  convex-hull statement uses. With V = I, ``z_i^[k+1] = (z_i^[k] + tau sum_j P_ij z_j^[k])
  / (1 + tau)``, a convex combination of the ``z_j^[k]`` (weights ``(delta_ij + tau
  P_ij) / (1 + tau)``). The logits are formed as ``e^{s_k} z_i^T B_k z_j`` with ``B_k =
  S_k^T Q^T K S_k``, ``S_k = (R/r)^k``, ``r`` the spectral radius of R and ``s_k = 2 k log
  r`` (``LayerForm``; the overflow-free softmax of ``weighted_attention``), so R^k itself,
  which grows like ``(1 + tau lambda)^k``, is never formed.

``LayerStepper`` runs the layers between save times with the interface of
``meanfield.model.particles.TokenStepper`` (the run engine's checkpoints between saves
report the layer reached; every layer is a function of ``x^[k]`` and ``k`` alone, so a
resumed run is bit-identical). Layer ``k`` spans ``[k tau, (k + 1) tau]``; a model whose
weights change with depth (``meanfield.model.depth.DepthModel``) gives the weights of the
layer's midpoint.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from meanfield.errors import ConfigError, SolverError
from meanfield.model.particles import AttentionParticles, HardmaxParticles, check_beta
from meanfield.model.weighted_attention import (
    Head, RescaledForm, check_head, pure_velocity, rescaled_attention, rescaled_velocity)
from meanfield.model.weighted_particles import WeightedParticles, _as_heads, _check_mask
from solvers.particles.direct import hardmax_means

# LayerForm: the layers kept (a layer asks for its k, a save's attention for the same k)
CACHED_LAYERS = 4


class LayerForm(RescaledForm):
    """``(B_k, s_k)`` of the rescaled layers (module docstring): the logits of ``x^[k] =
    R^k z`` are ``e^{s_k} z_i^T B_k z_j``; ``head.value`` is ``R^{-1} V``, so
    ``weighted_attention.rescaled_velocity(z, k, form)`` is ``sum_j P_ij R^{-1} V (z_j -
    z_i)``. ``S_k = (R/r)^k`` by ``numpy.linalg.matrix_power``: a function of k alone.

    Args:
        head: one head.
        tau: the layer step; ``R = I + tau V`` must be invertible.
    """

    def __init__(self, head: Head, tau: float):  # (no expm: RescaledForm's is not used)
        d = np.shape(head.value)[0]
        head = check_head(head, d)
        r = np.eye(d) + tau * head.value
        radius = float(np.max(np.abs(np.linalg.eigvals(r))))
        if not (radius > 0 and np.linalg.cond(r) < 1e12):
            raise ValueError(f"R = I + tau V (tau = {tau:g}) is singular: the rescaled "
                             "layers need R invertible")
        self.dim, self.tau, self.method = d, float(tau), "layers"
        self.log_radius = math.log(radius)
        self.abscissa = self.log_radius / self.tau  # (the growth rate per unit time)
        self._scaled = r / radius
        self.head = Head(head.query, head.key, np.linalg.solve(r, head.value))
        self._qk = head.query.T @ head.key
        self._cache: dict[int, tuple[np.ndarray, float]] = {}

    def power(self, k: int) -> np.ndarray:
        """``S_k = (R/r)^k``."""
        return np.linalg.matrix_power(self._scaled, int(k))

    def __call__(self, k: float) -> tuple[np.ndarray, float]:
        k = int(round(k))
        hit = self._cache.get(k)
        if hit is not None:
            return hit
        s = self.power(k)
        b = s.T @ self._qk @ s
        if not np.all(np.isfinite(b)):
            raise SolverError(f"the rescaled layers' logits overflow at layer {k}: (R/r)^k "
                              "passes the double range (non-normal growth of V)")
        b.flags.writeable = False
        if len(self._cache) >= CACHED_LAYERS:
            del self._cache[next(iter(self._cache))]
        self._cache[k] = (b, 2.0 * k * self.log_radius)
        return self._cache[k]


class LayerRescaledParticles:
    """The rescaled pure layers ``z^[k] = R^{-k} x^[k]`` of one head (module docstring).

    Args:
        head: the weights (one head; a sequence of one is accepted).
        beta: inverse temperature >= 0.
        mask: ``"none"`` or ``"causal"``.
        tau: the layer step.
    """

    on_sphere = False
    euclidean = True
    time_dependent = False
    feedforward = None

    def __init__(self, head: Head | Sequence[Head], beta: float, mask: str, tau: float):
        heads = _as_heads(head)
        if len(heads) != 1:
            raise ValueError(f"the rescaled layers take one head, got {len(heads)}")
        self.heads, self.head = heads, heads[0]
        self.beta, self.mask = check_beta(beta), _check_mask(mask)
        self.tau = float(tau)
        self.form = LayerForm(self.head, self.tau)
        self.dim = self.head.query.shape[0]
        self.name = "rescaled pure SA layers z = R^(-k) x, R = I + tau V"

    def layer(self, z: np.ndarray, k: int) -> np.ndarray:
        """``z^[k+1]`` from ``z^[k]``."""
        return z + self.tau * rescaled_velocity(z, k, self.form, beta=self.beta,
                                                mask=self.mask)

    def attention(self, z: np.ndarray, t: float) -> np.ndarray:
        """``P^[k]`` of the layer at ``t = k tau`` (the attention of ``x^[k]``):
        ``(1, n, n)``."""
        k = int(round(t / self.tau))
        return rescaled_attention(z, k, self.form, beta=self.beta, mask=self.mask)[None]

    def check_state(self, z: np.ndarray, t: float) -> None:
        """Raise ``SolverError`` if the rescaled tokens are not finite."""
        if not np.all(np.isfinite(z)):
            raise SolverError(f"the rescaled layers' tokens became non-finite at t = "
                              f"{t:.6g}; use a smaller particles.layer_step")


def residual(model, x: np.ndarray) -> np.ndarray:
    """What one layer adds to ``x`` before the normalization (module docstring): the
    attention output of a Post-LN model (not projected), else the model's velocity.
    The exact class decides: a subclass (Pre-LN, Peri-LN, nGPT) has a field of its own."""
    kind = type(model)
    if kind is AttentionParticles:
        return model.attention(x)
    if kind is HardmaxParticles:
        return hardmax_means(x, None, model.tolerance, model.backend)
    if kind is WeightedParticles and model.on_sphere:
        return pure_velocity(x, model.heads, beta=model.beta, mask=model.mask,
                             feedforward=model.feedforward)
    return model.velocity(x)


def euler_layer(model, x: np.ndarray, tau: float, k: int) -> np.ndarray:
    """``x + tau residual(x)``, normalized onto the sphere for a model on it."""
    y = x + tau * residual(model, x)
    if not model.on_sphere:
        return y
    norms = np.sqrt(np.einsum("ij,ij->i", y, y))
    if not np.all(norms > 0) or not np.all(np.isfinite(norms)):
        raise SolverError(f"the residual stream x + tau A of a token vanished (or became "
                          f"non-finite) at layer {k}: layer normalization is undefined "
                          "there; use a smaller particles.layer_step")
    return y / norms[:, None]


def _check_finite(x: np.ndarray, t: float) -> None:
    if not np.all(np.isfinite(x)):
        raise SolverError(f"the tokens became non-finite at t = {t:.6g}; use a smaller "
                          "particles.layer_step")


class LayerStepper:
    """The layers between save times, with ``TokenStepper``'s interface (``advance``,
    ``steps``, ``evaluations``, ``rejected``, ``info``).

    Args:
        model: a token model; one with ``layer(x, k)`` steps itself
            (``LayerRescaledParticles``), one with ``select(t)`` gives the model of depth
            t (``DepthModel``), one with ``phases`` ((start, model), ...) the phase of t
            (Mix-LN); else ``euler_layer``.
        tau: the layer step > 0.
    """

    def __init__(self, model, tau: float):
        if not (isinstance(tau, (int, float)) and math.isfinite(tau) and tau > 0):
            raise ConfigError(f"particles.layer_step must be a number > 0, got {tau!r}",
                              "particles.layer_step")
        self.model, self.tau = model, float(tau)
        self.steps, self.rejected = 0, 0
        self.check = getattr(model, "check_state", _check_finite)

    @property
    def evaluations(self) -> int:
        return self.steps

    def layer_index(self, t: float) -> int:
        """The layer ``k`` whose start is ``t = k tau`` (the saves are on layers)."""
        return int(round(float(t) / self.tau))

    def model_at(self, k: int):
        """The model that runs layer ``k`` (that of its midpoint ``(k + 1/2) tau``)."""
        t = (k + 0.5) * self.tau
        if hasattr(self.model, "select"):
            return self.model.select(t)
        phases = getattr(self.model, "phases", None)
        if phases:
            return [m for start, m in phases if start <= t][-1]
        return self.model

    def layer(self, x: np.ndarray, k: int) -> np.ndarray:
        """``x^[k+1]`` from ``x^[k]``."""
        m = self.model_at(k)
        if hasattr(m, "layer"):
            return m.layer(x, k)
        return euler_layer(m, x, self.tau, k)

    def advance(self, x: np.ndarray, t: float, t_next: float, h: float | None = None,
                on_step: Callable[[float], None] | None = None,
                h_min: float | None = None, *, taken: int = 0,
                on_state: Callable[[float, np.ndarray, float, int], None] | None = None
                ) -> tuple[np.ndarray, float]:
        """The tokens at ``t_next`` from ``x`` at ``t`` (both on layers; a new array) and
        ``tau``; ``h``, ``h_min`` and ``taken`` are not used (``TokenStepper``'s
        signature). ``on_state(t, x, tau, 0)`` after each layer: ``advance(x, t,
        t_next)`` continues exactly from there."""
        del h, h_min, taken
        x = np.array(x, dtype=float)
        k1 = self.layer_index(t_next)
        for k in range(self.layer_index(t), k1):
            x = self.layer(x, k)
            self.steps += 1
            t_k = float(t_next) if k + 1 == k1 else (k + 1) * self.tau
            self.check(x, t_k)
            if on_step is not None:
                on_step(t_k)
            if on_state is not None:
                on_state(t_k, x, self.tau, 0)
        return x, self.tau

    def info(self) -> dict:
        return {"model": self.model.name, "kappa": math.inf, "dt": self.tau,
                "integrator": f"layers (tau = {self.tau:g})"}
