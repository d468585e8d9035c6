"""``normalization(config)``: the normalization rules side by side from random tokens in
high dimension.

``[normalization] systems`` token systems of ``n = particles.n`` (32 when absent) i.i.d.
uniform tokens on S^{d-1}, ``d = normalization.dim``, each run by every architecture of
``normalization.architectures`` (default all five) from the same start
(``meanfield.model.normalizations``; docs/conventions.md, "The normalization family"):

- Post-LN (``AttentionParticles``, SA or USA by ``model.normalized``): tokens on the sphere;
- Pre-LN (``PreLNParticles``): ``x_i' = A_i(theta)``, tokens in R^d, attention on the
  directions ``theta_i = x_i/|x_i|`` (module docstring of ``meanfield.model.particles``);
- Peri-LN: ``x_i' = A_i/|A_i|`` in R^d; nGPT: ``theta_i' = alpha P^perp(A_i/|A_i|)`` on the
  sphere (``particles.ngpt_alpha``); Mix-LN: Post-LN until ``particles.mix_switch``, then
  Pre-LN (its two phases chained, ``simulate_phases``).

Each rule's law of ``1 - rho`` (``law``, ``predicted``): a rate for Post-LN (2, USA ``2
e^beta``) and nGPT (``2 alpha``), the power -2 for Pre-LN, Peri-LN and Mix-LN; ``fitted``
(with ``fitted_low``/``fitted_high``, ``fit_start``/``fit_stop``, ``offset``, ``shifted``,
``equiangular_fitted``) per architecture, fitted as below (the rate as ``fitted_rate``, the
power as ``fitted_power``); ``system_fitted`` per system. The derivations below are those of
Post-LN and Pre-LN; the others' are in docs/conventions.md.

At each time of ``normalization.times`` (and t = 0) it keeps per system the mean
pairwise gap ``1 - rho = mean_{i != j} (1 - <theta_i, theta_j>) = sum_i |theta_i -
mean|^2/(n - 1)`` (``meanfield.model.particles.correlation_gap``: accurate down to
round-off, no cancellation) and the mean radius ``mean_i |x_i|``; the dataset gives the
mean cosine ``rho(t)`` over the systems with a band holding ``band`` of them (quantiles),
and the equiangular predictions from ``rho_0`` = the systems' mean initial cosine.

Dimension: for ``d >= n`` the systems run in the span of their initial tokens
(``meanfield.model.ensemble``: coefficients ``(n, n)``, Bartlett sampling, exact in law),
so ``d`` costs nothing; for ``d < n`` the full tokens are stepped.

**beta.** The figure this reproduces ([KGPR25], shown as [Rig25, Figure 4]) is of a
Transformer with random weights at ``beta = sqrt(d)``: there the query-key products of
near-orthogonal tokens are O(1) whatever the pair, self included. In this model
(``Q = K = V = I``) the self term carries ``e^beta`` against ``e^{beta <x_i, x_j>} ~ 1``
for near-orthogonal tokens, and at ``beta = sqrt(512)`` the equiangular ODE below moves
``rho`` from 0 at the speed ``2 e^{-beta}`` (``~3e-10``): nothing happens for times of order
``e^beta/n``. The comparable regime is ``beta = O(1)``: ``model.beta`` (default 1).

**Equiangular predictions** (docs/conventions.md; ``equiangular_rhs`` of the models), written
for ``eps = 1 - rho`` in logarithmic form so that they stay accurate down to ``eps ~ 1e-300``
(``1 - rho`` is not representable below 1e-16):

- Post-LN SA: ``(log eps)' = -2 (n - (n - 1) eps) / (e^{beta eps} + n - 1)``;
  USA: ``(log eps)' = -(2/n) e^{beta (1 - eps)} (n - (n - 1) eps)``.
- Pre-LN (equal radii ``r``): ``(log eps)' = -(that of Post-LN)/r`` and ``r' = <theta_i,
  A_i>`` = SA ``(e^{beta eps} + (n - 1)(1 - eps))/(e^{beta eps} + n - 1)``, USA
  ``(e^beta + (n - 1)(1 - eps) e^{beta (1 - eps)})/n``.

**Asymptotics tested** (SA; USA: multiply the rates by ``e^beta``). Near ``eps = 0``:

- Post-LN: ``(log eps)' = -2 (1 - eps (n - 1 + beta)/n + O(eps^2))``, so ``eps(t) = K
  e^{-2t} (1 + O(eps))``: the rate of ``1 - rho`` is 2, the local rate differing from it
  by ``2 (n - 1 + beta) eps/n`` (``2e-3`` at ``eps = 1e-3``, n = 32, beta = 1). For random
  (not equiangular) tokens the same holds: near a cluster the softmax weights are
  ``1/n (1 + O(beta eps))``, the tangent deviations ``y_i`` of the tokens from the
  cluster's centre follow ``y_i' = mean(y) - y_i`` (rate 1) and ``1 - rho`` is quadratic in
  them (rate 2). USA: ``y_i' = e^beta (mean(y) - y_i)``, rate ``2 e^beta``.
- Pre-LN: ``r' = 1 - (n - 1) eps/n + O(eps^2)`` and ``(log eps)' = -(2/r)(1 + O(eps))``.
  With ``eps = O(t^{-2})`` the integral of ``1 - r'`` converges: ``r = t + c + O(1/t)``
  (``c`` the radius offset), so ``log eps = log K - 2 log(t + c) + O(t^{-2})``:
  ``eps ~ K (t + c)^{-2}``, power -2. The local power ``d log eps/d log t = -2 t/(t + c)
  + O(t^{-2})`` is off by ``2c/t`` relative to 2: the asymptotic regime starts where
  ``|c|/t`` is small, not where ``eps`` is (measured for n = 32, d = 512, beta = 1: ``c =
  -1.52``, so t = 150 is still 1 % off). The directions slow down by ``1/r``: the speed
  regulation of the literature (``s_i = r_i``). USA: ``r' -> e^beta``, ``r = e^beta (t +
  c) + O(1/t)``, and the directions' rate ``e^beta/r = 1/(t + c)``: the same power.

**Fits** (of the mean gap over the systems, ``gap_mean``, and of each system's gap):

- ``fitted_rate`` (Post-LN): ``-slope`` of ``log eps`` against ``t`` over the first run of
  saves with ``fit_floor <= eps <= fit_ceiling`` (above: the ``O(eps)`` corrections; below:
  round-off; defaults 1e-14 and 1e-3), with its 95 % interval (Student t);
- ``fitted_power`` (Pre-LN): the slope of ``log eps`` against ``log t`` over the saves with
  ``eps`` in the same band and ``t >= |c|/offset_ratio`` (default 0.01), ``c = r(t_last) -
  t_last`` measured from the mean radius at the last save (USA: ``r/e^beta - t``) (so the ``2c/t`` bias is at most
  2 %, and averaged over the window, which spans decades, far less);
- ``shifted_power`` (Pre-LN): the slope against ``log(t + c)`` over the same window, where
  the ``2c/t`` bias is gone (what is left is ``O(t^{-2})``);
- ``equiangular_rate`` / ``equiangular_power``: the same fits of the equiangular
  predictions over the same windows (what the fit itself gives on the ODE).

Runs: members ``(architecture, chunk of chunk systems)`` through the executor (serial or
dask; each system's tokens come from its own seed ``system_rng(particles.seed, s)`` and it
takes its own adaptive steps, so the numbers do not depend on the chunks or the workers);
adaptive RK4 by step doubling with error ``tolerance`` per step. A checkpoint keeps the
members done (``output.checkpoint_every``) and ``resume`` goes on from them: the default
study (256 systems, 281 saves to t = 1e4) takes about a minute of CPU (measured: 67 s
user, 116 s wall on the shared 2-core machine under load; ~350 Post-LN and ~290 Pre-LN
steps per system), thousands of systems take many minutes, and a checkpoint costs one
small array per member.

The equiangular model, the diagnostics and the fits are in ``normalization_theory``;
this module checks the config, runs the members and writes the dataset.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from meanfield import config as cfgmod
from meanfield.config.study_weights import is_weighted, value_is_identity
from meanfield.errors import ConfigError
from meanfield.model.ensemble import simulate_ensemble, uniform_ensemble, uniform_span
from meanfield.model.normalizations import build_normalization_model, simulate_phases
from meanfield.runs import limits
from meanfield.runs.executor import Executor
from meanfield.studies.dataset import assemble, gather, model_name, variable
from meanfield.studies.members import MemberList, run_study
from meanfield.studies.tokens.normalization_weights import run_weighted_member
from meanfield.studies.tokens.phase_weights import weights_summary
from meanfield.studies.tokens.normalization_theory import (
    equiangular_prediction,
    fit_exponential,
    fit_law,
    fit_power,
    gaps_and_radii,
    predicted_law,
    radius_speed,
)

ARCHITECTURES = ("post-ln", "pre-ln", "peri-ln", "ngpt", "mix-ln")  # the default order
LABELS = {"post-ln": "Post-LN", "pre-ln": "Pre-LN", "peri-ln": "Peri-LN", "ngpt": "nGPT",
          "mix-ln": "Mix-LN"}
DEFAULT_N = 32
PREDICTED_POWER = -2.0
MEMORY_LIMIT = 2 * 2**30  # bytes a member's saves, or the result, may take


# ---------------------------------------------------------------------------------------
# Plan and models.

def build_model(cfg: dict, architecture: str):
    """The model of ``architecture`` (``meanfield.model.normalizations``) of ``[model]``,
    nGPT's alpha and Mix-LN's switch from ``[particles]``."""
    m, p = cfg["model"], cfg.get("particles", {})
    return build_normalization_model(architecture, m["beta"], m["normalized"],
                                     ngpt_alpha=p.get("ngpt_alpha", 1.0),
                                     mix_switch=p.get("mix_switch", 1.0))


def laws(cfg: dict, architectures) -> dict:
    """``{architecture: (law, predicted)}`` (``normalization_theory.predicted_law``)."""
    m, p = cfg["model"], cfg.get("particles", {})
    return {a: predicted_law(a, m["beta"], m["normalized"], p.get("ngpt_alpha", 1.0))
            for a in architectures}


def check_normalization_config(cfg: dict) -> dict:
    """Checks across sections before any work; the plan (sizes, times, members)."""
    m, c = cfg["model"], cfg["normalization"]
    if not math.isinf(m["kappa"]):
        raise ConfigError(f"model.kappa = {m['kappa']:g}: the normalization study is "
                          "deterministic (Pre-LN has no noise, and the span reduction holds "
                          "without noise only); set model.kappa = \"inf\"", "model.kappa")
    n = cfg["particles"]["n"] or DEFAULT_N
    d = c["dim"]
    archs = tuple(c["architectures"])
    for a in archs:
        build_model(cfg, a)  # (USA beta beyond overflow: ConfigError)
    times = np.asarray(c["times"], dtype=float)
    # (the clustered Post-LN and nGPT systems are stiff at their rate: t = 1e12 ran on
    # for days)
    for a, (law, rate) in laws(cfg, archs).items():
        if law == "rate":
            limits.check_clustered_steps(times[-1], rate, "normalization.times",
                                         c["times"], f"{LABELS[a]} systems")
    # what a member holds (the ensemble keeps its states at every save) and the result
    member = (times.size + 1) * min(c["chunk"], c["systems"]) * n * min(n, d) * 8
    if is_weighted(cfg):  # (full tokens and each system's d x d matrices; no saved states)
        member = min(c["chunk"], c["systems"]) * d * (8 * n + 8 * d * (
            1 if value_is_identity(cfg) else 2))
    if member > MEMORY_LIMIT:
        raise ConfigError(f"normalization.chunk = {c['chunk']}: a member keeps its "
                          f"{times.size + 1} saves of {min(c['chunk'], c['systems'])} "
                          f"systems of {n} x {min(n, d)} coefficients, "
                          f"{member / 2**30:.1f} GiB (limit {MEMORY_LIMIT / 2**30:g}); "
                          "give a smaller chunk or fewer times", "normalization.chunk")
    result = 2 * len(archs) * (times.size + 1) * c["systems"] * 8
    if result > MEMORY_LIMIT:
        raise ConfigError(f"normalization.systems = {c['systems']}: the result holds "
                          f"{result / 2**30:.1f} GiB of gaps and radii (limit "
                          f"{MEMORY_LIMIT / 2**30:g}); give fewer systems or times",
                          "normalization.systems")
    limits.check_members(len(archs) * -(-c["systems"] // c["chunk"]),
                         "normalization.chunk", c["chunk"],
                         "give a larger chunk or fewer systems")
    members = [(a, first, min(c["chunk"], c["systems"] - first))
               for a in archs for first in range(0, c["systems"], c["chunk"])]
    return {"n": n, "dim": d, "reduce": d >= n, "times": times, "members": members,
            "architectures": archs, "laws": laws(cfg, archs),
            "predicted_rate": 2.0 if m["normalized"] else 2.0 * math.exp(m["beta"])}


# ---------------------------------------------------------------------------------------
# One member: a chunk of systems of one architecture.

def run_member(cfg: dict, plan: dict, params: dict) -> dict:
    """Gaps and mean radii ``(count, 1 + len(times))`` of systems ``first ..
    first + count - 1`` of ``params["architecture"]`` (module docstring)."""
    n, d, seed = plan["n"], plan["dim"], cfg["particles"]["seed"]
    first, count = params["first"], params["count"]
    if is_weighted(cfg):  # each system's own weights (normalization_weights)
        return run_weighted_member(cfg, plan, params)
    model = build_model(cfg, params["architecture"])
    tol = cfg["normalization"]["tolerance"]
    # (Mix-LN: its Post-LN and Pre-LN phases chained, each landing on the switch)
    simulate = simulate_phases if hasattr(model, "phases") else simulate_ensemble
    if plan["reduce"]:
        c0 = uniform_span(count, n, d, seed, first)
        run = simulate(model, c0, plan["times"], tolerance=tol, seed=seed,
                       first=first, reduce=True, frame=d)
    else:
        x0 = uniform_ensemble(count, n, d, seed, first)
        run = simulate(model, x0, plan["times"], tolerance=tol, seed=seed, first=first)
    gap, radius = gaps_and_radii(run.states)  # (k, count)
    return {"gap": gap.T.copy(), "radius": radius.T.copy(),
            "steps": np.asarray(run.steps, dtype=np.int64)}


# ---------------------------------------------------------------------------------------
# The study on the run engine.

class NormalizationTask(MemberList):
    """Points: the start, then each (architecture, chunk) member; a checkpoint keeps
    those done."""

    kind = "normalization"

    def __init__(self, cfg: dict, plan: dict, executor: Executor, progress: bool):
        members = [dict(zip(("architecture", "first", "count"), m))
                   for m in plan["members"]]
        super().__init__(cfg, executor, progress, members,
                         functools.partial(run_member, cfg, plan))
        self.plan = plan

    def describe(self, params: dict) -> str:
        return (f"member {params['architecture']}, systems {params['first']}.."
                f"{params['first'] + params['count'] - 1}")

    def dataset(self, frames: list, info: dict) -> xr.Dataset:
        return study_dataset(self.cfg, self.plan, frames[1:], info)

    def checkpoint(self, state: Any, frames: list) -> xr.Dataset:
        frames = self.kept(frames)
        done = [f for f in frames[1:] if isinstance(f, dict)]
        if not done:
            return xr.Dataset()
        return xr.Dataset({
            f"member_{name}": (("member_system", f"member_{axis}"),
                               np.concatenate([f[name].reshape(len(f["steps"]), -1)
                                               for f in done]))
            for name, axis in (("gap", "time"), ("radius", "time"), ("steps", "one"))
        } | {"member_count": ("member", np.array([len(f["steps"]) for f in done]))})

    def restore(self, ckpt: xr.Dataset) -> tuple[Any, list]:
        frames: list = [None]
        if "member_count" in ckpt:
            start = 0
            for count in ckpt["member_count"].values:
                part = slice(start, start + int(count))
                frames.append({"gap": ckpt["member_gap"].values[part],
                               "radius": ckpt["member_radius"].values[part],
                               "steps": ckpt["member_steps"].values[part, 0]})
                start += int(count)
        return frames[-1], frames


# ---------------------------------------------------------------------------------------
# The dataset.

def _quantiles(values: np.ndarray, band: float) -> tuple[np.ndarray, np.ndarray]:
    """Per time, the ``(1 - band)/2`` and ``(1 + band)/2`` quantiles over the systems with
    finite values (axis 0); NaN where none."""
    ok = np.isfinite(values).any(axis=0)
    low = np.full(values.shape[1], np.nan)
    high = np.full(values.shape[1], np.nan)
    if ok.any():
        low[ok], high[ok] = np.nanquantile(values[:, ok], [(1 - band) / 2, (1 + band) / 2],
                                           axis=0)
    return low, high


def _member_arrays(plan: dict, systems: int, times: np.ndarray, done: list
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``gap`` and ``radius`` on (architecture, system, time) (NaN where a member is not
    done) and ``steps`` on (architecture, system) (0 there)."""
    shape = (len(plan["architectures"]), systems, times.size)

    def where(i: int) -> tuple:
        arch, first, count = plan["members"][i]
        return plan["architectures"].index(arch), slice(first, first + count)

    curves = gather(done, ("gap", "radius"), shape, where)
    steps = gather(done, ("steps",), shape[:2], where, fill=0, dtype=np.int64)["steps"]
    return curves["gap"], curves["radius"], steps


