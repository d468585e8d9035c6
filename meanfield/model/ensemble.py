"""Ensembles: ``B`` independent token systems stepped together, and the span reduction.

The batch is one array ``(B, n, m)`` (system, token, component). The fields are those of
``meanfield.model.particles`` (same equations and signs), written for a batch with
``np.matmul``: with ``G = X X^T`` per system,

- SA / USA (``AttentionParticles``): ``W = exp(beta G - max_j beta G_ij)`` row-wise,
  SA ``a_i = sum_j W_ij x_j / sum_j W_ij``, USA ``a_i = e^{max_j beta G_ij} (1/n)
  sum_j W_ij x_j``; ``v_i = a_i - <x_i, a_i> x_i`` (also off the sphere, at the RK4
  stages: the same ambient extension as the single-system field; at large beta the self
  term dominates ``a_i`` and ``v_i`` holds round-off relative to ``|a_i|``, as there).
- Pre-LN (``PreLNParticles``): the same ``a_i`` of the directions ``theta_i = x_i/|x_i|``,
  ``v_i = a_i`` (not projected).
- hardmax (``HardmaxParticles``): ``a_i`` the mean of the ``x_j``, ``j != i``, with
  ``G_ij >= max_{k != i} G_ik - tolerance``; ``v_i = P^perp_{x_i} a_i``.
- any other model (the general weights of ``meanfield.model.weighted_particles``) joins
  by one protocol: its ``velocity`` takes a batch ``(B, n, d)`` as well as one system
  ``(n, d)`` and treats each system alone (the functions of
  ``meanfield.model.weighted_attention`` do, by ``np.matmul`` broadcasting, for the same
  weights in every system). ``simulate_ensemble`` checks this before the run (systems
  0 and B-1 of the batch against ``velocity`` of each alone); the span reduction stays
  with the models above and those marked ``in_span`` (the Peri-LN and nGPT models of
  ``meanfield.model.normalizations``; a value matrix takes the tokens out of their
  span), and a
  field of the time (``time_dependent``, the rescaled flow) is refused.
  B = 1024 post-LN systems of n = 16 tokens in d = 3 run ~16x faster than a loop of
  ``simulate`` over them, with the same tokens (benchmarks/bench_weighted_attention.py).

Cost per field evaluation: ``O(B n^2 m)`` (two batched GEMMs and ``B n^2`` exponentials);
plain numpy. A fused numba kernel for one field evaluation of the batch (one system per
thread, Gram matrix, softmax, products and projection in cache) was measured against it
at B = 2048, n = m = 32 on the 2-core machine under load: 60 ms against 63 ms per
evaluation, no gain; in numpy the time splits into the two GEMMs (~7 + 9 ms), ``exp``
(~12 ms) and the elementwise passes. What does pay is compiling a system's WHOLE
integration (every step in cache, no Python per step): the phase diagram's engine
(``meanfield.studies.tokens.phase_numba``) takes ~12 us per evaluation and system against ~54 us
here.

Integrators (``solvers.steppers.batch``): RK4 with retraction at a fixed step (order 4),
adaptive RK4 by step doubling with **one step per system** (error per system in the
rotation-invariant rms norm of the rows; a system's path does not depend on the rest of
the batch), geodesic Euler-Maruyama with noise ``kappa`` (strong order 1/2, weak 1).

Seeds: system ``s`` of a run with seed ``seed`` uses the child seed
``SeedSequence(seed, spawn_key=(s,))``, split into streams for its initial tokens and its
noise as ``meanfield.model.tokens`` splits a seed (``system_rng``): system ``s`` is the
single-system run ``simulate(model, x0[s], seed=system_rng(seed, s))``, and splitting a
batch (``first``) changes nothing.

**Span reduction** (deterministic runs, ``d >= n``). Every velocity is a combination of
the tokens (``v_i = sum_j M_ij x_j``), so the tokens stay in the span of the initial ones,
and the fields see only inner products. Write ``X0 = C0 Q`` with ``Q`` (n x d) orthonormal
rows (``X0^T = Q^T R``, QR; ``C0 = R^T``): then ``X(t) = C(t) Q`` where ``C`` (n x n)
follows the *same* equations as tokens in R^n (``G = X X^T = C C^T``, ``|x_i| = |c_i|``,
and the RK4 stages and the retraction commute with ``C -> C Q``). So the coefficients are
stepped by the same engine at ``O(n^3)`` per system and step whatever ``d``, and the same
adaptive steps are taken (the error norm is rotation invariant). With noise the Brownian
increments fill all of R^d: no reduction (``ConfigError``).

The reduced flow closes on the Gram matrix ``G = C C^T`` (``G' = V C^T + C V^T``):

- SA: ``A = softmax(beta G)`` row-wise, ``D = diag(AG)`` (``(AG)_ii = <x_i, a_i>``):
  ``G' = AG + (AG)^T - DG - GD``.
- USA: the same with ``A = e^{beta G}/n`` (entrywise, no row normalisation).
- Pre-LN: ``N = diag(G_ii)^{1/2}``, ``A = softmax(beta N^{-1} G N^{-1})``: ``X' = A N^{-1}
  X``, so ``G' = A N^{-1} G + G N^{-1} A^T``.
- hardmax: ``A_ij = 1/|J_i|`` for ``j`` in ``J_i = argmax_{j != i} G_ij`` (ties within the
  tolerance), else 0; then as SA.

``gram_velocity`` evaluates these (tested against ``V C^T + C V^T``). Initial
coefficients of i.i.d. uniform tokens without d-dimensional tokens: ``uniform_span``
(Bartlett decomposition, exact in distribution).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from meanfield.errors import ConfigError, SolverError
from meanfield.model.particles import (
    AttentionParticles,
    HardmaxParticles,
    PreLNParticles,
    check_kappa,
)
from solvers.particles.direct import normalize_rows, tangent_projection
from solvers.steppers import GeodesicEulerMaruyama
from solvers.steppers.batch import (
    BatchRK4,
    integrate_batch,
    integrate_sde_batch,
)

# ---------------------------------------------------------------------------------------
# Batched fields.


def _gram(x: np.ndarray) -> np.ndarray:
    return np.matmul(x, x.swapaxes(-1, -2))


def _attention_weights(g: np.ndarray, beta: float, normalized: bool) -> np.ndarray:
    """``A`` with ``a = A x``: SA softmax rows of ``beta g``; USA ``e^{beta g}/n``."""
    w = beta * g
    shift = w.max(axis=-1, keepdims=True)
    w -= shift
    np.exp(w, out=w)
    if normalized:
        w /= w.sum(axis=-1, keepdims=True)
    else:
        w *= np.exp(shift) / g.shape[-1]
    return w


def _hardmax_weights(g: np.ndarray, tolerance: float) -> np.ndarray:
    n = g.shape[-1]
    g = g.copy()
    g[..., np.arange(n), np.arange(n)] = -np.inf
    w = (g >= g.max(axis=-1, keepdims=True) - tolerance).astype(float)
    w /= w.sum(axis=-1, keepdims=True)
    return w


BUILT_IN = (AttentionParticles, HardmaxParticles)  # PreLNParticles is an AttentionParticles
MODEL_PARTS = ("velocity", "on_sphere", "name")


def _check_model(model) -> None:
    if isinstance(model, BUILT_IN):
        return
    missing = [a for a in MODEL_PARTS if not hasattr(model, a)]
    if missing:
        raise ConfigError(f"an ensemble runs AttentionParticles, PreLNParticles, "
                          f"HardmaxParticles or a model whose velocity takes a batch "
                          f"(B, n, d) with {', '.join(MODEL_PARTS)}; "
                          f"{type(model).__name__} has no {', '.join(missing)}", "model")
    if getattr(model, "time_dependent", False):
        raise ConfigError(f"an ensemble steps fields of the tokens alone, velocity(x); the "
                          f"{model.name} model's field depends on the time: run its systems "
                          f"with simulate", "model")


def _check_built_in(model, what: str) -> None:
    # (``in_span``: a model whose velocities are combinations of the tokens with
    # coefficients of the Gram matrix, meanfield.model.normalizations)
    if not isinstance(model, BUILT_IN) and not (getattr(model, "in_span", False)
                                                and what == "the span reduction"):
        raise ConfigError(f"{what} holds for AttentionParticles, PreLNParticles and "
                          f"HardmaxParticles only (their velocities are combinations of "
                          f"the tokens), not {type(model).__name__}", "model")


def check_batched(model, x: np.ndarray) -> None:
    """Refuse a model (not built in) whose ``velocity`` does not act on the batch ``x``
    ``(B, n, d)`` system by system: systems 0 and B-1 of ``velocity(x)`` must equal
    ``velocity`` of each alone to round-off (1e-10 relative to the largest speed).

    Raises:
        ConfigError: naming the model, with what failed.
    """
    if isinstance(model, BUILT_IN):
        return
    name = type(model).__name__
    try:
        v = np.asarray(model.velocity(x))
        if v.shape != x.shape:
            raise ValueError(f"velocity of a batch {x.shape} has shape {v.shape}")
        alone = [np.asarray(model.velocity(x[s])) for s in (0, -1)]
    except (ValueError, TypeError, IndexError) as exc:
        raise ConfigError(f"the model {name}: its velocity must take a batch (B, n, d) of "
                          f"systems to run in an ensemble ({exc})", "model") from exc
    scale = max(1.0, float(np.max(np.abs(v))))
    if any(np.max(np.abs(v[s] - a)) > 1e-10 * scale for s, a in zip((0, -1), alone)):
        raise ConfigError(f"the model {name}: its velocity of a batch (B, n, d) is not the "
                          f"velocity of each system alone; an ensemble needs one that "
                          f"treats each system alone", "model")


def batch_velocity(model, x: np.ndarray) -> np.ndarray:
    """The velocities of ``model`` for a batch ``(B, n, m)`` of token systems (unit rows
    for the sphere models): equal to ``model.velocity`` of each system to round-off.
    The models of ``meanfield.model.particles`` by the batched fields above; any other
    model by its own ``velocity``, which takes batches (the module's protocol,
    ``check_batched``)."""
    _check_model(model)
    if not isinstance(model, BUILT_IN):
        return model.velocity(x)
    if isinstance(model, HardmaxParticles):
        return tangent_projection(x, _hardmax_weights(_gram(x), model.tolerance) @ x)
    if isinstance(model, PreLNParticles):
        th = normalize_rows(x)
        return _attention_weights(_gram(th), model.beta, model.normalized) @ th
    a = _attention_weights(_gram(x), model.beta, model.normalized) @ x
    return tangent_projection(x, a)


def gram_velocity(model, g: np.ndarray) -> np.ndarray:
    """``dG/dt`` of the closed Gram-matrix flow (module docstring) for ``g`` ``(B, n, n)``."""
    _check_built_in(model, "the Gram-matrix flow")
    if isinstance(model, PreLNParticles):
        r = np.sqrt(np.einsum("...ii->...i", g))
        a = _attention_weights(g / r[..., :, None] / r[..., None, :], model.beta,
                               model.normalized) / r[..., None, :]   # A N^{-1}
        ag = a @ g
        return ag + ag.swapaxes(-1, -2)
    if isinstance(model, HardmaxParticles):
        a = _hardmax_weights(g, model.tolerance)
    else:
        a = _attention_weights(g, model.beta, model.normalized)
    ag = a @ g
    dg = np.einsum("...ii->...i", ag)
    return ag + ag.swapaxes(-1, -2) - (dg[..., :, None] + dg[..., None, :]) * g


# ---------------------------------------------------------------------------------------
# Seeds, initial ensembles and the span reduction.

def system_rng(seed: int, s: int, stream: str = "noise") -> np.random.Generator:
    """The generator of system ``s`` of a run with integer ``seed`` (independent of the
    batch size): the child seed ``SeedSequence(seed, spawn_key=(s,))`` split as
    ``meanfield.model.tokens`` splits a seed, ``stream`` "initial" (its child 0),
    "noise" (child 1) or "frame" (child 2, the frames of ``haar_frames``)."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ConfigError(f"an ensemble needs an integer seed (its systems derive theirs "
                          f"from it), got {seed!r}", "particles.seed")
    child = {"initial": 0, "noise": 1, "frame": 2}[stream]
    ss = np.random.SeedSequence(int(seed), spawn_key=(int(s), child))
    return np.random.Generator(np.random.PCG64(ss))


