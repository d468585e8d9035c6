"""The output of a run: its result file, its checkpoint and the lock that keeps two runs
apart. Nothing is lost and nothing is replaced by accident:

- before any work (``Output.claim``): an existing result is refused unless ``overwrite``;
  with ``resume`` it is accepted only if a checkpoint is there to continue (a finished
  result without one is reported as finished: nothing to do); the directory must be
  writable (a file is created and removed there);
- when the run starts (``Output.lock``): ``<out>.lock`` is created exclusively, holding
  the pid and host; a second run on the same output refuses in one line while the first
  is alive; a lock left by a process that no longer exists (kill -9) is taken over;
- a checkpoint to resume from must be readable, of the same task and the same config,
  else one line says what is wrong and what to do;
- the result is written atomically (``meanfield.io``; a dataset whose frames were
  streamed to part files, ``meanfield.runs.frames``, is written from them a part at a
  time); if that still fails at the end (a disk that filled up, permissions changed), it
  is written to the temporary directory instead and ``OutputError`` says where (the
  checkpoint and the part files are kept then).
"""
from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

import xarray as xr

from meanfield import config as cfgmod
from meanfield.errors import ConfigError, OutputError, ResultExistsError
from meanfield.io import check_writable, read_netcdf, write_netcdf
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
        """Before any work: refuse an existing result (see the module docstring) and an
        output directory that cannot be written."""
        if self.path is None:
            return
        continuing = self.resume and self.checkpoint.exists()
        if self.path.exists() and not (self.overwrite or continuing) and self.resume:
            raise ResultExistsError(
                f"output.path = {str(self.path)!r} is a finished result and there is no "
                "checkpoint to resume: nothing to do (pass --overwrite to run it again)",
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
                    raise ConfigError(
                        f"output.path = {str(self.path)!r} is being written by another run "
                        f"({lock.read_text().strip() or 'unknown process'}, lock "
                        f"{str(lock)!r}); wait for it to end or choose another --out",
                        "output.path") from None
                lock.unlink(missing_ok=True)  # left by a process that is gone
                continue
            with os.fdopen(fd, "w") as f:
                f.write(me + "\n")
            self._locked = True
            return

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
        """Drop the lock (if this output holds it)."""
        if self._locked:
            lock_path(self.path).unlink(missing_ok=True)
            self._locked = False

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
            raise ConfigError(f"the checkpoint {where!r} cannot be read ({type(exc).__name__}:"
                              f" {exc}); it was cut short or is not a checkpoint: {todo}",
                              "resume") from None
        if ckpt.attrs.get("kind") != kind or "config" not in ckpt.attrs:
            raise ConfigError(f"the checkpoint {where!r} is not a checkpoint of meanfield "
                              f"{kind} (kind {ckpt.attrs.get('kind')!r}): {todo}", "resume")
        try:
            same = cfgmod.same_run(ckpt.attrs["config"], cfg)
        except (ValueError, TypeError):  # (ConfigError is a ValueError) a garbled config
            same = False
        if not same:
            raise ConfigError(f"the checkpoint {where!r} was made with another config; "
                              "delete it or run with the same config", "resume")
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
        except OSError as exc:
            fd, spare = tempfile.mkstemp(prefix=f"{self.path.stem}.", suffix=".nc")
            os.close(fd)
            write_netcdf(ds, spare, overwrite=True)
            raise OutputError(f"could not write {str(self.path)!r} ({exc}); the result is "
                              f"kept in {spare!r}") from None
        self.checkpoint.unlink(missing_ok=True)

    def open_result(self) -> xr.Dataset:
        """The written result, opened lazily (values are read when used; ``.load()``)
        without holding the file open (``meanfield.runs.frames.open_detached``)."""
        from meanfield.runs.frames import open_detached
        return open_detached(self.path)
