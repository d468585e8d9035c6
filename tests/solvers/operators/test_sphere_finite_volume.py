"""Finite volumes on S^2: the icosahedral Voronoi mesh and the CCH scheme on it.

Geometry (areas, shared edges, orthogonal duals, agreement with scipy's SphericalVoronoi),
the lat-lon comparison behind the choice of mesh, and the scheme's structure (mass to
round-off, positivity at the derived step bound, free-energy decay) and accuracy: observed
orders in the relative L1 norm ``sum A|rho - rho_exact| / sum A|rho_exact|`` against
exact cell averages for pure diffusion, pure drift and the Boltzmann steady state.
"""
from __future__ import annotations

import numpy as np
import pytest

from solvers.grids import voronoi
from solvers.grids.mesh import (
    cell_averages,
    icosahedral_mesh,
    latlon_mesh,
    mesh_statistics,
)
from solvers.operators.finite_volume import GradientFlowMeshFV
from solvers.steppers import SSPRK3, integrate


def relative_l1(mesh, rho, exact):
    return float(mesh.weights @ np.abs(rho - exact) / (mesh.weights @ np.abs(exact)))


def observed_orders(errors):
    e = np.asarray(errors)
    return np.log2(e[:-1] / e[1:])  # one level halves the spacing


def evolve_to(mesh, rho0, dpsi, diffusion, t_final):
    """SSP-RK3 at the scheme's step bound to ``t_final``; returns (rho, steps)."""
    fv = GradientFlowMeshFV(mesh, lambda rho: dpsi, diffusion)
    saved = {}
    res = integrate(SSPRK3(fv, fv.max_step), rho0, 0.0, np.array([t_final]),
                    fv.max_step(rho0),
                    on_save=lambda t, u, h: saved.update(rho=u))
    return saved["rho"], res.steps


def voronoi_sides(mesh):
    """For every side of every cell polygon: (corner p, corner q, cell), sorted so that
    the two cells of a side are consecutive."""
    start, idx = mesh.vertex_start, mesh.cell_vertices
    counts = np.diff(start)
    cell = np.repeat(np.arange(mesh.n_cells), counts)
    nxt = np.arange(len(idx)) + 1
    nxt[start[1:] - 1] = start[:-1]
    p, q = np.minimum(idx, idx[nxt]), np.maximum(idx, idx[nxt])
    order = np.lexsort((cell, q, p))
    return p[order], q[order], cell[order]


# --------------------------------------------------------------------------- the mesh

@pytest.mark.parametrize("level", [0, 1, 2, 3, 4, 5])
def test_icosahedral_mesh_is_a_conforming_orthogonal_voronoi_mesh(level):
    mesh = icosahedral_mesh(level)
    n, m = mesh.n_cells, mesh.n_edges
    assert n == 10 * 4**level + 2 and m == 3 * (n - 2)
    assert np.allclose(np.linalg.norm(mesh.centers, axis=1), 1, atol=1e-15)
    assert np.all(mesh.weights > 0)
    assert abs(mesh.weights.sum() - 4 * np.pi) < 4e-15 * np.pi
    # Edges: distinct pairs, each in the neighbour lists of exactly its two cells.
    assert np.all(mesh.edges[:, 0] < mesh.edges[:, 1])
    assert len({tuple(e) for e in mesh.edges}) == m
    assert np.array_equal(mesh.neighbor[mesh.edge_slot[:, 0]], mesh.edges[:, 1])
    assert np.array_equal(mesh.neighbor[mesh.edge_slot[:, 1]], mesh.edges[:, 0])
    assert np.array_equal(np.sort(mesh.edge_slot.ravel()), np.arange(2 * m))
    assert np.array_equal(np.diff(mesh.neighbor_start), np.diff(mesh.vertex_start))
    # Every Voronoi side belongs to exactly two cells, and those are an edge's cells.
    p, q, cell = voronoi_sides(mesh)
    assert len(p) == 2 * m
    assert np.all(p[0::2] == p[1::2]) and np.all(q[0::2] == q[1::2])
    assert np.all((p[1:-1:2] != p[2::2]) | (q[1:-1:2] != q[2::2]))
    pairs = np.stack([cell[0::2], cell[1::2]], axis=1)
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    edge_order = np.lexsort((mesh.edges[:, 1], mesh.edges[:, 0]))
    assert np.array_equal(pairs[order], mesh.edges[edge_order])
    # Both ends of a side on the bisector plane of the two generators: the side is
    # orthogonal to the generator arc, as two-point fluxes need.
    p, q = mesh.vertices[p[0::2][order]], mesh.vertices[q[0::2][order]]
    a, b = mesh.edges[edge_order].T
    chord = mesh.centers[a] - mesh.centers[b]
    assert np.max(np.abs(np.sum(p * chord, axis=1))) < 1e-15
    assert np.max(np.abs(np.sum(q * chord, axis=1))) < 1e-15
    length = np.arctan2(np.linalg.norm(np.cross(p, q), axis=1), np.sum(p * q, axis=1))
    assert np.allclose(length, mesh.edge_length[edge_order], rtol=1e-12, atol=0)
    assert np.all(mesh.edge_length > 0) and np.all(mesh.edge_distance > 0)
    # Voronoi duality: 2 - n + m corners (Euler), and cells tile the sphere.
    assert len(mesh.vertices) == 2 - n + m


