"""The saved frames of a run: in memory, or on disk in part files as the run goes.

Without an output path every frame stays in memory (``FrameStore.frames``), as a short
run wants. With one, a task that ``streams`` (evolve, particles) keeps only a buffer:
when its frames pass ``PART_BYTES``, and always before a checkpoint, they are written as
one *part* ``<out>.frames/part-<first frame>.nc``, the task's own dataset of those frames
(``task.dataset(frames, {}, start=k)``). Each part is written to a temp file in that
folder and renamed, so a kill -9 leaves whole parts and at most a temp file, never a
netCDF/HDF5 file cut in the middle (an append to one long-lived file would risk exactly
that). A checkpoint follows a flush, so it covers a whole number of parts: on resume
``truncate(n)`` keeps the parts of its ``n`` frames and deletes the later ones.

The result (``assemble``) is the parts, opened lazily with dask (read whole when all of
them hold less than a part), concatenated along ``time`` with the buffer; written
through ``streaming()`` it goes to disk a part at a time, so the memory is bounded by a
part, not by the run; ``open_detached`` reads the written result back lazily.

netCDF-C/HDF5 crash (segfault) when a file holding strings is open twice at once
(netcdf4-python#1444, HDFGroup/hdf5#5359), and a resumed run opens parts that the
interrupted run's dataset still holds: parts keep their strings (the ``component``
names) as char arrays, and ``open_detached`` holds no handle on the result.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from meanfield.errors import ConfigError, DamagedFileError
from meanfield.io import checksummed, read_failure, release_files, write_atomic
from meanfield.runs.relocate import FolderMoved, copy_from, identity

MiB = 2**20
PART_BYTES = 32 * MiB  # frames buffered before a part is written (patched in tests)
PART = re.compile(r"part-(\d+)\.nc")


def frames_path(path: str | Path) -> Path:
    """The folder of the part files of a result path: ``<path>.frames``."""
    path = Path(path)
    return path.with_name(path.name + ".frames")


def nbytes(frame: Any) -> int:
    """The bytes of the arrays in a frame (tuples, lists and dicts of arrays and
    numbers; a number counts 8)."""
    if isinstance(frame, np.ndarray):
        return frame.nbytes
    if isinstance(frame, dict):
        frame = frame.values()
    elif not isinstance(frame, (tuple, list)):
        return 8
    total = 0  # (a loop, not a generator: a particle save's frame in 1 us, not 6)
    for f in frame:
        total += f.nbytes if isinstance(f, np.ndarray) else nbytes(f)
    return total


class FrameStore:
    """The frames of one run, the first ``len(store)`` points of its schedule.

    Args:
        task: the ``RunTask``; its ``dataset(frames, info, start=k)`` makes a part.
        folder: where the parts go (None: all frames stay in memory).

    Attributes:
        frames: the frames in memory (all of them when nothing was written), the last
            ``len(frames)`` of the run.
        parts: the part files written, in order.
        flushed: the frames in those parts.
        lazy: whether the last ``assemble()`` holds the parts opened lazily.
    """

    def __init__(self, task: Any, folder: str | Path | None = None,
                 guard: Callable[[], None] | None = None):
        self.task = task
        self.folder = None if folder is None else Path(folder)
        self.guard = guard  # called before each part: raises FolderMoved (the output's)
        self.frames: list = []
        self.parts: list[Path] = []
        self.flushed = 0
        self.lazy = False
        self._bytes = 0
        self._fd: int | None = None  # the parts' folder, held open (meanfield.runs.relocate)

    def __len__(self) -> int:
        return self.flushed + len(self.frames)

    def append(self, frame: Any) -> None:
        """Keep a frame (in memory; ``spill`` may write it out)."""
        self.frames.append(frame)
        self._bytes += nbytes(frame)

    def spill(self) -> None:
        """Write the buffer as a part if it has passed ``PART_BYTES`` (checked per frame;
        written per part, so many small frames cost one write per ``PART_BYTES``)."""
        if self.folder is not None and self._bytes > PART_BYTES:
            self.flush()

    def flush(self) -> None:
        """Write the frames in memory as the next part (nothing without a folder). The
        buffer is dropped only once the part is in place: Ctrl-C while writing keeps it."""
        if self.folder is None or not self.frames:
            return
        self._settle()
        ds = self.task.dataset(self.frames, {}, start=self.flushed)
        path = self.folder / f"part-{self.flushed:06d}.nc"
        chars = {name: {"dtype": "S1"} for name, var in ds.variables.items()
                 if var.dtype.kind in "OU"}  # no NC_STRING: see the module docstring
        ds = checksummed(ds, chars)  # (fletcher32: a damaged part fails its read)
        write_atomic(path, lambda tmp: ds.to_netcdf(tmp, engine="netcdf4"))
        self.parts.append(path)
        self.flushed += len(self.frames)
        self.frames, self._bytes = [], 0

    def _settle(self) -> None:
        """Before a part is written: the folder is made and held open the first time,
        and must be the same folder later (else ``FolderMoved``; ``move_to`` follows)."""
        if self.guard is not None:
            self.guard()
        if self._fd is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
        elif identity(self.folder) != identity(self._fd):
            raise FolderMoved(self.folder)

    def move_to(self, folder: Path) -> None:
        """Go on in ``folder``: the parts written so far are copied there from the old
        folder, wherever it went (through the descriptor held open).

        Raises:
            FileNotFoundError: the old folder's parts are gone (it was deleted).
        """
        if self._fd is not None:
            self.parts = copy_from(self._fd, [p.name for p in self.parts], folder)
            release_files(self.folder)
            self.close()
        self.folder = folder

    def close(self) -> None:
        """Let go of the parts' folder (held open since the first part)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def truncate(self, n: int) -> None:
        """Keep the first ``n`` frames: those of the parts that a checkpoint covers (a
        fresh run: none). Later parts (written after the checkpoint) and temp files left
        by a kill are deleted; the buffer is emptied.

        Raises:
            ConfigError (key ``resume``): the parts of the first ``n`` frames are missing
                or unreadable.
        """
        self.frames, self._bytes, self.parts, self.flushed = [], 0, [], 0
        if self.folder is not None:  # read from disk, not a handle an earlier run left
            release_files(self.folder)
        if self.folder is None or not self.folder.is_dir():
            self._check_covered(n, "the folder is missing")
            return
        self.close()  # held from now on: the parts kept are followed if it moves
        self._fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
        found = []
        for path in self.folder.iterdir():
            match = PART.fullmatch(path.name)
            if match is None or int(match.group(1)) >= n:
                _remove(path)  # a temp file or a part beyond the checkpoint
            else:
                found.append((int(match.group(1)), path))
        for start, path in sorted(found):
            if start != self.flushed:
                break  # a gap: reported below
            self.parts.append(path)
            self.flushed += self._count(path)
        self._check_covered(n, f"the parts hold {self.flushed} frames")

    def _check_covered(self, n: int, why: str) -> None:
        if self.flushed != n:
            raise ConfigError(
                f"the checkpoint covers {n} saved frames but their part files in "
                f"{str(self.folder)!r} are incomplete ({why}); they cannot be resumed: "
                "pass --overwrite (without --resume) to run again", "resume")

    def _count(self, path: Path) -> int:
        """The frames in a part file, read whole so that every chunk's checksum is
        verified before a run continues from it (ConfigError if it cannot be read)."""
        try:
            with xr.open_dataset(path, engine="netcdf4") as ds:
                return ds.load().sizes["time"]
        except Exception as exc:  # noqa: BLE001 - truncated, empty, not netCDF at all
            raise ConfigError(
                f"the part file {str(path)!r} of the checkpoint cannot be read "
                f"({read_failure(exc)}): pass --overwrite (without --resume) to run "
                "again", "resume") from None

    def assemble(self, info: dict) -> xr.Dataset:
        """All frames as the task's dataset with ``info`` in its attrs: in memory if no
        part was written or all of them hold less than ``PART_BYTES`` (read whole: no
        dask graph for a short run that was checkpointed), else the parts opened lazily
        (one dask chunk per part) and the buffer; the same variables, coordinates, attrs
        and values either way. ``lazy`` says which."""
        self.lazy = False
        if not self.parts:
            return self.task.dataset(self.frames, info)
        with xr.open_dataset(self.parts[0], engine="netcdf4") as first:
            order, attrs = list(first.data_vars), dict(first.attrs)
        same = {"data_vars": "minimal", "coords": "minimal", "compat": "override",
                "join": "override", "combine_attrs": "override"}
        self.lazy = sum(p.stat().st_size for p in self.parts) + self._bytes > PART_BYTES
        if self.lazy:
            pieces = [xr.open_mfdataset(self.parts, engine="netcdf4", combine="nested",
                                        concat_dim="time", chunks={}, parallel=False,
                                        **same)]
        else:
            pieces = [_load(path) for path in self.parts]
        if self.frames:
            pieces.append(self.task.dataset(self.frames, {}, start=self.flushed))
        ds = xr.concat(pieces, dim="time", **same) if len(pieces) > 1 else pieces[0]
        # the in-memory dataset's order of variables; encodings read from the parts
        # (chunk sizes, fill values of a part's shape) would not fit the whole
        ds = ds[order].drop_encoding()
        ds.attrs = {**attrs, **info}
        return ds

    def remove(self) -> None:
        """Delete the part files and their folder (the result is written), closing
        every handle this process still holds on them first (``release_files``)."""
        if self.folder is not None:
            release_files(self.folder)
            shutil.rmtree(self.folder, ignore_errors=True)
        self.close()
        self.parts, self.flushed = [], 0


