"""The core sections of a config and the tasks that take them (defaults in brackets)::

    [model]           beta [1.0] in [0, 1e8] (checkers.MAX_BETA), kappa ["inf"] > 0 or
                      "inf", normalized [true]
    [domain]          geometry ["circle" | "sphere"], dim: the particles' R^d (circle: 2;
                      sphere: 3 [default], or any d > 3 for particle runs)
    [discretization]  method ["spectral" | "finite-volume"], resolution [256] >= 8
                      (circle: points; sphere spectral: band limit L <= 2047; sphere
                      finite volumes: cells, one of 10 4^k + 2),
                      negativity_tolerance [1e-6], cfl [0.8], threads ["auto"]
    [initial]         kind ["perturbed"] and the parameters of that kind
                      (``meanfield.config.initial``)
    [time]            t_final [5.0] > 0, dt ["auto"] > 0, save_every [t_final/100],
                      tolerance [1e-8] (error per step of the adaptive stepper)
    [particles]       n [1000; a token file: its rows] >= 2, seed [0] (initial tokens and
                      noise), architecture ["post-ln" | "pre-ln" | "hardmax"], sum_method
                      ["auto" | "direct" | "fourier" (circle) | "harmonic" (sphere, d = 3)],
                      accuracy [1e-10] of the fast interaction sums, ensemble [8] runs
                      (compare), cluster_threshold [1e-2] (chordal distance),
                      attention_rank [false], rank_tolerance [1e-6], bins ["auto"]
    [output]          path [none], checkpoint_every [60.0] seconds of wall time
    [parallel]        workers [1] (1: serial), scheduler [none] (address of a running
                      dask scheduler)

Tasks: evolve (model, domain, discretization, initial, time, output), particles (+
particles), compare (+ particles, parallel).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from meanfield.config import checkers as ck
from meanfield.config.initial import (
    INITIAL_KINDS,
    PARTICLE_ONLY_KINDS,
    validate_initial_section,
)
from meanfield.errors import ConfigError

GEOMETRIES = ("circle", "sphere")
METHODS = ("spectral", "finite-volume")
METHODS_BY_GEOMETRY = {"circle": METHODS, "sphere": METHODS}
# Finite volumes on the sphere use icosahedral Voronoi meshes of 10 4^k + 2 cells.
SPHERE_MESH_CELLS = tuple(10 * 4**k + 2 for k in range(1, 8))
ARCHITECTURES = ("post-ln", "pre-ln", "hardmax")
SUM_METHODS = ("auto", "direct", "fourier", "harmonic")
MAX_SPECTRAL_LMAX = 2047  # band limit of the spectral sphere solver
MAX_SEED = 2**63 - 1
MAX_USA_BETA = 700.0  # the USA velocity grows like e^beta: beyond, it overflows


@dataclass(frozen=True)
class Section:
    """One config section.

    Attributes:
        name: the TOML table name.
        keys: key -> (checker, default); a default of None means "absent".
        validator: ``(given, cfg, name) -> clean table``: checks the whole table instead of
            ``keys`` (``cfg`` holds the sections validated before it).
        finish: ``(cfg) -> None``: derived defaults and checks across keys and sections,
            run once this section is clean (``cfg`` holds it and the sections before it).
    """

    name: str
    keys: dict[str, tuple[ck.Checker, Any]] = field(default_factory=dict)
    validator: Callable[[dict, dict, str], dict] | None = None
    finish: Callable[[dict], None] | None = None


def _at_least(minimum: float, strict: bool = False, maximum: float | None = None
              ) -> ck.Checker:
    return lambda k, v: ck.finite_number(k, v, minimum=minimum, strict=strict,
                                         maximum=maximum)


def _count(minimum: int) -> ck.Checker:
    return lambda k, v: ck.integer(k, v, minimum=minimum)


def _finish_model(cfg: dict) -> None:
    m = cfg["model"]
    if not m["normalized"] and m["beta"] > MAX_USA_BETA:
        raise ConfigError(f"model.beta = {m['beta']!r}: the unnormalized (USA) velocity grows "
                          "like e^beta and overflows beyond beta = 700; use normalized = true",
                          "model.beta")


def _finish_domain(cfg: dict) -> None:
    """Fill in ``domain.dim`` (2 on the circle, 3 on the sphere) and check it."""
    domain = cfg["domain"]
    geometry, dim = domain["geometry"], domain["dim"]
    if geometry == "circle":
        if dim not in (None, 2):
            raise ConfigError(f"domain.dim = {dim!r}: the circle S^1 lives in R^2, so dim "
                              "must be 2; use geometry = \"sphere\" for S^{d-1}, d >= 3",
                              "domain.dim")
        domain["dim"] = 2
    elif dim is None:
        domain["dim"] = 3
    elif dim < 3:
        raise ConfigError(f"domain.dim = {dim!r}: the sphere S^{{d-1}} needs d >= 3 (d = 2 is "
                          "geometry = \"circle\")", "domain.dim")


def _registered_methods(geometry: str | None = None) -> tuple[str, ...]:
    """The methods of the registered discretizations (on ``geometry``): the registry is
    imported late, as it imports the solvers (and a new entry adds a method)."""
    from meanfield.discretizations.base import Discretization
    pairs = Discretization.registered()
    return tuple(dict.fromkeys(m for g, m in pairs if geometry in (None, g)))


def _method(key: str, value: Any) -> str:
    return ck.choice(_registered_methods())(key, value)


def _finish_discretization(cfg: dict) -> None:
    geometry, method = cfg["domain"]["geometry"], cfg["discretization"]["method"]
    if method not in _registered_methods(geometry):
        raise ConfigError(f"discretization.method = {method!r} is not available on the "
                          f"{geometry} yet; available: "
                          + ", ".join(repr(m) for m in _registered_methods(geometry)),
                          "discretization.method")
    res = cfg["discretization"]["resolution"]
    if geometry == "sphere" and method == "spectral" and res > MAX_SPECTRAL_LMAX:
        raise ConfigError(f"discretization.resolution = {res} is the band limit of the "
                          f"spectral sphere solver and must be <= {MAX_SPECTRAL_LMAX}",
                          "discretization.resolution")
    if geometry == "sphere" and method == "finite-volume" and res not in SPHERE_MESH_CELLS:
        raise ConfigError(f"discretization.resolution = {res} is the number of cells of the "
                          "icosahedral finite-volume mesh; accepted: "
                          + ", ".join(str(c) for c in SPHERE_MESH_CELLS),
                          "discretization.resolution")


def _finish_time(cfg: dict) -> None:
    t = cfg["time"]
    if t["save_every"] is None:
        t["save_every"] = t["t_final"] / 100
    if t["save_every"] > t["t_final"]:
        raise ConfigError(f"time.save_every = {t['save_every']!r} must be <= time.t_final "
                          f"= {t['t_final']!r}", "time.save_every")
    if t["dt"] != "auto" and t["dt"] > t["save_every"]:
        raise ConfigError(f"time.dt = {t['dt']!r} must be <= time.save_every = "
                          f"{t['save_every']!r}", "time.dt")


def _scheduler(key: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{key} = {ck.describe(value)} must be the address of a dask scheduler "
                          "(a non-empty string, e.g. \"tcp://127.0.0.1:8786\")", key)
    return value


CORE_SECTIONS: tuple[Section, ...] = (
    Section("model", {
        "beta": (ck.beta, 1.0),
        "kappa": (ck.kappa, math.inf),
        "normalized": (ck.boolean, True),
    }, finish=_finish_model),
    Section("domain", {
        "geometry": (ck.choice(GEOMETRIES), "circle"),
        "dim": (_count(2), None),
    }, finish=_finish_domain),
    Section("discretization", {
        "method": (_method, "spectral"),
        "resolution": (_count(8), 256),
        "negativity_tolerance": (_at_least(0.0), 1e-6),
        "cfl": (_at_least(0.0, strict=True, maximum=1.0), 0.8),
        "threads": (ck.threads, "auto"),
    }, finish=_finish_discretization),
    Section("initial", validator=validate_initial_section),
    Section("time", {
        # 5, not 10: without noise (kappa = inf) the default perturbed density collapses
        # toward a point mass, faster and faster; by t = 8 (sphere) or 8.9 (circle) the
        # default resolution no longer carries it and the run stops. At t = 5 the cluster
        # is forming and resolved (peak 2.5 times the uniform density on the circle, 8
        # times on the sphere, even at band limit 64).
        "t_final": (_at_least(0.0, strict=True), 5.0),
        "dt": (ck.auto_or_positive, "auto"),
        "save_every": (_at_least(0.0, strict=True), None),
        "tolerance": (_at_least(0.0, strict=True, maximum=1e-1), 1e-8),
    }, finish=_finish_time),
    Section("particles", {
        "n": (_count(2), None),
        # (the seed is stored in the result's attributes: netCDF holds 64-bit integers)
        "seed": (lambda k, v: ck.integer(k, v, minimum=0, maximum=MAX_SEED), 0),
        "architecture": (ck.choice(ARCHITECTURES), "post-ln"),
        "sum_method": (ck.choice(SUM_METHODS), "auto"),
        "accuracy": (_at_least(1e-14, maximum=1e-2), 1e-10),
        "ensemble": (_count(1), 8),
        "cluster_threshold": (_at_least(0.0, strict=True, maximum=2.0), 1e-2),
        "attention_rank": (ck.boolean, False),
        "rank_tolerance": (_at_least(0.0, strict=True, maximum=1.0), 1e-6),
        "bins": (ck.auto_or_count, "auto"),
    }),
    Section("output", {
        "path": (ck.path, None),
        "checkpoint_every": (_at_least(0.0, strict=True), 60.0),
    }),
    Section("parallel", {
        "workers": (_count(1), 1),
        "scheduler": (_scheduler, None),
    }),
)

_PDE = ("model", "domain", "discretization", "initial", "time", "output")
CORE_TASKS: dict[str, tuple[str, ...]] = {
    "evolve": _PDE,
    "particles": _PDE + ("particles",),
    "compare": _PDE + ("particles", "parallel"),
}


def check_pde_dim(cfg: dict) -> None:
    """The PDE solvers work on S^1 and S^2 only, with initial densities (not token sets)."""
    if cfg["domain"]["dim"] > 3:
        raise ConfigError(f"domain.dim = {cfg['domain']['dim']}: the PDE solvers are for S^1 "
                          "(dim 2) and S^2 (dim 3); higher dimensions are for particle runs "
                          "(meanfield particles)", "domain.dim")
    kind = cfg["initial"]["kind"]
    if kind in PARTICLE_ONLY_KINDS:
        raise ConfigError(f"initial.kind = {kind!r} defines tokens, not a density: it is for "
                          "particle runs (meanfield particles); the PDE accepts "
                          + ", ".join(repr(k) for k in INITIAL_KINDS
                                      if k not in PARTICLE_ONLY_KINDS), "initial.kind")
