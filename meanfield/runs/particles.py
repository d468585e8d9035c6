"""``particles(config)``: run the token system of a config, return an ``xarray.Dataset``.

The config is the PDE's (``meanfield.config``) with the ``[particles]`` section: ``n``
tokens drawn i.i.d. from the ``[initial]`` density (``meanfield.initial.samplers``; or the rows
of a token file, or an equiangular set) with ``particles.seed``, moved by the model of
``particles.architecture``. A zonal config (``domain.geometry = "zonal"``, ``dim = d``)
runs the sphere's tokens on S^{d-1}, drawn from the zonal density about ``e = (1, 0, ...,
0)`` (``meanfield.initial.zonal_samplers``):

- ``"post-ln"``: SA (``normalized = true``) or USA on S^{d-1}, with noise when
  ``model.kappa`` is finite (geodesic Euler-Maruyama, fixed ``time.dt``), else RK4 with
  retraction (fixed ``time.dt`` or adaptive with ``time.tolerance``);
- ``"pre-ln"``: tokens in R^d, attention on their directions (no noise);
- ``"hardmax"``: beta = infinity without self-attention (``model.beta`` is not used);
- the normalization family (``meanfield.model.normalizations``, [Rig25, §6.2]):
  ``"peri-ln"`` (tokens in R^d, ``x_i' = A_i/|A_i|``, no noise), ``"ngpt"`` (on
  S^{d-1}, ``x_i' = alpha P^perp(A_i/|A_i|)``, ``particles.ngpt_alpha``; noise as
  post-ln) and ``"mix-ln"`` (post-ln until ``particles.mix_switch``, then pre-ln; no
  noise);
- ``"pure"`` (``domain.geometry = "euclidean"``): pure self-attention in R^d with the
  weights of ``[weights]`` (``meanfield.model.weighted_particles``), no normalization, no
  noise; ``particles.rescaled = true`` integrates ``z = e^{-tV} x`` instead (one head).

General weights (``[weights]`` other than the identity, ``[feedforward]``, a causal
``particles.mask`` or ``particles.save_attention``) run post-LN as the weighted sphere
model of ``meanfield.model.weighted_particles`` (dense softmax attention, no fast sums;
with Q = K = V = I it is SA to round-off).

``particles.attention = "sinkhorn"`` (post-ln or pure) replaces the softmax rows by the
doubly stochastic scaling of the same kernel, solved to ``particles.sinkhorn_tolerance``
(``meanfield.model.sinkhorn_particles``, dense); the dataset adds per time
``sinkhorn_potential`` (G = sum_i log u_i, one head with Q^T K symmetric; non-increasing
when V = Q^T K), ``speed_squared_sum`` (sum_i |x_i'|^2: dG/dt = -beta times it) and
``sinkhorn_error`` (the largest error of P's row and column sums).

``particles.integrator = "layers"`` runs the discrete layers of step ``particles.layer_step``
instead of the ODE, and ``[weights] layers`` / ``redraw`` weights that change with depth
(``meanfield.runs.layered``; docs/weights.md section 7).

Interaction sums: ``particles.sum_method`` (``solvers.particles.fast``): "direct" (exact, O(n^2)),
"fourier" (S^1) or "harmonic" (S^2), to ``particles.accuracy``; "auto" picks by n, d and
beta once per run.

The dataset: ``position (time, particle, component)`` unit vectors (the directions for
Pre-LN, whose lengths are ``radius (time, particle)``), on the circle also ``angle (time,
particle)`` in [0, 2 pi), and per time ``order_parameter``, ``mean_direction``, ``energy``
(``E_beta(mu^n) - E_beta(uniform)``, as the PDE's), ``clusters`` (single-linkage clusters
at chordal distance ``particles.cluster_threshold``; ``meanfield.metrics.clusters``; with
``particles.cluster_method = "rank"`` the rank of the 0/1 matrix of close pairs,
``meanfield.metrics.cluster_rank``) and, with
``particles.attention_rank``, ``attention_rank``; a zonal config adds
``axis_order_parameter`` (``mean_i <x_i, e>``, the PDE's ``int t dmu``) and the attr
``axis``. The weighted sphere model has
``energy`` only when every head has ``Q^T K = I`` (the kernel ``e^{beta <x, y>}`` of
``E_beta``; with ``V = -I`` it decreases); its attention rank is that of its own
attention matrices.

Tokens in R^d (``"pure"``): ``position (time, particle, component)`` holds the tokens as
they are, x, or z = e^{-tV} x with ``rescaled`` (its ``long_name`` and the dataset attr
``position_holds`` say which), not normalised; no ``angle``. Per time: ``mean_position
(time, component)`` (``mean_i``; not ``mean``, which is a method of a Dataset), ``spread`` (``sqrt(mean_i |x_i - mean|^2)``: 0 when they
collapse to one point), ``max_norm`` (``max_i |x_i|``) and ``clusters`` (single linkage
at Euclidean distance ``particles.cluster_threshold``). The sphere's order parameter,
``E_beta`` and chordal clusters are not defined there and not written.

``particles.diagnostics`` (``meanfield.config.particle_diagnostics``) names the per-time
diagnostics computed and written (absent: all of the geometry's above; ``[]``: the tokens
only); each one's cost per frame is in docs/datasets.md.

``particles.save_attention = true``: ``attention (time, particle, key)``, the attention
matrix P of each frame (rows sum to 1; rescaled: P(t) at x = e^{tV} z), with
``boolean_distance (time)`` (``max_i (1 - max_j P_ij)``) and ``attention_rank (time)``
(singular values above ``particles.rank_tolerance`` of the largest;
``meanfield.metrics.attention``). Several heads: one matrix per head, on a ``head`` dim
before ``particle`` (and ``(time, head)`` for the two diagnostics). Its memory (frames x
heads x n^2 doubles) is estimated with the run's before any work (``budget``).

Attributes: the config, the version, the resolved sum method and its order,
``architecture``, ``rescaled`` (0/1), ``mask``, ``heads``, ``position_holds``, status
and message.

Nothing lost: with an output path, the frames go to disk as the run goes (part files
``<path>.frames/``, ``meanfield.runs.frames``) and a checkpoint ``<path>.checkpoint.nc``
(exact state, its time, noise generator state, next step, number of frames saved) is
written every ``output.checkpoint_every`` seconds of wall time (between save times too)
and on Ctrl-C; ``resume=True`` continues from it bit for bit.
"""
from __future__ import annotations

