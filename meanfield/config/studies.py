"""The sections of the studies (docs/datasets.md) and the tasks that take them.

    [convergence]   n [[100, 1000, 10000]] token counts (a list or {start, stop, num}),
                    replicas [8] per n (i.i.d. starts; one for quantile points), p [1.0]
                    of W_p (1 or 2), points ["iid" | "quantile" (circle: the quantiles
                    (i - 1/2)/n of the initial density, deterministic)], reference [2]
                    (sphere, p = 2: the density is quantised into reference x n equal-
                    mass atoms and W2 solved as an exact assignment; 0: the density's
                    grid atoms and the network simplex, an O(h) error)

    [contraction]   beta [[0.5, 1.0, 2.0]] (a list or {start, stop, num}, >= 0), sources
                    [["pde", "particles"]] (a non-empty subset), fit_below [0.1] and
                    fit_above [1e-8] (rad: the tail rate is fitted where the distance lies
                    between them), other [absent] (a second initial density, an
                    [initial] table: the distance between the two solutions is added),
                    pde ["grid" | "characteristics"] (the PDE source: the
                    [discretization], or on S^1 without noise the density carried by its
                    labels along the characteristics, which resolves the far side)

    [bifurcation]   parameter ["kappa" | "beta"] (the other one fixed by [model]; "beta"
                    needs a finite model.kappa), start ["auto"], stop ["auto"] (numbers,
                    start < stop, kappa > 0, beta >= 0; "auto": for kappa [kappa_c/2,
                    2 kappa_c] over the finite thresholds of modes 1..modes, so that
                    every pitchfork is inside (zonal S^{d-1}: [d/2, 2d] at beta = 0;
                    with a list of dimensions in domain.dim, for each d), else [1, 4]), modes [1] (branches from the uniform state for
                    the Fourier modes / degrees 1..modes; below the resolution), mode
                    ["continuation" | "scan" | "map"], ds [0.05] > 0 and ds_max [0.1] >= ds
                    (arclength steps), points [200] >= 2 (per branch), stride [10] >= 1
                    (states saved every stride points), tolerance [1e-10] > 0 (Newton);
                    scan: scan_num [41] >= 2 parameter values, scan_starts [["uniform",
                    "clustered"]] (a non-empty subset), scan_t_max [2000.0] > 0,
                    scan_tolerance [1e-9] > 0 (steady when ||F|| is below it); map: the
                    second parameter (beta when parameter = "kappa", else kappa)
                    map_start [0.0], map_stop [4.0], map_num [9] >= 2. Needs
                    discretization.method = "spectral".

Tasks: convergence, contraction, bifurcation (model, domain, discretization, initial,
time, output, particles, parallel, and their own section). The sections of the token
studies (phase_diagram, normalization, long_context, metastability) are
``meanfield.config.token_studies``; ``STUDY_SECTIONS``, ``STUDY_TASKS`` and
``STUDY_TASK_CHECKS`` here hold those of every study.
"""
from __future__ import annotations

import math

from meanfield.config import checkers as ck
from meanfield.config.sections import (
    CORE_TASKS,
    Section,
    check_pde_task,
    check_token_sphere_geometry,
)
from meanfield.config.thresholds import critical_kappa
from meanfield.config.landscape_studies import (LANDSCAPE_STUDY_SECTIONS,
                                                LANDSCAPE_STUDY_TASKS)
from meanfield.config.token_studies import TOKEN_STUDY_SECTIONS, TOKEN_STUDY_TASKS
from meanfield.config.correlation_study import (CORRELATION_STUDY_SECTIONS,
                                                CORRELATION_STUDY_TASKS,
                                                check_correlations_task)
from meanfield.config.study_weights import check_study_weights
from meanfield.config.weights import head_specs, is_identity, pde_value_scale
from meanfield.errors import ConfigError

