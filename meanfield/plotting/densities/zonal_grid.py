"""Zonal datasets (densities on S^{d-1} that depend only on the polar angle θ to the axis
e, ``geometry = "zonal"``): validation, and the curves the zonal figures draw.

A zonal result holds ``density (time, polar)`` against the normalized surface measure
(uniform = 1) at the nodes θ_i (Gauss nodes of the spectral method, cell centres of the
finite volumes), their ``weights``, ``marginal (time, polar)`` (the density of t = cos θ
per unit t: ρ(t) w_d (1 − t²)^{(d−3)/2}) and the attribute ``dim`` (d). In high
dimension the outer Gauss nodes carry weights below 1e-18, where a value is round-off:
the dataset holds NaN there (``solvers.grids.zonal.ZonalGrid.reliable``), and the
curves stop at the last node with a value.

Curves: each saved density is drawn through its node values by monotone cubic
interpolation in θ (PCHIP: no overshoot between nodes, every node value on the curve; of
log ρ where ρ > 0 at every node), on a fine grid of θ; the marginal is that curve times
the exact w_d sin^{d−3} θ. At d =
64, L = 64 the nodes are 0.036 apart in t, a quarter of the uniform marginal's width
1/√d: a polygon through them showed its corners at every peak.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from meanfield.errors import ConfigError
from meanfield.plotting.helpers import _check_coords_numeric, _check_density
from meanfield.plotting.legible import _distinct_snapshots
from solvers.grids.zonal import log_measure_density

if TYPE_CHECKING:  # pragma: no cover - typing only
    import xarray as xr

UNIFORM = 1.0  # the uniform density against the normalized measure
FINE_POINTS = 600  # points of a curve in θ (plus the nodes)
_LARGEST_DIM = 100_000  # as the config accepts


def _check_zonal(ds: xr.Dataset) -> xr.Dataset:
    """Validate a zonal dataset; return it sorted by polar angle and time."""
    _check_density(ds, ("time", "polar"), "zonal")
    if ds.sizes["polar"] < 2:
        raise ConfigError(f"polar has {ds.sizes['polar']} point(s); zonal plots need at "
                          "least 2", "polar")
    _check_coords_numeric(ds, ("time", "polar"))
    if "time" not in ds.coords:
        ds = ds.assign_coords(time=np.arange(ds.sizes["time"], dtype=float))
    if "polar" not in ds.coords:
        raise ConfigError("dataset has a 'polar' dimension but no 'polar' coordinate "
                          "(the angle to the axis, radians)", "polar")
    theta = np.asarray(ds["polar"].values, dtype=float)
    if np.any((theta < 0) | (theta > math.pi)) or np.unique(theta).size != theta.size:
        raise ConfigError("coordinate 'polar' must hold distinct angles in [0, π]", "polar")
    _dim_of(ds)
    if np.any(np.diff(theta) <= 0):
        ds = ds.sortby("polar")
    if np.any(np.diff(np.asarray(ds["time"].values, dtype=float)) < 0):
        ds = ds.sortby("time")
    return ds


def _dim_of(ds: xr.Dataset) -> int:
    """The attribute ``dim`` (d of S^{d-1}), checked."""
    dim = ds.attrs.get("dim")
    try:
        value = int(dim)
    except (TypeError, ValueError):
        value = -1
    if dim is None or value != dim or not 2 <= value <= _LARGEST_DIM:
        raise ConfigError(f"a zonal dataset needs the attribute dim = d of S^(d-1), an "
                          f"integer in [2, {_LARGEST_DIM}] (found {dim!r})", "dim")
    return value


def marginal_factor(dim: int, theta: np.ndarray) -> np.ndarray:
    """``w_d sin^{d-3} θ``: the marginal of t = cos θ per unit density (the uniform
    marginal), from logarithms (finite for every d where it is a normal double)."""
    with np.errstate(divide="ignore"):
        return np.exp(log_measure_density(dim, theta) - np.log(np.sin(theta)))


@dataclass(frozen=True)
class _Zonal:
    """The curves of a zonal dataset: θ (rad, fine) with the density and the marginal
    over (time, θ) (NaN where not drawn), the saved times and d."""

    theta: np.ndarray
    rho: np.ndarray
    marginal: np.ndarray
    t: np.ndarray
    dim: int

    @property
    def cos(self) -> np.ndarray:
        return np.cos(self.theta)

    @classmethod
    def of(cls, ds: xr.Dataset) -> _Zonal:
        """The curves of a dataset checked by ``_check_zonal``."""
        dim = _dim_of(ds)
        nodes = np.asarray(ds["polar"].values, dtype=float)
        values = np.asarray(ds["density"].transpose("time", "polar").values, dtype=float)
        theta = np.union1d(np.linspace(nodes[0], nodes[-1], FINE_POINTS), nodes)
        rho = np.stack([_through_nodes(nodes, row, theta) for row in values])
        t = np.asarray(ds["time"].values, dtype=float)
        return cls(theta, rho, rho * marginal_factor(dim, theta), t, dim)

    def slices(self, n: int) -> np.ndarray:
        """``n`` saved times spread over the change of the marginal (where the mass
        moves; the density's values near the poles would decide otherwise)."""
        return _distinct_snapshots(self.t, np.nan_to_num(self.marginal), n)


def _through_nodes(nodes: np.ndarray, values: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """The monotone cubic (PCHIP) through the finite node values, at ``theta``: of log ρ
    between two positive nodes (a density that changes by e^{κ Δt} from node to node is
    nearly linear in log there), of ρ next to a node where ρ <= 0. NaN outside the
    finite nodes."""
    finite = np.isfinite(values)
    x, y = nodes[finite], values[finite]
    out = np.full(theta.shape, np.nan)
    if x.size == 0:
        return out
    inside = (theta >= x[0]) & (theta <= x[-1])
    out[inside] = _pchip(x, y, theta[inside])
    positive = y > 0
    if positive.sum() >= 2:
        right = np.clip(np.searchsorted(x, theta[inside]), 1, max(x.size - 1, 1))
        both = positive[right] & positive[right - 1] if x.size > 1 else positive[right]
        logs = np.exp(_pchip(x[positive], np.log(y[positive]), theta[inside]))
        out[inside] = np.where(both, logs, out[inside])
    return out


def _pchip(x: np.ndarray, y: np.ndarray, at: np.ndarray) -> np.ndarray:
    """PCHIP through (x, y) at ``at`` (linear through two points, constant at one)."""
    from scipy.interpolate import PchipInterpolator

    if x.size == 1:
        return np.full(at.shape, y[0])
    if x.size == 2:
        return np.interp(at, x, y)
    return PchipInterpolator(x, y)(at)


def uniform_marginal(dim: int, t: np.ndarray) -> np.ndarray:
    """The marginal of t = cos θ of the uniform density: w_d (1 − t²)^{(d−3)/2}."""
    return marginal_factor(dim, np.arccos(np.clip(t, -1.0, 1.0)))


def support(curves: np.ndarray, x: np.ndarray, fraction: float = 1e-3
            ) -> tuple[float, float]:
    """The x-range where some curve exceeds ``fraction`` of the largest value, padded by
    8 % each side and kept in [−1, 1] (for a marginal in t)."""
    values = np.nan_to_num(np.atleast_2d(curves), nan=0.0)
    keep = values.max(axis=0) > fraction * values.max()
    if not keep.any():
        return -1.0, 1.0
    lo, hi = float(x[keep].min()), float(x[keep].max())
    pad = 0.08 * max(hi - lo, 1e-3)
    return max(-1.0, lo - pad), min(1.0, hi + pad)
