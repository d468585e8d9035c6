"""``compare(config)``: the PDE and an ensemble of particle runs from the same density.

One config: ``evolve`` solves the PDE from the ``[initial]`` density; ``particles.ensemble``
particle runs of ``particles.n`` tokens each start from i.i.d. samples of that density
(member ``r`` is exactly ``meanfield particles`` with ``particles.seed = seed + r``) and
are saved at the same times. The runs go through the run engine (``CompareTask``: the
PDE, then each member; checkpoints keep those done, ``resume`` goes on bit for bit) and
the members through the executor (``[parallel]``: serial, local workers or a dask
scheduler, with the same numbers). At each time the pooled tokens are binned and compared with
the PDE's mass in the same bins:

- circle: ``bins`` equal arcs of [0, 2 pi) (``"auto"``: ``2 N^(1/3)`` for N pooled
  tokens, between 8 and 256, raised to resolve the PDE's most concentrated state:
  ``BINS_PER_WIDTH`` = 6 arcs across its width ``1/max rho``, ``resolving_bins``). The PDE mass of an arc is exact: from the Fourier series
  (spectral) or the cell averages (finite volumes, piecewise constant).
- sphere: the Voronoi cells of an icosahedral mesh (``bins`` = its number of cells, one of
  42, 162, 642, ...; ``"auto"``: the finest with at least 20 tokens per cell on average).
  Tokens go to the nearest cell centre; the PDE mass of a cell is a degree-5 quadrature
  of the spectral solution (spectral) or of the piecewise-constant finite-volume solution
  (its value at a quadrature point is that of the nearest PDE cell; the quadrature
  triangles are refined 3 times, so the cut PDE cells along the edges cost O(h^2)).
- zonal (S^{d-1}, any d): tokens on S^{d-1} (the sphere's engine in dimension d, from exact
  samples of the zonal density) against the PDE's marginal of t = <x, e>: intervals of t
  across the PDE's mass (``"auto"``: 2 N^(1/3), raised to 6 intervals across the width of
  the most concentrated marginal, at most 256), their masses exact; with the W_1 distance
  of the marginals and the order parameters along e (``compare_zonal``).

The PDE runs with adaptive steps (``time.tolerance``; finite volumes under their
stability bounds): ``time.dt`` is the particles' step, which their noise needs.

The distance is the L1 (total variation x 2) distance of the bin masses,
``sum_b |p_b - q_b|``, for the pooled ensemble (``l1_distance``) and for each member
(``l1_distance_member``); ``l1_noise_floor`` is its expected value for N exact samples,
``sum_b sqrt(2 q_b (1 - q_b) / (pi N))`` (normal approximation of the bin counts), which a
converged comparison reaches and cannot beat.
"""
from __future__ import annotations

import copy
import functools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from meanfield import config as cfgmod
from meanfield.errors import ConfigError
from meanfield.metrics import zonal_marginal as zm
from meanfield.metrics.binning import histogram_bins
from meanfield.runs import budget
from meanfield.runs.evolve import evolve, run_config
from meanfield.runs.executor import Executor, TaskResult
from meanfield.runs.particles import check_config, particles
from meanfield.studies.members import MemberStudy, run_study
from meanfield.studies.transport import compare_zonal as cz

SAMPLES_PER_CELL = 20