POINTS = ("iid", "quantile")
SOURCES = ("pde", "particles")
PDES = ("grid", "characteristics")  # contraction.pde


def _token_counts(key: str, value) -> list[int]:
    """Token counts: a list of integers >= 2 or a range {start, stop, num} (sorted, repeats
    dropped)."""
    counts = ck.list_or_range(key, value, minimum=2, integers=True)
    return sorted({int(n) for n in counts})


def _p(key: str, value) -> float:
    """1 or 2 (the order of the study's distance).

    Any other value, 1e308 included, is refused before the study starts."""
    p = ck.finite_number(key, value)
    if p not in (1, 2):
        raise ConfigError(f"{key} = {ck.describe(value)}: the convergence study measures "
                          "W_1 or W_2; use p = 1 or 2", key)
    return p


def _finish_convergence(cfg: dict) -> None:
    c = cfg["convergence"]
    if c["points"] == "quantile" and cfg["domain"]["geometry"] != "circle":
        raise ConfigError("convergence.points = \"quantile\" is for the circle (the "
                          "quantiles of a density on S^1); with domain.geometry = "
                          f"\"{cfg['domain']['geometry']}\" give convergence.points = "
                          "\"iid\"", "convergence.points")


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
    return ck.accepting("a non-empty list of distinct names from "
                        + ", ".join(repr(c) for c in choices), check)


def _table(key: str, value) -> dict:
    """A table in the form of [initial] (kind and its parameters)."""
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


def _auto_or_number(key: str, value):
    """"auto" or a finite number."""
    if isinstance(value, str) and value == "auto":
        return "auto"
    return ck.finite_number(key, value)


# "auto" range of a continuation in kappa: [AUTO_BELOW min kappa_c, AUTO_ABOVE max kappa_c]
AUTO_BELOW, AUTO_ABOVE = 0.5, 2.0
AUTO_FALLBACK = (1.0, 4.0)  # (beta, or no finite threshold)


def _auto_range(cfg: dict) -> None:
    """Replaces ``bifurcation.start/stop = "auto"`` by numbers: for the parameter kappa,
    ``[kappa_c/2, 2 kappa_c]`` over the finite closed-form thresholds ``kappa_c = 1/(c
    a_k)`` of modes 1..modes at model.beta (c of [weights]), so that every pitchfork lies
    inside (noisy Kuramoto: kappa_c = 2, [1, 4]; on a zonal S^{d-1} d, [d/2, 2d]); else,
    and for beta, [1, 4]. A single "auto" end is put beside the given one when the
    derived value would not be. With a list of zonal dimensions (a study across d) an
    "auto" end of a range in kappa stays "auto": the study derives it for each d."""
    b, model = cfg["bifurcation"], cfg["model"]
    if b["start"] != "auto" and b["stop"] != "auto":
        return
    geometry, dim = cfg["domain"]["geometry"], cfg["domain"]["dim"]
    if isinstance(dim, list) and b["parameter"] == "kappa":
        return
    low, high = AUTO_FALLBACK
    if b["parameter"] == "kappa":
        try:
            value = float(pde_value_scale(cfg))
            kcs = [critical_kappa(geometry, model["beta"], model["normalized"], k, value,
                                  dim if geometry == "zonal" else None)
                   for k in range(1, b["modes"] + 1)]
        except (ValueError, ArithmeticError):  # (ConfigError, a geometry other than
            kcs = []  # S^1/S^2: refused later, by the checks of the task)
        kcs = [k for k in kcs if math.isfinite(k) and k > 0]
        if kcs:
            low, high = AUTO_BELOW * min(kcs), AUTO_ABOVE * max(kcs)
    if b["start"] == "auto":
        b["start"] = low if b["stop"] == "auto" or low < b["stop"] else b["stop"] / 2
    if b["stop"] == "auto":
        b["stop"] = high if high > b["start"] else 2 * b["start"] + 1.0


