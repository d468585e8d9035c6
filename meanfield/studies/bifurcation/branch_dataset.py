"""The dataset of the continuation study (``meanfield.studies.bifurcation.study``, whose
module docstring lists its variables): the branches done, padded to one length on dims
``(branch, point)``, their special points on dim ``special`` and the saved states; and
back (``branches_from_dataset``: a checkpoint holds the same dataset of the branches
done, and ``resume`` goes on from what it reads back).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import xarray as xr

from meanfield.studies.bifurcation.plan import kappa_beta
from meanfield.studies.dataset import assemble, model_name, variable


_TEXT = ("kind", "status", "message", "transition")
# the variables on (branch, point): name -> (key of a branch dict, units, long_name)
_POINT_VARIABLES = {
    "kappa": ("kappa", "1", "inverse noise strength kappa"),
    "beta": ("beta", "1", "inverse temperature beta"),
    "order_parameter": ("order_parameter", "1", "|int x dmu|"),
    "amplitude": ("amplitude", "1",
                  "amplitude of the branch's mode k: |int e^{ik theta} dmu| (S^1), "
                  "sqrt(4 pi/(2l+1)) |a_l| / mass (S^2), |int P_l(t) dmu| (zonal); 0 on "
                  "the uniform branch"),
    "free_energy": ("free_energy", "1",
                    "kappa^-1 int rho log rho - value * (E_beta(rho) - E_beta(uniform))"),
    "leading_eigenvalue": ("leading", "1/time",
                           "real part of the leading eigenvalue of F' (rotation zero modes "
                           "dropped)"),
}


def study_dataset(cfg: dict, plan: dict, grid, branches: list[dict], info: dict
                  ) -> xr.Dataset:
    """The bifurcation dataset (``meanfield.studies.bifurcation.study``'s module
    docstring) of the branches done."""
    data = _point_variables(branches)
    data.update(_branch_variables(plan, branches))
    data.update(_special_variables([{**s, "branch": i} for i, br in enumerate(branches)
                                    for s in br["special"]]))
    data.update(_state_variables(grid, branches))
    return assemble(data, grid.coords(), _attrs(cfg, plan), info)


def _point_variables(branches: list[dict]) -> dict[str, Any]:
    """The variables on (branch, point), NaN (``stable``: -1) past a branch's end."""
    nb = len(branches)
    npts = max([len(br["lam"]) for br in branches] + [1])
    arrays = {name: np.full((nb, npts), np.nan) for name in _POINT_VARIABLES}
    stable = np.full((nb, npts), -1, dtype=np.int8)
    for i, br in enumerate(branches):
        n = len(br["lam"])
        for name, (key, _, _) in _POINT_VARIABLES.items():
            arrays[name][i, :n] = br[key]
        stable[i, :n] = br["stable"]
    data: dict[str, Any] = {name: variable(("branch", "point"), arrays[name], long, units)
                            for name, (_, units, long) in _POINT_VARIABLES.items()}
    data["stable"] = variable(("branch", "point"), stable,
                              "1 stable, 0 unstable, -1 unknown/none")
    return data


def _branch_variables(plan: dict, branches: list[dict]) -> dict[str, Any]:
    """The variables per branch: its points, mode, sign, kind, status, message,
    transition and first fold."""
    parameter = plan["parameter"]
    data: dict[str, Any] = {}
    data["branch_points"] = variable("branch", np.array([len(br["lam"]) for br in branches],
                                                        dtype=np.int64))
    data["branch_mode"] = variable(
        "branch", np.array([br["mode"] for br in branches], dtype=np.int64),
        "Fourier mode k (S^1) or degree l (S^2) shed; 0: the uniform branch")
    data["branch_sign"] = variable(
        "branch", np.array([br["sign"] for br in branches], dtype=np.int64),
        "sign of the critical mode at the start (0: uniform)")
    for name in _TEXT:
        data[f"branch_{name}" if name != "transition" else "transition"] = (
            "branch", np.array([br[name] for br in branches], dtype=str))
    fold_pairs = [kappa_beta(plan, parameter, br["fold_lam"])
                  if math.isfinite(br["fold_lam"]) else (math.nan, math.nan)
                  for br in branches]
    data["fold_kappa"] = variable("branch", np.array([p[0] for p in fold_pairs]))
    data["fold_beta"] = variable("branch", np.array([p[1] for p in fold_pairs]))
    return data


def _special_variables(specials: list[dict]) -> dict[str, Any]:
    """The special points (pitchforks, folds, bifurcations) on dim ``special``."""

    def column(key: str, dtype=float) -> np.ndarray:
        return np.array([s[key] for s in specials], dtype=dtype)

    return {
        "special_type": ("special", column("type", str)),
        "special_kappa": variable("special", column("kappa")),
        "special_beta": variable("special", column("beta")),
        "special_branch": variable("special", column("branch", np.int64)),
        "special_multiplicity": variable("special", column("multiplicity", np.int64)),
        "special_order_parameter": variable("special", column("order_parameter")),
        "special_mode": variable("special", column("mode", np.int64)),
        "special_analytic_kappa": variable("special", column("analytic"),
                                           "closed-form kappa_c = 1/a at the point's beta"),
        "special_side": variable("special", column("side", np.int64)),
        "special_located": variable("special", column("located", np.int8)),
    }


def _state_variables(grid, branches: list[dict]) -> dict[str, Any]:
    """The saved states (``state_density``) and their point indices (``state_point``,
    -1: none)."""
    nsave = max([len(br["saved"]) for br in branches] + [1])
    density = np.full((len(branches), nsave, *tuple(grid.shape)), np.nan)
    state_point = np.full((len(branches), nsave), -1, dtype=np.int64)
    for i, br in enumerate(branches):
        if br["states"] is not None:
            density[i, :len(br["saved"])] = br["states"]
            state_point[i, :len(br["saved"])] = br["saved"]
    return {"state_density": variable(("branch", "saved", *grid.dims), density,
                                      "stationary density", units="1/area"),
            "state_point": variable(("branch", "saved"), state_point,
                                    "point index of the saved state")}


def _attrs(cfg: dict, plan: dict) -> dict[str, Any]:
    """The study's attrs: title, geometry, model, parameter, the closed-form critical
    points and value (the run engine's ``info`` follows them)."""
    parameter = plan["parameter"]
    model = model_name(cfg["model"]["normalized"])
    name = model
    if parameter == "kappa" and plan["beta"] == 0:
        name = "the noisy Kuramoto model"  # (beta = 0: e^{beta<x,y>} = 1, SA = USA)
    attrs = {"title": f"bifurcations of {name} on {domain_name(plan)} in {parameter}",
             "geometry": plan["geometry"], "model": model,
             "parameter": parameter, "critical_kappa": np.array(plan["critical_kappa"]),
             "value": plan.get("value", 1.0)}
    if plan.get("dim") is not None:
        attrs["dim"] = int(plan["dim"])
    if parameter == "beta":
        attrs["critical_beta"] = np.array(plan["critical_beta"])
        attrs["kappa"] = plan["kappa"]
    else:
        attrs["beta"] = plan["beta"]
    return attrs


def domain_name(plan: dict) -> str:
    """"the circle", "the sphere" or "zonal S^{d-1} (d = 8)": the domain in a title."""
    if plan["geometry"] == "zonal":
        return f"zonal S^{plan['dim'] - 1} (d = {plan['dim']})"
    return f"the {plan['geometry']}"


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