import bisect
import contextlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
import numpy as np
import xarray as xr

from meanfield import config as cfgmod
from meanfield.errors import ConfigError
from meanfield.config import weights as wmod
from meanfield.config.attention import check_depth_weights
from meanfield.config.sections import RADIAL_ARCHITECTURES
from meanfield.initial import samplers as sampling
from meanfield.initial import zonal_samplers as zonal_sampling
from meanfield.metrics import clusters as cl
from meanfield.metrics.cluster_rank import check_rank_size
from meanfield.metrics.components import check_linkage_work
from meanfield.model import kernels
from meanfield.model import normalizations as nz
from meanfield.model import particles as pm
from meanfield.model import tokens
from meanfield.model import weighted_attention as wa
from meanfield.model.sinkhorn_particles import SinkhornParticles
from meanfield.runs import budget
from meanfield.runs import layered
from meanfield.runs import sizes
from meanfield.runs import threads as thread_policy
from meanfield.runs.engine import Engine, StepHook, SteppingTask
from meanfield.runs.particle_dataset import diagnostics, to_dataset
from solvers.particles.multipliers import FAST_METHOD

# n^2 d below which a weighted model steps on one BLAS thread (ParticlesTask.held)
SMALL_ATTENTION = 2**22
# method -> the only dimension it serves
FAST_METHODS = {method: d for d, method in FAST_METHOD.items()}


# ---------------------------------------------------------------------------------------
# Checking a config and building the run.