def _finish_bifurcation(cfg: dict) -> None:
    """Checks across keys and sections: the range ("auto" ends derived from kappa_c),
    the method, the noise, the modes."""
    _auto_range(cfg)
    b, model = cfg["bifurcation"], cfg["model"]
    parameter = b["parameter"]
    if "auto" in (b["start"], b["stop"]):  # (a list of dimensions: see _auto_range)
        _finish_bifurcation_keys(cfg)
        return
    if b["start"] >= b["stop"]:
        raise ConfigError(f"bifurcation.start = {b['start']:g}, stop = {b['stop']:g}: a "
                          "reversed/empty range; give start < stop", "bifurcation.start")
    if parameter == "kappa" and b["start"] <= 0:
        raise ConfigError(f"bifurcation.start = {b['start']:g}: kappa (the inverse noise) "
                          "must be > 0", "bifurcation.start")
    if parameter == "beta" and b["start"] < 0:
        raise ConfigError(f"bifurcation.start = {b['start']:g}: beta must be >= 0",
                          "bifurcation.start")
    if parameter == "beta":
        ck.beta("bifurcation.stop", b["stop"])
    if parameter == "beta" and not math.isfinite(model["kappa"]):
        raise ConfigError("bifurcation.parameter = \"beta\" holds kappa fixed at "
                          "model.kappa, which is \"inf\" (no noise, no stationary states "
                          "but Diracs); give a finite model.kappa, e.g. 4.0", "model.kappa")
    _finish_bifurcation_keys(cfg)


def _finish_bifurcation_keys(cfg: dict) -> None:
    """The checks of [bifurcation] that do not depend on the range: the steps, the map's
    range, the modes against the resolution."""
    b, parameter = cfg["bifurcation"], cfg["bifurcation"]["parameter"]
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
        if second == "beta":
            ck.beta("bifurcation.map_stop", b["map_stop"])
    # (discretization.method = "spectral" is checked by the study itself: a config
    # validated for every section (no task) holds [bifurcation]'s defaults too)
    disc = cfg["discretization"]
    geometry, resolution = cfg["domain"]["geometry"], disc["resolution"]
    if resolution == "auto":  # (the study refuses it: bifurcation.plan)
        return
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
        "replicas": (ck.integer_in(1, 10_000), 8),
        "p": (_p, 1.0),
        "points": (ck.choice(POINTS), "iid"),
        "reference": (ck.integer_in(0, 16), 2),
    }, finish=_finish_convergence),
    Section("contraction", {
        "beta": (ck.accepting(f"{ck.LIST_TEXT} >= 0 and <= {ck.shown_number(ck.MAX_BETA)}, or {ck.RANGE_TEXT}",
                              lambda k, v: ck.betas(ck.list_or_range(k, v, minimum=0.0), k)),
                 [0.5, 1.0, 2.0]),
        "sources": (_subset(SOURCES, "source"), ["pde", "particles"]),
        "fit_below": (ck.number_in(0.0, True), 0.1),
        "fit_above": (ck.number_in(0.0, True), 1e-8),
        "other": (_table, None),
        "pde": (ck.choice(PDES), "grid"),
    }, finish=_finish_contraction),
    Section("bifurcation", {
        "parameter": (ck.choice(PARAMETERS), "kappa"),
        "start": (_auto_or_number, "auto"),
        "stop": (_auto_or_number, "auto"),
        "modes": (ck.integer_in(1), 1),
        "mode": (ck.choice(BIFURCATION_MODES), "continuation"),
        "ds": (ck.positive, 0.05),
        "ds_max": (ck.positive, 0.1),  # (0.5 drew the branches as polygons of ~11 points)
        "points": (ck.integer_in(2, 1_000_000), 200),
        "stride": (ck.integer_in(1), 10),
        "tolerance": (ck.positive, 1e-10),
        "scan_num": (ck.integer_in(2, ck.MAX_RANGE_NUM), 41),
        "scan_starts": (_subset(SCAN_STARTS, "start"), ["uniform", "clustered"]),
        "scan_t_max": (ck.positive, 2000.0),
        "scan_tolerance": (ck.positive, 1e-9),
        "map_start": (ck.finite_number, 0.0),
        "map_stop": (ck.finite_number, 4.0),
        "map_num": (ck.integer_in(2, ck.MAX_RANGE_NUM), 9),
    }, finish=_finish_bifurcation),
) + TOKEN_STUDY_SECTIONS + LANDSCAPE_STUDY_SECTIONS + CORRELATION_STUDY_SECTIONS