def check_compare_config(cfg: dict) -> dict:
    """Checks for a comparison (a density on S^1 or S^2, the Post-LN model); the plan."""
    cfgmod.check_pde_dim(cfg)
    if cfg["particles"]["architecture"] != "post-ln":
        raise ConfigError(f"particles.architecture = {cfg['particles']['architecture']!r}: "
                          "the PDE is the "
                          "mean-field limit of the post-ln model; compare needs "
                          "particles.architecture = \"post-ln\"", "particles.architecture")
    plan = check_config(cfg)
    p = cfg["particles"]
    if p["seed"] + p["ensemble"] - 1 > cfgmod.MAX_SEED:  # member r runs with seed + r
        raise ConfigError(f"particles.seed = {p['seed']} with particles.ensemble = "
                          f"{p['ensemble']}: the members' seeds seed + r pass "
                          f"{cfgmod.MAX_SEED}; use a smaller seed", "particles.seed")
    total = plan["n"] * cfg["particles"]["ensemble"]
    bins = cfg["particles"]["bins"]
    if cfg["domain"]["geometry"] in ("circle", "zonal"):
        plan["bins"] = int(np.clip(round(2 * total ** (1 / 3)), 8, 256)) if bins == "auto" \
            else bins
    else:
        cells = cfgmod.SPHERE_MESH_CELLS
        if bins == "auto":
            fit = [c for c in cells if c * SAMPLES_PER_CELL <= total]
            plan["bins"] = fit[-1] if fit else cells[0]
        elif bins not in cells:
            raise ConfigError(f"particles.bins = {bins} on the sphere is a number of "
                              "icosahedral cells; accepted: "
                              + ", ".join(str(c) for c in cells[:5]), "particles.bins")
        else:
            plan["bins"] = bins
    return plan


# ---------------------------------------------------------------------------------------
# The runs: the PDE, then the ensemble members (through the executor).

MEMBER_VARS = ("position", "order_parameter", "energy")


def member_vars(cfg: dict) -> tuple[str, ...]:
    """The variables compare keeps of each member (zonal: ``compare_zonal``)."""
    return cz.MEMBER_VARS if cfg["domain"]["geometry"] == "zonal" else MEMBER_VARS


def run_member(config: dict, progress: bool, params: dict) -> xr.Dataset:
    """Ensemble member ``params["member"]``: ``meanfield particles`` with
    ``particles.seed = params["particles.seed"]``; what compare keeps of it."""
    member = copy.deepcopy(config)
    member["particles"]["seed"] = params["particles.seed"]
    # what compare keeps, whatever particles.diagnostics asks (config.particle_diagnostics)
    zonal = config["domain"]["geometry"] == "zonal"
    kept = ("order_parameter", "energy") + (("axis_order_parameter",) if zonal else ())
    member["particles"]["diagnostics"] = sorted(
        set(member["particles"].get("diagnostics") or ()) | set(kept))
    run = particles(member, progress=progress)
    if run.attrs["status"] != 0:  # its own engine caught a Ctrl-C: hand it on to ours
        raise KeyboardInterrupt
    zonal = config["domain"]["geometry"] == "zonal"
    kept = cz.member_frames(run) if zonal else run[list(MEMBER_VARS)]
    kept.attrs = {"wall_time_s": run.attrs["wall_time_s"]}
    return kept


