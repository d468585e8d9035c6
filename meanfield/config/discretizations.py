"""The (geometry, method) pairs of the discretizations, as the config knows them.

The config checks ``discretization.method`` against this table without importing the
discretizations, which sit above it in the layers (docs/architecture.md). The built-in
pairs are listed here; ``meanfield.discretizations.base.Discretization`` announces every
entry it registers (``announce``, from ``__init_subclass__``) and withdraws every entry it
unregisters (``withdraw``), so an entry defined anywhere else
(docs/adding_a_discretization.md) is accepted by the config as soon as its class is
defined. The arrow runs one way: the
registry writes here, the config reads here. A test checks that the table equals the
registry once the built-in entries are loaded
(``tests/meanfield/discretizations/test_config_table.py``).
"""
from __future__ import annotations

# The six built-in entries (meanfield.discretizations.registry.BUILTIN), in that order.
BUILTIN_PAIRS = (("circle", "spectral"), ("circle", "finite-volume"),
                 ("sphere", "spectral"), ("sphere", "finite-volume"),
                 ("zonal", "spectral"), ("zonal", "finite-volume"))

_pairs: set[tuple[str, str]] = set(BUILTIN_PAIRS)


def announce(geometry: str, method: str) -> None:
    """Add a registered pair (called by the registry of discretizations)."""
    _pairs.add((geometry, method))


def withdraw(geometry: str, method: str) -> None:
    """Remove an unregistered pair (called by the registry of discretizations)."""
    _pairs.discard((geometry, method))


def pairs() -> list[tuple[str, str]]:
    """The known (geometry, method) pairs, sorted."""
    return sorted(_pairs)


def methods(geometry: str | None = None) -> tuple[str, ...]:
    """The methods of the known pairs (on ``geometry``; None: any), in the order of the
    sorted pairs."""
    return tuple(dict.fromkeys(m for g, m in pairs() if geometry in (None, g)))
