"""Reading and writing results: netCDF through xarray, written atomically.

A result is written to a temporary file in the target directory and renamed over the
target only when complete, so a crash or Ctrl-C never leaves a half-written file; an
existing result is replaced only with ``overwrite=True``.

Every array is written with HDF5's fletcher32 checksum, one per chunk (``checksummed``),
so a file damaged on disk fails its read instead of giving wrong numbers; the failure is
reported in one line naming the file (``read_failure``). Files written before the
checksums (contiguous arrays, no filter) read as before.
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Callable

import xarray as xr

from meanfield.errors import ConfigError, DamagedFileError, ResultExistsError


# What a path names when it is not a regular file (``S_IS*`` test, words).
NOT_REGULAR = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))
# Bytes the names made from a result's name add to it: its checkpoint's temporary file
# ``.<name>.checkpoint.XXXXXXXX.tmp.nc`` is 28 longer; a margin of 4.
DERIVED_NAME_BYTES = 32
FULL_BYTES = 2**20  # a write that fails with less free space than this: the disk is full


def _named(key: str) -> str:
    """The key of an output path as a message names it: the config key and the flag."""
    return key if key.startswith("--") else f"{key} (--out)"


def check_target(path: str | Path, key: str = "output.path",
                 name: bool = True) -> os.stat_result | None:
    """Refuse what no flag makes a result: a path naming something other than a regular
    file (a directory, device, FIFO or socket: never written or replaced, with or without
    ``overwrite``) or (``name``) a name too long for the files made from it (its
    checkpoint, temporary files); its ``stat`` (None: absent).

    Raises:
        ConfigError: one line naming ``key`` and ``--out`` (``ResultExistsError`` for a
            directory, as before).
    """
    path, label = Path(path), _named(key)
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        st = None
    except OSError as exc:  # ENAMETOOLONG, ELOOP, EACCES: one line, no traceback
        raise ConfigError(f"{label} = {str(path)!r} cannot be used ({exc.strerror or exc}); "
                          "choose another name", key) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise ResultExistsError(f"{label} = {str(path)!r} is a directory; give a file "
                                f"name such as {str(path / 'result.nc')!r}", key)
    for test, what in NOT_REGULAR:
        if st is not None and test(st.st_mode):
            raise ConfigError(f"{label} = {str(path)!r} is {what}, not a regular file: only "
                              "regular files are written or replaced; give a file name", key)
    if not name:
        return st
    folder = next((f for f in path.parents if f.is_dir()), Path("."))
    try:
        limit = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    size = len(os.fsencode(path.name))
    if size > limit - DERIVED_NAME_BYTES:
        raise ConfigError(f"{label} = {str(path)!r}: the file name is too long ({size} "
                          f"bytes; at most {limit - DERIVED_NAME_BYTES} here, the file "
                          f"system takes {limit} and the run's checkpoint and temporary "
                          f"files add {DERIVED_NAME_BYTES}); choose a shorter name", key)
    return st


def check_writable(path: str | Path, overwrite: bool, key: str = "output.path") -> Path:
    """Before any work: refuse what ``check_target`` refuses, an existing ``path`` unless
    ``overwrite``, and a place where no file can be written (a file is created and
    removed beside it; the missing parent directories are made)."""
    path = Path(path)
    if check_target(path, key) is not None and not overwrite:
        raise ResultExistsError(f"{key} = {str(path)!r} exists; pass --overwrite "
                                "(overwrite=True) to replace it", key)
    for folder in path.parents:  # the nearest existing ancestor must be a folder
        if folder.exists():
            if not folder.is_dir():
                raise ConfigError(f"{key} = {str(path)!r} cannot be written: "
                                  f"{str(folder)!r} is a file, not a folder", key)
            break
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe",
                                     dir=path.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ConfigError(f"{key} = {str(path)!r} cannot be written ({exc.strerror or exc}"
                          f" in {str(path.parent)!r}); choose another place", key) from None
    return path


def release_files(under: str | Path) -> None:
    """Close xarray's cached netCDF handles on the files under ``under`` (a file or a
    folder) before they are deleted or replaced.

    A lazily opened dataset (the assembled parts, an interrupted run's result) keeps its
    files open in xarray's file cache, and a dataset derived from it cannot close them.
    HDF5 knows open files by inode: once such a file is deleted, a new file that reuses
    its inode is read through the stale handle, which crashed a test process (a segfault
    in the HDF5 read of the next run's parts). A dataset whose file was released reads
    it again by name if it is still used: an error if it is gone, never the wrong file.
    """
    try:
        from xarray.backends.file_manager import FILE_CACHE
    except ImportError:  # (a future xarray without the cache: nothing to release)
        return
    root = Path(under).resolve()
    for key, handle in list(FILE_CACHE.items()):
        try:
            where = Path(handle.filepath()).resolve()
        except Exception:  # (another backend's handle, or one already closed)
            continue
        if where == root or root in where.parents:
            FILE_CACHE.pop(key, None)
            with contextlib.suppress(Exception):
                handle.close()


def write_atomic(path: str | Path, save: Callable[[str], None]) -> Path:
    """Run ``save(tmp)`` on a temp file beside ``path``, then rename it to ``path``.

    The temp file keeps the suffix of ``path`` (writers such as matplotlib's choose the
    format by it) and is removed if ``save`` fails or is interrupted.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}",
                               dir=path.parent)
    os.close(fd)
    try:
        try:
            save(tmp)
        except (OSError, RuntimeError) as exc:  # (netCDF: EACCES or "HDF error" when full)
            if _full(path.parent):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path)) from exc
            raise
        os.chmod(tmp, 0o644)
        check_target(path, "--out", name=False)  # (a FIFO made since the check: kept)
        release_files(path)  # (the file replaced: no handle may outlive its inode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _full(folder: Path) -> bool:
    """Whether the file system of ``folder`` has less than ``FULL_BYTES`` left (asked
    while the failed temp file still holds its blocks). netCDF-C/HDF5 report a full disk
    as "Permission denied" or "HDF error"; this says what happened."""
    try:
        st = os.statvfs(folder)
    except OSError:
        return False
    free = st.f_bfree if os.geteuid() == 0 else st.f_bavail  # (root may use the reserve)
    return free * st.f_frsize < FULL_BYTES


