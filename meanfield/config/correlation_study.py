"""The section of the correlations study (the BBGKY hierarchy's one- and two-point
functions, [GLPR25, §8, Problem 4]) and its task.

    [correlations] n [[100, 200, 400, 800]] (integers 4 .. 10^6, strictly increasing),
                   dim [2] (tokens on S^(dim-1), 2 .. 4096), systems [64] per n (even,
                   >= 4: taken in independent pairs), chunk [16] (systems per member,
                   even), times [[0, 0.5, 1, 1.5, 2]] (>= 0, strictly increasing),
                   bins [24] (of the pair angle in [0, pi], 4 .. 1000), modes [8] (Fourier
                   modes of the weak second equation, S^1), dt [0.05] (the RK4 step),
                   level [1e-3] (the chance that max |g|/sigma over the bins passes its
                   threshold when g = 0).

Task: correlations (model, output, particles, parallel, correlations): beta and
normalized from [model] (kappa must be inf: the hierarchy of the deterministic flow), the
seed from [particles]. It joins the other studies' in ``meanfield.config.studies``.
"""
from __future__ import annotations

import math

from meanfield.config import checkers as ck
from meanfield.config.sections import Section
from meanfield.errors import ConfigError


def _even(minimum: int, maximum: int):
    def check(key: str, value) -> int:
        k = ck.integer_in(minimum, maximum)(key, value)
        if k % 2:
            raise ConfigError(f"{key} = {value!r} must be even: the systems are taken in "
                              "independent pairs (the error of g comes from the pairs)", key)
        return k
    return ck.accepting(f"an even integer in [{minimum}, {maximum}]", check)


def finish_correlations(cfg: dict) -> None:
    """A chunk no larger than the systems."""
    c = cfg["correlations"]
    if c["chunk"] > c["systems"]:
        c["chunk"] = c["systems"]


def check_correlations_task(cfg: dict, task: str) -> None:
    """The study's whole config: kappa = inf (a check of the task, not of its section:
    validating every section at once, as ``validate(cfg)`` does, must not refuse noise)."""
    kappa = cfg.get("model", {}).get("kappa", math.inf)
    if isinstance(kappa, (int, float)) and not math.isinf(kappa):
        raise ConfigError(f"model.kappa = {kappa!r}: the correlations study follows the "
                          "deterministic flow (its hierarchy has no diffusion terms); use "
                          "kappa = inf", "model.kappa")


CORRELATION_STUDY_SECTIONS: tuple[Section, ...] = (
    Section("correlations", {
        "n": (ck.accepting(f"a strictly increasing list of integers >= 4 and <= 1e6, or "
                           f"{ck.RANGE_TEXT}",
                           lambda k, v: ck.increasing_within(
                               k, v, integers=True, minimum=4, maximum=10**6)),
              [100, 200, 400, 800]),
        "dim": (ck.integer_in(2, 4096), 2),
        "systems": (_even(4, 10**6), 64),
        "chunk": (_even(2, 10**6), 16),
        "times": (ck.accepting(f"{ck.INCREASING_TEXT} >= 0, or {ck.RANGE_TEXT}",
                               lambda k, v: ck.increasing_within(
                                   k, v, minimum=0.0, maximum=1e6)),
                  [0.0, 0.5, 1.0, 1.5, 2.0]),
        "bins": (ck.integer_in(4, 1000), 24),
        "modes": (ck.integer_in(1, 64), 8),
        "dt": (ck.number_in(0.0, True, 1.0), 0.05),
        "level": (ck.number_in(0.0, True, 0.5), 1e-3),
    }, finish=finish_correlations),
)
CORRELATION_STUDY_TASKS: dict[str, tuple[str, ...]] = {
    "correlations": ("model", "output", "particles", "parallel", "correlations"),
}
