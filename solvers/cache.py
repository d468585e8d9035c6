"""The package's user cache directory, and numba's compiled functions kept in it.

One directory holds what is computed once and reused between runs: FFTW wisdom
(``solvers.transforms.fft``) and numba's compiled functions (``cache=True``). It is
``$MEANFIELD_CACHE`` if set, else ``~/.cache/meanfield``.

Why numba's cache is moved: by default numba writes its cache files into a
``__pycache__`` folder beside each module. For an installed package that is
``site-packages/meanfield/__pycache__``: files pip never recorded, so a later
``pip uninstall`` (or ``pip install -e``, which uninstalls first) leaves the folder behind,
and the empty ``meanfield`` namespace package it forms hides the new install.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

NUMBA_SUBDIR = "numba"


def cache_dir() -> Path:
    """The user cache directory: ``$MEANFIELD_CACHE``, else ``~/.cache/meanfield``."""
    base = os.environ.get("MEANFIELD_CACHE") or Path.home() / ".cache" / "meanfield"
    return Path(base)


def default_numba_cache_dir() -> None:
    """Point numba's cache at ``cache_dir()/numba`` unless the user chose a directory.

    An environment default, not a computation: ``NUMBA_CACHE_DIR`` is set only if unset
    (numba reads it when it is first imported), and a numba imported earlier without it
    gets the same directory in its config. Nothing is created here; numba makes the
    folder on first write, and falls back to its own locations if it cannot.
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    path = str(cache_dir() / NUMBA_SUBDIR)
    os.environ["NUMBA_CACHE_DIR"] = path
    numba = sys.modules.get("numba")
    config = getattr(numba, "config", None)
    if config is not None and not getattr(config, "CACHE_DIR", ""):
        config.CACHE_DIR = path
