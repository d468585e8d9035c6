"""The public front ``meanfield.metrics.wasserstein``: how it reads measures (points,
(points, weights), evolve frames), infers and checks the geometry, dispatches to the
exact, Sinkhorn, sliced and Dirac methods, and refuses bad input before any work."""
from __future__ import annotations

import importlib
import sys
import types

import numpy as np
import pytest
import xarray as xr

import meanfield.metrics
from meanfield.metrics import sphere_transport as st
from meanfield.metrics.sphere_sinkhorn import sinkhorn_divergence
from meanfield.metrics.wasserstein import wasserstein

# the module (the package attribute of the same name is the function)
front = importlib.import_module("meanfield.metrics.wasserstein")
from solvers.grids.coordinates import lat_lon
from solvers.grids.mesh import icosahedral_mesh
from solvers.grids.sphere import SphereGrid


def unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def sphere_frame(lmax=7, rho=None, times=None):
    g = SphereGrid(lmax)
    rho = np.full(g.shape, 1 / (4 * np.pi)) if rho is None else rho
    dims = ("lat", "lon")
    data = rho if times is None else np.repeat(rho[None], times, axis=0)
    ddims = dims if times is None else ("time",) + dims
    return xr.Dataset({"density": (ddims, data), "weights": (dims, np.array(g.weights))},
                      coords={"lat": g.lat, "lon": g.lon},
                      attrs={"geometry": "sphere", "method": "spectral"})


def mesh_frame(level=2):
    mesh = icosahedral_mesh(level)
    lat, lon = lat_lon(mesh.centers)
    return xr.Dataset({"density": (("cell",), np.full(mesh.n_cells, 1 / (4 * np.pi))),
                       "weights": (("cell",), np.array(mesh.weights))},
                      coords={"lat": ("cell", lat), "lon": ("cell", lon)},
                      attrs={"geometry": "sphere", "method": "finite-volume"})


def circle_frame(n=64, method="spectral"):
    theta = 2 * np.pi * np.arange(n) / n
    return xr.Dataset({"density": (("theta",), np.full(n, 1 / (2 * np.pi))),
                       "weights": (("theta",), np.full(n, 2 * np.pi / n))},
                      coords={"theta": theta},
                      attrs={"geometry": "circle", "method": method})


@pytest.fixture
def fake_circle(monkeypatch):
    """A stand-in ``circle_transport`` recording what the front passes it."""
    calls = []

    class FakeMeasure:
        def __init__(self, kind, data):
            self.kind, self.data = kind, data

        @classmethod
        def from_points(cls, angles, weights=None):
            return cls("points", (np.asarray(angles), weights))

        @classmethod
        def from_density(cls, values, method):
            return cls(method, np.asarray(values))

    def circle_wasserstein(mu, nu, p=2.0, *, modulo_rotation=False):
        calls.append(("pair", mu, nu, p, modulo_rotation))
        return 1.25

    def circle_wasserstein_to_dirac(mu, angle, p=2.0):
        calls.append(("dirac", mu, angle, p))
        return 0.5

    mod = types.ModuleType("meanfield.metrics.circle_transport")
    mod.CircleMeasure = FakeMeasure
    mod.circle_wasserstein = circle_wasserstein
    mod.circle_wasserstein_to_dirac = circle_wasserstein_to_dirac
    monkeypatch.setitem(sys.modules, "meanfield.metrics.circle_transport", mod)
    return calls


def test_circle_dispatch(fake_circle):
    assert wasserstein(np.array([0.1, 0.2]), np.array([1.0, 2.0, 3.0]), p=1) == 1.25
    kind, mu, _nu, p, rot = fake_circle[-1]
    assert (kind, p, rot, mu.kind) == ("pair", 1.0, False, "points")
    assert np.allclose(mu.data[0], [0.1, 0.2]) and np.allclose(mu.data[1], 0.5)
    # unit vectors of R^2 are the circle; angles come out in [0, 2 pi)
    pts = np.array([[0.0, -1.0], [1.0, 0.0]])
    wasserstein(pts, np.array([0.3]), modulo_rotation=True)
    assert np.allclose(fake_circle[-1][1].data[0], [1.5 * np.pi, 0.0])
    assert fake_circle[-1][4] is True
    # a single point is a Dirac: the closed form
    assert wasserstein(np.array([0.1, 0.2]), np.array([3.0])) == 0.5
    assert fake_circle[-1][0] == "dirac" and fake_circle[-1][2] == 3.0
    # frames in their own representation, normalised
    ds = circle_frame(32, "finite-volume")
    ds["density"] = ds["density"] * 2
    wasserstein(ds, (np.array([0.5]), np.array([2.0])))
    assert fake_circle[-1][1].kind == "finite-volume"
    assert np.allclose(fake_circle[-1][1].data, 1 / (2 * np.pi))