def _check_size(n, d, systems=1, least_dim=2) -> None:
    for value, key, least in ((n, "particles.n", 2), (d, "domain.dim", least_dim),
                              (systems, "particles.systems", 1)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
                or value < least:
            raise ConfigError(f"{key} must be an integer >= {least}, got {value!r}", key)


def uniform_ensemble(systems: int, n: int, d: int, seed: int = 0,
                     first: int = 0) -> np.ndarray:
    """``(systems, n, d)`` i.i.d. uniform tokens on S^{d-1}; system ``first + k`` is
    ``uniform_tokens(n, d, system_rng(seed, first + k, "initial"))``."""
    _check_size(n, d, systems)
    x = np.stack([system_rng(seed, first + k, "initial").standard_normal((n, d))
                  for k in range(systems)])
    return normalize_rows(x)


def uniform_span(systems: int, n: int, d: int, seed: int = 0,
                 first: int = 0) -> np.ndarray:
    """Coefficients ``C0`` ``(systems, n, n)`` of i.i.d. uniform tokens on S^{d-1}, d >= n,
    without forming d-dimensional tokens, exact in distribution.

    Gaussian ``Z`` (n x d) has ``Z Z^T ~ Wishart_n(d, I)``, whose Cholesky factor ``L``
    has independent entries (Bartlett): ``L_ii = sqrt(chi^2_{d-i+1})`` (i = 1..n),
    ``L_ij ~ N(0, 1)`` for ``j < i``. The rows of ``L`` have the lengths of the rows of
    ``Z``, so the rows of ``L`` normalised have the Gram matrix of the normalised ``z_i``
    (in law). With ``Q`` an independent Haar-random orthonormal n-frame of R^d,
    ``normalize(L) Q`` are i.i.d. uniform tokens (``Z = L Q_Z`` with ``Q_Z`` Haar and
    independent of ``L``): see ``haar_frames``. Cost ``O(n^2)`` per system.
    """
    _check_size(n, d, systems)
    if d < n:
        raise ConfigError(f"the span reduction needs domain.dim >= particles.n (d = {d} < "
                          f"n = {n}): run the full tokens", "domain.dim")
    dof = d - np.arange(n)
    c = np.zeros((systems, n, n))
    low = np.tril_indices(n, -1)
    for k in range(systems):
        g = system_rng(seed, first + k, "initial")
        c[k][np.arange(n), np.arange(n)] = np.sqrt(g.chisquare(dof))
        c[k][low] = g.standard_normal(low[0].size)
    return normalize_rows(c)


def haar_frames(systems: int, n: int, d: int, seed: int = 0, first: int = 0) -> np.ndarray:
    """``(systems, n, d)`` Haar-random orthonormal n-frames of R^d (rows), system ``s``
    from its own stream (QR of a Gaussian d x n matrix, signs fixed by ``diag(R) > 0``)."""
    q = np.empty((systems, n, d))
    for k in range(systems):
        z = system_rng(seed, first + k, "frame").standard_normal((d, n))
        qk, r = np.linalg.qr(z)
        q[k] = (qk * np.sign(np.diag(r))).T
    return q


def reduce_span(x0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(C0, Q)`` with ``x0 = C0 Q`` per system, ``Q`` ``(B, n, d)`` orthonormal rows
    (QR of ``x0^T``); needs ``d >= n``."""
    x0 = np.asarray(x0, dtype=float)
    if x0.ndim != 3 or x0.shape[2] < x0.shape[1]:
        raise ConfigError(f"the span reduction needs tokens (B, n, d) with d >= n, got "
                          f"shape {x0.shape}", "domain.dim")
    q, r = np.linalg.qr(x0.swapaxes(1, 2))
    return r.swapaxes(1, 2), q.swapaxes(1, 2)


# ---------------------------------------------------------------------------------------
# Running an ensemble.

@dataclass
class EnsembleRun:
    """What ``simulate_ensemble`` returns.

    ``states`` (k, B, n, m) at ``times`` (t = 0 first): the tokens (``m = d``) or, reduced,
    their coefficients (``m = n``) in the frames ``frame`` (B, n, d) (``positions``
    recovers the tokens; an integer ``frame`` d: the Haar frames of R^d of the run's
    seed, ``haar_frames``, made on the first request). ``steps``/``rejected``: per system.
    """

    times: np.ndarray
    states: np.ndarray
    frame: np.ndarray | int | None
    steps: np.ndarray
    rejected: np.ndarray
    info: dict = field(default_factory=dict)

    def positions(self, time_index=slice(None)) -> np.ndarray:
        """Tokens in R^d at ``times[time_index]`` (``C Q`` for a reduced run)."""
        c = self.states[time_index]
        if isinstance(self.frame, numbers.Integral):
            b, n = self.states.shape[1:3]
            self.frame = haar_frames(b, n, int(self.frame), self.info["seed"],
                                     self.info["first"])
        return c if self.frame is None else c @ self.frame

    def gram(self) -> np.ndarray:
        """``<x_i, x_j>`` (k, B, n, n): what the reduced run holds exactly."""
        return _gram(self.states)

    def to_dataset(self, positions: bool = True):
        """An ``xarray.Dataset`` with dims (time, system, particle, component):
        ``position`` (or ``coefficient`` on dim ``basis`` if not ``positions`` and reduced),
        ``steps`` and ``rejected`` (system; numbered from the run's ``first``);
        ``attrs`` the run's info."""
        import xarray as xr
        first = int(self.info.get("first", 0))
        systems = np.arange(first, first + self.states.shape[1])
        if positions or self.frame is None:
            var = ("position", ("time", "system", "particle", "component"), self.positions())
        else:
            var = ("coefficient", ("time", "system", "particle", "basis"), self.states)
        ds = xr.Dataset({var[0]: var[1:], "steps": ("system", self.steps),
                         "rejected": ("system", self.rejected)},
                        coords={"time": self.times, "system": systems})
        ds.attrs.update({k: str(v) for k, v in self.info.items()})
        return ds


def simulate_ensemble(model, x0: np.ndarray, save_times, *, kappa: float = math.inf,
                      dt: float | None = None, tolerance: float = 1e-8, seed: int = 0,
                      first: int = 0, reduce: bool = False,
                      frame: np.ndarray | None = None) -> EnsembleRun:
    """Run ``B`` systems of ``model`` together and save at ``save_times``.

    Args:
        model: ``AttentionParticles``, ``PreLNParticles``, ``HardmaxParticles`` or a
            model whose ``velocity`` takes batches (module docstring; then d >= 1, no
            ``reduce``).
        x0: ``(B, n, d)`` tokens (unit rows for the sphere models); with ``reduce`` and
            ``frame`` given: coefficients ``(B, n, n)`` in that frame (``uniform_span``:
            then ``frame = d`` gives the frames of ``uniform_span``'s tokens).
        save_times: increasing times > 0; the result also holds t = 0.
        kappa: inverse noise strength > 0, ``inf`` for none (Pre-LN: only ``inf``).
        dt: fixed step; ``None``: adaptive RK4 (step doubling per system; no noise).
        tolerance: error per adaptive step (``solvers.steppers.batch``).
        seed: system ``first + k`` draws its noise from ``system_rng(seed, first + k)``.
        first: index of the first system (for runs split into parts).
        reduce: step the coefficients in the span of the tokens (no noise, d >= n).
        frame: ``(B, n, d)`` orthonormal rows with ``reduce``: ``x0`` are coefficients; or
            an integer ``d >= n``: the Haar frames ``haar_frames(B, n, d, seed, first)``,
            made only if ``positions`` asks (no ``(B, n, d)`` array otherwise).

    Raises:
        ConfigError: bad sizes or shapes, noise with the reduction or with Pre-LN, an
            adaptive step with noise, a bad ``dt`` (all before any work).
        SolverError: the tokens became non-finite (checked at each save).
    """
    _check_model(model)
    built_in = isinstance(model, BUILT_IN)
    kappa = check_kappa(kappa)
    noisy = not math.isinf(kappa)
    x0 = np.array(x0, dtype=float)
    if x0.ndim != 3:
        raise ConfigError(f"initial: an ensemble needs tokens (B, n, d), got shape "
                          f"{x0.shape}", "initial")
    _check_size(x0.shape[1], x0.shape[2], x0.shape[0], 2 if built_in else 1)
    if not np.all(np.isfinite(x0)):
        raise ConfigError("initial: tokens must be finite", "initial")
    _check_options(model, noisy, dt, reduce)
    save_times = _checked_save_times(save_times)
    x0, frame = _tokens_and_frame(x0, frame, reduce)
    x0 = _checked_norms(model, x0)
    check_batched(model, x0)

    def velocity(x):
        return batch_velocity(model, x)

    def finite(t, x):
        bad = ~np.all(np.isfinite(x), axis=(1, 2))
        if np.any(bad):
            raise SolverError(f"the tokens of system {first + int(np.argmax(bad))} became "
                              f"non-finite by t = {t:.6g}; lower time.dt (or beta)")

    # Overflow (USA speeds e^beta with too large a step) gives inf/NaN, which ``finite``
    # reports at the next save with advice.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _run(model, x0, save_times, kappa, dt, tolerance, seed, first, reduce,
                    frame, velocity, finite)


def _check_options(model, noisy: bool, dt: float | None, reduce: bool) -> None:
    """``dt``, the noise and the span reduction against the model (before any work)."""
    if dt is not None and not (isinstance(dt, numbers.Real) and math.isfinite(dt) and dt > 0):
        raise ConfigError(f"time.dt must be a number > 0 or \"auto\", got {dt!r}", "time.dt")
    if noisy and not model.on_sphere:
        raise ConfigError("noise is defined for tokens on the sphere only; use kappa = inf "
                          "with Pre-LN", "model.kappa")
    if noisy and dt is None:
        raise ConfigError("runs with noise need a fixed time.dt", "time.dt")
    if reduce:
        _check_built_in(model, "the span reduction")
    if reduce and noisy:
        raise ConfigError("the span reduction holds for deterministic runs only: the "
                          "Brownian increments leave the span of the initial tokens; run "
                          "the full tokens or set kappa = inf", "model.kappa")


def _checked_save_times(save_times) -> np.ndarray:
    """The save times as a float array: finite, increasing and > 0."""
    save_times = np.atleast_1d(np.asarray(save_times, dtype=float))
    if save_times.size == 0 or not np.all(np.isfinite(save_times)) or save_times[0] <= 0 \
            or np.any(np.diff(save_times) <= 0):
        raise ConfigError("save times must be finite, increasing and > 0", "time.save_every")
    return save_times


def _tokens_and_frame(x0: np.ndarray, frame, reduce: bool) -> tuple[np.ndarray, object]:
    """``(x0, frame)`` checked: a frame (an integer d, or ``(B, n, d)`` rows) goes with
    the reduction and coefficients ``(B, n, n)``; the reduction without one reduces the
    tokens here (``reduce_span``)."""
    if isinstance(frame, numbers.Integral) and not isinstance(frame, bool):
        if not reduce or x0.shape[2] != x0.shape[1] or frame < x0.shape[1]:
            raise ConfigError(f"frame = d goes with reduce = True, coefficients (B, n, n) "
                              f"and d >= n; got d = {frame}, shape {x0.shape}", "domain.dim")
        frame = int(frame)
    elif frame is not None:
        frame = np.asarray(frame, dtype=float)
        if not reduce or frame.ndim != 3 or frame.shape[:2] != x0.shape[:2] \
                or x0.shape[2] != x0.shape[1] or frame.shape[2] < x0.shape[1]:
            raise ConfigError(f"a frame (B, n, d) goes with reduce = True and coefficients "
                              f"(B, n, n); got {frame.shape} and {x0.shape}", "initial")
    elif reduce:
        x0, frame = reduce_span(x0)
    return x0, frame


def _checked_norms(model, x0: np.ndarray) -> np.ndarray:
    """Unit tokens on the sphere (renormalised: the check admits 1e-6), non-zero ones
    for Pre-LN."""
    if model.on_sphere:
        norms = np.sqrt(np.einsum("bij,bij->bi", x0, x0))
        if np.max(np.abs(norms - 1.0)) > 1e-6:
            raise ConfigError("initial: tokens must be unit vectors", "initial")
        x0 = x0 / norms[..., None]
    elif isinstance(model, PreLNParticles) and \
            np.any(np.einsum("bij,bij->bi", x0, x0) == 0):
        raise ConfigError("initial: tokens must be non-zero", "initial")
    return x0


def _run(model, x0, save_times, kappa, dt, tolerance, seed, first, reduce, frame,
         velocity, finite) -> EnsembleRun:
    noisy = not math.isinf(kappa)
    info = {"model": model.name, "kappa": kappa, "dt": "auto" if dt is None else dt,
            "reduced": bool(reduce), "seed": seed, "first": first}
    if noisy:
        rngs = [system_rng(seed, first + k) for k in range(x0.shape[0])]
        res = integrate_sde_batch(GeodesicEulerMaruyama(velocity, kappa), x0,
                                  save_times, float(dt), rngs, on_save=finite)
        steps = np.full(x0.shape[0], res["steps"])
        rejected = np.zeros(x0.shape[0], dtype=np.int64)
        info["integrator"] = "geodesic Euler-Maruyama"
    else:
        rk4 = BatchRK4(velocity, normalize_rows if model.on_sphere else None)
        res = integrate_batch(rk4, x0, save_times, dt=dt, tolerance=tolerance,
                              on_save=finite)
        steps, rejected = res["steps"], res["rejected"]
        info["integrator"] = "RK4 + retraction" + (", step doubling per system"
                                                   if dt is None else "")
    states = np.concatenate([x0[None], res["states"]])
    return EnsembleRun(np.concatenate([[0.0], save_times]), states, frame, steps, rejected,
                       info)
