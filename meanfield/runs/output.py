"""The output of a run: its result file, its checkpoint and the lock that keeps two runs
apart. Nothing is lost and nothing is replaced by accident:

- before any work (``Output.claim``): an existing result is refused unless ``overwrite``;
  with ``resume`` it is accepted only if a checkpoint is there to continue (a finished
  result without one is reported as finished: nothing to do); a checkpoint (the work of
  an interrupted run) is refused unless ``resume`` continues it or ``overwrite``
  discards it; the directory must be writable (a file is created and removed there);
- when the run starts (``Output.lock``): ``<out>.lock`` is created exclusively, holding
  the pid and host; a second run on the same output refuses in one line while the first
  is alive; a lock left by a process that no longer exists (kill -9) is taken over. The
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
  names a process that is gone after the run: the next run takes it over).
"""
from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

import xarray as xr

from meanfield import config as cfgmod
from meanfield.config.input_files import check_unchanged
from meanfield.errors import ConfigError, OutputError, ResultExistsError
from meanfield.io import check_writable, read_failure, read_netcdf, release_files, write_netcdf
from meanfield.runs.schedule import checkpoint_path


def lock_path(path: Path) -> Path:
    """The lock file of a result path: ``<path>.lock``."""
    return path.with_name(path.name + ".lock")


def _alive(pid: int) -> bool:
    """Whether a process of this pid exists on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


class Output:
    """The result file of a run and its checkpoint (none without a path).

    Args:
        path: the result (netCDF) or None.
        overwrite: replace an existing result.
        resume: continue from the checkpoint if there is one.
    """

    def __init__(self, path: str | Path | None, overwrite: bool, resume: bool):
        # (a path that is not a str or Path, out = 123, is one ConfigError naming out)
        self.path = None if path is None else Path(cfgmod.checkers.path("out", path))
        self.overwrite, self.resume = overwrite, resume
        self.checkpoint = None if self.path is None else checkpoint_path(self.path)
        self._locked = False

    def claim(self) -> None:
        """Before any work, and again under the lock: refuse an existing result, a
        checkpoint that would be thrown away (see the module docstring) and an output
        directory that cannot be written."""
        if self.path is None:
            return
        if self.path.is_dir():  # refused at once: no flag makes a folder a result
            check_writable(self.path, True)
        continuing = self.resume and self.checkpoint.exists()
        if self.path.exists() and not (self.overwrite or continuing) and self.resume:
            raise ResultExistsError(
                f"output.path = {str(self.path)!r} is a finished result and there is no "
                "checkpoint to resume: nothing to do (pass --overwrite to run it again)",
                "output.path")
        lock = lock_path(self.path)
        if not self._locked and lock.exists() and self._holder_alive(lock):
            raise self._busy(lock)  # (its checkpoint is not one of an interrupted run)
        if self.checkpoint.exists() and not (self.resume or self.overwrite):
            raise ResultExistsError(
                f"output.path = {str(self.path)!r} has the checkpoint of an interrupted "
                f"run ({str(self.checkpoint)!r}); pass --resume (resume=True) to continue "
                "it, or --overwrite (overwrite=True) to discard it and start again",
                "output.path")
        check_writable(self.path, self.overwrite or continuing)

    def lock(self) -> None:
        """Take ``<out>.lock``; ConfigError if another live run holds it."""
        if self.path is None:
            return
        lock = lock_path(self.path)
        me = f"{os.getpid()} {socket.gethostname()}"
        for _ in range(2):
            try:
                fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if self._holder_alive(lock):
                    raise self._busy(lock) from None
                lock.unlink(missing_ok=True)  # left by a process that is gone
                continue
            with os.fdopen(fd, "w") as f:
                f.write(me + "\n")
            self._locked = True
            return

    def _busy(self, lock: Path) -> ConfigError:
        """The error for an output that another live run holds."""
        try:
            holder = lock.read_text().strip()
        except OSError:
            holder = ""
        return ConfigError(f"output.path = {str(self.path)!r} is being written by another "
                           f"run ({holder or 'unknown process'}, lock {str(lock)!r}); wait "
                           "for it to end or choose another --out", "output.path")

    @staticmethod
    def _holder_alive(lock: Path) -> bool:
        """Whether the process named in ``lock`` may still run (another host: assume so)."""
        try:
            pid_text, host = lock.read_text().split()
            pid = int(pid_text)
        except (OSError, ValueError):
            return False  # empty or garbled: a writer died between create and write
        return host != socket.gethostname() or _alive(pid)

    def release(self) -> None:
        """Drop the lock (if this output holds it); left in a folder that cannot be
        written any more (module docstring)."""
        if self._locked:
            self._locked = False
            try:
                lock_path(self.path).unlink(missing_ok=True)
            except OSError:
                pass

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
