"""``[bifurcation] mode = "map"``: the first bifurcation of the noisy model over a (beta,
kappa) map.

For each beta of ``numpy.linspace(map_start, map_stop, map_num)`` (``parameter`` must be
"kappa"), the continuation of ``meanfield.studies.bifurcation.study`` on ``[start, stop]`` in
kappa: the uniform branch and its pitchforks, then the branch of mode 1 (degree 1 on S^2)
from its pitchfork. What is kept per beta (dim ``beta``):

- ``map_critical_kappa``: the pitchfork found (``map_analytic_kappa``: ``1/a_1``, the
  closed form; the run's ``status`` is 1 where they differ by more than 1e-6 relative);
- ``map_transition``: "supercritical" / "subcritical" (module docstring of
  ``bifurcation``), "" where no pitchfork lies in the range;
- ``map_fold_kappa``: where a subcritical branch turns (NaN otherwise): the fold curve;
  bistability (the uniform state and the non-uniform one both stable) lies between it and
  kappa_c;
- ``map_maxwell_kappa``: where the non-uniform branch's free energy crosses the uniform
  state's, ``-log|S| / kappa`` (``|S| = 2 pi``, ``4 pi``, 1 on the zonal geometry's
  normalized measure; first order: the thermodynamic transition, between the
  fold and kappa_c; linear interpolation between branch points, NaN if none);
- on dims ``(beta, kappa)`` (kappa the uniform branch's points): ``map_order_parameter``,
  the order parameter of the stable non-uniform state of mode 1 where there is one
  (interpolated along the stable part of the branch), 0 where only the uniform state is
  stable, NaN where neither; ``map_bistable`` (int8: 1 where the uniform state and the
  non-uniform one are both stable).

The fold curve by two-parameter continuation (``meanfield.studies.bifurcation.fold_curve``): when
every beta is done and some beta is subcritical, the fold at the largest subcritical beta
is located again with its state (``fold_curve.locate_fold``: the same one-parameter
continuation in kappa) and continued in (beta, kappa) down to ``map_start`` (the
extended Moore-Spence system, pseudo-arclength in beta; ``ds``, ``points`` and
``tolerance`` of ``[bifurcation]``, ``ds_max`` at most 0.2 so that the fit near the
tricritical point has points). It stops where the fold's order parameter falls
below ``fold_curve.fold_curve``'s ``r_min`` (the fold merges with the pitchfork at the
tricritical point) or where Newton fails (the curve so far is kept). Kept on dim
``fold_point``: ``fold_curve_beta``, ``fold_curve_kappa``, ``fold_curve_order_parameter``;
attrs ``tricritical_beta`` (from the curve: the intercept at r = 0 of a fit of beta by a
polynomial in r^2 near r = 0; NaN when the curve did not come near r = 0),
``tricritical_beta_landau`` (the closed form ``landau.tricritical_beta``, NaN if none),
``tricritical_fit``, ``fold_curve_status`` and ``fold_curve_message``. A curve whose
Newton failed before any estimate is a problem (``status`` 1).

Each beta is one point of the run engine: a checkpoint keeps those done and ``resume``
goes on from them; the fold curve is computed (again) once every beta is done.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import xarray as xr

from meanfield.discretizations.base import model_value
from meanfield.errors import ConfigError
from meanfield.runs.engine import RunTask
from meanfield.studies.bifurcation.branches import (
    mode_branch,
    pitchfork_check,
    uniform_branch,
)
from meanfield.studies.bifurcation.plan import (
    build_discretization,
    check_bifurcation_config,
    finished_with_problems,
)
from meanfield.studies.bifurcation.stationary_linear import area
from meanfield.studies.dataset import assemble, model_name, variable

_SCALARS = ("critical_kappa", "analytic_kappa", "fold_kappa", "maxwell_kappa")


def map_betas(cfg: dict) -> np.ndarray:
    b = cfg["bifurcation"]
    return np.linspace(b["map_start"], b["map_stop"], b["map_num"])


def check_map_config(cfg: dict) -> None:
    """ConfigError before any work: the map is in beta with kappa continued, and the
    resolution must carry the kernel at the largest beta."""
    b = cfg["bifurcation"]
    if b["parameter"] != "kappa":
        raise ConfigError("bifurcation.mode = \"map\" continues in kappa at each beta of "
                          "map_start..map_stop: give bifurcation.parameter = \"kappa\"",
                          "bifurcation.parameter")
    top = float(map_betas(cfg)[-1])
    check_bifurcation_config(_at_beta(cfg, top))


def _at_beta(cfg: dict, beta: float) -> dict:
    """The config of one beta of the map: mode 1 only, by continuation."""
    return {**cfg, "model": {**cfg["model"], "beta": float(beta)},
            "bifurcation": {**cfg["bifurcation"], "modes": 1, "mode": "continuation"}}


def map_point(cfg: dict, beta: float) -> dict:
    """The first bifurcation at one beta (module docstring)."""
    c = _at_beta(cfg, beta)
    plan = check_bifurcation_config(c)
    disc = build_discretization(c)
    uniform = uniform_branch(disc, c, plan)
    ok, check = pitchfork_check(plan, c, uniform["special"])
    pitch = next((p for p in uniform["special"] if p["mode"] == 1), None)
    branch = mode_branch(disc, c, plan, pitch, 1, 1)
    kappa = uniform["kappa"]
    out: dict[str, Any] = {name: math.nan for name in _SCALARS}
    out.update(transition=branch["transition"], check=int(ok), message=check,
               branch_status=branch["status"], branch_message=branch["message"],
               kappa=kappa, uniform_stable=uniform["stable"])
    out["analytic_kappa"] = plan["critical_kappa"][0]
    if pitch is not None:
        out["critical_kappa"] = pitch["kappa"]
    if branch["transition"] == "subcritical":
        out["fold_kappa"] = branch["fold_lam"]
    bk, r = branch["kappa"], branch["order_parameter"]
    if bk.size:
        gap = branch["free_energy"] + math.log(area(plan["geometry"])) / bk  # F - F(uniform)
        change = np.flatnonzero(np.sign(gap[:-1]) * np.sign(gap[1:]) < 0)
        if change.size and branch["transition"] == "subcritical":
            i = int(change[0])
            out["maxwell_kappa"] = float(bk[i] - gap[i] * (bk[i + 1] - bk[i])
                                         / (gap[i + 1] - gap[i]))
    # the stable part of the branch beyond its last turn: r increases with kappa there
    order = np.full(kappa.size, np.nan)
    bistable = np.zeros(kappa.size, dtype=np.int8)
    stable = branch["stable"] == 1
    if stable.any():
        start = int(np.argmin(bk)) if branch["transition"] == "subcritical" else 0
        part = np.arange(bk.size) >= start
        keep = stable & part
        ks, rs = bk[keep], r[keep]
        if ks.size:
            inside = (kappa >= ks.min()) & (kappa <= ks.max())
            order[inside] = np.interp(kappa[inside], ks, rs)
            bistable[inside & (uniform["stable"] == 1)] = 1
    only_uniform = np.isnan(order) & (uniform["stable"] == 1)
    order[only_uniform] = 0.0
    out["order_parameter"], out["bistable"] = order, bistable
    return out


def map_fold_curve(cfg: dict, done: list[dict]) -> dict:
    """The fold curve of the map (module docstring) from the largest subcritical beta:
    a dict of the ``fold_curve_*`` arrays and the tricritical attrs."""
    from meanfield.model import landau

    m = cfg["model"]
    betas = map_betas(cfg)[:len(done)]
    geometry = cfg["domain"]["geometry"]
    exact = landau.tricritical_beta(geometry, bool(m["normalized"]),
                                    cfg["domain"]["dim"] if geometry == "zonal" else None)
    out: dict[str, Any] = {"beta": np.zeros(0), "kappa": np.zeros(0),
                           "order_parameter": np.zeros(0), "tricritical_beta": math.nan,
                           "tricritical_beta_landau": math.nan if exact is None else exact,
                           "tricritical_fit": "", "status": "none",
                           "message": "no subcritical beta in the map: no fold curve"}
    sub = [i for i, d in enumerate(done)
           if d["transition"] == "subcritical" and math.isfinite(d["fold_kappa"])]
    if not sub:
        return out
    disc = build_discretization(_at_beta(cfg, float(map_betas(cfg)[-1])))
    failures = []
    for i in reversed(sub):  # the largest subcritical beta first (the longest curve); a
        # start refused (a fold at the zonal round-off floor in high d) tries the next
        got = _fold_curve_from(cfg, disc, float(betas[i]), done[i]["fold_kappa"])
        if isinstance(got, str):
            failures.append(got)
            continue
        out.update(got)
        if failures:
            out["message"] += "; before: " + "; ".join(failures)
        return out
    out.update(status="failed", message="; ".join(failures))
    return out


def _fold_curve_from(cfg: dict, disc, beta0: float, fold_kappa: float) -> dict | str:
    """The fold curve from the fold at ``beta0`` (the map's ``fold_kappa``): the
    ``map_fold_curve`` entries, or why it could not start."""
    from meanfield.studies.bifurcation import fold_curve as fc

    b = cfg["bifurcation"]
    kappa0, state, message = fc.locate_fold(disc, beta0, kappa_min=b["start"], ds=b["ds"],
                                            ds_max=b["ds_max"], points=b["points"],
                                            tol=b["tolerance"])
    if state is None:
        return f"the fold at beta = {beta0:g} was not found again: {message}"
    try:
        curve = fc.fold_curve(disc, beta0, state, kappa0, beta_stop=float(b["map_start"]),
                              ds=b["ds"], ds_max=max(b["ds"], min(b["ds_max"], 0.2)),
                              points=b["points"], tol=b["tolerance"])
    except ValueError as exc:  # (the start refused: e.g. a fold at the round-off floor)
        return f"the fold curve from beta = {beta0:g} could not start: {exc}"
    return {"beta": curve.beta, "kappa": curve.kappa,
            "order_parameter": curve.order_parameter,
            "tricritical_beta": curve.tricritical_beta,
            "tricritical_fit": curve.tricritical_fit, "status": curve.status,
            "message": f"from the fold at beta = {beta0:g}, kappa = {kappa0:.10g} (the "
                       f"map's: {fold_kappa:.10g}): {curve.message}"}


def map_dataset(cfg: dict, done: list[dict], info: dict,
                fold: dict | None = None) -> xr.Dataset:
    """The map dataset (module docstring) of the betas done; ``fold``
    (``map_fold_curve``) when every beta is done."""
    betas = map_betas(cfg)[:len(done)]
    nk = max([len(d["kappa"]) for d in done] + [1])
    kappa = done[0]["kappa"] if done else np.zeros(0)
    data: dict[str, Any] = {}
    for name in _SCALARS:
        data[f"map_{name}"] = variable("beta", np.array([d[name] for d in done], dtype=float))
    data["map_transition"] = ("beta", np.array([d["transition"] for d in done], dtype=str))
    data["map_check"] = ("beta", np.array([d["check"] for d in done], dtype=np.int8))
    data["map_message"] = ("beta", np.array([d["message"] for d in done], dtype=str))
    data["map_branch_status"] = ("beta", np.array([d["branch_status"] for d in done],
                                                  dtype=str))
    data["map_branch_message"] = ("beta", np.array([d["branch_message"] for d in done],
                                                   dtype=str))
    order = np.full((len(done), nk), np.nan)
    bistable = np.zeros((len(done), nk), dtype=np.int8)
    for i, d in enumerate(done):
        order[i, :len(d["kappa"])] = d["order_parameter"]
        bistable[i, :len(d["kappa"])] = d["bistable"]
    data["map_order_parameter"] = variable(("beta", "kappa"), order,
                                           "order parameter of the stable non-uniform "
                                           "state (0: only the uniform one)")
    data["map_bistable"] = variable(("beta", "kappa"), bistable)
    extra: dict[str, Any] = {}
    if fold is not None:
        for name, long in (("beta", "beta on the fold curve"),
                           ("kappa", "kappa of the fold"),
                           ("order_parameter", "order parameter of the state at the fold")):
            data[f"fold_curve_{name}"] = variable("fold_point",
                                                  np.asarray(fold[name], dtype=float), long)
        extra = {"tricritical_beta": float(fold["tricritical_beta"]),
                 "tricritical_beta_landau": float(fold["tricritical_beta_landau"]),
                 "tricritical_fit": fold["tricritical_fit"],
                 "fold_curve_status": fold["status"], "fold_curve_message": fold["message"]}
    model = model_name(cfg["model"]["normalized"])
    value = model_value(cfg)
    geometry = cfg["domain"]["geometry"]
    dim = cfg["domain"]["dim"] if geometry == "zonal" else None
    where = (f"zonal S^{dim - 1} (d = {dim})" if dim is not None else f"the {geometry}")
    attrs = {"title": f"first bifurcation of {model} on {where} "
                      "over (beta, kappa)" + ("" if value == 1 else f", V = {value:g} I"),
             "geometry": geometry, "mode": "map", "model": model,
             "parameter": "kappa", "value": value, **extra}
    if dim is not None:
        attrs["dim"] = int(dim)
    return assemble(data, {"beta": ("beta", betas), "kappa": ("kappa", kappa[:nk])},
                    attrs, info)


def _from_dataset(ds: xr.Dataset) -> list[dict]:
    out = []
    for i in range(ds.sizes["beta"]):
        d: dict[str, Any] = {name: float(ds[f"map_{name}"].values[i]) for name in _SCALARS}
        d.update(transition=str(ds.map_transition.values[i]),
                 check=int(ds.map_check.values[i]), message=str(ds.map_message.values[i]),
                 branch_status=str(ds.map_branch_status.values[i]),
                 branch_message=str(ds.map_branch_message.values[i]),
                 kappa=ds.kappa.values.copy(),
                 order_parameter=ds.map_order_parameter.values[i].copy(),
                 bistable=ds.map_bistable.values[i].astype(np.int8))
        out.append(d)
    return out


class MapTask(RunTask):
    """Points: the start, then one per beta of the map."""

    kind = "bifurcation"

    def __init__(self, cfg: dict):
        super().__init__(cfg)
        self.betas = map_betas(cfg)
        self.fold: dict | None = None  # the fold curve, once every beta is done

    def points(self) -> list:
        return ["start", *range(self.betas.size)]

    def where(self, done: int) -> str:
        return f"{max(done - 1, 0)} of {self.betas.size} betas"

    def start(self) -> Any:
        return None

    def advance(self, state: Any, point: Any, on_step) -> Any:
        return map_point(self.cfg, float(self.betas[point]))

    def frame(self, state: Any) -> Any:
        return state

    def finish(self, frames: list) -> None:
        done = [f for f in frames[1:] if isinstance(f, dict)]
        self.fold = map_fold_curve(self.cfg, done)

    def dataset(self, frames: list, info: dict) -> xr.Dataset:
        done = [f for f in frames[1:] if isinstance(f, dict)]
        problems = [f"beta = {b:g}: {d['message']}" for b, d in zip(self.betas, done)
                    if not d["check"]]
        problems += [f"beta = {b:g}: {d['branch_message']}" for b, d in zip(self.betas, done)
                     if d["branch_status"] == "failed"]
        fold = self.fold if len(done) == self.betas.size else None
        if fold is not None and fold["status"] == "failed" and not math.isfinite(
                fold["tricritical_beta"]):
            problems.append(f"fold curve: {fold['message']}")
        return map_dataset(self.cfg, done, {**info, "problems": "; ".join(problems)}, fold)

    def outcome(self, ds: xr.Dataset) -> tuple[int, str]:
        return finished_with_problems(ds)

    def checkpoint(self, state: Any, frames: list) -> xr.Dataset:
        done = [f for f in frames[1:] if isinstance(f, dict)]
        return map_dataset(self.cfg, done, {}) if done else xr.Dataset()

    def restore(self, ckpt: xr.Dataset) -> tuple[Any, list]:
        if "map_critical_kappa" not in ckpt:
            return None, [None]
        done = _from_dataset(ckpt)
        return done[-1], [None, *done]
