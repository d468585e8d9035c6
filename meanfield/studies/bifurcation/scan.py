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
and on a cluster.

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

import copy
import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from meanfield import config as cfgmod
from meanfield.discretizations.base import Discretization, model_value
from meanfield.errors import ConfigError, SolverError
from meanfield.runs.engine import Engine, stamp
from meanfield.runs.executor import Executor
from meanfield.studies.members import MemberStudy
from meanfield.studies.bifurcation.spectral_state import RealView, check_spectral
from meanfield.studies.bifurcation.stationary import order_parameter, stationary_state
from meanfield.studies.bifurcation.stationary_linear import critical_kappa, stability
from solvers.steppers import integrate

STARTS = ("uniform", "clustered")
DIRECTIONS = ("up", "down")
PARAMETERS = ("kappa", "beta")
# Defaults of the scan's keys of [bifurcation] (the section's validator may fill them).
SCAN_DEFAULTS = {"scan_num": 41, "scan_starts": ["uniform", "clustered"],
                 "scan_t_max": 2000.0, "scan_tolerance": 1e-9, "tolerance": 1e-10}
PERTURBATION = 1e-3  # relative amplitude of the mode-1 perturbation of the uniform start
CONCENTRATION = 5.0  # of the clustered start
POLISH_TOL = 1e-10  # Newton's tolerance at most: the polished state is stationary to this
UNIFORM_SNAP = 1e-6  # modes below this fraction of the mean: polished from the uniform
DISTINCT_RTOL = 1e-6  # spectra differing by more than this: different states
AUTO_DT = 0.1  # the fixed step of time.dt = "auto" (halved on failure)
HALVINGS = 6


