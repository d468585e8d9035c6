"""Sphere maps: Mollweide (``map_mollweide``) and orthographic (``map_orthographic``)
views of the density at one saved time, and their drawing helpers (graticules, the
mean-direction cross and point markers, colorbars), also used by the other sphere figures
and the token panels. The grid they draw is described in ``sphere_grid``.
"""
from __future__ import annotations

import contextlib
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from meanfield.errors import ConfigError
from meanfield.plotting.common import _prepare
from meanfield.plotting.helpers import (
    TWO_PI,
    _fmt_time,
    _new_figure,
    _norm,
    _shown,
    style,
)
from meanfield.plotting.legible import _explain_markers
from meanfield.plotting.densities.sphere_grid import (
    HALF_PI,
    UNIFORM,
    _center_vector,
    _check_sphere,
    _fmt_direction,
    _Grid,
    _lon_lat,
    _points_array,
    _unit_vectors,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    import xarray as xr
    from matplotlib.axes import Axes
    from matplotlib.collections import QuadMesh
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure

_CROSS_COLOUR = "#00e5ff"  # mean direction: cyan stands out on magma and viridis
_GRATICULE = {"color": "white", "alpha": 0.35, "lw": 0.5}
MEAN_DIRECTION_GID = "mean_direction"  # the cross; figures say what it is in a caption


# --------------------------------------------------------------------------------------
# dataset, figure and colorbar of a map
# --------------------------------------------------------------------------------------
def _dataset(ds: Any, function: str) -> tuple[xr.Dataset, _Grid]:
    plots, ds = _prepare(ds)
    if plots.check is not _check_sphere:
        raise ConfigError(f"{function} draws sphere datasets; this one has geometry "
                          f"{ds.attrs.get('geometry', 'circle')!r}", "geometry")
    return ds, _Grid.of(ds)


def _new_map_figure(kind: str) -> tuple[Figure, Axes]:
    if kind == "mollweide":
        fig = _new_figure((5.0, 2.9))
        return fig, fig.add_subplot(projection="mollweide")
    fig = _new_figure((3.6, 3.0))
    return fig, fig.add_subplot()


def _colorbar(mesh: QuadMesh, axes: Any, label: str, **kwargs: Any) -> None:
    fig = mesh.axes.figure
    cbar = fig.colorbar(mesh, ax=axes, pad=0.02, **kwargs)
    cbar.set_label(label)


# --------------------------------------------------------------------------------------
# Mollweide
# --------------------------------------------------------------------------------------
def _mollweide_cells(lon_edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Longitude edges in [-π, π] and, per cell, the grid column it shows.

    The grid cells are cut at ±π (the map's seam), so the map is covered edge to edge
    with no gap and no cell drawn across the seam.
    """
    e0 = lon_edges[0]
    wrapped = np.mod(lon_edges[:-1] + math.pi, TWO_PI) - math.pi
    b = np.unique(np.concatenate([wrapped, [-math.pi, math.pi]]))
    b = np.concatenate([b[:1], b[1:][np.diff(b) > 1e-9]])
    b[0], b[-1] = -math.pi, math.pi
    centres = e0 + np.mod(0.5 * (b[:-1] + b[1:]) - e0, TWO_PI)
    column = np.searchsorted(lon_edges, centres, side="right") - 1
    return b, np.clip(column, 0, lon_edges.size - 2)


def _check_mollweide_axes(ax: Any, function: str) -> None:
    name = getattr(ax, "name", type(ax).__name__)
    if name != "mollweide":
        raise ConfigError(f"{function} needs an axes made with projection='mollweide' "
                          f"(fig.add_subplot(projection='mollweide')); got {name!r}", "ax")


def _mollweide_frame(ax: Axes, labels: bool) -> None:
    """Graticule every 30° of latitude and 60° of longitude; longitude labels 0-360°E on
    the equator (outlined, readable on any colour), latitude labels at the left."""
    import matplotlib.patheffects as pe

    ax.set_longitude_grid(60)
    ax.set_latitude_grid(30)
    ax.set_longitude_grid_ends(90)
    ax.grid(True, **_GRATICULE)
    ax.tick_params(axis="x", labelbottom=False, labeltop=False)
    if not labels:
        ax.tick_params(axis="y", labelleft=False, labelright=False)
        return
    ax.tick_params(axis="y", labelsize=6.5, pad=1)
    outline = [pe.withStroke(linewidth=1.6, foreground="black")]
    for deg in (-120, -60, 60, 120):
        ax.text(math.radians(deg), math.radians(2), f"{deg % 360}°", fontsize=6,
                color="white", ha="center", va="bottom", path_effects=outline, zorder=4)


def _draw_overlay(ax: Axes, xy_mean: tuple | None, xy_points: tuple | None, n_points: int,
                  small: bool = False):
    """The mean-direction cross and the point markers; returns the cross's Line2D."""
    import matplotlib.patheffects as pe

    if xy_points is not None and n_points:
        size = 3.5 if n_points <= 100 else 2.0 if n_points <= 1000 else 1.2
        ax.plot(*xy_points, ls="none", marker="o", ms=size, mfc="white", mec="black",
                mew=0.4, zorder=5)
    (cross,) = ax.plot(*(xy_mean or ([], [])), ls="none", marker="+", ms=6 if small else 8,
                       mew=1.2 if small else 1.5,
                       color=_CROSS_COLOUR, zorder=6, gid=MEAN_DIRECTION_GID,
                       label="mean direction",
                       path_effects=[pe.withStroke(linewidth=3, foreground="black")])
    return cross


def _mollweide_xy(v: np.ndarray | None):
    if v is None:
        return None
    lon, lat = _lon_lat(np.atleast_2d(v))
    return lon, lat


def _draw_mollweide(g: _Grid, ax: Axes, i: int, norm: Normalize, cmap: str,
                    points: np.ndarray | None, labels: bool = True, smooth: bool = True):
    """Draw the map; returns the mesh, the mean-direction cross and ``values(i)``, the
    mesh's array at saved time ``i`` (for animations)."""
    cells = g.cells(smooth)
    b, column = _mollweide_cells(cells.lon_edges)

    def values(k: int) -> np.ndarray:
        return _shown(cells.frame(k)[:, column], norm)

    mesh = ax.pcolormesh(b, cells.lat_edges, values(i), cmap=cmap, norm=norm,
                         shading="flat", rasterized=True)
    _mollweide_frame(ax, labels)
    cross = _draw_overlay(ax, _mollweide_xy(g.mean_at(i)), _mollweide_xy(points),
                          0 if points is None else len(points), small=not labels)
    ax.set_title(f"t = {_fmt_time(g.t[i])}", pad=8)
    return mesh, cross, values


def map_mollweide(ds: xr.Dataset, ax: Axes | None = None, time: float | None = None, *,
                  log: bool | str = False, cmap: str = "magma", norm: Normalize | None = None,
                  colorbar: bool = True, points: Any = None, smooth: bool = True) -> QuadMesh:
    """Mollweide (equal-area) map of the sphere density at one saved time.

    Longitude 0 is at the centre of the map, increasing to the east (right), labelled
    0-360°E as in the dataset; a cyan cross marks the mean direction when the order
    parameter is positive.

    Args:
        ds: a sphere result dataset.
        ax: an axes made with ``projection="mollweide"``; ``None`` makes a new figure
            (``mesh.axes.figure``).
        time: the saved time nearest this is drawn; ``None``: the last one.
        log: logarithmic colour scale (at most 8 decades); ``"auto"``: log once the
            peak exceeds 25 times the uniform density 1/(4π).
        cmap: colormap name.
        norm: a ``matplotlib.colors.Normalize`` to share one colour scale between maps
            (overrides ``log``).
        colorbar: add a colorbar "ρ (1/sr)".
        points: (n, 3) vectors (particles, cluster centres; normalised here) drawn as
            white dots.
        smooth: interpolate the grid values bilinearly onto cells about 1° wide (each
            grid cell cut into at most 4 x 4; the poles take the mean of the nearest
            ring). False: every grid value fills its whole cell, showing the grid.

    Returns:
        The ``QuadMesh`` drawn.

    Raises:
        ConfigError: not a plottable sphere dataset, ``ax`` is not a Mollweide axes, or
            ``time``/``points``/``log`` are invalid.
    """
    ds, g = _dataset(ds, "map_mollweide")
    if ax is not None:
        _check_mollweide_axes(ax, "map_mollweide")
    i = g.index(time)
    points = _points_array(points)
    norm = norm if norm is not None else _norm(g.rho[i], log, UNIFORM)
    own = ax is None
    with style() if own else contextlib.nullcontext():  # own figures: own style
        if own:
            _, ax = _new_map_figure("mollweide")
        mesh, _, _ = _draw_mollweide(g, ax, i, norm, cmap, points, smooth=smooth)
        if colorbar:
            _colorbar(mesh, ax, g.label, shrink=0.85)
        if own:
            _explain_markers(ax.figure)
    return mesh


# --------------------------------------------------------------------------------------
# orthographic
# --------------------------------------------------------------------------------------
def _view_frame(center: np.ndarray) -> np.ndarray:
    """Rows (right, up, towards the viewer): north up, east to the right."""
    up = np.array([0.0, 0.0, 1.0]) - center[2] * center
    if np.linalg.norm(up) < 1e-9:  # looking at a pole: longitude 0 points down
        up = np.array([-np.sign(center[2]), 0.0, 0.0])
    up /= np.linalg.norm(up)
    return np.stack([np.cross(up, center), up, center])


def _project(frame: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q = p @ frame.T
    return q[..., 0], q[..., 1], q[..., 2]


def _ortho_graticule(ax: Axes, frame: np.ndarray) -> None:
    s = np.linspace(-HALF_PI, HALF_PI, 91)
    around = np.linspace(0.0, TWO_PI, 181)
    lines = [_unit_vectors(np.full_like(around, math.radians(d)), around)
             for d in (-60, -30, 0, 30, 60)]
    lines += [_unit_vectors(s, np.full_like(s, math.radians(d))) for d in range(0, 360, 30)]
    for k, p in enumerate(lines):
        x, y, depth = _project(frame, p)
        hidden = depth < 0
        kwargs = dict(_GRATICULE)
        if k == 2:  # the equator, to orient the view
            kwargs.update(alpha=0.6, lw=0.7)
        ax.plot(np.where(hidden, np.nan, x), np.where(hidden, np.nan, y), zorder=3, **kwargs)


def _draw_orthographic(g: _Grid, ax: Axes, i: int, center: np.ndarray, norm: Normalize,
                       cmap: str, points: np.ndarray | None, smooth: bool = True) -> QuadMesh:
    from matplotlib.patches import Circle

    frame = _view_frame(center)
    cells = g.cells(smooth)
    corners = _unit_vectors(cells.lat_edges[:, None], cells.lon_edges[None, :])
    x, y, depth = _project(frame, corners)
    hidden = depth < 0
    # corners behind the sphere go to the rim, so cells cut by it fill the disc to the edge
    r = np.hypot(x, y)
    r = np.where(r > 0, r, 1.0)
    x, y = np.where(hidden, x / r, x), np.where(hidden, y / r, y)
    all_hidden = hidden[:-1, :-1] & hidden[1:, :-1] & hidden[:-1, 1:] & hidden[1:, 1:]
    values = np.ma.masked_array(_shown(cells.frame(i), norm), mask=all_hidden)
    mesh = ax.pcolormesh(x, y, values, cmap=cmap, norm=norm, shading="flat",
                         rasterized=True)
    disc = Circle((0.0, 0.0), 1.0, transform=ax.transData)
    mesh.set_clip_path(disc)
    _ortho_graticule(ax, frame)
    ax.add_patch(Circle((0.0, 0.0), 1.0, fill=False, lw=0.9, color="0.15", zorder=4))

    def visible(v: np.ndarray | None):
        if v is None:
            return None
        px, py, d = _project(frame, np.atleast_2d(v))
        return px[d >= 0], py[d >= 0]

    _draw_overlay(ax, visible(g.mean_at(i)), visible(points),
                  0 if points is None else len(points))
    ax.set_aspect("equal")
    ax.set_xlim(-1.04, 1.04)
    ax.set_ylim(-1.04, 1.04)
    ax.set_axis_off()
    ax.set_title(f"t = {_fmt_time(g.t[i])}, facing {_fmt_direction(center)}")
    return mesh


def map_orthographic(ds: xr.Dataset, ax: Axes | None = None, time: float | None = None,
                     center: Any = None, *, log: bool | str = False, cmap: str = "magma",
                     norm: Normalize | None = None, colorbar: bool = True,
                     points: Any = None, smooth: bool = True) -> QuadMesh:
    """Orthographic view of the hemisphere facing ``center`` at one saved time.

    The sphere as seen from far away along ``center``: north up, east to the right (the
    view of a pole has longitude 0 pointing down). Graticule every 30°, the equator a
    little stronger; a cyan cross marks the mean direction when it is on the visible
    side and the order parameter is positive.

    Args:
        ds: a sphere result dataset.
        ax: ordinary (rectilinear) axes; its aspect is set equal and its frame hidden.
            ``None`` makes a new figure (``mesh.axes.figure``).
        time: the saved time nearest this is drawn; ``None``: the last one.
        center: the view direction (x, y, z), any length; default: the mean direction
            at that time, or (1, 0, 0) where it is undefined (NaN, order parameter 0).
        log, cmap, norm, colorbar, smooth: as for ``map_mollweide``.
        points: (n, 3) vectors drawn as white dots where on the visible hemisphere.

    Returns:
        The ``QuadMesh`` drawn (cells entirely on the far side are masked).

    Raises:
        ConfigError: not a plottable sphere dataset, ``ax`` is a map projection, or
            ``time``/``center``/``points``/``log`` are invalid.
    """
    ds, g = _dataset(ds, "map_orthographic")
    if ax is not None and getattr(ax, "name", "rectilinear") != "rectilinear":
        raise ConfigError(f"map_orthographic draws into ordinary axes; got a {ax.name!r} "
                          "projection", "ax")
    i = g.index(time)
    center = _default_center(g, i) if center is None else _center_vector(center)
    points = _points_array(points)
    norm = norm if norm is not None else _norm(g.rho[i], log, UNIFORM)
    own = ax is None
    with style() if own else contextlib.nullcontext():
        if own:
            _, ax = _new_map_figure("orthographic")
        mesh = _draw_orthographic(g, ax, i, center, norm, cmap, points, smooth)
        if colorbar:
            _colorbar(mesh, ax, g.label, shrink=0.85)
        if own:
            _explain_markers(ax.figure)
    return mesh


def _default_center(g: _Grid, i: int) -> np.ndarray:
    m = g.mean_at(i)
    return np.array([1.0, 0.0, 0.0]) if m is None else m
