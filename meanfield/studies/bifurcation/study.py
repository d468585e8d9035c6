"""``bifurcation(config)``: the branches of stationary states of the noisy model, in kappa
or in beta, their stability, the pitchforks of the uniform state and the folds.

``[bifurcation] mode = "continuation"`` (this module, on the run engine): the uniform
branch (branch 0), its eigenvalues and pitchforks, checked against the closed form of
docs/conventions.md, then one branch per mode ``k = 1..modes`` (degree on S^2; two on
S^2 for an even degree, ``branch_sign`` +-1) from its pitchfork by pseudo-arclength
continuation, each point labelled by its stability, folds and eigenvalue crossings
located, and the transition type per mode branch. How each branch is computed is in
``meanfield.studies.bifurcation.branches`` (``uniform_branch``, ``pitchfork_check``,
``mode_branch``); this module checks the config, builds the discretization, runs the
branches as the points of the run engine and writes the dataset. A disagreement with
the closed form or a failed branch makes the run's ``status`` 1 and its ``message``
say so.

Resume: the run engine's checkpoint holds the finished branches (the dataset of those
done), ``resume`` goes on with the next branch; Ctrl-C keeps the finished branches (the
branch in progress is computed again).

``mode = "scan"``: ``meanfield.studies.bifurcation.scan.run_scan`` (time integration to
steady state; its checkpoint keeps the members done, ``resume`` runs the others). ``mode = "map"``: ``meanfield.studies.bifurcation.parameter_map``
(the first bifurcation over a (beta, kappa) map: kappa_c(beta), the fold curve, the
Maxwell point, the stable order parameter, bistability).

The dataset (docs/datasets.md): dims ``(branch, point)``: ``kappa``, ``beta``,
``order_parameter``, ``amplitude`` (of the branch's own mode k: ``|int e^{ik theta} dmu|``
on S^1, the rotation-invariant degree-l amplitude on S^2; equal to ``order_parameter`` for
k = 1, and what measures a branch with k >= 2 on S^1, whose ``order_parameter`` is 0),
``free_energy``, ``stable`` (int8: 1 stable, 0 unstable, -1 unknown or padding), ``leading_eigenvalue`` (real part of the leading eigenvalue, zero modes
dropped); per branch ``branch_mode`` (0 for the uniform branch), ``branch_kind``
("uniform" | "mode"), ``branch_sign``, ``branch_points``, ``branch_status``,
``branch_message``, ``transition``, ``fold_kappa``, ``fold_beta``; special points on dim
``special``: ``special_type`` ("pitchfork" | "fold" | "bifurcation"), ``special_kappa``,
``special_beta``, ``special_branch``, ``special_multiplicity``, ``special_order_parameter``,
``special_mode``, ``special_analytic_kappa`` (the closed form's kappa_c at the point's
beta for pitchforks, else NaN), ``special_side`` (pitchforks: +1 when the uniform state is
more unstable above the point, -1 below), ``special_located``; the states every ``stride``
points (and the last) ``state_density (branch, saved, <grid dims>)`` with ``state_point``
(-1: none). Attrs: ``parameter``, ``critical_kappa`` (closed form per mode at model.beta;
for the parameter beta at the analytic critical beta, NaN where none in the range),
``critical_beta`` (parameter beta only), ``pitchfork_check``, ``value`` and the usual ones.

``[weights] value = c`` (the value matrix ``V = c I``) multiplies the velocity by c:
stationary states ``rho ∝ exp(c kappa Psi)``, pitchforks at ``kappa_c = 1/(c a_k)``
(noisy Kuramoto: ``2/c`` on S^1, ``3/c`` on S^2). For ``c <= 0`` every mode of the uniform
state decays, ``k^2 (c a_k - 1/kappa) < 0``: no branch leaves it, and the study says so
(``pitchfork_check``, each mode branch's message) instead of searching.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from scipy import optimize

from meanfield import config as cfgmod
from meanfield.discretizations.base import Discretization, model_value
from meanfield.errors import ConfigError
from meanfield.runs import budget
from meanfield.runs.engine import Engine, RunTask
from meanfield.runs.threads import one_blas_thread
from meanfield.studies.bifurcation import stationary_linear as lin
from meanfield.studies.bifurcation.branches import (
    _pair,
    mode_branch,
    pitchfork_check,
    uniform_branch,
)

# ---------------------------------------------------------------------------------------
# The plan.

def check_bifurcation_config(cfg: dict) -> dict:
    """Checks before any work (ConfigError) and the plan: the branches to compute."""
    b, m = cfg["bifurcation"], cfg["model"]
    geometry = cfg["domain"]["geometry"]
    if cfg["discretization"]["method"] != "spectral":
        raise ConfigError(f"discretization.method = {cfg['discretization']['method']!r}: "
                          "bifurcation (stationary states by Newton-Krylov and their "
                          "eigenvalues) needs \"spectral\"", "discretization.method")
    parameter = b["parameter"]
    if parameter == "kappa" and not m["normalized"] and m["beta"] > cfgmod.MAX_USA_BETA:
        raise ConfigError(f"model.beta = {m['beta']:g}: the USA velocity overflows beyond "
                          f"{cfgmod.MAX_USA_BETA:g}", "model.beta")
    if parameter == "beta" and not m["normalized"] and b["stop"] > cfgmod.MAX_USA_BETA:
        raise ConfigError(f"bifurcation.stop = {b['stop']:g}: the USA velocity overflows "
                          f"beyond beta = {cfgmod.MAX_USA_BETA:g}", "bifurcation.stop")
    top_beta = b["stop"] if parameter == "beta" else m["beta"]
    cls = Discretization.from_name(geometry, "spectral")
    if not cls.resolves(cfg["discretization"]["resolution"], top_beta):
        raise ConfigError(f"discretization.resolution = {cfg['discretization']['resolution']}"
                          f" is too small for beta = {top_beta:g}: the kernel needs "
                          f">= {cls.needed_resolution(top_beta)}", "discretization.resolution")
    signs = []
    for k in range(1, b["modes"] + 1):
        # S^2, even degree: P_l and -P_l are different states (no rotation maps one to
        # the other), two branches; otherwise one (on S^1 a rotation by pi/k flips c_k,
        # on S^2 an odd P_l is flipped by z -> -z).
        both = geometry == "sphere" and k % 2 == 0
        signs += [(k, 1), (k, -1)] if both else [(k, 1)]
    value = model_value(cfg)
    plan: dict[str, Any] = {"geometry": geometry, "parameter": parameter,
                            "normalized": bool(m["normalized"]), "branches": signs,
                            "value": value}
    if parameter == "kappa":
        plan["beta"] = float(m["beta"])
        plan["critical_kappa"] = [lin.critical_kappa(geometry, m["beta"], m["normalized"],
                                                     k, value)
                                  for k in range(1, b["modes"] + 1)]
    else:
        plan["kappa"] = float(m["kappa"])
        plan["critical_beta"] = [analytic_critical_beta(geometry, m["kappa"],
                                                        m["normalized"], k, b["start"],
                                                        b["stop"], value)
                                 for k in range(1, b["modes"] + 1)]
        plan["critical_kappa"] = [m["kappa"] if math.isfinite(x) else math.nan
                                  for x in plan["critical_beta"]]
    return plan


def analytic_critical_beta(geometry: str, kappa: float, normalized: bool, mode: int,
                           start: float, stop: float, value: float = 1.0) -> float:
    """The beta in ``[start, stop]`` where ``critical_kappa(beta) = kappa`` (brentq on a
    grid of 64 intervals; the first root), NaN if none (always for ``value <= 0``)."""
    if value <= 0:
        return math.nan

    def gap(beta: float) -> float:
        return value * lin.attraction_coefficient(geometry, beta, normalized, mode) \
            - 1 / kappa

    grid = np.linspace(start, stop, 65)
    values = [gap(x) for x in grid]
    for a, b, fa, fb in zip(grid[:-1], grid[1:], values[:-1], values[1:]):
        if fa == 0:
            return float(a)
        if fa * fb < 0:
            return float(optimize.brentq(gap, a, b, xtol=1e-14, rtol=1e-15))
    return float(stop) if values[-1] == 0 else math.nan


def build_discretization(cfg: dict) -> Any:
    """The spectral discretization at the start of the range (kappa finite)."""
    b, m = cfg["bifurcation"], cfg["model"]
    model = dict(m)
    if b["parameter"] == "kappa":
        model["kappa"] = float(b["start"])
    else:
        model["beta"] = float(b["stop"])  # (the resolution checked at the largest beta)
    disc = Discretization.from_config({**cfg, "model": model}, threads=1)
    if b["parameter"] == "beta":
        disc.set_parameters(beta=float(b["start"]))
    return disc


# ---------------------------------------------------------------------------------------
# The dataset (and the checkpoint: the same, of the branches done).

_TEXT = ("kind", "status", "message", "transition")


def study_dataset(cfg: dict, plan: dict, grid, branches: list[dict], info: dict
                  ) -> xr.Dataset:
    """The bifurcation dataset (module docstring) of the branches done."""
    parameter = plan["parameter"]
    nb = len(branches)
    npts = max([len(br["lam"]) for br in branches] + [1])
    nsave = max([len(br["saved"]) for br in branches] + [1])
    shape = tuple(grid.shape)
    arrays = {name: np.full((nb, npts), np.nan) for name in
              ("kappa", "beta", "order_parameter", "amplitude", "free_energy",
               "leading_eigenvalue")}
    stable = np.full((nb, npts), -1, dtype=np.int8)
    density = np.full((nb, nsave, *shape), np.nan)
    state_point = np.full((nb, nsave), -1, dtype=np.int64)
    specials: list[dict] = []
    for i, br in enumerate(branches):
        n = len(br["lam"])
        for name, key in (("kappa", "kappa"), ("beta", "beta"),
                          ("order_parameter", "order_parameter"), ("amplitude", "amplitude"),
                          ("free_energy", "free_energy"), ("leading_eigenvalue", "leading")):
            arrays[name][i, :n] = br[key]
        stable[i, :n] = br["stable"]
        if br["states"] is not None:
            density[i, :len(br["saved"])] = br["states"]
            state_point[i, :len(br["saved"])] = br["saved"]
        specials += [{**s, "branch": i} for s in br["special"]]
    fold_pairs = [_pair(plan, parameter, br["fold_lam"]) if math.isfinite(br["fold_lam"])
                  else (math.nan, math.nan) for br in branches]
    units = {"kappa": "1", "beta": "1", "order_parameter": "1", "amplitude": "1",
             "free_energy": "1",
             "leading_eigenvalue": "1/time"}
    long = {"kappa": "inverse noise strength kappa", "beta": "inverse temperature beta",
            "order_parameter": "|int x dmu|",
            "amplitude": "amplitude of the branch's mode k: |int e^{ik theta} dmu| (S^1), "
                         "sqrt(4 pi/(2l+1)) |a_l| / mass (S^2); 0 on the uniform branch",
            "free_energy": "kappa^-1 int rho log rho - value * (E_beta(rho) - "
                           "E_beta(uniform))",
            "leading_eigenvalue": "real part of the leading eigenvalue of F' (rotation "
                                  "zero modes dropped)"}
    data: dict[str, Any] = {name: (("branch", "point"), arrays[name],
                                   {"units": units[name], "long_name": long[name]})
                            for name in arrays}
    data["stable"] = (("branch", "point"), stable,
                      {"units": "1", "long_name": "1 stable, 0 unstable, -1 unknown/none"})
    data["branch_points"] = ("branch", np.array([len(br["lam"]) for br in branches],
                                                 dtype=np.int64), {"units": "1"})
    data["branch_mode"] = ("branch", np.array([br["mode"] for br in branches], dtype=np.int64),
                           {"units": "1", "long_name": "Fourier mode k (S^1) or degree l "
                                                       "(S^2) shed; 0: the uniform branch"})
    data["branch_sign"] = ("branch", np.array([br["sign"] for br in branches], dtype=np.int64),
                           {"units": "1", "long_name": "sign of the critical mode at the "
                                                       "start (0: uniform)"})
    for name in _TEXT:
        data[f"branch_{name}" if name != "transition" else "transition"] = (
            "branch", np.array([br[name] for br in branches], dtype=str))
    data["fold_kappa"] = ("branch", np.array([p[0] for p in fold_pairs]), {"units": "1"})
    data["fold_beta"] = ("branch", np.array([p[1] for p in fold_pairs]), {"units": "1"})

    def column(key: str, dtype=float) -> np.ndarray:
        return np.array([s[key] for s in specials], dtype=dtype)

    data.update({
        "special_type": ("special", column("type", str)),
        "special_kappa": ("special", column("kappa"), {"units": "1"}),
        "special_beta": ("special", column("beta"), {"units": "1"}),
        "special_branch": ("special", column("branch", np.int64), {"units": "1"}),
        "special_multiplicity": ("special", column("multiplicity", np.int64), {"units": "1"}),
        "special_order_parameter": ("special", column("order_parameter"), {"units": "1"}),
        "special_mode": ("special", column("mode", np.int64), {"units": "1"}),
        "special_analytic_kappa": ("special", column("analytic"),
                                   {"units": "1", "long_name": "closed-form kappa_c = 1/a "
                                                               "at the point's beta"}),
        "special_side": ("special", column("side", np.int64), {"units": "1"}),
        "special_located": ("special", column("located", np.int8), {"units": "1"}),
    })
    data["state_density"] = (("branch", "saved", *grid.dims), density,
                             {"units": "1/area", "long_name": "stationary density"})
    data["state_point"] = (("branch", "saved"), state_point,
                           {"units": "1", "long_name": "point index of the saved state"})
    ds = xr.Dataset(data, coords=grid.coords())
    m = cfg["model"]
    name = "SA" if m["normalized"] else "USA"
    if parameter == "kappa" and plan["beta"] == 0:
        name = "the noisy Kuramoto model"  # (beta = 0: e^{beta<x,y>} = 1, SA = USA)
    attrs = {"title": f"bifurcations of {name} on the {plan['geometry']} in {parameter}",
             "geometry": plan["geometry"], "model": "SA" if m["normalized"] else "USA",
             "parameter": parameter, "critical_kappa": np.array(plan["critical_kappa"]),
             "value": plan.get("value", 1.0), **info}
    if parameter == "beta":
        attrs["critical_beta"] = np.array(plan["critical_beta"])
        attrs["kappa"] = plan["kappa"]
    else:
        attrs["beta"] = plan["beta"]
    ds.attrs.update(attrs)
    return ds


def branches_from_dataset(ds: xr.Dataset) -> list[dict]:
    """The branch dicts of a (checkpoint) dataset: what ``study_dataset`` was made of."""
    out = []
    parameter = ds.attrs["parameter"]
    for i in range(ds.sizes["branch"]):
        n = int(ds.branch_points.values[i])
        saved_idx = ds.state_point.values[i]
        k = int(np.sum(saved_idx >= 0))
        specials = []
        for j in np.flatnonzero(ds.special_branch.values == i):
            specials.append({
                "type": str(ds.special_type.values[j]),
                "lam": float(ds[f"special_{parameter}"].values[j]),
                "kappa": float(ds.special_kappa.values[j]),
                "beta": float(ds.special_beta.values[j]),
                "multiplicity": int(ds.special_multiplicity.values[j]),
                "mode": int(ds.special_mode.values[j]),
                "order_parameter": float(ds.special_order_parameter.values[j]),
                "analytic": float(ds.special_analytic_kappa.values[j]),
                "side": int(ds.special_side.values[j]),
                "located": bool(ds.special_located.values[j])})
        fold = float(ds[f"fold_{parameter}"].values[i])
        out.append({
            "kind": str(ds.branch_kind.values[i]), "mode": int(ds.branch_mode.values[i]),
            "sign": int(ds.branch_sign.values[i]),
            "lam": ds[parameter].values[i, :n].copy(),
            "kappa": ds.kappa.values[i, :n].copy(), "beta": ds.beta.values[i, :n].copy(),
            "order_parameter": ds.order_parameter.values[i, :n].copy(),
            "amplitude": (ds.amplitude.values[i, :n].copy() if "amplitude" in ds
                          else np.full(n, np.nan)),
            "free_energy": ds.free_energy.values[i, :n].copy(),
            "stable": ds.stable.values[i, :n].astype(np.int8),
            "leading": ds.leading_eigenvalue.values[i, :n].copy(), "special": specials,
            "saved": [int(x) for x in saved_idx[:k]],
            "states": ds.state_density.values[i, :k].copy() if k else None,
            "status": str(ds.branch_status.values[i]),
            "message": str(ds.branch_message.values[i]),
            "transition": str(ds.transition.values[i]), "fold_lam": fold})
    return out


# ---------------------------------------------------------------------------------------
# The study on the run engine.

class BifurcationTask(RunTask):
    """Points: the start, the uniform branch, then one per (mode, sign) branch; a
    checkpoint keeps the branches done."""

    kind = "bifurcation"

    def __init__(self, cfg: dict, plan: dict):
        super().__init__(cfg)
        self.plan = plan
        self.disc = build_discretization(cfg)

    def points(self) -> list:
        return ["start", "uniform", *plan_branches(self.plan)]

    def where(self, done: int) -> str:
        return f"{max(done - 1, 0)} of {len(self.points()) - 1} branches"

    def start(self) -> Any:
        return {"pitchforks": [], "branch": None}

    def advance(self, state: Any, point: Any, on_step) -> Any:
        if point == "uniform":
            branch = uniform_branch(self.disc, self.cfg, self.plan)
            return {"pitchforks": branch["special"], "branch": branch}
        mode, sign = point
        pitchfork = next((p for p in state["pitchforks"] if p["mode"] == mode), None)
        branch = mode_branch(self.disc, self.cfg, self.plan, pitchfork, mode, sign)
        return {"pitchforks": state["pitchforks"], "branch": branch}

    def frame(self, state: Any) -> Any:
        return state["branch"]

    def dataset(self, frames: list, info: dict) -> xr.Dataset:
        branches = [f for f in frames[1:] if isinstance(f, dict)]
        ok, check = pitchfork_check(self.plan, self.cfg,
                                    branches[0]["special"] if branches else [])
        failed = [f"branch {i} (mode {br['mode']}): {br['message']}"
                  for i, br in enumerate(branches) if br["status"] == "failed"]
        info = {**info, "pitchfork_check": check, "check_passed": int(ok),
                "problems": "; ".join(([] if ok else [check]) + failed)}
        return study_dataset(self.cfg, self.plan, self.disc.grid, branches, info)

    def outcome(self, ds: xr.Dataset) -> tuple[int, str]:
        return finished_with_problems(ds)

    def checkpoint(self, state: Any, frames: list) -> xr.Dataset:
        branches = [f for f in frames[1:] if isinstance(f, dict)]
        if not branches:
            return xr.Dataset()
        return study_dataset(self.cfg, self.plan, self.disc.grid, branches, {})

    def restore(self, ckpt: xr.Dataset) -> tuple[Any, list]:
        if "branch_points" not in ckpt:
            return self.start(), [None]
        branches = branches_from_dataset(ckpt)
        return ({"pitchforks": branches[0]["special"], "branch": branches[-1]},
                [None, *branches])


def _scan(run_scan, cfg: dict, out, overwrite: bool, resume: bool, progress: bool
          ) -> xr.Dataset:
    """``mode = "scan"``: the scan on the run engine (``bifurcation_scan.run_scan``),
    written to ``out``; its checkpoint keeps the members done, ``resume`` runs only the
    others."""
    return run_scan(cfg, _out(cfg, out), overwrite=overwrite, resume=resume,
                    progress=progress)


def plan_branches(plan: dict) -> list[tuple[int, int]]:
    """The (mode, sign) of the mode branches, in order."""
    return [tuple(x) for x in plan["branches"]]


def bifurcation(config: dict | None = None, *, out: str | Path | None = None,
                overwrite: bool = False, resume: bool = False,
                progress: bool = False) -> xr.Dataset:
    """The bifurcation study of one config (module docstring).

    Args:
        config: the config; ``[bifurcation]`` parameter, start, stop, modes, mode, ds,
            ds_max, points, stride, tolerance (and the scan's and map's keys).
        out: where to write the netCDF result (default ``output.path``).
        overwrite: replace an existing result.
        resume: continue from ``<out>.checkpoint.nc`` (the branches done are kept).
        progress: unused by the continuation (a branch at a time); the scan's bar.

    Returns:
        The study dataset; ``status`` 0 when finished and every check passed, 1 when
        finished with a pitchfork that disagrees with the closed form or a branch whose
        Newton failed (``message`` says which), -1 when interrupted (the branches done).

    Raises:
        ConfigError: bad input, before any work.
    """
    cfg = cfgmod.validate(config)
    with one_blas_thread():  # (small dense LU and eigenvalue problems: threads.py)
        return _run(cfg, out, overwrite, resume, progress)


def _run(cfg: dict, out, overwrite: bool, resume: bool, progress: bool) -> xr.Dataset:
    if cfg["bifurcation"]["mode"] == "map":
        from meanfield.studies.bifurcation import parameter_map as bm

        bm.check_map_config(cfg)
        budget.check(cfg, "bifurcation")
        return Engine(cfg, _out(cfg, out), overwrite=overwrite, resume=resume,
                      progress=progress).run(bm.MapTask(cfg))
    plan = check_bifurcation_config(cfg)
    budget.check(cfg, "bifurcation")  # before any grid is made (S^2 L = 2047: 1.3 PB)
    if cfg["bifurcation"]["mode"] == "scan":
        try:
            from meanfield.studies.bifurcation.scan import run_scan
        except ImportError as exc:
            raise ConfigError(f"bifurcation.mode = \"scan\" is not available in this "
                              f"installation ({exc}); use \"continuation\"",
                              "bifurcation.mode") from None
        return _scan(run_scan, cfg, out, overwrite, resume, progress)
    out = _out(cfg, out)
    engine = Engine(cfg, out, overwrite=overwrite, resume=resume, progress=progress)
    return engine.run(BifurcationTask(cfg, plan))


def _out(cfg: dict, out):
    return out if out is not None else cfg["output"]["path"]


def finished_with_problems(ds: xr.Dataset) -> tuple[int, str]:
    """The outcome of a finished study (``RunTask.outcome``): ``status`` 1 and the
    problems in ``message`` when a check failed or a branch's Newton did (the attr
    ``problems``), else 0."""
    problems = ds.attrs.get("problems", "")
    return (1, f"finished with problems: {problems}") if problems else (0, "finished")
