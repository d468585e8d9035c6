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

Tasks: convergence, contraction (model, domain, discretization, initial, time, output,
particles, parallel, and their own section).
"""
from __future__ import annotations

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


def _sources(key: str, value) -> list[str]:
    if not isinstance(value, (list, tuple)) or not value:
        raise ConfigError(f"{key} = {ck.describe(value)} must be a non-empty list of "
                          f"{', '.join(repr(s) for s in SOURCES)}", key)
    names = [ck.choice(SOURCES)(f"{key}[{i}]", v) for i, v in enumerate(value)]
    if len(set(names)) != len(names):
        raise ConfigError(f"{key} = {ck.describe(value)} names a source twice", key)
    return [s for s in SOURCES if s in names]  # a fixed order: the dataset's source axis


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
        "sources": (_sources, ["pde", "particles"]),
        "fit_below": (lambda k, v: ck.finite_number(k, v, minimum=0.0, strict=True), 0.1),
        "fit_above": (lambda k, v: ck.finite_number(k, v, minimum=0.0, strict=True), 1e-8),
        "other": (_table, None),
    }, finish=_finish_contraction),
)

STUDY_TASKS: dict[str, tuple[str, ...]] = {
    "convergence": CORE_TASKS["compare"] + ("convergence",),
    "contraction": CORE_TASKS["compare"] + ("contraction",),
}
