"""``evolve(config)``: solve the mean-field PDE and return an ``xarray.Dataset``.

The run is validated before any work (``ConfigError``), then stepped through the save
times ``0, save_every, 2 save_every, ..., t_final``. With an output path, a checkpoint
``<path>.checkpoint.nc`` (the saved frames, the solver state and its next step size) is
written every ``output.checkpoint_every`` seconds of wall time and on Ctrl-C;
``resume=True`` continues from it and gives the same numbers as an uninterrupted run.
"""
from __future__ import annotations

import math
import time as _time
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

import meanfield
from meanfield import config as cfgmod
from meanfield import initial, initial_sphere
from meanfield.circle import CircleModel, FiniteVolumeCircle, SpectralCircle
from meanfield.errors import ConfigError
from meanfield.io import check_writable, read_netcdf, write_netcdf
from meanfield.kernels import required_resolution, sphere_required_lmax
from meanfield.sphere import (FiniteVolumeSphere, SpectralSphere, SphereFVModel, SphereModel,
                              mesh_level)
from solvers.circle import CircleGrid
from solvers.sht import SphereGrid
from solvers.sphere_mesh import SphereMesh, cell_averages, icosahedral_mesh
from solvers.steppers import integrate

UNITS = {"time": "1 (time in units of the model)", "theta": "rad", "lat": "rad",
         "lon": "rad", "mass": "1", "energy": "1", "free_energy": "1",
         "order_parameter": "1", "mean_direction": "1"}
# density and weights depend on the geometry: per unit length on S^1, per unit area on S^2
SPACE_UNITS = {"circle": {"density": "1/rad", "weights": "rad"},
               "sphere": {"density": "1/sr", "weights": "sr"}}
LONG_NAMES = {
    "density": "probability density w.r.t. arc length (circle) or area (sphere)",
    "weights": "quadrature weights (periodic trapezoid / cell widths / Gauss-Legendre)",
    "mass": "integral of the density",
    "energy": "interaction energy E_beta(rho) - E_beta(uniform)",
    "free_energy": "(1/kappa) int rho log rho - energy",
    "order_parameter": "|int x dmu|",
    "mean_direction": "int x dmu / |int x dmu|",
}


def checkpoint_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".checkpoint.nc")


def build_solver(cfg: dict, threads: int | None = None):
    """Grid, model and solver for a validated config (raises ConfigError on mismatch).

    ``resolution`` is the number of points (cells) on the circle and the band limit
    ``lmax`` on the sphere (Gauss-Legendre grid of lmax + 1 by 2 lmax + 2 points).
    """
    disc, model_cfg = cfg["discretization"], cfg["model"]
    sphere = cfg["domain"]["geometry"] == "sphere"
    n = disc["resolution"]
    needed = (sphere_required_lmax if sphere else required_resolution)(model_cfg["beta"])
    if sphere and disc["method"] == "finite-volume":
        # as many cells as the degrees of freedom of the band limit the kernel needs
        needed = next(c for c in cfgmod.SPHERE_MESH_CELLS + (10**9,) if c >= (needed + 1)**2)
    if n < needed:
        raise ConfigError(
            f"discretization.resolution = {n} is too small for model.beta = "
            f"{model_cfg['beta']:g}: the kernel needs resolution >= {needed}",
            "discretization.resolution")
    if threads is None and disc["threads"] != "auto":
        threads = disc["threads"]
    args = (model_cfg["beta"], model_cfg["kappa"], model_cfg["normalized"])
    if sphere and disc["method"] == "finite-volume":
        grid = icosahedral_mesh(mesh_level(n))
        model = SphereFVModel(grid, *args)
    elif sphere:
        grid = SphereGrid(n, threads=threads)
        model = SphereModel(grid, *args, threads=threads)
    else:
        grid = CircleGrid(n, threads=threads)
        model = CircleModel(grid, *args)
    t = cfg["time"]
    dt = t["dt"]
    if dt != "auto":
        # A fixed step that divides save_every, so that saves fall on steps.
        dt = t["save_every"] / math.ceil(t["save_every"] / dt * (1 - 1e-12))
    if sphere and disc["method"] == "finite-volume":
        solver = FiniteVolumeSphere(model, dt, disc["cfl"])
    elif sphere:
        solver = SpectralSphere(model, dt, t["tolerance"], disc["negativity_tolerance"])
    elif disc["method"] == "spectral":
        solver = SpectralCircle(model, dt, t["tolerance"], disc["negativity_tolerance"])
    else:
        solver = FiniteVolumeCircle(model, dt, disc["cfl"])
    return grid, model, solver