def test_fast_voronoi_agrees_with_scipy_spherical_voronoi():
    from scipy.spatial import SphericalVoronoi

    mesh = icosahedral_mesh(3)
    sv = SphericalVoronoi(mesh.centers)
    sv.sort_vertices_of_regions()
    assert np.allclose(sv.calculate_areas(), mesh.weights, rtol=1e-11, atol=0)
    pairs = set()
    for c, region in enumerate(sv.regions):
        for p, q in zip(region, np.roll(region, -1)):
            pairs.add((frozenset((p, q)), c))
    by_side = {}
    for side, c in pairs:
        by_side.setdefault(side, []).append(c)
    scipy_edges = {tuple(sorted(cells)) for cells in by_side.values()}
    assert scipy_edges == {tuple(e) for e in mesh.edges}
    # The fallback through SphericalVoronoi (used if a triangulation is not Delaunay)
    # orients the cells and gives the same areas.
    vertices, start, corners = voronoi.spherical_voronoi(mesh.centers)
    areas, _ = voronoi.polygon_areas_and_moments(mesh.centers, vertices, start, corners)
    assert np.allclose(areas, mesh.weights, rtol=1e-13, atol=0)


def test_lloyd_iterations_bring_generators_to_centroids():
    for lloyd, bound in ((0, 0.05), (3, 5e-3)):
        mesh = icosahedral_mesh(4, lloyd)
        centroid = np.stack([cell_averages(mesh, lambda x, i=i: x[:, i]) for i in range(3)],
                            axis=1)
        centroid /= np.linalg.norm(centroid, axis=1, keepdims=True)
        offset = np.arccos(np.clip(np.sum(centroid * mesh.centers, axis=1), -1, 1))
        assert np.max(offset / np.sqrt(mesh.weights)) < bound, lloyd


def test_cell_averages_integrate_polynomials():
    # Degree-5 rule on the icosahedral fan triangles; Gauss in latitude (20-degree cells).
    for mesh, tol in ((icosahedral_mesh(2), 1e-12), (latlon_mesh(9, 18), 1e-8)):
        assert np.allclose(cell_averages(mesh, lambda x: np.ones(len(x))), 1, atol=1e-14)
        z2 = mesh.weights @ cell_averages(mesh, lambda x: x[:, 2] ** 2)
        assert z2 == pytest.approx(4 * np.pi / 3, rel=tol)
        x4 = mesh.weights @ cell_averages(mesh, lambda x: x[:, 0] ** 4)
        assert x4 == pytest.approx(4 * np.pi / 5, rel=tol)
        smooth = cell_averages(mesh, lambda x: np.exp(x[:, 0] + 2 * x[:, 2]))
        finer = cell_averages(mesh, lambda x: np.exp(x[:, 0] + 2 * x[:, 2]), refine=3)
        assert np.allclose(smooth, finer, rtol=1e-7, atol=0)


def test_latlon_poles_crush_the_step_and_the_icosahedral_mesh_does_not():
    """The numbers quoted in solvers.grids.mesh: ~2600 and ~10^4 cells."""
    for level, nlat in ((4, 36), (5, 72)):
        ico, ll = icosahedral_mesh(level), latlon_mesh(nlat, 2 * nlat)
        assert abs(ll.weights.sum() - 4 * np.pi) < 1e-13
        si, sl = mesh_statistics(ico), mesh_statistics(ll)
        assert si["min_over_mean_diameter"] > 0.8
        assert sl["min_over_mean_diameter"] < 0.12
        assert si["dt_advective"] > 8 * sl["dt_advective"]
        assert si["dt_diffusive"] > 150 * sl["dt_diffusive"]


# --------------------------------------------------------------------------- the scheme

