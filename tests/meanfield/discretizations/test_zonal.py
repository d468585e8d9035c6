"""The zonal solvers against the circle's and the sphere's (issue 26, acceptance 1), the
finite volumes' second order against the spectral solution, positivity, and ETDRK4's
fourth order on the Gegenbauer coefficients.

Normalizations: zonal densities are against the normalized surface measure (uniform = 1),
the circle's against d theta (uniform 1/(2 pi)), the sphere's against area (1/(4 pi)), so
``rho_zonal = 2 pi rho_circle`` (d = 2) and ``4 pi rho_sphere`` (d = 3). The zonal series is
evaluated exactly at the other grid's nodes (``t = x_1``: the axis is the first coordinate
vector, the circle's theta = 0 and the sphere's [1, 0, 0]).

Choice of the runs: beta = 1 and t = 5, with noise kappa = 5 from a von Mises density of
concentration 2; without noise the uniform state is unstable and the density collapses to
a point, so the runs start close to uniform (concentration 0.05 SA, 0.02 USA) to stay
resolved at t = 5 (max density 1.5 to 17 at t = 5; the tail of the zonal spectrum at band
limit 48 is round-off: < 1e-13 with noise, < 6e-13 without, where nothing damps it). Both solvers take the same fixed ETDRK4 steps: the
zonal ODE is the sphere's (the circle's) restricted to zonal (even) densities in a
diagonally rescaled basis, so the two time discretizations agree to round-off and the
comparison isolates space; ``test_equal_to_circle_and_sphere_with_small_steps`` (slow)
repeats it where the time error itself is below 1e-10.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import meanfield
from meanfield.initial.zonal import cell_averages
from solvers.grids.coordinates import unit_vectors
from solvers.grids.zonal import ZonalCells, ZonalGrid

BETA, T_FINAL, LMAX = 1.0, 5.0, 48
# (kappa, initial concentration) per model: noisy, and noise-free close to uniform
CASES = [(True, 5.0, 2.0), (True, math.inf, 0.05), (False, 5.0, 2.0), (False, math.inf, 0.02)]
IDS = ["SA-noise", "SA-no-noise", "USA-noise", "USA-no-noise"]


def run(geometry: str, normalized: bool, kappa: float, initial: dict, resolution: int,
        dim: int | None = None, method: str = "spectral", time: dict | None = None,
        t_final: float = T_FINAL):
    domain = {"geometry": geometry, **({"dim": dim} if dim else {})}
    return meanfield.evolve({
        "domain": domain,
        "model": {"beta": BETA, "kappa": kappa, "normalized": normalized},
        "discretization": {"method": method, "resolution": resolution},
        "initial": initial,
        "time": {"t_final": t_final, "save_every": t_final, **(time or {"dt": 0.025})}})


def zonal_coefficients(normalized, kappa, concentration, dim, time=None, lmax=LMAX,
                       other=None):
    """The final zonal coefficients; with ``other`` (the circle's or the sphere's run) also
    check that the diagnostics agree at every save: energy and order parameter equal, the
    free energy shifted by log(2 pi)/kappa or log(4 pi)/kappa (the entropy of a density
    against the normalized measure; measured to 1e-14)."""
    ds = run("zonal", normalized, kappa, {"kind": "von_mises", "concentration": concentration},
             lmax, dim=dim, time=time)
    if other is not None:
        for name in ("energy", "order_parameter"):
            np.testing.assert_allclose(ds[name].values, other[name].values, rtol=0,
                                       atol=1e-12)
        if kappa < math.inf:
            shift = math.log(2 * math.pi if dim == 2 else 4 * math.pi) / kappa
            np.testing.assert_allclose(ds.free_energy.values - shift,
                                       other.free_energy.values, rtol=0, atol=1e-12)
    grid = ZonalGrid(lmax, dim)
    return grid, grid.analysis(ds.density.values[-1])


def circle_difference(normalized, kappa, concentration, time=None) -> float:
    ds = run("circle", normalized, kappa, {"kind": "von_mises", "center": 0.0,
                                           "concentration": concentration}, 2 * LMAX,
             time=time)
    grid, c = zonal_coefficients(normalized, kappa, concentration, 2, time, other=ds)
    rho = 2 * np.pi * ds.density.values[-1]
    return float(np.abs(grid.evaluate(c, np.cos(ds.theta.values)) - rho).max() / rho.max())


def sphere_difference(normalized, kappa, concentration, time=None) -> float:
    ds = run("sphere", normalized, kappa, {"kind": "von_mises", "center": [1.0, 0.0, 0.0],
                                           "concentration": concentration}, LMAX, time=time)
    grid, c = zonal_coefficients(normalized, kappa, concentration, 3, time, other=ds)
    rho = 4 * np.pi * ds.density.values[-1]
    x = unit_vectors(ds.lat.values[:, None], ds.lon.values[None, :])
    assert np.abs(c[-4:]).max() < 1e-12 * c[0]  # resolved: the tail is round-off
    return float(np.abs(grid.evaluate(c, x[..., 0]) - rho).max() / rho.max())


@pytest.mark.parametrize("normalized,kappa,concentration", CASES, ids=IDS)
def test_d2_equals_the_circle(normalized, kappa, concentration):
    """Measured: 8e-14 (SA), 1.6e-13 (USA) with noise; 3.8e-12, 2.9e-12 without (no
    diffusion damps the round-off of the high degrees) of the max density."""
    assert circle_difference(normalized, kappa, concentration) <= 1e-10


@pytest.mark.parametrize("normalized,kappa,concentration", CASES, ids=IDS)
def test_d3_equals_the_sphere(normalized, kappa, concentration):
    """Measured: 1.1e-13 (SA), 5e-14 (USA) with noise; 1.0e-11, 3.3e-12 without, of the
    max density (sphere band limit 48, 200 steps)."""
    assert sphere_difference(normalized, kappa, concentration) <= 1e-10


@pytest.mark.slow
@pytest.mark.parametrize("normalized,kappa,concentration", CASES, ids=IDS)
def test_equal_to_circle_and_sphere_with_small_steps(normalized, kappa, concentration):
    """dt = 0.004: ETDRK4's error at t = 5 is below 3e-11 of the max density (measured
    from dt = 0.025 -> 0.0125: at most 1.4e-8 -> 9e-10, order 4), so the agreement is that
    of two accurate solutions, not only of two identical time discretizations."""
    time = {"dt": 0.004}
    assert circle_difference(normalized, kappa, concentration, time) <= 1e-10
    assert sphere_difference(normalized, kappa, concentration, time) <= 1e-10


# --- finite volumes -------------------------------------------------------------------------
def fv_errors(dim, normalized, kappa, concentration, cells, t_final=T_FINAL):
    """Max and L^1 errors of the finite volumes' cell values against the cell averages
    (8-point Gauss in theta per cell) of the spectral solution."""
    grid, c = zonal_coefficients(normalized, kappa, concentration, dim)
    if t_final != T_FINAL:
        raise ValueError("the reference is at T_FINAL")
    errors = []
    for n in cells:
        ds = run("zonal", normalized, kappa,
                 {"kind": "von_mises", "concentration": concentration}, n, dim=dim,
                 method="finite-volume", time={"dt": "auto"})
        zc = ZonalCells(n, dim)
        exact = cell_averages(lambda t: grid.evaluate(c, t), zc)
        err = ds.density.values[-1] - exact
        assert ds.density.values.min() > 0
        assert np.abs(ds.mass.values - 1).max() <= 1e-13
        errors.append((np.abs(err).max() / exact.max(), np.sum(np.abs(err) * zc.weights)))
    return np.array(errors)


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("normalized", [True, False], ids=["SA", "USA"])
def test_finite_volumes_second_order_with_noise(dim, normalized):
    """kappa = 5, 48 -> 96 -> 192 cells: the error against the spectral solution (the one
    equal to the circle's and the sphere's) falls 4x per doubling, in max and in L^1.
    Measured orders 2.00-2.03 (max errors 4e-4 to 4e-3 of the max density at 48 cells)."""
    errors = fv_errors(dim, normalized, 5.0, 2.0, (48, 96, 192))
    orders = np.log2(errors[:-1] / errors[1:])
    assert np.all((orders > 1.9) & (orders < 2.15)), orders


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("normalized", [True, False], ids=["SA", "USA"])
def test_finite_volumes_converge_without_noise(dim, normalized):
    """No diffusion (kappa = inf): at least second order from 96 to 384 cells (measured
    2.3 to 3.7: faster than the asymptotic 2 while a higher-order part of the error still
    dominates on this smooth, nearly uniform solution)."""
    concentration = 0.05 if normalized else 0.02
    errors = fv_errors(dim, normalized, math.inf, concentration, (96, 192, 384))
    orders = np.log2(errors[:-1] / errors[1:])
    assert np.all(orders > 1.9), orders


@pytest.mark.parametrize("dim", [2, 3, 8])
def test_finite_volumes_positive_through_a_collapse(dim):
    """USA without noise from two uneven clusters (a von Mises bump and a degree-3 mode):
    mass gathers at the pole cell (its density x40 at d = 2, x1400 at d = 3, x8e9 at
    d = 8 by t = 3, measured) while the cells between empty; the scheme stays positive and
    keeps the mass to 1e-13."""
    ds = run("zonal", False, math.inf, {"kind": "mixture", "components": [
        {"kind": "von_mises", "concentration": 3.0},
        {"kind": "perturbed", "degree": 3, "amplitude": -0.9, "weight": 0.5}]}, 128,
        dim=dim, method="finite-volume", time={"dt": "auto"}, t_final=3.0)
    rho = ds.density.values
    assert rho.min() > 0.0
    assert rho[-1, 0] > 20 * rho[0, 0]
    assert np.abs(ds.mass.values - 1).max() <= 1e-13


def test_spectral_time_order_four():
    """ETDRK4 on the Gegenbauer coefficients (d = 5, SA with noise): the error at t = 1
    against dt = 1/160 falls ~16x per halving of dt = 0.2, 0.1, 0.05 (measured 3.83,
    3.91)."""
    def final(dt):
        ds = meanfield.evolve({
            "domain": {"geometry": "zonal", "dim": 5},
            "model": {"beta": 2.0, "kappa": 4.0, "normalized": True},
            "discretization": {"resolution": 32},
            "initial": {"kind": "von_mises", "concentration": 3.0},
            "time": {"t_final": 1.0, "save_every": 1.0, "dt": dt}})
        return ds.density.values[-1]

    ref = final(1 / 160)
    errors = np.array([np.abs(final(dt) - ref).max() for dt in (0.2, 0.1, 0.05)])
    orders = np.log2(errors[:-1] / errors[1:])
    assert np.all((orders > 3.7) & (orders < 4.5)), (errors, orders)


@pytest.mark.parametrize("normalized,value", [(False, 2.0), (True, -1.0)],
                         ids=["USA-c2", "SA-repulsive"])
def test_value_matrix_c_equals_the_circle(normalized, value):
    """``[weights] value = c`` (V = c I) scales the potential on both: d = 2 against the
    circle at t = 2, kappa = 5 (measured 3.7e-13 USA c = 2, 2.6e-14 SA c = -1)."""
    def final(geometry, extra, initial, resolution):
        return meanfield.evolve({
            "domain": {"geometry": geometry, **extra},
            "model": {"beta": BETA, "kappa": 5.0, "normalized": normalized},
            "weights": {"value": value},
            "discretization": {"resolution": resolution}, "initial": initial,
            "time": {"t_final": 2.0, "save_every": 2.0, "dt": 0.025}})

    zonal = final("zonal", {"dim": 2}, {"kind": "von_mises", "concentration": 2.0}, LMAX)
    circle = final("circle", {}, {"kind": "von_mises", "center": 0.0, "concentration": 2.0},
                   2 * LMAX)
    grid = ZonalGrid(LMAX, 2)
    c = grid.analysis(zonal.density.values[-1])
    rho = 2 * np.pi * circle.density.values[-1]
    assert np.abs(grid.evaluate(c, np.cos(circle.theta.values)) - rho).max() <= 1e-10 * rho.max()
    assert abs(zonal.order_parameter.values[-1] - circle.order_parameter.values[-1]) < 1e-12


@pytest.mark.parametrize("normalized", [False, True], ids=["USA", "SA"])
def test_velocity_at_equals_the_sphere_and_the_circle(normalized):
    """The velocity off the grid of a zonal state equals the sphere's (d = 3) and the
    circle's (d = 2) for the same density, at random points (the axis: the first
    coordinate vector; velocities do not depend on the density's normalization)."""
    from meanfield import config as cfgmod
    from meanfield.discretizations.registry import from_config

    rng = np.random.default_rng(5)
    for dim, geometry, initial, resolution in (
            (3, "sphere", {"kind": "von_mises", "center": [1.0, 0, 0], "concentration": 3.0},
             24),
            (2, "circle", {"kind": "von_mises", "center": 0.0, "concentration": 3.0}, 64)):
        solvers = []
        for geo, init, res in ((geometry, initial, resolution),
                               ("zonal", {"kind": "von_mises", "concentration": 3.0}, 24)):
            cfg = cfgmod.validate({
                "domain": {"geometry": geo, **({"dim": dim} if geo == "zonal" else {})},
                "model": {"beta": 2.0, "kappa": 5.0, "normalized": normalized},
                "discretization": {"resolution": res}, "initial": init})
            solver = from_config(cfg)
            solvers.append((solver, solver.to_state(solver.initial_density(cfg["initial"]))))
        x = rng.standard_normal((200, dim))
        x /= np.linalg.norm(x, axis=1)[:, None]
        want = solvers[0][0].velocity_at(solvers[0][1], x)
        got = solvers[1][0].velocity_at(solvers[1][1], x)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max())
