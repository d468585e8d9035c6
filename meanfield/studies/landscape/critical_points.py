"""``critical_points(config)``: the critical points of the interaction energy of n tokens
on S^{d-1} ([GLPR25, §7.2, Problem 3]: with the exception of the global maxima, are all
critical points strict saddles?).

The energy is ``E_beta = (1/(2 beta n^2)) sum_ij e^{beta <x_i, x_j>}`` less its value at
the uniform measure (``meanfield.model.particles.interaction_energy``; docs/conventions.md).
The USA dynamics is its gradient ascent (``x_i' = n grad_i E_beta``) and the SA velocity is
the USA one divided by a positive number per token, so both have exactly the critical
points of E_beta as their equilibria. The synchronised state (all tokens at one point) is
the global maximum, the attractor.

**Index.** The Hessian of E_beta at a critical point (in the angles on S^1, in tangent
coordinates on S^{d-1}: ``meanfield.model.interaction_hessian``) has ``n(d - 1)``
eigenvalues; those with ``|lambda| <= zero_tolerance max |lambda|`` are zero modes (the
rotations give ``orbit_dimension`` of them), and the **index** is the number of positive
eigenvalues: the directions in which E_beta increases, i.e. in which the gradient ascent
leaves the point. It is 0 at the synchronised state; a critical point of index >= 1 is a
strict saddle (the definition of [GLPR25, §7.2]: at least one positive eigenvalue),
unstable for the USA and the SA dynamics alike (the SA Jacobian there is ``n D H`` with D
diagonal positive, which has the inertia of H). The prediction (Problem 3): every
non-synchronised critical point has index >= 1. A point with more zero modes than the symmetry forces is
``degenerate``: its index is then a lower bound.

Members: one per (n, beta) of ``critical_points.n`` x ``critical_points.beta``; each runs
every start of every family (``critical_search``), keeps the converged points, merges
those of one orbit (rotations, reflections, permutations), and measures each point. The
starts of a member depend on (seed, n, family) only, so every beta starts from the same
tokens.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from meanfield import config as cfgmod
from meanfield.model.interaction_hessian import hessian, orbit_dimension, tangent_basis
from meanfield.model.particles import interaction_energy
from meanfield.runs.executor import Executor
from meanfield.studies.landscape import critical_search as search
from meanfield.studies.landscape.critical_theory import classify
from meanfield.studies.landscape.critical_points_dataset import study_dataset
from meanfield.studies.members import MemberList, run_study


def _seed(cfg: dict, n: int, family: str) -> np.random.Generator:
    c = cfg["critical_points"]
    return np.random.default_rng([c["seed"], n, search.FAMILIES.index(family)])


def find(cfg: dict, n: int, beta: float) -> tuple[list[list], dict[str, list[int]]]:
    """The distinct critical points of one member: ``[x, invariant, hits per family]``
    each, and per family ``[starts, converged]``."""
    c = cfg["critical_points"]
    d = c["dim"]
    found: list[list] = []
    counts = {}
    for f, family in enumerate(c["families"]):
        fi = search.FAMILIES.index(family)
        xs = search.starts(family, c["starts"], n, d, c["jitter"], _seed(cfg, n, family))
        ok = 0
        for x0 in xs:
            x, converged, _ = search.solve(x0, beta, c["tolerance"], c["max_iterations"])
            if not converged:
                continue
            ok += 1
            x = search.canonical(x)
            inv = search.invariant(x)
            for point in found:
                if search.same(point[1], inv, d, c["match_tolerance"]):
                    point[2][fi] += 1
                    break
            else:
                hits = [0] * len(search.FAMILIES)
                hits[fi] = 1
                found.append([x, inv, hits])
        counts[family] = [c["starts"], ok]
    return found, counts


def measure(x: np.ndarray, beta: float, zero_tolerance: float) -> dict[str, Any]:
    """Energy, spectrum, index and the rest of one critical point (module docstring)."""
    n, d = x.shape
    basis = tangent_basis(x)
    w, v = np.linalg.eigh(hessian(x, beta, basis))
    scale = float(np.max(np.abs(w)))
    zero = np.abs(w) <= zero_tolerance * scale
    index = int(np.sum(w > zero_tolerance * scale))
    symmetry = orbit_dimension(x)
    kind, sizes, closed = classify(x, beta)
    error = np.nan if closed is None else float(np.max(np.abs(w - closed)) / scale)
    direction = np.full((n, d), np.nan)
    if index:
        a = np.einsum("ida,ia->id", basis, v[:, -1].reshape(n, d - 1))
        a /= np.linalg.norm(a)
        big = np.unravel_index(np.argmax(np.abs(a)), a.shape)
        direction = a * np.sign(a[big])
    # E_sync - E without cancellation: (e^beta/(2 beta n^2)) sum_ij -expm1(beta(G_ij - 1))
    gram = np.clip(x @ x.T, -1.0, 1.0)
    gap = float(np.exp(beta) / (2 * beta * n**2) * np.sum(-np.expm1(beta * (gram - 1.0))))
    return {"energy": interaction_energy(x, beta), "energy_gap": gap,
            "eigenvalues": w, "index": index, "zero_modes": int(zero.sum()),
            "symmetry_zero_modes": symmetry, "degenerate": bool(zero.sum() > symmetry),
            "kind": kind, "sizes": sizes, "closed_form_error": error,
            "residual": search.residual(x, beta, basis), "unstable_eigenvalue": float(w[-1]),
            "unstable_direction": direction}


def run_member(cfg: dict, params: dict) -> dict:
    """One (n, beta): its critical points, padded to the largest n of the config (rows:
    one per point, ordered by energy, highest first)."""
    c = cfg["critical_points"]
    n, beta, d = params["n"], params["beta"], c["dim"]
    n_max = max(c["n"])
    found, counts = find(cfg, n, beta)
    rows = [(p[0], p[2], measure(p[0], beta, c["zero_tolerance"])) for p in found]
    rows.sort(key=lambda r: -r[2]["energy"])
    p, fam = len(rows), len(search.FAMILIES)
    out: dict[str, np.ndarray] = {
        "positions": np.full((p, n_max, d), np.nan),
        "unstable_direction": np.full((p, n_max, d), np.nan),
        "eigenvalues": np.full((p, n_max * (d - 1)), np.nan),
        "sizes": np.zeros((p, n_max), dtype=np.int64),
        "hits": np.array([r[1] for r in rows], dtype=np.int64).reshape(p, fam),
    }
    for name in ("energy", "energy_gap", "closed_form_error", "residual",
                 "unstable_eigenvalue"):
        out[name] = np.array([r[2][name] for r in rows], dtype=float)
    for name in ("index", "zero_modes", "symmetry_zero_modes"):
        out[name] = np.array([r[2][name] for r in rows], dtype=np.int64)
    out["degenerate"] = np.array([r[2]["degenerate"] for r in rows], dtype=bool)
    out["kind"] = np.array([r[2]["kind"] for r in rows], dtype=object)
    for i, (x, _, m) in enumerate(rows):
        out["positions"][i, :n] = x
        out["unstable_direction"][i, :n] = m["unstable_direction"]
        out["eigenvalues"][i, :n * (d - 1)] = m["eigenvalues"]
        out["sizes"][i, :m["sizes"].size] = m["sizes"]
    out["starts"] = np.array([counts.get(f, [0, 0])[0] for f in search.FAMILIES])
    out["converged"] = np.array([counts.get(f, [0, 0])[1] for f in search.FAMILIES])
    return out


MEMBER_NAMES = ("starts", "converged")  # per member and family; the rest: per point


class CriticalPointsTask(MemberList):
    """Points: the start, then one member per (n, beta)."""

    kind = "critical_points"
    noun = "(n, beta)"

    def __init__(self, cfg: dict, executor: Executor, progress: bool):
        c = cfg["critical_points"]
        members = [{"n": int(n), "beta": float(b)} for n in c["n"] for b in c["beta"]]
        super().__init__(cfg, executor, progress, members,
                         functools.partial(run_member, cfg))

    def describe(self, params: dict) -> str:
        return f"member n = {params['n']}, beta = {params['beta']:g}"

    def dataset(self, frames: list, info: dict) -> xr.Dataset:
        return study_dataset(self.cfg, self.members, frames[1:], info)

    def checkpoint(self, state: Any, frames: list) -> xr.Dataset:
        done = [f for f in self.kept(frames)[1:] if isinstance(f, dict)]
        if not done:
            return xr.Dataset()
        data = {}
        for k in done[0]:
            stacked = np.concatenate([f[k] for f in done]) if k not in MEMBER_NAMES \
                else np.stack([f[k] for f in done])
            dims = ("member" if k in MEMBER_NAMES else "row",) + tuple(
                f"{k}_{j}" for j in range(1, stacked.ndim))
            data[f"member_{k}"] = (dims, stacked.astype(str) if k == "kind" else stacked)
        data["member_rows"] = ("member", np.array([f["energy"].size for f in done]))
        return xr.Dataset(data)

    def restore(self, ckpt: xr.Dataset) -> tuple[Any, list]:
        frames: list = [None]
        if "member_rows" not in ckpt:
            return None, frames
        ends = np.cumsum(ckpt["member_rows"].values)
        names = [k[len("member_"):] for k in ckpt.data_vars
                 if k.startswith("member_") and k != "member_rows"]
        for i, end in enumerate(ends):
            start = end - int(ckpt["member_rows"].values[i])
            frame = {}
            for k in names:
                values = ckpt[f"member_{k}"].values
                frame[k] = values[i] if k in MEMBER_NAMES else values[start:end]
            frame["kind"] = frame["kind"].astype(object)
            frame["degenerate"] = frame["degenerate"].astype(bool)
            frames.append(frame)
        return frames[-1], frames


def critical_points(config: dict | None = None, *, out: str | Path | None = None,
                    overwrite: bool = False, resume: bool = False,
                    progress: bool = False) -> xr.Dataset:
    """The critical-points study of one config (module docstring).

    Args:
        config: the config; ``[critical_points]`` n, dim, beta, families, starts, jitter,
            tolerance, max_iterations, zero_tolerance, match_tolerance, seed.
        out: where to write the netCDF result (default ``output.path``).
        overwrite: replace an existing result.
        resume: continue from ``<out>.checkpoint.nc``.
        progress: a bar over the members.

    Returns:
        The study dataset, one row (``point``) per critical point (``status`` -1 when
        interrupted).

    Raises:
        ConfigError: bad input, before any work.
    """
    cfg = cfgmod.validate(config, "critical_points")
    return run_study(cfg, lambda executor: CriticalPointsTask(cfg, executor, progress),
                     out, overwrite=overwrite, resume=resume, progress=progress)
