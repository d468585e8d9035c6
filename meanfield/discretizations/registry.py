"""The registered discretizations: the built-in entries and the look-ups on them.

Importing this module defines (so registers) the six built-in entries; every look-up of
``meanfield.discretizations.base.Discretization`` imports it first. A new entry is a
subclass of ``Discretization`` with its ``geometry`` and ``method``, defined anywhere
(``docs/adding_a_discretization.md``).
"""
from __future__ import annotations

from meanfield.discretizations.base import Discretization
from meanfield.discretizations.circle import FiniteVolumeCircle, SpectralCircle
from meanfield.discretizations.sphere import FiniteVolumeSphere, SpectralSphere
from meanfield.discretizations.zonal import FiniteVolumeZonal, SpectralZonal

BUILTIN = (SpectralCircle, FiniteVolumeCircle, SpectralSphere, FiniteVolumeSphere,
           SpectralZonal, FiniteVolumeZonal)


def registered() -> list[tuple[str, str]]:
    """The registered (geometry, method) pairs, sorted."""
    return Discretization.registered()


def from_config(cfg: dict, threads: int | None = None) -> Discretization:
    """``Discretization.from_config``: grid, model and solver of a validated config."""
    return Discretization.from_config(cfg, threads)
