"""Coordinates of points of S^1 and S^2: angles to unit vectors and back.

The nodes of every grid are unit vectors (``Grid.points``); these are the conversions the
grids and their users share, so that one formula gives one set of numbers everywhere.
"""
from __future__ import annotations

import numpy as np


def circle_points(theta: np.ndarray) -> np.ndarray:
    """Points ``(..., 2)`` of the unit circle at angles ``theta`` (radians)."""
    return np.stack([np.cos(theta), np.sin(theta)], axis=-1)


def angle(x: np.ndarray) -> np.ndarray:
    """Angle in [0, 2 pi) of points ``(..., 2)`` of the plane."""
    return np.mod(np.arctan2(x[..., 1], x[..., 0]), 2 * np.pi)


def read_only(a: np.ndarray) -> np.ndarray:
    """``a`` marked read-only (grids share their node arrays; callers must not write)."""
    a.setflags(write=False)
    return a


def lat_lon(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Latitude in [-pi/2, pi/2] and longitude in [0, 2 pi) of unit vectors ``(..., 3)``."""
    return np.arcsin(np.clip(x[..., 2], -1, 1)), angle(x)


def colat_lon(x: np.ndarray) -> np.ndarray:
    """``(..., 2)`` colatitude in [0, pi] and longitude in [0, 2 pi) of unit vectors
    ``(..., 3)``: the ``loc`` of ducc0's transforms at arbitrary points."""
    return np.stack([np.arccos(np.clip(x[..., 2], -1, 1)), angle(x)], axis=-1)


def unit_vectors(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """Points ``(..., 3)`` of the unit sphere at latitudes/longitudes (radians, broadcast)."""
    lat, lon = np.broadcast_arrays(lat, lon)
    c = np.cos(lat)
    return np.stack([c * np.cos(lon), c * np.sin(lon), np.sin(lat)], axis=-1)
