"""The run engine: what every task that goes through a schedule shares.

A task (``evolve``, ``particles``, ``compare``) supplies the hooks of ``RunTask``;
``Engine.run`` does the rest, the same way for all of them:

- the output (``meanfield.runs.output``): checked before any work (``Output.claim``: an
  existing result, ``resume`` without a checkpoint, a checkpoint without ``resume`` or
  ``overwrite``, a place that cannot be written), locked while the run goes
  (``<out>.lock``: a second run on it refuses) and checked again under the lock (a run
  that finished meanwhile), written atomically at the end (elsewhere, said where, if
  that fails), and its checkpoint ``<out>.checkpoint.nc`` removed then. A folder that
  cannot be written any more in the middle of a run stops no work: a checkpoint or a
  part that cannot be written is said once (a warning) and the run goes on with its
  frames in memory, the result (or on Ctrl-C the frames so far) then kept in the
  temporary directory;
- the schedule: ``task.points()``; the first point is the start (``task.start()``), each
  further one is reached by ``task.advance(state, point, on_step)``, and ``task.frame``
  says what is kept there (all of a frame or none of it, whenever Ctrl-C comes);
- progress: ``task.progress_bar`` (a tqdm bar over simulated time for stepping tasks),
  fed by ``on_step(t)`` (a ``StepHook``);
- checkpoints: when ``output.checkpoint_every`` seconds of wall time have passed since the
  last one, after a point or in the middle of an interval (a stepping task offers its
  exact state after each step: ``on_step.midway(make_state)``), and on Ctrl-C (the latest
  exact state the engine holds: a checkpoint is never replaced by an older state):
  ``task.checkpoint(state, frames)`` (whatever restores the state exactly: solver state,
  its time, next step, noise generator; and the frames, or for a task that ``streams``
  only their number); ``resume=True`` reads it back (``task.restore``) after checking that
  it was made with the same config, and continues bit for bit, also from the middle of an
  interval;
- the frames (``meanfield.runs.frames.FrameStore``): in memory without an output path or
  for a task that does not ``stream`` (compare, whose frames are whole runs); else
  written as they go in part files ``<out>.frames/part-<k>.nc`` of ``frames.PART_BYTES``
  each (atomically, and always before a checkpoint, so a checkpoint covers whole parts
  and a kill -9 corrupts nothing), and the result assembled from them lazily and written
  a part at a time: memory bounded by a part, not by the run. The returned dataset is
  then opened lazily from the result file (``.load()`` gives numpy arrays);
- Ctrl-C and SIGTERM: the run stops with ``status`` -1, the frames so far in the
  returned dataset (read lazily from the parts when they were streamed) and the
  checkpoint, and a message saying where the checkpoint is;
- the dataset: ``task.dataset(frames, info)`` stamped with ``kind``, ``config`` (JSON),
  ``version`` (the package's), ``status`` and ``message`` (finished: ``task.outcome``,
  before the result is written: nothing is written after the lock is released).

``SteppingTask`` is the base of the tasks that step in time (evolve, particles): the save
times of ``[time]``, the bar over simulated time, frames streamed to disk with an output,
and a checkpoint made of the task's ``state_vars`` and the number of frames it covers.
"""
from __future__ import annotations

import contextlib
import signal
import threading
import time as _time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from meanfield import config as cfgmod
from meanfield.config.input_files import record_json
from meanfield.errors import ConfigError, OutputError, SolverError
from meanfield.io import small_chunk_cache
from meanfield.runs import threads as thread_policy
from meanfield.runs.frames import FrameStore, frames_path, streaming
from meanfield.runs.output import Output, reason
from meanfield.runs.relocate import FolderMoved
from meanfield.runs.schedule import progress_bar, save_times
from meanfield.version import __version__


class TaskFailed(SolverError):
    """A task finished its schedule but part of it failed (an ensemble member); the rest
    is kept in the checkpoint and ``resume`` retries the failed parts."""


