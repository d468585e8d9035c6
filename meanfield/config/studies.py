"""The sections of the studies (DESIGN.md section 3) and the tasks that take them.

    [convergence]   n [[100, 1000, 10000]] token counts (a list or {start, stop, num}),
                    replicas [8] per n (i.i.d. starts; one for quantile points), p [1.0]
                    of W_p (>= 1), points ["iid" | "quantile" (circle: the quantiles
                    (i - 1/2)/n of the initial density, deterministic)]

Task: convergence (model, domain, discretization, initial, time, output, particles,
parallel, convergence).
"""
from __future__ import annotations

from meanfield.config import checkers as ck
from meanfield.config.sections import CORE_TASKS, Section
from meanfield.errors import ConfigError

POINTS = ("iid", "quantile")


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


STUDY_SECTIONS: tuple[Section, ...] = (
    Section("convergence", {
        "n": (_token_counts, [100, 1000, 10000]),
        "replicas": (lambda k, v: ck.integer(k, v, minimum=1, maximum=10_000), 8),
        "p": (_p, 1.0),
        "points": (ck.choice(POINTS), "iid"),
    }, finish=_finish_convergence),
)

STUDY_TASKS: dict[str, tuple[str, ...]] = {
    "convergence": CORE_TASKS["compare"] + ("convergence",),
}
