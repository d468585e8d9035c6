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
  (``cluster_labels``; the count equals ``meanfield.metrics.cluster_count``);
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
from scipy import integrate as sint
from scipy.sparse import csgraph, csr_matrix

from meanfield import config as cfgmod
from meanfield.errors import ConfigError
from meanfield.model import kernels
from meanfield.model.ensemble import simulate_ensemble, uniform_ensemble
from meanfield.model.particles import AttentionParticles
from meanfield.runs import budget, limits
from meanfield.runs.executor import Executor
from meanfield.studies.members import MemberList, run_study

DEFAULT_N = 256
# per (time, system) and per system; the checkpoint pads a short chunk with NaN
SERIES = ("clusters", "energy_scaled", "mass_square_sum", "cluster_energy")
SCALARS = ("plateau_clusters", "plateau_time", "steps", "merge_start", "merge_low",
           "merge_high", "merge_gap", "merge_mass_ratio", "merge_hardmax",
           "merge_two_cluster", "merge_tau")


# ---------------------------------------------------------------------------------------
# Theory.

def most_unstable_mode(beta: float, geometry: str = "circle", normalized: bool = True
                       ) -> tuple[int, float]:
    """``(k*, sigma_{k*})``: the mode (S^1) or degree (S^2) of largest growth rate at the
    uniform state without noise (docs/conventions.md), searched over ``1..K`` with ``K``
    well past ``sqrt(2 beta)``."""
    top = int(8 * math.sqrt(2 * max(beta, 1.0))) + 16
    k = np.arange(1, top + 1)
    rate = (kernels.growth_rate if geometry == "circle" else kernels.sphere_growth_rate)(
        k, float(beta), math.inf, normalized)
    i = int(np.argmax(rate))
    return int(k[i]), float(rate[i])


def energy_rate(x: np.ndarray, beta: float, normalized: bool = True) -> float:
    """``dS/dt`` of ``S = (1/n^2) sum_ij e^{beta(<x_i, x_j> - 1)}`` along the flow
    (module docstring): ``(2 beta e^{-beta}/n^2) sum_i w_i |v_i|^2`` with ``w_i = Z_i``
    (SA) or ``n`` (USA); ``>= 0``. Dense, O(n^2 d)."""
    x = np.asarray(x, dtype=float)
    n = x.shape[0]
    k = np.exp(beta * (x @ x.T - 1.0))
    a = k @ x
    z = k.sum(axis=1)
    tangent = a - np.einsum("ij,ij->i", a, x)[:, None] * x  # e^{-beta} Z_i v_i (SA)
    v2 = np.einsum("ij,ij->i", tangent, tangent)
    if normalized:  # Z_i |v_i|^2 e^{-beta} = |tangent|^2 / z
        return float(2 * beta * np.sum(v2 / z) / n**2)
    return float(2 * beta * math.exp(beta) * np.sum(v2) / n**3)  # v_i = e^beta t_i/n


def scaled_energy(x: np.ndarray, beta: float) -> np.ndarray:
    """``S`` of tokens ``(..., n, d)`` (leading dims kept)."""
    g = np.matmul(x, np.swapaxes(x, -1, -2))
    return np.exp(beta * (np.minimum(g, 1.0) - 1.0)).mean(axis=(-1, -2))


def cluster_labels(x: np.ndarray, threshold: float) -> np.ndarray:
    """Single-linkage labels ``0..k-1`` of unit vectors ``(n, d)`` at chordal distance
    ``threshold`` (the components of ``meanfield.metrics.cluster_count``). S^1: the sorted
    angles cut at gaps of chord ``>= threshold``; else the components of the dense graph
    (O(n^2) memory)."""
    x = np.asarray(x, dtype=float)
    n = x.shape[0]
    if x.shape[1] == 2:
        theta = np.arctan2(x[:, 1], x[:, 0])
        order = np.argsort(theta)
        gaps = np.diff(np.concatenate([theta[order], [theta[order[0]] + 2 * np.pi]]))
        cut = 2 * np.sin(np.minimum(gaps, np.pi) / 2) >= threshold  # after sorted j
        if not cut.any():
            return np.zeros(n, dtype=np.int64)
        run = np.concatenate([[0], np.cumsum(cut[:-1])])
        if not cut[-1]:  # the last run wraps around into the first
            run[run == run[-1]] = 0
        labels = np.empty(n, dtype=np.int64)
        labels[order] = np.unique(run, return_inverse=True)[1]
        return labels
    d2 = np.maximum(2.0 - 2.0 * (x @ x.T), 0.0)
    _, labels = csgraph.connected_components(csr_matrix(d2 < threshold * threshold),
                                             directed=False)
    return labels.astype(np.int64)