def test_constant_state_is_stationary_and_mass_is_conserved_to_round_off():
    mesh = icosahedral_mesh(4)
    fv = GradientFlowMeshFV(mesh, lambda rho: np.zeros(mesh.n_edges), 0.7)
    drho = fv(np.full(mesh.n_cells, 1 / (4 * np.pi)))
    assert np.all(drho == 0)
    # Strong drift and diffusion for 1500 steps: total mass to 1e-13.
    x = mesh.centers
    psi = 4 * x[:, 2] + 3 * np.sin(5 * x[:, 0]) * x[:, 1]
    rho = cell_averages(mesh, lambda y: np.exp(2 * y[:, 0]) * (1 + y[:, 1] ** 2))
    mass0 = mesh.integrate(rho)
    fv = GradientFlowMeshFV(mesh, lambda r: mesh.difference(psi), 0.05)
    stepper = SSPRK3(fv, fv.max_step)
    for _ in range(1500):
        _, rho, _ = stepper.attempt(rho, np.inf)
    assert abs(mesh.integrate(rho) - mass0) < 1e-13 * mass0


def test_forward_euler_keeps_positivity_at_the_step_bound():
    """h_pos = min_c A_c / (2 sum_out l u+) (the limiter keeps faces in [0, 2 rho_c]): one
    Euler step of exactly that size stays non-negative, from rough states with empty
    cells and strong potentials; the kernel's bound is that one."""
    mesh = icosahedral_mesh(3)
    rng = np.random.default_rng(1)
    x = mesh.centers
    for trial in range(30):
        rho = rng.random(mesh.n_cells) ** 4 * (rng.random(mesh.n_cells) > 0.3)
        psi = 30 * rng.standard_normal() * x[:, 2] + 10 * rng.standard_normal(mesh.n_cells)
        diffusion = 10.0 ** -(trial % 3)
        dpsi = mesh.difference(psi)
        fv = GradientFlowMeshFV(mesh, lambda r, dpsi=dpsi: dpsi, diffusion, cfl=1.0)
        drho, h = fv(rho), fv.max_step(rho)
        h_pos = 1 / (2 * np.max(_outflow_rate(mesh, rho, psi, diffusion)))
        assert h <= h_pos * (1 + 1e-12)
        assert np.all(rho + h_pos * drho >= 0)


def _outflow_rate(mesh, rho, psi, diffusion):
    """sum_out l u+ / A per cell, recomputed here from the definition."""
    logr = np.log(np.maximum(rho, 1e-300))
    lu = mesh.edge_length / mesh.edge_distance * (
        mesh.difference(psi) - diffusion * mesh.difference(logr))
    a, b = mesh.edges.T
    out = (np.bincount(a, np.maximum(lu, 0), mesh.n_cells)
           + np.bincount(b, np.maximum(-lu, 0), mesh.n_cells))
    return out / mesh.weights


def test_positivity_with_a_strong_potential_and_a_near_empty_region():
    mesh = icosahedral_mesh(4)
    x = mesh.centers
    psi = 8 * x[:, 2] + 4 * x[:, 0] * x[:, 1]
    rho = cell_averages(mesh, lambda y: np.exp(-40 * (1 + y[:, 2])) + 1e-30)
    rho[x[:, 2] > 0.6] = 0.0  # an empty cap the drift pushes mass into
    fv = GradientFlowMeshFV(mesh, lambda r: mesh.difference(psi), 1e-3)
    stepper, t = SSPRK3(fv, fv.max_step), 0.0
    mass0 = mesh.integrate(rho)
    while t < 0.3:
        h, rho, _ = stepper.attempt(rho, 0.3 - t)
        t += h
        assert rho.min() >= 0.0
    assert abs(mesh.integrate(rho) - mass0) < 1e-13 * mass0
    assert rho[x[:, 2] > 0.9].min() > 0  # the mass did arrive


def free_energy(mesh, rho, psi, diffusion, interaction):
    """sum A (D rho log rho - rho psi) for a fixed psi, or - rho psi / 2 for psi = K rho."""
    ent = diffusion * mesh.weights @ (rho * np.log(np.maximum(rho, 1e-300)))
    return ent - (0.5 if interaction else 1.0) * mesh.weights @ (rho * psi)


