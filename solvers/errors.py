"""Errors of the numerics layer (re-exported by ``meanfield.errors``)."""
from __future__ import annotations


class SolverError(RuntimeError):
    """A run became unstable or unphysical; the message says what to change."""


class StepSizeError(SolverError):
    """The step size fell below its floor, or a fixed step exceeds the stability bound."""
