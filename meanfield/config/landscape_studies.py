"""The sections of the energy-landscape studies and the tasks that take them.

    [critical_points] n [[6]] (integers 2 .. 64, strictly increasing), dim [2] (tokens on
                      S^(dim-1), 2 .. 16), beta [[1, 4, 9]] (> 0, <= 700, strictly
                      increasing), families [["random", "clusters", "equally_spaced"]]
                      (a non-empty subset), starts [64] per family and (n, beta),
                      jitter [0.05] (radians, in [0, 1]), tolerance [1e-11] (the
                      gradient residual of a converged start, relative to e^beta/n),
                      max_iterations [200], zero_tolerance [1e-11] (eigenvalues below this
                      times the largest are zero modes), match_tolerance [1e-6] (two points
                      of one orbit), seed [0].

Task: critical_points (output, parallel, critical_points): the tokens need no domain,
grid or model section (the energy is E_beta of docs/conventions.md, the same for SA and
USA). They join the other studies' in ``meanfield.config.studies``.
"""
from __future__ import annotations

from meanfield.config import checkers as ck
from meanfield.config import memory
from meanfield.config.sections import MAX_USA_BETA, Section
from meanfield.errors import ConfigError

# the start families of the critical-points search (meanfield.studies.landscape.critical_search)
CRITICAL_FAMILIES = ("random", "clusters", "equally_spaced")
MAX_CRITICAL_N = 64  # Hessians of n(d - 1) rows, one eigendecomposition per iteration


def _families(key: str, value) -> list[str]:
    """A non-empty list of distinct names of ``CRITICAL_FAMILIES``, in that order."""
    if not isinstance(value, (list, tuple)) or not value:
        raise ConfigError(f"{key} = {ck.describe(value)} must be a non-empty list of start "
                          "families, some of " + ", ".join(
                              repr(f) for f in CRITICAL_FAMILIES), key)
    for i, name in enumerate(value):
        if not isinstance(name, str) or name not in CRITICAL_FAMILIES:
            raise ck.unknown_name(f"{key}[{i}]", name, CRITICAL_FAMILIES, "start family")
        if name in value[:i]:
            raise ConfigError(f"{key} = {ck.describe(value)} names {name!r} twice", key)
    return [f for f in CRITICAL_FAMILIES if f in value]


# bytes of Python objects per critical point found (its list, hits, the measures' dict)
POINT_OBJECT_BYTES = 2048
POINT_COPIES = 2  # a member's rows kept by the study, and the dataset made of them


def check_points_memory(cfg: dict, available: int | None = None) -> float:
    """Refuse, before any work, a study whose critical points may not fit: each start
    may find a distinct point (``families x starts`` a member), each kept with its
    invariant (the n x n sorted Gram rows on S^{d-1}), its measures and its rows padded to
    the largest n (kept for every member). ``ConfigError`` naming
    ``critical_points.starts`` and the count that fits. Returns the bytes."""
    c = cfg["critical_points"]
    d, n_max = c["dim"], max(c["n"])
    points = len(c["families"]) * c["starts"]
    rows = 8.0 * n_max * (3 * d) + POINT_OBJECT_BYTES  # positions, direction, spectrum

    def working(n: int) -> float:  # x, its canonical copy, invariant, measures, rows
        return 8.0 * (3 * n * d + (n * n if d > 2 else n) + n * (d - 1)) + rows

    need = points * (max(working(n) for n in c["n"])
                     + POINT_COPIES * rows * len(c["n"]) * len(c["beta"]))
    limit = memory.MEMORY_MARGIN * (memory.available_memory() if available is None
                                    else available)
    if need > limit:
        fits = int(c["starts"] * limit / need)
        raise ConfigError(f"critical_points.starts = {c['starts']}: up to {points:.3g} "
                          f"critical points a member (each start may find its own) of up "
                          f"to n = {n_max} tokens on S^{d - 1}, kept for "
                          f"{len(c['n']) * len(c['beta'])} members, about "
                          f"{need / memory.GiB:.3g} GiB, but {limit / memory.GiB:.3g} GiB "
                          f"are available ({memory.MEMORY_MARGIN:.0%} of the free memory); "
                          f"give critical_points.starts <= {fits}", "critical_points.starts")
    return need


LANDSCAPE_STUDY_SECTIONS: tuple[Section, ...] = (
    Section("critical_points", {
        "n": (ck.accepting(f"a strictly increasing list of integers >= 2 and <= "
                           f"{MAX_CRITICAL_N}, or {ck.RANGE_TEXT}",
                           lambda k, v: ck.increasing_within(
                               k, v, integers=True, minimum=2, maximum=MAX_CRITICAL_N)),
              [6]),
        "dim": (ck.integer_in(2, 16), 2),
        "beta": (ck.accepting(f"{ck.INCREASING_TEXT} > 0 and <= {MAX_USA_BETA:g}, or "
                              f"{ck.RANGE_TEXT}",
                              lambda k, v: ck.increasing_within(
                                  k, v, minimum=0.0, maximum=MAX_USA_BETA, strict=True)),
                 [1.0, 4.0, 9.0]),
        "families": (ck.accepting("a non-empty list of distinct names among " + ", ".join(
            f'"{f}"' for f in CRITICAL_FAMILIES), _families), list(CRITICAL_FAMILIES)),
        "starts": (ck.integer_in(1, 10**6), 64),
        "jitter": (ck.number_in(0.0, False, 1.0), 0.05),
        "tolerance": (ck.number_in(0.0, True, 1e-3), 1e-11),
        "max_iterations": (ck.integer_in(1, 10**5), 200),
        "zero_tolerance": (ck.number_in(0.0, True, 1e-2), 1e-11),
        "match_tolerance": (ck.number_in(0.0, True, 0.1), 1e-6),
        "seed": (ck.integer_in(0, 2**63 - 1), 0),
    }, finish=check_points_memory),
)
LANDSCAPE_STUDY_TASKS: dict[str, tuple[str, ...]] = {
    "critical_points": ("output", "parallel", "critical_points"),
}
