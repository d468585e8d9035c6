"""``phase_diagram(config)``: how likely two tokens are clustered, over (d, beta, t).

For each token dimension ``d`` of ``[phase_diagram] dims`` and each ``beta`` of
``[phase_diagram] beta``, ``systems`` independent systems of ``n = [particles] n`` tokens
(default 32), i.i.d. uniform on S^{d-1}, follow the deterministic SA (``[model]
normalized = true``, the default) or USA dynamics (docs/conventions.md). At each time of
``[phase_diagram] times`` the dataset holds

- ``pair_probability`` (dim, beta, time): the fraction, over the systems and the pairs
  ``i < j`` of each, of ``<x_i(t), x_j(t)> >= threshold``; it is the mean over the
  systems of the per-system fractions ``f_s`` (every system has ``n(n-1)/2`` pairs);
- ``pair_probability_low``/``_high``: a 95 % interval from the number of systems. The
  pairs of one system are dependent, the systems are i.i.d.: the interval is on the mean
  of the ``f_s``. A variable in [0, 1] with mean ``p`` has variance at most
  ``p(1 - p)`` (that of a 0/1 variable), so the Wilson score interval with ``systems``
  trials (``|p_hat - p| <= z sqrt(p(1 - p)/S)`` solved for ``p``) covers at least as
  well as for 0/1 outcomes, and it does not collapse to a point at 0 or 1 as the normal
  interval with the sample variance does. ``pair_probability_stderr`` is the sample
  standard error ``sd(f_s)/sqrt(S)`` (smaller: it uses the actual spread);
- ``equiangular_time`` (beta): the time at which the equiangular ODE
  (``AttentionParticles.equiangular_rhs(n)``) started from ``rho(0) = 0`` reaches the
  threshold (``solve_ivp``, DOP853, with an event; ``inf`` if it does not by
  ``EQUIANGULAR_HORIZON``). ``rho(0) = 0``: i.i.d. uniform tokens have ``E<x_i, x_j> =
  0`` and, as d grows, ``<x_i, x_j> = O(d^{-1/2})``: in high dimension the start is
  equiangular with ``rho = 0`` to that order (an equiangular set with rho = 0 needs d >=
  n: the curve is a prediction for d >= n only).

How the systems are run (``meanfield.studies.tokens.phase_kernels``): for d >= n the span
reduction, on the Gram matrices ``G = X X^T`` (n x n per system, whatever d), started
from ``uniform_span`` (exact in law, no d-dimensional tokens); for d < n the tokens
themselves (``uniform_ensemble``). System ``s`` starts from the same tokens at every
beta (common random numbers: the beta dependence is not blurred by the draw) and its
numbers do not depend on the batch it runs in (per-system steps and seeds
``system_rng(seed, s)``). The integrator is Dormand-Prince 5(4) with one adaptive step
per system (``solvers.steppers.dormand_prince.integrate_batch_dopri``, order 5, saves
from its order-4 continuous extension), all betas of a member in one batch (a beta per system).

Engines (``[phase_diagram] engine``): "numba" (default) runs each system compiled, a
system at a time in cache (``phase_numba``); "numpy" runs the batch as arrays; "torch"
and "cupy" run the same batched code (written against an array namespace ``xp``,
``array_api_compat``) on that library: torch on "cuda" if ``torch.cuda.is_available()``
else on the CPU, CuPy on its current device, in float64. They are optional, installed by
the user (``pip install torch``, ``pip install cupy-cuda12x``): asked where missing (or,
for CuPy, with no CUDA device) they are refused with a ``ConfigError`` on
``phase_diagram.engine`` before any work. The initial states are drawn with numpy on the
host as for the other engines (the same seeds give the same starts everywhere) and moved
to the device; the per-system bookkeeping of the integrator stays on the host, one
vector of errors per step comes back, and the fractions come back at the saves. On numpy
the array-API code gives the numbers of the former numpy code bit for bit; torch on the
CPU agrees with it to 1e-12 (equal fractions seen; the step sequences can part at an
error estimate on the acceptance boundary, torch rounding ``exp`` and products
differently in the last bit). On the CPU torch is no faster than numpy (d = 1024, 5 beta
x 256 systems, one thread, a loaded 2-core machine: numpy 8.7 s, torch 19-65 s); its use
is a GPU (``benchmarks/bench_phase_diagram.py --engine torch``; not yet timed on one).

A system leaves the batch once every pair is past ``freeze_level = c + (1 - c)/2``,
``c = max(threshold, 0)``: along the exact flow the smallest cosine ``m(t) = min_{i,j}
<x_i, x_j>`` never decreases once ``m >= 0``. (For the pair attaining it, ``d/dt <x_i,
x_j> = <v_i, x_j> + <x_i, v_j>`` with ``<v_i, x_j> = <a_i, x_j> - <x_i, a_i> m``; ``a_i =
sum_k A_ik x_k`` with ``A_ik >= 0`` gives ``<a_i, x_j> >= m sum_k A_ik`` and ``<x_i,
a_i> <= sum_k A_ik``, so ``<v_i, x_j> >= 0`` for SA and USA alike.) Its later saves are
1; the numerical path could only differ if its error exceeded ``(1 - c)/2`` (5e-4 at the
default threshold, against a tolerance of 1e-5 per step).

The tolerance (``[phase_diagram] tolerance``, default 1e-5 per step) is set by the
statistical error: tightened to 1e-6, the diagram (d = 1024 and d = 8, 512 systems)
moved by at most 0.002, 7 % of the half-width of its 95 % interval (0.043 at 512
systems, 0.022 at 2048; ``benchmarks/bench_phase_diagram.py``).

``[phase_diagram] precision = "single"`` (default "double") runs the Gram field's inner work
in float32 (``phase_gram_single``; the array engines' ``phase_kernels.gram_field`` alike):
the state, the stages, the error control and the saves stay float64. Its field is the
float64 one to ~1e-6 for spread tokens and much less near a cluster (the product is centred
on G - 1), below the tolerance's own effect: its fractions are within 1.2e-3 of double's
(50 beta x 128 systems, half-width 0.087), for ~1.3 times less CPU
(``benchmarks/bench_phase_gram.py``). The tokens (d < n) and weighted systems run in double
whatever it says; the attrs record it.

Cost (``benchmarks/bench_phase_diagram.py`` on the shared 2-core machine, other jobs
keeping its load at 4 to 6): the default d = 1024 diagram (50 beta x 2048 systems,
t <= 30) takes 121 field evaluations per system on average (77783 of the 102400 systems
frozen before t = 30) and 132-144 s of CPU, i.e. 66-72 s of wall on 2 idle cores
(152-298 s of wall measured under that load); 10-14 us of CPU per field evaluation and
system whatever d (d = 4096 / d = 32: 0.99-1.01); a direct approach (explicit
Euler, dt = 0.1, full tokens, plain numpy) 82-99 times slower. Since issue 29 the Gram
systems run ``phase_gram`` (the upper triangle packed, a vectorised exp; the same scheme
and steps: the 102400 systems' fractions are those of the former path bit for bit):
``benchmarks/bench_phase_gram.py``, CPU time, least of interleaved runs: 4.3-5.1 against
7.0-8.7 us per evaluation and system (1.5-1.7 times), the whole d = 1024 diagram 88-89 s
of CPU against 127-142 s under a load of 2-4 (1.44-1.59 times); from the least time per
evaluation, 55 s of CPU (27.5 s of wall on 2 idle cores) against 86 s (43 s).

``model.beta`` is not used (the betas are ``[phase_diagram] beta``). Noise (finite
``model.kappa``) is refused: the study is deterministic (the Brownian
increments leave the span, and a noisy diagram is another study). Other architectures
than post-ln are refused. The members (dim, block of ``batch`` (system, beta) pairs) run
through the executor (``[parallel]``: serial or dask, the same numbers); a checkpoint
keeps the members done and ``resume`` goes on from them.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from scipy import integrate as sint
from scipy import stats

from meanfield import config as cfgmod
from meanfield.config.study_weights import is_weighted, value_is_identity
from meanfield.errors import ConfigError
from meanfield.metrics.hemisphere import hemisphere_share, wendel_probability
from meanfield.model.particles import AttentionParticles
from meanfield.runs import budget, limits
from meanfield.runs.executor import Executor
from meanfield.runs.threads import machine_cores
from meanfield.studies.tokens import phase_kernels as pk
from meanfield.studies.tokens.phase_weights import SystemWeights, weights_summary
from meanfield.studies.array_engines import backend
from meanfield.studies.dataset import assemble, model_name
from meanfield.studies.members import MemberList, run_study

DEFAULT_N = 32
LEVEL = 0.95
EQUIANGULAR_HORIZON = 1e6
SUMS = ("sum", "sumsq")


def equiangular_time(beta: float, n: int, threshold: float, normalized: bool = True,
                     rho0: float = 0.0, horizon: float = EQUIANGULAR_HORIZON) -> float:
    """The time at which the equiangular cosine ``rho`` (docs/conventions.md), from
    ``rho0``, reaches ``threshold`` (``inf`` if not by ``horizon``; 0 if ``rho0`` is
    already past it). DOP853 with rtol 1e-10 and a terminal event."""
    if rho0 >= threshold:
        return 0.0
    rhs = AttentionParticles(float(beta), normalized).equiangular_rhs(int(n))

    def hit(t, y):
        return y[0] - threshold
    hit.terminal, hit.direction = True, 1
    sol = sint.solve_ivp(rhs, (0.0, horizon), [rho0], method="DOP853", rtol=1e-10,
                         atol=1e-13, events=hit)
    return float(sol.t_events[0][0]) if sol.t_events[0].size else math.inf


def check_phase_config(cfg: dict) -> dict:
    """Checks across sections before any work; the plan (n, the members as "tasks")."""
    p, m = cfg["phase_diagram"], cfg["model"]
    if not math.isinf(m["kappa"]):
        raise ConfigError(f"model.kappa = {m['kappa']:g}: the phase diagram is of the "
                          "deterministic dynamics (its span reduction for d >= n does not "
                          "hold with noise: the Brownian increments leave the span); set "
                          "model.kappa = \"inf\"", "model.kappa")
    if cfg["particles"]["architecture"] != "post-ln":
        raise ConfigError("the phase diagram runs the post-ln (sphere) model; give "
                          "particles.architecture = \"post-ln\"", "particles.architecture")
    n = cfg["particles"]["n"] or DEFAULT_N
    if n < 2:
        raise ConfigError(f"particles.n = {n}: a pair needs n >= 2", "particles.n")
    backend(p["engine"])  # torch / cupy: installed (ConfigError saying what to install)
    if p["times"][-1] > 1e6:
        raise ConfigError(f"phase_diagram.times ends at {p['times'][-1]:g}: give times up "
                          "to 1e6", "phase_diagram.times")
    # the (system, beta) pairs system by system: a member holds every beta of its
    # systems (each system's start drawn once per member; every member a like mix of
    # cheap and dear betas)
    pairs = len(p["beta"]) * p["systems"]
    batch = p["batch"]
    # memory, before any work: a member's batch on each worker (full tokens below d = n),
    # stepped all at once by the array engines, one per thread by the compiled one
    at_once = min(batch, pairs) * cfg["parallel"]["workers"]
    weighted = is_weighted(cfg)
    # (weights: full tokens on the array engine, and each system's d x d matrices held
    # as 2 (V = I: 1) d x n token arrays' worth per token row: d/n of them)
    stepped = machine_cores() if p["engine"] == "numba" and not weighted else at_once
    key = "particles.n" if n > DEFAULT_N else "phase_diagram.batch"
    d_max = max(p["dims"])
    m = d_max if weighted else min(n, d_max)
    if weighted:
        m = max(m, -(-d_max * d_max * (1 if value_is_identity(cfg) else 2) // n))
    budget.check_ensemble(at_once, n, m, key, n if key == "particles.n" else batch,
                          stepped=stepped)
    limits.check_members(len(p["dims"]) * -(-pairs // batch), "phase_diagram.batch", batch,
                         "give a larger batch, fewer systems, beta or dims")
    tasks = [{"dim": d, "first": k, "count": min(batch, pairs - k)}
             for d in p["dims"] for k in range(0, pairs, batch)]
    return {"n": n, "tasks": tasks}


# ---------------------------------------------------------------------------------------
# One member: a block of (beta, system) pairs in one dimension.

def run_member(cfg: dict, plan: dict, params: dict) -> dict:
    """The sums over the member's systems, per beta and time, of the per-system fractions
    ``f_s`` and of ``f_s^2``; the counts of systems; steps and evaluations."""
    p = cfg["phase_diagram"]
    nbeta = len(p["beta"])
    flat = np.arange(params["first"], params["first"] + params["count"])
    system, beta_index = flat // nbeta, flat % nbeta
    res = pk.pair_fractions(
        n=plan["n"], d=params["dim"], beta=np.asarray(p["beta"])[beta_index],
        systems=system, times=np.asarray(p["times"]), threshold=p["threshold"],
        normalized=cfg["model"]["normalized"], seed=cfg["particles"]["seed"],
        tolerance=p["tolerance"], engine=p["engine"], freeze=p["freeze"],
        precision=p["precision"],
        weights_of=(functools.partial(SystemWeights.of, cfg, params["dim"])
                    if is_weighted(cfg) else None))
    f = res["fractions"]  # (B, T)
    out = {"sum": np.zeros((nbeta, f.shape[1])), "sumsq": np.zeros((nbeta, f.shape[1])),
           "count": np.bincount(beta_index, minlength=nbeta).astype(float)}
    np.add.at(out["sum"], beta_index, f)
    np.add.at(out["sumsq"], beta_index, f * f)
    out["steps"] = float(res["steps"].sum())
    out["evaluations"] = float(res["evaluations"] * f.shape[0])
    out["left"] = float(np.isfinite(res["left"]).sum())
    # the starts in an open hemisphere ([GLPR25, Lemma 6.4]), each system once: in the
    # member that holds its first beta
    firsts = system[beta_index == 0]
    starts = pk.initial_states(plan["n"], params["dim"], firsts, cfg["particles"]["seed"])
    if params["dim"] >= plan["n"]:  # Gram matrices: their Cholesky rows (uniform_span's)
        starts = np.linalg.cholesky(starts)
    out["hemisphere"] = float(hemisphere_share(starts).sum()) if firsts.size else 0.0
    out["hemisphere_count"] = float(firsts.size)
    return out


class PhaseDiagramTask(MemberList):
    """Points: the start, then each member; a checkpoint keeps the members done."""

    kind = "phase_diagram"

    def __init__(self, cfg: dict, plan: dict, executor: Executor, progress: bool):
        super().__init__(cfg, executor, progress, plan["tasks"],
                         functools.partial(run_member, cfg, plan))
        self.plan = plan

    def describe(self, params: dict) -> str:
        nbeta = len(self.cfg["phase_diagram"]["beta"])
        first, last = params["first"], params["first"] + params["count"] - 1
        return f"member d = {params['dim']}, systems {first // nbeta}..{last // nbeta}"

    def dataset(self, frames: list, info: dict) -> xr.Dataset:
        return study_dataset(self.cfg, self.plan, frames[1:], info)

    def checkpoint(self, state: Any, frames: list) -> xr.Dataset:
        frames = self.kept(frames)
        done = [f for f in frames[1:] if isinstance(f, dict)]
        if not done:
            return xr.Dataset()
        ds = xr.Dataset({f"member_{k}": (("member", "beta", "time"),
                                         np.stack([f[k] for f in done])) for k in SUMS})
        for k in ("count",):
            ds[f"member_{k}"] = (("member", "beta"), np.stack([f[k] for f in done]))
        for k in ("steps", "evaluations", "left", "hemisphere", "hemisphere_count"):
            ds[f"member_{k}"] = ("member", np.array([f[k] for f in done]))
        return ds

    def restore(self, ckpt: xr.Dataset) -> tuple[Any, list]:
        frames: list = [None]
        if "member_sum" in ckpt:
            for i in range(ckpt.sizes["member"]):
                frames.append({k: ckpt[f"member_{k}"].values[i]
                               for k in (*SUMS, "count", "steps", "evaluations", "left",
                                         "hemisphere", "hemisphere_count")
                               if f"member_{k}" in ckpt})
        return frames[-1], frames


# ---------------------------------------------------------------------------------------
# The dataset.

def wilson(p: np.ndarray, count: np.ndarray, level: float = LEVEL
           ) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval of a mean ``p`` of ``count`` i.i.d. variables in [0, 1]
    (module docstring: conservative for non-binary ones); NaN where ``count`` is 0."""
    z = stats.norm.ppf(0.5 + level / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        denom = 1 + z * z / count
        centre = (p + z * z / (2 * count)) / denom
        half = z * np.sqrt(p * (1 - p) / count + z * z / (4 * count * count)) / denom
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)


