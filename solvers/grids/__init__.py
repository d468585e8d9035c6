"""Grids of the PDE solvers: the circle, the Gauss-Legendre sphere, the icosahedral mesh.

All three answer the same questions through one protocol, ``Grid``, so that what does not
depend on the geometry (the result dataset, diagnostics, binning, initial values at the
nodes) asks the grid instead of testing its class:

============  ======================  ==========================  =======================
member        ``CircleGrid``          ``SphereGrid``              ``SphereMesh``
============  ======================  ==========================  =======================
geometry      ``"circle"``            ``"sphere"``                ``"sphere"``
dims          ``("theta",)``          ``("lat", "lon")``          ``("cell",)``
shape         ``(n,)``                ``(nlat, nlon)``            ``(n_cells,)``
points        ``(n, 2)``              ``(nlat, nlon, 3)``         ``(n_cells, 3)`` centres
weights       ``2 pi / n``            Gauss x trapezoid           cell areas
coords()      theta                   lat, lon                    lat(cell), lon(cell)
components    ``("x", "y")``          ``("x", "y", "z")``         ``("x", "y", "z")``
transforms    Fourier (FFT)           spherical harmonics         none
locate        nearest node            GL cell of the node         Voronoi cell
============  ======================  ==========================  =======================

Grid values are arrays of ``shape`` (leading axes allowed where a member says so); a
"node" is one entry of that array, and ``locate`` returns flat indices into it (``ravel``
order). Grids with ``has_transforms`` also satisfy ``SpectralGrid``: ``analysis`` (grid
values -> coefficients) and ``synthesis`` (coefficients -> grid values), inverse to each
other on band-limited fields.
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

GEOMETRIES = ("circle", "sphere")


@runtime_checkable
class Grid(Protocol):
    """Nodes of a PDE discretization with quadrature weights.

    Attributes:
        geometry: ``"circle"`` (S^1 in R^2) or ``"sphere"`` (S^2 in R^3).
        dims: names of the dataset dimensions of one field, one per axis of ``shape``.
        components: names of the Cartesian components of ``points`` (``"x", "y"[, "z"]``).
        has_transforms: whether the grid has ``analysis`` / ``synthesis`` (a
            ``SpectralGrid``).
    """

    geometry: str
    dims: tuple[str, ...]
    components: tuple[str, ...]
    has_transforms: bool

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of one field of grid values."""
        ...

    @property
    def points(self) -> np.ndarray:
        """Unit vectors of the nodes, ``shape + (len(components),)`` (read-only)."""
        ...

    @property
    def weights(self) -> np.ndarray:
        """Quadrature weights, ``shape`` (they sum to the length 2 pi or area 4 pi)."""
        ...

    def integrate(self, f: np.ndarray) -> Any:
        """Integral over the manifold of grid values ``f`` (the weighted sum)."""
        ...

    def coords(self) -> dict[str, Any]:
        """Dataset coordinates of the nodes (new arrays), as xarray takes them: a name to
        an array along its own dimension, or to ``(dimension, array)``."""
        ...

    def locate(self, x: np.ndarray) -> np.ndarray:
        """Flat index of the node whose cell holds each unit vector of ``x`` ``(..., d)``
        (``x.shape[:-1]`` integers)."""
        ...


@runtime_checkable
class SpectralGrid(Grid, Protocol):
    """A ``Grid`` with transforms between grid values and spectral coefficients."""

    def analysis(self, f: np.ndarray) -> np.ndarray:
        """Coefficients (a new array) of grid values ``f``."""
        ...

    def synthesis(self, c: np.ndarray) -> np.ndarray:
        """Grid values (a new array) of coefficients ``c``."""
        ...
