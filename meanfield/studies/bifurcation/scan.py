"""The brute-force bifurcation scan: time-integrate to a steady state at each parameter
value, from several starts and in both directions (``[bifurcation] mode = "scan"``).

What users run first. For ``scan_num`` values of ``[bifurcation] parameter`` (``kappa``
or ``beta``) evenly spaced from ``start`` to ``stop``, the PDE (the spectral
discretization's own stepper, ``disc.stepper()`` through ``solvers.steppers.integrate``,
as ``meanfield.runs.evolve`` steps) is integrated until ``||F(u)|| < scan_tolerance``
(``disc.residual``, 2-norm over the real components, as ``stationary_state`` reports it)
or ``t > scan_t_max``. The end state is then POLISHED by Newton (``stationary_state``, tolerance
``min(tolerance, 1e-10)``): the reported state is stationary to round-off, so the scan
agrees with continuation to round-off wherever both land on the same state; the
unpolished order parameter and residual are kept beside it. A state within
``UNIFORM_SNAP`` of the uniform density (every mode ``k >= 1`` / degree ``l >= 1``
relative to the mean) is polished from the uniform density itself: the phase condition
of ``stationary_state`` needs a mode to fix, and a state that close to the uniform one at
``||F|| < scan_tolerance`` is the uniform state (the non-uniform branches through it
come that close only within ~1e-12 of a bifurcation point).

Steps: ETDRK4 with FIXED steps, ``time.dt``, or with ``time.dt = "auto"`` ``AUTO_DT``
(0.1), halved (up to ``HALVINGS`` times, the value restarted) when the run goes negative,
NaN or its step underflows. Not the error-controlled steps of ``evolve``: near a steady
state they grow to the stability limit of the explicit transport and the controller
then holds the residual at ~``time.tolerance`` times the stiffness (measured: USA beta =
4, kappa = 0.43, N = 48: ``||F||`` stalls at 1e-6 with ``time.tolerance = 1e-8``, and
needs 2229 steps to reach 1e-9 with 1e-10), whereas fixed steps keep the exact fixed
point of ETDRK4 (an equilibrium of ``F``) attracting: 97 steps of 0.2 there. The end
state (a zero of ``F``) does not depend on the step; only which basin a transient ends
in could, marginally, near a basin boundary.

Sweeps (the dataset's ``sweep`` dimension):

- one per start of ``scan_starts``, each value independently from that start:
  ``"uniform"``, the uniform density plus a mode-1 perturbation of relative amplitude
  ``PERTURBATION`` (1e-3: an unstable uniform state departs, a stable one returns);
  ``"clustered"``, a von Mises / von Mises-Fisher density of concentration
  ``CONCENTRATION`` (5) about ``theta = 0`` (S^1) or +z (S^2);
- ``"up"``: the values in increasing order, the first from the ``"uniform"`` start, each
  next one from the previous value's polished state times ``1 + f``, ``f`` the same mode-1
  perturbation relative to the mean, renormalised to mass 1 (a kick, so that a state that
  turned unstable departs; it is what noise does in an experiment; at the uniform state it
  is the perturbation itself, and it keeps a concentrated state positive where adding
  ``f`` times the mean would not): the lower branch is followed as far as it is stable;
- ``"down"``: decreasing, the first from the ``"clustered"`` start, then likewise.

Where ``up`` and ``down`` end on different stable states at the same value (their
rotation-invariant spectra, ``|c_k|`` on S^1 and the power per degree on S^2, differ by
more than ``DISTINCT_RTOL`` of the mean coefficient), ``bistable`` is True: the hysteresis
loop of a first-order (subcritical) transition. ``attrs["bistable_low"]`` and
``attrs["bistable_high"]`` are the smallest and largest such values (NaN where there is
none); with ``parameter = "kappa"`` the fold of the subcritical branch lies within one
spacing below ``bistable_low`` and ``kappa_c`` within one above ``bistable_high``.

Members go through the executor (``meanfield.runs.executor``, serial or dask): one per
(independent start, value) and one per sweep direction (sequential in itself). Each
builds its own discretization with one FFT thread, so the numbers are the same serially
and on a cluster. What one member computes (the starts, the kick, one value integrated,
polished and classified; ``PERTURBATION``, ``CONCENTRATION``, ``UNIFORM_SNAP``,
``AUTO_DT``, ``HALVINGS``) is ``meanfield.studies.bifurcation.scan_member``; the time
integration itself ``steady_state``; the keys checked and the values ``scan_plan``.

They run on the run engine (``ScanTask``, a ``MemberStudy``; ``run_scan`` with an output,
``scan`` in memory): with an output the members done are kept in ``<out>.checkpoint.nc``
(when ``output.checkpoint_every`` has passed, on Ctrl-C, and when a member failed: the
others are kept, the error names it), and ``resume`` runs only the members not done (a
failed one included), in the scan's order; the dataset is assembled from the members'
records whatever order they were done in, and is the same as an uninterrupted run's. An
interrupted scan's dataset (``status`` -1) holds the values done, NaN (``stable`` and
``converged`` False, ``mode`` -1) elsewhere.

Dataset: dims ``(sweep, value)``; coordinates ``sweep`` (labels), ``value`` (the scanned
parameter), ``kappa`` and ``beta`` (value) (one of them constant); variables
``order_parameter``, ``free_energy``, ``stable``, ``leading_eigenvalue``, ``mode`` (lowest
mode / degree of the polished state, 0 uniform), ``residual`` (``||F||`` of the polished
state), ``order_parameter_unpolished``, ``residual_unpolished``, ``steady_time`` (the time
the tolerance was met; NaN when ``scan_t_max`` came first), ``converged`` (tolerance met
and Newton converged), all (sweep, value), and ``bistable`` (value); attrs ``kind =
"bifurcation"``, ``mode = "scan"``, ``parameter``, ``kappa_c`` (docs/conventions.md, mode
1, when the other parameter is fixed), ``bistable_low``, ``bistable_high``, ``message``.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from meanfield.discretizations.base import model_value
from meanfield.runs.engine import Engine, stamp
from meanfield.runs.executor import Executor
from meanfield.studies.bifurcation.scan_member import run_member
from meanfield.studies.bifurcation.scan_plan import (
    DIRECTIONS,
    ScanPlan,
    scan_plan,
    validated_config,
)
from meanfield.studies.bifurcation.stationary_linear import critical_kappa
from meanfield.studies.dataset import assemble
from meanfield.studies.members import MemberStudy

DISTINCT_RTOL = 1e-6  # spectra differing by more than this: different states


# --- the scan ------------------------------------------------------------------------
VARIABLES = ("order_parameter", "free_energy", "stable", "leading_eigenvalue", "mode",
             "residual", "order_parameter_unpolished", "residual_unpolished",
             "steady_time", "converged")
# what a value not computed (yet) shows in the dataset of an interrupted scan
MISSING = {"order_parameter": math.nan, "free_energy": math.nan, "stable": False,
           "leading_eigenvalue": math.nan, "mode": -1, "residual": math.nan,
           "order_parameter_unpolished": math.nan, "residual_unpolished": math.nan,
           "steady_time": math.nan, "converged": False, "message": "", "steps": 0,
           "signature": None}
# the scalars of a record kept in a checkpoint (with its message and signature)
_KEPT = (*VARIABLES, "steps")


def scan_members(plan: ScanPlan) -> list[dict]:
    """The members' params, in the order they are started: the two long sequential
    sweeps first (on a cluster they start at once), then each (independent start, value)."""
    params: list[dict] = [{"sweep": d} for d in DIRECTIONS]
    params += [{"sweep": s, "index": i} for s in plan.starts for i in range(len(plan.values))]
    return params


def _key(params: dict) -> tuple[str, int]:
    return params["sweep"], int(params.get("index", -1))


class ScanTask(MemberStudy):
    """The scan on the run engine: points the start, then one per member
    (``scan_members``); a checkpoint keeps the members done, and ``resume`` runs only the
    others (a member that failed included). A frame is ``(params, records)`` of a member
    done, or the ``TaskResult`` of one that failed: the dataset is assembled by the
    members' params, whatever order they were done in."""

    kind = "bifurcation"
    first_member = 1
    members_bar = True

    def __init__(self, cfg: dict, plan: ScanPlan, executor: Executor, progress: bool):
        super().__init__(cfg, executor, progress)
        self.plan = plan
        self.members = scan_members(plan)
        self._done: set[tuple[str, int]] = set()  # the members a checkpoint held

    def points(self) -> list:
        return ["start", *range(len(self.members))]

    def where(self, done: int) -> str:
        return f"{max(done - 1, 0)} of {len(self.members)} members"

    def describe(self, params: dict) -> str:
        if "index" in params:
            return (f"scan member {params['sweep']!r} at {self.plan.parameter} = "
                    f"{self.plan.values[params['index']]:.6g}")
        return f"scan member sweep {params['sweep']!r}"

    def start(self) -> None:
        return None

    def advance(self, state: Any, point: Any, on_step) -> Any:
        if self._results is None:  # the members not done, in their order
            todo = [p for p in self.members if _key(p) not in self._done]
            fn = functools.partial(run_member, self.cfg, self.plan)
            self._results = self.executor.imap(fn, todo)
        result = next(self._results)
        self.member_done()
        return (result.params, result.value) if result.ok else result

    def frame(self, state: Any) -> Any:
        return state

    def progress_bar(self, enabled: bool, done: int):
        bar = super().progress_bar(enabled, done)
        if bar is not None:
            bar.set_description("bifurcation scan")
        return bar

    def _table(self, frames: list) -> dict:
        table: dict[tuple[str, int], dict] = {}
        for f in frames[1:]:
            if not isinstance(f, tuple):
                continue
            params, records = f
            if "index" in params:
                table[params["sweep"], params["index"]] = records[0]
            else:
                for i, record in enumerate(records):
                    table[params["sweep"], i] = record
        return table

    def dataset(self, frames: list, info: dict) -> xr.Dataset:
        del info  # (the scan's attrs: as they always were)
        return _dataset(self.cfg, self.plan, self._table(frames))

    def outcome(self, ds: xr.Dataset) -> tuple[int, str]:
        return 0, ds.attrs["message"]  # the scan's summary, not "finished"

    def checkpoint(self, state: Any, frames: list) -> xr.Dataset:
        done = [f for f in frames[1:] if isinstance(f, tuple)]
        if not done:
            return xr.Dataset()
        rows = [(params, i, record) for params, records in done
                for i, record in enumerate(records)]
        data = {f"record_{name}": ("record", np.array([r[name] for _, _, r in rows]))
                for name in _KEPT}
        data["record_message"] = ("record", np.array([str(r["message"]) for _, _, r in rows],
                                                     dtype=object))
        data["record_signature"] = (("record", "coefficient"),
                                    np.stack([np.asarray(r["signature"], dtype=float)
                                              for _, _, r in rows]))
        data["record_sweep"] = ("record", np.array([p["sweep"] for p, _, _ in rows],
                                                   dtype=object))
        data["record_member_index"] = ("record", np.array([p.get("index", -1)
                                                           for p, _, _ in rows]))
        data["record_position"] = ("record", np.array([i for _, i, _ in rows]))
        return xr.Dataset(data)

    def restore(self, ckpt: xr.Dataset) -> tuple[Any, list]:
        frames: list = [None]
        if "record_sweep" not in ckpt:
            return None, frames
        members: dict[tuple[str, int], list] = {}
        for j in range(ckpt.sizes["record"]):
            key = (str(ckpt["record_sweep"].values[j]),
                   int(ckpt["record_member_index"].values[j]))
            record = {name: ckpt[f"record_{name}"].values[j][()] for name in _KEPT}
            record["message"] = str(ckpt["record_message"].values[j])
            record["signature"] = np.array(ckpt["record_signature"].values[j])
            members.setdefault(key, []).append(
                (int(ckpt["record_position"].values[j]), record))
        for params in self.members:  # (in the members' order)
            key = _key(params)
            if key in members:
                frames.append((params, [r for _, r in sorted(members[key],
                                                             key=lambda x: x[0])]))
        self._done = set(members)
        return frames[-1], frames


