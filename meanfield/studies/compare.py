"""``compare(config)``: the PDE and an ensemble of particle runs from the same density.

One config: ``evolve`` solves the PDE from the ``[initial]`` density; ``particles.ensemble``
particle runs of ``particles.n`` tokens each start from i.i.d. samples of that density
(member ``r`` is exactly ``meanfield particles`` with ``particles.seed = seed + r``) and
are saved at the same times. At each time the pooled tokens are binned and compared with
the PDE's mass in the same bins:

- circle: ``bins`` equal arcs of [0, 2 pi) (``"auto"``: ``2 N^(1/3)`` for N pooled
  tokens, between 8 and 256). The PDE mass of an arc is exact: from the Fourier series
  (spectral) or the cell averages (finite volumes, piecewise constant).
- sphere: the Voronoi cells of an icosahedral mesh (``bins`` = its number of cells, one of
  42, 162, 642, ...; ``"auto"``: the finest with at least 20 tokens per cell on average).
  Tokens go to the nearest cell centre; the PDE mass of a cell is a degree-5 quadrature
  of the spectral solution (spectral) or of the piecewise-constant finite-volume solution
  (its value at a quadrature point is that of the nearest PDE cell; the quadrature
  triangles are refined 3 times, so the cut PDE cells along the edges cost O(h^2)).

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
import math
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

import meanfield
from meanfield import config as cfgmod
from meanfield.errors import ConfigError
from meanfield.runs.evolve import evolve
from meanfield.io import check_writable, write_netcdf
from meanfield.runs.particles import check_config, particles
from meanfield.metrics.binning import circle_bin_masses, nearest_cell, sphere_bin_masses
from solvers.grids.mesh import icosahedral_mesh

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
    total = plan["n"] * cfg["particles"]["ensemble"]
    bins = cfg["particles"]["bins"]
    if cfg["domain"]["geometry"] == "circle":
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


def compare(config: dict | None = None, *, out: str | Path | None = None,
            overwrite: bool = False, progress: bool = False) -> xr.Dataset:
    """Solve the PDE and run the particle ensemble of one config; compare them.

    Args:
        config: the config (see ``meanfield.config``); ``particles.ensemble`` runs.
        out: where to write the netCDF result (default ``output.path``).
        overwrite: replace an existing result.
        progress: progress bars.

    Returns:
        The comparison dataset (see the module docstring).
    """
    cfg = cfgmod.validate(config)
    plan = check_compare_config(cfg)
    out = out if out is not None else cfg["output"]["path"]
    if out is not None:
        check_writable(out, overwrite)
    quiet = copy.deepcopy(cfg)
    quiet["output"]["path"] = None
    pde_cfg = copy.deepcopy(quiet)
    pde_cfg["time"]["dt"] = "auto"
    pde = evolve(pde_cfg, progress=progress)
    if pde.attrs["status"] != 0:
        raise KeyboardInterrupt
    ensemble = cfg["particles"]["ensemble"]
    runs = []
    for r in range(ensemble):
        member = copy.deepcopy(quiet)
        member["particles"]["seed"] = cfg["particles"]["seed"] + r
        run = particles(member, progress=progress)
        if run.attrs["status"] != 0:
            raise KeyboardInterrupt
        runs.append(run)
    positions = np.stack([run["position"].values for run in runs])  # run, time, i, comp
    total = ensemble * plan["n"]

    coords: dict[str, Any] = {"time": pde["time"].values, "run": np.arange(ensemble)}
    if cfg["domain"]["geometry"] == "circle":
        b = plan["bins"]
        edges = np.linspace(0, 2 * np.pi, b + 1)
        q = circle_bin_masses(pde, edges)
        angle = np.mod(np.arctan2(positions[..., 1], positions[..., 0]), 2 * np.pi)
        index = np.minimum((angle / (2 * np.pi / b)).astype(int), b - 1)
        width = np.full(b, 2 * np.pi / b)
        coords.update(bin=(edges[:-1] + edges[1:]) / 2)
        bin_dims = ("bin",)
        extra = {"bin_edges": (("bin_edge",), edges)}
    else:
        mesh = icosahedral_mesh(cfgmod.SPHERE_MESH_CELLS.index(plan["bins"]) + 1)
        q = sphere_bin_masses(pde, mesh)
        b = mesh.n_cells
        index = nearest_cell(mesh, positions.reshape(-1, 3)).reshape(positions.shape[:-1])
        width = mesh.weights
        c = mesh.centers
        coords.update(bin=np.arange(b), bin_lat=("bin", np.arcsin(np.clip(c[:, 2], -1, 1))),
                      bin_lon=("bin", np.mod(np.arctan2(c[:, 1], c[:, 0]), 2 * np.pi)))
        bin_dims = ("bin",)
        extra = {}
    counts = np.zeros((ensemble, len(coords["time"]), b))
    for r in range(ensemble):
        for t in range(len(coords["time"])):
            counts[r, t] = np.bincount(index[r, t], minlength=b)
    p_member = counts / plan["n"]
    p = counts.sum(axis=0) / total
    l1 = np.abs(p - q).sum(axis=1)
    l1_member = np.abs(p_member - q[None]).sum(axis=2).T
    floor = np.sqrt(2 * np.clip(q, 0, 1) * (1 - np.clip(q, 0, 1)) / (math.pi * total)).sum(1)

    unit = "1/rad" if cfg["domain"]["geometry"] == "circle" else "1/sr"
    data = {
        "density": pde["density"],
        "weights": pde["weights"],
        "pde_bin_density": (("time",) + bin_dims, q / width,
                            {"units": unit, "long_name": "PDE mass of each bin / its size"}),
        "particle_density": (("time",) + bin_dims, p / width,
                             {"units": unit, "long_name": "pooled particle histogram "
                              "(fraction of tokens in each bin / its size)"}),
        "bin_size": (bin_dims, width, {"units": "rad" if unit == "1/rad" else "sr",
                                       "long_name": "bin length (circle) or area (sphere)"}),
        "l1_distance": (("time",), l1, {"units": "1", "long_name":
                                        "sum_b |p_b - q_b|: pooled particles vs PDE"}),
        "l1_distance_member": (("time", "run"), l1_member, {"units": "1", "long_name":
                                                            "sum_b |p_b - q_b| per run"}),
        "l1_noise_floor": (("time",), floor, {"units": "1", "long_name":
                                              "expected L1 distance of N exact samples"}),
        "order_parameter": pde["order_parameter"],
        "energy": pde["energy"],
        "mean_direction": pde["mean_direction"],
        "particle_order_parameter": (("time", "run"),
                                     np.stack([r_["order_parameter"].values for r_ in runs],
                                              axis=1),
                                     {"units": "1", "long_name": "|mean_i x_i| per run"}),
        "particle_energy": (("time", "run"),
                            np.stack([r_["energy"].values for r_ in runs], axis=1),
                            {"units": "1", "long_name": "E_beta(mu^n) - E_beta(uniform)"}),
        "position": runs[0]["position"],
        **extra,
    }
    ds = xr.Dataset(data, coords=coords)
    if "free_energy" in pde:
        ds["free_energy"] = pde["free_energy"]
    ds.attrs.update({k: v for k, v in pde.attrs.items()
                     if k in ("geometry", "method", "model", "beta", "kappa", "resolution")})
    ds.attrs.update({
        "title": f"PDE vs {ensemble} x {plan['n']} tokens: {pde.attrs['title']}",
        "kind": "compare", "n": plan["n"], "ensemble": ensemble, "bins": b,
        "seed": cfg["particles"]["seed"], "sum_method": plan["sum_method"],
        "config": cfgmod.to_json(cfg), "meanfield_version": meanfield.__version__,
        "status": 0, "message": "finished",
        "pde_wall_time_s": pde.attrs["wall_time_s"],
        "particles_wall_time_s": float(sum(r_.attrs["wall_time_s"] for r_ in runs)),
    })
    if out is not None:
        write_netcdf(ds, out, overwrite=True)
    return ds
