"""``contraction(config)``: how fast the dynamics contract, from the PDE and from tokens.

For each beta of ``[contraction] beta`` and each source of ``[contraction] sources``
(``"pde"``: the density of ``[initial]`` evolved by the discretization; ``"particles"``:
``particles.n`` i.i.d. samples of it, seed ``particles.seed``), at each save time of
``[time]``:

- ``distance``: ``W_2(mu_t, target)`` (geodesic, radians; ``meanfield.metrics.wasserstein``).
  Without noise the target is the Dirac at the limit point ``x_inf``, the mean direction
  of the last state computed (the cluster the run collapses to; docs/conventions.md:
  ``W_2(mu_t, delta_{x_inf})`` decays like ``e^{-t}`` for SA, ``e^{-e^beta t}`` for USA).
  With noise it is the stationary state ``mu_inf``: the uniform density when every mode
  of the uniform state decays (``kappa`` below the threshold), else the PDE continued to
  ``2 t_final`` (on the circle the distance to it is taken modulo rotation: its phase is
  free).
- ``fitted_rate``: minus the least-squares slope of ``log distance`` against ``t`` over the
  tail window (``fit_start``..``fit_stop``), with its 95 % interval (Student t). The window
  is the first run of save times whose distance lies in ``[floor, fit_below]`` and, for
  tokens without noise, whose every token lies within ``fit_below`` of the limit point
  (``max_distance``): only then is ``W_2`` in its linear regime (a token still on its way
  from the far side weighs ``1/n`` but carries O(1) distance and slows the decay). A run
  that ends before is no fit: ``status`` 1 and ``message`` say so. ``fit_below`` (0.1 rad
  by default) keeps the fit where the linearisation holds (the local rate differs from
  ``lambda_att`` by ``O(beta W^2)``: 7 % at W = 0.1, 2 % at 0.05 for USA at beta = 2); the
  floor is ``fit_above`` raised to what the source can resolve: the PDE on a grid without
  noise ``RESOLVED_SPACINGS`` grid spacings of its cluster's core (``core_width``; where
  a grid source stops, ``contraction_grid``), tokens with noise ``PLATEAU_FACTOR`` times
  the median of their last quarter (the sampling floor ``~ n^{-1/2}``). Tokens without
  noise need no more floor:
  for a small cluster ``W_2(mu_t, delta_x)^2 = var_t + |m_t - x|^2`` (tangent plane, m the
  mean), the variance decays at twice the rate and the mean moves only at third order in
  the cluster's size, so taking ``x = m`` at the last save biases nothing at first order.
- ``local_rate`` and ``mean_field_rate`` (beta): the two rates of
  ``meanfield.studies.transport.contraction_rates`` (docs/contraction.md): near the cluster 1 (SA) or
  ``e^beta`` (USA), and for a density with mass near the antipode of the cluster
  ``min(lambda_att, (d - 1) lambda_rep / 2)`` (1/2 for SA on S^1, ``e^{-beta}/2`` for USA);
  with noise both are ``|sigma|`` of the slowest mode of the uniform state
  (``meanfield.model.kernels.growth_rate``, ``sphere_growth_rate``) when the target is
  uniform, else minus the real part of the leading eigenvalue of the linearised PDE at
  ``mu_inf`` (``meanfield.discretizations.spectrum``, spectral discretizations; the
  rotations' zero modes dropped).
- ``far_share`` (beta, time, source): the share of ``W_2^2`` carried by the mass farther
  than pi/2 from the limit point (densities without noise), and ``fit_regime`` (beta,
  source): which rate the window measures: tokens and noisy runs "local"; a density
  "local" when ``far_share`` stays below ``FAR_EMPTY`` in the window, "mean-field" when it
  is steady there, "crossover" when it grows through the window (no prediction;
  ``status`` 1), "none" without a window. ``predicted_rate`` (beta, source) is that rate.
- ``[contraction] pde``: ``"grid"`` (the ``[discretization]``) or, on S^1 without noise,
  ``"characteristics"``: the density carried by its labels along the characteristics
  (``meanfield.studies.transport.contraction_reference``), which resolves the far side for as long
  as the run lasts (a grid loses it: the cluster's core narrows like
  ``e^{-lambda_att t}`` while ``W_2`` decays at the mean-field rate; no ``other`` there).
- With ``[contraction] other`` (a second initial density): ``pair_distance``, ``W_2``
  between the solutions from the two starts (modulo rotation without noise, where the two
  clusters need not meet; the second tokens use seed ``particles.seed + 1``), and its
  ``pair_fitted_rate`` (without noise fitted only where ``distance`` is within the window
  too: the difference of two clusters decays at the linear rate once both are small).

Zonal densities on S^{d-1}: exact W_2 of zonal frames, tokens without noise as on the
sphere; tokens with noise and ``contraction.other`` refused (``contraction_zonal``: what
is exact, what is refused and why, and where a noiseless spectral run meets round-off).

Each (beta, source) is a member run through the executor (``[parallel]``: serial or dask,
the same numbers); a checkpoint keeps the members done and ``resume`` goes on from them.
Tokens step with fixed steps ``time.dt`` (``"auto"``: ``min(0.05, 0.25/rate)`` without
noise, RK4 with the retraction; with noise geodesic Euler-Maruyama, ``dt`` must be given);
the PDE with its own adaptive stepper.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from meanfield import config as cfgmod
from meanfield.discretizations.base import Discretization
from meanfield.errors import ConfigError
from meanfield.initial.samplers import sample_tokens
from meanfield.initial.zonal_samplers import zonal_tokens
from meanfield.model.tokens import initial_rng
from meanfield.runs import budget
from meanfield.runs.evolve import run_config
from meanfield.runs.executor import Executor
from meanfield.runs.particles import build_model, check_config
from meanfield.runs.schedule import save_times
from meanfield.studies.transport import contraction_grid as grid_source
from meanfield.studies.transport import contraction_reference as ref
from meanfield.studies.transport import contraction_zonal as zonal
from meanfield.studies.transport import coupling as cp
from meanfield.studies.transport.convergence import frame_dataset
from meanfield.studies.transport.contraction_dataset import study_dataset
from meanfield.studies.transport.contraction_rates import (
    FAR,
    local_rate,
    mean_field_rate,
)
from meanfield.studies.members import MemberList, run_study

AUTO_DT = 0.05
AUTO_DT_RATE = 0.25  # auto token step: rate * dt at most this (RK4 error ~ (rate dt)^4/120)
RESOLVED_SPACINGS = 4.0
PLATEAU_FACTOR = 3.0
MEASURES = ("distance", "pair_distance", "far_share", "max_distance")
# a member's numbers besides its curves; stopped: the last save a grid PDE kept before its
# resolution limit (NaN: none), needed_resolution: the one that would have passed
SCALARS = ("floor", "pair_floor", "predicted", "stopped", "needed_resolution", "continued")
# the core's median distance to its centre, times this, is W_2 for a Gaussian cluster
# (S^1: 1 / Phi^{-1}(3/4); S^2: sqrt(2) / sqrt(2 ln 2), the Rayleigh median)
CORE_SCALE = {"circle": 1.482602218505602, "sphere": 1.2011224087864498}


def with_beta(cfg: dict, beta: float) -> dict:
    return {**cfg, "model": {**cfg["model"], "beta": float(beta)}}


def check_contraction_config(cfg: dict) -> dict:
    """Checks before any work; the plan (members, token step, save times)."""
    c, m = cfg["contraction"], cfg["model"]
    cfgmod.check_pde_dim(cfg)
    noisy = not math.isinf(m["kappa"])
    if cfg["domain"]["geometry"] == "zonal":
        zonal.check(cfg, noisy)
    if not m["normalized"]:
        high = [b for b in c["beta"] if b > cfgmod.MAX_USA_BETA]
        if high:
            raise ConfigError(f"contraction.beta = {high[0]:g}: the USA velocity grows like "
                              f"e^beta and overflows beyond beta = {cfgmod.MAX_USA_BETA:g}",
                              "contraction.beta")
    plan: dict[str, Any] = {"noisy": noisy, "dim": cfg["domain"]["dim"] or
                            (2 if cfg["domain"]["geometry"] == "circle" else 3)}
    rates = [local_rate(cfg, b) for b in c["beta"]]
    if "particles" in c["sources"]:
        if cfg["particles"]["n"] is None:
            raise ConfigError("contraction.sources has \"particles\": give their number, "
                              "particles.n (e.g. 1000)", "particles.n")
        if cfg["particles"]["architecture"] != "post-ln":
            raise ConfigError("the PDE's contraction is the post-ln model's; give "
                              "particles.architecture = \"post-ln\"",
                              "particles.architecture")
        plan.update(check_config({**cfg, "model": {**m, "beta": max(c["beta"])}}))
        budget.check(cfg, "particles")
    labelled = "pde" in c["sources"] and c["pde"] == "characteristics"
    if labelled and (cfg["domain"]["geometry"] != "circle" or noisy):
        raise ConfigError("contraction.pde = \"characteristics\" carries the density along "
                          "the characteristics of the noiseless equation on S^1: give "
                          "domain.geometry = \"circle\" and no model.kappa, or "
                          "contraction.pde = \"grid\"", "contraction.pde")
    if labelled:
        ref.check_labels(cfg)
    if "pde" in c["sources"] and not labelled:
        # every beta's PDE member, before the first starts ("auto": its first resolution)
        top = max(c["beta"])
        first = run_config(with_beta(cfg, top))
        budget.check(first, "evolve")
        disc = Discretization.from_name(cfg["domain"]["geometry"], first["discretization"]["method"])
        res = first["discretization"]["resolution"]
        if not disc.resolves(res, top):  # (the kernel needs more as beta grows)
            raise ConfigError(f"discretization.resolution = {res} is too small for "
                              f"contraction.beta = {top:g}: the kernel needs resolution "
                              f">= {disc.needed_resolution(top)}",
                              "discretization.resolution")
        # the grid must resolve the start(s) as well (ConfigError here, not in a member)
        grid = Discretization.from_config(with_beta(cfg, top), threads=1)
        for start in (cfg["initial"], c["other"]):
            if start is not None:
                grid.initial_density(start)
    if cfg["domain"]["geometry"] == "sphere":
        grid_source.check_sphere_transport(cfg, noisy)
    dt = cfg["time"]["dt"]
    if dt == "auto":
        if noisy:
            raise ConfigError("time.dt = \"auto\": tokens with noise need a fixed step "
                              "(Euler-Maruyama); give e.g. time.dt = 0.01", "time.dt")
        finite = [r for r in rates if math.isfinite(r)]
        dt = min(AUTO_DT, AUTO_DT_RATE / max(finite)) if finite else AUTO_DT
    plan.update(dt=float(dt), rates=rates,
                mean_field=[mean_field_rate(cfg, b, plan["dim"]) for b in c["beta"]],
                members=[(b, s) for b in c["beta"] for s in c["sources"]],
                times=save_times(cfg["time"]["t_final"], cfg["time"]["save_every"]))
    return plan


# ---------------------------------------------------------------------------------------
# Targets and floors.

def _spacing(solver) -> float:
    """The length the grid resolves: half the shortest wavelength of a spectral grid
    (``pi/L``, ``2 pi/N``), the cell size of a finite-volume mesh."""
    grid = solver.grid
    if grid.geometry == "zonal":
        return zonal.spacing(solver)
    if grid.geometry == "sphere" and solver.method == "spectral":
        return math.pi / (grid.shape[0] - 1)
    total = 2 * math.pi if grid.geometry == "circle" else 4 * math.pi
    return (total / np.prod(grid.shape)) ** (1.0 / (1 if grid.geometry == "circle" else 2))


def _mean_direction(solver, state: np.ndarray) -> np.ndarray:
    """``int x dmu / |int x dmu|`` of a PDE state."""
    grid = solver.grid
    mass = np.broadcast_to(grid.weights, grid.shape) * solver.to_density(state)
    m = np.tensordot(mass, grid.points, axes=mass.ndim)
    return m / np.linalg.norm(m)


def _dirac(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=float).reshape(1, -1)  # one unit vector: a Dirac


def _uniform_frame(solver) -> xr.Dataset:
    grid = solver.grid
    total = float(np.sum(np.broadcast_to(grid.weights, grid.shape)))
    return frame_dataset(solver, solver.to_state(np.full(grid.shape, 1.0 / total)))


def _stationary(cfg: dict, plan: dict, beta: float) -> tuple[xr.Dataset, bool, float]:
    """The stationary target with noise, whether it is uniform, and (when it is not) the
    decay rate of its slowest mode measured from ``F'`` (module docstring)."""
    from meanfield.discretizations.spectrum import leading_eigenvalues

    solver = Discretization.from_config(with_beta(cfg, beta), threads=1)
    if math.isfinite(local_rate(cfg, beta)):
        return _uniform_frame(solver), True, math.nan
    t_final = float(plan["times"][-1])
    state0 = solver.to_state(solver.initial_density(cfg["initial"]))
    u_inf = grid_source.grid_states(solver, state0, np.array([0.0, 2 * t_final]),
                                    stop=None)[0][-1]
    rate = math.nan
    if solver.method == "spectral":
        lam = leading_eigenvalues(solver, u_inf, 1)
        if lam.size and lam[0].real < 0:
            rate = -float(lam[0].real)
    return frame_dataset(solver, u_inf), False, rate