def check_config(cfg: dict) -> dict:
    """Particle-specific checks of a validated config; returns the run plan.

    The plan: ``n``, ``dim``, ``kappa``, ``dt`` (None: adaptive), ``sum_method`` (what
    "auto" resolves to), ``sum_order`` (K or L of a fast method, else 0).
    """
    p, m, dim = cfg["particles"], cfg["model"], cfg["domain"]["dim"]
    kind = cfg["initial"]["kind"]
    n = p["n"]
    if kind == "tokens":
        rows = sampling.token_count(cfg["initial"]["path"])
        if n is not None and n != rows:
            raise ConfigError(f"particles.n = {n} but the token file "
                              f"{cfg['initial']['path']!r} has {rows} rows; leave particles.n "
                              "out to take them all", "particles.n")
        n = rows
    n = cfgmod.DEFAULT_N if n is None else n
    if cfg["domain"]["geometry"] != "euclidean":  # (in R^d: n >= 2 and d >= 1, validated)
        tokens.check_size(n, dim)
    noisy = not math.isinf(m["kappa"])
    if noisy and p["architecture"] in RADIAL_ARCHITECTURES:
        raise ConfigError("model.kappa: noise is defined for tokens on the sphere (post-ln, "
                          f"ngpt, hardmax); {p['architecture']} tokens live in R^d: use "
                          "kappa = \"inf\"", "model.kappa")
    dt = cfg["time"]["dt"]
    if noisy and dt == "auto":
        raise ConfigError("time.dt = \"auto\": particle runs with noise need a fixed step "
                          "(Euler-Maruyama has no error estimate); give e.g. time.dt = 0.01",
                          "time.dt")
    method = p["sum_method"]
    check_rank_size(n, p["cluster_method"])
    if wmod.is_weighted(cfg) or p["attention"] == "sinkhorn":  # (dense attention)
        return _weighted_plan(cfg, n, dim, dt)
    if p["architecture"] == "hardmax" and method not in ("auto", "direct"):
        raise ConfigError(f"particles.sum_method = {method!r}: the hardmax model has no fast sum "
                          "(it takes a maximum, not an exponential kernel); use 'auto' or "
                          "'direct'", "particles.sum_method")
    if method in FAST_METHODS and FAST_METHODS[method] != dim:
        valid = ["auto", "direct"] + [k for k, v in FAST_METHODS.items() if v == dim]
        raise ConfigError(f"particles.sum_method = {method!r} is the "
                          f"{'circle (dim 2)' if method == 'fourier' else 'sphere (dim 3)'} "
                          f"fast sum; for dim {dim} use one of "
                          + ", ".join(repr(v) for v in valid), "particles.sum_method")
    beta = m["beta"] if p["architecture"] != "hardmax" else math.inf
    if method in FAST_METHODS:
        try:
            kernels.check_fast_accuracy(dim, beta, p["accuracy"])
        except ValueError as exc:
            raise ConfigError(f"particles.accuracy = {p['accuracy']!r} with method "
                              f"{method!r} at beta = {beta:g}: {exc}",
                              "particles.accuracy") from None
    if p["architecture"] == "hardmax":
        resolved = "direct"
    else:
        resolved = kernels.resolve_sum_method(method, n, dim, beta, p["accuracy"])
    order = kernels.fast_order(dim, beta, p["accuracy"]) if resolved in FAST_METHODS else 0
    if p["attention_rank"] and n > cl.MAX_RANK_TOKENS:
        raise ConfigError(f"particles.attention_rank = true needs a dense SVD of the n x n "
                          f"attention matrix: n = {n} > {cl.MAX_RANK_TOKENS}; use fewer tokens",
                          "particles.attention_rank")
    return {"n": n, "dim": dim, "kappa": m["kappa"], "dt": None if dt == "auto" else dt,
            "beta": beta, "sum_method": resolved, "sum_order": order, "weighted": False,
            "heads": 1, "energy": True}


def _weighted_plan(cfg: dict, n: int, dim: int, dt) -> dict:
    """``check_config`` for the weighted models (dense attention, no fast sums)."""
    p, m = cfg["particles"], cfg["model"]
    check_depth_weights(cfg)  # (Sinkhorn attention takes constant weights)
    what = "Sinkhorn attention" if p["attention"] == "sinkhorn" else \
        "general weights" if not wmod.is_identity(cfg) else \
        "saved attention" if p["save_attention"] else "a mask or a feed-forward layer"
    if p["sum_method"] in FAST_METHODS:
        raise ConfigError(f"particles.sum_method = {p['sum_method']!r} expands the kernel of "
                          f"Q = K = V = I only; the run with {what} sums densely: use "
                          "'auto' or 'direct'", "particles.sum_method")
    if not m["normalized"]:
        raise ConfigError(f"model.normalized = false: the run with {what} is normalized "
                          "self-attention (softmax rows); use normalized = true",
                          "model.normalized")
    for key in ("save_attention", "attention_rank"):
        if p[key] and n > cl.MAX_RANK_TOKENS:
            raise ConfigError(f"particles.{key} = true needs a dense SVD of the n x n "
                              f"attention matrix at each frame: n = {n} > "
                              f"{cl.MAX_RANK_TOKENS}; use fewer tokens", f"particles.{key}")
    sizes.check_weight_matrices(cfg)  # d x d matrices: before any is drawn
    heads = wa.build_heads(cfg)
    eye = np.eye(dim)
    return {"n": n, "dim": dim, "kappa": m["kappa"], "dt": None if dt == "auto" else dt,
            "beta": m["beta"], "sum_method": "direct", "sum_order": 0, "weighted": True,
            "heads": len(heads), "sinkhorn": p["attention"] == "sinkhorn",
            # E_beta is the energy of the kernel e^{beta <x, y>}: Q^T K = I in every head
            "energy": p["architecture"] == "post-ln" and all(
                np.array_equal(h.query.T @ h.key, eye) for h in heads)
            and layered.same_kernel_at_every_depth(cfg)}