class CompareTask(MemberStudy):
    """The comparison on the run engine: its points are the start, the PDE and each
    ensemble member; a checkpoint keeps the PDE and the members done (in any order)."""

    kind = "compare"

    def __init__(self, cfg: dict, plan: dict, executor: Executor, progress: bool):
        super().__init__(cfg, executor, progress)
        self.plan = plan
        quiet = copy.deepcopy(cfg)
        quiet["output"]["path"] = None
        self.pde_cfg = {s: copy.deepcopy(quiet[s]) for s in cfgmod.task_sections("evolve")}
        self.pde_cfg["time"]["dt"] = "auto"  # time.dt is the particles' step
        self.member_cfg = {s: quiet[s] for s in cfgmod.task_sections("particles")}
        self.ensemble = cfg["particles"]["ensemble"]
        self.restored: dict[int, xr.Dataset] = {}  # members done out of order before

    def points(self) -> list:
        return ["start", "pde", *range(self.ensemble)]

    def where(self, done: int) -> str:
        if done <= 1:
            return "the start"
        members = done - 2 + len(self.restored)  # in order, and done out of order before
        return f"the PDE and {members} of {self.ensemble} ensemble members"

    def start(self) -> None:
        return None

    def advance(self, state: Any, point: Any, on_step) -> xr.Dataset | TaskResult:
        if point == "pde":
            pde = evolve(self.pde_cfg, progress=self.progress)
            if pde.attrs["status"] != 0:  # its engine caught a Ctrl-C: hand it on to ours
                raise KeyboardInterrupt
            return pde
        if point in self.restored:
            return self.restored.pop(point)
        if self._results is None:  # the members not done yet, all at once on a cluster
            todo = [r for r in range(point, self.ensemble) if r not in self.restored]
            fn = functools.partial(run_member, self.member_cfg,
                                   self.progress and not self.executor.parallel)
            seed = self.cfg["particles"]["seed"]
            self._results = self.executor.imap(
                fn, [{"member": r, "particles.seed": seed + r} for r in todo])
        result = next(self._results)
        assert result.params["member"] == point
        return result.value if result.ok else result

    def frame(self, state: Any) -> Any:
        return state

    def describe(self, params: dict) -> str:
        return (f"ensemble member {params['member']} (particles.seed = "
                f"{params['particles.seed']})")

    def _members(self, frames: list) -> dict[int, xr.Dataset]:
        """The members done: in ``frames`` and restored out of order."""
        done = {r: f for r, f in enumerate(frames[2:]) if isinstance(f, xr.Dataset)}
        done.update(self.restored)
        return dict(sorted(done.items()))

    def dataset(self, frames: list, info: dict) -> xr.Dataset:
        if len(frames) < 2:
            return xr.Dataset(attrs=dict(info))
        members = self._members(frames)
        return comparison(self.cfg, self.plan, frames[1], members, info)

    def checkpoint(self, state: Any, frames: list) -> xr.Dataset:
        if len(frames) < 2:
            return xr.Dataset()
        pde = frames[1]
        ds = pde.copy()
        ds.attrs = {"pde_attrs": json.dumps(_plain(pde.attrs)),
                    "pde_vars": json.dumps(list(pde.data_vars))}
        members = self._members(frames)
        if members:
            stacked = xr.concat(list(members.values()), dim="member")
            stacked = stacked.assign_coords(member=list(members))
            for name in member_vars(self.cfg):
                ds[f"member_{name}"] = stacked[name]
            ds["member_wall_time_s"] = ("member", [m.attrs["wall_time_s"]
                                                   for m in members.values()])
        return ds

    def restore(self, ckpt: xr.Dataset) -> tuple[Any, list]:
        if "pde_vars" not in ckpt.attrs:
            return None, [None]
        pde = ckpt[json.loads(ckpt.attrs["pde_vars"])].drop_vars("member", errors="ignore")
        pde.attrs = json.loads(ckpt.attrs["pde_attrs"])
        frames = [None, pde]
        for r in (ckpt["member"].values if "member" in ckpt.coords else []):
            m = xr.Dataset({name: ckpt[f"member_{name}"].sel(member=r, drop=True)
                            for name in member_vars(self.cfg)},
                           attrs={"wall_time_s": float(ckpt["member_wall_time_s"].sel(
                               member=r))})
            self.restored[int(r)] = m
        while len(frames) - 2 in self.restored:  # the members done in order are frames
            frames.append(self.restored.pop(len(frames) - 2))
        return frames[-1], frames


def _plain(attrs: dict) -> dict:
    """Attrs as JSON-ready Python values."""
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in attrs.items()}


