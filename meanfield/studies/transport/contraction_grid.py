"""The contraction study's grid PDE source: its states at the save times, and where it
stops (docs/studies/contraction.md, "Resolution limits").

Without noise the cluster narrows like ``e^{-lambda_att t}`` and the far side empties like
``e^{-lambda_rep t}``: every grid is outgrown in the end. The source stops there, never
failing its member:

- the core narrower than the grid resolves (``stop(state)``, the study's floor of
  ``RESOLVED_SPACINGS`` spacings): the later distances are NaN, as before;
- the spectral density negative beyond what the accuracy asked for allows
  (``ResolutionLimit``, ``meanfield.discretizations.base``): the run ends with the saves
  before it, and the error (which names the resolution that would pass) is kept for the
  study's ``status`` 1 and ``message``. On S^1 without noise and without a second start the
  source then goes on along the characteristics (``contraction_reference``: the same
  initial density carried by its labels, which resolve the cluster and the far side as
  long as the run lasts): ``continue_along_labels``.

``discretization.resolution = "auto"``: the run is ``meanfield.runs.pde_steps.DenseRun``
(the grid raised as the tail of the spectrum asks, up to the largest resolution, where it
stops with ``ResolutionLimit`` as above); each state comes with the solver of its grid.
"""
from __future__ import annotations

import math

import numpy as np

from meanfield.discretizations.adaptive import ResolutionLimit
from meanfield.errors import ConfigError
from meanfield.runs.pde_steps import DenseRun
from meanfield.studies.transport import contraction_reference as ref
from solvers.steppers import integrate

ADVICE = ("the solution is not resolved; loosen discretization.accuracy or time.tolerance, "
          "or use contraction.pde = \"characteristics\" (S^1 without noise)")


class _Stopped(Exception):
    """``stop(state)`` was true: the source ends at this save."""


def grid_states(solver, state0: np.ndarray, times: np.ndarray, stop,
                limits: list | None = None) -> tuple[list, list]:
    """PDE states at ``times`` (``times[0] = 0``) and the solver of each (an "auto" run
    moves to finer grids); fewer when ``stop(solver, state)`` is true. With ``limits`` (a
    list) a run stopped by its resolution limit ends with the states saved before it and
    the ``ResolutionLimit`` is appended there; without, it is raised."""
    states, solvers = [np.array(state0)], [solver]
    if times.size < 2:
        return states, solvers
    t_final = float(times[-1])
    try:
        if getattr(solver, "auto", False):
            _dense(solver, state0, times, stop, states, solvers)
        else:
            def on_save(t: float, u: np.ndarray, h: float) -> None:
                states.append(np.array(u))
                solvers.append(solver)
                if stop is not None and stop(solver, u):
                    raise _Stopped

            res = integrate(solver.stepper(), state0, 0.0, times[1:],
                            solver.first_step(t_final), on_save=on_save, check=solver.check,
                            h_min=1e-14 * t_final)
            if res.status == -1:
                raise KeyboardInterrupt
    except _Stopped:
        pass
    except ResolutionLimit as exc:
        if limits is None:
            raise
        limits.append(exc)
    return states, solvers


def _dense(solver, state0: np.ndarray, times: np.ndarray, stop, states: list,
           solvers: list) -> None:
    """An "auto" run's saves (``DenseRun``: steps independent of the saves)."""
    t_final = float(times[-1])
    run = DenseRun(solver, t_final, 1e-14 * t_final, ADVICE)
    st = run.start(np.array(state0), solver.first_step(t_final))
    for t in times[1:]:
        st, value = run.advance(st, float(t), lambda _t: None)
        states.append(np.array(value))
        solvers.append(run.solver)
        if stop is not None and stop(run.solver, value):
            raise _Stopped


def labels_carry(cfg: dict) -> bool:
    """Whether a grid source stopped by its resolution limit can go on along the
    characteristics: S^1, no noise, no second start, and labels that fit
    (``contraction_reference.check_labels``)."""
    if cfg["domain"]["geometry"] != "circle" or not math.isinf(cfg["model"]["kappa"]):
        return False
    try:
        ref.check_labels(cfg)
    except ConfigError:
        return False
    return True


def continue_along_labels(cfg: dict, plan: dict, beta: float, done: int,
                          grid_distance, grid_share) -> dict:
    """The distances of a grid source stopped after ``done`` saves, continued along the
    characteristics: the limit point x_inf is the labels' (the grid's last state is not
    the end); the grid's ``W_2`` and far share before the stop (``grid_distance(x)``,
    ``grid_share(x)`` of the unit vector x), the labels' after."""
    from meanfield.initial.circle import density_function

    times = plan["times"]
    sol = ref.label_solution(density_function(cfg["initial"]), times, beta,
                             cfg["model"]["normalized"])
    distance, share = ref.distances_to(sol["theta"], sol["mass"], sol["limit"])
    x_inf = np.array([math.cos(sol["limit"]), math.sin(sol["limit"])])
    distance, share = np.array(distance, dtype=float), np.array(share, dtype=float)
    distance[:done] = grid_distance(x_inf)
    share[:done] = grid_share(x_inf)
    return {"distance": distance, "far_share": share}
