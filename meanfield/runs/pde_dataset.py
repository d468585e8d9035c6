"""The evolve dataset (docs/datasets.md): density on the grid, weights, diagnostics."""
from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from meanfield import config as cfgmod
from meanfield.discretizations.base import model_value
from meanfield.version import __version__
from solvers.grids import Grid

UNITS = {"time": "1 (time in units of the model)", "theta": "rad", "lat": "rad",
         "lon": "rad", "polar": "rad", "cos_polar": "1", "marginal": "1", "mass": "1", "energy": "1", "free_energy": "1",
         "order_parameter": "1", "mean_direction": "1", "resolution": "1"}
# density and weights depend on the geometry: per unit length on S^1, per unit area on S^2
SPACE_UNITS = {"circle": {"density": "1/rad", "weights": "rad", "min_density": "1/rad"},
               "sphere": {"density": "1/sr", "weights": "sr", "min_density": "1/sr"},
               # zonal: against the normalized surface measure of S^{d-1} (uniform = 1)
               "zonal": {"density": "1", "weights": "1", "min_density": "1"}}
LONG_NAMES = {
    "density": "probability density w.r.t. arc length (circle) or area (sphere)",
    "weights": "quadrature weights (periodic trapezoid / cell widths / Gauss-Legendre)",
    "mass": "integral of the density",
    "energy": "interaction energy E_beta(rho) - E_beta(uniform)",
    "free_energy": "(1/kappa) int rho log rho - value * energy",
    "order_parameter": "|int x dmu|",
    "marginal": "probability density of t = cos(polar) = <x, e> (per unit t)",
    "polar": "angle to the axis e",
    "cos_polar": "t = cos(polar) = <x, e>",
    "mean_direction": "int x dmu / |int x dmu|",
    "min_density": "smallest value of the solver's density at its nodes (negative: the "
                   "undershoot of a spectral series; the run stops beyond what the accuracy "
                   "asked for allows)",
    "resolution": "the solver's resolution at the save (resolution = \"auto\": raised as "
                  "the solution needs; the density is given at the first grid's nodes)",
}


def to_dataset(cfg: dict, grid: Grid, times: list[float],
               densities: list[np.ndarray], diags: list[dict],
               attrs: dict[str, Any] | None = None) -> xr.Dataset:
    """The result dataset (see docs/datasets.md).

    The grid gives the dimensions of a field, the coordinates of its nodes (theta; lat,
    lon; or the cells with the lat, lon of their centres), the quadrature weights and the
    components of ``mean_direction``. The attr ``value`` is the c of the value matrix
    ``V = c I`` (``[weights] value``; 1 without weights).
    """
    dims, coords, components = grid.dims, grid.coords(), list(grid.components)
    geometry = grid.geometry
    densities = np.array(densities)
    reliable = getattr(grid, "reliable", None)
    if reliable is not None:  # (zonal, large d: values there are round-off, not data)
        densities[:, ~np.asarray(reliable)] = np.nan
    data: dict[str, Any] = {
        "density": (("time",) + dims, densities),
        "weights": (dims, np.array(grid.weights)),
    }
    names = ["mass", "energy", "order_parameter"]
    if diags and "free_energy" in diags[0]:
        names.append("free_energy")
    for extra in ("min_density", "resolution"):  # (set by evolve; "auto" runs only)
        if diags and extra in diags[0]:
            names.append(extra)
    for name in names:
        data[name] = (("time",), np.array([d[name] for d in diags],
                                          dtype=int if name == "resolution" else float))
    data["mean_direction"] = (("time", "component"),
                              np.array([d["mean_direction"] for d in diags]
                                       ).reshape(-1, len(components)))
    if geometry == "zonal":  # the law of t = <x, e>, what a histogram of tokens shows
        data["marginal"] = (("time",) + dims, grid.marginal(densities))
    ds = xr.Dataset(data, coords={"time": np.array(times, dtype=float), **coords,
                                  "component": components})
    units = {**UNITS, **SPACE_UNITS[geometry]}
    for name in list(ds.data_vars) + ["time", *coords]:
        ds[name].attrs["units"] = units[name]
        if name in LONG_NAMES:
            ds[name].attrs["long_name"] = LONG_NAMES[name]
    if geometry == "zonal":
        ds["density"].attrs["long_name"] = ("probability density w.r.t. the normalized "
                                            "surface measure of S^{d-1} (uniform = 1); NaN "
                                            "at nodes of weight < 1e-18, where round-off "
                                            "of the coefficients decides the value")
        ds["weights"].attrs["long_name"] = ("quadrature weights of the normalized measure "
                                            "(Gauss-Gegenbauer / exact cell measures)")
    m = cfg["model"]
    value = model_value(cfg)
    where = (f"S^{cfg['domain']['dim'] - 1} (zonal)" if geometry == "zonal"
             else f"the {geometry}")
    ds.attrs.update({
        "title": f"{'SA' if m['normalized'] else 'USA'} on {where}, beta = "
                 f"{m['beta']:g}, kappa = {m['kappa']:g}"
                 + ("" if value == 1 else f", V = {value:g} I"),
        "value": value,
        "geometry": geometry, "dim": cfg["domain"]["dim"],
        "method": cfg["discretization"]["method"],
        "model": "SA" if m["normalized"] else "USA", "beta": m["beta"], "kappa": m["kappa"],
        "resolution": cfg["discretization"]["resolution"], "config": cfgmod.to_json(cfg),
        "version": __version__, "status": 0, "message": "finished",
    })
    ds.attrs.update(attrs or {})
    return ds
