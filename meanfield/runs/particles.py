"""``particles(config)``: run the token system of a config, return an ``xarray.Dataset``.

The config is the PDE's (``meanfield.config``) with the ``[particles]`` section: ``n``
tokens drawn i.i.d. from the ``[initial]`` density (``meanfield.initial.samplers``; or the rows
of a token file, or an equiangular set) with ``particles.seed``, moved by the model of
``particles.architecture``:

- ``"post-ln"``: SA (``normalized = true``) or USA on S^{d-1}, with noise when
  ``model.kappa`` is finite (geodesic Euler-Maruyama, fixed ``time.dt``), else RK4 with
  retraction (fixed ``time.dt`` or adaptive with ``time.tolerance``);
- ``"pre-ln"``: tokens in R^d, attention on their directions (no noise);
- ``"hardmax"``: beta = infinity without self-attention (``model.beta`` is not used).

Interaction sums: ``particles.sum_method`` (``solvers.particles.fast``): "direct" (exact, O(n^2)),
"fourier" (S^1) or "harmonic" (S^2), to ``particles.accuracy``; "auto" picks by n, d and
beta once per run.

The dataset: ``position (time, particle, component)`` unit vectors (the directions for
Pre-LN, whose lengths are ``radius (time, particle)``), on the circle also ``angle (time,
particle)`` in [0, 2 pi), and per time ``order_parameter``, ``mean_direction``, ``energy``
(``E_beta(mu^n) - E_beta(uniform)``, as the PDE's), ``clusters`` (single-linkage clusters
at chordal distance ``particles.cluster_threshold``; ``meanfield.metrics.clusters``) and, with
``particles.attention_rank``, ``attention_rank``. Attributes: the config, the version,
the resolved sum method and its order, status and message.

Nothing lost: with an output path, a checkpoint ``<path>.checkpoint.nc`` (frames, exact
state, noise generator state, next step) is written every ``output.checkpoint_every``
seconds and on Ctrl-C; ``resume=True`` continues from it bit for bit.
"""
from __future__ import annotations

import json
import math
import time as _time
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

import meanfield
from meanfield.metrics import clusters as cl
from meanfield import config as cfgmod
from meanfield.model import particles as pm
from meanfield.initial import samplers as sampling
from meanfield.metrics.diagnostics import summarize
from meanfield.errors import ConfigError
from meanfield.runs.schedule import checkpoint_path, progress_bar, save_times
from meanfield.io import check_writable, read_netcdf, write_netcdf
from solvers.particles import fast as fast_sums

DEFAULT_N = 1000
# method -> the only dimension it serves
FAST_METHODS = {method: d for d, method in fast_sums.FAST_METHOD.items()}


# ---------------------------------------------------------------------------------------
# Checking a config and building the run.