def build_model(cfg: dict, plan: dict, threads: int | None = None):
    """The model object of ``particles.architecture`` (and of the weights)."""
    p, m = cfg["particles"], cfg["model"]
    if p["attention"] == "sinkhorn":  # (post-ln or pure: meanfield.config.attention)
        return SinkhornParticles(wa.build_heads(cfg), m["beta"], wmod.build_feedforward(cfg),
                                 on_sphere=p["architecture"] == "post-ln",
                                 tolerance=p["sinkhorn_tolerance"])
    if plan.get("weighted", wmod.is_weighted(cfg)):  # (layers, depth: runs.layered)
        return layered.weighted_model(cfg)
    if p["architecture"] == "hardmax":
        return pm.HardmaxParticles()
    return nz.build_normalization_model(
        p["architecture"], m["beta"], m["normalized"], ngpt_alpha=p["ngpt_alpha"],
        mix_switch=p["mix_switch"], method=plan["sum_method"], accuracy=p["accuracy"],
        threads=threads)


def initial_tokens(cfg: dict, plan: dict) -> np.ndarray:
    """The initial tokens: unit vectors, except Pre-LN token files read as they are."""
    init = cfg["initial"]
    if cfg["domain"]["geometry"] == "euclidean":  # tokens in R^d, as drawn or read
        rng = tokens.initial_rng(cfg["particles"]["seed"])
        return sampling.sample_tokens(init, plan["n"], plan["dim"], rng, geometry="euclidean")
    in_rd = cfg["particles"]["architecture"] in ("pre-ln", "peri-ln")  # (Mix-LN: unit)
    if in_rd and init["kind"] == "tokens" and not init["unit_rows"]:
        return tokens.check_tokens(sampling.load_token_file(init["path"], plan["dim"], plan["n"]),
                               on_sphere=False, key="initial.path")
    rng = tokens.initial_rng(cfg["particles"]["seed"])
    if cfg["domain"]["geometry"] == "zonal":  # the zonal density about e = (1, 0, ..., 0)
        return zonal_sampling.zonal_tokens(init, plan["n"], plan["dim"], rng)
    return sampling.sample_tokens(init, plan["n"], plan["dim"], rng)


# ---------------------------------------------------------------------------------------
# Running.

@dataclass
class TokenState:
    """The tokens at a save: ``x`` as stepped (unit rows for the sphere models, renormalised
    at the start), the next step ``h`` (None: not chosen yet), the noise generator's state
    ``rng``, and the tokens as given where they differ from ``x`` (the start).

    In the middle of an interval (a checkpoint between saves), ``t`` and ``taken`` are
    where ``TokenStepper.advance`` continues from (its ``t`` and ``taken``). ``at``: the
    save time of ``x`` (the rescaled flow's attention depends on it).

    Steps not cut by the saves (``TokenStepper.free``): ``x`` at ``t`` is where the steps
    are (``t`` at or past the save), ``prev`` at ``prev_t`` the start of the last step
    and ``prev_h`` its size (the saves inside it are interpolated from there), and
    ``shown`` the tokens at the save ``at``."""

    x: np.ndarray
    h: float | None
    rng: dict
    shown: np.ndarray | None = None
    t: float | None = None
    taken: int = 0
    at: float = 0.0
    prev: np.ndarray | None = None
    prev_t: float = 0.0
    prev_h: float = 0.0


