"""``discretization.resolution = "auto"``: its checker and the tasks that take it.

"auto" is for the spectral methods (``meanfield.discretizations.adaptive``: the first
resolution from the initial spectrum and the kernel, raised during the run to keep
``discretization.accuracy``) and for evolve only: the studies compare or continue states
on one grid, where a grid that changes during a member has no meaning yet.
"""
from __future__ import annotations

from typing import Any

from meanfield.config import checkers as ck
from meanfield.errors import ConfigError


def _resolution(key: str, value: Any) -> int | str:
    if isinstance(value, str) and value == "auto":
        return "auto"
    if isinstance(value, str):
        raise ConfigError(f"{key} = {value!r} must be \"auto\" or an integer >= 8", key)
    return ck.integer_in(8)(key, value)


RESOLUTION = ck.accepting("\"auto\" (spectral methods) or an integer >= 8", _resolution)


def check_auto_task(cfg: dict, task: str | None) -> None:
    """ConfigError for "auto" in a task other than evolve (one line naming the key)."""
    if task not in (None, "evolve") and cfg.get("discretization", {}).get(
            "resolution") == "auto":
        raise ConfigError(f"discretization.resolution = \"auto\" is taken by evolve only; "
                          f"the {task} task needs a number", "discretization.resolution")
