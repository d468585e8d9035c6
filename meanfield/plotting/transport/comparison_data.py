"""The data of a PDE-vs-tokens comparison (``kind = "compare"``, ``meanfield.compare``),
as its figures read it: the check of the dataset, its title, times, histogram, per-run
series and bins, and the colours of the PDE and of the tokens.

A comparison holds the PDE result (``density`` on ``theta``, on ``lat``/``lon`` or on
finite-volume ``cell``s, ``order_parameter``, ``energy``), the bins (circle: ``bin``
centres in radians and ``bin_edges``; sphere: mesh cells with centres ``bin_lat``,
``bin_lon``), the PDE mass per bin and the pooled token histogram of the ensemble (both
divided by the bin size: ``pde_bin_density``, ``particle_density``), their L1 distance
(pooled ``l1_distance``, per run ``l1_distance_member``, the sampling noise floor
``l1_noise_floor``), and per run ``particle_order_parameter`` and ``particle_energy``.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from meanfield.errors import ConfigError
from meanfield.plotting.densities import circle as _circ
from meanfield.plotting.densities import sphere_grid as _grid
from meanfield.plotting.helpers import _attr_summary, _periodic_edges, _snapshot_indices
from meanfield.plotting.particles.panels import _SUPERSCRIPT, _need, _sorted_time

if TYPE_CHECKING:  # pragma: no cover - typing only
    import xarray as xr

_PDE_COLOUR = "black"
_TOKEN_COLOUR = "C0"


def _check_compare(ds: Any) -> xr.Dataset:
    import xarray as xr

    if not isinstance(ds, xr.Dataset):
        raise ConfigError(f"cannot plot a {type(ds).__name__}; expected an xarray.Dataset "
                          "as returned by meanfield.compare", None)
    geometry = ds.attrs.get("geometry")
    if geometry not in ("circle", "sphere", "zonal"):
        raise ConfigError(f"a 'compare' dataset needs the attribute geometry = 'circle', "
                          f"'sphere' or 'zonal'; found {geometry!r}", "geometry")
    _need(ds, "particle_density", ("time", "bin"), "a 'compare'")
    _need(ds, "l1_distance", ("time",), "a 'compare'")
    for name, dims in (("pde_bin_density", ("time", "bin")), ("l1_noise_floor", ("time",)),
                       ("l1_distance_member", ("time", "run")),
                       ("particle_order_parameter", ("time", "run")),
                       ("particle_energy", ("time", "run"))):
        if name in ds.data_vars:
            _need(ds, name, dims, "a 'compare'")
    ds = _sorted_time(ds)
    if geometry == "zonal":
        return _check_zonal_compare(ds)
    if geometry == "circle":
        if "bin" not in ds.coords:
            raise ConfigError("a circle comparison needs the coordinate 'bin' (bin centres "
                              "in radians)", "bin")
        ds = _circ._check_circle(ds.sortby("bin"))
        if "bin_edges" in ds.data_vars and ds["bin_edges"].size != ds.sizes["bin"] + 1:
            raise ConfigError(f"'bin_edges' has {ds['bin_edges'].size} values for "
                              f"{ds.sizes['bin']} bins; need one more than bins",
                              "bin_edges")
        return ds
    for name in ("bin_lat", "bin_lon"):
        if name not in ds.variables or ds[name].dims != ("bin",):
            raise ConfigError(f"a sphere comparison needs the coordinate {name!r} (bin) of "
                              "the bin (mesh cell) centres in radians", name)
    return _grid._check_sphere(ds)


def _check_zonal_compare(ds: xr.Dataset) -> xr.Dataset:
    """A zonal comparison: intervals of t (``bin_edges``, increasing in [-1, 1], one more
    than ``bin``), the PDE's ``density (time, polar)`` and the attribute ``dim``."""
    edges = np.asarray(ds["bin_edges"].values, dtype=float) if "bin_edges" in ds else None
    if edges is None or edges.size != ds.sizes["bin"] + 1 or np.any(np.diff(edges) <= 0) \
            or edges[0] < -1 or edges[-1] > 1:
        raise ConfigError("a zonal comparison needs 'bin_edges': the increasing ends of the "
                          "bins in t = <x, e>, within [-1, 1], one more than bins",
                          "bin_edges")
    _need(ds, "density", ("time", "polar"), "a zonal 'compare'")
    for name in ("w1_distance", "w1_noise_floor"):
        if name in ds.data_vars:
            _need(ds, name, ("time",), "a zonal 'compare'")
    if not isinstance(ds.attrs.get("dim"), (int, np.integer)) or ds.attrs["dim"] < 2:
        raise ConfigError("a zonal comparison needs the attribute dim = d of S^(d-1), an "
                          f"integer >= 2 (found {ds.attrs.get('dim')!r})", "dim")
    return ds


def _title(ds: xr.Dataset) -> str:
    runs = ds.sizes.get("run", ds.attrs.get("ensemble", 1))
    n = ds.attrs.get("n", ds.sizes.get("particle", "?"))
    head = f"PDE vs {runs} × {n} tokens" if runs != 1 else f"PDE vs {n} tokens"
    if ds.attrs.get("geometry") == "zonal" and "dim" in ds.attrs:  # tokens on S^{d-1}
        head += f" on S{str(int(ds.attrs['dim']) - 1).translate(_SUPERSCRIPT)}"
    summary = _attr_summary(ds)
    return f"{head} ({summary})" if summary else head


def _t(ds: xr.Dataset) -> np.ndarray:
    return np.asarray(ds["time"].values, dtype=float)


def _index(ds: xr.Dataset, time: Any) -> int:
    t = _t(ds)
    return t.size - 1 if time is None else int(_snapshot_indices(t, [time], 1)[0])


def _histogram(ds: xr.Dataset) -> np.ndarray:
    return np.asarray(ds["particle_density"].transpose("time", "bin").values, dtype=float)


def _runs(ds: xr.Dataset, key: str) -> np.ndarray:
    return np.asarray(ds[key].transpose("time", "run").values, dtype=float)


def _token_label(ds: xr.Dataset) -> str:
    runs = ds.sizes.get("run", 1)
    n = ds.attrs.get("n", ds.sizes.get("particle", "?"))
    return f"tokens ({runs} × {n})" if runs > 1 else f"tokens ({n})"


def _bin_edges(ds: xr.Dataset) -> np.ndarray:
    if "bin_edges" in ds.data_vars:
        return np.asarray(ds["bin_edges"].values, dtype=float)
    return _periodic_edges(np.mod(np.asarray(ds["bin"].values, dtype=float), 2 * math.pi))


def _bin_centres(ds: xr.Dataset) -> np.ndarray:
    """The bin centres in [0, 2π), sorted as the histogram's bins must then be."""
    edges = _bin_edges(ds)
    return np.mod(0.5 * (edges[:-1] + edges[1:]), 2 * math.pi)