def compare(config: dict | None = None, *, out: str | Path | None = None,
            overwrite: bool = False, resume: bool = False,
            progress: bool = False) -> xr.Dataset:
    """Solve the PDE and run the particle ensemble of one config; compare them.

    The ensemble runs through ``meanfield.runs.executor`` (``[parallel]`` workers or
    scheduler; the same numbers serially and in parallel). With an output path, Ctrl-C
    keeps the PDE and the members done in ``<out>.checkpoint.nc`` (also on the
    ``output.checkpoint_every`` schedule) and ``resume=True`` goes on from there, bit for
    bit.

    Args:
        config: the config (see ``meanfield.config``); ``particles.ensemble`` runs.
        out: where to write the netCDF result (default ``output.path``).
        overwrite: replace an existing result.
        resume: continue from ``<out>.checkpoint.nc`` if it exists.
        progress: progress bars (the PDE's, and the members' when serial).

    Returns:
        The comparison dataset (see the module docstring); ``status`` -1 when
        interrupted (then it compares the members done, if the PDE is done).

    Raises:
        ConfigError: bad input (before any work), or an unreachable scheduler.
        TaskFailed: an ensemble member failed (named with its seed); the others are kept
            in the checkpoint.
    """
    cfg = cfgmod.validate(config)
    plan = check_compare_config(cfg)
    # too big for this machine: refused before any work ("auto": at its first resolution)
    budget.check(run_config(cfg), "compare")
    return run_study(cfg, lambda executor: CompareTask(cfg, plan, executor, progress), out,
                     overwrite=overwrite, resume=resume, progress=progress)


# ---------------------------------------------------------------------------------------
# The comparison dataset.

# bins across the width 1/max rho of the most concentrated PDE state ("auto", circle)
BINS_PER_WIDTH = 6


def resolving_bins(pde: xr.Dataset, count: int) -> int:
    """``"auto"`` arcs on the circle that resolve the PDE's most concentrated state:
    ``count`` (``2 N^(1/3)``) or, if more, ``BINS_PER_WIDTH`` arcs across the width
    ``1 / max rho`` (a cluster of standard deviation s has width sqrt(2 pi) s), i.e.
    ``ceil(BINS_PER_WIDTH 2 pi max rho)``, at most 256. Arcs of the N^(1/3) rule put a
    clustered state into two or three bins, where the L1 gap says nothing of its shape."""
    peak = float(np.nanmax(np.asarray(pde["density"].values, dtype=float)))
    need = math.ceil(BINS_PER_WIDTH * 2 * math.pi * peak) if math.isfinite(peak) else 0
    return int(min(max(count, need), 256))


def _bins(cfg: dict, plan: dict, pde: xr.Dataset, positions: np.ndarray,
          marginal: tuple | None = None) -> dict:
    """PDE bin masses ``q`` (time, bin), each token's bin ``index`` (run, time, i), bin
    sizes ``width``, the bins' coordinates and extra variables. Zonal: ``positions`` are
    the tokens' ``(<x_i, e>,)`` and ``marginal`` the PDE's (``compare_zonal``)."""
    count, geometry = plan["bins"], cfg["domain"]["geometry"]
    if geometry == "circle" and cfg["particles"]["bins"] == "auto":
        count = resolving_bins(pde, count)
    if geometry == "zonal" and cfg["particles"]["bins"] == "auto":
        count = cz.resolving_count(pde, count, marginal)
    bins = histogram_bins(geometry, count, pde)
    return {"q": bins.masses(pde), "index": bins.locate(positions), "width": bins.weights,
            "coords": bins.coords(), "extra": bins.variables()}


def _histograms(bins: dict, n: int) -> dict:
    """Member and pooled histograms, their L1 distances to the PDE, the noise floor."""
    index, q = bins["index"], bins["q"]
    b = len(bins["width"])
    runs, times = index.shape[:2]
    counts = np.zeros((runs, times, b))
    for r in range(runs):
        for t in range(times):
            counts[r, t] = np.bincount(index[r, t], minlength=b)
    total = runs * n
    p = counts.sum(axis=0) / total
    floor = np.sqrt(2 * np.clip(q, 0, 1) * (1 - np.clip(q, 0, 1)) / (math.pi * total)).sum(1)
    return {"p": p, "l1": np.abs(p - q).sum(axis=1),
            "l1_member": np.abs(counts / n - q[None]).sum(axis=2).T, "floor": floor}


# histogram units per geometry: (density, bin size, what the bin size is)
BIN_UNITS = {"circle": ("1/rad", "rad", "bin length (circle) or area (sphere)"),
             "sphere": ("1/sr", "sr", "bin length (circle) or area (sphere)"),
             "zonal": ("1", "1", "bin length in t = <x, e>")}


