"""Sphere figures: Mollweide and orthographic maps, latitude-time image, animated map.

Grid conventions (as written by ``meanfield.evolve``): ``lat`` in radians, strictly
inside (-π/2, π/2) (Gauss-Legendre latitudes, no poles, not equispaced); ``lon`` in
radians in [0, 2π). Every grid value is drawn as a flat cell: latitude edges halfway
between grid latitudes and ±π/2 at the ends (so the polar caps are covered), longitude
edges halfway between grid longitudes, periodically.
"""
from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from meanfield.errors import ConfigError
from meanfield.plotting.common import (
    TWO_PI,
    _check_coords_numeric,
    _check_density,
    _diagnostic_panels,
    _diagnostics_row,
    _fmt_time,
    _frame_indices,
    _freeze_layout,
    _GeometryPlots,
    _letter_panels,
    _new_figure,
    _norm,
    _periodic_edges,
    _prepare,
    _register,
    _save_animation,
    _shown,
    _snapshot_indices,
    _style,
    _time_edges,
    _time_label,
    _title,
    _units_suffix,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    import xarray as xr
    from matplotlib.axes import Axes
    from matplotlib.collections import QuadMesh
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure

UNIFORM = 1.0 / (4.0 * math.pi)
HALF_PI = 0.5 * math.pi
_CROSS_COLOUR = "#00e5ff"  # mean direction: cyan stands out on magma and viridis
_GRATICULE = {"color": "white", "alpha": 0.35, "lw": 0.5}
_SMOOTH_LAT_CELLS = 180  # smooth maps: about this many latitude cells (1°)...
_SMOOTH_MAX_FACTOR = 4  # ...cutting each grid cell into at most 4 x 4


# --------------------------------------------------------------------------------------
# validation and grid
# --------------------------------------------------------------------------------------
def _cells_to_latlon(ds: xr.Dataset) -> xr.Dataset:
    """A finite-volume result (density on mesh cells, centres at ``lat(cell)``,
    ``lon(cell)``) sampled on a regular latitude-longitude grid by the nearest cell: the
    piecewise-constant function the cell values stand for, shown without smoothing."""
    from scipy.spatial import cKDTree

    for name in ("lat", "lon"):
        if name not in ds.coords or ds[name].dims != ("cell",):
            raise ConfigError(f"a density on cells needs the coordinate {name!r} (cell) of "
                              "the cell centres in radians", name)
    n = ds.sizes["cell"]
    nlat = max(8, 2 * int(round(np.sqrt(n / 2))))
    lat = -HALF_PI + np.pi * (np.arange(nlat) + 0.5) / nlat
    lon = TWO_PI * np.arange(2 * nlat) / (2 * nlat)
    centres = _unit_vectors(np.asarray(ds["lat"].values, float),
                            np.asarray(ds["lon"].values, float))
    targets = _unit_vectors(lat[:, None] + 0 * lon[None, :], lon[None, :] + 0 * lat[:, None])
    nearest = cKDTree(centres).query(targets.reshape(-1, 3))[1].reshape(nlat, 2 * nlat)
    out = ds.drop_vars([v for v in ds.variables if "cell" in ds[v].dims])
    out = out.assign_coords(lat=lat, lon=lon)
    out["density"] = (("time", "lat", "lon"), ds["density"].values[:, nearest])
    out["density"].attrs = ds["density"].attrs
    return out


def _check_sphere(ds: xr.Dataset) -> xr.Dataset:
    """Validate a sphere dataset; return it with lon in [0, 2π) and all axes sorted.

    A density on finite-volume cells ``(time, cell)`` is first sampled on a regular grid.
    """
    if "density" in ds.data_vars and ds["density"].dims == ("time", "cell"):
        ds = _cells_to_latlon(ds)
    _check_density(ds, ("time", "lat", "lon"), "sphere")
    for name in ("lat", "lon"):
        if name not in ds.coords:
            raise ConfigError(
                f"dataset has a {name!r} dimension but no {name!r} coordinate; sphere "
                f"plots need the {'latitudes' if name == 'lat' else 'longitudes'} "
                "in radians", name)
        if ds.sizes[name] < 2:
            raise ConfigError(f"{name} has {ds.sizes[name]} point(s); sphere plots need "
                              "at least 2", name)
    _check_coords_numeric(ds, ("time", "lat", "lon"))
    if "time" not in ds.coords:
        ds = ds.assign_coords(time=np.arange(ds.sizes["time"], dtype=float))
    lat = np.asarray(ds["lat"].values, dtype=float)
    if np.any(np.abs(lat) > HALF_PI * (1 + 1e-12)):
        raise ConfigError(
            f"coordinate 'lat' spans [{lat.min():.4g}, {lat.max():.4g}]; sphere plots need "
            "latitudes in radians within [-π/2, π/2] (not degrees)", "lat")
    if np.unique(lat).size != lat.size:
        raise ConfigError("coordinate 'lat' has repeated latitudes", "lat")
    lon = np.asarray(ds["lon"].values, dtype=float)
    wrapped = np.mod(lon, TWO_PI)
    if np.unique(wrapped).size != lon.size:
        raise ConfigError("coordinate 'lon' has repeated longitudes (mod 2π)", "lon")
    if not np.array_equal(wrapped, lon):
        ds = ds.assign_coords(lon=wrapped)
    for name in ("lat", "lon", "time"):
        if np.any(np.diff(np.asarray(ds[name].values, dtype=float)) < 0):
            ds = ds.sortby(name)
    if "mean_direction" in ds.data_vars:
        var = ds["mean_direction"]
        if set(var.dims) != {"time", "component"} or ds.sizes["component"] != 3:
            raise ConfigError(
                f"'mean_direction' has dimensions {var.dims} and shape {var.shape}; "
                "sphere plots need (time, component) with 3 components (x, y, z)",
                "mean_direction")
    return ds


@dataclass(frozen=True)
class _Cells:
    """Cells a map draws: edges in radians and the values of saved time ``i``."""

    lat_edges: np.ndarray  # -π/2 ... π/2
    lon_edges: np.ndarray  # periodic: last = first + 2π
    frame: Callable[[int], np.ndarray]  # i -> (lat cells, lon cells)


@dataclass(frozen=True)
class _Grid:
    """The arrays of a checked sphere dataset, in the shapes the drawing code uses."""

    t: np.ndarray  # (time,)
    rho: np.ndarray  # (time, lat, lon)
    lat: np.ndarray
    lon: np.ndarray
    lat_edges: np.ndarray  # (lat + 1,), -π/2 ... π/2
    lon_edges: np.ndarray  # (lon + 1,), periodic: last = first + 2π
    mean: np.ndarray | None  # (time, 3) unit vectors or NaN
    order: np.ndarray | None  # (time,)
    label: str  # colorbar label of the density

    @classmethod
    def of(cls, ds: xr.Dataset) -> _Grid:
        lat = np.asarray(ds["lat"].values, dtype=float)
        lon = np.asarray(ds["lon"].values, dtype=float)
        lat_edges = np.concatenate([[-HALF_PI], 0.5 * (lat[:-1] + lat[1:]), [HALF_PI]])
        mean = order = None
        if "mean_direction" in ds.data_vars:
            mean = np.asarray(ds["mean_direction"].transpose("time", "component").values,
                              dtype=float)
        if "order_parameter" in ds.data_vars and ds["order_parameter"].dims == ("time",):
            order = np.asarray(ds["order_parameter"].values, dtype=float)
        return cls(t=np.asarray(ds["time"].values, dtype=float),
                   rho=np.asarray(ds["density"].transpose("time", "lat", "lon").values,
                                  dtype=float),
                   lat=lat, lon=lon, lat_edges=lat_edges, lon_edges=_periodic_edges(lon),
                   mean=mean, order=order, label="ρ" + _units_suffix(ds["density"]))

    def index(self, time: Any) -> int:
        """The saved time nearest ``time`` (the last one for ``None``)."""
        if time is None:
            return self.t.size - 1
        try:
            value = float(time)
        except (TypeError, ValueError):
            value = math.nan
        if not math.isfinite(value):
            raise ConfigError(f"time = {time!r} must be a finite number or None (the last "
                              "saved time)", "time")
        return int(np.abs(self.t - value).argmin())

    def mean_at(self, i: int) -> np.ndarray | None:
        """The mean direction at saved time ``i`` if it is defined (order parameter > 0)."""
        if self.mean is None:
            return None
        m = self.mean[i]
        if not np.all(np.isfinite(m)) or not np.linalg.norm(m) > 0:
            return None
        if self.order is not None and not (np.isfinite(self.order[i]) and self.order[i] > 0):
            return None
        return m / np.linalg.norm(m)

    def cells(self, smooth: bool) -> _Cells:
        """Cells about 1° wide: every grid cell cut into ``factor``² (at most 4²) so
        that cell outlines follow the curved parallels, meridians and map edge. The
        values are the grid values interpolated bilinearly (``smooth``) or repeated, so
        that the grid cells show."""
        factor = max(1, min(_SMOOTH_MAX_FACTOR, math.ceil(_SMOOTH_LAT_CELLS / self.lat.size)))
        lat_edges = _subdivide(self.lat_edges, factor)
        lon_edges = _subdivide(self.lon_edges, factor)

        def repeated(i: int) -> np.ndarray:
            return np.repeat(np.repeat(self.rho[i], factor, axis=0), factor, axis=1)

        if not smooth or factor == 1:
            return _Cells(lat_edges, lon_edges, repeated)
        # latitude nodes with the poles, valued as the nearest ring's mean; longitude
        # nodes extended by one period on each side
        south, north = int(self.lat[0] > -HALF_PI), int(self.lat[-1] < HALF_PI)
        lat_nodes = np.concatenate([[-HALF_PI][:south], self.lat, [HALF_PI][:north]])
        lon_nodes = np.concatenate([[self.lon[-1] - TWO_PI], self.lon,
                                    [self.lon[0] + TWO_PI]])
        w_lat = _interpolation(lat_nodes, 0.5 * (lat_edges[:-1] + lat_edges[1:]))
        w_lon = _interpolation(lon_nodes, 0.5 * (lon_edges[:-1] + lon_edges[1:]))

        def frame(i: int) -> np.ndarray:
            rho = self.rho[i]
            if not np.all(np.isfinite(rho)):  # NaN would spread over whole rows
                return repeated(i)
            ring = np.ones((1, rho.shape[1]))
            rho = np.concatenate([ring[:south] * rho[0].mean(), rho,
                                  ring[:north] * rho[-1].mean()])
            rho = np.concatenate([rho[:, -1:], rho, rho[:, :1]], axis=1)
            return w_lat @ rho @ w_lon.T

        return _Cells(lat_edges, lon_edges, frame)


def _subdivide(edges: np.ndarray, factor: int) -> np.ndarray:
    """The edges with every interval cut into ``factor`` equal parts."""
    steps = np.arange(factor) / factor
    inner = edges[:-1, None] + np.diff(edges)[:, None] * steps[None, :]
    return np.append(inner.ravel(), edges[-1])


def _interpolation(nodes: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """The (targets, nodes) matrix of linear interpolation; ``nodes`` sorted, covering
    ``targets``."""
    k = np.clip(np.searchsorted(nodes, targets, side="right") - 1, 0, nodes.size - 2)
    w = np.clip((targets - nodes[k]) / (nodes[k + 1] - nodes[k]), 0.0, 1.0)
    m = np.zeros((targets.size, nodes.size))
    rows = np.arange(targets.size)
    m[rows, k] = 1.0 - w
    m[rows, k + 1] += w
    return m


def _unit_vectors(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    clat = np.cos(lat)
    return np.stack(np.broadcast_arrays(clat * np.cos(lon), clat * np.sin(lon), np.sin(lat)),
                    axis=-1)


def _points_array(points: Any) -> np.ndarray | None:
    """``points`` as an (n, 3) array of unit vectors, or None."""
    if points is None:
        return None
    try:
        p = np.asarray(points, dtype=float)
    except (TypeError, ValueError):
        raise ConfigError(f"points must be an (n, 3) array of unit vectors; got "
                          f"{type(points).__name__}", "points") from None
    if p.ndim == 1 and p.size == 3:
        p = p[None, :]
    if p.ndim != 2 or p.shape[1] != 3:
        raise ConfigError(f"points has shape {p.shape}; need (n, 3): one (x, y, z) unit "
                          "vector per row", "points")
    norms = np.linalg.norm(p, axis=1)
    if not np.all(np.isfinite(p)) or np.any(norms == 0):
        raise ConfigError("points must be finite, nonzero vectors (x, y, z)", "points")
    return p / norms[:, None]


def _center_vector(center: Any) -> np.ndarray:
    try:
        c = np.asarray(center, dtype=float)
    except (TypeError, ValueError):
        c = np.full(1, np.nan)
    if c.shape != (3,) or not np.all(np.isfinite(c)) or not np.linalg.norm(c) > 0:
        raise ConfigError(f"center = {center!r} must be a nonzero 3-vector (x, y, z)",
                          "center")
    return c / np.linalg.norm(c)


def _lon_lat(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Longitude in [-π, π) and latitude of unit vectors (n, 3)."""
    lon = np.mod(np.arctan2(p[..., 1], p[..., 0]) + math.pi, TWO_PI) - math.pi
    return lon, np.arcsin(np.clip(p[..., 2], -1.0, 1.0))


def _fmt_direction(v: np.ndarray) -> str:
    lon, lat = (math.degrees(float(a)) for a in _lon_lat(v))
    where = f"{abs(lat):.0f}°{'N' if lat >= 0 else 'S'}"
    return where if abs(lat) > 89.5 else f"{where} {lon % 360:.0f}°E"


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
                       color=_CROSS_COLOUR, zorder=6,
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
    with _style() if ax is None else contextlib.nullcontext():  # own figures: own style
        if ax is None:
            _, ax = _new_map_figure("mollweide")
        mesh, _, _ = _draw_mollweide(g, ax, i, norm, cmap, points, smooth=smooth)
        if colorbar:
            _colorbar(mesh, ax, g.label, shrink=0.85)
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
    with _style() if ax is None else contextlib.nullcontext():
        if ax is None:
            _, ax = _new_map_figure("orthographic")
        mesh = _draw_orthographic(g, ax, i, center, norm, cmap, points, smooth)
        if colorbar:
            _colorbar(mesh, ax, g.label, shrink=0.85)
    return mesh


def _default_center(g: _Grid, i: int) -> np.ndarray:
    m = g.mean_at(i)
    return np.array([1.0, 0.0, 0.0]) if m is None else m


# --------------------------------------------------------------------------------------
# the generic plots: spacetime, snapshots, summary, pages, animation
# --------------------------------------------------------------------------------------
def _sphere_spacetime(ds: xr.Dataset, ax: Axes, *, log: bool | str = False,
                      cmap: str = "magma", colorbar: bool = True) -> QuadMesh:
    g = _Grid.of(ds)
    with np.errstate(invalid="ignore"):
        peak = np.nanmax(np.where(np.isfinite(g.rho), g.rho, -np.inf), axis=2)
    peak = np.where(np.isfinite(peak), peak, np.nan)
    norm = _norm(peak, log, UNIFORM)
    mesh = ax.pcolormesh(np.degrees(g.lat_edges), _time_edges(g.t), _shown(peak, norm),
                         cmap=cmap, norm=norm, shading="flat", rasterized=True)
    ax.set_xlim(-90, 90)
    ax.set_xticks([-90, -45, 0, 45, 90])
    ax.set_xticklabels(["−90°", "−45°", "0°", "45°", "90°"])
    ax.set_xlabel("latitude")
    if g.t.size > 1:
        ax.set_ylim(g.t[0], g.t[-1])
    ax.set_ylabel(_time_label(ds))
    if colorbar:
        _colorbar(mesh, ax, "max over longitude of " + g.label)
    return mesh


def _map_row(ax: Any, count: int) -> list[Axes]:
    """``count`` Mollweide axes: the given ones, or the slot of one axes split in a row."""
    if isinstance(ax, (list, tuple, np.ndarray)):
        axes = list(np.ravel(np.asarray(ax, dtype=object)))
        if len(axes) != count:
            raise ConfigError(f"{len(axes)} axes given for {count} snapshot maps; pass one "
                              "Mollweide axes per snapshot, or one axes to split", "ax")
        for a in axes:
            _check_mollweide_axes(a, "snapshots")
        return axes
    if getattr(ax, "name", None) == "mollweide" and count == 1:
        return [ax]
    fig = ax.figure
    spec = ax.get_subplotspec()
    ax.remove()
    if spec is not None:
        row = spec.subgridspec(1, count, wspace=0.02)
        return [fig.add_subplot(row[k], projection="mollweide") for k in range(count)]
    x0, y0, w, h = ax.get_position().bounds
    return [fig.add_axes((x0 + k * w / count, y0, w / count, h), projection="mollweide")
            for k in range(count)]


def _sphere_snapshots(ds: xr.Dataset, ax: Any, times: Sequence[float] | None = None,
                      n: int = 5, *, log: bool | str = False, cmap: str | None = None,
                      reference: bool = True, colorbar: bool = True) -> list:
    cmap = "magma" if cmap is None else cmap
    g = _Grid.of(ds)
    idx = _snapshot_indices(g.t, times, n)
    axes = _map_row(ax, idx.size)
    norm = _norm(g.rho[idx], log, UNIFORM)
    meshes = []
    for a, i in zip(axes, idx):
        mesh, _, _ = _draw_mollweide(g, a, int(i), norm, cmap, None, labels=False)
        a.set_title(f"t = {_fmt_time(g.t[i])}", fontsize=8)
        meshes.append(mesh)
    if colorbar:
        _colorbar(meshes[-1], axes, g.label, shrink=0.9, aspect=12)
    return meshes


def _sphere_summary(ds: xr.Dataset, *, log: bool | str, points: Any = None) -> Figure:
    g = _Grid.of(ds)
    points = _points_array(points)
    panels = _diagnostic_panels(ds)
    first, last = 0, g.t.size - 1
    norm = _norm(g.rho[[first, last]], log, UNIFORM)
    with _style():
        fig = _new_figure((7.5, 4.5) if panels else (7.5, 2.3))
        fig.get_layout_engine().set(w_pad=0.04, h_pad=0.04, hspace=0.08, wspace=0.03)
        grid = fig.add_gridspec(2 if panels else 1, 1,
                                height_ratios=[0.9, 1] if panels else None)
        top = grid[0].subgridspec(1, 3, width_ratios=[2, 2, 1.1])
        maps = [fig.add_subplot(top[0], projection="mollweide"),
                fig.add_subplot(top[1], projection="mollweide"),
                fig.add_subplot(top[2])]
        _draw_mollweide(g, maps[0], first, norm, "magma", points)
        mesh, _, _ = _draw_mollweide(g, maps[1], last, norm, "magma", points)
        _draw_orthographic(g, maps[2], last, _default_center(g, last), norm, "magma", points)
        maps[2].set_title(f"t = {_fmt_time(g.t[last])}, facing\n"
                          f"{'mean direction' if g.mean_at(last) is not None else 'x axis'}")
        _colorbar(mesh, maps, g.label, shrink=0.8, aspect=15)
        axes = maps + (_diagnostics_row(ds, fig, grid[1]) if panels else [])
        _letter_panels(axes)
        fig.suptitle(_title(ds))
    return fig


def _maps_page(ds: xr.Dataset, *, log: bool | str, points: Any = None) -> Figure:
    g = _Grid.of(ds)
    points = _points_array(points)
    last = g.t.size - 1
    norm = _norm(g.rho[last], log, UNIFORM)
    with _style():
        fig = _new_figure((7.5, 3.0))
        grid = fig.add_gridspec(1, 2, width_ratios=[2, 1.1])
        moll = fig.add_subplot(grid[0], projection="mollweide")
        ortho = fig.add_subplot(grid[1])
        mesh, _, _ = _draw_mollweide(g, moll, last, norm, "magma", points)
        _draw_orthographic(g, ortho, last, _default_center(g, last), norm, "magma", points)
        _colorbar(mesh, [moll, ortho], g.label, shrink=0.85)
        fig.suptitle(_title(ds), fontsize=10)
    return fig


def _spacetime_page(ds: xr.Dataset, *, log: bool | str, points: Any = None) -> Figure:
    with _style():
        fig = _new_figure((4.2, 3.4))
        ax = fig.add_subplot()
        _sphere_spacetime(ds, ax, log=log)
        ax.set_title(_title(ds), fontsize=8)
    return fig


def _snapshots_page(ds: xr.Dataset, *, log: bool | str, points: Any = None) -> Figure:
    with _style():
        count = _snapshot_indices(_Grid.of(ds).t, None, 5).size
        # maps of aspect 2 across 6.6 in, plus the titles
        fig = _new_figure((7.5, 0.75 + 3.3 / max(count, 2)))
        _sphere_snapshots(ds, fig.add_subplot(), log=log)
        fig.suptitle(_title(ds), fontsize=9)
    return fig


def _sphere_animate(ds: xr.Dataset, path: Path, *, dpi: float, fps: float,
                    max_frames: int, log: bool | str = False, points: Any = None) -> None:
    """The Mollweide map over time on one colour scale (``points`` are not drawn: they
    belong to one time)."""
    g = _Grid.of(ds)
    frames = _frame_indices(g.t.size, max_frames)
    norm = _norm(g.rho[frames], log, UNIFORM)
    with _style():
        fig = _new_figure((5.0, 2.9))
        ax = fig.add_subplot(projection="mollweide")
        # the widest time label, so the frozen layout leaves room for all of them
        widest = int(frames[int(np.argmax([len(_fmt_time(g.t[i])) for i in frames]))])
        mesh, cross, values = _draw_mollweide(g, ax, widest, norm, "magma", None)
        _colorbar(mesh, ax, g.label, shrink=0.85)
        fig.suptitle(_title(ds), fontsize=8)

        def update(i: int):
            mesh.set_array(values(i))
            xy = _mollweide_xy(g.mean_at(i))
            cross.set_data(*(xy or ([], [])))
            ax.set_title(f"t = {_fmt_time(g.t[i])}", pad=8)
            return mesh, cross

        _freeze_layout(fig)
        _save_animation(fig, update, frames, path, fps=fps, dpi=dpi)


_register("sphere", _GeometryPlots(
    check=_check_sphere, spacetime=_sphere_spacetime, snapshots=_sphere_snapshots,
    summary=_sphere_summary,
    pages=(("maps", _maps_page), ("spacetime", _spacetime_page),
           ("snapshots", _snapshots_page)),
    animate=_sphere_animate, takes_points=True))
