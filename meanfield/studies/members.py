"""What the studies made of members share (compare, convergence): the members run through
the executor, are stopped on Ctrl-C, and a failed one is named while the others are kept."""
from __future__ import annotations

from meanfield.runs.engine import RunTask, TaskFailed
from meanfield.runs.executor import Executor, TaskResult


class MemberStudy(RunTask):
    """A study whose points are the start, one shared run, then members (``frames[2:]``)
    that the executor runs; a member that failed is its ``TaskResult``.

    Subclasses give ``describe(params)``, the words naming one member in errors.
    """

    def __init__(self, cfg: dict, executor: Executor, progress: bool):
        super().__init__(cfg)
        self.executor, self.progress = executor, progress
        self._results = None  # the executor's iterator over the members not done yet

    def describe(self, params: dict) -> str:
        raise NotImplementedError

    def close(self) -> None:
        """Stop the members still running (Ctrl-C) while the executor is open."""
        if self._results is not None:
            self._results.close()

    def finish(self, frames: list) -> None:
        failed = [f for f in frames[2:] if isinstance(f, TaskResult)]
        if failed:
            raise TaskFailed("; ".join(f"{self.describe(f.params)} failed: {f.error}"
                                       for f in failed))