def test_circle_with_the_real_solver():
    pytest.importorskip("meanfield.metrics.circle_transport")
    assert wasserstein(np.array([0.5]), np.array([2.0])) == pytest.approx(1.5, rel=1e-12)
    assert wasserstein(np.array([0.1]), np.array([6.2])) == pytest.approx(
        2 * np.pi - 6.1, rel=1e-12)
    # uniform vs a Dirac: W2 = pi / sqrt(3), W1 = pi / 2
    assert wasserstein(circle_frame(64), np.array([1.0])) == pytest.approx(
        np.pi / np.sqrt(3), rel=1e-10)
    assert wasserstein(circle_frame(64, "finite-volume"), np.array([1.0]), p=1) == \
        pytest.approx(np.pi / 2, rel=1e-10)


def test_sphere_dispatch_exact_and_dirac():
    rng = np.random.default_rng(0)
    x, y = unit(rng.normal(size=(30, 3))), unit(rng.normal(size=(20, 3)))
    b = rng.uniform(0.5, 1.5, 20)
    b3 = 3 * b / b.sum()
    exact = st.sphere_wasserstein(x, y, None, b)
    assert wasserstein(x, (y, b / b.sum())) == pytest.approx(exact, rel=1e-14)
    assert wasserstein(x, (y, b / b.sum()), method="exact") == pytest.approx(exact, rel=1e-14)
    # unnormalised weights with equal totals: normalised
    assert wasserstein((x, np.full(30, 0.1)), (y, b3)) == pytest.approx(exact, rel=1e-12)
    x0 = unit([1.0, 2.0, 2.0])
    for mu, nu in ((x, x0[None]), (x0[None], x)):
        assert wasserstein(mu, nu, method="dirac") == pytest.approx(
            st.wasserstein_to_dirac(x, x0), rel=1e-14)
    assert wasserstein(x, y, method="sinkhorn", reg=0.1) == pytest.approx(
        sinkhorn_divergence(x, y, reg=0.1) ** 0.5, rel=1e-12)