def save_times(t_final: float, save_every: float) -> np.ndarray:
    """0, save_every, ..., and t_final (the last interval may be shorter)."""
    count = int(math.floor(t_final / save_every * (1 + 1e-12)))
    times = save_every * np.arange(count + 1)
    if t_final - times[-1] > 1e-12 * t_final:
        times = np.append(times, t_final)
    else:
        times[-1] = t_final
    return times


def initial_density(cfg: dict, grid: CircleGrid | SphereGrid | SphereMesh) -> np.ndarray:
    """Checked initial grid values of mass 1 (raises ConfigError)."""
    if isinstance(grid, SphereMesh):
        f = initial_sphere.density_function(cfg["initial"])
        return initial.normalized_density(cell_averages(grid, f), grid.total)
    if isinstance(grid, SphereGrid):
        return initial_sphere.initial_values(cfg["initial"], grid)
    return initial.initial_values(cfg["initial"], grid.theta, grid.dx,
                                  cfg["discretization"]["method"])


def _space(grid: CircleGrid | SphereGrid | SphereMesh
           ) -> tuple[tuple[str, ...], dict, list[str]]:
    """Dimensions, coordinates and vector components of a grid (or mesh: the cells, with
    the latitude and longitude of their centres)."""
    if isinstance(grid, SphereMesh):
        c = grid.centers
        lat = np.arcsin(np.clip(c[:, 2], -1, 1))
        lon = np.mod(np.arctan2(c[:, 1], c[:, 0]), 2 * np.pi)
        return ("cell",), {"lat": ("cell", lat), "lon": ("cell", lon)}, ["x", "y", "z"]
    if isinstance(grid, SphereGrid):
        return ("lat", "lon"), {"lat": grid.lat.copy(), "lon": grid.lon.copy()}, \
            ["x", "y", "z"]
    return ("theta",), {"theta": grid.theta.copy()}, ["x", "y"]


def to_dataset(cfg: dict, grid: CircleGrid | SphereGrid, times: list[float],
               densities: list[np.ndarray], diags: list[dict],
               attrs: dict[str, Any] | None = None) -> xr.Dataset:
    """The result dataset (see DESIGN.md section 3)."""
    dims, coords, components = _space(grid)
    geometry = cfg["domain"]["geometry"]
    data: dict[str, Any] = {
        "density": (("time",) + dims, np.array(densities)),
        "weights": (dims, (grid.areas if isinstance(grid, SphereMesh)
                           else grid.weights).copy()),
    }
    names = ["mass", "energy", "order_parameter"]
    if diags and "free_energy" in diags[0]:
        names.append("free_energy")
    for name in names:
        data[name] = (("time",), np.array([d[name] for d in diags], dtype=float))
    data["mean_direction"] = (("time", "component"),
                              np.array([d["mean_direction"] for d in diags]
                                       ).reshape(-1, len(components)))
    ds = xr.Dataset(data, coords={"time": np.array(times, dtype=float), **coords,
                                  "component": components})
    units = {**UNITS, **SPACE_UNITS[geometry]}
    for name in list(ds.data_vars) + ["time", *coords]:
        ds[name].attrs["units"] = units[name]
        if name in LONG_NAMES:
            ds[name].attrs["long_name"] = LONG_NAMES[name]
    m = cfg["model"]
    ds.attrs.update({
        "title": f"{'SA' if m['normalized'] else 'USA'} on the {geometry}, beta = "
                 f"{m['beta']:g}, kappa = {m['kappa']:g}",
        "geometry": geometry, "method": cfg["discretization"]["method"],
        "model": "SA" if m["normalized"] else "USA", "beta": m["beta"], "kappa": m["kappa"],
        "resolution": cfg["discretization"]["resolution"], "config": cfgmod.to_json(cfg),
        "meanfield_version": meanfield.__version__, "status": 0, "message": "finished",
    })
    ds.attrs.update(attrs or {})
    return ds


