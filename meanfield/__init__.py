"""meanfield: mean-field dynamics of self-attention on the circle and the sphere.

The entry points take one config (a dict, or a TOML file through the CLI) and return an
``xarray.Dataset``::

    import meanfield
    ds = meanfield.evolve({"model": {"beta": 1.0, "kappa": 4.0}})

See ``meanfield.config`` for the keys and their defaults.
"""
from __future__ import annotations

__version__ = "0.1.0"

from meanfield.errors import ConfigError, SolverError  # noqa: E402
from meanfield.evolve import evolve  # noqa: E402

__all__ = ["ConfigError", "SolverError", "evolve", "__version__"]
