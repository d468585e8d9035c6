"""Exceptions raised by meanfield.

``ConfigError`` is raised for bad input before any work starts; ``SolverError`` when a
run goes wrong while computing (instability, lost positivity) and says what to change.
"""
from __future__ import annotations

from solvers.errors import SolverError, StepSizeError  # noqa: F401


class ConfigError(ValueError):
    """A configuration value is invalid.

    Attributes:
        key: dotted name of the offending key (``"model.beta"``), or ``None`` when the
            problem is not tied to one key (a TOML syntax error, say).
    """

    def __init__(self, message: str, key: str | None = None):
        super().__init__(message)
        self.key = key


class OutputError(RuntimeError):
    """A finished result could not be written where asked; the message says where it was
    kept instead."""


class ResultExistsError(ConfigError, FileExistsError):
    """An output file exists and ``overwrite`` was not requested (bad input: exit 2)."""


class DamagedFileError(ConfigError):
    """A netCDF file that fails its read: a chunk's checksum or the file's structure
    (damaged on disk, cut short). A ``ConfigError`` (exit status 2): one line naming the
    file, never wrong numbers.

    Attributes:
        path: the file.
        reason: why the read failed (``meanfield.io.read_failure``).
    """

    def __init__(self, path: str, reason: str, key: str | None = "result"):
        super().__init__(f"{path!r} cannot be read ({reason})", key)
        self.path = path
        self.reason = reason