def check_config(cfg: dict) -> dict:
    """Particle-specific checks of a validated config; returns the run plan.

    The plan: ``n``, ``dim``, ``kappa``, ``dt`` (None: adaptive), ``sum_method`` (what
    "auto" resolves to), ``sum_order`` (K or L of a fast method, else 0).
    """
    p, m, dim = cfg["particles"], cfg["model"], cfg["domain"]["dim"]
    kind = cfg["initial"]["kind"]
    n = p["n"]
    if kind == "tokens":
        rows = sampling.token_count(cfg["initial"]["path"])
        if n is not None and n != rows:
            raise ConfigError(f"particles.n = {n} but the token file "
                              f"{cfg['initial']['path']!r} has {rows} rows; leave particles.n "
                              "out to take them all", "particles.n")
        n = rows
    n = DEFAULT_N if n is None else n
    pm.check_size(n, dim)
    noisy = not math.isinf(m["kappa"])
    if noisy and p["architecture"] == "pre-ln":
        raise ConfigError("model.kappa: noise is defined for tokens on the sphere (post-ln, "
                          "hardmax); pre-ln tokens live in R^d: use kappa = \"inf\"",
                          "model.kappa")
    dt = cfg["time"]["dt"]
    if noisy and dt == "auto":
        raise ConfigError("time.dt = \"auto\": particle runs with noise need a fixed step "
                          "(Euler-Maruyama has no error estimate); give e.g. time.dt = 0.01",
                          "time.dt")
    method = p["sum_method"]
    if p["architecture"] == "hardmax" and method not in ("auto", "direct"):
        raise ConfigError(f"particles.sum_method = {method!r}: the hardmax model has no fast sum "
                          "(it takes a maximum, not an exponential kernel); use 'auto' or "
                          "'direct'", "particles.sum_method")
    if method in FAST_METHODS and FAST_METHODS[method] != dim:
        valid = ["auto", "direct"] + [k for k, v in FAST_METHODS.items() if v == dim]
        raise ConfigError(f"particles.sum_method = {method!r} is the "
                          f"{'circle (dim 2)' if method == 'fourier' else 'sphere (dim 3)'} "
                          f"fast sum; for dim {dim} use one of "
                          + ", ".join(repr(v) for v in valid), "particles.sum_method")
    beta = m["beta"] if p["architecture"] != "hardmax" else math.inf
    if method in FAST_METHODS:
        try:
            fast_sums.check_fast_accuracy(dim, beta, p["accuracy"])
        except ValueError as exc:
            raise ConfigError(f"particles.accuracy = {p['accuracy']!r} with method "
                              f"{method!r} at beta = {beta:g}: {exc}",
                              "particles.accuracy") from None
    if p["architecture"] == "hardmax":
        resolved = "direct"
    else:
        resolved = fast_sums.resolve_method(method, n, dim, beta, p["accuracy"])
    order = fast_sums.fast_order(dim, beta, p["accuracy"]) if resolved in FAST_METHODS else 0
    if p["attention_rank"] and n > cl.MAX_RANK_TOKENS:
        raise ConfigError(f"particles.attention_rank = true needs a dense SVD of the n x n "
                          f"attention matrix: n = {n} > {cl.MAX_RANK_TOKENS}; use fewer tokens",
                          "particles.attention_rank")
    return {"n": n, "dim": dim, "kappa": m["kappa"], "dt": None if dt == "auto" else dt,
            "beta": beta, "sum_method": resolved, "sum_order": order}


def build_model(cfg: dict, plan: dict, threads: int | None = None):
    """The model object of ``particles.architecture``."""
    p, m = cfg["particles"], cfg["model"]
    if p["architecture"] == "hardmax":
        return pm.HardmaxParticles()
    cls = pm.PreLNParticles if p["architecture"] == "pre-ln" else pm.AttentionParticles
    return cls(m["beta"], m["normalized"], method=plan["sum_method"],
               accuracy=p["accuracy"], threads=threads)


def initial_tokens(cfg: dict, plan: dict) -> np.ndarray:
    """The initial tokens: unit vectors, except Pre-LN token files read as they are."""
    init = cfg["initial"]
    if cfg["particles"]["architecture"] == "pre-ln" and init["kind"] == "tokens" \
            and not init["unit_rows"]:
        return pm.check_tokens(sampling.load_token_file(init["path"], plan["dim"], plan["n"]),
                               on_sphere=False, key="initial.path")
    rng = pm.initial_rng(cfg["particles"]["seed"])
    return sampling.sample_tokens(init, plan["n"], plan["dim"], rng)


# ---------------------------------------------------------------------------------------
# Diagnostics and the dataset.

def diagnostics(x: np.ndarray, cfg: dict, plan: dict) -> dict:
    """Diagnostics of one frame of tokens (rows of ``x``; directions are taken): the
    empirical measure's through ``meanfield.metrics.diagnostics.summarize`` (weights 1/n), as the
    PDE's, plus clusters and the attention rank."""
    th = pm.directions(x)
    n, p = th.shape[0], cfg["particles"]
    if math.isinf(plan["beta"]):
        energy = math.nan  # E_beta diverges with beta
    else:
        energy = pm.interaction_energy(th, plan["beta"], method=plan["sum_method"],
                                       accuracy=p["accuracy"])
    summary = summarize(np.full(n, 1.0 / n), np.ones(n), th, energy, 0.0)
    out: dict[str, Any] = {key: summary[key]
                           for key in ("order_parameter", "mean_direction", "energy")}
    out["clusters"] = cl.cluster_count(th, p["cluster_threshold"])
    if p["attention_rank"]:
        out["attention_rank"] = cl.attention_rank(th, plan["beta"],
                                                  cfg["model"]["normalized"],
                                                  p["rank_tolerance"])
    return out


def component_names(dim: int) -> list[str]:
    return ["x", "y", "z"][:dim] if dim <= 3 else [f"x{i + 1}" for i in range(dim)]


