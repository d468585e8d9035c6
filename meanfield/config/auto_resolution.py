"""``discretization.resolution = "auto"``: its checker and the tasks that take it.

"auto" is for the spectral methods (``meanfield.discretizations.adaptive``: the first
resolution from the initial spectrum and the kernel, raised during the run to keep
``discretization.accuracy``). The tasks with one PDE run (per member) take it: evolve,
compare (its PDE is an evolve run, saved on the first grid) and contraction (each state
measured on its own grid). The others refuse it with one line saying why (``REFUSED``).
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


AUTO_TASKS = (None, "evolve", "compare", "contraction")
# why a task refuses "auto" (the one line of its ConfigError)
REFUSED = {
    "convergence": "the convergence study measures the tokens' W_p against the PDE's atoms "
                   "on one grid (its spacing is a term of the measured error)",
    "bifurcation": "continuation and scans solve for steady states whose unknowns are the "
                   "coefficients of one grid",
}


def check_auto_task(cfg: dict, task: str | None) -> None:
    """ConfigError for "auto" in a task that needs a fixed grid (one line naming the key
    and why)."""
    if task in AUTO_TASKS or cfg.get("discretization", {}).get("resolution") != "auto":
        return
    why = REFUSED.get(task, "it compares or continues states on one grid")
    raise ConfigError(f"discretization.resolution = \"auto\": {why}; the {task} task "
                      "needs a number", "discretization.resolution")