def test_sphere_modulo_rotation():
    rng = np.random.default_rng(4)
    x = unit(rng.normal(size=(25, 3)) + [0, 0, 2.0])
    rot = np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]]) @ np.array(
        [[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])
    y = x @ rot.T
    assert wasserstein(x, y) > 0.5
    assert wasserstein(x, y, modulo_rotation=True) < 1e-6
    with pytest.raises(ValueError, match="nearest Dirac"):
        wasserstein(x, y[:1], modulo_rotation=True)


def test_sphere_frames_as_atoms():
    x0 = unit([0.2, 0.1, 1.0])
    target = np.sqrt(np.pi**2 / 2 - 2)
    assert wasserstein(sphere_frame(15), x0[None]) == pytest.approx(target, abs=1e-3)
    assert wasserstein(sphere_frame(15, times=1), x0[None]) == pytest.approx(target, abs=1e-3)
    assert wasserstein(mesh_frame(3), x0[None]) == pytest.approx(target, abs=5e-3)
    # two frames of the same uniform density on different grids: a small O(h) distance
    # from the atoms (by name), which auto and exact refuse (all of it is quantisation)
    assert wasserstein(sphere_frame(7), mesh_frame(2), method="atoms") < np.pi / 8
    with pytest.raises(ValueError, match='"linearised".*"atoms".*"auto"'):
        wasserstein(sphere_frame(7), mesh_frame(2), method="exact")
    with pytest.raises(ValueError, match="too close for their grid"):
        wasserstein(sphere_frame(7), mesh_frame(2))


def test_geometry_inference_and_disagreement():
    x3 = unit(np.eye(3))
    with pytest.raises(ValueError, match="circle.*sphere|sphere.*circle"):
        wasserstein(np.array([0.1, 0.2]), x3)
    with pytest.raises(ValueError, match="geometry='circle'"):
        wasserstein(x3, x3, geometry="circle")
    with pytest.raises(ValueError, match="geometry must be"):
        wasserstein(x3, x3, geometry="torus")
    with pytest.raises(ValueError, match="R\\^3.*R\\^4"):
        wasserstein(x3, unit(np.eye(4)))
    with pytest.raises(ValueError, match="for the sphere"):
        wasserstein(np.array([0.1]), np.array([0.2, 0.3]), method="sliced")


def test_bad_input_before_any_work():
    x = unit(np.random.default_rng(1).normal(size=(5, 3)))
    with pytest.raises(ValueError, match="p must be"):
        wasserstein(x, x, p=0.9)
    with pytest.raises(ValueError, match="NaN"):
        wasserstein(x, np.where(np.eye(5, 3) > 0, np.nan, x))
    with pytest.raises(ValueError, match=">= 0"):
        wasserstein((x, np.array([1, 1, 1, 1, -1.0])), x)
    with pytest.raises(ValueError, match="different total masses"):
        wasserstein((x, np.full(5, 1.0)), x)  # counts against bare points
    with pytest.raises(ValueError, match="not on the unit sphere"):
        wasserstein(x * (1 + 1e-7), x)
    with pytest.raises(ValueError, match="method must be"):
        wasserstein(x, x, method="fast")
    with pytest.raises(ValueError, match="single point"):
        wasserstein(x, x, method="dirac")
    with pytest.raises(ValueError, match="\"exact\" and \"atoms\" only"):
        wasserstein(x, x, method="sliced", modulo_rotation=True)
    with pytest.raises(ValueError, match="tuple must be"):
        wasserstein((x, None, None), x)


def test_frames_that_do_not_match():
    with pytest.raises(ValueError, match="one\\s+frame|isel"):
        wasserstein(sphere_frame(7, times=3), unit([[0, 0, 1.0]]))
    bad = sphere_frame(7)
    bad.attrs["geometry"] = "circle"
    with pytest.raises(ValueError, match="does not\\s+match the geometry"):
        wasserstein(bad, np.array([0.1]))
    bad = circle_frame(16)
    bad = bad.assign_coords(theta=bad["theta"] + 0.01)
    with pytest.raises(ValueError, match="2 pi j / n"):
        wasserstein(bad, np.array([0.1]))
    neg = sphere_frame(7)
    neg["density"][0, 0] = -1.0
    with pytest.raises(ValueError, match="negative"):
        wasserstein(neg, unit([[0, 0, 1.0]]))
    with pytest.raises(ValueError, match="different total masses"):
        wasserstein(sphere_frame(7, np.full((8, 16), 1.0)), unit([[0, 0, 1.0]]))


def test_auto_refuses_too_large_and_names_the_methods(monkeypatch):
    monkeypatch.setattr(st, "MEMORY_LIMIT_BYTES", 1000)
    x = unit(np.random.default_rng(2).normal(size=(10, 3)))
    with pytest.raises(ValueError, match='"sinkhorn".*"sliced"'):
        wasserstein(x, x)
    with pytest.raises(ValueError, match='"sinkhorn".*"sliced"'):
        wasserstein(x, x, method="exact")
    # a Dirac needs no dense matrix
    assert wasserstein(x, x[:1]) > 0


def test_the_package_attribute_is_the_function():
    assert meanfield.metrics.wasserstein is wasserstein
    assert callable(meanfield.metrics.wasserstein)


def test_modules_do_not_import_pot_at_import_time():
    # ``import meanfield`` must stay light: POT is imported inside the functions that use
    # it. Checked statically (a subprocess importing meanfield costs ~7 s).
    import ast
    import pathlib

    root = pathlib.Path(front.__file__).parent
    for name in ("__init__.py", "wasserstein.py", "sphere_transport.py", "sobolev.py"):
        tree = ast.parse((root / name).read_text())
        for node in tree.body:  # module level only
            if isinstance(node, ast.Import):
                assert all(a.name.split(".")[0] != "ot" for a in node.names), name
            if isinstance(node, ast.ImportFrom):
                assert (node.module or "").split(".")[0] != "ot", name
