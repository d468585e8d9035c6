"""What a run may ask for besides memory, refused before any work (``ConfigError`` naming
the key, the count and the limit): time steps (``check_steps``, from a lower bound that a
study derives from its stepper), the members of a study (``check_members``, before their
list is made) and the local worker processes (``check_workers``). Memory and the disk:
``meanfield.runs.budget``."""
from __future__ import annotations

from meanfield.config.checkers import describe
from meanfield.errors import ConfigError
from meanfield.runs.threads import machine_cores

MAX_STEPS = 1e9  # time steps of one system: beyond, days of work even at 100 us a step


def check_steps(steps: float, key: str, value, why: str, fits: str) -> float:
    """Refuse a run whose (lower bound of the) number of time steps passes
    ``MAX_STEPS``: ``why`` says where the count comes from, ``fits`` what would fit."""
    if steps > MAX_STEPS:
        raise ConfigError(f"{key} = {describe(value)}: {why}, at least {steps:.3g} time "
                          f"steps (limit {MAX_STEPS:.3g}); {fits}", key)
    return steps


# step x rate of the adaptive RK4 steps of tokens that have clustered (a bound over the
# measured 10.5: to t = 1e4 at rate 2, 1904 steps for the normalization study's Post-LN
# systems, n = 8..32, beta = 0..4, SA and USA alike; 1920 for the metastability study's,
# n = 16, beta = 16)
CLUSTER_STEP_RATE = 12.0


def check_clustered_steps(t_end: float, rate: float, key: str, value, what: str) -> float:
    """Tokens that have clustered are stiff at their attraction ``rate`` (2 for SA,
    ``2 e^beta`` for USA): the adaptive RK4 step stays below ``CLUSTER_STEP_RATE /
    rate``, so reaching ``t_end`` takes at least ``t_end rate / CLUSTER_STEP_RATE``
    steps (``normalization.times = [1, 1e12]``: 1.7e11); refused beyond ``MAX_STEPS``."""
    return check_steps(t_end * rate / CLUSTER_STEP_RATE, key, value,
                       f"{what} up to t = {t_end:g} step at most "
                       f"~{CLUSTER_STEP_RATE / rate:.3g} at a time (clustered, rate "
                       f"{rate:.3g})",
                       f"end the times by t = {MAX_STEPS * CLUSTER_STEP_RATE / rate:.3g}")


MAX_MEMBERS = 10**6  # members of a study: each a task (dask's graph) and a kept result


def check_members(count: int, key: str, value, fewer: str) -> int:
    """Refuse, before the list of members is made, a study of more than ``MAX_MEMBERS``
    members (``fewer``: what gives fewer). Returns ``count``."""
    if count > MAX_MEMBERS:
        raise ConfigError(f"{key} = {describe(value)}: {count:.3g} members (each a task "
                          f"with a result kept), limit {MAX_MEMBERS:.3g}; {fewer}", key)
    return count


MIN_WORKER_CAP = 2  # on a one-core machine two workers are still allowed (tests, examples)


def check_workers(workers: int, scheduler: str | None, cores: int | None = None) -> int:
    """Refuse more local worker processes than this process has cores (at least
    ``MIN_WORKER_CAP``): each is a process with its own interpreter, imports and memory,
    and more than the cores only share them (``parallel.workers = 1000`` started 80
    processes before failing). With ``scheduler`` (the user's own dask cluster) the
    cluster decides; nothing is checked. Returns ``workers``."""
    if scheduler is not None:
        return workers
    cores = machine_cores() if cores is None else cores
    cap = max(MIN_WORKER_CAP, cores)
    if workers > cap:
        raise ConfigError(f"parallel.workers = {workers}: a local cluster of more worker "
                          f"processes than the {cores} cores of this machine only shares "
                          f"them; give at most {cap}, or parallel.scheduler = the address "
                          "of your own dask cluster", "parallel.workers")
    return workers