def run_scan(cfg: dict, out: str | Path | None = None, *, overwrite: bool = False,
             resume: bool = False, progress: bool = False,
             executor: Executor | None = None) -> xr.Dataset:
    """The scan on the run engine (``ScanTask``): written to ``out`` (None: not written,
    no checkpoint), ``resume`` goes on from ``<out>.checkpoint.nc`` without the members
    done; Ctrl-C returns the values done (``status`` -1) and keeps them in the checkpoint.

    Args:
        cfg: the config (validated here).
        out: the result path, or None.
        overwrite, resume, progress: as the entry points'.
        executor: runs the members (default: the config's ``[parallel]`` executor, closed
            afterwards).

    Raises:
        ConfigError: bad input, before any work.
        TaskFailed: a member failed (named); the others are kept in the checkpoint.
    """
    cfg = validated_config(cfg)
    plan = scan_plan(cfg)
    engine = Engine(cfg, out, overwrite=overwrite, resume=resume, progress=progress)
    own = executor is None
    executor = Executor.from_config(cfg) if own else executor
    try:
        executor.connect()  # (an unreachable scheduler fails before any work)
        task = ScanTask(cfg, plan, executor, progress)
        try:
            ds = engine.run(task)
        finally:
            task.close()
    finally:
        if own:
            executor.close()
    return ds