def pairing_times(beta: float, gap: float, m1: float, m2: float, threshold: float,
                  normalized: bool = True) -> tuple[float, float]:
    """``(T_hardmax, T_two_cluster)``: the time two collapsed clusters (token fractions
    ``m1``, ``m2``, angle ``gap``) take to come within chord ``threshold`` (module
    docstring). USA: both are the exact two-cluster time."""
    end = 2 * math.asin(min(threshold / 2, 1.0))
    if gap <= end:
        return 0.0, 0.0
    rho = m2 / m1
    if normalized:
        r = rho + 1 / rho

        def hardmax(phi):
            return math.exp(beta * (1 - math.cos(phi))) / (r * math.sin(phi))

        def exact(phi):
            eps = math.exp(-beta * (1 - math.cos(phi)))
            return 1 / (math.sin(phi) * eps * (rho / (1 + rho * eps)
                                               + 1 / (rho * (1 + eps / rho))))
    else:
        def hardmax(phi):
            return math.exp(-beta * math.cos(phi)) / ((m1 + m2) * math.sin(phi))
        exact = hardmax
    out = []
    for f in (hardmax, exact):
        # the integrand peaks at phi_0 with width ~1/(beta sin phi_0): help quad there
        width = 1 / max(beta * math.sin(gap), 1e-12)
        points = [p for p in (gap - 3 * width, gap - 30 * width) if end < p < gap]
        val, _ = sint.quad(f, end, gap, points=points or None, limit=400, epsabs=0,
                           epsrel=1e-10)
        out.append(float(val))
    return out[0], out[1]


def pairing_tau(gap: float, m1: float, m2: float, threshold: float,
                normalized: bool = True) -> float:
    """The hardmax pairing time in the rescaled clock (``d tau = e^{-beta(1 - <x_1,
    x_2>)} dt``, USA ``e^beta`` times that): ``tau = ln(tan(phi_0/2)/tan(phi_e/2)) / r``
    from ``d phi/d tau = -r sin phi`` (module docstring), independent of beta."""
    end = 2 * math.asin(min(threshold / 2, 1.0))
    if gap <= end:
        return 0.0
    r = (m2 / m1 + m1 / m2) if normalized else (m1 + m2)
    return math.log(math.tan(gap / 2) / math.tan(end / 2)) / r


def first_plateau(times: np.ndarray, counts: np.ndarray, collapsed: np.ndarray,
                  ratio: float) -> tuple[float, float]:
    """``(count, t)`` of the first plateau (module docstring); NaNs if none is seen (the
    window ``[t, ratio t]`` must end within the saves)."""
    for i, t in enumerate(times):
        if t * ratio > times[-1]:
            break
        if not collapsed[i]:
            continue
        window = counts[i:np.searchsorted(times, t * ratio, side="right")]
        if np.all(window == counts[i]):
            return float(counts[i]), float(t)
    return math.nan, math.nan


def fit_exponent(beta: np.ndarray, values: np.ndarray) -> float:
    """Least-squares slope of ``log values`` on ``log beta`` (finite positive values;
    NaN with fewer than two)."""
    ok = np.isfinite(values) & (values > 0)
    if ok.sum() < 2:
        return math.nan
    return float(np.polyfit(np.log(beta[ok]), np.log(values[ok]), 1)[0])


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
    return {"n": int(n), "d": int(dom["dim"]), "tasks": tasks, "modes": modes}


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
    run = simulate_ensemble(AttentionParticles(beta, normalized), x0, times,
                            tolerance=c["tolerance"], seed=cfg["particles"]["seed"],
                            first=params["first"])
    states = run.states[1:]  # (T, B, n, d), without t = 0
    out: dict[str, Any] = {k: np.empty((times.size, params["count"])) for k in SERIES}
    for i in range(times.size):
        out["energy_scaled"][i] = scaled_energy(states[i], beta)
        for s in range(params["count"]):
            labels = cluster_labels(states[i, s], thr)
            share = np.bincount(labels) / plan["n"]
            out["clusters"][i, s] = share.size
            out["mass_square_sum"][i, s] = float(np.sum(share * share))
            centres = np.zeros((share.size, plan["d"]))
            np.add.at(centres, labels, states[i, s])
            centres /= np.linalg.norm(centres, axis=1)[:, None]
            kernel = np.exp(beta * (np.minimum(centres @ centres.T, 1.0) - 1.0))
            out["cluster_energy"][i, s] = float(share @ kernel @ share)
    out.update({k: np.empty(params["count"]) for k in SCALARS})
    out["steps"][:] = run.steps
    tol = c["collapse_tolerance"]
    for s in range(params["count"]):
        msq = out["mass_square_sum"][:, s]
        collapsed = np.abs(out["energy_scaled"][:, s] - msq) <= tol * msq
        out["plateau_clusters"][s], out["plateau_time"][s] = first_plateau(
            times, out["clusters"][:, s], collapsed, c["plateau_ratio"])
        merge = _last_merge(times, out["clusters"][:, s], states[:, s], beta, thr,
                            normalized)
        for k, v in merge.items():
            out[k][s] = v
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


