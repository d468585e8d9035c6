"""Numerics with no attention physics: grids, transforms, operators, time steppers.

``solvers`` receives convolution multipliers and callables, never models; it does not
import ``meanfield``.

Importing it sets one environment default before any numba import: numba's compiled
functions go to the user cache directory, not beside the installed modules (see
``solvers.cache``).
"""
from solvers.cache import default_numba_cache_dir

default_numba_cache_dir()