def checksummed(ds: xr.Dataset, encoding: dict | None = None) -> xr.Dataset:
    """A shallow copy of ``ds`` whose arrays are written with a fletcher32 checksum per
    chunk (netCDF4/HDF5 verify it on every read), ``encoding[name]`` merged into theirs.

    A filter needs a chunked layout: ``contiguous`` (kept in the encoding of a dataset
    read from a file written before the checksums) is dropped, and a scalar, which cannot
    be chunked, goes without.
    """
    encoding = encoding or {}
    out = ds.copy(deep=False)
    for name, var in out.variables.items():
        enc = {k: v for k, v in var.encoding.items() if k != "contiguous"}
        enc.update(encoding.get(name, {}))
        if var.ndim:
            enc["fletcher32"] = True
        var.encoding = enc
    return out


# HDF5's chunk cache of each variable of each file opened inside ``small_chunk_cache``:
# netCDF's default, 64 MiB, is kept by every part file a streamed run reads back; a run of
# 200 MiB of frames (801 x 32768 doubles in 7 parts) peaked at 368 MiB where 92 MiB did
# before the checksums' chunked layout (the contiguous arrays had no cache); with 1 MiB,
# 99 MiB. The parts are read and the result written chunk by chunk, in order, so a larger
# cache holds nothing that is read again.
CHUNK_CACHE_BYTES = 2**20


@contextlib.contextmanager
def small_chunk_cache(size: int = CHUNK_CACHE_BYTES):
    """The netCDF files opened inside get a chunk cache of ``size`` bytes per variable
    (netCDF4's process-wide default for files opened from then on, restored after;
    the files keep theirs while open)."""
    import netCDF4

    before = netCDF4.get_chunk_cache()
    netCDF4.set_chunk_cache(size, before[1], before[2])
    try:
        yield
    finally:
        netCDF4.set_chunk_cache(*before)


def read_failure(exc: BaseException) -> str:
    """Why a netCDF read failed, for a one-line message: HDF5's generic error (what a
    failed checksum raises, or a damaged structure) is named as such."""
    if isinstance(exc, DamagedFileError):
        return exc.reason
    text = f"{type(exc).__name__}: {exc}"
    if "HDF error" in str(exc):
        return f"damaged: a checksum or the file's structure fails ({text})"
    return text


def write_netcdf(ds: xr.Dataset, path: str | Path, overwrite: bool = False) -> Path:
    """Write ``ds`` to ``path`` atomically, refusing an existing file unless ``overwrite``."""
    path = check_writable(path, overwrite)
    return write_atomic(path,
                        lambda tmp: checksummed(ds).to_netcdf(tmp, engine="netcdf4"))


def read_netcdf(path: str | Path) -> xr.Dataset:
    """Load a result into memory (the file is closed on return). Every array is read
    whole, so each chunk's checksum is verified here."""
    try:
        with xr.open_dataset(path, engine="netcdf4") as ds:
            return ds.load()
    except RuntimeError as exc:  # netCDF4's error for HDF5's (a failed checksum among them)
        if "HDF error" not in str(exc):
            raise
        raise DamagedFileError(str(path), read_failure(exc)) from None
