"""The PDE's velocity field off the grid (``Discretization.velocity_at``) against the
formula of docs/conventions.md by quadrature over the grid, ``v(x) = P^perp_x int
e^{beta <x, y>} y rho(y) dsigma(y)`` (USA; SA divides by ``int e^{beta <x, y>} rho``)."""
from __future__ import annotations

import numpy as np
import pytest

from meanfield import config as cfgmod
from meanfield.discretizations.base import Discretization
from meanfield.errors import ConfigError


def solver_and_state(geometry: str, normalized: bool, method: str = "spectral"):
    resolution = {"circle": 128, "sphere": 24}[geometry]
    if method == "finite-volume" and geometry == "sphere":
        resolution = 642
    cfg = cfgmod.validate({
        "model": {"beta": 2.0, "normalized": normalized},
        "domain": {"geometry": geometry},
        "discretization": {"method": method, "resolution": resolution},
        "initial": {"kind": "von_mises", "concentration": 3.0},
    })
    solver = Discretization.from_config(cfg)
    return solver, solver.to_state(solver.initial_density(cfg["initial"]))


def quadrature_velocity(solver, state, x, beta, normalized):
    grid = solver.grid
    rho = solver.to_density(state)
    y = np.asarray(grid.points).reshape(-1, x.shape[1])
    w = (np.broadcast_to(grid.weights, rho.shape) * rho).ravel()
    kernel = np.exp(beta * x @ y.T) * w[None, :]
    s = kernel @ y
    v = s - np.einsum("ij,ij->i", s, x)[:, None] * x
    return v / kernel.sum(axis=1)[:, None] if normalized else v


@pytest.mark.parametrize("geometry", ["circle", "sphere"])
@pytest.mark.parametrize("normalized", [False, True])
def test_velocity_at_is_the_velocity_field(geometry, normalized):
    solver, state = solver_and_state(geometry, normalized)
    d = 2 if geometry == "circle" else 3
    x = np.random.default_rng(1).standard_normal((300, d))
    x /= np.linalg.norm(x, axis=1)[:, None]
    got = solver.velocity_at(state, x)
    want = quadrature_velocity(solver, state, x, 2.0, normalized)
    assert np.abs(np.einsum("ij,ij->i", got, x)).max() < 1e-13  # tangent
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-11 * np.abs(want).max())


def test_velocity_at_the_nodes_is_what_the_circle_solver_steps_with():
    solver, state = solver_and_state("circle", True)
    grid = solver.grid
    on_nodes = solver.velocity_at(state, grid.points)
    tangential = np.einsum("ij,ij->i", on_nodes, np.stack([-np.sin(grid.theta),
                                                           np.cos(grid.theta)], axis=-1))
    np.testing.assert_allclose(tangential, solver.model.velocity(state, grid.fft),
                               rtol=0, atol=1e-13)


def test_finite_volumes_say_what_to_use():
    solver, state = solver_and_state("circle", True, "finite-volume")
    with pytest.raises(ConfigError, match="method = 'spectral'"):
        solver.velocity_at(state, np.array([[1.0, 0.0]]))
