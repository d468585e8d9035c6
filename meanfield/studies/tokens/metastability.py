"""``metastability(config)``: the staircase of clusters from tokens spread on S^1 or S^2.

For each ``beta`` of ``[metastability] beta``, ``systems`` independent systems of ``n =
[particles] n`` tokens (default 256), i.i.d. uniform on S^1 (``[domain] geometry =
"circle"``) or S^2 (``"sphere"``), follow the **deterministic** SA (``[model] normalized
= true``) or USA dynamics (docs/conventions.md) through the ensemble engine (adaptive RK4
with retraction, one step per system). Noise (finite ``model.kappa``) is refused: the
staircase is a property of the deterministic flow (with noise clusters also split and
nothing is monotone). System ``s`` starts from the same tokens at every beta (its seed
``system_rng(seed, s, "initial")``, whatever the chunk or the worker count).

Saved at ``[metastability] times`` (default log-spaced 0.1 .. 1000), dims (beta, time,
system):

- ``clusters``: single-linkage clusters at chordal distance ``particles.cluster_threshold``
  (``cluster_labels``; the count equals ``meanfield.metrics.cluster_count``), or with
  ``particles.cluster_method = "rank"`` [GLPR25, §6.3]'s count, the rank of the 0/1 matrix of
  pairs closer than it (``meanfield.metrics.cluster_rank``: >= the components, equal when
  every component is a clique). The first plateau and the last merge count components
  whatever the method (they need the clusters' token fractions);
- ``energy``: ``E_beta(mu^n) - E_beta(uniform)`` with ``E_beta = (1/2beta) iint
  e^{beta <x, y>}`` (``meanfield.model.particles.interaction_energy``'s convention);
- ``energy_scaled``: ``S = (1/n^2) sum_ij e^{beta(<x_i, x_j> - 1)}`` in (0, 1], a positive
  affine function of the energy (``E = (e^beta S - e^beta S_uniform)/(2 beta)``). For
  collapsed clusters of token fractions ``m_a`` it is ``sum_a m_a^2`` up to the cross
  terms ``m_a m_b e^{-beta(1 - <c_a, c_b>)}``; a merge of ``a`` and ``b`` raises it by
  ``2 m_a m_b``: the steps of the staircase;
- ``mass_square_sum``: ``sum_a m_a^2`` of the clusters (an independent reading of the
  plateaus: from the labels, not from the kernel);
- ``cluster_energy``: ``S`` of the clusters as points, ``sum_ab m_a m_b e^{beta(<c_a,
  c_b> - 1)}`` with ``c_a`` the normalised mean of cluster ``a``: ``S`` up to the
  clusters' spread (``S`` of collapsed clusters, cross terms included).

**Which functional is monotone.** With ``Z_i = sum_j e^{beta <x_i, x_j>}`` and
``E = (1/(2 beta n^2)) sum_ij e^{beta <x_i, x_j>}``, the surface gradient is ``grad_i E =
(1/n^2) P^perp_{x_i} sum_j e^{beta <x_i, x_j>} x_j``. USA: ``v_i = n grad_i E``, so
``dE/dt = (1/n) sum_i |v_i|^2``: gradient ascent. SA: ``v_i = (n^2/Z_i) grad_i E``, so
``dE/dt = (1/n^2) sum_i Z_i |v_i|^2 >= 0``: SA is the gradient ascent of the **same**
``E`` for the metric weighted by ``Z_i/n^2`` at token ``i`` ([GLPR25, §3.4]: SA is
a gradient flow of ``E_beta`` for a modified metric). Both models: ``E`` never decreases
(``energy_rate``, tested against finite differences; the saved energies are checked).

**The first plateau** (``first_plateau``): the first save ``t`` at which the clusters are
*collapsed* (``|S - sum_a m_a^2| <= collapse_tolerance * sum_a m_a^2``: a cluster of
spread ``w`` lowers its share of ``S`` by ``~e^{-beta w^2/2}``, and before the clusters
form ``S`` exceeds ``sum m_a^2`` by far) **and** the count stays the same for all saves in
``[t, plateau_ratio t]``. Its count is compared with the most unstable mode of the
linearisation at the uniform state: ``argmax_k k^2 a_k`` (circle, ``growth_rate``) or
``argmax_l l(l+1) a_l`` (sphere, ``sphere_growth_rate``) without noise. For SA at large
beta ``a_k ~ e^{-k^2/(2 beta)}/beta``, so ``k* ~ sqrt(2 beta)`` (USA alike); on S^1 the
mode-k perturbation has k maxima, hence k clusters. ``plateau_exponent`` is the least-
squares slope of ``log mean_s(plateau count)`` on ``log beta``, ``mode_exponent`` that of
``k*``.

**Rescaled time** ``log_time_over_beta = ln(t)/beta``. Two collapsed clusters at cosine
``c`` interact through ``e^{-beta(1 - c)}`` (below), so the time of a merge at gap ``phi``
is ``~e^{beta(1 - cos phi)}`` up to powers of beta; in ``ln(t)/beta`` the merges sit at
``1 - cos phi + O(log(beta)/beta)``: the steps of the staircase keep their places as beta
grows while the plateaus between them stretch exponentially in ``t`` (the literature's
metastable times ``log T_2 ~ beta``).

**Last merge against the hardmax pairing limit.** Two collapsed clusters with token
fractions ``m_1, m_2`` at angle ``phi`` (they move on the great circle through them, on
S^1 and S^2 alike). SA: ``v_1 = m_2 e^{beta c} (x_2 - c x_1) / (m_1 e^beta + m_2
e^{beta c})``, so with ``eps = e^{-beta(1 - cos phi)}``, ``rho = m_2/m_1``:
``phi' = -sin(phi) eps (rho/(1 + rho eps) + (1/rho)/(1 + eps/rho))`` (exact for point
clusters: ``last_merge_two_cluster``). In the rescaled time ``d tau = eps dt`` and as
``beta -> inf`` (``eps -> 0``) this is the hardmax pairing dynamics ``d phi/d tau = -r
sin(phi)``, ``r = rho + 1/rho`` (n = 2 hardmax tokens: each attends to the other only;
``r = 2`` for equal masses), so ``tan(phi/2) = tan(phi_0/2) e^{-r tau}``. Undoing the
rescaling, the merge takes ``T_pair = int_{phi_e}^{phi_0} e^{beta(1 - cos phi)} /
(r sin phi) d phi ~ e^{beta(1 - cos phi_0)} / (beta r sin^2 phi_0)``
(``last_merge_hardmax``), ``phi_e = 2 arcsin(threshold/2)`` the gap at which the count
drops; in the rescaled clock the pairing takes ``tau = ln(tan(phi_0/2)/tan(phi_e/2))/r``
whatever beta (``last_merge_rescaled``). USA: ``phi' = -(m_1 + m_2) e^{beta cos phi} sin
phi`` exactly (``d tau = e^beta
eps dt``, ``r = m_1 + m_2 = 1``). Compared: the observed duration of the two-cluster
phase, from the first save ``t_a`` with two clusters (``phi_0``, ``m_1``, ``m_2`` read
there) to the first save with one, bracketed by the saves (``last_merge_low`` <
duration <= ``last_merge_high``).

Issue 28 (``metastability_merging``): the metastable times T_1, T_2 with fitted slopes
and bootstrap intervals, the reduced merging model from each first plateau, the places
predicted by the phases of mode k*, the KDE modes of each start, and the start in caps
(``start_caps``, [GKPR24]'s well-separated groups).

The theory and the readings above (``most_unstable_mode``, ``energy_rate``,
``cluster_labels``, ``first_plateau``, ``pairing_times``, ...) are in
``metastability_theory``; this module checks the config, runs the tasks and writes the
dataset.

Tasks: (beta, chunk of ``chunk`` systems) through the executor (``[parallel]``); a
checkpoint keeps the tasks done and ``resume`` goes on from them.

Measured (tests/meanfield/studies/tokens/test_metastability.py): S^1, SA, n = 256, 8 systems,
beta = 16 .. 256: first plateaus of 4.4, 6.6, 9.1, 12.6, 17.6 clusters against k* = 6,
8, 11, 16, 23 (0.73 .. 0.83 of k*; on S^1 finite n and the spread of the excited modes
round the count down), exponent 0.495 (k*: 0.488); the energy's largest relative drop
6e-16 (at tolerance 1e-7 per step: 1e-9, integrator error). The last merge is seen only
where ``e^{beta(1 - cos phi_0)}`` fits in the run: n = 64 at beta = 4, merges observed
after 542..576, 837..887, 1886..1998 against the hardmax pairing 553, 846, 1892 (exact
two-cluster ODE 558, 849, 1896). At beta >= 16 two clusters about pi apart need ~e^{32}:
out of reach of any explicit integrator (the collapsed clusters keep the step at RK4's
stability limit, ~2.8, the intra-cluster contraction rate being 1). USA contracts a
cluster of token fraction m at rate ~m e^beta (SA: 1): give its times in units of
e^{-beta}.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from meanfield import config as cfgmod
from meanfield.errors import ConfigError
from meanfield.metrics.cluster_rank import check_rank_size, cluster_rank
from meanfield.metrics.hemisphere import hemisphere_share, wendel_probability
from meanfield.model import kernels
from meanfield.model.ensemble import simulate_ensemble, uniform_ensemble
from meanfield.model.particles import AttentionParticles
from meanfield.runs import budget, limits
from meanfield.runs.executor import Executor
from meanfield.studies.dataset import assemble, gather, model_name, variable
from meanfield.studies.members import MemberList, run_study
from meanfield.studies.tokens import metastability_merging as merging
from meanfield.studies.tokens.metastability_theory import (
    cluster_labels,
    first_plateau,
    fit_exponent,
    most_unstable_mode,
    pairing_tau,
    pairing_times,
    scaled_energy,
)

DEFAULT_N = 256
# per (time, system) and per system; the checkpoint pads a short chunk with NaN
SERIES = ("clusters", "energy_scaled", "mass_square_sum", "cluster_energy",
          *merging.SERIES)
SCALARS = ("plateau_clusters", "plateau_time", "steps", "merge_start", "merge_low",
           "merge_high", "merge_gap", "merge_mass_ratio", "merge_hardmax",
           "merge_two_cluster", "merge_tau", "start_hemisphere", *merging.SCALARS)


# ---------------------------------------------------------------------------------------
# Checks and one task.

def check_metastability_config(cfg: dict) -> dict:
    """Checks across sections before any work; the plan (n, d, tasks, modes)."""
    c, m, dom = cfg["metastability"], cfg["model"], cfg["domain"]
    if not math.isinf(m["kappa"]):
        raise ConfigError(f"model.kappa = {m['kappa']:g}: the metastability study runs the "
                          "deterministic flow (the staircase and the monotone energy are "
                          "properties of it); set model.kappa = \"inf\"", "model.kappa")
    if cfg["particles"]["architecture"] != "post-ln":
        raise ConfigError("the metastability study runs SA or USA tokens on the sphere; give "
                          "particles.architecture = \"post-ln\"", "particles.architecture")
    if dom["dim"] > 3:
        raise ConfigError(f"domain.dim = {dom['dim']}: the study is on S^1 (circle) or S^2 "
                          "(sphere, dim 3), where the most unstable mode is known",
                          "domain.dim")
    if not m["normalized"] and c["beta"][-1] > 700:
        raise ConfigError(f"metastability.beta = {c['beta'][-1]:g}: USA speeds carry e^beta "
                          "and overflow beyond beta = 700; use normalized = true",
                          "metastability.beta")
    n = cfg["particles"]["n"] or DEFAULT_N
    if n < 2:
        raise ConfigError(f"particles.n = {n}: clusters need n >= 2", "particles.n")
    check_rank_size(n, cfg["particles"]["cluster_method"])
    chunk = c["chunk"]
    # (the clusters are stiff at their rate: times up to 1e12 would run on for days)
    limits.check_clustered_steps(c["times"][-1], 2.0 if m["normalized"] else 2.0 * math.exp(
        c["beta"][-1]), "metastability.times", c["times"], "clustering tokens")
    # memory, before any work: a chunk on each worker, its states kept at every save
    budget.check_ensemble(min(chunk, c["systems"]) * cfg["parallel"]["workers"], int(n),
                          int(dom["dim"]), "particles.n", n, saves=len(c["times"]))
    limits.check_members(len(c["beta"]) * -(-c["systems"] // chunk), "metastability.chunk",
                         chunk, "give a larger chunk, fewer systems or fewer beta")
    tasks = [{"beta": float(b), "first": k, "count": min(chunk, c["systems"] - k)}
             for b in c["beta"] for k in range(0, c["systems"], chunk)]
    modes = [most_unstable_mode(b, dom["geometry"], m["normalized"]) for b in c["beta"]]
    return {"n": int(n), "d": int(dom["dim"]), "tasks": tasks, "modes": modes,
            "betas": [float(b) for b in c["beta"]]}


def _last_merge(times, counts, states, beta, threshold, normalized) -> dict:
    nan = dict.fromkeys(("merge_start", "merge_low", "merge_high", "merge_gap",
                         "merge_mass_ratio", "merge_hardmax", "merge_two_cluster",
                         "merge_tau"), math.nan)
    one = np.nonzero(counts == 1)[0]
    if one.size == 0 or one[0] == 0 or counts[one[0] - 1] != 2:
        return nan
    hi = int(one[0])
    a = hi - 1
    while a > 0 and counts[a - 1] == 2:
        a -= 1
    x = states[a]
    labels = cluster_labels(x, threshold)
    centres = np.stack([x[labels == j].sum(axis=0) for j in (0, 1)])
    centres /= np.linalg.norm(centres, axis=1)[:, None]
    gap = float(np.arccos(np.clip(centres[0] @ centres[1], -1.0, 1.0)))
    m1, m2 = (float(np.mean(labels == j)) for j in (0, 1))
    hard, exact = pairing_times(beta, gap, m1, m2, threshold, normalized)
    return {"merge_start": float(times[a]), "merge_low": float(times[hi - 1] - times[a]),
            "merge_high": float(times[hi] - times[a]), "merge_gap": gap,
            "merge_mass_ratio": min(m1, m2) / max(m1, m2), "merge_hardmax": hard,
            "merge_two_cluster": exact,
            "merge_tau": pairing_tau(gap, m1, m2, threshold, normalized)}


def run_member(cfg: dict, plan: dict, params: dict) -> dict:
    """One beta, systems ``first .. first + count - 1``: the series (time, system) and
    the per-system numbers (``SERIES``, ``SCALARS``)."""
    c = cfg["metastability"]
    beta, normalized = params["beta"], cfg["model"]["normalized"]
    thr = cfg["particles"]["cluster_threshold"]
    times = np.asarray(c["times"], dtype=float)
    x0 = uniform_ensemble(params["count"], plan["n"], plan["d"], cfg["particles"]["seed"],
                          params["first"])
    if c["start_caps"]:  # [GKPR24]'s well-separated start (metastability_merging)
        x0 = merging.cap_start(x0, c["start_caps"], c["cap_radius"])
    model = AttentionParticles(beta, normalized)
    run = simulate_ensemble(model, x0, times, tolerance=c["tolerance"],
                            seed=cfg["particles"]["seed"], first=params["first"])

    def simulate(x, sub):  # a merge located inside its saves (metastable_times)
        return simulate_ensemble(model, x, sub, tolerance=c["tolerance"]).states
    states = run.states[1:]  # (T, B, n, d), without t = 0
    out: dict[str, Any] = {k: np.empty((times.size, params["count"])) for k in SERIES}
    # the plateau and merge analysis counts components (it needs their token fractions);
    # the clusters series counts by particles.cluster_method
    rank = cfg["particles"]["cluster_method"] == "rank"
    components = np.empty((times.size, params["count"]))
    for i in range(times.size):
        out["energy_scaled"][i] = scaled_energy(states[i], beta)
        for s in range(params["count"]):
            labels = cluster_labels(states[i, s], thr)
            share = np.bincount(labels) / plan["n"]
            components[i, s] = share.size
            out["clusters"][i, s] = cluster_rank(states[i, s], thr) if rank else share.size
            out["mass_square_sum"][i, s] = float(np.sum(share * share))
            centres = np.zeros((share.size, plan["d"]))
            np.add.at(centres, labels, states[i, s])
            centres /= np.linalg.norm(centres, axis=1)[:, None]
            kernel = np.exp(beta * (np.minimum(centres @ centres.T, 1.0) - 1.0))
            out["cluster_energy"][i, s] = float(share @ kernel @ share)
    out.update({k: np.empty(params["count"]) for k in SCALARS})
    out["steps"][:] = run.steps
    # [GLPR25, Lemma 6.4]: a start inside an open hemisphere collapses to one cluster
    out["start_hemisphere"][:] = hemisphere_share(x0)
    tol = c["collapse_tolerance"]
    for s in range(params["count"]):
        msq = out["mass_square_sum"][:, s]
        collapsed = np.abs(out["energy_scaled"][:, s] - msq) <= tol * msq
        out["plateau_clusters"][s], out["plateau_time"][s] = first_plateau(
            times, components[:, s], collapsed, c["plateau_ratio"])
        merge = _last_merge(times, components[:, s], states[:, s], beta, thr,
                            normalized)
        for k, v in merge.items():
            out[k][s] = v
        # metastable times, the reduced model, predicted places, KDE modes (issue 28)
        extra = merging.analyse_system(
            run.states[0, s], states[:, s], times, functools.partial(cluster_labels,
                                                                     threshold=thr),
            components[:, s], out["plateau_time"][s], beta, thr, normalized,
            plan["modes"][plan["betas"].index(beta)][0], c, simulate)
        for k, v in extra.items():
            out[k][..., s] = v
    return out


# ---------------------------------------------------------------------------------------
# The study through the run engine.

class MetastabilityTask(MemberList):
    """Points: the start, then each task; a checkpoint keeps the tasks done."""

    kind = "metastability"
    noun = "tasks"

    def __init__(self, cfg: dict, plan: dict, executor: Executor, progress: bool):
        super().__init__(cfg, executor, progress, plan["tasks"],
                         functools.partial(run_member, cfg, plan))
        self.plan = plan
        self.tasks = plan["tasks"]

    def describe(self, params: dict) -> str:
        return (f"task beta = {params['beta']:g}, systems {params['first']}.."
                f"{params['first'] + params['count'] - 1}")

    def dataset(self, frames: list, info: dict) -> xr.Dataset:
        return study_dataset(self.cfg, self.plan, frames[1:], info)

    def checkpoint(self, state: Any, frames: list) -> xr.Dataset:
        done = [f for f in self.kept(frames)[1:] if isinstance(f, dict)]
        if not done:
            return xr.Dataset()
        width = self.cfg["metastability"]["chunk"]

        def pad(a):
            full = np.full(a.shape[:-1] + (width,), np.nan)
            full[..., :a.shape[-1]] = a
            return full
        ds = xr.Dataset({f"member_{k}": (("member", "time", "slot"),
                                         np.stack([pad(f[k]) for f in done]))
                         for k in SERIES})
        for k in SCALARS:
            ds[f"member_{k}"] = (("member", "slot"), np.stack([pad(f[k]) for f in done]))
        return ds

    def restore(self, ckpt: xr.Dataset) -> tuple[Any, list]:
        frames: list = [None]
        if "member_clusters" in ckpt:
            for i in range(ckpt.sizes["member"]):
                count = self.tasks[i]["count"]
                frames.append({k: ckpt[f"member_{k}"].values[i][..., :count]
                               for k in (*SERIES, *SCALARS)})
        return frames[-1], frames


def _task_arrays(cfg: dict, plan: dict, done: list) -> tuple[dict, dict]:
    """The series on (beta, time, system) and the scalars on (beta, system) of the tasks
    done (NaN elsewhere)."""
    c = cfg["metastability"]
    betas = np.asarray(c["beta"], dtype=float)
    nb, nt, ns = betas.size, len(c["times"]), c["systems"]

    def where(i: int, *middle) -> tuple:
        task = plan["tasks"][i]
        return (int(np.searchsorted(betas, task["beta"])), *middle,
                slice(task["first"], task["first"] + task["count"]))

    series = gather(done, SERIES, (nb, nt, ns), lambda i: where(i, slice(None)))
    scalars = gather(done, SCALARS, (nb, ns), where)
    return series, scalars


def _variables(cfg: dict, series: dict, scalars: dict, derived: dict) -> dict:
    """The data variables (module docstring) of the gathered arrays and the derived ones
    (``energy``, ``log_time_over_beta``, ``modes``, ``rates``, ``plateau_mean``)."""
    ts, bs = ("beta", "time", "system"), ("beta", "system")
    threshold = cfg["particles"]["cluster_threshold"]
    return {
        "clusters": variable(ts, series["clusters"],
                             f"rank of 1[chord < {threshold:g}]" if cfg["particles"][
                                 "cluster_method"] == "rank" else
                             f"single-linkage clusters at chord {threshold:g}"),
        "energy": variable(ts, derived["energy"], "E_beta(mu^n) - E_beta(uniform), "
                           "E_beta = (1/2beta) iint e^{beta<x,y>}"),
        "energy_scaled": variable(ts, series["energy_scaled"],
                                  "(1/n^2) sum_ij e^{beta(<x_i,x_j> - 1)}"),
        "mass_square_sum": variable(ts, series["mass_square_sum"],
                                    "sum over clusters of (token fraction)^2"),
        "cluster_energy": variable(ts, series["cluster_energy"],
                                   "S of the clusters as points at their means"),
        "log_time_over_beta": variable(("beta", "time"), derived["log_time_over_beta"],
                                       "ln(t)/beta"),
        "most_unstable_mode": variable("beta", derived["modes"], "argmax of the growth "
                                       "rate at the uniform state"),
        "most_unstable_rate": variable("beta", derived["rates"]),
        "first_plateau_clusters": variable(bs, scalars["plateau_clusters"]),
        "first_plateau_time": variable(bs, scalars["plateau_time"]),
        "first_plateau_mean": variable("beta", derived["plateau_mean"]),
        "steps": variable(bs, scalars["steps"]),
        "start_in_hemisphere": variable(bs, scalars["start_hemisphere"], "1 if the "
                                        "start lies in an open hemisphere (linear program)"),
        "last_merge_start": variable(bs, scalars["merge_start"],
                                     "first save with the last two clusters"),
        "last_merge_low": variable(bs, scalars["merge_low"]),
        "last_merge_high": variable(bs, scalars["merge_high"]),
        "last_merge_gap": variable(bs, scalars["merge_gap"], units="rad"),
        "last_merge_mass_ratio": variable(bs, scalars["merge_mass_ratio"]),
        "last_merge_hardmax": variable(bs, scalars["merge_hardmax"], "duration predicted "
                                       "by the hardmax pairing limit"),
        "last_merge_two_cluster": variable(bs, scalars["merge_two_cluster"], "duration of "
                                           "the exact two-point-cluster ODE"),
        "last_merge_rescaled": variable(bs, scalars["merge_tau"], "hardmax pairing time "
                                        "in the clock rescaled by e^{-beta(1 - <x_1, "
                                        "x_2>)}"),
    }


def study_dataset(cfg: dict, plan: dict, done: list, info: dict) -> xr.Dataset:
    """The metastability dataset (module docstring) of the tasks done (NaN elsewhere)."""
    c, m = cfg["metastability"], cfg["model"]
    betas, times = np.asarray(c["beta"], dtype=float), np.asarray(c["times"], dtype=float)
    ns = c["systems"]
    series, scalars = _task_arrays(cfg, plan, done)
    n = plan["n"]
    log_uniform = np.array([kernels.log_uniform_pair_integral(plan["d"], b) for b in betas])
    with np.errstate(over="ignore", invalid="ignore"):
        energy = (np.exp(betas[:, None, None] + np.log(series["energy_scaled"]))
                  - np.exp(log_uniform)[:, None, None]) / (2 * betas[:, None, None])
    modes = np.array([k for k, _ in plan["modes"]])
    rates = np.array([r for _, r in plan["modes"]])
    seen = np.isfinite(scalars["plateau_clusters"])
    with np.errstate(invalid="ignore", divide="ignore"):
        plateau_mean = np.where(seen, scalars["plateau_clusters"], 0.0).sum(axis=1) \
            / seen.sum(axis=1)  # NaN where no system has a plateau yet
    data = _variables(cfg, series, scalars, {
        "energy": energy, "log_time_over_beta": np.log(times)[None, :] / betas[:, None],
        "modes": modes, "rates": rates, "plateau_mean": plateau_mean})
    data.update(merging.variables(series, scalars, betas))  # issue 28, items 2 and 3
    coords = {"beta": ("beta", betas), "time": ("time", times),
              "system": ("system", np.arange(ns))}
    model = model_name(m["normalized"])
    geometry = "S^1" if plan["d"] == 2 else "S^2"
    return assemble(data, coords, {
        "title": f"metastability, {model} on {geometry}, n = {n}, {ns} systems per beta",
        "model": model, "geometry": cfg["domain"]["geometry"], "n": n,
        "systems": ns, "cluster_threshold": cfg["particles"]["cluster_threshold"],
        "most_unstable_mode": [int(k) for k in modes],
        "plateau_exponent": fit_exponent(betas, plateau_mean),
        "hemisphere_share": float(np.nanmean(scalars["start_hemisphere"]))
        if np.isfinite(scalars["start_hemisphere"]).any() else math.nan,
        "wendel_probability": wendel_probability(n, plan["d"]),
        "mode_exponent": fit_exponent(betas, modes.astype(float)),
        "plateau_rule": f"first save with collapsed clusters (|S - sum m^2| <= "
                        f"{c['collapse_tolerance']:g} sum m^2) and the same count over "
                        f"[t, {c['plateau_ratio']:g} t]",
        "monotone": "E_beta non-decreasing: dE/dt = (1/n^2) sum_i w_i |v_i|^2, w_i = Z_i "
                    "(SA), n (USA)",
        "rescaled_time": "ln(t)/beta (merge at gap phi after ~e^{beta(1 - cos phi)})",
        "tolerance": c["tolerance"], "integrator": "RK4 + retraction, step doubling per "
                                                   "system",
        **merging.attributes(betas, scalars, c, cfg["particles"]["seed"],
                             m["normalized"])}, info)


def metastability(config: dict | None = None, *, out: str | Path | None = None,
                  overwrite: bool = False, resume: bool = False,
                  progress: bool = False) -> xr.Dataset:
    """The cluster staircase study of one config (module docstring).

    Args:
        config: the config; ``[metastability]`` beta, systems, chunk, times, tolerance,
            plateau_ratio, collapse_tolerance; ``[particles]`` n, seed,
            cluster_threshold; ``[domain]`` geometry; ``[model]`` normalized (kappa inf).
        out: where to write the netCDF result (default ``output.path``).
        overwrite: replace an existing result.
        resume: continue from ``<out>.checkpoint.nc`` (the tasks done are kept).
        progress: a bar over the tasks.

    Returns:
        The study dataset; ``status`` -1 when interrupted (the tasks done so far).

    Raises:
        ConfigError: bad input, before any work.
        TaskFailed: a task failed (named); the others are kept in the checkpoint.
    """
    cfg = cfgmod.validate(config, "metastability")
    plan = check_metastability_config(cfg)
    return run_study(cfg, lambda ex: MetastabilityTask(cfg, plan, ex, progress), out,
                     overwrite=overwrite, resume=resume, progress=progress)