# --- the plan ------------------------------------------------------------------------
def _validated(cfg: dict) -> dict:
    """The config validated; should the registry not know ``[bifurcation]``, the other
    sections validated and it kept as given."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"a config must be a dict of sections, got {type(cfg).__name__}")
    section = cfg.get("bifurcation")
    if section is not None and not isinstance(section, dict):
        raise ConfigError("[bifurcation] must be a table of keys", "bifurcation")
    if "bifurcation" in cfgmod.SECTIONS:
        # (no task: a config the study validated already holds every section)
        out = cfgmod.validate(cfg)
    else:  # (until the section is registered)
        out = cfgmod.validate({k: v for k, v in cfg.items() if k != "bifurcation"})
        out["bifurcation"] = copy.deepcopy(section or {})
    return out


def _number(key: str, value, *, positive: bool = False, minimum: float | None = None
            ) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value):
        raise ConfigError(f"bifurcation.{key} = {value!r} must be a finite number",
                          f"bifurcation.{key}")
    if positive and value <= 0:
        raise ConfigError(f"bifurcation.{key} = {value!r} must be > 0", f"bifurcation.{key}")
    if minimum is not None and value < minimum:
        raise ConfigError(f"bifurcation.{key} = {value!r} must be >= {minimum:g}",
                          f"bifurcation.{key}")
    return float(value)


@dataclass(frozen=True)
class ScanPlan:
    """What a scan does (checked before any work)."""

    parameter: str
    values: tuple[float, ...]
    starts: tuple[str, ...]
    t_max: float
    tolerance: float
    polish_tol: float
    dt: float | None  # None: AUTO_DT, halved on failure

    @property
    def sweeps(self) -> tuple[str, ...]:
        return (*self.starts, *DIRECTIONS)


def scan_plan(cfg: dict) -> ScanPlan:
    """The scan of a validated config (``_validated``); ConfigError on bad input."""
    b = {**SCAN_DEFAULTS, **{k: v for k, v in cfg["bifurcation"].items() if v is not None}}
    parameter = b.get("parameter", "kappa")
    if parameter not in PARAMETERS:
        raise ConfigError(f"bifurcation.parameter = {parameter!r} must be one of "
                          f"{', '.join(map(repr, PARAMETERS))}", "bifurcation.parameter")
    for key in ("start", "stop"):
        if key not in b:
            raise ConfigError(f"bifurcation.{key} is required (the {parameter} range)",
                              f"bifurcation.{key}")
    positive = parameter == "kappa"
    start = _number("start", b["start"], positive=positive, minimum=0.0)
    stop = _number("stop", b["stop"], positive=positive, minimum=0.0)
    if not stop > start:
        raise ConfigError(f"bifurcation.start = {start:g}, stop = {stop:g}: the range must "
                          "be increasing and not empty (give start < stop; the scan sweeps "
                          "both ways)", "bifurcation.stop")
    num = b["scan_num"]
    if isinstance(num, bool) or not isinstance(num, int) or num < 2:
        raise ConfigError(f"bifurcation.scan_num = {num!r} must be an integer >= 2",
                          "bifurcation.scan_num")
    starts = b["scan_starts"]
    if not isinstance(starts, (list, tuple)) or not starts:
        raise ConfigError(f"bifurcation.scan_starts = {starts!r} must be a non-empty list of "
                          f"{', '.join(map(repr, STARTS))}", "bifurcation.scan_starts")
    for i, s in enumerate(starts):
        if s not in STARTS:
            raise ConfigError(f"bifurcation.scan_starts[{i}] = {s!r} is not a start; use "
                              f"{', '.join(map(repr, STARTS))}", "bifurcation.scan_starts")
    if len(set(starts)) != len(starts):
        raise ConfigError(f"bifurcation.scan_starts = {starts!r} names a start twice",
                          "bifurcation.scan_starts")
    t_max = _number("scan_t_max", b["scan_t_max"], positive=True)
    tolerance = _number("scan_tolerance", b["scan_tolerance"], positive=True)
    newton = _number("tolerance", b["tolerance"], positive=True)
    if parameter == "beta" and not cfg["model"]["normalized"] \
            and stop > cfgmod.MAX_USA_BETA:
        raise ConfigError(f"bifurcation.stop = {stop:g}: the USA velocity overflows beyond "
                          f"beta = {cfgmod.MAX_USA_BETA:g}", "bifurcation.stop")
    if not math.isfinite(cfg["model"]["kappa"]) and parameter == "beta":
        raise ConfigError("a scan in beta needs noise: give model.kappa (stationary states "
                          "of the noisy model)", "model.kappa")
    if cfg["discretization"]["method"] != "spectral":
        raise ConfigError("the scan polishes its states by Newton on the spectral "
                          "discretization: give discretization.method = \"spectral\"",
                          "discretization.method")
    cfgmod.check_pde_dim(cfg)
    # the resolution must carry the kernel at the largest beta (before any work)
    top_beta = stop if parameter == "beta" else cfg["model"]["beta"]
    Discretization.from_name(cfg["domain"]["geometry"], "spectral").check_resolution(
        cfg["discretization"]["resolution"], top_beta)
    values = tuple(float(v) for v in np.linspace(start, stop, num))
    dt = cfg["time"]["dt"]
    return ScanPlan(parameter, values, tuple(starts), t_max, tolerance,
                    min(newton, POLISH_TOL), None if dt == "auto" else float(dt))


# --- one steady state ---------------------------------------------------------------------
class _Steady(Exception):
    """Raised from the step check when the residual is below the tolerance."""

    def __init__(self, t: float, u: np.ndarray, norm: float):
        super().__init__()
        self.t, self.u, self.norm = t, u, norm


@dataclass
class SteadyResult:
    """A time integration to steady state.

    Attributes:
        state: the last state.
        time: when ``||F|| < tolerance`` (NaN if ``t_max`` came first).
        residual: ``||F(state)||``.
        steps: accepted steps.
    """

    state: np.ndarray
    time: float
    residual: float
    steps: int


def residual_norm(disc, u: np.ndarray, view: RealView | None = None) -> float:
    """``||F(u)||``: the 2-norm over the real components that change the density (as
    ``stationary_state`` reports it)."""
    view = view if view is not None else RealView(disc, u)
    return float(np.linalg.norm(view.to_real(disc.residual(u))))


def steady_state(disc, u0: np.ndarray, tolerance: float, t_max: float,
                 view: RealView | None = None) -> SteadyResult:
    """Integrate ``u0`` with the discretization's stepper until ``||F(u)|| < tolerance``
    (checked after every accepted step) or ``t = t_max``.

    Args:
        disc: the spectral discretization at the wanted parameters.
        u0: the start (state).
        tolerance: on ``residual_norm``.
        t_max: the time limit.
        view: the ``RealView`` of ``disc`` (made here if None).

    Raises:
        SolverError: the run became unstable (``disc.check``) or its step underflowed.
    """
    view = view if view is not None else RealView(disc, u0)
    steps = 0
    norm0 = residual_norm(disc, u0, view)
    if norm0 < tolerance:
        return SteadyResult(np.array(u0), 0.0, norm0, 0)

    def check(u: np.ndarray, t: float) -> None:
        nonlocal steps
        steps += 1
        disc.check(u, t)
        norm = residual_norm(disc, u, view)
        if norm < tolerance:
            raise _Steady(t, u, norm)

    saved = {}

    def on_save(t: float, u: np.ndarray, h: float) -> None:
        saved["u"] = u

    try:
        res = integrate(disc.stepper(), np.array(u0), 0.0, np.array([t_max]),
                        disc.first_step(t_max), on_save=on_save, check=check,
                        h_min=1e-14 * t_max,
                        underflow_advice="raise discretization.resolution or loosen "
                                         "time.tolerance")
    except _Steady as done:
        return SteadyResult(np.array(done.u), float(done.t), done.norm, steps)
    if res.status == -1:
        raise KeyboardInterrupt
    u = saved["u"]
    return SteadyResult(np.array(u), math.nan, residual_norm(disc, u, view), steps)


# --- starts and members ----------------------------------------------------------------
def _start_state(disc, name: str) -> np.ndarray:
    """The state of a named start (module docstring). The clustered density is taken on
    the grid as it is (not checked for resolution like an ``[initial]`` table: it is only
    a start, and its truncated modes are never seen by the steady state)."""
    if name == "uniform":
        initial = ({"kind": "perturbed", "mode": 1, "amplitude": PERTURBATION}
                   if disc.geometry == "circle" else
                   {"kind": "perturbed", "degree": 1, "order": 0, "amplitude": PERTURBATION})
        dim = 2 if disc.geometry == "circle" else 3
        initial = cfgmod.validate_initial(initial, disc.geometry, dim)
        return np.asarray(disc.to_state(disc.initial_density(initial)))
    grid = disc.grid
    axis = grid.points[..., 0] if disc.geometry == "circle" else grid.points[..., -1]
    rho = np.exp(CONCENTRATION * (axis - 1.0))  # about theta = 0 / +z
    rho = rho / float(grid.integrate(rho))
    return np.asarray(disc.to_state(rho))


def _kick(disc) -> np.ndarray:
    """The mode-1 perturbation of the uniform start (its state less the uniform one)."""
    uniform = np.asarray(disc.to_state(np.full(disc.grid.shape, _uniform_value(disc))))
    return _start_state(disc, "uniform") - uniform


def _kicked(disc, u: np.ndarray, kick: np.ndarray) -> np.ndarray:
    """The state ``u`` times ``1 + f`` (``f = kick / uniform``: ``PERTURBATION`` times the
    mode-1 profile), renormalised to mass 1. At the uniform state this is ``u + kick``;
    elsewhere it stays positive where ``u`` is, whereas ``u + kick`` went negative on
    concentrated states (noisy Kuramoto from kappa = 5 on, where the density's minimum,
    1.3e-4 at kappa = 5, is below the kick's 1.6e-4), and the sweep stopped there."""
    relative = np.asarray(disc.to_density(kick)) / _uniform_value(disc)
    rho = np.asarray(disc.to_density(u)) * (1.0 + relative)
    return np.asarray(disc.to_state(rho / float(disc.grid.integrate(rho))))


def _uniform_value(disc) -> float:
    return 1 / (2 * math.pi) if disc.geometry == "circle" else 1 / (4 * math.pi)


def spectrum_signature(disc, u: np.ndarray) -> np.ndarray:
    """A rotation-invariant description of a state, relative to its mean coefficient:
    ``|c_k|`` (S^1) or the root power per degree (S^2)."""
    u = np.asarray(u)
    mean = abs(u.flat[0])
    if disc.geometry == "circle":
        return np.abs(u) / mean
    grid = disc.grid
    weight = np.where(grid.m == 0, 1.0, 2.0)  # (m > 0 stands for +-m)
    power = np.bincount(grid.l, weights=weight * np.abs(u) ** 2, minlength=grid.lmax + 1)
    return np.sqrt(power) / mean


def _near_uniform(disc, u: np.ndarray) -> bool:
    return float(np.max(spectrum_signature(disc, u)[1:])) < UNIFORM_SNAP


def _member_disc(cfg: dict, dt: float):
    """The member's discretization with fixed steps ``dt`` (one FFT thread: the same
    numbers everywhere)."""
    cfg = {**cfg, "time": {**cfg["time"], "dt": float(dt), "save_every": float(dt)}}
    disc = Discretization.from_config(cfg, threads=1)
    check_spectral(disc)
    # (not finite volumes, which the bifurcation study refuses)
    disc.other_method = "give a smaller time.dt (the scan's fixed step)"
    return disc


def _set(disc, parameter: str, value: float) -> None:
    disc.set_parameters(**{parameter: value})


def _point(disc, u0: np.ndarray, plan: ScanPlan, view: RealView) -> tuple[dict, np.ndarray]:
    """One value: integrate, polish, classify. Returns the record and the state to go on
    from (polished if Newton converged, else the integrated one)."""
    halvings = 0
    while True:
        try:
            steady = steady_state(disc, u0, plan.tolerance, plan.t_max, view)
            break
        except SolverError:  # (StepSizeError is one)
            if plan.dt is not None or halvings == HALVINGS:
                raise
            halvings += 1
            disc.scheme.dt = disc.scheme.dt / 2  # (kept for the values after this one)
    u_end = steady.state
    record = {"steady_time": steady.time, "residual_unpolished": steady.residual,
              "order_parameter_unpolished": order_parameter(disc, u_end), "steps": steady.steps}
    guess = (np.asarray(disc.to_state(np.full(disc.grid.shape, _uniform_value(disc))))
             if _near_uniform(disc, u_end) else u_end)
    polished = stationary_state(disc, guess, tol=plan.polish_tol)
    nan = math.nan
    if polished.converged:
        stab = stability(disc, polished.state)
        record.update(order_parameter=polished.order_parameter,
                      free_energy=polished.free_energy, stable=stab.stable,
                      leading_eigenvalue=stab.leading, mode=polished.mode,
                      residual=polished.residual_norm,
                      converged=math.isfinite(steady.time), message="")
        signature = spectrum_signature(disc, polished.state)
        nxt = polished.state
    else:
        record.update(order_parameter=nan, free_energy=nan, stable=False,
                      leading_eigenvalue=nan, mode=-1, residual=polished.residual_norm,
                      converged=False, message=polished.message)
        signature = np.full(np.shape(spectrum_signature(disc, u_end)), nan)
        nxt = u_end
    record["signature"] = signature
    return record, nxt


def run_member(cfg: dict, plan: ScanPlan, params: dict) -> list[dict]:
    """One member (``params``: ``sweep`` and, for an independent start, ``index``): the
    records of its values, in the order of ``plan.values``."""
    disc = _member_disc(cfg, plan.dt or AUTO_DT)
    sweep = params["sweep"]
    if sweep in STARTS:
        value = plan.values[params["index"]]
        _set(disc, plan.parameter, value)
        u0 = _start_state(disc, sweep)
        record, _ = _point(disc, u0, plan, RealView(disc, u0))
        return [record]
    order = range(len(plan.values)) if sweep == "up" else range(len(plan.values))[::-1]
    records: dict[int, dict] = {}
    u = None
    kick = None
    view = None
    for i in order:
        _set(disc, plan.parameter, plan.values[i])
        if u is None:
            u = _start_state(disc, "uniform" if sweep == "up" else "clustered")
            kick = _kick(disc)
            view = RealView(disc, u)
        else:
            u = _kicked(disc, u, kick)
        records[i], u = _point(disc, u, plan, view)
    return [records[i] for i in range(len(plan.values))]


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
    cfg = _validated(cfg)
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
    kc = (critical_kappa(cfg["domain"]["geometry"], float(m["beta"]), m["normalized"], 1,
                         value)
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
             }
    ds = xr.Dataset(data, coords={"sweep": list(sweeps), "value": values,
                                  "kappa": ("value", kappa), "beta": ("value", beta)},
                    attrs=attrs)
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