LONG_NAMES = {
    "position": "token direction x_i / |x_i| (unit vector in R^d)",
    "radius": "token length |x_i| (Pre-LN: tokens move in R^d)",
    "angle": "token angle on the circle, in [0, 2 pi)",
    "order_parameter": "|mean_i x_i|",
    "mean_direction": "mean_i x_i / |mean_i x_i|",
    "energy": "interaction energy E_beta(mu^n) - E_beta(uniform)",
    "clusters": "single-linkage clusters: tokens linked at chordal distance < threshold",
    "attention_rank": "numerical rank of the attention matrix",
}


def to_dataset(cfg: dict, plan: dict, times: list[float], frames: list[np.ndarray],
               diags: list[dict], attrs: dict | None = None) -> xr.Dataset:
    """The particle dataset (see the module docstring)."""
    x = np.stack(frames)
    norms = np.sqrt(np.einsum("tij,tij->ti", x, x))
    dims3 = ("time", "particle", "component")
    data: dict[str, Any] = {"position": (dims3, x / norms[..., None])}
    if cfg["particles"]["architecture"] == "pre-ln":
        data["radius"] = (("time", "particle"), norms)
    if plan["dim"] == 2:
        data["angle"] = (("time", "particle"),
                         np.mod(np.arctan2(x[..., 1], x[..., 0]), 2 * np.pi))
    for name in ("order_parameter", "energy", "clusters", "attention_rank"):
        if diags and name in diags[0]:
            data[name] = (("time",), np.array([d[name] for d in diags]))
    data["mean_direction"] = (("time", "component"),
                              np.array([d["mean_direction"] for d in diags]))
    ds = xr.Dataset(data, coords={"time": np.array(times, dtype=float),
                                  "particle": np.arange(plan["n"]),
                                  "component": component_names(plan["dim"])})
    units = {"time": "1 (time in units of the model)", "angle": "rad"}
    for name in ds.data_vars:
        ds[name].attrs["units"] = units.get(name, "1")
        ds[name].attrs["long_name"] = LONG_NAMES[name]
    ds["time"].attrs["units"] = units["time"]
    p = cfg["particles"]
    ds["clusters"].attrs["threshold"] = p["cluster_threshold"]
    ds["clusters"].attrs["long_name"] += f" = {p['cluster_threshold']:g}"
    if "attention_rank" in ds:
        ds["attention_rank"].attrs["tolerance"] = p["rank_tolerance"]
    m = cfg["model"]
    model = {"post-ln": "SA" if m["normalized"] else "USA",
             "pre-ln": f"Pre-LN {'SA' if m['normalized'] else 'USA'}",
             "hardmax": "hardmax"}[p["architecture"]]
    geometry = cfg["domain"]["geometry"]
    ds.attrs.update({
        "title": f"{plan['n']} tokens, {model} on S^{plan['dim'] - 1}, beta = "
                 f"{plan['beta']:g}, kappa = {m['kappa']:g}",
        "kind": "particles", "geometry": geometry, "dim": plan["dim"], "model": model,
        "architecture": p["architecture"], "beta": plan["beta"], "kappa": m["kappa"],
        "n": plan["n"], "seed": p["seed"], "sum_method": plan["sum_method"],
        "sum_order": plan["sum_order"], "accuracy": p["accuracy"],
        "config": cfgmod.to_json(cfg), "meanfield_version": meanfield.__version__,
        "status": 0, "message": "finished",
    })
    ds.attrs.update(attrs or {})
    return ds


# ---------------------------------------------------------------------------------------
# Running.

