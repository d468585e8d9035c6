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
from meanfield.discretizations.base import Discretization
from meanfield.errors import ConfigError
from meanfield.runs.pde_steps import DenseRun
from meanfield.studies.transport import contraction_reference as ref
from meanfield.studies.transport.convergence import frame_dataset
from solvers.steppers import integrate

ADVICE = ("the solution is not resolved; loosen discretization.accuracy or time.tolerance, "
          "or use contraction.pde = \"characteristics\" (S^1 without noise)")


LABELS_AGREE = 1e-6  # the labels' W_2 at t = 0 within this of the grid's, or no continuation


class _Stopped(Exception):
    """``stop(state)`` was true: the source ends at this save."""


def _measurable(solver, u: np.ndarray, t: float) -> None:
    """``ResolutionLimit`` for a saved state the W_2 measures refuse: an undershoot the
    run's accuracy allows (``time.tolerance``, ``discretization.accuracy`` above 1e-6)
    but beyond the 1e-6 of the max they take (``circle_measures.NEGATIVE_RTOL``)."""
    from meanfield.metrics.circle_measures import NEGATIVE_RTOL

    rho = solver.to_density(u)
    if float(rho.min()) < -NEGATIVE_RTOL * float(np.abs(rho).max()):
        raise ResolutionLimit(f"the density at t = {t:.6g} undershoots by more than the "
                              f"{NEGATIVE_RTOL:g} of its max that W_2 takes")


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
                _measurable(solver, u, t)
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
        _measurable(run.solver, value, float(t))
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
    ``grid_share(x)`` of the unit vector x), the labels' after; None when the labels do
    not carry the start (their W_2 at t = 0 not within ``LABELS_AGREE`` of the grid's)."""
    from meanfield.initial.circle import density_function

    times = plan["times"]
    sol = ref.label_solution(density_function(cfg["initial"]), times, beta,
                             cfg["model"]["normalized"])
    distance, share = ref.distances_to(sol["theta"], sol["mass"], sol["limit"])
    x_inf = np.array([math.cos(sol["limit"]), math.sin(sol["limit"])])
    distance, share = np.array(distance, dtype=float), np.array(share, dtype=float)
    grid = np.asarray(grid_distance(x_inf), dtype=float)
    # the labels' quadrature (spacing 0.4 rad at the centre) must carry the start as the
    # grid does: a concentrated start (von Mises 30: 0.159 against 0.184) is not carried
    if abs(distance[0] / grid[0] - 1) > LABELS_AGREE:
        return None
    distance[:done] = grid
    share[:done] = grid_share(x_inf)
    return {"distance": distance, "far_share": share, "continued": 1.0}


def check_sphere_transport(cfg: dict, noisy: bool) -> None:
    """On S^2 the distances that are transport problems (tokens against a stationary
    density, two non-zonal densities, two token sets) must fit in memory."""
    from meanfield.metrics import sphere_transport as st
    from meanfield.metrics.sphere_zonal import is_zonal

    c = cfg["contraction"]
    solver = Discretization.from_config(cfg, threads=1)
    atoms = int(np.prod(solver.grid.shape))
    n = cfg["particles"]["n"] or 0
    problems = []
    if "particles" in c["sources"]:
        if noisy:
            problems.append((n, atoms, "particles.n", ("the tokens against the stationary "
                             f"density's {atoms} grid nodes")))
        if c["other"] is not None:
            problems.append((n, n, "particles.n", "the two token sets"))
    if "pde" in c["sources"] and c["other"] is not None:
        frames = [frame_dataset(solver, solver.to_state(solver.initial_density(i)))
                  for i in (cfg["initial"], c["other"])]
        if not (solver.method == "spectral" and all(is_zonal(f) for f in frames)):
            problems.append((atoms, atoms, "contraction.other", ("two densities that are "
                             f"not both zonal about the pole, as {atoms} atoms each")))
    for a, b, key, what in problems:
        need = st.dense_memory(a, b, st.EMD_COPIES)
        if need > st.MEMORY_LIMIT_BYTES:
            raise ConfigError(f"{key}: the exact transport of {what} needs about "
                              f"{need / 2**30:.1f} GiB (limit "
                              f"{st.MEMORY_LIMIT_BYTES / 2**30:.0f}); use fewer tokens, a "
                              "smaller discretization.resolution, or zonal densities", key)
