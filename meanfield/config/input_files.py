"""The input files of a run: where they are, how they are read, and what the result
records of them.

A config names input files in two places: a matrix spec ``{file = "M.npy"}`` (any
``file`` key of ``[weights]``, ``[feedforward]`` and the study weights) and the ``path``
of ``[initial]`` kinds ``samples`` and ``tokens`` (mixture components included).

- Where (``resolve``): a relative path in a config FILE is relative to that file's
  folder (``config.load`` resolves it once, before validation, so the file that is
  checked is the file that is run, wherever the command is started). A config given to
  the Python API as a dict has no folder: its relative paths are relative to the
  working directory.
- How (``read_numbers``): one reader for every input file. Only a regular file is read
  (a directory, a device such as ``/dev/zero``, a FIFO or socket is refused by name);
  ``.npy`` files are read with ``allow_pickle=False`` and only when they start with the
  NumPy magic bytes (a text file named ``.npy`` is said to be one); a complex or
  non-numeric array is refused as the Python API refuses it; and no error quotes the
  file's contents (a file that is not numbers may hold anything: ``/proc/self/
  environ``).
- What is recorded (``record``): each input's key, absolute path and SHA-256 of its
  bytes (and the numbers themselves when there are at most ``SMALL_VALUES``), as the JSON
  attribute ``inputs`` of every checkpoint and result; ``check_unchanged`` refuses to
  resume when a file's digest changed since the run began (a resumed run would join two
  models in one result).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import warnings
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from meanfield.config.checkers import describe
from meanfield.errors import ConfigError

# Kinds of [initial] (and of its mixture components) that read a file at ``path``.
FILE_KINDS = ("samples", "tokens")
# The sections whose matrix specs may be ``{file = "M.npy"}`` (at any depth: heads,
# layers, the study weights).
MATRIX_SECTIONS = ("weights", "feedforward")
# Arrays of at most this many numbers are recorded with their values (small matrices).
SMALL_VALUES = 256
SMALL_BYTES = 1 << 16  # (files beyond are not read again for their values)
NPY_MAGIC = b"\x93NUMPY"
_CHUNK = 1 << 20


# ---------------------------------------------------------------------------------------
# Where: the input files of a config, and their paths against the config's folder.

def _specs(table: Any, key: str) -> Iterator[tuple[dict, str, str]]:
    """``(table, name, dotted key)`` of every input path under ``table`` (a section or
    part of one, raw or validated): matrix specs ``{file}`` at any depth."""
    if isinstance(table, dict):
        if isinstance(table.get("file"), str):
            yield table, "file", f"{key}.file"
        for name, value in table.items():
            if name != "file":
                yield from _specs(value, f"{key}.{name}")
    elif isinstance(table, (list, tuple)):
        for i, value in enumerate(table):
            yield from _specs(value, f"{key}[{i}]")


def _initial_paths(table: Any, key: str) -> Iterator[tuple[dict, str, str]]:
    if not isinstance(table, dict):
        return
    if table.get("kind") in FILE_KINDS and isinstance(table.get("path"), str):
        yield table, "path", f"{key}.path"
    comps = table.get("components")
    if isinstance(comps, (list, tuple)):
        for i, comp in enumerate(comps):
            yield from _initial_paths(comp, f"{key}.components[{i}]")


def input_paths(cfg: dict) -> Iterator[tuple[dict, str, str]]:
    """``(table, name, key)`` of each input file a config names (``table[name]`` is the
    path): ``[initial]``'s ``path`` and every ``file`` of a matrix spec."""
    for section, table in cfg.items():
        if section == "initial":
            yield from _initial_paths(table, section)
        elif section in MATRIX_SECTIONS:
            yield from _specs(table, section)


def resolve(raw: dict, base: str | Path) -> None:
    """Make each relative input path of a raw config (in place) absolute against
    ``base``, the folder of the config file (empty strings are left to validation)."""
    folder = Path(os.path.abspath(base))
    for table, name, _ in list(input_paths(raw)):
        if table[name] and not Path(table[name]).is_absolute():
            table[name] = str(folder / table[name])


# ---------------------------------------------------------------------------------------
# How: the one reader of input files.

def regular_file(path: str, key: str) -> Path:
    """``path`` as a Path if it names a regular file (symbolic links followed).

    Raises:
        ConfigError: (``key``) no such file, a directory, or not a regular file (a
            device, FIFO or socket: reading ``/dev/zero`` never ends, a FIFO blocks).
    """
    p = Path(path)
    try:
        st = p.stat()
    except (FileNotFoundError, NotADirectoryError):
        raise ConfigError(f"{key} = {path!r}: no such file", key) from None
    except OSError as exc:
        raise ConfigError(f"{key} = {path!r} cannot be read ({exc.strerror or exc})",
                          key) from None
    if stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{key} = {path!r} is a directory; give a file", key)
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"{key} = {path!r} is not a regular file (a device, FIFO or "
                          "socket); give a file", key)
    return p


