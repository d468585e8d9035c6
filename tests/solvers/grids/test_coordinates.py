"""Angles <-> unit vectors (``solvers.grids.coordinates``): each conversion inverts the
other, and the ranges are the documented ones."""
from __future__ import annotations

import numpy as np

from solvers.grids.coordinates import (
    angle,
    circle_points,
    colat_lon,
    lat_lon,
    unit_vectors,
)


def test_circle_round_trip():
    x = np.random.default_rng(0).standard_normal((500, 2))
    theta = angle(x)
    assert np.all((theta >= 0) & (theta < 2 * np.pi))
    np.testing.assert_allclose(circle_points(theta),
                               x / np.linalg.norm(x, axis=1, keepdims=True), atol=1e-15)


def test_sphere_round_trips():
    x = np.random.default_rng(1).standard_normal((500, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    lat, lon = lat_lon(x)
    assert np.all(np.abs(lat) <= np.pi / 2) and np.all((lon >= 0) & (lon < 2 * np.pi))
    np.testing.assert_allclose(unit_vectors(lat, lon), x, atol=1e-15)
    loc = colat_lon(x.reshape(20, 25, 3))
    assert loc.shape == (20, 25, 2)
    np.testing.assert_allclose(loc.reshape(-1, 2)[:, 0], np.pi / 2 - lat, atol=1e-14)
    np.testing.assert_array_equal(loc.reshape(-1, 2)[:, 1], lon)
    # the poles: latitude +-pi/2 whatever the rounding of z
    np.testing.assert_array_equal(lat_lon(np.array([[0, 0, 1 + 1e-16], [0, 0, -1]]))[0],
                                  [np.pi / 2, -np.pi / 2])
