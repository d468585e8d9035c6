"""PDE masses in bins and the bins of points (``meanfield.metrics.binning``), against exact
integrals: antiderivatives on the circle, exact polygon moments on the sphere."""
from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

from meanfield.metrics.binning import (
    arc_index,
    circle_bin_masses,
    equal_arcs,
    histogram_bins,
    sphere_bin_masses,
)
from solvers.grids import voronoi
from solvers.grids.coordinates import circle_points
from solvers.grids.mesh import icosahedral_level, icosahedral_mesh
from solvers.grids.sphere import SphereGrid


def test_circle_bin_masses_are_exact():
    theta = np.linspace(0, 2 * np.pi, 64, endpoint=False)
    rho = (1 + 0.5 * np.cos(theta - 0.3) + 0.2 * np.sin(3 * theta)) / (2 * np.pi)
    ds = xr.Dataset({"density": (("time", "theta"), rho[None])}, coords={"theta": theta},
                    attrs={"method": "spectral"})
    edges = np.linspace(0, 2 * np.pi, 11)
    exact = (np.diff(edges) + 0.5 * np.diff(np.sin(edges - 0.3))
             - 0.2 / 3 * np.diff(np.cos(3 * edges))) / (2 * np.pi)
    np.testing.assert_allclose(circle_bin_masses(ds, edges)[0], exact, atol=1e-15)
    ds.attrs["method"] = "finite-volume"
    fv = circle_bin_masses(ds, np.linspace(0, 2 * np.pi, 9))[0]
    dx = 2 * np.pi / 64
    cells = rho * dx
    # bin b = [8b dx, (8b + 8) dx]: the right half of cell 8b, cells 8b+1..8b+7, the left
    # half of cell 8b+8 (cells are centred on the grid points)
    expect = [cells[8 * b] / 2 + cells[8 * b + 1: 8 * b + 8].sum() + cells[(8 * b + 8) % 64]
              / 2 for b in range(8)]
    np.testing.assert_allclose(fv, expect, rtol=0, atol=1e-15)


def test_arc_index_finds_the_arc_between_the_edges():
    bins = 7
    edges = equal_arcs(bins)
    assert edges[0] == 0 and edges[-1] == 2 * np.pi and len(edges) == bins + 1
    theta = np.random.default_rng(1).uniform(-4 * np.pi, 4 * np.pi, 5000)
    index = arc_index(3.0 * circle_points(theta), bins)  # any length: a direction
    wrapped = np.mod(theta, 2 * np.pi)
    assert np.all((edges[index] <= wrapped + 1e-15) & (wrapped - 1e-15 <= edges[index + 1]))
    assert arc_index(circle_points(theta).reshape(50, 100, 2), bins).shape == (50, 100)


def _linear_density_dataset(lmax: int) -> tuple[xr.Dataset, np.ndarray]:
    grid = SphereGrid(lmax)
    a = np.array([0.3, 0.0, 0.5])
    rho = (1 + grid.points @ a) / (4 * np.pi)
    ds = xr.Dataset({"density": (("time",) + grid.dims, rho[None])}, coords=grid.coords(),
                    attrs={"method": "spectral"})
    return ds, a


def test_sphere_bin_masses_of_a_spectral_density_converge_to_the_exact_masses():
    # rho = (1 + a.x)/(4 pi): the mass of a cell is (A + a . int x dA)/(4 pi), with the
    # area and first moment of the geodesic polygon exact (Van Oosterom-Strackee and the
    # arc-normal formula). The degree-5 cell quadrature errs by O(h^8) per cell: at least
    # 2^6 less per level (h halves) and summing to mass 1.
    ds, a = _linear_density_dataset(16)
    errors = []
    for level in (1, 2, 3):
        mesh = icosahedral_mesh(level)
        areas, moments = voronoi.polygon_areas_and_moments(
            mesh.centers, mesh.vertices, mesh.vertex_start, mesh.cell_vertices)
        q = sphere_bin_masses(ds, mesh)[0]
        errors.append(np.abs(q - (areas + moments @ a) / (4 * np.pi)).max())
        assert abs(q.sum() - 1) < 1e-14
    assert errors[1] < errors[0] / 2**6 and errors[2] < errors[1] / 2**6


def test_sphere_bin_masses_of_cell_values_on_their_own_mesh_are_exact():
    # Every quadrature point of a Voronoi cell is nearest its own generator: the mass of
    # a cell is its value times its area.
    mesh = icosahedral_mesh(2)
    rho = np.random.default_rng(0).random((2, mesh.n_cells))
    ds = xr.Dataset({"density": (("time", "cell"), rho)}, coords=mesh.coords(),
                    attrs={"method": "finite-volume"})
    np.testing.assert_allclose(sphere_bin_masses(ds, mesh), rho * mesh.weights, rtol=1e-14,
                               atol=0)
    assert math.isclose(float(mesh.weights.sum()), 4 * np.pi, rel_tol=1e-14)


def test_histogram_bins_of_both_geometries_share_one_interface():
    rng = np.random.default_rng(2)
    for geometry, count, d, measure in (("circle", 12, 2, 2 * np.pi),
                                        ("sphere", 162, 3, 4 * np.pi)):
        bins = histogram_bins(geometry, count)
        assert bins.geometry == geometry and bins.weights.shape == (count,)
        assert math.isclose(float(bins.weights.sum()), measure, rel_tol=1e-14)
        x = rng.standard_normal((3, 40, d))
        index = bins.locate(x / np.linalg.norm(x, axis=-1, keepdims=True))
        assert index.shape == (3, 40) and index.min() >= 0 and index.max() < count
        ds = xr.Dataset({"b": (("bin",), np.zeros(count))}, coords=bins.coords())
        assert ds.sizes["bin"] == count
        assert set(bins.variables()) == ({"bin_edges"} if geometry == "circle" else set())


def test_icosahedral_level_inverts_the_cell_count():
    for level in range(8):
        assert icosahedral_level(10 * 4**level + 2) == level
    for cells in (0, 41, 100, 643):
        with pytest.raises(ValueError, match="icosahedral cells"):
            icosahedral_level(cells)