class RunTask:
    """The hooks a task gives the engine (see the module docstring).

    Attributes:
        kind: the task's name, the dataset's ``kind`` attribute.
        cfg: the validated config.
        streams: whether its frames go to disk in parts when there is an output
            (``meanfield.runs.frames``): then ``dataset(frames, info, start=k)`` makes the
            dataset of frames ``k, k + 1, ...``, ``checkpoint`` gets the number of frames
            (all on disk) instead of the frames and ``restore`` gives that number back.
    """

    kind = ""
    streams = False

    def __init__(self, cfg: dict):
        self.cfg = cfg

    def points(self) -> Sequence:
        """The schedule; ``points()[0]`` is the start."""
        raise NotImplementedError

    def start(self) -> Any:
        """The state at the first point."""
        raise NotImplementedError

    def advance(self, state: Any, point: Any, on_step: StepHook) -> Any:
        """The state at ``point`` from ``state`` (at the point before, or in the middle
        of the interval from a checkpoint); a new object: the engine keeps the old one
        for a checkpoint if Ctrl-C comes. ``on_step(t)`` after each step moves the bar;
        ``on_step.midway(make_state)`` there lets the engine checkpoint ``make_state()``
        (an exact state from which ``advance`` continues bit for bit)."""
        raise NotImplementedError

    def frame(self, state: Any) -> Any:
        """What is kept of ``state`` at its point."""
        raise NotImplementedError

    def dataset(self, frames: list, info: dict) -> xr.Dataset:
        """The result made of ``frames`` (the first ``len(frames)`` points), with ``info``
        (run statistics, status) among its attrs."""
        raise NotImplementedError

    def checkpoint(self, state: Any, frames: list) -> xr.Dataset:
        """A dataset from which ``restore`` gives back ``state`` and ``frames`` exactly
        (a task that ``streams``: ``frames`` is their number)."""
        raise NotImplementedError

    def restore(self, ckpt: xr.Dataset) -> tuple[Any, list]:
        """The state and frames of a checkpoint (a task that ``streams``: their number)."""
        raise NotImplementedError

    def where(self, done: int) -> str:
        """Where the run is after ``done`` points, for messages ("t = 0.5")."""
        return f"point {done}"

    def beyond(self, state: Any) -> str:
        """How far a state from the middle of an interval is beyond the last point, for
        messages ("", or ", stepped on to t = 0.53")."""
        del state
        return ""

    def info(self) -> dict:
        """Run statistics for the dataset's attrs (steps and the like)."""
        return {}

    def finish(self, frames: list) -> None:
        """Called when every point is done with the frames in memory (all of them unless
        the task ``streams``); raises ``TaskFailed`` if some part failed."""

    def outcome(self, ds: xr.Dataset) -> tuple[int, str]:
        """The ``status`` and ``message`` of the finished result ``ds``, before it is
        written (a task that finished with problems: status 1 and what they are)."""
        del ds
        return 0, "finished"

    def progress_bar(self, enabled: bool, done: int):
        """A bar with ``update(n)``/``close()`` and an ``n``, or None (the default: a
        task made of other runs lets them show their own)."""
        del enabled, done

    def held(self) -> contextlib.AbstractContextManager:
        """A context the engine enters once around the whole schedule (default: none):
        what a task sets up once per run rather than per point, such as a BLAS thread
        limit (threadpoolctl scans the loaded libraries each time one is entered: 0.1-2
        ms, more than a small run's save costs otherwise)."""
        return contextlib.nullcontext()