def evolve(config: dict | None = None, *, out: str | Path | None = None,
           overwrite: bool = False, resume: bool = False, progress: bool = False,
           threads: int | None = None) -> xr.Dataset:
    """Solve the Fokker-Planck / continuity equation for one config.

    Args:
        config: the config (dict of sections; see ``meanfield.config``), validated here.
        out: where to write the netCDF result (default ``output.path``; none: not written).
        overwrite: replace an existing result.
        resume: continue from ``<out>.checkpoint.nc`` if it exists.
        progress: show a tqdm progress bar.
        threads: FFT threads (default: ``discretization.threads``).

    Returns:
        The result dataset; ``attrs["status"]`` is 0 when finished and -1 when interrupted
        by Ctrl-C (then it holds the frames computed so far, also kept in the checkpoint).

    Raises:
        ConfigError: bad input, before any time stepping.
        SolverError: the run became unstable; the message says what to change.
    """
    cfg = cfgmod.validate(config)
    cfgmod.check_pde_dim(cfg)
    out = out if out is not None else cfg["output"]["path"]
    if out is not None:
        check_writable(out, overwrite or resume)
    grid, model, solver = build_solver(cfg, threads)
    rho0 = initial_density(cfg, grid)
    times = save_times(cfg["time"]["t_final"], cfg["time"]["save_every"])

    frames: list[np.ndarray] = []
    diags: list[dict] = []
    state, t0, h0 = solver.to_state(rho0), 0.0, solver.first_step(cfg["time"]["t_final"])
    ckpt = checkpoint_path(out) if out is not None else None
    if resume and ckpt is not None and ckpt.exists():
        state, t0, h0, frames, diags = _load_checkpoint(ckpt, cfg, model)
    else:
        frames.append(rho0.copy())
        diags.append(model.diagnostics(rho0))
    pending = times[times > t0 * (1 + 1e-12) + 1e-300]

    bar = progress_bar(cfg["time"]["t_final"], t0, progress)
    last_ckpt = [_time.monotonic()]
    # The exact solver state at the last save: a resumed run restarts from it bit for bit.
    last = {"state": state, "t": t0, "h": h0}

    def on_save(t: float, u: np.ndarray, h_next: float) -> None:
        rho = solver.to_density(u)
        diag = model.diagnostics(rho)  # all of a frame or none of it, if Ctrl-C comes here
        frames.append(rho)
        diags.append(diag)
        last.update(state=u.copy(), t=t, h=h_next)
        if ckpt is not None and (_time.monotonic() - last_ckpt[0]
                                 > cfg["output"]["checkpoint_every"]):
            _write_checkpoint(ckpt, cfg, grid, frames, diags, last)
            last_ckpt[0] = _time.monotonic()

    def on_step(t: float) -> None:
        if bar is not None:
            bar.update(t - bar.n)

    wall = _time.perf_counter()
    try:
        res = integrate(solver.stepper(), state, t0, pending, h0, on_save=on_save,
                        check=solver.check, on_step=on_step,
                        underflow_advice="the solution is not resolved; raise "
                        "discretization.resolution, loosen time.tolerance or use "
                        "method = \"finite-volume\"")
    finally:
        if bar is not None:
            bar.close()
    saved_times = list(times[: len(frames)])
    attrs = {"status": res.status, "message": res.message, "steps": res.steps,
             "wall_time_s": _time.perf_counter() - wall}
    ds = to_dataset(cfg, grid, saved_times, frames, diags, attrs)
    if res.status == -1:
        if ckpt is not None:
            _write_checkpoint(ckpt, cfg, grid, frames, diags, last)
            ds.attrs["message"] += f"; kept in {str(ckpt)!r}, continue with resume"
        return ds
    if out is not None:
        write_netcdf(ds, out, overwrite=True)
        if ckpt is not None:
            ckpt.unlink(missing_ok=True)
    return ds


def progress_bar(total: float, start: float, enabled: bool):
    """A tqdm bar over simulated time (None when not ``enabled``)."""
    if not enabled:
        return None
    from tqdm.auto import tqdm
    bar = tqdm(total=total, initial=start, unit="t", bar_format="{l_bar}{bar}| t = {n:.4g}/"
               "{total:.4g} [{elapsed}<{remaining}]")
    return bar


def _write_checkpoint(path: Path, cfg: dict, grid: CircleGrid | SphereGrid, frames, diags,
                      last: dict) -> None:
    times = save_times(cfg["time"]["t_final"], cfg["time"]["save_every"])[: len(frames)]
    t, h_next, state = last["t"], last["h"], np.asarray(last["state"])
    ds = to_dataset(cfg, grid, list(times), frames, diags,
                    {"status": -1, "message": f"checkpoint at t = {t:.6g}"})
    ds["checkpoint_state_real"] = (("state",), np.real(state).astype(float))
    ds["checkpoint_state_imag"] = (("state",), np.imag(state).astype(float))
    ds.attrs.update({"checkpoint_t": float(t), "checkpoint_h": float(h_next),
                     "checkpoint_complex": int(np.iscomplexobj(state))})
    write_netcdf(ds, path, overwrite=True)


def _load_checkpoint(path: Path, cfg: dict, model: CircleModel | SphereModel):
    ds = read_netcdf(path)
    if not cfgmod.same_run(ds.attrs["config"], cfg):
        raise ConfigError(f"the checkpoint {str(path)!r} was made with another config; "
                          "delete it or run with the same config", "resume")
    state = ds["checkpoint_state_real"].values
    if ds.attrs["checkpoint_complex"]:
        state = state + 1j * ds["checkpoint_state_imag"].values
    frames = list(ds["density"].values)
    diags = [model.diagnostics(f) for f in frames]
    return state, float(ds.attrs["checkpoint_t"]), float(ds.attrs["checkpoint_h"]), frames, diags
