"""Figures and animations of ``meanfield`` results.

Every function takes a result ``xarray.Dataset`` (see ``meanfield.evolve``) and draws it
according to its ``geometry`` attribute, ``"circle"`` or ``"sphere"`` (without the
attribute: a ``theta`` dimension means circle, ``lat`` and ``lon`` mean sphere). A
dataset that cannot be drawn raises ``ConfigError`` naming what was found and what is
accepted. Nothing here touches pyplot's global state: figures are plain
``matplotlib.figure.Figure`` objects with an Agg canvas, so the module works headless
(servers, CI) and the returned figures display in notebooks.

Typical use::

    from meanfield.plotting import figure, plot_result
    fig = figure(ds)                       # one summary figure
    paths = plot_result(ds, "out", stem="run1", animate=True)

Sphere maps (matplotlib only)::

    from meanfield.plotting import map_mollweide, map_orthographic
    mesh = map_mollweide(ds, time=2.0, log="auto", points=xyz)  # new figure: mesh.axes.figure
    map_orthographic(ds, center=[0, 0, 1])                       # view of the north pole

Functions drawing into caller-supplied axes (``spacetime``, ``snapshots``,
``diagnostics``, the maps) respect the caller's rcParams; figures made here use a
compact style sized for a two-column paper.

Layout: ``common`` (validation, dispatch, diagnostics and the functions above that
work for every geometry), ``circle`` and ``sphere`` (the geometry-specific drawing,
registered on import).
"""
from __future__ import annotations

from meanfield.plotting import circle as _circle  # noqa: F401  (registers "circle")
from meanfield.plotting import sphere as _sphere  # noqa: F401  (registers "sphere")
from meanfield.plotting.common import (
    _PLOTTERS,
    diagnostics,
    figure,
    plot_result,
    snapshots,
    spacetime,
)
from meanfield.plotting.sphere import map_mollweide, map_orthographic

SUPPORTED_GEOMETRIES: tuple[str, ...] = tuple(_PLOTTERS)

__all__ = [
    "SUPPORTED_GEOMETRIES",
    "diagnostics",
    "figure",
    "map_mollweide",
    "map_orthographic",
    "plot_result",
    "snapshots",
    "spacetime",
]
