"""meanfield: mean-field dynamics of self-attention on the circle and the sphere.

The entry points take one config (a dict, or a TOML file) and return an
``xarray.Dataset``::

    import meanfield
    ds = meanfield.evolve({"model": {"beta": 1.0, "kappa": 4.0}})      # the PDE
    ps = meanfield.particles({"particles": {"n": 2000}})                # tokens
    cmp = meanfield.compare({"particles": {"n": 500, "ensemble": 4}})   # both
    bif = meanfield.bifurcation({"model": {"beta": 0.0},                # branches in kappa
                                 "bifurcation": {"start": 1.5, "stop": 8.5}})
    cfg = meanfield.load_config("run.toml", ["model.beta=4"])           # a TOML file
    figs = meanfield.plot(ds)              # its figures, {"summary": Figure, ...}, for Jupyter
    meanfield.plot(ds, "figs", stem="run", format="pdf")  # ... also written as files

See ``meanfield.config`` for the keys and their defaults. ``dir(meanfield)`` lists the
public names (``__all__``): the entry points, ``load_config``, ``plot``, the two errors and
``__version__``; the submodules (``meanfield.config``, ``meanfield.plotting``, ...) are
imported as usual. ``progress=True`` shows ``tqdm.auto`` bars: a widget in Jupyter (with
ipywidgets installed), a text bar in a terminal.

Compiled numba functions are cached in the user cache directory (``$MEANFIELD_CACHE``,
else ``~/.cache/meanfield``; ``$NUMBA_CACHE_DIR`` if the user set it), never inside the
installed package: ``solvers``, imported first below, sets that default (see
``solvers.cache``).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

# First, before any module that imports numba: numba's cache directory (see above).
import solvers  # noqa: F401
from meanfield.errors import ConfigError, SolverError
from meanfield.runs.evolve import evolve
from meanfield.version import __version__

__all__ = ["ConfigError", "SolverError", "__version__", "bifurcation", "compare",
           "contraction", "convergence", "critical_points", "evolve", "load_config",
           "correlations", "long_context",
           "metastability", "normalization", "particles", "phase_diagram", "plot"]


def __dir__() -> list[str]:
    # PEP 562: tab completion and dir() show the public names only, not the submodules
    # and imports (``solvers``, ``Path``, ...) that the module's namespace also holds.
    return sorted(__all__)


def load_config(path: str | Path, overrides: Sequence[str] | None = None, *,
                task: str | None = None) -> dict:
    """Read a TOML config file and validate it, as ``meanfield evolve CONFIG`` does.

    Args:
        path: the TOML file (sections ``[model]``, ``[discretization]``, ...).
        overrides: ``"section.key=value"`` strings applied before validation, as the
            CLI's ``--set`` (values in TOML syntax: ``"model.beta=4"``,
            ``'initial.kind="uniform"'``).
        task: the task the config is for (``"metastability"``, ``"phase-diagram"`` or
            ``"phase_diagram"``, ...), as ``meanfield TASK CONFIG`` reads it: only that
            task's sections. None: every section.

    Returns:
        The validated config with every default filled in; relative ``samples``/``tokens``
        paths are taken relative to the file. Without ``task`` it holds every section and
        can be passed to ``evolve``, ``particles``, ``compare``, ``convergence``,
        ``contraction``, ``bifurcation``, ``normalization`` and ``long_context``;
        ``phase_diagram`` and ``metastability`` take their own sections only, so load
        their configs with ``task``.

    Raises:
        ConfigError: a missing or unreadable file, a TOML syntax error, or a bad value
            (naming the key, the value and what is accepted).
    """
    from meanfield import config

    if isinstance(overrides, str):  # one "k=v" string would be split into characters
        overrides = [overrides]
    return config.load(path, list(overrides or []),
                       None if task is None else task.replace("-", "_"))


def __getattr__(name: str):
    # The particle entry points load numba kernels and the fast-sum libraries: imported
    # on first use, so that ``import meanfield`` stays light.
    if name == "particles":
        from meanfield.runs.particles import particles
        return particles
    if name == "compare":
        from meanfield.studies.transport.compare import compare
        return compare
    if name == "convergence":
        from meanfield.studies.transport.convergence import convergence
        return convergence
    if name == "contraction":
        from meanfield.studies.transport.contraction import contraction
        return contraction
    if name == "bifurcation":
        from meanfield.studies.bifurcation.study import bifurcation
        return bifurcation
    if name == "phase_diagram":
        from meanfield.studies.tokens.phase_diagram import phase_diagram
        return phase_diagram
    if name == "normalization":
        from meanfield.studies.tokens.normalization import normalization
        return normalization
    if name == "correlations":
        from meanfield.studies.correlations.study import correlations
        return correlations
    if name == "long_context":
        from meanfield.studies.tokens.long_context import long_context
        return long_context
    if name == "metastability":
        from meanfield.studies.tokens.metastability import metastability
        return metastability
    if name == "critical_points":
        from meanfield.studies.landscape.critical_points import critical_points
        return critical_points
    if name == "plot":  # matplotlib: loaded on first use too
        from meanfield.plotting.output import plot
        return plot
    raise AttributeError(f"module 'meanfield' has no attribute {name!r}")