class SteppingTask(RunTask):
    """A task that steps in time through the save times of ``[time]``.

    Its frames stream to disk (``streams``): subclasses give ``start``, ``advance``,
    ``frame``, ``dataset(frames, info, start=0)`` (frames ``start, start + 1, ...``),
    ``state_vars`` (the checkpoint's variables and attrs) and ``restore_state``.
    """

    streams = True

    def __init__(self, cfg: dict):
        super().__init__(cfg)
        self.times = save_times(cfg["time"]["t_final"], cfg["time"]["save_every"])

    def points(self) -> np.ndarray:
        return self.times

    def where(self, done: int) -> str:
        return f"t = {self.times[max(done, 1) - 1]:.6g}"

    def progress_bar(self, enabled: bool, done: int):
        return progress_bar(float(self.times[-1]), float(self.times[max(done, 1) - 1]),
                            enabled)

    def beyond(self, state: Any) -> str:
        t = getattr(state, "t", None)  # set in the middle of an interval
        if t is None:
            return ""
        taken = getattr(state, "taken", 0)
        return f", stepped on to t = {t:.6g}" + (f" + {taken} steps" if taken else "")

    def state_vars(self, state: Any) -> tuple[dict, dict]:
        """Variables and attrs that restore ``state`` exactly."""
        raise NotImplementedError

    def restore_state(self, ckpt: xr.Dataset, frames: int) -> Any:
        """The state of a checkpoint that covers ``frames`` frames."""
        raise NotImplementedError

    def checkpoint(self, state: Any, frames: int) -> xr.Dataset:
        """The exact state and the number of frames saved (in the part files) up to it."""
        data, attrs = self.state_vars(state)
        return xr.Dataset(data, attrs={**attrs, "checkpoint_frames": int(frames)})

    def restore(self, ckpt: xr.Dataset) -> tuple[Any, int]:
        if "checkpoint_frames" not in ckpt.attrs:  # kept its frames: an older version's
            raise ConfigError("the checkpoint was written by an older meanfield (with its "
                              "frames inside); it cannot be resumed: pass --overwrite "
                              "(without --resume) to run again", "resume")
        frames = int(ckpt.attrs["checkpoint_frames"])
        return self.restore_state(ckpt, frames), frames


class CheckpointClock:
    """Whether a checkpoint is due: every ``every`` seconds of wall time."""

    def __init__(self, every: float):
        self.every = every
        self.last = _time.monotonic()

    def due(self) -> bool:
        return _time.monotonic() - self.last > self.every

    def reset(self) -> None:
        self.last = _time.monotonic()


class StepHook:
    """The ``on_step`` a task's ``advance`` gets: ``hook(t)`` after each step moves the
    progress bar; ``hook.midway(make_state)`` after each step keeps ``make_state()`` (the
    exact state reached, built only then) in a checkpoint when one is due.

    Args:
        bar: the progress bar, or None.
        keep: called with the state when a checkpoint is due (None: no checkpoints).
        due: whether one is due.
    """

    def __init__(self, bar: Any, keep: Callable[[Any], None] | None,
                 due: Callable[[], bool]):
        self.bar, self.keep, self.due = bar, keep, due

    def __call__(self, t: float) -> None:
        if self.bar is not None:
            self.bar.update(t - self.bar.n)

    def midway(self, make_state: Callable[[], Any]) -> None:
        if self.keep is not None and self.due():
            self.keep(make_state())


def stamp(ds: xr.Dataset, kind: str, cfg: dict, status: int, message: str,
          inputs: str | None = None) -> xr.Dataset:
    """Set the attrs every result carries (docs/datasets.md); ``inputs``: the record of
    the input files (``config.input_files.record_json``) taken when the run began
    (None: taken now)."""
    ds.attrs.update({"kind": kind, "config": cfgmod.to_json(cfg),
                     "inputs": inputs if inputs is not None else record_json(cfg),
                     "version": __version__, "status": int(status),
                     "message": message})
    return ds


