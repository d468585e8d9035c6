"""What the studies made of members share (compare, convergence, contraction, the particle
studies): the members run through the executor, are stopped on Ctrl-C, a failed one is
named while the others are kept, and a bar counts the members done. ``MemberList`` is the
whole run loop of a study made only of members."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import xarray as xr

from meanfield.runs.engine import Engine, RunTask, TaskFailed
from meanfield.runs.executor import Executor, TaskResult
from meanfield.runs.schedule import new_bar


class MemberStudy(RunTask):
    """A study whose points are the start, ``first_member - 1`` shared runs, then members
    (``frames[first_member:]``) that the executor runs; a member that failed is its
    ``TaskResult``.

    Subclasses give ``describe(params)``, the words naming one member in errors, and call
    ``member_done()`` after each member (the progress bar).
    """

    first_member = 2  # the start and one shared run (the PDE) come first
    members_bar = False  # a bar over the members (studies whose members show none)

    def __init__(self, cfg: dict, executor: Executor, progress: bool):
        super().__init__(cfg)
        self.executor, self.progress = executor, progress
        self._results = None  # the executor's iterator over the members not done yet
        self._bar = None

    def describe(self, params: dict) -> str:
        raise NotImplementedError

    def progress_bar(self, enabled: bool, done: int):
        """A bar over the members (``members_bar``), starting at those already done."""
        if not (enabled and self.members_bar):
            return None
        total = len(self.points()) - self.first_member
        self._bar = new_bar(total=total, initial=max(0, done - self.first_member),
                            unit="member", desc=self.kind)
        return self._bar

    def kept(self, frames: list) -> list:
        """The frames a checkpoint keeps: those before the first failed member. The
        engine resumes at ``len(frames)``, so a finished member kept after a failed one
        would take the failed one's place (its numbers filed under another member's
        parameters, and the failed one never retried); it is run again instead."""
        for i in range(self.first_member, len(frames)):
            if isinstance(frames[i], TaskResult):
                return frames[:i]
        return frames

    def member_done(self) -> None:
        if self._bar is not None:
            self._bar.update(1)

    def close(self) -> None:
        """Stop the members still running (Ctrl-C) while the executor is open."""
        if self._results is not None:
            self._results.close()

    def finish(self, frames: list) -> None:
        failed = [f for f in frames[self.first_member:] if isinstance(f, TaskResult)]
        if not failed:
            return
        # members failed for one reason (a lost cluster fails all those not done) are
        # said once: one line, not one clause per member
        by_error: dict[str, list[str]] = {}
        for f in failed:
            by_error.setdefault(f.error, []).append(self.describe(f.params))
        raise TaskFailed("; ".join(
            f"{names[0]} failed: {error}" if len(names) == 1 else
            f"{len(names)} members ({names[0]} .. {names[-1]}) failed: {error}"
            for error, names in by_error.items()))


class MemberList(MemberStudy):
    """A study made only of members: the start, then one point per member, each a
    ``params`` dict run by ``run(params)`` through the executor in order (``run`` must be
    picklable for dask: a module-level function, or a ``functools.partial`` of one).

    Subclasses pass the members and ``run`` to ``__init__`` and give ``describe``,
    ``dataset``, ``checkpoint`` and ``restore``; ``noun`` names the members in the
    progress line.
    """

    first_member = 1
    members_bar = True
    noun = "members"

    def __init__(self, cfg: dict, executor: Executor, progress: bool, members: list[dict],
                 run: Callable[[dict], Any]):
        super().__init__(cfg, executor, progress)
        self.members, self._run = list(members), run

    def points(self) -> list:
        return ["start", *range(len(self.members))]

    def where(self, done: int) -> str:
        return f"{max(done - 1, 0)} of {len(self.members)} {self.noun}"

    def start(self) -> None:
        return None

    def advance(self, state: Any, point: Any, on_step) -> Any:
        if self._results is None:
            self._results = self.executor.imap(self._run, self.members[point:])
        result = next(self._results)
        self.member_done()
        return result.value if result.ok else result

    def frame(self, state: Any) -> Any:
        return state


def run_study(cfg: dict, make_task: Callable[[Executor], MemberStudy],
              out: str | Path | None, *, overwrite: bool, resume: bool,
              progress: bool) -> xr.Dataset:
    """A member study through the run engine (output checks, lock, checkpoints, resume,
    Ctrl-C) with its executor (an unreachable scheduler fails before any work); the
    members still running are stopped however the run ends."""
    out = out if out is not None else cfg["output"]["path"]
    engine = Engine(cfg, out, overwrite=overwrite, resume=resume, progress=progress)
    with Executor.from_config(cfg) as executor:
        executor.connect()
        task = make_task(executor)
        try:
            return engine.run(task)
        finally:
            task.close()
