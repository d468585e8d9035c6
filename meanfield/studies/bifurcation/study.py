"""``bifurcation(config)``: the branches of stationary states of the noisy model, in kappa
or in beta, their stability, the pitchforks of the uniform state and the folds.

``[bifurcation] mode = "continuation"`` (this module, on the run engine): the uniform
branch (branch 0), its eigenvalues and pitchforks, checked against the closed form of
docs/conventions.md, then one branch per mode ``k = 1..modes`` (degree on S^2; two on
S^2 for an even degree, ``branch_sign`` +-1) from its pitchfork by pseudo-arclength
continuation, each point labelled by its stability, folds and eigenvalue crossings
located, and the transition type per mode branch. How each branch is computed is in
``meanfield.studies.bifurcation.branches`` (``uniform_branch``, ``pitchfork_check``,
``mode_branch``); the config checks, the plan and the discretization in ``plan``; the
dataset in ``branch_dataset``; this module runs the branches as the points of the run
engine. A disagreement with
the closed form or a failed branch makes the run's ``status`` 1 and its ``message``
say so.

Resume: the run engine's checkpoint holds the finished branches (the dataset of those
done), ``resume`` goes on with the next branch; Ctrl-C keeps the finished branches (the
branch in progress is computed again).

``mode = "scan"``: ``meanfield.studies.bifurcation.scan.run_scan`` (time integration to
steady state; its checkpoint keeps the members done, ``resume`` runs the others).
``mode = "map"``: ``meanfield.studies.bifurcation.parameter_map`` (the first bifurcation
over a (beta, kappa) map: kappa_c(beta), the fold curve, the Maxwell point, the stable
order parameter, bistability). On the zonal geometry ``domain.dim`` may be a list or a
range of d: the study of each d, with a dimension ``dim`` in the dataset
(``meanfield.studies.bifurcation.across_dims``).

The dataset (docs/datasets.md): dims ``(branch, point)``: ``kappa``, ``beta``,
``order_parameter``, ``amplitude`` (of the branch's own mode k: ``|int e^{ik theta} dmu|``
on S^1, the rotation-invariant degree-l amplitude on S^2; equal to ``order_parameter`` for
k = 1, and what measures a branch with k >= 2 on S^1, whose ``order_parameter`` is 0),
``free_energy``, ``stable`` (int8: 1 stable, 0 unstable, -1 unknown or padding), ``leading_eigenvalue`` (real part of the leading eigenvalue, zero modes
dropped); per branch ``branch_mode`` (0 for the uniform branch), ``branch_kind``
("uniform" | "mode"), ``branch_sign``, ``branch_points``, ``branch_status``,
``branch_message``, ``transition``, ``fold_kappa``, ``fold_beta``; special points on dim
``special``: ``special_type`` ("pitchfork" | "fold" | "bifurcation"), ``special_kappa``,
``special_beta``, ``special_branch``, ``special_multiplicity``, ``special_order_parameter``,
``special_mode``, ``special_analytic_kappa`` (the closed form's kappa_c at the point's
beta for pitchforks, else NaN), ``special_side`` (pitchforks: +1 when the uniform state is
more unstable above the point, -1 below), ``special_located``; the states every ``stride``
points (and the last) ``state_density (branch, saved, <grid dims>)`` with ``state_point``
(-1: none). Attrs: ``parameter``, ``critical_kappa`` (closed form per mode at model.beta;
for the parameter beta at the analytic critical beta, NaN where none in the range),
``critical_beta`` (parameter beta only), ``pitchfork_check``, ``value`` and the usual ones.

``[weights] value = c`` (the value matrix ``V = c I``) multiplies the velocity by c:
stationary states ``rho ∝ exp(c kappa Psi)``, pitchforks at ``kappa_c = 1/(c a_k)``
(noisy Kuramoto: ``2/c`` on S^1, ``3/c`` on S^2). For ``c <= 0`` every mode of the uniform
state decays, ``k^2 (c a_k - 1/kappa) < 0``: no branch leaves it, and the study says so
(``pitchfork_check``, each mode branch's message) instead of searching.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import xarray as xr

from meanfield import config as cfgmod
from meanfield.errors import ConfigError
from meanfield.runs import budget
from meanfield.runs.engine import Engine, RunTask
from meanfield.runs.threads import one_blas_thread
from meanfield.studies.bifurcation import parameter_map as bm
from meanfield.studies.bifurcation.across_dims import AcrossDimsTask, config_at, dims_of
from meanfield.studies.bifurcation.branch_dataset import branches_from_dataset, study_dataset
from meanfield.studies.bifurcation.branches import (
    mode_branch,
    pitchfork_check,
    uniform_branch,
)
from meanfield.studies.bifurcation.plan import (
    build_discretization,
    check_bifurcation_config,
    finished_with_problems,
    plan_branches,
)

# ---------------------------------------------------------------------------------------
# The study on the run engine.

class BifurcationTask(RunTask):
    """Points: the start, the uniform branch, then one per (mode, sign) branch; a
    checkpoint keeps the branches done."""

    kind = "bifurcation"

    def __init__(self, cfg: dict, plan: dict):
        super().__init__(cfg)
        self.plan = plan
        self.disc = build_discretization(cfg)

    def points(self) -> list:
        return ["start", "uniform", *plan_branches(self.plan)]

    def where(self, done: int) -> str:
        return f"{max(done - 1, 0)} of {len(self.points()) - 1} branches"

    def start(self) -> Any:
        return {"pitchforks": [], "branch": None}

    def advance(self, state: Any, point: Any, on_step) -> Any:
        if point == "uniform":
            branch = uniform_branch(self.disc, self.cfg, self.plan)
            return {"pitchforks": branch["special"], "branch": branch}
        mode, sign = point
        pitchfork = next((p for p in state["pitchforks"] if p["mode"] == mode), None)
        branch = mode_branch(self.disc, self.cfg, self.plan, pitchfork, mode, sign)
        return {"pitchforks": state["pitchforks"], "branch": branch}

    def frame(self, state: Any) -> Any:
        return state["branch"]

    def dataset(self, frames: list, info: dict) -> xr.Dataset:
        branches = [f for f in frames[1:] if isinstance(f, dict)]
        ok, check = pitchfork_check(self.plan, self.cfg,
                                    branches[0]["special"] if branches else [])
        failed = [f"branch {i} (mode {br['mode']}): {br['message']}"
                  for i, br in enumerate(branches) if br["status"] == "failed"]
        info = {**info, "pitchfork_check": check, "check_passed": int(ok),
                "problems": "; ".join(([] if ok else [check]) + failed)}
        return study_dataset(self.cfg, self.plan, self.disc.grid, branches, info)

    def outcome(self, ds: xr.Dataset) -> tuple[int, str]:
        return finished_with_problems(ds)

    def checkpoint(self, state: Any, frames: list) -> xr.Dataset:
        branches = [f for f in frames[1:] if isinstance(f, dict)]
        if not branches:
            return xr.Dataset()
        return study_dataset(self.cfg, self.plan, self.disc.grid, branches, {})

    def restore(self, ckpt: xr.Dataset) -> tuple[Any, list]:
        if "branch_points" not in ckpt:
            return self.start(), [None]
        branches = branches_from_dataset(ckpt)
        return ({"pitchforks": branches[0]["special"], "branch": branches[-1]},
                [None, *branches])


def _scan(run_scan, cfg: dict, out, overwrite: bool, resume: bool, progress: bool
          ) -> xr.Dataset:
    """``mode = "scan"``: the scan on the run engine (``scan.run_scan``),
    written to ``out``; its checkpoint keeps the members done, ``resume`` runs only the
    others."""
    return run_scan(cfg, _out(cfg, out), overwrite=overwrite, resume=resume,
                    progress=progress)


def bifurcation(config: dict | None = None, *, out: str | Path | None = None,
                overwrite: bool = False, resume: bool = False,
                progress: bool = False) -> xr.Dataset:
    """The bifurcation study of one config (module docstring).

    Args:
        config: the config; ``[bifurcation]`` parameter, start, stop, modes, mode, ds,
            ds_max, points, stride, tolerance (and the scan's and map's keys).
        out: where to write the netCDF result (default ``output.path``).
        overwrite: replace an existing result.
        resume: continue from ``<out>.checkpoint.nc`` (the branches done are kept).
        progress: unused by the continuation (a branch at a time); the scan's bar.

    Returns:
        The study dataset; ``status`` 0 when finished and every check passed, 1 when
        finished with a pitchfork that disagrees with the closed form or a branch whose
        Newton failed (``message`` says which), -1 when interrupted (the branches done).

    Raises:
        ConfigError: bad input, before any work.
    """
    cfg = cfgmod.validate(config)
    with one_blas_thread():  # (small dense LU and eigenvalue problems: threads.py)
        return _run(cfg, out, overwrite, resume, progress)


def _run(cfg: dict, out, overwrite: bool, resume: bool, progress: bool) -> xr.Dataset:
    if dims_of(cfg) is not None:  # a study across d (zonal): each d in memory
        for d in dims_of(cfg):
            _check_one(config_at(cfg, d), f"at domain.dim = {d}: ")
        budget.check(cfg, "bifurcation")  # (the states of every d kept)
        return Engine(cfg, _out(cfg, out), overwrite=overwrite, resume=resume,
                      progress=progress).run(
            AcrossDimsTask(cfg, lambda c: _run(c, None, False, False, False)))
    if cfg["bifurcation"]["mode"] == "map":
        bm.check_map_config(cfg)
        budget.check(cfg, "bifurcation")
        return Engine(cfg, _out(cfg, out), overwrite=overwrite, resume=resume,
                      progress=progress).run(bm.MapTask(cfg))
    plan = check_bifurcation_config(cfg)
    budget.check(cfg, "bifurcation")  # before any grid is made (S^2 L = 2047: 1.3 PB)
    if cfg["bifurcation"]["mode"] == "scan":
        try:
            from meanfield.studies.bifurcation.scan import run_scan
        except ImportError as exc:
            raise ConfigError(f"bifurcation.mode = \"scan\" is not available in this "
                              f"installation ({exc}); use \"continuation\"",
                              "bifurcation.mode") from None
        return _scan(run_scan, cfg, out, overwrite, resume, progress)
    out = _out(cfg, out)
    engine = Engine(cfg, out, overwrite=overwrite, resume=resume, progress=progress)
    return engine.run(BifurcationTask(cfg, plan))


def _check_one(cfg: dict, where: str) -> None:
    """The checks of one dimension's study before any work (ConfigError, prefixed with
    ``where``)."""
    try:
        mode = cfg["bifurcation"]["mode"]
        if mode == "map":
            bm.check_map_config(cfg)
        elif mode == "scan":
            from meanfield.studies.bifurcation.scan_plan import scan_plan

            scan_plan(cfg)
        else:
            check_bifurcation_config(cfg)
        budget.check(cfg, "bifurcation")
    except ConfigError as exc:
        raise ConfigError(where + str(exc), exc.key) from None


def _out(cfg: dict, out):
    return out if out is not None else cfg["output"]["path"]