def _curve_variables(gap: np.ndarray, gap_mean: np.ndarray, eq_gap: np.ndarray,
                     eq_radius: np.ndarray, band: float) -> dict:
    """The curves over time per architecture: the mean gap and cosine with their
    quantile bands over the systems, and the equiangular model's."""
    bands = [_quantiles(gap[a], band) for a in range(gap.shape[0])]
    gap_low = np.stack([b[0] for b in bands])
    gap_high = np.stack([b[1] for b in bands])
    at = ("architecture", "time")
    low, high = f"{(1 - band) / 2:g} quantile", f"{(1 + band) / 2:g} quantile"
    return {
        "gap_mean": variable(at, gap_mean, "1 - rho, mean over the systems"),
        "gap_low": variable(at, gap_low, f"1 - rho, {low}"),
        "gap_high": variable(at, gap_high, f"1 - rho, {high}"),
        "cosine": variable(at, 1.0 - gap_mean, "mean pairwise cosine rho, mean over the "
                           "systems"),
        "cosine_low": variable(at, 1.0 - gap_high, f"rho, {low}"),
        "cosine_high": variable(at, 1.0 - gap_low, f"rho, {high}"),
        "equiangular_gap": variable(at, eq_gap, "1 - rho of the equiangular model from "
                                    "rho_0"),
        "equiangular_cosine": variable(at, 1.0 - eq_gap, "rho of the equiangular model"),
        "equiangular_radius": variable(at, eq_radius, "r of the equiangular model"),
    }


