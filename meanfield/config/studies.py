"""The sections of the studies (DESIGN.md section 3) and the tasks that take them.

    [convergence]   n [[100, 1000, 10000]] token counts (a list or {start, stop, num}),
                    replicas [8] per n (i.i.d. starts; one for quantile points), p [1.0]
                    of W_p (>= 1), points ["iid" | "quantile" (circle: the quantiles
                    (i - 1/2)/n of the initial density, deterministic)], reference [2]
                    (sphere, p = 2: the density is quantised into reference x n equal-
                    mass atoms and W2 solved as an exact assignment; 0: the density's
                    grid atoms and the network simplex, an O(h) error)

    [contraction]   beta [[0.5, 1.0, 2.0]] (a list or {start, stop, num}, >= 0), sources
                    [["pde", "particles"]] (a non-empty subset), fit_below [0.1] and
                    fit_above [1e-8] (rad: the tail rate is fitted where the distance lies
                    between them), other [absent] (a second initial density, an
                    [initial] table: the distance between the two solutions is added)

    [bifurcation]   parameter ["kappa" | "beta"] (the other one fixed by [model]; "beta"
                    needs a finite model.kappa), start [1.0], stop [4.0] (start < stop;
                    kappa > 0, beta >= 0), modes [1] (branches from the uniform state for
                    the Fourier modes / degrees 1..modes; below the resolution), mode
                    ["continuation" | "scan" | "map"], ds [0.05] > 0 and ds_max [0.5] >= ds
                    (arclength steps), points [200] >= 2 (per branch), stride [10] >= 1
                    (states saved every stride points), tolerance [1e-10] > 0 (Newton);
                    scan: scan_num [41] >= 2 parameter values, scan_starts [["uniform",
                    "clustered"]] (a non-empty subset), scan_t_max [2000.0] > 0,
                    scan_tolerance [1e-9] > 0 (steady when ||F|| is below it); map: the
                    second parameter (beta when parameter = "kappa", else kappa)
                    map_start [0.0], map_stop [4.0], map_num [9] >= 2. Needs
                    discretization.method = "spectral".

Tasks: convergence, contraction, bifurcation (model, domain, discretization, initial,
time, output, particles, parallel, and their own section).
"""
from __future__ import annotations

import math

from meanfield.config import checkers as ck
from meanfield.config.sections import CORE_TASKS, Section
from meanfield.errors import ConfigError

POINTS = ("iid", "quantile")
SOURCES = ("pde", "particles")


def _token_counts(key: str, value) -> list[int]:
    counts = ck.list_or_range(key, value, minimum=2, integers=True)
    return sorted({int(n) for n in counts})


def _p(key: str, value) -> float:
    p = ck.finite_number(key, value)
    if p < 1:
        raise ConfigError(f"{key} = {p!r}: W_p is a distance for p >= 1 only; use p = 1 or 2",
                          key)
    return p


def _finish_convergence(cfg: dict) -> None:
    c = cfg["convergence"]
    if c["points"] == "quantile" and cfg["domain"]["geometry"] != "circle":
        raise ConfigError("convergence.points = \"quantile\" is for the circle (the "
                          "quantiles of a density on S^1); use \"iid\" on the sphere",
                          "convergence.points")


def _subset(choices: tuple[str, ...], noun: str):
    """The checker of a non-empty list of distinct names from ``choices``, returned in
    the order of ``choices`` (a fixed order: a dataset axis is built from it)."""
    def check(key: str, value) -> list[str]:
        if not isinstance(value, (list, tuple)) or not value:
            raise ConfigError(f"{key} = {ck.describe(value)} must be a non-empty list of "
                              f"{', '.join(repr(s) for s in choices)}", key)
        names = [ck.choice(choices)(f"{key}[{i}]", v) for i, v in enumerate(value)]
        if len(set(names)) != len(names):
            raise ConfigError(f"{key} = {ck.describe(value)} names a {noun} twice", key)
        return [s for s in choices if s in names]
    return check


def _table(key: str, value) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(f"{key} = {ck.describe(value)} must be a table in the form of "
                          "[initial] (kind and its parameters)", key)
    return dict(value)


def _finish_contraction(cfg: dict) -> None:
    c = cfg["contraction"]
    if c["fit_above"] >= c["fit_below"]:
        raise ConfigError(f"contraction.fit_above = {c['fit_above']:g} must be below "
                          f"contraction.fit_below = {c['fit_below']:g} (the fitted window of "
                          "distances, in rad)", "contraction.fit_above")
    if c["other"] is not None:
        from meanfield.config.initial import validate_initial

        domain = cfg["domain"]
        c["other"] = validate_initial(c["other"], domain["geometry"], domain["dim"],
                                      "contraction.other")


PARAMETERS = ("kappa", "beta")
BIFURCATION_MODES = ("continuation", "scan", "map")
SCAN_STARTS = ("uniform", "clustered")


def _positive(k, v):
    return ck.finite_number(k, v, minimum=0.0, strict=True)


