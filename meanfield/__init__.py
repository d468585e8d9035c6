"""meanfield: mean-field dynamics of self-attention on the circle and the sphere.

The entry points take one config (a dict, or a TOML file through the CLI) and return an
``xarray.Dataset``::

    import meanfield
    ds = meanfield.evolve({"model": {"beta": 1.0, "kappa": 4.0}})      # the PDE
    ps = meanfield.particles({"particles": {"n": 2000}})                # tokens
    cmp = meanfield.compare({"particles": {"n": 500, "ensemble": 4}})   # both

See ``meanfield.config`` for the keys and their defaults.
"""
from __future__ import annotations

__version__ = "0.1.0"

from meanfield.errors import ConfigError, SolverError  # noqa: E402
from meanfield.runs.evolve import evolve  # noqa: E402

__all__ = ["ConfigError", "SolverError", "compare", "evolve", "particles", "__version__"]


def __getattr__(name: str):
    # The particle entry points load numba kernels and the fast-sum libraries: imported
    # on first use, so that ``import meanfield`` stays light.
    if name == "particles":
        from meanfield.runs.particles import particles
        return particles
    if name == "compare":
        from meanfield.studies.compare import compare
        return compare
    raise AttributeError(f"module 'meanfield' has no attribute {name!r}")