SCALARS = (  # the Post-LN rate and the Pre-LN power as scalars (the first datasets' names)
    ("post-ln", "fitted", "fitted_rate", "Post-LN: -slope of log(1 - rho) against t"),
    ("post-ln", "low", "fitted_rate_low", "Post-LN rate, 95 % low"),
    ("post-ln", "high", "fitted_rate_high", "Post-LN rate, 95 % high"),
    ("post-ln", "start", "rate_fit_start", "first time of the Post-LN fit"),
    ("post-ln", "stop", "rate_fit_stop", "last time of the Post-LN fit"),
    ("pre-ln", "fitted", "fitted_power", "Pre-LN: slope of log(1 - rho) against log t"),
    ("pre-ln", "low", "fitted_power_low", "Pre-LN power, 95 % low"),
    ("pre-ln", "high", "fitted_power_high", "Pre-LN power, 95 % high"),
    ("pre-ln", "start", "power_fit_start", "first time of the Pre-LN fit"),
    ("pre-ln", "stop", "power_fit_stop", "last time of the Pre-LN fit"),
    ("pre-ln", "offset", "radius_offset", "Pre-LN c = r/speed - t at the last save (speed "
     "1 for SA, e^beta for USA)"),
    ("pre-ln", "shifted", "shifted_power", "Pre-LN: slope of log(1 - rho) against log(t + "
     "c) over the same window"),
    ("post-ln", "equiangular", "equiangular_rate", "the rate fitted to the equiangular "
     "model over the same window"),
    ("pre-ln", "equiangular", "equiangular_power", "the power fitted to the equiangular "
     "model over the same window"))