def scan(cfg: dict, executor: Executor | None = None, progress: bool = False
         ) -> xr.Dataset:
    """The brute-force scan of a config's ``[bifurcation]`` range (module docstring), in
    memory (``run_scan`` writes it, with checkpoints and resume).

    Args:
        cfg: the config (validated here; ``[bifurcation]`` keys parameter, start, stop,
            scan_num, scan_starts, scan_t_max, scan_tolerance, tolerance).
        executor: runs the members (default: the config's ``[parallel]`` executor, closed
            afterwards).
        progress: a tqdm bar over the members.

    Returns:
        The dataset (dims ``sweep``, ``value``); ``status`` -1 on Ctrl-C (the values done
        so far, NaN elsewhere).

    Raises:
        ConfigError: bad input, before any work.
        SolverError: a member failed (named, with its error).
    """
    return run_scan(cfg, None, progress=progress, executor=executor)


def _dataset(cfg: dict, plan: ScanPlan, table: dict) -> xr.Dataset:
    """The dataset of the records ``table[sweep, i]`` (``MISSING`` where there is none)."""
    sweeps, n = plan.sweeps, len(plan.values)
    table = {(s, i): table.get((s, i), MISSING) for s in sweeps for i in range(n)}
    data = {}
    for name in VARIABLES:
        data[name] = (("sweep", "value"),
                      np.array([[table[s, i][name] for i in range(n)] for s in sweeps]))
    up = [table["up", i] for i in range(n)]
    down = [table["down", i] for i in range(n)]
    bistable = np.array([_distinct(a, b) for a, b in zip(up, down)], dtype=bool)
    data["bistable"] = (("value",), bistable)
    values = np.array(plan.values)
    m = cfg["model"]
    kappa = values if plan.parameter == "kappa" else np.full(n, float(m["kappa"]))
    beta = values if plan.parameter == "beta" else np.full(n, float(m["beta"]))
    flagged = values[bistable]
    messages = [f"{s} at {plan.parameter} = {plan.values[i]:.6g}: {table[s, i]['message']}"
                for s in sweeps for i in range(n) if table[s, i]["message"]]
    unsteady = sum(1 for s in sweeps for i in range(n)
                   if not math.isfinite(table[s, i]["steady_time"]))
    value = model_value(cfg)
    geometry = cfg["domain"]["geometry"]
    dim = int(cfg["domain"]["dim"]) if geometry == "zonal" else None
    kc = (critical_kappa(geometry, float(m["beta"]), m["normalized"], 1, value, dim)
          if plan.parameter == "kappa" else math.nan)
    summary = (f"{len(sweeps) * n} states; {unsteady} did not reach ||F|| < "
               f"{plan.tolerance:g} by t = {plan.t_max:g}; "
               + (f"bistable for {plan.parameter} in [{flagged.min():.6g}, "
                  f"{flagged.max():.6g}]" if flagged.size else "no bistability"))
    attrs = {"kind": "bifurcation", "mode": "scan", "parameter": plan.parameter,
             "kappa_c": kc, "value": value, "scan_tolerance": plan.tolerance,
             "polish_tolerance": plan.polish_tol, "scan_t_max": plan.t_max,
             "bistable_low": float(flagged.min()) if flagged.size else math.nan,
             "bistable_high": float(flagged.max()) if flagged.size else math.nan,
             **({} if dim is None else {"dim": dim})}
    ds = assemble(data, {"sweep": list(sweeps), "value": values, "kappa": ("value", kappa),
                         "beta": ("value", beta)}, attrs, {})
    stamp(ds, "bifurcation", cfg, 0, "; ".join([summary, *messages]))
    ds["steady_time"].attrs["description"] = "time at which ||F|| < scan_tolerance"
    ds["residual"].attrs["description"] = "||F|| of the Newton-polished state"
    ds["bistable"].attrs["description"] = ("the up and down sweeps end on different "
                                           "stable states (hysteresis)")
    return ds


def _distinct(a: dict, b: dict) -> bool:
    """Both stable and polished, and different states (module docstring)."""
    if not (a["stable"] and b["stable"]):
        return False
    sa, sb = a["signature"], b["signature"]
    if sa is None or sb is None:
        return False
    if not (np.all(np.isfinite(sa)) and np.all(np.isfinite(sb))):
        return False
    return bool(np.max(np.abs(sa - sb)) > DISTINCT_RTOL)
