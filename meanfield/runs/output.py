"""The output of a run: its result file, its checkpoint and the lock that keeps two runs
apart. Nothing is lost and nothing is replaced by accident:

- before any work (``Output.claim``): an existing result is refused unless ``overwrite``;
  with ``resume`` it is accepted only if a checkpoint is there to continue (a finished
  result without one is reported as finished: nothing to do); a checkpoint (the work of
  an interrupted run) is refused unless ``resume`` continues it or ``overwrite``
  discards it; the directory must be writable (a file is created and removed there);
- when the run starts (``Output.lock``): an advisory ``flock`` on ``<out>.lock`` is held
  for the run (``meanfield.runs.lockfile``), the file naming the pid and host; a second
  run on the same output refuses in one line while the first holds it; the kernel drops
  the lock of a process that ends (kill -9 too), so a lock file left behind is taken
  over, and nothing is checked and then unlinked (no race). The
  checks of ``claim`` are made again once the lock is held (the engine does): a run that
  passed them while another was still going (a dask start-up takes seconds) would
  otherwise replace the result the other has finished meanwhile;
- a checkpoint to resume from must be readable, of the same task and the same config,
  else one line says what is wrong and what to do;
- the result is written atomically (``meanfield.io``; a dataset whose frames were
  streamed to part files, ``meanfield.runs.frames``, is written from them a part at a
  time); if that still fails at the end (a disk that filled up, permissions changed,
  the folder gone), it is written to the temporary directory instead
  (``keep_elsewhere``) and ``OutputError`` says where (the checkpoint and the part files
  are kept then); the lock in a folder that cannot be written any more is left (it
  names a process that is gone after the run: the next run takes it over);
- only regular files are written or replaced: a path naming a directory, a device, a
  FIFO or a socket is refused before any work with or without ``overwrite``
  (``meanfield.io.check_target``), and so are a path ending in ``/`` (it names a folder)
  and a name too long for its checkpoint's and temporary files' names;
- the output's folder moved, deleted or replaced during the run is found at the next
  save: the run goes on in a fallback folder, the parts so far copied there
  (``relocate``, ``meanfield.runs.relocate``), and one line says where and how to resume.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import xarray as xr

from meanfield import config as cfgmod
from meanfield.config.input_files import check_unchanged
from meanfield.errors import ConfigError, OutputError, ResultExistsError
from meanfield.io import (check_target, check_writable, read_failure, read_netcdf,
                          release_files, write_netcdf)
from meanfield.runs import lockfile
from meanfield.runs.frames import FrameStore, frames_path
from meanfield.runs.relocate import FolderMoved, fallback_folder, identity
from meanfield.runs.schedule import checkpoint_path


def lock_path(path: Path) -> Path:
    """The lock file of a result path: ``<path>.lock``."""
    return path.with_name(path.name + ".lock")


class Output:
    """The result file of a run and its checkpoint (none without a path).

    Args:
        path: the result (netCDF) or None.
        overwrite: replace an existing result.
        resume: continue from the checkpoint if there is one.
    """

    def __init__(self, path: str | Path | None, overwrite: bool, resume: bool):
        # (a path that is not a str or Path, out = 123, is one ConfigError naming out)
        raw = None if path is None else cfgmod.checkers.path("out", path)
        if raw is not None and raw.endswith(tuple(filter(None, (os.sep, os.altsep)))):
            raise ConfigError(f"output.path (--out) = {raw!r} names a folder (it ends with "
                              f"{raw[-1]!r}); give a file name such as "
                              f"{str(Path(raw) / 'result.nc')!r}", "output.path")
        self.path = None if raw is None else Path(raw)
        self.overwrite, self.resume = overwrite, resume
        self.checkpoint = None if self.path is None else checkpoint_path(self.path)
        self._locked, self._lock_fd = False, -1
        self._place: tuple[int, int] | None = None  # the folder locked in (identity)
        self.moved_from: Path | None = None  # the path asked for, once relocated

    def claim(self) -> None:
        """Before any work, and again under the lock: refuse an existing result, a
        checkpoint that would be thrown away (see the module docstring) and an output
        directory that cannot be written."""
        if self.path is None:
            return
        check_target(self.path)  # at once: no flag makes a folder or a device a result
        continuing = self.resume and self.checkpoint.exists()
        if self.path.exists() and not (self.overwrite or continuing) and self.resume:
            raise ResultExistsError(
                f"output.path = {str(self.path)!r} is a finished result and there is no "
                "checkpoint to resume: nothing to do (pass --overwrite to run it again)",
                "output.path")
        lock = lock_path(self.path)
        if not self._locked and lockfile.busy(lock):
            raise self._busy(lock)  # (its checkpoint is not one of an interrupted run)
        if self.checkpoint.exists() and not (self.resume or self.overwrite):
            raise ResultExistsError(
                f"output.path = {str(self.path)!r} has the checkpoint of an interrupted "
                f"run ({str(self.checkpoint)!r}); pass --resume (resume=True) to continue "
                "it, or --overwrite (overwrite=True) to discard it and start again",
                "output.path")
        check_writable(self.path, self.overwrite or continuing)

    def lock(self) -> None:
        """Take ``<out>.lock`` for the run (``meanfield.runs.lockfile``: a ``flock`` the
        kernel drops when the process ends); ConfigError if another run holds it."""
        if self.path is None:
            return
        lock = lock_path(self.path)
        fd = lockfile.acquire(lock)
        if fd is None:
            raise self._busy(lock)
        self._lock_fd, self._locked = fd, True
        self._place = identity(self.path.parent)  # (meanfield.runs.relocate)

    def check_place(self) -> None:
        """Before a save: ``FolderMoved`` if the output's folder is not the one the run
        locked its output in (moved, deleted, replaced)."""
        if self._place is not None and identity(self.path.parent) != self._place:
            raise FolderMoved(self.path.parent)

    def relocate(self, store: FrameStore | None) -> Path:
        """Go on in a new fallback folder (``meanfield.runs.relocate``): the parts of
        ``store`` copied there, the lock taken there; the new folder.

        Raises:
            OutputError: the parts written so far are gone (the folder was deleted).
        """
        old, folder = self.path, fallback_folder(self.path)
        new = folder / old.name
        try:
            if store is not None and store.folder is not None:
                store.move_to(frames_path(new))
        except OSError as exc:
            raise OutputError(
                f"the folder of {str(old)!r} was moved or replaced during the run and the "
                f"{store.flushed} frames written there are gone ({reason(exc)}): they "
                "cannot be kept; run again") from None
        if self._locked:  # (the old lock file went with its folder)
            self._locked = False
            os.close(self._lock_fd)
        self.moved_from, self.path, self.checkpoint = old, new, checkpoint_path(new)
        self.lock()
        return folder

    def _busy(self, lock: Path) -> ConfigError:
        """The error for an output that another live run holds."""
        holder = lockfile.holder(lock)
        return ConfigError(f"output.path = {str(self.path)!r} is being written by another "
                           f"run ({holder or 'unknown process'}, lock {str(lock)!r}); wait "
                           "for it to end or choose another --out", "output.path")

    def release(self) -> None:
        """Drop the lock (if this output holds it); left in a folder that cannot be
        written any more (module docstring)."""
        if self._locked:
            self._locked = False
            lockfile.release(lock_path(self.path), self._lock_fd)

    def discard_checkpoint(self) -> None:
        """Delete the checkpoint of an earlier run (a run started again with
        ``overwrite``: it must not be resumed later with parts it no longer covers)."""
        if self.checkpoint is not None:
            release_files(self.checkpoint)
            self.checkpoint.unlink(missing_ok=True)

    def saved(self, cfg: dict, kind: str) -> xr.Dataset | None:
        """The checkpoint to resume from, checked against the task and ``cfg``; None if
        there is none or ``resume`` was not asked for."""
        if not self.resume or self.checkpoint is None or not self.checkpoint.exists():
            return None
        where = str(self.checkpoint)
        todo = "delete it, or pass --overwrite (without --resume) to start again"
        try:
            ckpt = read_netcdf(self.checkpoint)
        except Exception as exc:  # noqa: BLE001 - truncated, empty, not netCDF at all
            raise ConfigError(f"the checkpoint {where!r} cannot be read ({read_failure(exc)})"
                              f"; it was cut short, damaged or is not a checkpoint: {todo}",
                              "resume") from None
        if ckpt.attrs.get("kind") != kind or "config" not in ckpt.attrs:
            raise ConfigError(f"the checkpoint {where!r} is not a checkpoint of meanfield "
                              f"{kind} (kind {ckpt.attrs.get('kind')!r}): {todo}", "resume")
        # the input files first (same_run reads them again): a changed one is named
        check_unchanged(ckpt.attrs.get("inputs"), where)
        try:
            same = cfgmod.same_run(ckpt.attrs["config"], cfg)
        except (ValueError, TypeError):  # (ConfigError is a ValueError) a garbled config
            same = False
        if not same:
            raise ConfigError(f"the checkpoint {where!r} was made with another config; "
                              "run with that config to continue it, or pass --overwrite "
                              "(without --resume) to discard it and start again", "resume")
        return ckpt

    def write_checkpoint(self, ds: xr.Dataset) -> None:
        if self.checkpoint is not None:
            self.check_place()
            write_netcdf(ds, self.checkpoint, overwrite=True)

    def write_result(self, ds: xr.Dataset) -> None:
        """Write the result (and drop the checkpoint); if the output cannot be written
        now, write it to the temporary directory and raise ``OutputError`` saying where."""
        if self.path is None:
            return
        try:
            write_netcdf(ds, self.path, overwrite=True)
        except (OSError, ConfigError) as exc:  # (check_writable's: the probe failed)
            spare = self.keep_elsewhere(ds, "the result", exc)
            raise OutputError(f"could not write {str(self.path)!r} ({reason(exc)}); the "
                              f"result is kept in {spare!r}") from None
        release_files(self.checkpoint)
        self.checkpoint.unlink(missing_ok=True)

    def keep_elsewhere(self, ds: xr.Dataset, what: str, why: BaseException) -> str:
        """Write ``ds`` (``what``, for the message) to a new file in the temporary
        directory, since the output path could not be written (``why``); its path.

        Raises:
            OutputError: that failed too (saying so).
        """
        fd, spare = tempfile.mkstemp(prefix=f"{self.path.stem}.", suffix=".nc")
        os.close(fd)
        try:
            write_netcdf(ds, spare, overwrite=True)
        except (OSError, ConfigError) as exc:
            Path(spare).unlink(missing_ok=True)
            raise OutputError(
                f"could not write {str(self.path)!r} ({reason(why)}) nor keep {what} in "
                f"{tempfile.gettempdir()!r} ({reason(exc)})") from None
        return spare

    def open_result(self) -> xr.Dataset:
        """The written result, opened lazily (values are read when used; ``.load()``)
        without holding the file open (``meanfield.runs.frames.open_detached``)."""
        from meanfield.runs.frames import open_detached
        return open_detached(self.path)


def reason(exc: BaseException) -> str:
    """Why a write failed, in a few words (an OSError's strerror and file)."""
    if isinstance(exc, OSError) and not isinstance(exc, ConfigError) and exc.strerror:
        return exc.strerror + (f": {exc.filename!r}" if exc.filename else "")
    return str(exc)