def particles(config: dict | None = None, *, out: str | Path | None = None,
              overwrite: bool = False, resume: bool = False, progress: bool = False,
              threads: int | None = None) -> xr.Dataset:
    """Run the particle system of one config.

    Args:
        config: the config (dict of sections; see ``meanfield.config``), validated here.
        out: where to write the netCDF result (default ``output.path``; none: not written).
        overwrite: replace an existing result.
        resume: continue from ``<out>.checkpoint.nc`` if it exists.
        progress: show a tqdm progress bar.
        threads: threads of the fast sums (default: chosen by n).

    Returns:
        The dataset; ``attrs["status"]`` is 0 when finished, -1 when interrupted (then it
        holds the frames so far, also kept in the checkpoint).

    Raises:
        ConfigError: bad input, before any time stepping.
        SolverError: the tokens became non-finite (the message says what to change).
    """
    cfg = cfgmod.validate(config)
    plan = check_config(cfg)
    out = out if out is not None else cfg["output"]["path"]
    if out is not None:
        check_writable(out, overwrite or resume)
    model = build_model(cfg, plan, threads)
    x0 = initial_tokens(cfg, plan)
    times = save_times(cfg["time"]["t_final"], cfg["time"]["save_every"])
    noise = pm.noise_rng(cfg["particles"]["seed"])

    ckpt = checkpoint_path(out) if out is not None else None
    frames, diags = [x0], [diagnostics(x0, cfg, plan)]
    t0, h0 = 0.0, None
    if resume and ckpt is not None and ckpt.exists():
        frames, t0, h0, rng_state = _load_checkpoint(ckpt, cfg)
        diags = [diagnostics(f, cfg, plan) for f in frames]
        noise.bit_generator.state = rng_state
    last = {"t": t0, "h": h0, "rng": noise.bit_generator.state}
    bar = progress_bar(cfg["time"]["t_final"], t0, progress)
    last_ckpt = [_time.monotonic()]

    def on_save(t: float, x: np.ndarray, h_next: float) -> None:
        diag = diagnostics(x, cfg, plan)
        frames.append(x)
        diags.append(diag)
        last.update(t=t, h=h_next, rng=noise.bit_generator.state)
        if ckpt is not None and (_time.monotonic() - last_ckpt[0]
                                 > cfg["output"]["checkpoint_every"]):
            _write_checkpoint(ckpt, cfg, plan, frames, diags, last)
            last_ckpt[0] = _time.monotonic()

    def on_step(t: float) -> None:
        if bar is not None:
            bar.update(t - bar.n)

    wall = _time.perf_counter()
    pending = times[times > t0 * (1 + 1e-12) + 1e-300]
    try:
        if pending.size:
            run = pm.simulate(model, frames[-1], pending, kappa=plan["kappa"], dt=plan["dt"],
                              tolerance=cfg["time"]["tolerance"], seed=noise,
                              on_step=on_step, on_save=on_save, t0=t0, h0=h0,
                              renormalize=t0 == 0)
        else:
            run = pm.ParticleRun(times=np.empty(0), positions=np.empty(0))
    finally:
        if bar is not None:
            bar.close()
    attrs = {"status": run.status, "message": run.message, "steps": run.steps,
             "rejected_steps": run.rejected, "wall_time_s": _time.perf_counter() - wall,
             **{k: v for k, v in run.info.items() if k in ("integrator",)}}
    ds = to_dataset(cfg, plan, list(times[: len(frames)]), frames, diags, attrs)
    if run.status == -1:
        if ckpt is not None:
            _write_checkpoint(ckpt, cfg, plan, frames, diags, last)
            ds.attrs["message"] += f"; kept in {str(ckpt)!r}, continue with resume"
        return ds
    if out is not None:
        write_netcdf(ds, out, overwrite=True)
        if ckpt is not None:
            ckpt.unlink(missing_ok=True)
    return ds


def _write_checkpoint(path: Path, cfg: dict, plan: dict, frames, diags, last: dict) -> None:
    times = save_times(cfg["time"]["t_final"], cfg["time"]["save_every"])[: len(frames)]
    ds = to_dataset(cfg, plan, list(times), frames, diags,
                    {"status": -1, "message": f"checkpoint at t = {last['t']:.6g}"})
    # The exact states (Pre-LN: not unit vectors), so that a resumed run is bit-identical.
    ds["checkpoint_state"] = (("time", "particle", "component"), np.stack(frames))
    ds.attrs.update({"checkpoint_t": float(last["t"]),
                     "checkpoint_h": -1.0 if last["h"] is None else float(last["h"]),
                     "checkpoint_rng": json.dumps(last["rng"])})
    write_netcdf(ds, path, overwrite=True)


def _load_checkpoint(path: Path, cfg: dict):
    ds = read_netcdf(path)
    if not cfgmod.same_run(ds.attrs["config"], cfg):
        raise ConfigError(f"the checkpoint {str(path)!r} was made with another config; "
                          "delete it or run with the same config", "resume")
    frames = list(ds["checkpoint_state"].values)
    h = float(ds.attrs["checkpoint_h"])
    return frames, float(ds.attrs["checkpoint_t"]), (None if h < 0 else h), \
        json.loads(ds.attrs["checkpoint_rng"])
