"""The Sznitman coupling ([Szn91]): n tokens and the nonlinear process, driven alike.

Tokens ``X_i`` follow the particle system, ``dX_i = v[mu^n_t](X_i) dt (+ sqrt(2/kappa)
dW_i)``; their partners ``Y_i`` start at the same points, ``Y_i(0) = X_i(0)``, and follow
the PDE's own velocity field, ``dY_i = v[rho_t](Y_i) dt (+ sqrt(2/kappa) dW_i)`` with the
same Brownian increments (the nonlinear, McKean-Vlasov, process). When the ``X_i(0)`` are
i.i.d. samples of ``mu_0``, the ``Y_i(t)`` are i.i.d. samples of ``mu_t`` exactly. So

- ``((1/n) sum_i d(X_i(t), Y_i(t))^p)^{1/p}`` (the coupling distance) bounds
  ``W_p(mu^n_t, nu^n_t)``, ``nu^n_t`` the empirical measure of the ``Y_i(t)``: the error
  the interaction makes;
- ``W_p(nu^n_t, mu_t)`` is the error of n exact samples (the sampling floor),

and ``W_p(mu^n_t, mu_t)`` is at most their sum. The PDE's field off the grid is
``Discretization.velocity_at`` (spectral: exact).

Time stepping: fixed steps, each interval between saves cut into equal steps of at most
``dt`` (as ``solvers.steppers.integrate_sde``). Without noise, both with RK4 and the
retraction (order 4; the Y stages at ``t, t + h/2, t + h`` use the PDE at those times,
computed once for all members, ``pde_table``); with noise, geodesic Euler-Maruyama with one
increment per token and step, drawn as a particle run draws them (the ``X`` path is the
particle run of the same seed and ``dt``, bit for bit).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from meanfield.model.tokens import noise_rng
from solvers.particles.direct import normalize_rows
from solvers.steppers import GeodesicEulerMaruyama, RetractedRK4, integrate

TIME_ROUND = 12  # decimals of the times the PDE table is keyed by
AUTO_DT = 0.05  # the token step of time.dt = "auto" (convergence and its Gaussian case)


def step_grid(save_times: np.ndarray, dt: float, t0: float = 0.0
              ) -> list[tuple[float, float, int]]:
    """``(start, h, m)`` of each interval between saves: ``m = ceil(length/dt)`` equal
    steps ``h = length/m`` from ``start`` (exactly as ``integrate_sde`` cuts them)."""
    grids, t = [], float(t0)
    for t_save in np.asarray(save_times, dtype=float):
        length = float(t_save) - t
        m = max(1, math.ceil(length / dt * (1 - 1e-12)))
        grids.append((t, length / m, m))
        t = float(t_save)
    return grids


def table_times(save_times: np.ndarray, dt: float, noisy: bool) -> np.ndarray:
    """The times the coupling needs the PDE at: every step (and, for RK4, half step)."""
    times = []
    for start, h, m in step_grid(save_times, dt):
        times.append(start + h * np.arange(m + 1))
        if not noisy:
            times.append(start + h * (np.arange(m) + 0.5))
    return np.unique(np.round(np.concatenate(times), TIME_ROUND))


@dataclass
class PdeTable:
    """PDE states at the times of ``table_times`` (``states[i]`` at ``times[i]``)."""

    times: np.ndarray
    states: list[np.ndarray]

    def at(self, t: float) -> np.ndarray:
        i = int(np.searchsorted(self.times, round(float(t), TIME_ROUND)))
        if i >= self.times.size or abs(self.times[i] - t) > 1e-9 * max(1.0, abs(t)):
            raise ValueError(f"the PDE table has no state at t = {t}")
        return self.states[i]


def pde_table(solver, state0: np.ndarray, times: np.ndarray, t_final: float) -> PdeTable:
    """The PDE from ``state0`` at ``times`` (``times[0] = 0``), by the solver's own
    stepper (adaptive ETDRK4 landing on each time)."""
    states = [np.array(state0)]
    later = times[1:]
    if later.size:
        res = integrate(solver.stepper(), state0, 0.0, later, solver.first_step(t_final),
                        on_save=lambda t, u, h: states.append(np.array(u)),
                        check=solver.check, h_min=1e-14 * t_final)
        if res.status == -1:
            raise KeyboardInterrupt
    return PdeTable(np.asarray(times, dtype=float), states)


@dataclass
class CoupledPaths:
    """The coupled paths at the save times: ``particles`` (X) and ``nonlinear`` (Y), each
    (times, n, d), the first at t = 0."""

    times: np.ndarray
    particles: np.ndarray
    nonlinear: np.ndarray


def coupled_paths(solver, table: PdeTable, model, x0: np.ndarray, save_times: np.ndarray,
                  dt: float, kappa: float = math.inf, seed: int = 0) -> CoupledPaths:
    """Integrate the tokens and their nonlinear partners from ``x0`` (module docstring).

    Args:
        solver: the PDE's discretization (``velocity_at``).
        table: the PDE at ``table_times(save_times, dt, noisy)``.
        model: the particle model (``AttentionParticles``; its ``velocity``).
        x0: (n, d) unit vectors, the start of both.
        save_times: increasing times > 0.
        dt: the largest step.
        kappa: inverse noise (``inf``: none).
        seed: of the Brownian increments (``noise_rng``), shared by X and Y.

    Returns:
        CoupledPaths.
    """
    x = normalize_rows(np.asarray(x0, dtype=float))
    y = x.copy()
    xs, ys = [x.copy()], [y.copy()]
    noisy = not math.isinf(kappa)
    if noisy:
        rng = noise_rng(seed)
        particle_step = GeodesicEulerMaruyama(model.velocity, kappa)
    else:
        particle_step = RetractedRK4(model.velocity)

    def field(t: float):
        state = table.at(t)
        if solver.geometry == "zonal":  # (its field is written for unit vectors)
            return lambda p: solver.velocity_at(state, normalize_rows(p))
        return lambda p: solver.velocity_at(state, p)

    for start, h, m in step_grid(save_times, dt):
        for k in range(m):
            t = start + k * h
            if noisy:
                dw = rng.standard_normal(x.shape)
                dw *= math.sqrt(h)
                x = particle_step.step(x, h, dw)
                y = GeodesicEulerMaruyama(field(t), kappa).step(y, h, dw)
            else:
                x = particle_step.step(x, h)
                y = _rk4_in_time(field(t), field(t + 0.5 * h), field(t + h), y, h)
        xs.append(x.copy())
        ys.append(y.copy())
    return CoupledPaths(np.concatenate([[0.0], np.asarray(save_times, dtype=float)]),
                        np.stack(xs), np.stack(ys))


def token_path(model, x0: np.ndarray, save_times: np.ndarray, dt: float,
               kappa: float = math.inf, seed: int = 0) -> np.ndarray:
    """The tokens alone at ``0`` and ``save_times``, (times, n, d): the ``X`` path of
    ``coupled_paths`` (the same steps and the same Brownian increments for a seed)."""
    x = normalize_rows(np.asarray(x0, dtype=float))
    xs = [x.copy()]
    noisy = not math.isinf(kappa)
    rng = noise_rng(seed) if noisy else None
    step = (GeodesicEulerMaruyama(model.velocity, kappa) if noisy
            else RetractedRK4(model.velocity))
    for _, h, m in step_grid(save_times, dt):
        for _ in range(m):
            if noisy:
                dw = rng.standard_normal(x.shape)
                dw *= math.sqrt(h)
                x = step.step(x, h, dw)
            else:
                x = step.step(x, h)
        xs.append(x.copy())
    return np.stack(xs)


def _rk4_in_time(f0, f_half, f1, y: np.ndarray, h: float) -> np.ndarray:
    """One RK4 step of ``y' = f(t, y)`` with the fields at ``t, t + h/2, t + h``, then the
    retraction (stage points off the sphere: the fields take their directions)."""
    k1 = f0(y)
    k2 = f_half(y + (0.5 * h) * k1)
    k3 = f_half(y + (0.5 * h) * k2)
    k4 = f1(y + h * k3)
    return normalize_rows(y + (h / 6.0) * (k1 + 2.0 * (k2 + k3) + k4))


def geodesic_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``d(a_i, b_i) = arccos <a_i, b_i>`` row by row, computed as ``2 asin(|a - b|/2)``
    (accurate for close points, where arccos loses half the digits)."""
    chord = np.linalg.norm(normalize_rows(a) - normalize_rows(b), axis=-1)
    return 2.0 * np.arcsin(np.clip(0.5 * chord, 0.0, 1.0))


def coupling_distance(a: np.ndarray, b: np.ndarray, p: float) -> float:
    """``((1/n) sum_i d(a_i, b_i)^p)^{1/p}``."""
    return float(np.mean(geodesic_distances(a, b) ** p) ** (1.0 / p))
