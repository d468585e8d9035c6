"""One member of the bifurcation scan (``meanfield.studies.bifurcation.scan``, whose
module docstring says what a member does): the named starts, the kick between the values
of a sweep, and one value integrated to a steady state, polished by Newton and
classified. A member builds its own discretization with one FFT thread, so its numbers
are the same serially and on a cluster."""
from __future__ import annotations

import math

import numpy as np
from scipy import optimize

from meanfield import config as cfgmod
from meanfield.discretizations.base import Discretization
from meanfield.errors import SolverError
from meanfield.model.zonal_kernels import log_bessel_orders
from meanfield.studies.bifurcation.noisy_kuramoto import mean_alignment
from meanfield.studies.bifurcation.scan_plan import STARTS, ScanPlan
from meanfield.studies.bifurcation.spectral_state import (
    RealView,
    check_spectral,
    moment_weights,
)
from meanfield.studies.bifurcation.stationary import order_parameter, stationary_state
from meanfield.studies.bifurcation.stationary_linear import area, stability
from meanfield.studies.bifurcation.steady_state import steady_state

PERTURBATION = 1e-3  # relative amplitude of the mode-1 perturbation of the uniform start
CONCENTRATION = 5.0  # of the clustered start on S^1 and S^2 (S^{d-1}: zonal_concentration)
START_TAIL = 1e-10  # the zonal clustered start's moments over the top quarter, at most
ZONAL_START_R = 0.6  # the zonal clustered start's order parameter for d > 3
UNIFORM_SNAP = 1e-6  # modes below this fraction of the mean: polished from the uniform
AUTO_DT = 0.1  # the fixed step of time.dt = "auto" (halved on failure)
HALVINGS = 6


def _start_state(disc, name: str) -> np.ndarray:
    """The state of a named start (module docstring). The clustered density is taken on
    the grid as it is (not checked for resolution like an ``[initial]`` table: it is only
    a start, and its truncated modes are never seen by the steady state)."""
    if name == "uniform":
        initial = {"circle": {"kind": "perturbed", "mode": 1, "amplitude": PERTURBATION},
                   "sphere": {"kind": "perturbed", "degree": 1, "order": 0,
                              "amplitude": PERTURBATION},
                   "zonal": {"kind": "perturbed", "degree": 1, "amplitude": PERTURBATION},
                   }[disc.geometry]
        dim = {"circle": 2, "sphere": 3}.get(disc.geometry, getattr(disc, "dim", 3))
        initial = cfgmod.validate_initial(initial, disc.geometry, dim)
        return np.asarray(disc.to_state(disc.initial_density(initial)))
    grid = disc.grid
    # about theta = 0 (S^1, and t = <x, e> = 1 on the zonal geometry) or +z (S^2)
    axis = grid.points[..., -1] if disc.geometry == "sphere" else grid.points[..., 0]
    concentration = (zonal_concentration(grid.dim, grid.lmax) if disc.geometry == "zonal"
                     else CONCENTRATION)
    rho = np.exp(concentration * (axis - 1.0))
    rho = rho / float(grid.integrate(rho))
    return np.asarray(disc.to_state(rho))


def zonal_concentration(dim: int, lmax: int) -> float:
    """The clustered start's concentration on the zonal S^{d-1}: ``CONCENTRATION`` for d
    <= 3 (as on S^1 and S^2: r = 0.89, 0.80), else the von Mises-Fisher density whose
    order parameter is ``ZONAL_START_R`` (c ~ 0.9 d; in high d a start as clustered as
    on S^2 relaxes so fast that its transient goes negative: d = 64, kappa = 80, band
    limit 64: r = 0.75 fails in its first step, 0.62 settles in 450 steps of 0.1),
    halved until the band limit carries it (its moments ``I_{l+d/2-1}(c)/I_{d/2-1}(c)``
    over the top quarter of the degrees below ``START_TAIL``)."""
    if dim <= 3:
        c = CONCENTRATION
    else:
        c = optimize.brentq(lambda x: mean_alignment("zonal", x, dim) - ZONAL_START_R,
                            1e-3, 10.0 * dim, xtol=1e-10)
    while c > CONCENTRATION / 8:
        logs = log_bessel_orders(dim / 2 - 1, lmax + 1, c)
        if np.exp(logs[3 * lmax // 4 + 1:] - logs[0]).max() <= START_TAIL:
            break
        c /= 2
    return float(c)


def _kick(disc) -> np.ndarray:
    """The mode-1 perturbation of the uniform start (its state less the uniform one)."""
    uniform = np.asarray(disc.to_state(np.full(disc.grid.shape, _uniform_value(disc))))
    return _start_state(disc, "uniform") - uniform


def _kicked(disc, u: np.ndarray, kick: np.ndarray) -> np.ndarray:
    """The state ``u`` times ``1 + f`` (``f = kick / uniform``: ``PERTURBATION`` times the
    mode-1 profile), renormalised to mass 1. At the uniform state this is ``u + kick``;
    elsewhere it stays positive where ``u`` is, whereas ``u + kick`` went negative on
    concentrated states (noisy Kuramoto from kappa = 5 on, where the density's minimum,
    1.3e-4 at kappa = 5, is below the kick's 1.6e-4), and the sweep stopped there.
    Zonal: ``f = PERTURBATION t`` and the product is taken on the coefficients, by the
    three-term recurrence ``t Q_l = b_{l+1} Q_{l+1} + b_l Q_{l-1}`` (the degree L + 1
    dropped): on the nodes it would alias that degree onto L, 1e-3 of a top coefficient
    that grows like Q_L(1) (d = 64: the kicked state's density went negative at once)."""
    if disc.geometry == "zonal":
        from solvers.transforms.gegenbauer import recurrence

        c = np.asarray(u, dtype=float)
        b = recurrence(c.size, disc.grid.dim)  # b_0 = 0 .. b_{L+1}
        tc = np.zeros_like(c)
        tc[1:] += b[1:c.size] * c[:-1]
        tc[:-1] += b[1:c.size] * c[1:]
        out = c + PERTURBATION * tc
        return out / out[0]  # (mass c_0 = 1)
    relative = np.asarray(disc.to_density(kick)) / _uniform_value(disc)
    rho = np.asarray(disc.to_density(u)) * (1.0 + relative)
    return np.asarray(disc.to_state(rho / float(disc.grid.integrate(rho))))


def _uniform_value(disc) -> float:
    return 1 / area(disc.geometry)


def spectrum_signature(disc, u: np.ndarray) -> np.ndarray:
    """A rotation-invariant description of a state, relative to its mean coefficient:
    ``|c_k|`` (S^1), the root power per degree (S^2), the moments ``|<P_l>| = |c_l| /
    (Q_l(1) c_0)`` on the zonal geometry (its only symmetry, ``t -> -t``, keeps them; the
    coefficients themselves grow with d like ``Q_l(1)``, and so does their round-off)."""
    u = np.asarray(u)
    mean = abs(u.flat[0])
    if disc.geometry == "circle":
        return np.abs(u) / mean
    if disc.geometry == "zonal":
        return np.abs(u) * moment_weights(disc.grid.dim, u.size - 1) / mean
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
        # (zonal: the sweep goes on from the integrated state; Newton leaves the polished
        # one at the residual's round-off floor, whose negative lobes near the equator
        # carry up to 1e-5 of the mass at d = 64, which the time integration refuses)
        nxt = u_end if disc.geometry == "zonal" else polished.state
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
