"""The memory this machine can give, and the dense d x d matrices config validation forms.

Validation forms the weights' matrices in two places before any run plan is made: the
rescaled flow's logits ``E^T Q^T K E`` at ``time.t_final`` (``weights._check_rescalable``)
and the rescaled layers' ``R = I + tau V`` with its condition number
(``layers._check_invertible``). At ``domain.dim = 40000`` that was a MemoryError in the
middle of validation (three 12.8 GB matrices before the first product), so
``check_formed`` estimates them first. The runs' own estimates (``meanfield.runs.budget``,
``meanfield.runs.sizes``) read the memory from here too.
"""
from __future__ import annotations

import math
import os

from meanfield.errors import ConfigError

GiB = 2**30
MEMORY_MARGIN = 0.8  # of MemAvailable: the rest is left to the system and other programs
# d x d float64 arrays alive while validation checks the rescaled weights: Q, K, V, Q^T K,
# the exponential's eigenvectors, their inverse and E, the logits and a product's
# temporary (R, its SVD's copy and factor for the layers: fewer)
FORMED_MATRICES = 9


def available_memory() -> int:
    """Bytes the system can give without swapping: MemAvailable, else free pages."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 2**62  # unknown: refuse nothing


def check_formed(cfg: dict, why: str, available: int | None = None) -> float:
    """Refuse, before validation forms them, ``FORMED_MATRICES`` dense ``d x d`` matrices
    that pass ``MEMORY_MARGIN`` of the available memory: ``ConfigError`` naming
    ``domain.dim``, the size in GiB and the largest dimension that fits. Returns bytes."""
    d = cfg["domain"]["dim"]
    need = FORMED_MATRICES * float(d) * d * 8
    limit = MEMORY_MARGIN * (available_memory() if available is None else available)
    if need > limit:
        fits = int(math.sqrt(limit / (8.0 * FORMED_MATRICES)))
        raise ConfigError(f"domain.dim = {d}: {why} forms {FORMED_MATRICES} dense d x d "
                          f"matrices, about {need / GiB:.3g} GiB, but {limit / GiB:.3g} GiB "
                          f"are available ({MEMORY_MARGIN:.0%} of the free memory); give "
                          f"domain.dim <= {fits}", "domain.dim")
    return need
