"""The normalization family of [Rig25, §6.2, eq. (7)]: Peri-LN, nGPT and Mix-LN tokens.

Every rule moves the directions ``theta_i = x_i/|x_i|`` by the same attention vector
``A_i(Theta) = sum_j P_ij theta_j`` (``P`` the softmax rows of ``beta <theta_i,
theta_j>``), slowed by its own speed factor ``s_i``:
``theta_i' = P^perp_{theta_i} A_i / s_i``; the radii ``r_i = |x_i|`` follow a rule of
their own (docs/conventions.md, "The normalization family", derives each line):

- Post-LN (``AttentionParticles``): ``s_i = 1``, ``r_i = 1``;
- Pre-LN (``PreLNParticles``): ``x_i' = A_i``: ``s_i = r_i``, ``r_i' = <theta_i, A_i>``;
- Peri-LN [Kim25] (``PeriLNParticles``): the attention output normalized too,
  ``x_i' = A_i/|A_i|`` (a unit-speed field in R^d): ``s_i = r_i |A_i|``,
  ``r_i' = <theta_i, A_i>/|A_i|``;
- nGPT [LHSG25] (``NGPTParticles``): tokens on the sphere, ``theta_i' = alpha
  P^perp(A_i/|A_i|)`` (the step ``h <- Norm(h + alpha (Norm(A) - h))`` to first order):
  ``s_i = |A_i|/alpha``, ``r_i = 1``;
- Mix-LN [LYL25] (``MixLNParticles``): Post-LN until the time ``switch``, Pre-LN after
  (``s_i = 1``, then ``r_i`` from ``r_i(switch) = 1``). Stepped phase by phase
  (``PhasedStepper``): each phase's integrator lands on the switch, so the jump of the
  field there costs no order.

Peri-LN and nGPT see ``A_i/|A_i|`` only, which is the same for SA and USA (the USA sum is
the SA average times a positive factor per token): they use the SA average whatever
``normalized`` says (no ``e^beta`` overflow). Their velocities are combinations of the
tokens with coefficients of the Gram matrix (``in_span``): an ensemble may step them in the
span of the initial tokens (``meanfield.model.ensemble``), and ``velocity`` takes one
system ``(n, d)`` (kernel sums, fast methods included) or a batch ``(B, n, d)`` (dense).

Each model's ``equiangular_rhs(n)`` is the reduced ODE of equiangular tokens
(``<theta_i, theta_j> = rho``, equal radii ``r``), written with ``equiangular_terms``.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from meanfield.errors import ConfigError
from meanfield.model.ensemble import EnsembleRun, _attention_weights, simulate_ensemble
from meanfield.model.particles import AttentionParticles, PreLNParticles, TokenStepper
from solvers.particles.direct import normalize_rows, tangent_projection


def equiangular_terms(n: int, beta: float, rho: float) -> tuple[float, float, float]:
    """``(g, a, m)`` of equiangular unit directions (SA average ``A_i``):
    ``g = 2 <P^perp_{theta_i} A_i, theta_j>`` (``rho'`` of Post-LN), ``a = <theta_i, A_i>``
    and ``m = |A_i|``.

    With ``w = e^{-beta (1 - rho)}`` and ``D = 1 + (n - 1) w``, ``A_i = (theta_i + w
    sum_{j != i} theta_j)/D``: ``g = 2 w (1 - rho)((n - 1) rho + 1)/D``, ``a = (1 + (n - 1)
    w rho)/D``, ``m^2 = (1 + 2 (n - 1) w rho + (n - 1) w^2 (1 + (n - 2) rho))/D^2``.
    """
    w = math.exp(-beta * (1.0 - rho))
    den = 1.0 + (n - 1) * w
    g = 2.0 * w * (1.0 - rho) * ((n - 1) * rho + 1.0) / den
    a = (1.0 + (n - 1) * w * rho) / den
    m2 = 1.0 + 2.0 * (n - 1) * w * rho + (n - 1) * w * w * (1.0 + (n - 2) * rho)
    return g, a, math.sqrt(m2) / den


def _check_positive(value: float, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                         np.floating)) \
            or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{key} must be a finite number > 0, got {value!r}", key)
    return float(value)


class _DirectionModel:
    """The SA average of the directions for one system or a batch (see the module
    docstring); ``beta`` and the kernel-sum options as ``AttentionParticles``."""

    in_span = True  # velocities are combinations of the tokens (span reduction)

    def __init__(self, beta: float, normalized: bool = True, backend: str = "auto",
                 method: str = "auto", accuracy: float = 1e-10, threads: int | None = None):
        self.base = AttentionParticles(beta, True, backend, method, accuracy, threads)
        self.beta, self.normalized = self.base.beta, bool(normalized)

    def unit_attention(self, th: np.ndarray) -> np.ndarray:
        """``A_i/|A_i|`` of unit directions ``th`` ``(n, d)`` or ``(B, n, d)``."""
        if th.ndim == 2:
            a = self.base.attention(th)
        else:
            a = _attention_weights(np.matmul(th, th.swapaxes(-1, -2)), self.beta, True) @ th
        return normalize_rows(a)


class PeriLNParticles(_DirectionModel):
    """Peri-LN tokens in R^d: ``x_i' = A_i/|A_i|`` (module docstring)."""

    on_sphere = False
    name = "Peri-LN"

    def velocity(self, x: np.ndarray) -> np.ndarray:
        return self.unit_attention(normalize_rows(x))

    def speed_factor(self, x: np.ndarray) -> np.ndarray:
        """``s_i = r_i |A_i|``."""
        th = normalize_rows(x)
        a = self.base.attention(th)
        return np.linalg.norm(x, axis=-1) * np.linalg.norm(a, axis=-1)

    def equiangular_rhs(self, n: int) -> Callable:
        """``f(t, [rho, r]) -> [rho', r']``: ``rho' = g/(r m)``, ``r' = a/m``."""
        def rhs(t, y):
            g, a, m = equiangular_terms(n, self.beta, y[0])
            return [g / (y[1] * m), a / m]
        return rhs


class NGPTParticles(_DirectionModel):
    """nGPT tokens on S^{d-1}: ``x_i' = alpha P^perp_{x_i}(A_i/|A_i|)`` (module docstring).

    Args: ``alpha`` (> 0, ``particles.ngpt_alpha``), then as ``AttentionParticles``.
    """

    on_sphere = True
    name = "nGPT"

    def __init__(self, beta: float, normalized: bool = True, alpha: float = 1.0, **options):
        super().__init__(beta, normalized, **options)
        self.alpha = _check_positive(alpha, "particles.ngpt_alpha")

    def velocity(self, x: np.ndarray) -> np.ndarray:
        return self.alpha * tangent_projection(x, self.unit_attention(x))

    def speed_factor(self, x: np.ndarray) -> np.ndarray:
        """``s_i = |A_i|/alpha``."""
        return np.linalg.norm(self.base.attention(x), axis=-1) / self.alpha

    def equiangular_rhs(self, n: int) -> Callable:
        """``f(t, [rho]) -> [alpha g/m]``."""
        def rhs(t, y):
            g, _, m = equiangular_terms(n, self.beta, y[0])
            return [self.alpha * g / m]
        return rhs


class MixLNParticles:
    """Mix-LN: Post-LN (``AttentionParticles``) until ``switch``, Pre-LN
    (``PreLNParticles``) after; the phases in ``phases`` (start time, model), stepped by
    ``PhasedStepper``. Tokens live in R^d (unit until the switch).

    Args: ``switch`` (> 0, ``particles.mix_switch``), then as ``AttentionParticles``
    (``normalized``: SA or USA in both phases).
    """

    on_sphere = False
    name = "Mix-LN"

    def __init__(self, beta: float, normalized: bool = True, switch: float = 1.0,
                 **options):
        self.switch = _check_positive(switch, "particles.mix_switch")
        self.post = AttentionParticles(beta, normalized, **options)
        self.pre = PreLNParticles(beta, normalized, **options)
        self.beta, self.normalized = self.post.beta, self.post.normalized
        self.phases = ((0.0, self.post), (self.switch, self.pre))
        self.stepper_class = PhasedStepper

    def equiangular_rhs(self, n: int) -> Callable:
        """``f(t, [rho, r]) -> [rho', r']``: Post-LN's (``r' = 0``) before the switch,
        Pre-LN's after (integrate the two pieces apart: the field jumps there)."""
        post, pre = self.post.equiangular_rhs(n), self.pre.equiangular_rhs(n)
        return lambda t, y: (post(t, y[:1]) + [0.0]) if t < self.switch else pre(t, y)


class PhasedStepper:
    """``TokenStepper`` of a model with ``phases`` ((start, model), ...): one stepper per
    phase, each landing on the next start; a sphere phase entered at its start takes
    the tokens' directions (the layer normalization). Same interface as
    ``TokenStepper`` (``advance``, ``steps``, ``evaluations``, ``rejected``, ``info``)."""

    def __init__(self, model, *, kappa: float = math.inf, dt: float | None = None,
                 tolerance: float = 1e-8, noise=0):
        self.model = model
        self.starts = [float(s) for s, _ in model.phases]
        self.steppers = [TokenStepper(m, kappa=kappa, dt=dt, tolerance=tolerance,
                                      noise=noise) for _, m in model.phases]

    @property
    def steps(self) -> int:
        return sum(s.steps for s in self.steppers)

    @property
    def evaluations(self) -> int:
        return sum(s.evaluations for s in self.steppers)

    @property
    def rejected(self) -> int:
        return sum(s.rejected for s in self.steppers)

    def advance(self, x: np.ndarray, t: float, t_next: float, h: float | None = None,
                on_step=None, h_min: float | None = None, *, taken: int = 0,
                on_state=None) -> tuple[np.ndarray, float]:
        """As ``TokenStepper.advance``, across the phases met on ``[t, t_next]``."""
        ends = self.starts[1:] + [math.inf]
        for start, end, stepper in zip(self.starts, ends, self.steppers):
            if t >= end or t_next <= start:
                continue
            lo, hi = max(t, start), min(t_next, end)
            if lo == start:  # entering a phase (also when resumed right at its start):
                h = None  # its own first step, and a sphere phase normalizes the tokens
                if stepper.model.on_sphere:
                    x = normalize_rows(x)
            x, h = stepper.advance(x, lo, hi, h, on_step, h_min, on_state=on_state)
            t = hi
        return x, h

    def info(self) -> dict:
        first = self.steppers[0].info()
        return {**first, "model": self.model.name, "integrator": "; ".join(
            f"{s.model.name} from t = {start:g}: {s.info()['integrator']}"
            for start, s in zip(self.starts, self.steppers))}


def simulate_phases(model, x0: np.ndarray, save_times, **options) -> EnsembleRun:
    """``simulate_ensemble`` of a phased model (``MixLNParticles``): each phase from the
    state the previous one left at its start (autonomous phases: run from 0 and shifted),
    the saves of all phases joined, steps per system summed."""
    save_times = np.atleast_1d(np.asarray(save_times, dtype=float))
    starts = [float(s) for s, _ in model.phases] + [math.inf]
    states, steps, rejected, x, run = [], 0, 0, np.array(x0, dtype=float), None
    for k, (start, sub) in enumerate(model.phases):
        end = starts[k + 1]
        mine = save_times[(save_times > start) & (save_times <= end)]
        stop = [end] if end < save_times[-1] and end not in mine else []
        local = np.concatenate([mine, stop]) - start
        if local.size == 0:
            continue
        if k > 0 and run is not None and sub.on_sphere:
            x = normalize_rows(x)
        run = simulate_ensemble(sub, x, local, **options)
        keep = run.states[1:1 + mine.size]
        states.append(keep if states else np.concatenate([run.states[:1], keep]))
        steps, rejected = steps + run.steps, rejected + run.rejected
        x = run.states[-1]
        options = {**options, "frame": run.frame} if run.frame is not None else options
    return EnsembleRun(np.concatenate([[0.0], save_times]), np.concatenate(states),
                       run.frame, steps, rejected, {**run.info, "model": model.name})


def build_normalization_model(architecture: str, beta: float, normalized: bool = True, *,
                              ngpt_alpha: float = 1.0, mix_switch: float = 1.0,
                              **options):
    """The model of ``particles.architecture`` "post-ln", "pre-ln", "peri-ln", "ngpt" or
    "mix-ln" (``options``: the kernel-sum options of ``AttentionParticles``)."""
    if architecture == "peri-ln":
        return PeriLNParticles(beta, normalized, **options)
    if architecture == "ngpt":
        return NGPTParticles(beta, normalized, ngpt_alpha, **options)
    if architecture == "mix-ln":
        return MixLNParticles(beta, normalized, mix_switch, **options)
    cls = PreLNParticles if architecture == "pre-ln" else AttentionParticles
    return cls(beta, normalized, **options)
