"""Finite token systems of self-attention (docs/conventions.md) and how to run them.

Tokens ``x_i`` are the rows of an ``(n, d)`` array, ``d >= 2``, ``n >= 2``.

- ``AttentionParticles`` (Post-LN; tokens on S^{d-1}):
  USA ``v_i = P^perp_{x_i} (1/n) sum_j e^{beta <x_i, x_j>} x_j``;
  SA  ``v_i = P^perp_{x_i} sum_j e^{beta <x_i, x_j>} x_j / sum_j e^{beta <x_i, x_j>}``;
  with noise ``dX_i = v_i dt + sqrt(2/kappa) dW_i`` (Brownian motion on the sphere), the
  particle system of ``d rho/dt + div(rho v) = (1/kappa) Laplace rho``.
- ``PreLNParticles`` (tokens in R^d, attention on the directions ``theta_i = x_i/|x_i|``):
  ``dx_i/dt = A_i(theta)``, with ``A_i`` the SA average above without the projection (the
  USA sum with ``normalized=False``). With ``x_i = r_i theta_i`` the directions follow
  ``d theta_i/dt = (1/r_i) P^perp_{theta_i} A_i``: the speed factor ``1/r_i`` of
  [KGPR25] (the speed factor ``s_i = r_i`` of [Rig25, eq. (7)]), and ``r_i' = <theta_i, A_i>``.
- ``HardmaxParticles`` (beta = infinity, no self-attention): ``v_i = P^perp_{x_i}`` of the
  mean of the ``x_j``, ``j != i``, maximising ``<x_i, x_j>`` (ties within ``tolerance``
  averaged). The field is discontinuous where the maximiser changes: there the
  integrators lose their order (the ODE holds between switches).

Equiangular tokens (``<x_i, x_j> = rho`` for ``i != j``, needs ``n <= d``) stay
equiangular; each model's ``equiangular_rhs(n)`` is the reduced ODE (``solve_ivp`` form):
SA ``rho' = 2 (1 - rho)((n-1) rho + 1) / (e^{beta(1 - rho)} + n - 1)``, USA
``rho' = (2/n) e^{beta rho} (1 - rho)((n-1) rho + 1)`` (docs/conventions.md), Pre-LN the SA (USA)
right side divided by ``r`` with ``r' = <theta_i, A_i>``, hardmax
``rho' = 2 (1 - rho)((n-1) rho + 1)/(n - 1)``. Near ``rho = 1``: ``1 - rho ~ e^{-2t}``
(Post-LN SA) and ``~ t^{-2}`` (Pre-LN: ``r ~ t``).

``simulate`` runs a model: RK4 with retraction (fixed ``dt``, or step doubling when
``dt`` is None) without noise, geodesic Euler-Maruyama with noise (fixed ``dt``; the
noise stream of a seed: ``meanfield.model.tokens.noise_rng``). Token checks:
``meanfield.model.tokens``; token sets (uniform, equiangular): ``meanfield.initial.tokens``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from meanfield.config import MAX_USA_BETA  # USA speeds carry e^beta: beyond, overflow
from meanfield.errors import ConfigError, SolverError
from meanfield.model import kernels
from meanfield.model.tokens import check_tokens, noise_rng
from solvers import steppers
from solvers.particles import direct as sp
from solvers.steppers import StepDoubling, integrate
from meanfield.model.free_steps import FreeStepping
from solvers.steppers.dense import GlobalStepDoubling

# ---------------------------------------------------------------------------------------
# Validation (token checks and random streams: meanfield.model.tokens).

def check_beta(beta: float, key: str = "model.beta", negative: bool = False) -> float:
    """``beta`` as a float, finite and >= 0 (any finite number if ``negative``: the
    models that take beta < 0, docs/conventions.md), else ``ConfigError``."""
    if isinstance(beta, bool) or not isinstance(beta, (int, float, np.floating, np.integer)):
        raise ConfigError(f"{key} must be a number, got {beta!r}", key)
    if not math.isfinite(beta) or (beta < 0 and not negative):
        raise ConfigError(f"{key} must be finite and >= 0, got {beta!r}", key)
    return float(beta)


def check_kappa(kappa: float, key: str = "model.kappa") -> float:
    """``kappa`` as a float, > 0 (``inf``: no noise), else ``ConfigError``."""
    if isinstance(kappa, bool) or not isinstance(kappa, (int, float, np.floating, np.integer)):
        raise ConfigError(f"{key} must be a number > 0 or inf, got {kappa!r}", key)
    if not kappa > 0:  # also catches NaN
        raise ConfigError(f"{key} must be > 0 (or inf for no noise), got {kappa!r}", key)
    return float(kappa)


# ---------------------------------------------------------------------------------------
# Models.

class AttentionParticles:
    """SA (``normalized``) or USA tokens on S^{d-1} (Post-LN; see the module docstring).

    Args:
        beta: inverse temperature (USA: <= 700, its speeds carry ``e^beta``); beta < 0
            with the direct sums only (the config takes it on the circle).
        normalized: True for SA, False for USA.
        backend: direct kernel sums backend (``solvers.particles.direct``): "auto", "numba" or
            "blas".
        method: interaction sums (``solvers.particles.fast``): "auto", "direct", "fourier"
            (S^1) or "harmonic" (S^2).
        accuracy: of the fast sums: the attention vectors to this (SA; USA relative to
            ``e^beta``).
        threads: threads of the fast sums (``None``: chosen by n).
    """

    on_sphere = True

    def __init__(self, beta: float, normalized: bool = True, backend: str = "auto",
                 method: str = "auto", accuracy: float = 1e-10, threads: int | None = None):
        # any sign: the direct sums shift each row by its maximum; the fast sums refuse
        # beta < 0 (docs/conventions.md, negative beta)
        self.beta = check_beta(beta, negative=True)
        self.normalized = bool(normalized)
        if not self.normalized and abs(self.beta) > MAX_USA_BETA:
            raise ConfigError(f"model.beta = {beta} overflows the USA speeds (e^beta); "
                              f"use beta <= {MAX_USA_BETA:g} or normalized = true",
                              "model.beta")
        self.backend = backend
        self.method, self.accuracy, self.threads = method, float(accuracy), threads
        self.name = "SA" if self.normalized else "USA"

    def attention(self, x: np.ndarray, project: bool = False) -> np.ndarray:
        """The attention vectors (SA average or USA mean sum); ``project``: their tangent
        parts ``P^perp_{x_i}`` (the fast sums then skip the radial part)."""
        s, z, shift = kernels.kernel_sums(
            x, x, self.beta, method=self.method, accuracy=self.accuracy,
            threads=self.threads, backend=self.backend, relative_rows=self.normalized,
            project=project)
        if self.normalized:
            return s / z[:, None]
        return s * (np.exp(shift) / x.shape[0])[:, None]

    def velocity(self, x: np.ndarray) -> np.ndarray:
        """``v_i = P^perp_{x_i} attention_i`` (rows of ``x`` unit vectors)."""
        return self.attention(x, project=True)

    def equiangular_rhs(self, n: int) -> Callable:
        """``f(t, [rho]) -> [rho']`` of the equiangular reduction."""
        beta = self.beta
        if self.normalized:  # divided through by e^{beta (1 - rho)}: no overflow at any
            # beta (e^{beta (1 - rho)} alone passes the float range at beta (1 - rho) > 709)
            def rhs(t, y):
                w = math.exp(-beta * (1 - y[0]))
                return [2 * (1 - y[0]) * ((n - 1) * y[0] + 1) * w / (1 + (n - 1) * w)]
            return rhs
        return lambda t, y: [2 / n * math.exp(beta * y[0]) * (1 - y[0])
                             * ((n - 1) * y[0] + 1)]


class PreLNParticles(AttentionParticles):
    """Pre-LN tokens in R^d: ``dx_i/dt = A_i(x/|x|)`` (see the module docstring).

    Args: as ``AttentionParticles`` (``normalized`` defaults to SA, as in the literature's
    Pre-LN comparison).
    """

    on_sphere = False

    def __init__(self, beta: float, normalized: bool = True, backend: str = "auto",
                 method: str = "auto", accuracy: float = 1e-10, threads: int | None = None):
        super().__init__(beta, normalized, backend, method, accuracy, threads)
        self.name = f"Pre-LN {self.name}"

    def velocity(self, x: np.ndarray) -> np.ndarray:
        """``dx_i/dt = A_i(theta)``, ``theta_i = x_i/|x_i|`` (not projected)."""
        return self.attention(sp.normalize_rows(x))

    def equiangular_rhs(self, n: int) -> Callable:
        """``f(t, [rho, r]) -> [rho', r']`` for equal radii ``r`` and direction
        correlation ``rho``."""
        beta, sa = self.beta, self.normalized

        def rhs(t, y):
            rho, r = y
            if sa:
                den = math.exp(beta * (1 - rho)) + n - 1
                radial = (math.exp(beta * (1 - rho)) + (n - 1) * rho) / den
                angular = 2 * (1 - rho) * ((n - 1) * rho + 1) / den
            else:
                e = math.exp(beta * rho)
                radial = (math.exp(beta) + (n - 1) * rho * e) / n
                angular = 2 / n * e * (1 - rho) * ((n - 1) * rho + 1)
            return [angular / r, radial]

        return rhs


class HardmaxParticles:
    """beta = infinity without self-attention (see the module docstring).

    Args:
        tolerance: inner products within this of the largest count as ties.
        backend: "auto", "numba" or "blas".
    """

    on_sphere = True
    name = "hardmax"

    def __init__(self, tolerance: float = 1e-12, backend: str = "auto"):
        self.tolerance = float(tolerance)
        self.backend = backend

    def velocity(self, x: np.ndarray) -> np.ndarray:
        return sp.tangent_projection(x, sp.hardmax_means(x, None, self.tolerance,
                                                          self.backend))

    def equiangular_rhs(self, n: int) -> Callable:
        """``f(t, [rho]) -> [rho']``: all others tie, ``v_i = P^perp mean_{j != i} x_j``."""
        return lambda t, y: [2 * (1 - y[0]) * ((n - 1) * y[0] + 1) / (n - 1)]


# ---------------------------------------------------------------------------------------
# Diagnostics.

def directions(x: np.ndarray) -> np.ndarray:
    """``x_i / |x_i|`` (the tokens themselves for the sphere models)."""
    return sp.normalize_rows(x)


def order_parameter(x: np.ndarray) -> float:
    """``|mean_i theta_i|``."""
    return float(np.linalg.norm(directions(x).mean(axis=0)))


def mean_direction(x: np.ndarray) -> np.ndarray:
    """``mean_i theta_i / |mean_i theta_i|`` (NaN if the mean is 0)."""
    m = directions(x).mean(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return m / np.linalg.norm(m)


def correlation_gap(x: np.ndarray) -> float:
    """``mean_{i != j} (1 - <theta_i, theta_j>) = sum_i |theta_i - mean|^2 / (n - 1)``.

    Accurate when the tokens cluster (no cancellation: 1e-12 gaps keep ~5 digits).
    For equiangular tokens this is ``1 - rho``.
    """
    th = directions(x)
    dev = th - th.mean(axis=0)
    return float(np.einsum("ij,ij->", dev, dev) / (th.shape[0] - 1))


def interaction_energy(x: np.ndarray, beta: float, backend: str = "auto",
                       method: str = "direct", accuracy: float = 1e-10,
                       threads: int | None = None) -> float:
    """``E_beta(mu^n) - E_beta(uniform)`` with ``E_beta(mu) = (1/2beta) iint e^{beta<x,y>}``.

    The uniform measure on S^{d-1} has ``iint = Gamma(d/2) (2/beta)^{d/2-1} I_{d/2-1}(beta)``;
    subtracting it keeps the value finite as ``beta -> 0``, where it tends to ``r^2/2``
    (``r`` the order parameter; returned exactly at ``beta = 0``), as the PDE energies do.
    Round-off ~1e-16/beta for small beta; with a fast ``method`` the pair sum carries
    its error ``accuracy e^beta`` (relative to the largest kernel value). ``inf`` when the
    pair sums exceed the double range (``beta`` beyond ~700). ``threads``: of the fast sums.
    """
    th = directions(x)
    n, d = th.shape
    if beta == 0:
        return 0.5 * order_parameter(th) ** 2
    if method == "direct" and n * n * d <= kernels.SMALL_FRAME:  # (a few tokens)
        pairs, top = kernels.dense_pair_sum(th, beta)
    else:
        _, z, shift = kernels.kernel_sums(th, th, beta, method=method, accuracy=accuracy,
                                          backend=backend, project=True, threads=threads)
        top = float(np.max(shift))
        pairs = float(np.sum(np.exp(shift - top) * z)) / n**2  # times e^top
    return kernels.energy_from_pair_sum(pairs, top, d, beta)


# ---------------------------------------------------------------------------------------
# Running a model.

@dataclass
class ParticleRun:
    """What ``simulate`` returns.

    ``times`` (k,) starts at 0; ``positions`` (k, n, d) are the tokens at those times
    (in R^d for Pre-LN: see ``directions``). ``status``: 0 finished, -1 interrupted
    (the saves so far are kept).
    """

    times: np.ndarray
    positions: np.ndarray
    steps: int = 0
    rejected: int = 0
    evaluations: int = 0
    status: int = 0
    message: str = "finished"
    info: dict = field(default_factory=dict)


class TokenStepper(FreeStepping):
    """Advances tokens from one save time to the next: the stepping of ``simulate`` and of
    the particle runs (``meanfield.runs.particles``).

    RK4 with retraction (fixed ``dt``, or step doubling when ``dt`` is None) without noise,
    geodesic Euler-Maruyama with noise (fixed ``dt``; increments from ``noise``, drawn in
    step order). Ctrl-C raises ``KeyboardInterrupt`` out of ``advance``.

    Steps not cut by saves (``free``: adaptive, no noise, ``t_end`` given):
    ``meanfield.model.free_steps``.

    Args:
        model: ``AttentionParticles``, ``PreLNParticles``, ``HardmaxParticles`` or a model
            of ``meanfield.model.weighted_particles``: one whose ``time_dependent`` is
            true has ``velocity(x, t)`` (no noise); one with ``check_state(x, t)`` has it
            called after each accepted step (else: the tokens must stay finite).
        kappa: inverse noise strength, > 0; ``inf`` for none (Pre-LN: only ``inf``).
        dt: fixed step, or None (adaptive RK4, no noise).
        tolerance: error per adaptive step, relative to max|x| (``free``: the error of
            the run to ``t_end``, relative to max|x|).
        noise: integer seed or Generator of the Brownian increments (``noise_rng``).
        t_end, t_start: the end and start of the run: given (adaptive, no noise), its
            steps are not cut by the saves (``free``, ``advance_free``).
    """

    def __init__(self, model, *, kappa: float = math.inf, dt: float | None = None,
                 tolerance: float = 1e-8, noise: int | np.random.Generator | None = 0,
                 t_end: float | None = None, t_start: float = 0.0):
        self.kappa = check_kappa(kappa)
        if dt is not None and not (isinstance(dt, (int, float)) and math.isfinite(dt)
                                   and dt > 0):
            raise ConfigError(f"time.dt must be a number > 0 or \"auto\", got {dt!r}",
                              "time.dt")
        self.noisy = not math.isinf(self.kappa)
        if self.noisy and not model.on_sphere:
            raise ConfigError("noise is defined for tokens on the sphere only (Post-LN, "
                              "hardmax); use kappa = inf with Pre-LN", "model.kappa")
        if self.noisy and dt is None:
            raise ConfigError("runs with noise need a fixed time.dt (no adaptive steps for "
                              "the Euler-Maruyama scheme)", "time.dt")
        # a field of the time (the rescaled flow of meanfield.model.weighted_particles):
        # the RK4 stages get their times; such models run without noise
        timed = bool(getattr(model, "time_dependent", False))
        if self.noisy and timed:
            raise ConfigError(f"noise is not defined for the {model.name} model; use "
                              "kappa = inf", "model.kappa")
        self.model, self.dt, self.steps = model, dt, 0
        self.check = getattr(model, "check_state", _check_finite)
        self.noise = noise_rng(noise) if self.noisy else None
        if self.noisy:
            self.stepper = steppers.GeodesicEulerMaruyama(model.velocity, self.kappa)
        else:
            self.rk4 = steppers.RetractedRK4(
                model.velocity, sp.normalize_rows if model.on_sphere else None, dt=dt,
                time_dependent=timed)
            self.stepper = self.rk4 if dt is not None else StepDoubling(self.rk4, tolerance)
        self.free = t_end is not None and not self.noisy and dt is None
        if self.free:
            self.t_end = float(t_end)
            self.stepper = GlobalStepDoubling(self.rk4, tolerance, self.t_end - t_start)

    @property
    def evaluations(self) -> int:
        return self.steps if self.noisy else self.rk4.evaluations

    @property
    def rejected(self) -> int:
        return getattr(self.stepper, "rejected", 0)

    def first_step(self, t: float, t_next: float) -> float:
        """The step to try first from ``t`` (adaptive runs; the fixed step otherwise)."""
        return self.dt if self.dt is not None else min(0.01, t_next - t)

    def advance(self, x: np.ndarray, t: float, t_next: float, h: float | None = None,
                on_step: Callable[[float], None] | None = None,
                h_min: float | None = None, *, taken: int = 0,
                on_state: Callable[[float, np.ndarray, float, int], None] | None = None,
                last: tuple[np.ndarray, float, float] | None = None
                ) -> tuple[np.ndarray, float]:
        """The tokens at ``t_next`` from ``x`` at ``t`` (a new array) and the next step.

        A ``free`` stepper steps on past ``t_next`` to the end of the step that reaches it
        and interpolates there (``advance_free``); where it stopped is then
        ``free_state`` (``x`` at ``t``, and ``last = (prev, prev_t, prev_h)``, the step
        that reached it: pass both back to continue, ``on_state`` reports each step).

        Args:
            x, t: the tokens and their time; with noise, ``t`` is the start of the
                interval and ``x`` the tokens after ``taken`` of its steps.
            t_next: the save time to land on.
            h: the step to try first (None: ``first_step``).
            on_step: called with the time after each step (progress bars).
            h_min: the adaptive run stops if its step falls below this.
            taken: see ``x, t`` (noise runs resumed in the middle of an interval).
            on_state: called as ``on_state(t, x, h, taken)`` after each step: with the
                noise generator as it is then, ``advance(x, t, t_next, h, taken=taken)``
                continues exactly as this call (a checkpoint between saves).
        """
        if self.free:  # steps not cut by the saves
            st = self.start_free(x, t, h)
            if last is not None:
                st.prev, st.prev_t, st.prev_h = last
            report = None if on_state is None else (lambda s: on_state(s.t, s.u, s.h, 0))
            st, value = self.advance_free(st, t_next, on_step, h_min, report)
            return value, st.h
        end = np.array([float(t_next)])
        saved: dict = {}
        if self.noisy:
            report = None if on_state is None else \
                (lambda k, x_: on_state(float(t), x_, self.dt, k))
            self.steps += steppers.integrate_sde(
                self.stepper, x, t, end, self.dt, self.noise,
                on_save=lambda t_, x_: saved.update(x=np.array(x_)), on_step=on_step,
                on_state=report, taken=taken)
            return saved["x"], self.dt
        h = self.first_step(t, t_next) if h is None else h
        report = None if on_state is None else (lambda t_, x_, h_: on_state(t_, x_, h_, 0))
        res = integrate(self.stepper, x, t, end, h, check=self.check, on_step=on_step,
                        on_save=lambda t_, x_, h_: saved.update(x=np.array(x_), h=h_),
                        on_state=report, h_min=h_min,
                        underflow_advice="the tokens move too fast for time.tolerance; "
                        "loosen it, or use a fixed time.dt")
        self.steps += res.steps
        if res.status == -1:
            raise KeyboardInterrupt
        return saved["x"], saved["h"]

    def info(self) -> dict:
        return {"model": self.model.name, "kappa": self.kappa,
                "dt": "auto" if self.dt is None else self.dt,
                "integrator": "geodesic Euler-Maruyama" if self.noisy else
                ("RK4" + (" + retraction" if self.model.on_sphere else "")
                 + (" (time-dependent field)" if self.rk4.time_dependent else "")
                 + (", step doubling" if self.dt is None else "")
                 + (", steps not cut by saves" if self.free else ""))}


def _check_finite(x: np.ndarray, t: float) -> None:
    if not np.all(np.isfinite(x)):
        raise SolverError(f"the tokens became non-finite at t = {t:.6g}; lower time.dt "
                          "(or beta)")


def simulate(model, x0: np.ndarray, save_times, *, kappa: float = math.inf,
             dt: float | None = None, tolerance: float = 1e-8,
             seed: int | np.random.Generator | None = 0,
             on_step: Callable[[float], None] | None = None,
             on_save: Callable[[float, np.ndarray, float], None] | None = None,
             t0: float = 0.0, h0: float | None = None,
             renormalize: bool = True) -> ParticleRun:
    """Run ``model`` from tokens ``x0`` and save at ``save_times`` (``TokenStepper``).

    Args:
        model: ``AttentionParticles``, ``PreLNParticles`` or ``HardmaxParticles``.
        x0: (n, d) initial tokens (unit vectors for the sphere models; any finite rows,
            d >= 1, for a model whose ``euclidean`` is true: pure tokens in R^d).
        save_times: increasing times > 0; the result also holds t = 0.
        kappa: inverse noise strength, > 0; ``inf`` for none (Pre-LN: only ``inf``).
        dt: fixed step; ``None`` for adaptive RK4 (step doubling, error per step
            ``tolerance`` relative to max|x|), only without noise.
        tolerance: see ``dt``.
        seed: integer seed or Generator of the Brownian increments (``noise_rng``).
        on_step: called with the time after each step (progress bars).
        on_save: also called as ``on_save(t, x, h_next)`` at each save.
        t0, h0: start time (the saves are those after it) and first step (adaptive runs);
            a run with fixed ``dt`` resumed from a save with the saved ``h_next`` and
            generator continues exactly as the uninterrupted run (an adaptive run's
            steps are not cut by its saves: ``TokenStepper``; resumed from a save it
            takes other steps, to the same tolerance).
        renormalize: divide the tokens of sphere models by their lengths first (off when
            resuming from a saved state, which must be continued as it is).

    Returns:
        ParticleRun (its first save is the state at ``t0``); Ctrl-C ends it with status
        -1 and the saves so far.
    """
    kappa = check_kappa(kappa)
    if renormalize and getattr(model, "euclidean", False):  # pure tokens in R^d, d >= 1
        x0 = np.array(x0, dtype=float)
        if x0.ndim != 2 or x0.shape[0] < 2 or x0.shape[1] < 1 or \
                not np.all(np.isfinite(x0)):
            raise ConfigError(f"initial: tokens in R^d must be a finite (n, d) array, n >= 2, "
                              f"got shape {x0.shape}", "initial")
    else:
        x0 = check_tokens(x0, model.on_sphere) if renormalize else np.array(x0, dtype=float)
    save_times = np.atleast_1d(np.asarray(save_times, dtype=float))
    if save_times.size == 0 or not np.all(np.isfinite(save_times)) or save_times[0] <= t0 \
            or np.any(np.diff(save_times) <= 0):
        raise ConfigError("save times must be finite, increasing and > 0", "time.save_every")
    # (a model of several phases brings its own stepper: meanfield.model.normalizations)
    stepper_class = getattr(model, "stepper_class", TokenStepper)
    free = {"t_end": float(save_times[-1]), "t_start": float(t0)} \
        if stepper_class is TokenStepper else {}  # (phases land on their starts)
    stepper = stepper_class(model, kappa=kappa, dt=dt, tolerance=tolerance, noise=seed,
                            **free)
    run = ParticleRun(times=np.empty(0), positions=np.empty(0))
    times, saved = [float(t0)], [x0.copy()]
    x, h, h_min = x0, h0, 1e-14 * float(save_times[-1] - t0)
    st = stepper.start_free(x0, t0, h0) if getattr(stepper, "free", False) else None
    try:
        for t_save in save_times:
            if st is not None:  # steps not cut by the saves
                st, x = stepper.advance_free(st, float(t_save), on_step, h_min)
                h = st.h
            else:
                x, h = stepper.advance(x, times[-1], float(t_save), h, on_step, h_min)
            times.append(float(t_save))
            saved.append(x)
            if on_save is not None:
                on_save(times[-1], x, h)
    except KeyboardInterrupt:
        run.status, run.message = -1, f"interrupted after t = {times[-1]:.6g}"
    run.steps, run.evaluations, run.rejected = stepper.steps, stepper.evaluations, \
        stepper.rejected
    run.times, run.positions, run.info = np.array(times), np.stack(saved), stepper.info()
    return run