# [weights] (V = c I on the PDE): the bifurcation study; the contraction study measures
# tokens against the PDE with rates of Q = K = V = I, so it takes none; the convergence
# study takes general weights for tokens in R^d only (``check_convergence_task``).
_TOKENS_AND_PDE = tuple(s for s in CORE_TASKS["compare"] if s != "weights")
STUDY_TASKS: dict[str, tuple[str, ...]] = {
    "convergence": _TOKENS_AND_PDE + ("weights", "convergence"),
    "contraction": _TOKENS_AND_PDE + ("contraction",),
    "bifurcation": CORE_TASKS["compare"] + ("bifurcation",),
    **TOKEN_STUDY_TASKS,
    **LANDSCAPE_STUDY_TASKS,
    **CORRELATION_STUDY_TASKS,
}


def check_convergence_task(cfg: dict, task: str | None = None) -> None:
    """The convergence study: on S^1 and S^2 tokens against the PDE of Q = K = V = I (no
    [weights]: Dobrushin's bound and the rates are those of that model); tokens in R^d
    (geometry "euclidean") against the exact Gaussian mean field, which needs Gaussian
    tokens and one head without a mask or rescaling (``studies.transport.gaussian_convergence``)."""
    if cfg["domain"]["geometry"] != "euclidean":
        check_pde_task(cfg, task)
        if not is_identity(cfg):
            raise ConfigError("[weights]: the convergence study on the circle and sphere "
                              "measures tokens against the PDE of Q = K = V = I; general "
                              "weights are measured in R^d against the Gaussian mean field "
                              "(domain.geometry = \"euclidean\", initial.kind = "
                              "\"gaussian\")", "weights")
        return
    kind = cfg["initial"]["kind"]
    if kind != "gaussian":
        raise ConfigError(f"initial.kind = {kind!r}: the convergence study of tokens in R^d "
                          "measures them against the exact Gaussian mean field; use "
                          "initial.kind = \"gaussian\"", "initial.kind")
    if len(head_specs(cfg)) != 1:
        raise ConfigError("weights.heads: the Gaussian mean field of the convergence study "
                          "is that of one head; give query, key, value", "weights.heads")
    p = cfg["particles"]
    for key, value, default in (("mask", p["mask"], "none"), ("rescaled", p["rescaled"], False),
                                ("save_attention", p["save_attention"], False)):
        if value != default:
            shown = [str(v).lower() if isinstance(v, bool) else f'"{v}"' for v in (value, default)]
            raise ConfigError(f"particles.{key} = {shown[0]}: the convergence study measures the "
                              f"pure flow x of all tokens attending to all; use {key} = "
                              f"{shown[1]}", f"particles.{key}")


# The checks of a whole validated config of a study (``registry.validate``): the studies
# of the PDE and those with a [domain] work on S^1 and S^2 (tokens in R^d: particles only).
STUDY_TASK_CHECKS = {
    "convergence": check_convergence_task,
    "contraction": check_pde_task,
    "bifurcation": check_pde_task,
    "metastability": check_token_sphere_geometry,
    # [weights] of the studies of many systems (random weights per system)
    "phase_diagram": check_study_weights,
    "normalization": check_study_weights,
    "correlations": check_correlations_task,
}
