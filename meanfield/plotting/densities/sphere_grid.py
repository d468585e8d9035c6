"""Sphere datasets: validation, the grid and its cells, and unit-vector helpers.

Grid conventions (as written by ``meanfield.evolve``): ``lat`` in radians, strictly
inside (-π/2, π/2) (Gauss-Legendre latitudes, no poles, not equispaced); ``lon`` in
radians in [0, 2π). Every grid value is drawn as a flat cell: latitude edges halfway
between grid latitudes and ±π/2 at the ends (so the polar caps are covered), longitude
edges halfway between grid longitudes, periodically. A density on finite-volume mesh
cells is first sampled on a regular latitude-longitude grid (``_cells_to_latlon``).

The maps are drawn in ``sphere_maps``, the other sphere figures in ``sphere``.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from meanfield.errors import ConfigError
from meanfield.plotting.helpers import (
    TWO_PI,
    _check_coords_numeric,
    _check_density,
    _periodic_edges,
    _units_suffix,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    import xarray as xr

UNIFORM = 1.0 / (4.0 * math.pi)
HALF_PI = 0.5 * math.pi
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