@contextlib.contextmanager
def streaming(lazy: bool = True) -> Iterator[None]:
    """Compute lazily opened frames one chunk at a time while writing them (dask's
    synchronous scheduler: one part in memory, no threads beside the run's); nothing
    (dask not even imported) for frames in memory (``lazy`` false)."""
    if not lazy:
        yield
        return
    import dask

    with dask.config.set(scheduler="synchronous"):
        yield


def _load(path: Path) -> xr.Dataset:
    with xr.open_dataset(path, engine="netcdf4") as ds:
        return ds.load()


_READ_LOCK = threading.Lock()  # one netCDF open at a time (dask may read in threads)


def open_detached(path: str | Path) -> xr.Dataset:
    """A written result, lazily: its per-frame (``time``) variables are dask arrays whose
    chunks (about ``PART_BYTES`` each) open the file, read and close it; the rest is
    loaded. No file handle stays open, so the file can be opened again, read and replaced
    while the dataset lives (see the module docstring). ``.load()`` gives numpy arrays."""
    import dask
    import dask.array as da

    path = str(path)
    with xr.open_dataset(path, engine="netcdf4") as ds:
        order = list(ds.data_vars)
        lazy = [name for name, var in ds.data_vars.items() if "time" in var.dims
                and var.dtype.kind in "fiu" and not {"scale_factor", "add_offset"}
                & set(var.encoding)]  # read raw: the same values as decoded
        result = ds.drop_vars(lazy).load()
        for name in lazy:
            var = ds[name].variable
            axis = var.dims.index("time")
            row = max(var.dtype.itemsize * var.size // max(var.shape[axis], 1), 1)
            step = max(PART_BYTES // row, 1)
            blocks = []
            for start in range(0, var.shape[axis], step):
                stop = min(start + step, var.shape[axis])
                shape = var.shape[:axis] + (stop - start,) + var.shape[axis + 1:]
                where = (slice(None),) * axis + (slice(start, stop),)
                blocks.append(da.from_delayed(dask.delayed(_read, pure=True)(
                    path, name, where), shape=shape, dtype=var.dtype))
            data = da.concatenate(blocks, axis=axis) if blocks else var.values
            result[name] = xr.Variable(var.dims, data, var.attrs)
    return result[order]


def _read(path: str, name: str, where: tuple) -> np.ndarray:
    """``name[where]`` of a netCDF file, opened and closed here."""
    import netCDF4

    with _READ_LOCK, netCDF4.Dataset(path) as nc:
        var = nc.variables[name]
        var.set_auto_maskandscale(False)
        try:
            return np.asarray(var[where])
        except RuntimeError as exc:  # a chunk failed its checksum: one line, the file
            raise DamagedFileError(path, read_failure(exc)) from None


def _remove(path: Path) -> None:
    release_files(path)
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
