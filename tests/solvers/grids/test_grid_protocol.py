"""Every PDE grid through the ``Grid`` protocol: the members exist and agree with each
other, the weights measure the manifold, ``locate`` finds the node's cell (checked against
brute force), and the transforms, where they exist, invert each other."""
from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

from solvers.grids import GEOMETRIES, Grid, SpectralGrid
from solvers.grids.circle import CircleGrid
from solvers.grids.coordinates import angle, lat_lon, unit_vectors
from solvers.grids.mesh import icosahedral_mesh, latlon_mesh
from solvers.grids.sphere import SphereGrid
from solvers.transforms import sht

SPHERE_BACKENDS = ["ducc0", "numpy"] if sht.HAVE_DUCC0 else ["numpy"]

GRIDS = {
    "circle-64": lambda: CircleGrid(64),
    "circle-odd": lambda: CircleGrid(45),
    "sphere-16": lambda: SphereGrid(16),
    "sphere-odd-numpy": lambda: SphereGrid(12, nlat=19, nlon=31, backend="numpy"),
    "mesh-icosahedral": lambda: icosahedral_mesh(3),
    "mesh-latlon": lambda: latlon_mesh(8, 16),
}
MEASURE = {"circle": 2 * math.pi, "sphere": 4 * math.pi}


@pytest.fixture(params=list(GRIDS), scope="module")
def grid(request):
    return GRIDS[request.param]()


def random_unit(rng, k: int, d: int) -> np.ndarray:
    x = rng.standard_normal((k, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_members_agree(grid):
    assert isinstance(grid, Grid)
    assert isinstance(grid, SpectralGrid) == grid.has_transforms
    assert grid.geometry in GEOMETRIES
    d = {"circle": 2, "sphere": 3}[grid.geometry]
    assert len(grid.components) == d and grid.components == ("x", "y", "z")[:d]
    assert len(grid.dims) == len(grid.shape)
    assert grid.points.shape == grid.shape + (d,)
    assert not grid.points.flags.writeable
    np.testing.assert_allclose(np.linalg.norm(grid.points, axis=-1), 1.0, atol=1e-15)
    assert grid.weights.shape == grid.shape
    assert np.all(grid.weights > 0)


def test_weights_measure_the_manifold(grid):
    total = MEASURE[grid.geometry]
    assert abs(float(np.sum(grid.weights)) - total) < 1e-13 * total
    assert abs(float(grid.integrate(np.ones(grid.shape))) - total) < 1e-13 * total


def test_integrate_is_exact_on_low_degrees():
    # int cos^2 = pi on S^1; int z^2 = 4 pi / 3 and int x y z = 0 on S^2 (the spectral
    # grids integrate these polynomials exactly).
    c = CircleGrid(16)
    assert abs(c.integrate(c.points[:, 0] ** 2) - math.pi) < 1e-14
    s = SphereGrid(4)
    x = s.points
    assert abs(s.integrate(x[..., 2] ** 2) - 4 * math.pi / 3) < 1e-14
    assert abs(s.integrate(x[..., 0] * x[..., 1] * x[..., 2])) < 1e-15


def test_coords_make_a_dataset_of_the_nodes(grid):
    coords = grid.coords()
    field = np.arange(np.prod(grid.shape), dtype=float).reshape(grid.shape)
    ds = xr.Dataset({"f": (grid.dims, field)}, coords=coords)
    assert ds["f"].dims == grid.dims
    if grid.geometry == "circle":
        np.testing.assert_allclose(angle(grid.points), ds["theta"].values, atol=1e-15)
    else:
        lat, lon = np.broadcast_arrays(*(ds[name].values for name in ("lat", "lon"))) \
            if grid.dims == ("cell",) else np.meshgrid(ds["lat"].values, ds["lon"].values,
                                                       indexing="ij")
        np.testing.assert_allclose(unit_vectors(lat, lon), grid.points, atol=1e-15)
    # new arrays: writing to them leaves the grid alone
    before = grid.points.copy()
    for value in coords.values():
        (value[1] if isinstance(value, tuple) else value)[...] = 0.0
    np.testing.assert_array_equal(grid.points, before)


def test_locate_returns_each_node_for_itself(grid):
    index = grid.locate(grid.points)
    np.testing.assert_array_equal(index, np.arange(index.size).reshape(grid.shape))


def _brute_force_cell(grid, x: np.ndarray) -> np.ndarray:
    """The cell of each point by exhaustive search: nearest node (circle, icosahedral
    mesh: the Voronoi cell); nearest ring latitude and nearest longitude on it
    (Gauss-Legendre); the band and sector between the edges (lat-lon mesh)."""
    if isinstance(grid, SphereGrid):
        lat, lon = lat_lon(x)
        i_lat = np.argmin(np.abs(lat[:, None] - grid.lat[None, :]), axis=1)
        gap = np.abs(np.mod(lon[:, None] - grid.lon[None, :] + np.pi, 2 * np.pi) - np.pi)
        return i_lat * grid.nlon + np.argmin(gap, axis=1)
    if getattr(grid, "kind", None) == "latlon":
        nlat = grid.level
        nlon = grid.n_cells // nlat
        lat, lon = lat_lon(x)
        lat_edges = np.linspace(-np.pi / 2, np.pi / 2, nlat + 1)[1:-1]
        lon_edges = np.linspace(0, 2 * np.pi, nlon + 1)[1:-1]
        return ((lat[:, None] >= lat_edges).sum(axis=1) * nlon
                + (lon[:, None] >= lon_edges).sum(axis=1))
    return np.argmax(x @ grid.points.reshape(-1, x.shape[1]).T, axis=1)


def test_locate_agrees_with_brute_force(grid):
    rng = np.random.default_rng(3)
    x = random_unit(rng, 2000, grid.points.shape[-1])
    np.testing.assert_array_equal(grid.locate(x), _brute_force_cell(grid, x))
    # leading axes are kept
    assert grid.locate(x.reshape(20, 100, -1)).shape == (20, 100)


@pytest.mark.parametrize("n", [16, 45])
def test_circle_transforms_invert_each_other(n):
    grid = CircleGrid(n)
    f = np.random.default_rng(n).standard_normal(n)
    np.testing.assert_allclose(grid.synthesis(grid.analysis(f)), f, atol=1e-14)
    c = grid.analysis(np.cos(3 * grid.theta))
    expect = np.zeros(n // 2 + 1, dtype=complex)
    expect[3] = 0.5  # cos 3 theta = (e^{3i theta} + e^{-3i theta}) / 2
    np.testing.assert_allclose(c, expect, atol=1e-15)


@pytest.mark.parametrize("backend", SPHERE_BACKENDS)
def test_sphere_transforms_invert_each_other(backend):
    grid = SphereGrid(20, nlat=23, nlon=45, backend=backend)
    rng = np.random.default_rng(7)
    alm = rng.standard_normal(grid.l.size) + 1j * rng.standard_normal(grid.l.size)
    alm[grid.m == 0] = alm[grid.m == 0].real  # a real field: a_l0 real
    np.testing.assert_allclose(grid.analysis(grid.synthesis(alm)), alm, atol=1e-12)
    # Y_10 = sqrt(3 / (4 pi)) sin(lat): its only coefficient is a_10 = 1
    y10 = math.sqrt(3 / (4 * math.pi)) * grid.points[..., 2]
    expect = np.zeros_like(alm)
    expect[grid.index(1, 0)] = 1.0
    np.testing.assert_allclose(grid.analysis(y10), expect, atol=1e-14)
