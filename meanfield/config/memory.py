"""The memory this machine can give, and the dense d x d matrices config validation forms.

Validation forms the weights' matrices in two places before any run plan is made: the
rescaled flow's logits ``E^T Q^T K E`` at ``time.t_final`` (``weights._check_rescalable``)
and the rescaled layers' ``R = I + tau V`` with its condition number
(``layers._check_invertible``). At ``domain.dim = 40000`` that was a MemoryError in the
middle of validation (three 12.8 GB matrices before the first product), so
``check_formed`` estimates them first. The runs' own estimates (``meanfield.runs.budget``,
``meanfield.runs.sizes``) read the memory from here too.

Their time too: an eigendecomposition (or ``expm``), an inverse, an SVD and products are
O(d^3) LAPACK calls that Ctrl-C cannot stop. ``check_formed`` warns in one line
(``LongValidationWarning``) when they take more than ``FORMED_WARN_S`` and refuses, naming
``domain.dim``, beyond ``MAX_FORMED_S``, from a lower bound of ``FORMED_S_PER_D3`` seconds
per d^3.
"""
from __future__ import annotations

import math
import os
import warnings

from meanfield.errors import ConfigError

GiB = 2**30
MEMORY_MARGIN = 0.8  # of MemAvailable: the rest is left to the system and other programs
# d x d float64 arrays alive while validation checks the rescaled weights: Q, K, V, Q^T K,
# the exponential's eigenvectors, their inverse and E, the logits and a product's
# temporary (R, its SVD's copy and factor for the layers: fewer)
FORMED_MATRICES = 9
# seconds per d^3 of those checks at least (measured on 2 cores: a symmetric V 1.0 ns
# (eigh, 3 products) at d = 1000-2000, a general V 8-14 ns (eig, cond, expm), R's
# condition number 1.2 ns: d = 5000 is >= 2 min, 16000 >= 1.1 h)
FORMED_S_PER_D3 = 1e-9
FORMED_WARN_S = 60.0  # a validation longer than this is warned about (one line)
MAX_FORMED_S = 3600.0  # and refused beyond this: an hour inside calls Ctrl-C cannot stop


class LongValidationWarning(UserWarning):
    """Config validation's O(d^3) checks will take more than ``FORMED_WARN_S``."""


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
    ``domain.dim``, the size in GiB and the largest dimension that fits; then their
    O(d^3) time (``check_formed_time``). Returns bytes."""
    d = cfg["domain"]["dim"]
    need = FORMED_MATRICES * float(d) * d * 8
    limit = MEMORY_MARGIN * (available_memory() if available is None else available)
    if need > limit:
        fits = int(math.sqrt(limit / (8.0 * FORMED_MATRICES)))
        raise ConfigError(f"domain.dim = {d}: {why} forms {FORMED_MATRICES} dense d x d "
                          f"matrices, about {need / GiB:.3g} GiB, but {limit / GiB:.3g} GiB "
                          f"are available ({MEMORY_MARGIN:.0%} of the free memory); give "
                          f"domain.dim <= {fits}", "domain.dim")
    check_formed_time(d, why)
    return need


def check_formed_time(d: int, why: str) -> float:
    """The seconds of validation's O(d^3) checks at least, ``FORMED_S_PER_D3 d^3``:
    beyond ``MAX_FORMED_S`` a ``ConfigError`` naming ``domain.dim`` and the largest that
    fits, beyond ``FORMED_WARN_S`` a ``LongValidationWarning`` (one line). Returns the
    seconds."""
    seconds = FORMED_S_PER_D3 * float(d) ** 3
    if seconds > MAX_FORMED_S:
        fits = int((MAX_FORMED_S / FORMED_S_PER_D3) ** (1.0 / 3.0))
        raise ConfigError(f"domain.dim = {d}: {why} takes O(d^3) dense linear algebra, at "
                          f"least {seconds / 3600:.3g} h in calls that Ctrl-C cannot stop "
                          f"(limit {MAX_FORMED_S / 3600:.3g} h); give domain.dim <= {fits}",
                          "domain.dim")
    if seconds > FORMED_WARN_S:
        warnings.warn(f"domain.dim = {d}: {why} takes O(d^3) dense linear algebra, at "
                      f"least {seconds / 60:.3g} min before the run starts (and Ctrl-C "
                      "waits for it)", LongValidationWarning, stacklevel=3)
    return seconds
