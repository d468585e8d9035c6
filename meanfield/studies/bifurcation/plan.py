"""The plan of the continuation study (``[bifurcation] mode = "continuation"``, and each
beta of ``mode = "map"``): the checks before any work, the branches to compute, the
closed-form critical points the branches are checked against, the discretization at the
start of the range, and the rule that turns the problems found into the run's outcome.

The plan is a dict: ``geometry``, ``parameter`` ("kappa" | "beta"), ``normalized``,
``branches`` (the (mode, sign) of the mode branches), ``value`` (the c of ``V = c I``),
``critical_kappa`` (per mode), ``dim`` (the d of a zonal S^{d-1}, None on S^1 and S^2)
and either ``beta`` (parameter kappa) or ``kappa`` and ``critical_beta`` (parameter
beta). ``meanfield.studies.bifurcation.study`` and
``meanfield.studies.bifurcation.parameter_map`` both read it, and import it from here.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import xarray as xr
from scipy import optimize

from meanfield import config as cfgmod
from meanfield.discretizations.base import Discretization, model_value
from meanfield.errors import ConfigError
from meanfield.studies.bifurcation import stationary_linear as lin


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
    dim = int(cfg["domain"]["dim"]) if geometry == "zonal" else None
    cls = Discretization.from_name(geometry, "spectral")
    if not cls.resolves(cfg["discretization"]["resolution"], top_beta, dim):
        raise ConfigError(f"discretization.resolution = {cfg['discretization']['resolution']}"
                          f" is too small for beta = {top_beta:g}: the kernel needs "
                          f">= {cls.needed_resolution(top_beta, dim)}",
                          "discretization.resolution")
    value = model_value(cfg)
    plan: dict[str, Any] = {"geometry": geometry, "parameter": parameter,
                            "normalized": bool(m["normalized"]),
                            "branches": branch_signs(geometry, b["modes"], dim),
                            "value": value, "dim": dim}
    if parameter == "kappa":
        plan["beta"] = float(m["beta"])
        plan["critical_kappa"] = [lin.critical_kappa(geometry, m["beta"], m["normalized"],
                                                     k, value, dim)
                                  for k in range(1, b["modes"] + 1)]
    else:
        plan["kappa"] = float(m["kappa"])
        plan["critical_beta"] = [analytic_critical_beta(geometry, m["kappa"],
                                                        m["normalized"], k, b["start"],
                                                        b["stop"], value, dim)
                                 for k in range(1, b["modes"] + 1)]
        plan["critical_kappa"] = [m["kappa"] if math.isfinite(x) else math.nan
                                  for x in plan["critical_beta"]]
    return plan


def branch_signs(geometry: str, modes: int, dim: int | None = None
                 ) -> list[tuple[int, int]]:
    """The (mode, sign) of the branches shed at modes 1..``modes``: two for an even
    degree on S^2 and on a zonal S^{d-1} with d >= 3 (``P_l`` and ``-P_l`` are different
    states: no rotation maps one to the other, and the reflection ``t -> -t`` keeps an
    even ``P_l``), one otherwise (on S^1 a rotation by pi/k flips c_k, and on the zonal
    S^1, d = 2, it keeps the even states of a k-fold symmetric branch; an odd ``P_l`` is
    flipped by ``t -> -t``)."""
    signs = []
    for k in range(1, modes + 1):
        both = k % 2 == 0 and (geometry == "sphere" or (geometry == "zonal" and dim > 2))
        signs += [(k, 1), (k, -1)] if both else [(k, 1)]
    return signs


def analytic_critical_beta(geometry: str, kappa: float, normalized: bool, mode: int,
                           start: float, stop: float, value: float = 1.0,
                           dim: int | None = None) -> float:
    """The beta in ``[start, stop]`` where ``critical_kappa(beta) = kappa`` (brentq on a
    grid of 64 intervals; the first root), NaN if none (always for ``value <= 0``)."""
    if value <= 0:
        return math.nan

    def gap(beta: float) -> float:
        return value * lin.attraction_coefficient(geometry, beta, normalized, mode, dim) \
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

def plan_branches(plan: dict) -> list[tuple[int, int]]:
    """The (mode, sign) of the mode branches, in order."""
    return [tuple(x) for x in plan["branches"]]


def kappa_beta(plan: dict, parameter: str, value: float) -> tuple[float, float]:
    """(kappa, beta) of a point at parameter value ``value``."""
    if parameter == "kappa":
        return float(value), plan["beta"]
    return plan["kappa"], float(value)


def set_parameter(disc, parameter: str, value: float) -> None:
    """Set the continued parameter (``"beta"`` or ``"kappa"``) of ``disc`` to ``value``,
    unless it holds that value already."""
    current = disc.parameters[0 if parameter == "beta" else 1]
    if current != value:
        disc.set_parameters(**{parameter: float(value)})


def finished_with_problems(ds: xr.Dataset) -> tuple[int, str]:
    """The outcome of a finished study (``RunTask.outcome``): ``status`` 1 and the
    problems in ``message`` when a check failed or a branch's Newton did (the attr
    ``problems``), else 0."""
    problems = ds.attrs.get("problems", "")
    return (1, f"finished with problems: {problems}") if problems else (0, "finished")