# ---------------------------------------------------------------------------------------
# One member: the runs of (beta, source) and their distances.

def _distances(solver, state: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The masses of a PDE state's grid nodes and their geodesic distances to ``x``."""
    grid = solver.grid
    mass = np.broadcast_to(grid.weights, grid.shape) * solver.to_density(state)
    d = np.arccos(np.clip(np.tensordot(grid.points, x.ravel(), axes=1), -1.0, 1.0))
    return mass.ravel(), d.ravel()


def far_share(mass: np.ndarray, d: np.ndarray) -> float:
    """The share of ``sum mass d^2`` (``W_2^2`` to the Dirac) carried by the mass farther
    than ``contraction_rates.FAR`` (module docstring)."""
    total = float(np.dot(mass, d * d))
    return float(np.dot(mass, np.where(d > FAR, d * d, 0.0))) / total if total > 0 else 0.0


def core_width(solver, state: np.ndarray) -> float:
    """The width of a PDE state's cluster core: the median distance of its mass to its
    mean direction, scaled to be ``W_2`` for a Gaussian cluster (``CORE_SCALE``). Unlike
    ``W_2`` it ignores the far side's mass, which keeps ``W_2`` up while the core narrows."""
    mass, d = _distances(solver, state, _mean_direction(solver, state))
    order = np.argsort(d)
    half = np.searchsorted(np.cumsum(mass[order]), 0.5 * mass.sum())
    scale = (zonal.core_scale(solver.grid.dim) if solver.grid.geometry == "zonal" else
             CORE_SCALE[solver.grid.geometry])
    return scale * float(d[order][min(half, d.size - 1)])


def _floor(solver) -> float:  # the narrowest core a grid carries
    return RESOLVED_SPACINGS * _spacing(solver)


def _collapsed(cfg: dict, solver):
    """Whether a state's cluster core is narrower than its grid carries (``_floor``); with
    "auto" (the grid follows the core) narrower than ``fit_above``."""
    if getattr(solver, "auto", False):
        return lambda grid, u: core_width(grid, u) < cfg["contraction"]["fit_above"]
    return lambda grid, u: core_width(grid, u) < _floor(grid)


def _pde_member(cfg: dict, plan: dict, beta: float) -> dict:
    from meanfield.metrics.wasserstein import wasserstein

    if cfg["domain"]["geometry"] == "zonal":  # (exact: contraction_zonal)
        wasserstein = zonal.wasserstein2  # noqa: F811

    if cfg["contraction"]["pde"] == "characteristics":
        return ref.label_member(cfg, plan, beta)
    times, noisy = plan["times"], plan["noisy"]
    other = cfg["contraction"]["other"]
    out = {name: np.full(times.size, np.nan) for name in MEASURES}
    out["predicted"] = math.nan
    solver = Discretization.from_config(with_beta(cfg, beta), threads=1)
    starts = [cfg["initial"]] + ([other] if other is not None else [])
    runs, solvers, limits = [], [], []
    for initial in starts:
        state0 = solver.to_state(solver.initial_density(initial))
        states, grids = grid_source.grid_states(solver, state0, times, None if noisy else
                                                _collapsed(cfg, solver), limits)
        runs.append(states)
        solvers.append(grids)
    done = min(len(r) for r in runs)  # saves both runs reached
    # a run stopped by its resolution limit: the time of its last save, the resolution
    # that would have passed (contraction_grid)
    out["stopped"] = float(times[done - 1]) if limits else math.nan
    needed = [e.resolution for e in limits if e.resolution is not None]
    out["needed_resolution"] = float(max(needed)) if needed else math.nan
    # "auto": the grid follows the core (a floor of fit_above); else the fixed grid's
    floor = cfg["contraction"]["fit_above"] if getattr(solver, "auto", False) else \
        _floor(solver)
    frames = [[frame_dataset(g, s) for g, s in zip(grids[:done], r[:done])]
              for r, grids in zip(runs, solvers)]
    if noisy:
        target, uniform, out["predicted"] = _stationary(cfg, plan, beta)
        rotate = cfg["domain"]["geometry"] == "circle" and not uniform
        out["distance"][:done] = [wasserstein(f, target, modulo_rotation=rotate)
                                  for f in frames[0]]
        out["floor"] = cfg["contraction"]["fit_above"]
    else:
        def distance(x: np.ndarray) -> list:
            return [wasserstein(f, _dirac(x)) for f in frames[0]]

        def share(x: np.ndarray) -> list:
            return [far_share(*_distances(g, u, x)) for g, u in zip(solvers[0], runs[0][:done])]

        out["floor"] = floor
        on = grid_source.continue_along_labels(cfg, plan, beta, done, distance, share) \
            if limits and grid_source.labels_carry(cfg) else None
        if on is not None:  # on along the characteristics
            out.update(on, floor=cfg["contraction"]["fit_above"])
            return out
        x_inf = _mean_direction(solvers[0][done - 1], runs[0][done - 1])
        out["distance"][:done] = distance(x_inf)
        out["far_share"][:done] = share(x_inf)
    # the pair's difference stays accurate while both clusters are resolved (the stop)
    out["pair_floor"] = cfg["contraction"]["fit_above"]
    if other is not None:
        rotate = not noisy and cfg["domain"]["geometry"] == "circle"
        out["pair_distance"][:done] = [wasserstein(a, b, modulo_rotation=rotate)
                                       for a, b in zip(*frames)]
    return out


def _token_paths(cfg: dict, plan: dict, beta: float, initial: dict, seed: int) -> np.ndarray:
    """The tokens at the save times, (times, n, d), from i.i.d. samples of ``initial``."""
    mcfg = with_beta(cfg, beta)
    n = cfg["particles"]["n"]
    model = build_model(mcfg, {**plan, "n": n}, threads=1)
    draw = zonal_tokens if cfg["domain"]["geometry"] == "zonal" else sample_tokens
    x0 = draw(initial, n, plan["dim"], initial_rng(seed))
    return cp.token_path(model, x0, plan["times"][1:], plan["dt"], cfg["model"]["kappa"],
                         seed)


def _particle_member(cfg: dict, plan: dict, beta: float) -> dict:
    from meanfield.metrics.wasserstein import wasserstein

    seed, other = cfg["particles"]["seed"], cfg["contraction"]["other"]
    paths = _token_paths(cfg, plan, beta, cfg["initial"], seed)
    out: dict[str, Any] = {name: np.full(paths.shape[0], np.nan) for name in MEASURES}
    out["predicted"] = math.nan
    if plan["noisy"]:
        target, uniform, out["predicted"] = _stationary(cfg, plan, beta)
        rotate = cfg["domain"]["geometry"] == "circle" and not uniform
        d = np.array([wasserstein(x, target, modulo_rotation=rotate) for x in paths])
        tail = d[-max(1, d.size // 4):]
        out["floor"] = PLATEAU_FACTOR * float(np.median(tail))
    else:
        x_inf = paths[-1].mean(axis=0)
        x_inf /= np.linalg.norm(x_inf)
        d = np.array([wasserstein(x, _dirac(x_inf)) for x in paths])
        # the linear regime: every token within fit_below of x_inf (module docstring)
        out["max_distance"] = np.arccos(np.clip(paths @ x_inf, -1.0, 1.0)).max(axis=1)
        out["floor"] = cfg["contraction"]["fit_above"]
    out["distance"], out["pair_floor"] = d, math.nan
    if other is not None:
        second = _token_paths(cfg, plan, beta, other, seed + 1)
        rotate = not plan["noisy"]
        pair = np.array([wasserstein(a, b, modulo_rotation=rotate)
                         for a, b in zip(paths, second)])
        out["pair_distance"] = pair
        out["pair_floor"] = (PLATEAU_FACTOR * float(np.median(pair[-max(1, pair.size // 4):]))
                             if plan["noisy"] else cfg["contraction"]["fit_above"])
    return out


def run_member(cfg: dict, plan: dict, params: dict) -> dict:
    """The distances of member ``(beta, source)`` at the save times (module docstring)."""
    if params["source"] == "pde":
        return _pde_member(cfg, plan, params["beta"])
    return _particle_member(cfg, plan, params["beta"])


# ---------------------------------------------------------------------------------------
# The study on the run engine.

class ContractionTask(MemberList):
    """Points: the start, then each (beta, source) member; a checkpoint keeps those done."""

    kind = "contraction"

    def __init__(self, cfg: dict, plan: dict, executor: Executor, progress: bool):
        members = [{"beta": beta, "source": source} for beta, source in plan["members"]]
        super().__init__(cfg, executor, progress, members,
                         functools.partial(run_member, cfg, plan))
        self.plan = plan

    def describe(self, params: dict) -> str:
        return f"member beta = {params['beta']:g}, source {params['source']!r}"

    def dataset(self, frames: list, info: dict) -> xr.Dataset:
        return study_dataset(self.cfg, self.plan, frames[1:], info)

    def checkpoint(self, state: Any, frames: list) -> xr.Dataset:
        frames = self.kept(frames)  # (members after a failed one are run again)
        done = [f for f in frames[1:] if isinstance(f, dict)]
        if not done:
            return xr.Dataset()
        ds = xr.Dataset({f"member_{name}": (("member", "time"), np.stack([f[name] for f in done]))
                         for name in MEASURES})
        for name in SCALARS:
            ds[f"member_{name}"] = ("member", np.array([f.get(name, math.nan)
                                                        for f in done]))
        return ds

    def restore(self, ckpt: xr.Dataset) -> tuple[Any, list]:
        frames: list = [None]
        if "member_distance" in ckpt:
            size = (ckpt.sizes["member"], ckpt.sizes["time"])
            for i in range(size[0]):  # (a measure not kept by an older version: NaN)
                frames.append({name: (ckpt[f"member_{name}"].values[i]
                                      if f"member_{name}" in ckpt else
                                      np.full(size[1], np.nan) if name in MEASURES
                                      else math.nan)
                               for name in (*MEASURES, *SCALARS)})
        return frames[-1], frames


def contraction(config: dict | None = None, *, out: str | Path | None = None,
                overwrite: bool = False, resume: bool = False,
                progress: bool = False) -> xr.Dataset:
    """The contraction study of one config (module docstring).

    Args:
        config: the config; ``[contraction]`` beta, sources, fit_below, fit_above, other,
            pde.
        out: where to write the netCDF result (default ``output.path``).
        overwrite: replace an existing result.
        resume: continue from ``<out>.checkpoint.nc`` (the members done are kept).
        progress: a bar over the members.

    Returns:
        The study dataset; ``status`` -1 when interrupted (the members done so far), 1
        when a member measured no rate or a crossover (``message`` says which and why).

    Raises:
        ConfigError: bad input, before any work.
        TaskFailed: a member failed (named); the others are kept in the checkpoint.
    """
    cfg = cfgmod.validate(config)
    plan = check_contraction_config(cfg)
    ds = run_study(cfg, lambda executor: ContractionTask(cfg, plan, executor, progress), out,
                   overwrite=overwrite, resume=resume, progress=progress)
    problems = ds.attrs.get("problems", "")
    if ds.attrs["status"] == 0 and problems:  # (the file rewritten with them)
        ds.attrs.update(status=1, message=f"finished with problems: {problems}")
        target = out if out is not None else cfg["output"]["path"]
        if target is not None:
            from meanfield.io import write_netcdf

            write_netcdf(ds, target, overwrite=True)
    return ds
