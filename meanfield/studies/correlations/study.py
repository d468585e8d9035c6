"""``correlations(config)``: the one- and two-point functions of token ensembles, their
correlation ``g = f2 - f1 (x) f1`` against n, and the chaos closure of the second equation
of the BBGKY hierarchy ([GLPR25, §8, Problem 4]; docs/studies/correlations.md).

For each n of ``[correlations] n``, ``systems`` systems of n tokens i.i.d. uniform on
S^{dim-1} (system s from ``system_rng(seed, s, "initial")``: the same whatever the
members or the workers) follow SA or USA (``[model]``) through the ensemble engine
(``meanfield.model.ensemble.simulate_ensemble``, RK4 with retraction at the step
``dt``): on S^1 with the field by Fourier moments (``meanfield.model.circle_moments``,
``O(n K)`` per token system), on S^{d-1} the dense batched field. At each saved time the
estimators of ``meanfield.studies.correlations.statistics`` are summed over the member's
pairs of systems; the dataset turns the sums into means with standard errors.

Members: ``chunk`` systems of one n (``chunk`` even: the pairs stay in a member).
"""
from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from scipy import stats

from meanfield import config as cfgmod
from meanfield.errors import ConfigError
from meanfield.model.circle_moments import CircleMomentParticles
from meanfield.model.ensemble import simulate_ensemble, uniform_ensemble
from meanfield.model.kernels import growth_rate
from meanfield.model.particles import AttentionParticles
from meanfield.runs.executor import Executor
from meanfield.studies.correlations import statistics as st
from meanfield.studies.dataset import assemble, model_name
from meanfield.studies.members import MemberList, run_study
from meanfield.studies.transport.slopes import fit_slope

PAIRED = ("pair", "independent", "correlation")      # per pair of systems, (time, bins)
RATES = ("pair_moment", "hierarchy_rate", "closure_rate", "closure_residual")  # S^1
MEMORY = 2.0 * 2**30  # bytes of the largest array a member may hold


def check_plan(cfg: dict) -> dict:
    """The members and a memory check, before any work."""
    c = cfg["correlations"]
    largest = max(c["n"])
    order = CircleMomentParticles(cfg["model"]["beta"]).order if c["dim"] == 2 else 0
    per_system = largest * (order + 2) * 16 * 6 if c["dim"] == 2 else largest**2 * 8 * 4
    if c["chunk"] * per_system > MEMORY:
        raise ConfigError(f"correlations.chunk = {c['chunk']}: a member of n = {largest} "
                          f"holds ~{c['chunk'] * per_system / 2**30:.1f} GiB; use a chunk <= "
                          f"{max(2, int(MEMORY // per_system) // 2 * 2)}", "correlations.chunk")
    tasks = [{"n": int(n), "first": k, "count": min(c["chunk"], c["systems"] - k)}
             for n in c["n"] for k in range(0, c["systems"], c["chunk"])]
    return {"tasks": tasks}


def _model(cfg: dict, dim: int):
    m = cfg["model"]
    if dim == 2:
        return CircleMomentParticles(m["beta"], m["normalized"])
    return AttentionParticles(m["beta"], m["normalized"], backend="blas")


def _states(cfg: dict, params: dict, model) -> np.ndarray:
    """The tokens at every save ``(T, B, n, d)`` (t = 0 included where asked)."""
    c = cfg["correlations"]
    seed = cfg["particles"]["seed"]
    times = np.asarray(c["times"], dtype=float)
    x0 = uniform_ensemble(params["count"], params["n"], c["dim"], seed, params["first"])
    later = times[times > 0]
    if later.size == 0:
        return x0[None]
    run = simulate_ensemble(model, x0, later, dt=min(c["dt"], float(later[0])), seed=seed,
                            first=params["first"])
    return run.states if times[0] == 0 else run.states[1:]


