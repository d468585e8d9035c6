"""The plan of the bifurcation scan (``[bifurcation] mode = "scan"``,
``meanfield.studies.bifurcation.scan``): its keys checked before any work (ConfigError
naming the key, the value and what is accepted) and what it does, a ``ScanPlan``: the
values of the parameter, the starts, the time limit and the tolerances."""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np

from meanfield import config as cfgmod
from meanfield.discretizations.base import Discretization
from meanfield.errors import ConfigError

STARTS = ("uniform", "clustered")
DIRECTIONS = ("up", "down")
PARAMETERS = ("kappa", "beta")
# Defaults of the scan's keys of [bifurcation] (the section's validator may fill them).
SCAN_DEFAULTS = {"scan_num": 41, "scan_starts": ["uniform", "clustered"],
                 "scan_t_max": 2000.0, "scan_tolerance": 1e-9, "tolerance": 1e-10}
POLISH_TOL = 1e-10  # Newton's tolerance at most: the polished state is stationary to this


def validated_config(cfg: dict) -> dict:
    """The config validated; should the registry not know ``[bifurcation]``, the other
    sections validated and it kept as given."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"a config must be a dict of sections, got {type(cfg).__name__}")
    section = cfg.get("bifurcation")
    if section is not None and not isinstance(section, dict):
        raise ConfigError("[bifurcation] must be a table of keys", "bifurcation")
    if "bifurcation" in cfgmod.SECTIONS:
        # (no task: a config the study validated already holds every section)
        out = cfgmod.validate(cfg)
    else:  # (until the section is registered)
        out = cfgmod.validate({k: v for k, v in cfg.items() if k != "bifurcation"})
        out["bifurcation"] = copy.deepcopy(section or {})
    return out


def _number(key: str, value, *, positive: bool = False, minimum: float | None = None
            ) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value):
        raise ConfigError(f"bifurcation.{key} = {value!r} must be a finite number",
                          f"bifurcation.{key}")
    if positive and value <= 0:
        raise ConfigError(f"bifurcation.{key} = {value!r} must be > 0", f"bifurcation.{key}")
    if minimum is not None and value < minimum:
        raise ConfigError(f"bifurcation.{key} = {value!r} must be >= {minimum:g}",
                          f"bifurcation.{key}")
    return float(value)


@dataclass(frozen=True)
class ScanPlan:
    """What a scan does (checked before any work)."""

    parameter: str
    values: tuple[float, ...]
    starts: tuple[str, ...]
    t_max: float
    tolerance: float
    polish_tol: float
    dt: float | None  # None: AUTO_DT, halved on failure

    @property
    def sweeps(self) -> tuple[str, ...]:
        return (*self.starts, *DIRECTIONS)


def scan_plan(cfg: dict) -> ScanPlan:
    """The scan of a validated config (``validated_config``); ConfigError on bad input."""
    b = {**SCAN_DEFAULTS, **{k: v for k, v in cfg["bifurcation"].items() if v is not None}}
    parameter = b.get("parameter", "kappa")
    if parameter not in PARAMETERS:
        raise ConfigError(f"bifurcation.parameter = {parameter!r} must be one of "
                          f"{', '.join(map(repr, PARAMETERS))}", "bifurcation.parameter")
    for key in ("start", "stop"):
        if key not in b:
            raise ConfigError(f"bifurcation.{key} is required (the {parameter} range)",
                              f"bifurcation.{key}")
    positive = parameter == "kappa"
    start = _number("start", b["start"], positive=positive, minimum=0.0)
    stop = _number("stop", b["stop"], positive=positive, minimum=0.0)
    if not stop > start:
        raise ConfigError(f"bifurcation.start = {start:g}, stop = {stop:g}: the range must "
                          "be increasing and not empty (give start < stop; the scan sweeps "
                          "both ways)", "bifurcation.stop")
    num = b["scan_num"]
    if isinstance(num, bool) or not isinstance(num, int) or num < 2:
        raise ConfigError(f"bifurcation.scan_num = {num!r} must be an integer >= 2",
                          "bifurcation.scan_num")
    starts = b["scan_starts"]
    if not isinstance(starts, (list, tuple)) or not starts:
        raise ConfigError(f"bifurcation.scan_starts = {starts!r} must be a non-empty list of "
                          f"{', '.join(map(repr, STARTS))}", "bifurcation.scan_starts")
    for i, s in enumerate(starts):
        if s not in STARTS:
            raise ConfigError(f"bifurcation.scan_starts[{i}] = {s!r} is not a start; use "
                              f"{', '.join(map(repr, STARTS))}", "bifurcation.scan_starts")
    if len(set(starts)) != len(starts):
        raise ConfigError(f"bifurcation.scan_starts = {starts!r} names a start twice",
                          "bifurcation.scan_starts")
    t_max = _number("scan_t_max", b["scan_t_max"], positive=True)
    tolerance = _number("scan_tolerance", b["scan_tolerance"], positive=True)
    newton = _number("tolerance", b["tolerance"], positive=True)
    if parameter == "beta" and not cfg["model"]["normalized"] \
            and stop > cfgmod.MAX_USA_BETA:
        raise ConfigError(f"bifurcation.stop = {stop:g}: the USA velocity overflows beyond "
                          f"beta = {cfgmod.MAX_USA_BETA:g}", "bifurcation.stop")
    if not math.isfinite(cfg["model"]["kappa"]) and parameter == "beta":
        raise ConfigError("a scan in beta needs noise: give model.kappa (stationary states "
                          "of the noisy model)", "model.kappa")
    if cfg["discretization"]["method"] != "spectral":
        raise ConfigError("the scan polishes its states by Newton on the spectral "
                          "discretization: give discretization.method = \"spectral\"",
                          "discretization.method")
    cfgmod.check_pde_dim(cfg)
    # the resolution must carry the kernel at the largest beta (before any work)
    top_beta = stop if parameter == "beta" else cfg["model"]["beta"]
    geometry = cfg["domain"]["geometry"]
    Discretization.from_name(geometry, "spectral").check_resolution(
        cfg["discretization"]["resolution"], top_beta,
        cfg["domain"]["dim"] if geometry == "zonal" else None)
    values = tuple(float(v) for v in np.linspace(start, stop, num))
    dt = cfg["time"]["dt"]
    return ScanPlan(parameter, values, tuple(starts), t_max, tolerance,
                    min(newton, POLISH_TOL), None if dt == "auto" else float(dt))