class ParticlesTask(SteppingTask):
    """The token system of one config on the run engine (``meanfield.runs.engine``)."""

    kind = "particles"
    t_start = 0.0  # where this (resumed) run starts stepping: sets the step size floor

    def __init__(self, cfg: dict, plan: dict, threads: int | None = None):
        super().__init__(cfg)
        self._time_list = self.times.tolist()  # (advance's bisect)
        self.plan = dict(plan)
        if threads is None:
            threads = thread_policy.current().fast_sum_threads()
        self.plan["threads"] = threads
        self.model = build_model(cfg, self.plan, threads)
        self.x0 = initial_tokens(cfg, self.plan)
        self.noise = tokens.noise_rng(cfg["particles"]["seed"])
        # (Mix-LN steps phase by phase: meanfield.model.normalizations.PhasedStepper;
        # layers and weights that change with depth: meanfield.runs.layered)
        self.stepper = layered.make_stepper(self.model, cfg, self.plan, self.noise)

    def start(self) -> TokenState:
        # the run steps from unit rows (sphere models); frame 0 is the tokens as given
        x = self._stepped(self.x0)
        return TokenState(x, None, self.noise.bit_generator.state, self.x0)

    def _stepped(self, x: np.ndarray) -> np.ndarray:
        if self.cfg["domain"]["geometry"] == "euclidean":  # any d >= 1, checked when drawn
            return np.array(x, dtype=float)
        return tokens.check_tokens(x, self.model.on_sphere)

    def advance(self, state: TokenState, point: float, on_step: StepHook) -> TokenState:
        # (bisect on the times as a list: numpy's searchsorted of one value cost 3 us)
        t = state.t if state.t is not None else \
            self._time_list[bisect.bisect_left(self._time_list, point) - 1]
        # the generator's state matters to noise runs only (its get and set: 4 us a save)
        noisy = getattr(self.stepper, "noisy", True)
        if noisy:
            self.noise.bit_generator.state = state.rng
        # steps not cut by the saves (TokenStepper.free): the stepper goes on to the end
        # of the step that reaches the save; the state is where it stopped, and the step
        free = getattr(self.stepper, "free", False)

        def last_step() -> dict:
            st = self.stepper.free_state if free else None
            return {} if st is None or st.prev is None else \
                {"prev": st.prev, "prev_t": st.prev_t, "prev_h": st.prev_h}

        def on_state(t_: float, x: np.ndarray, h: float, taken: int) -> None:
            on_step.midway(lambda: TokenState(np.array(x), h, self.noise.bit_generator.state,
                                              t=t_, taken=taken, **last_step()))

        last = {} if not free else \
            {"last": None if state.prev is None else (state.prev, state.prev_t, state.prev_h)}
        x, h = self.stepper.advance(state.x, t, float(point), state.h, on_step,
                                    h_min=1e-14 * float(self.times[-1] - self.t_start),
                                    taken=state.taken, on_state=on_state, **last)
        rng = self.noise.bit_generator.state if noisy else state.rng
        if free:  # x: the tokens at the save, interpolated inside the last step
            st = self.stepper.free_state
            return TokenState(st.u, st.h, rng, shown=x, t=st.t, at=float(point),
                              **last_step())
        return TokenState(x, h, rng, at=float(point))

    def held(self):
        """One BLAS thread for a small weighted model, decided and entered once per run
        (the engine holds it around the schedule; entered at every save before, its
        scan of the loaded libraries cost 0.1-2 ms a save: 100 saves of n = 32, d = 16
        cost 4.4x one save, benchmarks/bench_save_cost.py): its small products and
        d x d algebra gain nothing from threads, and beside other jobs OpenBLAS's
        spinning threads made small LAPACK calls slow (scipy's expm of a 2 x 2 matrix:
        24 ms instead of 0.012; the rescaled flow now takes e^{t(V - cI)} from a cached
        eigendecomposition, ``RescaledForm``, but its small products remain)."""
        n, d = self.plan["n"], self.plan["dim"]
        if self.plan["weighted"] and n * n * d <= SMALL_ATTENTION:
            return thread_policy.one_blas_thread()
        return contextlib.nullcontext()

    def frame(self, state: TokenState) -> tuple[np.ndarray, dict]:
        x = state.shown if state.shown is not None else state.x
        p, attention = self.cfg["particles"], None
        if self.plan["weighted"] and (p["save_attention"] or p["attention_rank"]):
            attention = self.model.attention(x, state.at)
        out = diagnostics(x, self.cfg, self.plan, attention)
        if self.plan.get("sinkhorn"):  # G, sum |x'|^2 and the marginals' error
            out.update(self.model.diagnostics(x))
        return x, out

    def dataset(self, frames: list, info: dict, start: int = 0) -> xr.Dataset:
        return to_dataset(self.cfg, self.plan, list(self.times[start:start + len(frames)]),
                          [f[0] for f in frames], [f[1] for f in frames], info)

    def info(self) -> dict:
        return {"steps": self.stepper.steps, "rejected_steps": self.stepper.rejected,
                "integrator": self.stepper.info()["integrator"]}

    def state_vars(self, state: TokenState) -> tuple[dict, dict]:
        # The tokens as stepped (Pre-LN: not unit vectors; the start: renormalised), so
        # that a resumed run is bit-identical; the frames themselves are in the parts.
        attrs = {"checkpoint_h": -1.0 if state.h is None else float(state.h),
                 "checkpoint_rng": json.dumps(state.rng)}
        if state.t is not None:  # in the middle of an interval
            attrs.update(checkpoint_t=float(state.t), checkpoint_taken=int(state.taken))
        data = {"checkpoint_x": (("particle", "component"), state.x)}
        if state.prev is not None:  # the last step, whose saves are interpolated
            data["checkpoint_prev"] = (("particle", "component"), state.prev)
            attrs.update(checkpoint_prev_t=float(state.prev_t),
                         checkpoint_prev_h=float(state.prev_h))
        return data, attrs

    def restore_state(self, ckpt: xr.Dataset, frames: int) -> TokenState:
        h = float(ckpt.attrs["checkpoint_h"])
        rng = json.loads(ckpt.attrs["checkpoint_rng"])
        self.t_start = float(self.times[frames - 1])
        h = None if h < 0 else h
        x = ckpt["checkpoint_x"].values
        if "checkpoint_t" in ckpt.attrs:
            prev = {} if "checkpoint_prev" not in ckpt else {
                "prev": ckpt["checkpoint_prev"].values,
                "prev_t": float(ckpt.attrs["checkpoint_prev_t"]),
                "prev_h": float(ckpt.attrs["checkpoint_prev_h"])}
            return TokenState(x, h, rng, t=float(ckpt.attrs["checkpoint_t"]),
                              taken=int(ckpt.attrs["checkpoint_taken"]), **prev)
        return TokenState(x, h, rng, at=self.t_start)