def run_member(cfg: dict, params: dict) -> dict:
    """Sums (and sums of squares) over the member's systems or pairs of systems of every
    estimator, per saved time."""
    c, m = cfg["correlations"], cfg["model"]
    model = _model(cfg, c["dim"])
    states = _states(cfg, params, model)
    edges = st.angle_edges(c["bins"])
    out: dict[str, Any] = {"pairs": params["count"] // 2, "systems": params["count"]}
    for i, x in enumerate(states):
        paired = st.pair_statistics(x, edges)
        dens, _ = st.one_point(x, c["bins"])
        parts = {**paired, "one_point": dens}
        if c["dim"] == 2:
            speed = model.angular_velocity(np.arctan2(x[..., 1], x[..., 0]))
            r = st.hierarchy_rates(x, speed, c["modes"], m["beta"], m["normalized"])
            r["closure_residual"] = r["hierarchy_rate"] - r["closure_rate"]
            parts.update(r)
        for k, v in parts.items():
            for name, value in ((f"{k}_sum", v.sum(axis=0)), (f"{k}_sq", (v * v).sum(0))):
                out.setdefault(name, np.empty((states.shape[0],) + value.shape))[i] = value
    return out


class CorrelationsTask(MemberList):
    """Points: the start, then each member (``chunk`` systems of one n)."""

    kind = "correlations"

    def __init__(self, cfg: dict, plan: dict, executor: Executor, progress: bool):
        super().__init__(cfg, executor, progress, plan["tasks"],
                         functools.partial(run_member, cfg))
        self.plan = plan

    def describe(self, params: dict) -> str:
        return (f"member n = {params['n']}, systems {params['first']}.."
                f"{params['first'] + params['count'] - 1}")

    def dataset(self, frames: list, info: dict) -> xr.Dataset:
        return study_dataset(self.cfg, self.plan, frames[1:], info)

    def checkpoint(self, state: Any, frames: list) -> xr.Dataset:
        done = [f for f in self.kept(frames)[1:] if isinstance(f, dict)]
        if not done:
            return xr.Dataset()
        ds = xr.Dataset()
        for k in done[0]:
            values = np.stack([np.asarray(f[k], dtype=float) for f in done])
            ds[f"member_{k}"] = (("member",) + tuple(f"{k}_{j}" for j in
                                                     range(values.ndim - 1)), values)
        return ds

    def restore(self, ckpt: xr.Dataset) -> tuple[Any, list]:
        frames: list = [None]
        names = [k[len("member_"):] for k in ckpt.data_vars if k.startswith("member_")]
        for i in range(ckpt.sizes.get("member", 0)):
            frames.append({k: ckpt[f"member_{k}"].values[i] for k in names})
        return frames[-1], frames


# ---------------------------------------------------------------------------------------
# The dataset.

def _means(cfg: dict, plan: dict, done: list, name: str, count: str, shape: tuple
           ) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error per n of ``name`` (NaN where nothing is done)."""
    ns = list(cfg["correlations"]["n"])
    total, sq = np.zeros((len(ns),) + shape), np.zeros((len(ns),) + shape)
    k = np.zeros(len(ns))
    for task, value in zip(plan["tasks"], done):
        if isinstance(value, dict) and f"{name}_sum" in value:
            i = ns.index(task["n"])
            total[i] += value[f"{name}_sum"]
            sq[i] += value[f"{name}_sq"]
            k[i] += float(value[count])
    kk = k.reshape((-1,) + (1,) * len(shape))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / kk
        var = np.maximum(sq - kk * mean * mean, 0.0) / (kk - 1)
        return np.where(kk > 0, mean, np.nan), np.sqrt(var / kk)


def _var(dims, values, units: str = "1", long_name: str | None = None) -> tuple:
    return (dims, values, {"units": units, **({"long_name": long_name} if long_name
                                               else {})})


def _theory(cfg: dict, times: np.ndarray, edges: np.ndarray) -> tuple:
    """``(lambda_k, (n - 1) g, closure_error)`` of the linear theory on S^1 (NaN on
    S^{d-1}): ``R_k = (2 l_k/n) e^{2 l_k t}``, ``C_k = 2 l_k/n`` (statistics' module
    docstring), so the residual over the rate is ``1 - e^{-2 l_k t}`` mode by mode."""
    c, m = cfg["correlations"], cfg["model"]
    modes = c["modes"]
    lam = growth_rate(np.arange(1, 4 * modes + 64), m["beta"], math.inf, m["normalized"])
    if c["dim"] != 2:
        return lam, np.full((times.size, edges.size - 1), np.nan), np.full(times.size,
                                                                          np.nan)
    grow = lam[:modes] * np.exp(2 * np.outer(times, lam[:modes]))
    closure = np.linalg.norm(grow - lam[:modes], axis=1) / np.linalg.norm(grow, axis=1)
    return lam, st.linear_correlation(times, edges, lam), closure


def study_dataset(cfg: dict, plan: dict, done: list, info: dict) -> xr.Dataset:
    """The correlations dataset (docs/studies/correlations.md) of the members done."""
    c, m = cfg["correlations"], cfg["model"]
    ns, times = np.asarray(c["n"]), np.asarray(c["times"], dtype=float)
    nt, bins, modes, circle = times.size, c["bins"], c["modes"], c["dim"] == 2
    edges = st.angle_edges(bins)
    cells = 2 * bins if circle else bins
    var: dict[str, tuple] = {}
    for name in PAIRED:
        var[name] = _means(cfg, plan, done, name, "pairs", (nt, bins))
    var["one_point"] = _means(cfg, plan, done, "one_point", "systems", (nt, cells))
    for name in RATES:
        var[name] = _means(cfg, plan, done, name, "systems", (nt, modes)) if circle else \
            (np.full((ns.size, nt, modes), np.nan),) * 2
    g, g_err = var["correlation"]
    with np.errstate(invalid="ignore", divide="ignore"):
        gmax = np.max(np.abs(g), axis=-1)
        zmax = np.max(np.abs(g) / g_err, axis=-1)
        res, rate = var["closure_residual"][0], var["hierarchy_rate"][0]
        closure = np.sqrt(np.sum(res**2, axis=-1) / np.sum(rate**2, axis=-1))
    slopes = np.array([fit_slope(ns.astype(float), gmax[:, j]) for j in range(nt)])
    pairs = c["systems"] // 2
    threshold = float(stats.t.ppf(1 - c["level"] / (2 * bins), max(pairs - 1, 1)))
    k = np.arange(1, modes + 1)
    lam, predicted, closure_theory = _theory(cfg, times, edges)
    a, t3, tb, tm = ("n", "time", "angle"), ("n", "time"), ("time", "angle"), ("n", "time",
                                                                         "mode")
    v = _var
    data = {
        "pair_density": v(a, var["pair"][0], "1/rad", "f2: density of the pair angle psi "
                          "= arccos<x_i, x_j> on [0, pi], pairs of one system"),
        "pair_density_stderr": v(a, var["pair"][1], "1/rad"),
        "independent_density": v(a, var["independent"][0], "1/rad", "density of psi "
                                 "for independent draws from f1 (cross-system pairs)"),
        "independent_density_stderr": v(a, var["independent"][1], "1/rad"),
        "correlation": v(a, g, "1/rad", "g = pair_density - independent_density"),
        "correlation_stderr": v(a, g_err, "1/rad", "sd over the pairs of systems / sqrt"),
        "correlation_max": v(t3, gmax, "1/rad", "max over the bins of |g|"),
        "correlation_max_z": v(t3, zmax, "1", "max over the bins of |g|/stderr"),
        "scaled_correlation_max": v(t3, ns[:, None] * gmax, "1/rad", "n max |g|"),
        "correlation_exponent": v("time", slopes[:, 0], "1",
                                  "slope of log max|g| against log n"),
        "correlation_exponent_low": v("time", slopes[:, 1], "1", "95 % interval, low"),
        "correlation_exponent_high": v("time", slopes[:, 2], "1", "95 % interval, high"),
        "predicted_correlation": v(tb, predicted, "1/rad", "(n - 1) g of the linear "
                                   "fluctuation theory (S^1; bin averages)"),
        "one_point_density": v(("n", "time", "position"), var["one_point"][0], "1/rad",
                               "f1: density of theta (S^1) or of arccos<x, e_1>"),
        "one_point_density_stderr": v(("n", "time", "position"), var["one_point"][1],
                                      "1/rad"),
        "pair_moment": v(tm, var["pair_moment"][0], "1", "mean over pairs of cos(k phi)"),
        "pair_moment_stderr": v(tm, var["pair_moment"][1]),
        "hierarchy_rate": v(tm, rate, "1/time", "d/dt pair_moment: the weak second "
                            "equation from the tokens' speeds"),
        "closure_rate": v(tm, var["closure_rate"][0], "1/time", "the same with the chaos "
                          "closure f3 = f2 (x) f1"),
        "closure_residual": v(tm, res, "1/time", "hierarchy_rate - closure_rate"),
        "closure_residual_stderr": v(tm, var["closure_residual"][1], "1/time"),
        "closure_error": v(t3, closure, "1", "|residual| / |hierarchy_rate| over the modes"),
        "predicted_closure_error": v("time", closure_theory, "1", "closure_error of the "
                                     "linear theory: |l (e^{2lt} - 1)| / |l e^{2lt}|"),
        "growth_rate": v("mode", lam[:modes], "1/time", "lambda_k at the uniform state"),
        "angle_edges": v("angle_edge", edges, "rad"),
    }
    pos = (np.arange(cells) + 0.5) * (2 * np.pi / cells) if circle else \
        (edges[:-1] + edges[1:]) / 2
    coords = {"n": ("n", ns), "time": ("time", times), "angle": ("angle", (edges[:-1]
              + edges[1:]) / 2, {"units": "rad"}), "position": ("position", pos,
              {"units": "rad"}), "mode": ("mode", k)}
    model = model_name(m["normalized"])
    return assemble(data, coords, {
        "title": f"correlations, {model} on S^{c['dim'] - 1}, beta = {m['beta']:g}, "
                 f"{c['systems']} systems per n",
        "model": model, "beta": m["beta"], "dim": c["dim"], "systems": c["systems"],
        "bins": bins, "z_threshold": threshold, "level": c["level"], "dt": c["dt"],
        "z_rule": f"max |g|/stderr over {bins} bins exceeds z_threshold with chance <= "
                  f"{c['level']:g} when g = 0 (Student t, {pairs - 1} dof, Bonferroni)",
        "integrator": "RK4 + retraction, fixed step; S^1 field by Fourier moments"}, info)


def correlations(config: dict | None = None, *, out: str | Path | None = None,
                 overwrite: bool = False, resume: bool = False,
                 progress: bool = False) -> xr.Dataset:
    """The correlations study of one config (module docstring).

    Args:
        config: the config; ``[correlations]`` n, dim, systems, chunk, times, bins,
            modes, dt, level; ``[model]`` beta, normalized (kappa inf); ``[particles]``
            seed.
        out: where to write the netCDF result (default ``output.path``).
        overwrite: replace an existing result.
        resume: continue from ``<out>.checkpoint.nc`` (the members done are kept).
        progress: a bar over the members.

    Returns:
        The study dataset (``status`` -1 when interrupted).

    Raises:
        ConfigError: bad input, before any work.
    """
    cfg = cfgmod.validate(config, "correlations")
    plan = check_plan(cfg)
    return run_study(cfg, lambda executor: CorrelationsTask(cfg, plan, executor, progress),
                     out, overwrite=overwrite, resume=resume, progress=progress)
