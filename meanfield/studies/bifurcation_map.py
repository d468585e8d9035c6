"""``[bifurcation] mode = "map"``: the first bifurcation of the noisy model over a (beta,
kappa) map.

For each beta of ``numpy.linspace(map_start, map_stop, map_num)`` (``parameter`` must be
"kappa"), the continuation of ``meanfield.studies.bifurcation`` on ``[start, stop]`` in
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
  state's, ``-log|S| / kappa`` (first order: the thermodynamic transition, between the
  fold and kappa_c; linear interpolation between branch points, NaN if none);
- on dims ``(beta, kappa)`` (kappa the uniform branch's points): ``map_order_parameter``,
  the order parameter of the stable non-uniform state of mode 1 where there is one
  (interpolated along the stable part of the branch), 0 where only the uniform state is
  stable, NaN where neither; ``map_bistable`` (int8: 1 where the uniform state and the
  non-uniform one are both stable).

Each beta is one point of the run engine: a checkpoint keeps those done and ``resume``
goes on from them.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import xarray as xr

from meanfield.errors import ConfigError
from meanfield.runs.engine import RunTask
from meanfield.studies import bifurcation as bf

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
    bf.check_bifurcation_config(_at_beta(cfg, top))


def _at_beta(cfg: dict, beta: float) -> dict:
    """The config of one beta of the map: mode 1 only, by continuation."""
    return {**cfg, "model": {**cfg["model"], "beta": float(beta)},
            "bifurcation": {**cfg["bifurcation"], "modes": 1, "mode": "continuation"}}


def map_point(cfg: dict, beta: float) -> dict:
    """The first bifurcation at one beta (module docstring)."""
    c = _at_beta(cfg, beta)
    plan = bf.check_bifurcation_config(c)
    disc = bf.build_discretization(c)
    uniform = bf.uniform_branch(disc, c, plan)
    ok, check = bf.pitchfork_check(plan, c, uniform["special"])
    pitch = next((p for p in uniform["special"] if p["mode"] == 1), None)
    branch = bf.mode_branch(disc, c, plan, pitch, 1, 1)
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
        area = 2 * math.pi if plan["geometry"] == "circle" else 4 * math.pi
        gap = branch["free_energy"] + math.log(area) / bk  # F(branch) - F(uniform)
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


def map_dataset(cfg: dict, done: list[dict], info: dict) -> xr.Dataset:
    """The map dataset (module docstring) of the betas done."""
    betas = map_betas(cfg)[:len(done)]
    nk = max([len(d["kappa"]) for d in done] + [1])
    kappa = done[0]["kappa"] if done else np.zeros(0)
    data: dict[str, Any] = {}
    for name in _SCALARS:
        data[f"map_{name}"] = ("beta", np.array([d[name] for d in done], dtype=float),
                               {"units": "1"})
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
    data["map_order_parameter"] = (("beta", "kappa"), order,
                                   {"units": "1", "long_name": "order parameter of the "
                                    "stable non-uniform state (0: only the uniform one)"})
    data["map_bistable"] = (("beta", "kappa"), bistable, {"units": "1"})
    ds = xr.Dataset(data, coords={"beta": ("beta", betas), "kappa": ("kappa", kappa[:nk])})
    m = cfg["model"]
    ds.attrs.update({"title": f"first bifurcation of {'SA' if m['normalized'] else 'USA'} "
                              f"on the {cfg['domain']['geometry']} over (beta, kappa)",
                     "geometry": cfg["domain"]["geometry"], "mode": "map",
                     "model": "SA" if m["normalized"] else "USA", "parameter": "kappa",
                     **info})
    return ds


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

    def dataset(self, frames: list, info: dict) -> xr.Dataset:
        done = [f for f in frames[1:] if isinstance(f, dict)]
        problems = [f"beta = {b:g}: {d['message']}" for b, d in zip(self.betas, done)
                    if not d["check"]]
        problems += [f"beta = {b:g}: {d['branch_message']}" for b, d in zip(self.betas, done)
                     if d["branch_status"] == "failed"]
        return map_dataset(self.cfg, done, {**info, "problems": "; ".join(problems)})

    def checkpoint(self, state: Any, frames: list) -> xr.Dataset:
        done = [f for f in frames[1:] if isinstance(f, dict)]
        return map_dataset(self.cfg, done, {}) if done else xr.Dataset()

    def restore(self, ckpt: xr.Dataset) -> tuple[Any, list]:
        if "map_critical_kappa" not in ckpt:
            return None, [None]
        done = _from_dataset(ckpt)
        return done[-1], [None, *done]
