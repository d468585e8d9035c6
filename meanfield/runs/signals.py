"""Ctrl-C and SIGTERM around compiled code: ``DeferredSignals`` (``solvers.signals``,
where the chunked kernels below the runs use it too), re-exported for the runs and
studies."""
from __future__ import annotations

from solvers.signals import DeferredSignals

__all__ = ["DeferredSignals"]