def study_dataset(cfg: dict, plan: dict, done: list, info: dict) -> xr.Dataset:
    """The metastability dataset (module docstring) of the tasks done (NaN elsewhere)."""
    c, m = cfg["metastability"], cfg["model"]
    betas, times = np.asarray(c["beta"], dtype=float), np.asarray(c["times"], dtype=float)
    nb, nt, ns = betas.size, times.size, c["systems"]
    series = {k: np.full((nb, nt, ns), np.nan) for k in SERIES}
    scalars = {k: np.full((nb, ns), np.nan) for k in SCALARS}
    for task, value in zip(plan["tasks"], done):
        if not isinstance(value, dict):
            continue
        b = int(np.searchsorted(betas, task["beta"]))
        sl = slice(task["first"], task["first"] + task["count"])
        for k in SERIES:
            series[k][b, :, sl] = value[k]
        for k in SCALARS:
            scalars[k][b, sl] = value[k]
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
    ts = ("beta", "time", "system")
    one = {"units": "1"}
    data = {
        "clusters": (ts, series["clusters"], {
            "units": "1", "long_name": f"single-linkage clusters at chord "
                                       f"{cfg['particles']['cluster_threshold']:g}"}),
        "energy": (ts, energy, {"units": "1", "long_name":
                                "E_beta(mu^n) - E_beta(uniform), E_beta = (1/2beta) "
                                "iint e^{beta<x,y>}"}),
        "energy_scaled": (ts, series["energy_scaled"], {
            "units": "1", "long_name": "(1/n^2) sum_ij e^{beta(<x_i,x_j> - 1)}"}),
        "mass_square_sum": (ts, series["mass_square_sum"], {
            "units": "1", "long_name": "sum over clusters of (token fraction)^2"}),
        "cluster_energy": (ts, series["cluster_energy"], {
            "units": "1", "long_name": "S of the clusters as points at their means"}),
        "log_time_over_beta": (("beta", "time"), np.log(times)[None, :] / betas[:, None],
                               {"units": "1", "long_name": "ln(t)/beta"}),
        "most_unstable_mode": ("beta", modes, {
            "units": "1", "long_name": "argmax of the growth rate at the uniform state"}),
        "most_unstable_rate": ("beta", rates, one),
        "first_plateau_clusters": (("beta", "system"), scalars["plateau_clusters"], one),
        "first_plateau_time": (("beta", "system"), scalars["plateau_time"], one),
        "first_plateau_mean": ("beta", plateau_mean, one),
        "steps": (("beta", "system"), scalars["steps"], one),
        "last_merge_start": (("beta", "system"), scalars["merge_start"], {
            "units": "1", "long_name": "first save with the last two clusters"}),
        "last_merge_low": (("beta", "system"), scalars["merge_low"], one),
        "last_merge_high": (("beta", "system"), scalars["merge_high"], one),
        "last_merge_gap": (("beta", "system"), scalars["merge_gap"], {"units": "rad"}),
        "last_merge_mass_ratio": (("beta", "system"), scalars["merge_mass_ratio"], one),
        "last_merge_hardmax": (("beta", "system"), scalars["merge_hardmax"], {
            "units": "1", "long_name": "duration predicted by the hardmax pairing limit"}),
        "last_merge_two_cluster": (("beta", "system"), scalars["merge_two_cluster"], {
            "units": "1", "long_name": "duration of the exact two-point-cluster ODE"}),
        "last_merge_rescaled": (("beta", "system"), scalars["merge_tau"], {
            "units": "1", "long_name": "hardmax pairing time in the clock rescaled by "
                                       "e^{-beta(1 - <x_1, x_2>)}"}),
    }
    ds = xr.Dataset(data, coords={"beta": ("beta", betas), "time": ("time", times),
                                  "system": ("system", np.arange(ns))})
    model = "SA" if m["normalized"] else "USA"
    geometry = "S^1" if plan["d"] == 2 else "S^2"
    ds.attrs.update({
        "title": f"metastability, {model} on {geometry}, n = {n}, {ns} systems per beta",
        "model": model, "geometry": cfg["domain"]["geometry"], "n": n,
        "systems": ns, "cluster_threshold": cfg["particles"]["cluster_threshold"],
        "most_unstable_mode": [int(k) for k in modes],
        "plateau_exponent": fit_exponent(betas, plateau_mean),
        "mode_exponent": fit_exponent(betas, modes.astype(float)),
        "plateau_rule": f"first save with collapsed clusters (|S - sum m^2| <= "
                        f"{c['collapse_tolerance']:g} sum m^2) and the same count over "
                        f"[t, {c['plateau_ratio']:g} t]",
        "monotone": "E_beta non-decreasing: dE/dt = (1/n^2) sum_i w_i |v_i|^2, w_i = Z_i "
                    "(SA), n (USA)",
        "rescaled_time": "ln(t)/beta (merge at gap phi after ~e^{beta(1 - cos phi)})",
        "tolerance": c["tolerance"], "integrator": "RK4 + retraction, step doubling per "
                                                   "system", **info})
    return ds


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
