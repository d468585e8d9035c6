"""What would fit: the advice of a refused run (``meanfield.runs.budget``), the value of
the config key that drives its size at which it fits, found by bisection on the estimate.
"""
from __future__ import annotations

import math
from collections.abc import Callable

from meanfield import config as cfgmod

# The smallest value of each key the advice bisects over (the smallest accepted).
LOWEST = {"discretization.resolution": 8, "domain.dim": 3, "particles.n": 2,
          "bifurcation.points": 2}


def what_fits(cfg: dict, key: str, fits: Callable[[object], bool], frames: int) -> str:
    """The value of ``key`` (the others kept) whose run fits, as a phrase.

    Args:
        cfg: the validated config of the refused run.
        key: the config key whose value drives the size ("section.name").
        fits: whether the run with ``key`` set to a value fits (monotone in the value).
        frames: the run's count of saved frames (``budget.frame_count``).
    """
    section, name = key.split(".")
    value = cfg[section][name]
    if key == "time.save_every":
        t_final = cfg["time"]["t_final"]
        count = largest(lambda c: fits(t_final / c), 1, frames)
        if count is None:
            return "even a single saved interval does not fit"
        return (f"{key} >= {round_up(t_final / count):.3g} fits (or a shorter time.t_final: "
                f"at most {count + 1} frames)")
    if key == "discretization.resolution" and cfg["domain"]["geometry"] == "sphere" \
            and cfg["discretization"]["method"] == "finite-volume":
        good = [c for c in cfgmod.SPHERE_MESH_CELLS if c < value and fits(c)]
        return f"{key} = {good[-1]} fits" if good else "no mesh fits"
    low = LOWEST[key]
    best = largest(fits, low, value)
    return f"{key} <= {best} fits" if best is not None else f"even {key} = {low} does not fit"


def largest(fits: Callable[[int], bool], low: int, high: int) -> int | None:
    """The largest integer in [low, high] with ``fits`` (monotone: true, then false)."""
    if not fits(low):
        return None
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return high if fits(high) else low


def round_up(x: float) -> float:
    """``x`` rounded up to 2 significant digits (a value to type in)."""
    scale = 10 ** (math.floor(math.log10(x)) - 1)
    return math.ceil(x / scale) * scale