def study_dataset(cfg: dict, plan: dict, done: list, info: dict) -> xr.Dataset:
    """The phase-diagram dataset (docs/datasets.md) of the members done (NaN where no
    system of a (dim, beta) is done)."""
    p, m = cfg["phase_diagram"], cfg["model"]
    dims, betas, times = p["dims"], np.asarray(p["beta"]), np.asarray(p["times"])
    shape = (len(dims), betas.size, times.size)
    total = {k: np.zeros(shape) for k in SUMS}
    count = np.zeros(shape[:2])
    steps = evaluations = left = 0.0
    inside, starts = np.zeros(len(dims)), np.zeros(len(dims))
    for task, value in zip(plan["tasks"], done):
        if not isinstance(value, dict):
            continue
        i = dims.index(task["dim"])
        for k in SUMS:
            total[k][i] += value[k]
        count[i] += value["count"]
        steps += float(value["steps"])
        evaluations += float(value["evaluations"])
        left += float(value["left"])
        inside[i] += value.get("hemisphere", 0.0)
        starts[i] += value.get("hemisphere_count", 0.0)
    c = count[..., None]
    with np.errstate(invalid="ignore", divide="ignore"):
        prob = total["sum"] / c
        var = np.maximum(total["sumsq"] / c - prob * prob, 0) * c / np.maximum(c - 1, 1)
        stderr = np.sqrt(var / c)
    low, high = wilson(prob, np.broadcast_to(c, shape))
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(starts > 0, inside / starts, np.nan)
        share_err = np.sqrt(share * (1 - share) / starts)
    wendel = np.array([wendel_probability(plan["n"], d) for d in dims])
    n, thr = plan["n"], p["threshold"]
    weighted = is_weighted(cfg)
    # (the equiangular ODE is that of Q = K = V = I: no prediction with other weights)
    eq = np.array([math.nan if weighted else equiangular_time(b, n, thr, m["normalized"])
                   for b in betas])
    what = f"fraction of pairs i < j with <x_i(t), x_j(t)> >= {thr:g}"
    data = {
        "pair_probability": (("dim", "beta", "time"), prob,
                             {"units": "1", "long_name": what}),
        "pair_probability_low": (("dim", "beta", "time"), low, {
            "units": "1", "long_name": f"{LEVEL:.0%} Wilson interval on systems, low"}),
        "pair_probability_high": (("dim", "beta", "time"), high, {
            "units": "1", "long_name": f"{LEVEL:.0%} Wilson interval on systems, high"}),
        "pair_probability_stderr": (("dim", "beta", "time"), stderr, {
            "units": "1", "long_name": "sd of the per-system fractions / sqrt(systems)"}),
        "systems_done": (("dim", "beta"), count.astype(np.int64),
                         {"units": "1", "long_name": "systems run"}),
        "hemisphere_share": ("dim", share, {
            "units": "1", "long_name": "share of the starts in an open hemisphere "
                                       "(linear program)"}),
        "hemisphere_share_stderr": ("dim", share_err, {
            "units": "1", "long_name": "sqrt(p (1 - p)/starts)"}),
        "wendel_probability": ("dim", wendel, {
            "units": "1", "long_name": "2^(1-n) sum_{k<d} C(n-1, k) [GLPR25, Theorem 6.7]"}),
        "equiangular_time": ("beta", eq, {
            "units": "1", "long_name": f"time at which the equiangular cosine from 0 "
                                       f"reaches {thr:g} (d >= n)"}),
    }
    coords = {"dim": ("dim", np.asarray(dims, dtype=np.int64)),
              "beta": ("beta", betas, {"units": "1"}),
              "time": ("time", times, {"units": "1"})}
    model = model_name(m["normalized"])
    return assemble(data, coords, {
        "title": f"pair clustering probability, {model}, n = {n}, "
                 f"{p['systems']} systems per beta",
        "model": model, "n": n, "threshold": thr, "systems": p["systems"],
        "interval": f"{LEVEL:.0%} Wilson score on the mean of the per-system fractions",
        "tolerance": p["tolerance"],
        "precision": "double" if weighted else p["precision"],
        "engine": "numpy" if weighted and p["engine"] == "numba" else p["engine"],
        "weights": weights_summary(cfg) if weighted else "identity (Q = K = V = I)",
        "integrator": "Dormand-Prince 5(4), per-system steps; " + (
            "full tokens with each system's weights" if weighted
            else "Gram matrices for d >= n"),
        "steps": int(steps), "evaluations_per_system": evaluations / max(count.sum(), 1),
        "systems_frozen": int(left)}, info)


def phase_diagram(config: dict | None = None, *, out: str | Path | None = None,
                  overwrite: bool = False, resume: bool = False,
                  progress: bool = False) -> xr.Dataset:
    """The (t, beta) clustering phase diagram of one config (module docstring).

    Args:
        config: the config; ``[phase_diagram]`` dims, beta, times, systems, threshold,
            tolerance, engine, batch, freeze; ``[particles]`` n, seed; ``[model]``
            normalized.
        out: where to write the netCDF result (default ``output.path``).
        overwrite: replace an existing result.
        resume: continue from ``<out>.checkpoint.nc`` (the members done are kept).
        progress: a bar over the members.

    Returns:
        The study dataset; ``status`` -1 when interrupted (the members done so far).

    Raises:
        ConfigError: bad input, before any work.
        TaskFailed: a member failed (named); the others are kept in the checkpoint.
    """
    cfg = cfgmod.validate(config, "phase_diagram")
    plan = check_phase_config(cfg)
    return run_study(cfg, lambda executor: PhaseDiagramTask(cfg, plan, executor, progress),
                     out, overwrite=overwrite, resume=resume, progress=progress)