def comparison(cfg: dict, plan: dict, pde: xr.Dataset, members: dict[int, xr.Dataset],
               info: dict) -> xr.Dataset:
    """The comparison dataset of the PDE and the members (index -> member) done."""
    if not members:
        return xr.Dataset({k: pde[k] for k in pde.data_vars}, attrs=dict(info))
    runs = list(members.values())
    zonal = cfg["domain"]["geometry"] == "zonal"
    if zonal:  # run, time, i: the tokens' <x_i, e>
        t_values = np.stack([run["axis_projection"].values for run in runs])
        marginal = zm.marginal_nodes(pde)
        bins = _bins(cfg, plan, pde, t_values[..., None], marginal)
    else:
        positions = np.stack([run["position"].values for run in runs])  # run, time, i, comp
        bins = _bins(cfg, plan, pde, positions)
    h = _histograms(bins, plan["n"])
    q, width = bins["q"], bins["width"]
    unit, size_unit, size_name = BIN_UNITS[cfg["domain"]["geometry"]]

    def per_run(name: str) -> np.ndarray:
        return np.stack([r_[name].values for r_ in runs], axis=1)

    data = {
        "density": pde["density"],
        "weights": pde["weights"],
        "pde_bin_density": (("time", "bin"), q / width,
                            {"units": unit, "long_name": "PDE mass of each bin / its size"}),
        "particle_density": (("time", "bin"), h["p"] / width,
                             {"units": unit, "long_name": "pooled particle histogram "
                              "(fraction of tokens in each bin / its size)"}),
        "bin_size": (("bin",), width, {"units": size_unit, "long_name": size_name}),
        "l1_distance": (("time",), h["l1"], {"units": "1", "long_name":
                                             "sum_b |p_b - q_b|: pooled particles vs PDE"}),
        "l1_distance_member": (("time", "run"), h["l1_member"], {
            "units": "1", "long_name": "sum_b |p_b - q_b| per run"}),
        "l1_noise_floor": (("time",), h["floor"], {"units": "1", "long_name":
                                                   "expected L1 distance of N exact samples"}),
        "order_parameter": pde["order_parameter"],
        "energy": pde["energy"],
        "mean_direction": pde["mean_direction"],
        "particle_order_parameter": (("time", "run"), per_run("order_parameter"),
                                     {"units": "1", "long_name": "|mean_i x_i| per run"}),
        "particle_energy": (("time", "run"), per_run("energy"),
                            {"units": "1", "long_name": "E_beta(mu^n) - E_beta(uniform)"}),
        **bins["extra"],
    }
    if zonal:
        data["marginal"] = pde["marginal"]
        data["axis_projection"] = runs[0]["axis_projection"].assign_attrs(
            units="1", long_name="<x_i, e> of the first run's tokens")
        data.update(cz.zonal_variables(pde, t_values, per_run("axis_order_parameter"),
                                       marginal))
    else:
        data["position"] = runs[0]["position"]
    coords = {"time": pde["time"].values, "run": np.array(list(members)), **bins["coords"]}
    ds = xr.Dataset(data, coords=coords)
    if "free_energy" in pde:
        ds["free_energy"] = pde["free_energy"]
    ds.attrs.update({k: v for k, v in pde.attrs.items()
                     if k in ("geometry", "method", "model", "beta", "kappa", "resolution",
                              "value", "dim")})
    ds.attrs.update({
        "title": f"PDE vs {len(runs)} x {plan['n']} tokens: {pde.attrs['title']}",
        "n": plan["n"], "ensemble": len(runs), "bins": len(width),
        "seed": cfg["particles"]["seed"], "sum_method": plan["sum_method"],
        "pde_wall_time_s": pde.attrs["wall_time_s"],
        "particles_wall_time_s": float(sum(r_.attrs["wall_time_s"] for r_ in runs)),
        **info,
    })
    return ds