class Engine:
    """Runs one task through its schedule (see the module docstring).

    The output is claimed when the engine is made, before the task is built (bad output
    paths fail before any work).

    Args:
        cfg: the validated config (``output.checkpoint_every``).
        out: the result path (None: not written, no checkpoints).
        overwrite, resume, progress: as the entry points'.
    """

    def __init__(self, cfg: dict, out: str | Path | None = None, *,
                 overwrite: bool = False, resume: bool = False, progress: bool = False):
        self.output = Output(out, overwrite, resume)
        self.output.claim()
        # the input files as they are when the run begins (a resume checks them again)
        self.inputs = record_json(cfg)
        self.progress = progress
        self.clock = CheckpointClock(cfg["output"]["checkpoint_every"])
        self.task: RunTask | None = None
        self.store: FrameStore | None = None
        self.last: Any = None
        self.unwritable: BaseException | None = None  # why the output could not be written
        self.ending = False  # the schedule is done: the result is being written

    def run(self, task: RunTask) -> xr.Dataset:
        """Run (or resume) ``task``; the result dataset (``status`` -1 if interrupted).
        The netCDF files it opens (parts, checkpoints, the result) get small chunk
        caches (``meanfield.io.small_chunk_cache``: netCDF's 64 MiB a variable and file
        tripled a streamed run's memory)."""
        with small_chunk_cache():
            return self._run(task)

    def _run(self, task: RunTask) -> xr.Dataset:
        self.task = task
        streamed = task.streams and self.output.path is not None
        self.store = FrameStore(task, frames_path(self.output.path) if streamed else None,
                                guard=self.output.check_place)
        wall = _time.perf_counter()
        try:
            self.output.lock()
            self.output.claim()  # again, now that no other run can finish meanwhile
            with thread_policy.current().applied(), task.held(), _signals():
                state, frames, failure = self._loop()
            info = {**task.info(), "wall_time_s": _time.perf_counter() - wall}
            if failure is not None:
                kept = self._checkpoint(state, frames)
                raise TaskFailed(f"{failure}; the rest is kept in "
                                 f"{str(self.output.checkpoint)!r}; "
                                 f"{self._resume_hint()} to retry the failed part"
                                 if self.output.checkpoint is not None and kept
                                 else failure)
            if len(frames) < len(task.points()):
                return self._interrupted(state, frames, info)
            self.ending = True  # (a move found now: said by the OutputError below)
            if frames.parts:  # the end first: if the (long) write fails, resume only
                self._checkpoint(state, frames)  # assembles the parts again
            else:  # (a folder moved since the last save: the result goes elsewhere)
                self._settled(self.output.check_place)
            ds = frames.assemble(info)
            ds = stamp(ds, task.kind, task.cfg, *task.outcome(ds), inputs=self.inputs)
            with streaming(frames.lazy):  # lazily opened parts: one part at a time
                self.output.write_result(ds)
            if frames.lazy:  # opened from the parts: read the result back lazily
                ds.close()
                ds = self.output.open_result()
            frames.remove()  # the result holds them now
            if self.output.moved_from is not None:
                raise OutputError(f"the folder of {str(self.output.moved_from)!r} was "
                                  "moved or replaced during the run; the result is kept "
                                  f"in {str(self.output.path)!r}")
            return ds
        finally:
            self.output.release()
            self.store.close()

    def _loop(self) -> tuple[Any, FrameStore, str | None]:
        """The schedule from the start or the checkpoint; stops early on Ctrl-C."""
        task, points, frames = self.task, self.task.points(), self.store
        ckpt = self.output.saved(task.cfg, task.kind)
        if ckpt is not None:
            state, kept = task.restore(ckpt)
            if task.streams:  # the parts it covers; those written after it go
                frames.truncate(kept)
            else:
                frames.frames = list(kept)
        else:
            state = task.start()
            self.output.discard_checkpoint()  # (overwrite) an earlier run's: not resumed,
            frames.truncate(0)  # and its parts go
            frames.append(task.frame(state))
        self.last = state  # the exact state at the last point kept
        bar = task.progress_bar(self.progress, len(frames))
        on_step = StepHook(bar, None if self.output.checkpoint is None else
                           (lambda mid: self._midway(mid, frames)), self.clock.due)
        try:
            for point in points[len(frames):]:
                state = task.advance(self.last, point, on_step)
                frames.append(task.frame(state))
                self.last = state
                try:  # after self.last: Ctrl-C in a write keeps frame and state
                    self._settled(frames.spill)
                except (OSError, ConfigError) as exc:  # kept in memory: see _checkpoint
                    self._cannot_write(exc)
                if self.output.checkpoint is not None and self.clock.due():
                    self._checkpoint(state, frames)
        except KeyboardInterrupt:  # stop: the frames so far and self.last are kept
            pass
        finally:
            if bar is not None:
                bar.close()
        failure = None
        if len(frames) == len(points):
            try:
                task.finish(frames.frames)
            except TaskFailed as exc:
                failure = str(exc)
        return self.last, frames, failure

    def _midway(self, state: Any, frames: FrameStore) -> None:
        """Checkpoint a state from the middle of an interval; it is the latest exact
        state from now on (set first: Ctrl-C while writing keeps it, never an older one)."""
        self.last = state
        self._checkpoint(state, frames)

    def _checkpoint(self, state: Any, frames: FrameStore) -> bool:
        """Write a checkpoint; False if the output folder cannot be written now (the run
        goes on: its frames stay in memory, and what it makes is kept elsewhere at the
        end, ``Output.keep_elsewhere``)."""
        task = self.task
        self.clock.reset()  # (also after a failure: not tried again at every step)
        try:
            self._settled(frames.flush)  # first: the checkpoint covers whole parts
            ds = task.checkpoint(state, len(frames) if task.streams else frames.frames)
            stamp(ds, task.kind, task.cfg, -1,
                  f"checkpoint at {task.where(len(frames))}{task.beyond(state)}",
                  inputs=self.inputs)
            self._settled(lambda: self.output.write_checkpoint(ds))
        except (OSError, ConfigError) as exc:  # (ConfigError: check_writable's probe)
            self._cannot_write(exc)
            return False
        return True

    def _settled(self, save: Callable[[], Any]) -> Any:
        """``save()``; if the output's folder was moved or replaced (``FolderMoved``), the
        run goes on in a fallback folder (``Output.relocate``, said once) and saves there."""
        try:
            return save()
        except FolderMoved:
            old = self.output.path
            folder = self.output.relocate(self.store)
            if self.ending:
                return save()
            warnings.warn(f"the folder of {str(old)!r} was moved or replaced during the "
                          "run, so it cannot be written there; the frames so far are kept "
                          f"in {str(folder)!r} and the run goes on there (if it stops, "
                          f"{self._resume_hint()} to continue)", RuntimeWarning,
                          stacklevel=3)
            return save()

    def _resume_hint(self) -> str:
        """How to continue from the checkpoint (its new place once relocated)."""
        if self.output.moved_from is None:
            return "run the same command with --resume (resume=True)"
        out = str(self.output.path)
        return f"run the same command with --resume --out {out!r} (resume=True, out={out!r})"

    def _cannot_write(self, exc: BaseException) -> None:
        """Say once that the output folder cannot be written (the run goes on)."""
        if self.unwritable is None:
            self.unwritable = exc
            warnings.warn(f"the checkpoint of {str(self.output.path)!r} cannot be written "
                          f"now ({reason(exc)}); the run goes on, and what it makes is "
                          "kept in the temporary directory if its folder stays unwritable",
                          RuntimeWarning, stacklevel=3)

    def _interrupted(self, state: Any, frames: FrameStore, info: dict) -> xr.Dataset:
        task = self.task
        message = f"interrupted after {task.where(len(frames))}"
        kept = self.output.checkpoint is not None and self._checkpoint(state, frames)
        if kept and self.output.moved_from is not None:  # (the kept path: the end)
            message += (f"; the folder of {str(self.output.moved_from)!r} was moved or "
                        f"replaced during the run: {self._resume_hint()} to continue from "
                        f"the checkpoint kept in {str(self.output.checkpoint)!r}")
        elif kept:
            message += (f"; kept in {str(self.output.checkpoint)!r}, run the same "
                        "command with --resume (resume=True) to continue")
        ds = stamp(frames.assemble(info), task.kind, task.cfg, -1, message,
                   inputs=self.inputs)
        if self.output.checkpoint is not None and not kept:  # the folder: not writable
            with streaming(frames.lazy):
                spare = self.output.keep_elsewhere(ds, "the frames so far", self.unwritable)
            ds.attrs["message"] = (f"{message}; {str(self.output.path)!r} cannot be written "
                                   f"({reason(self.unwritable)}): the frames so far are "
                                   f"kept in {spare!r}")
        return ds


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # a SIGTERM stops the run as Ctrl-C does: checkpoint kept


@contextlib.contextmanager
def _signals() -> Iterator[None]:
    """SIGTERM (kill, a batch system's time limit) stops the run like Ctrl-C: the frames
    and a checkpoint are kept. Only the main thread can take signals (a dask worker's
    tasks run elsewhere and are stopped by their own process)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