PER_ARCHITECTURE = (
    ("fitted", "fitted", "the rate (law 'rate': -slope of log(1 - rho) against t) or the "
     "power (law 'power': slope against log t) of the mean gap"),
    ("low", "fitted_low", "fitted, 95 % low"), ("high", "fitted_high", "fitted, 95 % high"),
    ("start", "fit_start", "first time of the fit"), ("stop", "fit_stop", "last time of "
                                                      "the fit"),
    ("offset", "offset", "law 'power': c = r/speed - t at the last save (the window starts "
     "at t >= |c|/offset_ratio)"),
    ("shifted", "shifted", "law 'power': the slope against log(t + c) over the window"),
    ("equiangular", "equiangular_fitted", "the same fit of the equiangular model over the "
     "window"))


def _fit_variables(cfg: dict, plan: dict, times: np.ndarray, curves: dict) -> dict:
    """Each architecture's law (``normalization_theory.fit_law``: a rate for Post-LN and
    nGPT, a power for the others) fitted to the mean gap and to each system's, the same
    fit of the equiangular model, and the Post-LN rate and Pre-LN power as the scalars of
    ``SCALARS`` (NaN when that architecture is not run). ``curves``: ``gap``,
    ``radius``, ``gap_mean``, ``eq_gap``."""
    c, m = cfg["normalization"], cfg["model"]
    args = (c["fit_floor"], c["fit_ceiling"], c["offset_ratio"])
    fits, per_system = {}, np.full((len(plan["architectures"]), c["systems"]), np.nan)
    for a, arch in enumerate(plan["architectures"]):
        law = plan["laws"][arch][0]
        speed = radius_speed(arch, m["beta"], m["normalized"])
        with _quiet_nan_means():
            mean_radius = np.nanmean(curves["radius"][a], axis=0)
        fits[arch] = fit_law(law, times, curves["gap_mean"][a], mean_radius, *args, speed,
                             curves["eq_gap"][a])
        for s in range(c["systems"]):
            if np.isfinite(curves["gap"][a, s]).any():
                per_system[a, s] = fit_law(law, times, curves["gap"][a, s],
                                           curves["radius"][a, s], *args, speed)["fitted"]
    data = {name: variable((), float(fits[arch][key]) if arch in fits else math.nan, text,
                           "1/time" if "rate" in name else "1")
            for arch, key, name, text in SCALARS}
    data["predicted_rate"] = variable((), plan["predicted_rate"], "2 (SA) or 2 e^beta (USA)",
                                      "1/time")
    data["predicted_power"] = variable((), PREDICTED_POWER, "-2: 1 - rho ~ t^-2")
    archs = plan["architectures"]
    data["law"] = variable("architecture", np.array([plan["laws"][a][0] for a in archs]),
                           "asymptotics of 1 - rho: 'rate' (e^{-rate t}) or 'power' (t^power)")
    data["predicted"] = variable("architecture", np.array([plan["laws"][a][1] for a in archs]),
                                 "the derived rate (2, 2 e^beta USA, nGPT 2 alpha) or power "
                                 "(-2) (docs/conventions.md)")
    for key, name, text in PER_ARCHITECTURE:
        data[name] = variable("architecture", np.array([fits[a][key] for a in archs]), text)
    data["system_fitted"] = variable(("architecture", "system"), per_system,
                                     "the rate or power fitted per system")
    for arch, name in (("post-ln", "system_rate"), ("pre-ln", "system_power")):
        values = per_system[archs.index(arch)] if arch in archs else \
            np.full(c["systems"], np.nan)
        data[name] = variable("system", values, f"{LABELS[arch]} "
                              f"{'rate' if arch == 'post-ln' else 'power'} fitted per system",
                              "1/time" if arch == "post-ln" else "1")
    return data


