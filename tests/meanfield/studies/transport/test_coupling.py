"""The Sznitman coupling (``meanfield.studies.transport.coupling``): its particle path is the
particle run's, its nonlinear path is integrated to order 4 (without noise), and the two
stay together as n grows."""
from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield import config as cfgmod
from meanfield.discretizations.base import Discretization
from meanfield.initial.samplers import sample_tokens
from meanfield.model.particles import AttentionParticles, simulate
from meanfield.studies.transport import coupling as cp


def setup(geometry="circle", normalized=True, kappa=math.inf, tolerance=1e-11):
    cfg = cfgmod.validate({
        "model": {"beta": 1.0, "normalized": normalized, "kappa": kappa},
        "domain": {"geometry": geometry},
        "discretization": {"resolution": 64 if geometry == "circle" else 40},
        "initial": {"kind": "von_mises", "concentration": 2.0},
        "time": {"tolerance": tolerance},
    })
    solver = Discretization.from_config(cfg)
    state0 = solver.to_state(solver.initial_density(cfg["initial"]))
    return cfg, solver, state0


def run(cfg, solver, state0, n, save_times, dt, kappa=math.inf, seed=0, table=None):
    d = 2 if cfg["domain"]["geometry"] == "circle" else 3
    x0 = sample_tokens(cfg["initial"], n, d, seed)
    if table is None:
        table = cp.pde_table(solver, state0,
                             cp.table_times(save_times, dt, not math.isinf(kappa)),
                             float(save_times[-1]))
    model = AttentionParticles(1.0, cfg["model"]["normalized"])
    return x0, model, cp.coupled_paths(solver, table, model, x0, save_times, dt, kappa, seed)


def test_the_particle_path_is_the_particle_run():
    cfg, solver, state0 = setup(kappa=4.0)
    saves = np.array([0.25, 0.5])
    x0, model, paths = run(cfg, solver, state0, 50, saves, 0.05, kappa=4.0, seed=3)
    particles = simulate(model, x0, saves, kappa=4.0, dt=0.05, seed=3)
    np.testing.assert_array_equal(paths.particles, particles.positions)
    cfg, solver, state0 = setup()
    x0, model, paths = run(cfg, solver, state0, 50, saves, 0.05)
    particles = simulate(model, x0, saves, dt=0.05)
    np.testing.assert_allclose(paths.particles, particles.positions, rtol=0, atol=1e-13)


@pytest.mark.parametrize("geometry", ["circle", "sphere"])
def test_the_nonlinear_path_is_fourth_order(geometry):
    cfg, solver, state0 = setup(geometry)
    saves = np.array([0.5])
    ends = [run(cfg, solver, state0, 40, saves, dt)[2].nonlinear[-1] for dt in
            (0.25, 0.125, 0.0625)]
    e1 = cp.geodesic_distances(ends[0], ends[1]).max()
    e2 = cp.geodesic_distances(ends[1], ends[2]).max()
    assert 3.6 < math.log2(e1 / e2) < 4.4  # order 4 (ratio 16 of successive differences)


def test_uniform_density_leaves_the_partners_in_place():
    cfg = cfgmod.validate({"model": {"beta": 1.0}, "discretization": {"resolution": 32},
                           "initial": {"kind": "uniform"}})
    solver = Discretization.from_config(cfg)
    state0 = solver.to_state(solver.initial_density(cfg["initial"]))
    _, _, paths = run(cfg, solver, state0, 30, np.array([1.0]), 0.1)
    assert cp.geodesic_distances(paths.nonlinear[0], paths.nonlinear[-1]).max() < 1e-13


def test_the_coupling_distance_falls_with_n():
    """i.i.d. starts: the interaction error is O(n^{-1/2}); 30 vs 3000 tokens, mean over
    4 seeds each, must fall by at least 4 (10 expected; the spread over seeds is ~30 %)."""
    cfg, solver, state0 = setup(tolerance=1e-9)
    saves = np.array([1.0])
    table = cp.pde_table(solver, state0, cp.table_times(saves, 0.1, False), 1.0)

    def mean_distance(n):
        paths = [run(cfg, solver, state0, n, saves, 0.1, seed=s, table=table)[2]
                 for s in range(4)]
        return np.mean([cp.coupling_distance(p.particles[-1], p.nonlinear[-1], 1.0)
                        for p in paths])

    assert mean_distance(30) > 4 * mean_distance(3000)


def test_geodesic_distances_are_accurate_for_close_points():
    a = np.array([[1.0, 0.0, 0.0]])
    for angle in (1e-9, 1e-3, 1.0, 3.0, math.pi):
        b = np.array([[math.cos(angle), math.sin(angle), 0.0]])
        assert abs(cp.geodesic_distances(a, b)[0] - angle) <= 4e-16 * max(angle, 1)
