"""``evolve(config)``: solve the mean-field PDE and return an ``xarray.Dataset``.

The run is validated before any work (``ConfigError``), then stepped through the save
times ``0, save_every, 2 save_every, ..., t_final`` by the run engine
(``meanfield.runs.engine``): with an output path, the frames go to disk as the run goes
(part files ``<path>.frames/``, ``meanfield.runs.frames``), and a checkpoint
``<path>.checkpoint.nc`` (the solver state, its time, its next step size and the number
of frames saved) is written every ``output.checkpoint_every`` seconds of wall time
(between save times too) and on Ctrl-C; ``resume=True`` continues from it and gives the
same numbers as an uninterrupted run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from meanfield import config as cfgmod
from meanfield.discretizations.adaptive import with_resolution
from meanfield.discretizations.base import Discretization, SpectralDiscretization, model_value
from meanfield.errors import SolverError
from meanfield.runs import budget
from meanfield.runs import threads as thread_policy
from meanfield.runs.engine import Engine, StepHook, SteppingTask, TaskFailed
from meanfield.runs.pde_dataset import to_dataset
from meanfield.runs.pde_steps import DenseRun, Stepping
from solvers.steppers import integrate

UNDERFLOW_ADVICE = ("the solution is not resolved; raise discretization.resolution, loosen "
                    "time.tolerance or use method = \"finite-volume\"")


@dataclass
class PdeState:
    """The solver state: ``u`` (coefficients or cell values), the next step ``h``, the
    density itself where it is known exactly (the initial one), and the time ``t`` of a
    state in the middle of an interval (None: at the save before)."""

    u: np.ndarray
    h: float
    density: np.ndarray | None = None
    t: float | None = None
    # adaptive spectral runs (meanfield.runs.pde_steps): where the steps are, and the
    # state at the save point (the steps go on past it)
    stepping: Stepping | None = None
    value: np.ndarray | None = None


def run_config(cfg: dict, threads: int | None = None) -> dict:
    """The config with ``resolution = "auto"`` replaced by the first resolution of the
    run (for the budget and the threads; the run itself raises it as it needs)."""
    disc = cfg["discretization"]
    if disc["resolution"] != "auto":
        return cfg
    cls = Discretization.from_name(cfg["domain"]["geometry"], disc["method"])
    return with_resolution(cfg, cls.auto_resolution(cfg, threads))


class EvolveTask(SteppingTask):
    """The PDE of one config on the run engine."""

    kind = "evolve"

    def __init__(self, cfg: dict, threads: int | None = None):
        super().__init__(cfg)
        cfgmod.check_pde_dim(cfg)
        if threads is None:
            threads = thread_policy.current().pde_threads(run_config(cfg))
        self.solver = Discretization.from_config(cfg, threads)
        # the output grid: the first one (an "auto" run's solver may move to finer ones)
        self.grid, self.model = self.solver.grid, self.solver.model
        self.rho0 = self.solver.initial_density(cfg["initial"])
        self.steps = 0
        self.dense = None
        if isinstance(self.solver, SpectralDiscretization) and self.solver.adaptive:
            self.dense = DenseRun(self.solver, float(self.times[-1]),
                                  1e-14 * float(self.times[-1]), UNDERFLOW_ADVICE)
        else:
            self.stepper = self.solver.stepper()

    def start(self) -> PdeState:
        u = self.solver.to_state(self.rho0)
        h = self.solver.first_step(self.cfg["time"]["t_final"])
        if self.dense is not None:
            return PdeState(u, h, self.rho0.copy(), stepping=self.dense.start(u, h))
        return PdeState(u, h, self.rho0.copy())

    def advance(self, state: PdeState, point: float, on_step: StepHook) -> PdeState:
        if self.dense is not None:
            return self._advance_dense(state, point, on_step)
        saved = {}

        def on_save(t: float, u: np.ndarray, h_next: float) -> None:
            saved.update(u=u.copy(), h=h_next)

        def on_state(t: float, u: np.ndarray, h: float) -> None:
            on_step.midway(lambda: PdeState(u.copy(), h, t=t))

        t0 = state.t if state.t is not None else \
            float(self.times[np.searchsorted(self.times, point) - 1])
        res = integrate(self.stepper, state.u, t0, np.array([point]), state.h,
                        on_save=on_save, check=self.solver.check, on_step=on_step,
                        on_state=on_state, h_min=1e-14 * float(self.times[-1]),
                        underflow_advice=UNDERFLOW_ADVICE)
        self.steps += res.steps
        if res.status == -1:
            raise KeyboardInterrupt
        return PdeState(saved["u"], saved["h"])

    def _advance_dense(self, state: PdeState, point: float, on_step: StepHook) -> PdeState:
        """Steps that do not depend on the saves; the save from the continuous extension
        (``meanfield.runs.pde_steps``)."""
        def on_state(st: Stepping) -> None:
            on_step.midway(lambda: PdeState(st.u, st.h, t=st.t, stepping=st))

        before = self.dense.steps
        try:
            st, value = self.dense.advance(state.stepping, point, on_step, on_state)
        finally:
            self.steps += self.dense.steps - before
            self.solver = self.dense.solver
        return PdeState(st.u, st.h, t=st.t, stepping=st, value=value)

    def frame(self, state: PdeState) -> tuple[np.ndarray, dict]:
        solver = self.solver
        u = state.value if state.value is not None else state.u
        if state.density is not None:
            rho = state.density
        else:
            rho = solver.to_density(u)
        diags = solver.diagnostics(u, rho)
        pointwise = getattr(solver, "_pointwise", None)
        diags["min_density"] = float(np.min(pointwise(u) if pointwise is not None else rho))
        if getattr(solver, "auto", False):
            diags["resolution"] = solver.resolution
            if solver.grid is not self.grid:  # the values at the output grid's nodes
                rho = solver.output_values(u, self.grid)
        return rho, diags

    def dataset(self, frames: list, info: dict, start: int = 0) -> xr.Dataset:
        return to_dataset(self.cfg, self.grid, list(self.times[start:start + len(frames)]),
                          [f[0] for f in frames], [f[1] for f in frames], info)

    def info(self) -> dict:
        return {"steps": self.steps}

    def state_vars(self, state: PdeState) -> tuple[dict, dict]:
        st = state.stepping
        u = np.asarray(state.u if st is None else st.u)
        data = {"checkpoint_state_real": (("state",), np.real(u).astype(float)),
                "checkpoint_state_imag": (("state",), np.imag(u).astype(float))}
        attrs = {"checkpoint_h": float(state.h), "checkpoint_complex": int(np.iscomplexobj(u))}
        if state.t is not None:  # in the middle of an interval
            attrs["checkpoint_t"] = float(state.t)
        if st is not None:  # the step before (the saves inside it) and the resolution
            attrs.update(checkpoint_t=float(st.t), checkpoint_resolution=int(st.resolution),
                         checkpoint_prev_t=float(st.prev_t),
                         checkpoint_prev_h=float(st.prev_h))
            if st.prev is not None:
                data["checkpoint_prev_real"] = (("state",), np.real(st.prev).astype(float))
                data["checkpoint_prev_imag"] = (("state",), np.imag(st.prev).astype(float))
        return data, attrs

    def restore_state(self, ckpt: xr.Dataset, frames: int) -> PdeState:
        def read(name: str) -> np.ndarray:
            u = ckpt[f"checkpoint_{name}_real"].values
            return u + 1j * ckpt[f"checkpoint_{name}_imag"].values \
                if ckpt.attrs["checkpoint_complex"] else u

        u, attrs = read("state"), ckpt.attrs
        t = attrs.get("checkpoint_t")
        if self.dense is None or "checkpoint_resolution" not in attrs:
            return PdeState(u, float(attrs["checkpoint_h"]),
                            t=None if t is None else float(t))
        res = int(attrs["checkpoint_resolution"])
        self.dense.at_resolution(res)
        self.solver = self.dense.solver
        prev = read("prev") if "checkpoint_prev_real" in ckpt else None
        st = Stepping(u, float(t), float(attrs["checkpoint_h"]), res, prev,
                      float(attrs["checkpoint_prev_t"]), float(attrs["checkpoint_prev_h"]))
        return PdeState(u, st.h, t=st.t, stepping=st)


def evolve(config: dict | None = None, *, out: str | Path | None = None,
           overwrite: bool = False, resume: bool = False, progress: bool = False,
           threads: int | None = None) -> xr.Dataset:
    """Solve the Fokker-Planck / continuity equation for one config.

    ``[weights] value = c`` (the value matrix ``V = c I``; ``query`` and ``key`` the
    identity) multiplies the velocity by c (``c < 0``: repulsive); other weights, several
    heads or a ``[feedforward]`` are refused (ConfigError): the PDE has no other form.

    Args:
        config: the config (dict of sections; see ``meanfield.config``), validated here.
        out: where to write the netCDF result (default ``output.path``; none: not written).
        overwrite: replace an existing result.
        resume: continue from ``<out>.checkpoint.nc`` if it exists.
        progress: show a tqdm progress bar.
        threads: FFT threads (default: ``discretization.threads``, else the thread
            policy's, ``meanfield.runs.threads``).

    Returns:
        The result dataset; ``attrs["status"]`` is 0 when finished and -1 when interrupted
        by Ctrl-C (then it holds the frames computed so far, also kept on disk with the
        checkpoint). With an output path whose frames went to part files, it is opened
        lazily from the written result (or from the parts, interrupted): values are read
        when used, ``.load()`` gives numpy arrays; without one it is in memory.

    Raises:
        ConfigError: bad input, before any time stepping.
        SolverError: the run became unstable; the message says what to change.
    """
    cfg = cfgmod.validate(config)
    cfgmod.check_pde_dim(cfg)
    value = model_value(cfg)  # weights other than V = c I: refused before any work
    out = out if out is not None else cfg["output"]["path"]
    # too big for this machine: refused before any work (frames on disk with an output)
    budget.check(run_config(cfg), "evolve", streamed=out is not None, out=out)
    engine = Engine(cfg, out, overwrite=overwrite, resume=resume, progress=progress)
    try:
        return engine.run(EvolveTask(cfg, threads))
    except SolverError as exc:
        if abs(value) <= 1.0 or isinstance(exc, TaskFailed):
            raise
        # |c| > 1 speeds the flow up: say so first (the solver's own advice, resolution
        # or steps, assumes the flow it was given; issue 31: value = 1e300 named none)
        t_final = cfg["time"]["t_final"]
        raise SolverError(f"weights.value = {value:g} multiplies the velocity: this run to "
                          f"time.t_final = {t_final:g} is the V = "
                          f"{math.copysign(1, value):g} I flow to t = "
                          f"{abs(value) * t_final:.3g}; lower weights.value (or "
                          f"time.t_final) first. The solver: {exc}") from None