def read_numbers(path: str, key: str, entries: str | None = None,
                 formats: str = ".npy, .csv or whitespace-separated text") -> np.ndarray:
    """The numbers of an input file as a float array: a ``.npy`` array as stored, a
    ``.csv`` or other text file as rows (2 dimensions, ``numpy.loadtxt``).

    Args:
        path: the file.
        key: the config key naming it (``weights.value.file``, ``initial.path``).
        entries: the key an entry is named by (``weights.value`` gives
            ``weights.value[0][0]``, as a complex array given in Python is refused);
            default ``key``.
        formats: the formats, in words, for the error message.

    Raises:
        ConfigError: (``key``) see ``regular_file``; not a ``.npy`` file despite its
            name, an array of objects, strings or complex numbers, text that is not
            numbers. No message quotes the file.
    """
    p = regular_file(path, key)
    where = f"{key} = {path!r}"
    try:
        if p.suffix == ".npy":
            data = _read_npy(p, where, key)
        else:
            with warnings.catch_warnings():  # an empty file: said by the caller
                warnings.simplefilter("ignore", UserWarning)
                data = np.loadtxt(p, ndmin=2, delimiter="," if p.suffix == ".csv" else None)
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - numpy raises several types for bad files
        raise ConfigError(f"{where} cannot be read as numbers ({formats}): "
                          f"{_why(exc)}", key) from None
    if data.dtype.kind == "c":
        entry = "".join(f"[{i}]" for i in np.unravel_index(0, data.shape))
        raise ConfigError(f"{entries or key}{entry} = {describe(complex(data.flat[0]))} must "
                          f"be a number ({where} holds a complex array; a real one is "
                          "needed)", key)
    if data.dtype.kind not in "biuf":
        raise ConfigError(f"{where} holds an array of {data.dtype.name} data, not numbers "
                          f"({formats})", key)
    return np.asarray(data, dtype=float)


def _read_npy(p: Path, where: str, key: str) -> np.ndarray:
    with open(p, "rb") as fh:
        magic = fh.read(len(NPY_MAGIC))
    if magic != NPY_MAGIC:
        raise ConfigError(f"{where} is not a .npy file (it does not start with the NumPy "
                          "header: a text file? name it .txt, or .csv for commas)", key)
    try:
        return np.load(p, allow_pickle=False)
    except ValueError as exc:
        if "pickle" in str(exc):  # an object array: never unpickled (it could run code)
            raise ConfigError(f"{where} holds Python objects (a pickled object array), not "
                              "numbers; save a numeric array", key) from None
        raise ConfigError(f"{where} is a damaged .npy file (its header or data cannot be "
                          "read: cut short?)", key) from None
    except (OSError, EOFError):
        raise ConfigError(f"{where} is a damaged .npy file (its header or data cannot be "
                          "read: cut short?)", key) from None


def _why(exc: Exception) -> str:
    """Why a text file is not numbers, naming rows and columns, never the text (numpy's
    messages quote the line)."""
    text = str(exc)
    at = re.search(r"at row (\d+), column (\d+)", text)
    if at:
        return (f"line {int(at.group(1)) + 1}, column {at.group(2)} is not a number (the "
                "file is not numbers; its contents are not shown)")
    cols = re.search(r"number of columns changed from (\d+) to (\d+) at row (\d+)", text)
    if cols:
        return (f"line {cols.group(3)} has {cols.group(2)} numbers where the lines before "
                f"have {cols.group(1)}")
    if isinstance(exc, UnicodeDecodeError):
        return "it is not text (nor a .npy file)"
    return f"it is not numbers ({type(exc).__name__}; its contents are not shown)"


# ---------------------------------------------------------------------------------------
# What is recorded: key, absolute path and digest of each input file.

def digest(path: str | Path) -> str:
    """The SHA-256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def record(cfg: dict) -> list[dict]:
    """``{key, path, sha256}`` of each input file of a validated config (``path``
    absolute; ``values`` too, as nested lists, for at most ``SMALL_VALUES`` numbers)."""
    out = []
    for table, name, key in input_paths(cfg):
        path = os.path.abspath(table[name])
        regular_file(path, key)
        entry = {"key": key, "path": path, "sha256": digest(path)}
        if os.path.getsize(path) <= SMALL_BYTES:  # (a large file is not parsed again)
            try:
                values = read_numbers(path, key)
            except ConfigError:  # (checked by the reader of its kind; the digest holds)
                values = None
            if values is not None and values.size <= SMALL_VALUES:
                entry["values"] = values.tolist()
        out.append(entry)
    return out


def record_json(cfg: dict) -> str:
    """``record(cfg)`` as JSON: the ``inputs`` attribute of checkpoints and results."""
    return json.dumps(record(cfg))


def check_unchanged(recorded: str | None, checkpoint: str) -> None:
    """Before resuming from ``checkpoint``: each input file it recorded (JSON of
    ``record``; None for a checkpoint made before inputs were recorded) has the same
    digest now.

    Raises:
        ConfigError: naming the file and its key, when it changed or is gone.
    """
    if not recorded:
        return
    todo = (f"restore it, or pass --overwrite (without --resume) to discard the checkpoint "
            f"{checkpoint!r} and start again")
    for entry in json.loads(recorded):
        key, path = entry["key"], entry["path"]
        try:
            now = digest(path)
        except OSError as exc:
            raise ConfigError(f"{key} = {path!r}: the input file the run began with cannot "
                              f"be read now ({exc.strerror or exc}); {todo}", key) from None
        if now != entry["sha256"]:
            raise ConfigError(f"{key} = {path!r} has changed since the run began (SHA-256 "
                              f"{entry['sha256'][:12]}... then, {now[:12]}... now): a "
                              f"resumed run would join two models in one result; {todo}",
                              key)