def study_dataset(cfg: dict, plan: dict, done: list, info: dict) -> xr.Dataset:
    """The normalization dataset of the members done (NaN for the others)."""
    c, m = cfg["normalization"], cfg["model"]
    n, systems = plan["n"], c["systems"]
    times = np.concatenate([[0.0], plan["times"]])
    gap, radius, steps = _member_arrays(plan, systems, times, done)
    with np.errstate(invalid="ignore"), _quiet_nan_means():
        gap_mean = np.nanmean(gap, axis=1)
        # (every architecture starts from the same tokens: the first one done)
        done_starts = [g for g in gap[:, :, 0] if np.isfinite(g).any()]
        start = done_starts[0][np.isfinite(done_starts[0])] if done_starts else gap[:0, 0, 0]
    rho0 = 1.0 - float(start.mean()) if start.size else 0.0
    archs, p = plan["architectures"], cfg["particles"]
    eq_gap = np.full((len(archs), times.size), np.nan)
    eq_radius = np.full_like(eq_gap, np.nan)
    weighted = is_weighted(cfg)  # (the equiangular ODEs are those of Q = K = V = I)
    for a, arch in enumerate(archs if not weighted else ()):
        eq_gap[a], eq_radius[a] = equiangular_prediction(
            arch, n, m["beta"], m["normalized"], rho0, times, p["ngpt_alpha"],
            p["mix_switch"])
    coords = {"architecture": ("architecture", np.array(archs)),
              "system": ("system", np.arange(systems)),
              "time": ("time", times, {"units": "1"})}
    pair = "mean over pairs i != j of 1 - <theta_i, theta_j>"
    ast = ("architecture", "system", "time")
    data: dict[str, Any] = {
        "gap": variable(ast, gap, f"1 - rho: {pair}, per system"),
        "radius": variable(ast, radius, "mean token length |x_i| (1 for Post-LN, nGPT)"),
        "steps": variable(("architecture", "system"), steps, "accepted RK4 steps"),
        **_curve_variables(gap, gap_mean, eq_gap, eq_radius, c["band"]),
        **_fit_variables(cfg, plan, times, {"gap": gap, "radius": radius,
                                            "gap_mean": gap_mean, "eq_gap": eq_gap})}
    name = model_name(m["normalized"])
    return assemble(data, coords, {
        "title": f"{', '.join(LABELS[a] for a in archs)} ({name}), n = {n}, d = "
                 f"{plan['dim']}, beta = {m['beta']:g}: mean pairwise cosine",
        "ngpt_alpha": p["ngpt_alpha"], "mix_switch": p["mix_switch"],
        "model": name, "beta": m["beta"], "n": n, "dim": plan["dim"],
        "systems": systems, "reduced": int(plan["reduce"]), "band": c["band"],
        "initial_cosine": rho0, "fit_floor": c["fit_floor"],
        "fit_ceiling": c["fit_ceiling"], "offset_ratio": c["offset_ratio"],
        "tolerance": c["tolerance"], "seed": cfg["particles"]["seed"],
        "weights": weights_summary(cfg) if weighted else "identity (Q = K = V = I)",
        "integrator": ("Dormand-Prince 5(4) per system, full tokens with their weights"
                       if weighted else "RK4 by step doubling per system")}, info)


class _quiet_nan_means:
    """Silence numpy's 'mean of empty slice' for the members not done (NaN rows)."""

    def __enter__(self):
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


def normalization(config: dict | None = None, *, out: str | Path | None = None,
                  overwrite: bool = False, resume: bool = False,
                  progress: bool = False) -> xr.Dataset:
    """The normalization study of one config (module docstring).

    Args:
        config: the config; ``[normalization]`` dim, systems, chunk, times, tolerance,
            fit_floor, fit_ceiling, offset_ratio, band; ``[model]`` beta, normalized
            (kappa must be inf); ``[particles]`` n (32 when absent), seed.
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
    cfg = cfgmod.validate(config, "normalization")
    plan = check_normalization_config(cfg)
    return run_study(cfg, lambda executor: NormalizationTask(cfg, plan, executor, progress),
                     out, overwrite=overwrite, resume=resume, progress=progress)
