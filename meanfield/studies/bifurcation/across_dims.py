"""The bifurcation study across dimensions: ``[domain] geometry = "zonal"`` with
``domain.dim`` a list or a range ``{start, stop, num}`` of d (issue 26 item 4).

Each d is one point of the run engine: the study of ``[bifurcation] mode`` (continuation,
scan or map) runs for the zonal S^{d-1} in memory (``config_at``: the config with that d,
validated again, so that an "auto" kappa range is ``[kappa_c(d)/2, 2 kappa_c(d)]`` for
each d), and its dataset becomes one member of a dimension ``dim`` (``member``); a
checkpoint keeps the dimensions done, ``resume`` goes on with the others, Ctrl-C keeps
the finished ones (the d in progress is computed again).

The dataset (``across_dataset``): every variable of the one-d dataset gains the leading
dimension ``dim`` (coordinate: the d), padded to the longest member along the others (NaN;
-1 for integers, as ``stable`` and ``state_point``; "" for text): ``kappa (dim, branch,
point)``, ``order_parameter (dim, branch, point)`` (the branches r(kappa) per d),
``transition (dim, branch)``, ``map_critical_kappa (dim, beta)`` (kappa_c(beta, d)), ...
An index coordinate other than the shared ``sweep`` and the map's ``beta`` differs between
dimensions (the Gauss nodes ``polar`` of each d, a range of kappa per d) and is kept as
``<name>_of_dim (dim, <name>)``: ``polar_of_dim``, the map's ``kappa_of_dim``, the scan's
``value_of_dim``. The attributes that are the same for every d stay attributes (geometry,
model, parameter, value, mode, beta or kappa); the others become variables on ``dim`` of
the same name (``critical_kappa (dim, mode)``, ``pitchfork_check``, ``kappa_c``,
``tricritical_beta``, ...), the one-d runs' status, message and wall time as
``dim_status``, ``dim_message`` and ``dim_wall_time_s``. Added (``meanfield.model.landau``
in dimension d): ``tricritical_beta_landau (dim)`` (the USA tricritical beta*(d), NaN
where the transition stays continuous: SA), and for a study in kappa at ``model.beta``
``landau_kappa_2 (dim)`` and ``landau_transition (dim)``. Attrs ``dims`` and ``title``; the
run's ``status`` is 1 when the study of some d finished with problems (``problems`` names
them).
"""
from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import xarray as xr

from meanfield import config as cfgmod
from meanfield.runs.engine import RunTask
from meanfield.studies.bifurcation.plan import finished_with_problems
from meanfield.studies.dataset import model_name

SHARED_ATTRS = ("geometry", "model", "parameter", "value", "mode", "beta", "kappa",
                "scan_tolerance", "polish_tolerance", "scan_t_max")
SHARED_INDEXES = ("sweep", "beta")  # (the scan's sweeps, the map's betas: the same for all d)
# (the run's own, or the coordinate)
DROPPED_ATTRS = ("kind", "config", "version", "dim", "title")
RENAMED_ATTRS = {"status": "dim_status", "message": "dim_message",
                 "wall_time_s": "dim_wall_time_s"}


def dims_of(cfg: dict) -> list[int] | None:
    """The dimensions of a study across d (a list in ``domain.dim``), else None."""
    dim = cfg["domain"]["dim"]
    return [int(d) for d in dim] if isinstance(dim, list) else None


def config_at(cfg: dict, d: int) -> dict:
    """The config of one dimension: ``domain.dim = d``, validated again (an "auto"
    kappa range is derived for this d)."""
    out = copy.deepcopy(cfg)
    out["domain"]["dim"] = int(d)
    return cfgmod.validate(out)


def member(ds: xr.Dataset, d: int) -> xr.Dataset:
    """The dataset of one d as a member of the study across d (module docstring)."""
    ds = ds.copy()
    attrs, ds.attrs = dict(ds.attrs), {}
    for name in list(ds.indexes):
        if name not in SHARED_INDEXES:
            values = ds[name].values
            ds = ds.drop_vars(name).assign_coords({f"{name}_of_dim": (name, values)})
    ds = ds.expand_dims({"dim": [int(d)]})
    for name in list(ds.coords):  # (the non-index coordinates vary with d too)
        if name != "dim" and name not in ds.indexes and "dim" not in ds[name].dims:
            ds = ds.assign_coords({name: ds[name].expand_dims({"dim": ds["dim"].values})})
    for key, value in attrs.items():
        if key in SHARED_ATTRS:
            ds.attrs[key] = value
        elif key not in DROPPED_ATTRS:
            ds[RENAMED_ATTRS.get(key, key)] = _attr_variable(value)
    return ds


def _attr_variable(value: Any) -> xr.DataArray:
    """A per-d attribute as a variable of a member: (dim,), or (dim, mode) for the
    arrays per mode (``critical_kappa``, ``critical_beta``)."""
    array = np.asarray(value)
    if array.ndim == 0:
        return xr.DataArray(array[None], dims=("dim",))
    return xr.DataArray(array[None], dims=("dim", "mode"),
                        coords={"mode": np.arange(1, array.size + 1)})


def _fill(dtype: np.dtype) -> Any:
    if np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.complexfloating):
        return np.nan
    if np.issubdtype(dtype, np.bool_):
        return False
    if np.issubdtype(dtype, np.integer):
        return -1
    return ""


