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
