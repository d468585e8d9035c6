"""``evolve(config)``: solve the mean-field PDE and return an ``xarray.Dataset``.

The run is validated before any work (``ConfigError``), then stepped through the save
times ``0, save_every, 2 save_every, ..., t_final``. With an output path, a checkpoint
``<path>.checkpoint.nc`` (the saved frames, the solver state and its next step size) is
written every ``output.checkpoint_every`` seconds of wall time and on Ctrl-C;
``resume=True`` continues from it and gives the same numbers as an uninterrupted run.
"""
from __future__ import annotations

import time as _time
from pathlib import Path

import numpy as np
import xarray as xr

from meanfield import config as cfgmod
from meanfield.discretizations.registry import build_solver, initial_density
from meanfield.errors import ConfigError
from meanfield.io import check_writable, read_netcdf, write_netcdf
from meanfield.runs.pde_dataset import to_dataset
from meanfield.runs.schedule import checkpoint_path, progress_bar, save_times
from solvers.steppers import integrate


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


def _write_checkpoint(path: Path, cfg: dict, grid, frames, diags,
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


def _load_checkpoint(path: Path, cfg: dict, model):
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