def particles(config: dict | None = None, *, out: str | Path | None = None,
              overwrite: bool = False, resume: bool = False, progress: bool = False,
              threads: int | None = None) -> xr.Dataset:
    """Run the particle system of one config.

    Args:
        config: the config (dict of sections; see ``meanfield.config``), validated here.
        out: where to write the netCDF result (default ``output.path``; none: not written).
        overwrite: replace an existing result.
        resume: continue from ``<out>.checkpoint.nc`` if it exists.
        progress: show a tqdm progress bar.
        threads: threads of the fast sums (default: the thread policy's,
            ``meanfield.runs.threads``).

    Returns:
        The dataset; ``attrs["status"]`` is 0 when finished, -1 when interrupted (then it
        holds the frames so far, also kept on disk with the checkpoint). With an output
        path whose frames went to part files, it is opened lazily from the written result
        (or from the parts, interrupted): values are read when used, ``.load()`` gives
        numpy arrays; without one it is in memory.

    Raises:
        ConfigError: bad input, before any time stepping.
        SolverError: the tokens became non-finite (the message says what to change).
    """
    cfg = cfgmod.validate(config)
    plan = check_config(cfg)
    out = out if out is not None else cfg["output"]["path"]
    # too big for this machine: refused before any work (frames on disk with an output)
    budget.check(cfg, "particles", streamed=out is not None, out=out)
    if cfg["particles"]["cluster_method"] == "linkage":  # each frame's count, d >= 4
        check_linkage_work(plan["n"], plan["dim"])
    engine = Engine(cfg, out, overwrite=overwrite, resume=resume, progress=progress)
    return engine.run(ParticlesTask(cfg, plan, threads))