def _padded(ds: xr.Dataset, sizes: dict[str, int]) -> xr.Dataset:
    """``ds`` with every dimension but ``dim`` and the shared indexes padded to
    ``sizes`` (the fill of ``_fill``)."""
    out = xr.Dataset(attrs=ds.attrs)
    for name, var in {**ds.coords, **ds.data_vars}.items():
        if name in ds.indexes:
            continue
        shape = tuple(sizes.get(dim, n) for dim, n in zip(var.dims, var.shape))
        values = np.asarray(var.values)
        if values.dtype.kind in "US":
            values = values.astype(object)
        full = np.full(shape, _fill(values.dtype), dtype=values.dtype)
        full[tuple(slice(0, n) for n in var.shape)] = values
        target = out.coords if name in ds.coords else out
        target[name] = xr.Variable(var.dims, full, var.attrs)
    return out.assign_coords({name: ds[name] for name in ds.indexes})


def combine(members: list[xr.Dataset]) -> xr.Dataset:
    """The members (``member``, or one-d slices of an earlier combination) on ``dim``."""
    sizes: dict[str, int] = {}
    for m in members:
        for dim, n in m.sizes.items():
            if dim != "dim" and dim not in SHARED_INDEXES:
                sizes[dim] = max(sizes.get(dim, 0), n)
    padded = [_padded(m, sizes) for m in members]
    out = xr.concat(padded, dim="dim", data_vars="all", coords="different",
                    compat="equals", combine_attrs="override")
    for name, var in out.variables.items():  # (text padded as object: back to str)
        if var.dtype == object:
            out[name] = var.astype(str)
    return out


def across_dataset(cfg: dict, members: list[xr.Dataset], info: dict) -> xr.Dataset:
    """The dataset of the study across d (module docstring) of the members done."""
    from meanfield.model import landau

    ds = combine(members) if members else xr.Dataset()
    dims = [int(d) for d in ds["dim"].values] if members else []
    m, b = cfg["model"], cfg["bifurcation"]
    normalized = bool(m["normalized"])
    if dims and "tricritical_beta_landau" not in ds:
        star = [landau.tricritical_beta("zonal", normalized, d) for d in dims]
        ds["tricritical_beta_landau"] = ("dim", np.array(
            [math.nan if s is None else s for s in star]))
    value = float(ds.attrs.get("value", 1.0)) if members else 1.0
    if dims and b["parameter"] == "kappa" and b["mode"] != "map" and value > 0:
        k2 = [landau.landau_coefficient("zonal", float(m["beta"]), normalized, value, d)
              for d in dims]
        ds["landau_kappa_2"] = ("dim", np.array(k2))
        ds["landau_transition"] = ("dim", np.array(
            ["subcritical" if k < 0 else "supercritical" for k in k2], dtype=str))
    if "dim_status" in ds:
        problems = [f"d = {d}: {msg}" for d, status, msg in
                    zip(dims, ds["dim_status"].values, ds["dim_message"].values)
                    if int(status) == 1]
        info = {**info, "problems": "; ".join(problems)}
    shown = ", ".join(map(str, dims)) if len(dims) <= 6 else f"{dims[0]}..{dims[-1]}"
    name = model_name(normalized)
    if b["parameter"] == "kappa" and b["mode"] != "map" and m["beta"] == 0:
        name = "the noisy Kuramoto model"  # (beta = 0: e^{beta<x,y>} = 1, SA = USA)
    ds.attrs.update({"title": f"bifurcations of {name} on zonal "
                              f"S^{{d-1}} across d = {shown} ({len(dims)} dimensions)",
                     "dims": np.array(dims, dtype=np.int64), **info})
    return ds


class AcrossDimsTask(RunTask):
    """Points: the start, then one per dimension; a checkpoint keeps those done.

    Args:
        cfg: the validated config (``domain.dim`` a list).
        run_one: runs the study of one d in memory (a config -> its dataset).
    """

    kind = "bifurcation"

    def __init__(self, cfg: dict, run_one: Callable[[dict], xr.Dataset]):
        super().__init__(cfg)
        self.dims = dims_of(cfg)
        self.run_one = run_one

    def points(self) -> list:
        return ["start", *self.dims]

    def where(self, done: int) -> str:
        return f"{max(done - 1, 0)} of {len(self.dims)} dimensions"

    def start(self) -> Any:
        return None

    def advance(self, state: Any, point: Any, on_step) -> Any:
        ds = self.run_one(config_at(self.cfg, point))
        if ds.attrs.get("status") == -1:  # (Ctrl-C inside: the d in progress is dropped)
            raise KeyboardInterrupt
        return member(ds, point)

    def frame(self, state: Any) -> Any:
        return state

    def dataset(self, frames: list, info: dict) -> xr.Dataset:
        return across_dataset(self.cfg, [f for f in frames[1:] if f is not None], info)

    def outcome(self, ds: xr.Dataset) -> tuple[int, str]:
        return finished_with_problems(ds)

    def checkpoint(self, state: Any, frames: list) -> xr.Dataset:
        done = [f for f in frames[1:] if f is not None]
        return combine(done) if done else xr.Dataset()

    def restore(self, ckpt: xr.Dataset) -> tuple[Any, list]:
        if "dim" not in ckpt.dims:
            return None, [None]
        done = [ckpt.isel(dim=[i]).load() for i in range(ckpt.sizes["dim"])]
        return done[-1], [None, *done]