@pytest.mark.parametrize("interaction", [False, True], ids=["external", "kernel"])
def test_free_energy_decays(interaction):
    """Fixed psi, or psi = K rho with K symmetric in the A-weighted product (as psi from
    spherical harmonics analysed by the mesh quadrature and synthesised at the centres):
    dF/dt = sum A xi drho/dt = -sum l d rho_up u^2 <= 0 semi-discretely, and F decreases
    along SSP-RK3 steps."""
    mesh = icosahedral_mesh(3)
    x = mesh.centers
    diffusion = 0.1
    if interaction:
        kernel = np.exp(4 * x @ x.T) * mesh.weights[None, :] / (4 * np.pi)

        def potential(rho):
            return kernel @ rho
    else:
        fixed = 3 * x[:, 2] + 2 * x[:, 0] * x[:, 1]

        def potential(rho):
            return fixed
    fv = GradientFlowMeshFV(mesh, lambda r: mesh.difference(potential(r)), diffusion)
    rng = np.random.default_rng(0)
    for _ in range(5):  # semi-discrete identity on rough states
        rho = rng.random(mesh.n_cells) + 0.01
        drho = fv(rho)
        xi = diffusion * np.log(rho) - potential(rho)
        assert mesh.weights @ (xi * drho) < 0
    rho = cell_averages(mesh, lambda y: 1 + 0.8 * np.sin(3 * y[:, 0] + 2 * y[:, 1]))
    stepper = SSPRK3(fv, fv.max_step)
    energy = [free_energy(mesh, rho, potential(rho), diffusion, interaction)]
    for _ in range(400):
        _, rho, _ = stepper.attempt(rho, np.inf)
        energy.append(free_energy(mesh, rho, potential(rho), diffusion, interaction))
    steps = np.diff(energy)
    assert np.all(steps <= 1e-14 * abs(energy[0])), steps.max()
    assert energy[-1] < energy[0] - 0.1 * abs(energy[0] - energy[-1])


# --------------------------------------------------------------------------- accuracy

def heat_exact(x, t, diffusion):
    """Degrees 1, 2, 3 decaying at l(l+1) D: d rho/dt = div(rho grad D log rho) = D lap rho."""
    X, Y, Z = x.T
    return (1 + 0.3 * X * np.exp(-2 * diffusion * t)
            + 0.2 * (3 * Z**2 - 1) * np.exp(-6 * diffusion * t)
            + 0.3 * (X**3 - 3 * X * Y**2) * np.exp(-12 * diffusion * t)) / (4 * np.pi)


def drift_exact(x, t):
    """Transport by grad z from the uniform density: along characteristics dz/dt = 1 - z^2,
    z_0 = tanh(atanh z - t) and rho(z, t) dz = rho_0 dz_0."""
    z = np.clip(x[:, 2], -1 + 1e-15, 1 - 1e-15)
    z0 = np.tanh(np.arctanh(z) - t)
    return (1 - z0**2) / (1 - z**2) / (4 * np.pi)


def test_second_order_for_pure_diffusion():
    diffusion, t_final = 1.0, 0.1
    errors = []
    for level in (2, 3, 4, 5):
        mesh = icosahedral_mesh(level)
        rho0 = cell_averages(mesh, lambda x: heat_exact(x, 0, diffusion))
        rho, _ = evolve_to(mesh, rho0, np.zeros(mesh.n_edges), diffusion, t_final)
        exact = cell_averages(mesh, lambda x: heat_exact(x, t_final, diffusion))
        errors.append(relative_l1(mesh, rho, exact))
    orders = observed_orders(errors)
    print("diffusion L1 errors", errors, "orders", orders)
    assert errors[-1] < 7e-5
    assert np.all(orders[1:] > 1.8), orders


def test_second_order_for_pure_drift():
    t_final = 0.5
    errors = []
    for level in (2, 3, 4, 5):
        mesh = icosahedral_mesh(level)
        rho0 = cell_averages(mesh, lambda x: drift_exact(x, 0))
        rho, _ = evolve_to(mesh, rho0, mesh.difference(mesh.centers[:, 2]), 0.0, t_final)
        exact = cell_averages(mesh, lambda x: drift_exact(x, t_final))
        errors.append(relative_l1(mesh, rho, exact))
    orders = observed_orders(errors)
    print("drift L1 errors", errors, "orders", orders)
    assert errors[-1] < 7e-5
    assert np.all(orders > 1.8), orders


def test_relaxes_to_the_boltzmann_density():
    """psi = z, D = 1: rho_inf = e^{z/D} / (4 pi D sinh(1/D)). The discrete steady state
    is rho_c ~ e^{psi_c/D} exactly (all xi equal); its cell averages are second order."""
    diffusion = 1.0

    def boltzmann(x):
        return np.exp(x[:, 2] / diffusion) / (4 * np.pi * diffusion * np.sinh(1 / diffusion))

    errors = []
    for level in (2, 3, 4):
        mesh = icosahedral_mesh(level)
        rho0 = cell_averages(mesh, lambda x: np.full(len(x), 1 / (4 * np.pi)))
        rho, _ = evolve_to(mesh, rho0, mesh.difference(mesh.centers[:, 2]), diffusion, 6.0)
        discrete = np.exp(mesh.centers[:, 2] / diffusion)
        discrete *= mesh.integrate(rho0) / mesh.integrate(discrete)
        assert np.max(np.abs(rho / discrete - 1)) < 1e-5
        errors.append(relative_l1(mesh, rho, cell_averages(mesh, boltzmann)))
    orders = observed_orders(errors)
    print("Boltzmann L1 errors", errors, "orders", orders)
    assert np.all(orders > 1.8), orders