def _finish_bifurcation(cfg: dict) -> None:
    """Checks across keys and sections: the range, the method, the noise, the modes."""
    b, model = cfg["bifurcation"], cfg["model"]
    parameter = b["parameter"]
    if b["start"] >= b["stop"]:
        raise ConfigError(f"bifurcation.start = {b['start']:g}, stop = {b['stop']:g}: a "
                          "reversed/empty range; give start < stop", "bifurcation.start")
    if parameter == "kappa" and b["start"] <= 0:
        raise ConfigError(f"bifurcation.start = {b['start']:g}: kappa (the inverse noise) "
                          "must be > 0", "bifurcation.start")
    if parameter == "beta" and b["start"] < 0:
        raise ConfigError(f"bifurcation.start = {b['start']:g}: beta must be >= 0",
                          "bifurcation.start")
    if parameter == "beta" and not math.isfinite(model["kappa"]):
        raise ConfigError("bifurcation.parameter = \"beta\" holds kappa fixed at "
                          "model.kappa, which is \"inf\" (no noise, no stationary states "
                          "but Diracs); give a finite model.kappa, e.g. 4.0", "model.kappa")
    if b["ds_max"] < b["ds"]:
        raise ConfigError(f"bifurcation.ds_max = {b['ds_max']:g} must be >= bifurcation.ds "
                          f"= {b['ds']:g}", "bifurcation.ds_max")
    if b["mode"] == "map":  # (the map's defaults are beta's: checked only for a map)
        if b["map_start"] >= b["map_stop"]:
            raise ConfigError(f"bifurcation.map_start = {b['map_start']:g}, map_stop = "
                              f"{b['map_stop']:g}: a reversed/empty range; give map_start "
                              "< map_stop", "bifurcation.map_start")
        second = "beta" if parameter == "kappa" else "kappa"
        if (b["map_start"] < 0 if second == "beta" else b["map_start"] <= 0):
            raise ConfigError(f"bifurcation.map_start = {b['map_start']:g}: {second} must "
                              f"be {'>= 0' if second == 'beta' else '> 0'}",
                              "bifurcation.map_start")
    # (discretization.method = "spectral" is checked by the study itself: a config
    # validated for every section (no task) holds [bifurcation]'s defaults too)
    disc = cfg["discretization"]
    geometry, resolution = cfg["domain"]["geometry"], disc["resolution"]
    # the highest mode a state carries: circle |k| < n/2 (the Nyquist mode is not part of
    # it), sphere degree <= L
    top = (resolution + 1) // 2 - 1 if geometry == "circle" else resolution
    if b["modes"] > top:
        raise ConfigError(f"bifurcation.modes = {b['modes']} is beyond the resolution: "
                          f"discretization.resolution = {resolution} carries "
                          f"{'Fourier modes' if geometry == 'circle' else 'degrees'} up to "
                          f"{top}; lower modes or raise the resolution", "bifurcation.modes")


STUDY_SECTIONS: tuple[Section, ...] = (
    Section("convergence", {
        "n": (_token_counts, [100, 1000, 10000]),
        "replicas": (lambda k, v: ck.integer(k, v, minimum=1, maximum=10_000), 8),
        "p": (_p, 1.0),
        "points": (ck.choice(POINTS), "iid"),
        "reference": (lambda k, v: ck.integer(k, v, minimum=0, maximum=16), 2),
    }, finish=_finish_convergence),
    Section("contraction", {
        "beta": (lambda k, v: ck.list_or_range(k, v, minimum=0.0), [0.5, 1.0, 2.0]),
        "sources": (_subset(SOURCES, "source"), ["pde", "particles"]),
        "fit_below": (lambda k, v: ck.finite_number(k, v, minimum=0.0, strict=True), 0.1),
        "fit_above": (lambda k, v: ck.finite_number(k, v, minimum=0.0, strict=True), 1e-8),
        "other": (_table, None),
    }, finish=_finish_contraction),
    Section("bifurcation", {
        "parameter": (ck.choice(PARAMETERS), "kappa"),
        "start": (ck.finite_number, 1.0),
        "stop": (ck.finite_number, 4.0),
        "modes": (lambda k, v: ck.integer(k, v, minimum=1), 1),
        "mode": (ck.choice(BIFURCATION_MODES), "continuation"),
        "ds": (_positive, 0.05),
        "ds_max": (_positive, 0.5),
        "points": (lambda k, v: ck.integer(k, v, minimum=2, maximum=1_000_000), 200),
        "stride": (lambda k, v: ck.integer(k, v, minimum=1), 10),
        "tolerance": (_positive, 1e-10),
        "scan_num": (lambda k, v: ck.integer(k, v, minimum=2, maximum=ck.MAX_RANGE_NUM), 41),
        "scan_starts": (_subset(SCAN_STARTS, "start"), ["uniform", "clustered"]),
        "scan_t_max": (_positive, 2000.0),
        "scan_tolerance": (_positive, 1e-9),
        "map_start": (ck.finite_number, 0.0),
        "map_stop": (ck.finite_number, 4.0),
        "map_num": (lambda k, v: ck.integer(k, v, minimum=2, maximum=ck.MAX_RANGE_NUM), 9),
    }, finish=_finish_bifurcation),
)

STUDY_TASKS: dict[str, tuple[str, ...]] = {
    "convergence": CORE_TASKS["compare"] + ("convergence",),
    "contraction": CORE_TASKS["compare"] + ("contraction",),
    "bifurcation": CORE_TASKS["compare"] + ("bifurcation",),
}
