"""The sphere S^2: a Gauss-Legendre grid with its spherical-harmonic transforms.

Grid space: ``nlat`` Gauss-Legendre latitudes, ascending (south to north), times ``nlon``
equispaced longitudes ``2 pi k / nlon``; fields are ``(nlat, nlon)`` arrays. Coefficient
space: the packed complex ``a_lm`` of ``solvers.transforms.sht`` (its docstring has the
conventions, the exactness of the transforms and the two backends).
"""
from __future__ import annotations

import functools

import numpy as np

from solvers.grids.coordinates import lat_lon, read_only, unit_vectors
from solvers.transforms import sht
from solvers.transforms.legendre import gauss_legendre_latitudes
from solvers.transforms.sht import (
    alm_degrees,
    alm_index,
    alm_lmax,
    product_sizes,
)


class SphereGrid:
    """Gauss–Legendre grid on the unit sphere with its spherical-harmonic transforms.

    A ``solvers.grids.SpectralGrid`` (geometry ``"sphere"``, dims ``("lat", "lon")``).

    Args:
        lmax: largest degree of the coefficients (``>= 0``).
        nlat: number of latitudes, ``>= lmax + 1`` (default ``lmax + 1``).
        nlon: number of longitudes, ``>= 2 lmax + 1`` (default ``2 nlat``).
        threads: threads of the transforms (``None``: chosen from ``lmax``).
        backend: ``"ducc0"`` or ``"numpy"`` (``None``: ducc0 when importable).

    Attributes:
        lat, lon: latitudes (ascending, in (-pi/2, pi/2)) and longitudes (``2 pi k/nlon``).
        x: ``sin(lat)``, the Gauss–Legendre nodes.
        ring_weights: ``(nlat,)`` Gauss weights times ``2 pi / nlon``.
        weights: ``(nlat, nlon)`` area weights (sum ``4 pi``; a read-only broadcast of
            ``ring_weights``): ``sum(weights * f)`` is the exact integral of fields of
            degree ``<= 2 nlat - 1`` and ``< nlon`` in longitude.
        l, m: degree and order of each packed coefficient; ``laplacian = -l(l+1)``.

    The numpy backend transforms through buffers of the grid: one grid must not be used
    from two threads at once.
    """

    geometry = "sphere"
    dims = ("lat", "lon")
    components = ("x", "y", "z")
    has_transforms = True

    def __init__(self, lmax: int, nlat: int | None = None, nlon: int | None = None,
                 threads: int | None = None, backend: str | None = None):
        lmax = int(lmax)
        if lmax < 0:
            raise ValueError(f"lmax must be >= 0, got {lmax}")
        nlat = lmax + 1 if nlat is None else int(nlat)
        nlon = 2 * nlat if nlon is None else int(nlon)
        if nlat < lmax + 1:
            raise ValueError(f"nlat = {nlat} is too small for lmax = {lmax}: "
                             f"accepted nlat >= lmax + 1 = {lmax + 1}")
        if nlon < 2 * lmax + 1 or nlon < 2:
            raise ValueError(f"nlon = {nlon} is too small for lmax = {lmax}: "
                             f"accepted nlon >= max(2 lmax + 1, 2) = {max(2 * lmax + 1, 2)}")
        if backend is None:
            backend = "ducc0" if sht.HAVE_DUCC0 else "numpy"
        if backend not in sht.BACKENDS:
            raise ValueError(f"unknown SHT backend {backend!r}; valid: {sht.BACKENDS}")
        if backend == "ducc0" and not sht.HAVE_DUCC0:
            raise ValueError("backend 'ducc0' requested but ducc0 cannot be imported")
        self.lmax, self.nlat, self.nlon, self.backend = lmax, nlat, nlon, backend
        self.threads = sht.default_threads(lmax) if threads is None else max(1, int(threads))
        self.lat, wx = gauss_legendre_latitudes(nlat)
        self.lon = 2 * np.pi * np.arange(nlon) / nlon
        self.x = np.sin(self.lat)
        self.ring_weights = wx * (2 * np.pi / nlon)
        self.weights = np.broadcast_to(self.ring_weights[:, None], (nlat, nlon))
        self.l, self.m = self.degrees(lmax)
        self.laplacian = -(self.l * (self.l + 1.0))
        self._numpy: sht.LegendreTransforms | None = None

    @staticmethod
    def degrees(lmax: int) -> tuple[np.ndarray, np.ndarray]:
        """Arrays ``(l, m)`` of the packed coefficients of degree ``lmax``."""
        return alm_degrees(lmax)

    def index(self, l, m):
        """Position of ``a_lm`` in this grid's packed coefficients."""
        return alm_index(l, m, self.lmax)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.nlat, self.nlon)

    @functools.cached_property
    def points(self) -> np.ndarray:
        """``(nlat, nlon, 3)`` unit vectors of the nodes (read-only, made on first use)."""
        return read_only(unit_vectors(self.lat[:, None], self.lon[None, :]))

    def integrate(self, f: np.ndarray) -> float:
        """Integral over the sphere of grid values (Gauss–Legendre x trapezoid)."""
        return float(np.sum(self.ring_weights @ f))

    def coords(self) -> dict[str, np.ndarray]:
        """Dataset coordinates: ``lat`` and ``lon`` (new arrays)."""
        return {"lat": self.lat.copy(), "lon": self.lon.copy()}

    def locate(self, x: np.ndarray) -> np.ndarray:
        """Flat index ``i_lat nlon + i_lon`` of the node whose cell holds each unit vector
        of ``x`` ``(..., 3)``. The cell of a node is bounded by the mid-latitudes to its
        neighbouring rings (the poles beyond the last rings) and the mid-longitudes to its
        neighbours on the ring."""
        lat, lon = lat_lon(np.asarray(x, dtype=float))
        i_lat = np.searchsorted(0.5 * (self.lat[1:] + self.lat[:-1]), lat)
        i_lon = np.floor(lon * (self.nlon / (2 * np.pi)) + 0.5).astype(np.int64) % self.nlon
        return i_lat * self.nlon + i_lon

    # --- transforms --------------------------------------------------------------------
    def _check_lmax(self, lmax: int) -> int:
        if not 0 <= lmax <= self.lmax:
            raise ValueError(f"lmax = {lmax} does not fit this grid: accepted "
                             f"0 <= lmax <= {self.lmax}")
        return lmax

    def _legendre(self) -> sht.LegendreTransforms:
        """The numpy backend's tables and buffers (made on first use)."""
        if self._numpy is None:
            self._numpy = sht.LegendreTransforms(self.lmax, self.lat, self.ring_weights,
                                                 self.nlon, self.threads)
        return self._numpy

    def synthesis(self, alm: np.ndarray) -> np.ndarray:
        """Grid values (a new ``(nlat, nlon)`` array) of the real field with coefficients
        ``alm`` (packed, of any degree ``<= self.lmax``; the degree is read from the size)."""
        alm = np.ascontiguousarray(alm, dtype=complex)
        if alm.ndim != 1:
            raise ValueError(f"alm must be 1-D, got shape {alm.shape}")
        lmax = self._check_lmax(alm_lmax(alm.size))
        if self.backend == "ducc0":
            return sht.ducc0_synthesis(alm, lmax, self.shape, self.threads)
        return self._legendre().synthesis(alm, lmax)

    def analysis(self, field: np.ndarray, lmax: int | None = None) -> np.ndarray:
        """Coefficients (a new packed array of degree ``lmax``, default ``self.lmax``) of
        grid values ``field`` (Gauss–Legendre quadrature: exact for band-limited fields).

        A smaller ``lmax`` gives the truncated (dealiased) coefficients directly.
        """
        lmax = self._check_lmax(self.lmax if lmax is None else int(lmax))
        field = np.asarray(field, dtype=float)
        if field.shape != self.shape:
            raise ValueError(f"field has shape {field.shape}, the grid {self.shape}")
        if self.backend == "ducc0":
            return sht.ducc0_analysis(field, lmax, self.threads)
        return self._legendre().analysis(field, lmax)

    def __repr__(self) -> str:
        return (f"SphereGrid(lmax={self.lmax}, nlat={self.nlat}, nlon={self.nlon}, "
                f"backend={self.backend!r}, threads={self.threads})")


def product_grid(lmax: int, threads: int | None = None,
                 backend: str | None = None, other_lmax: int | None = None) -> SphereGrid:
    """Grid on which the product of two fields of degree ``<= lmax`` (or of one of degree
    ``lmax`` and one of degree ``other_lmax``) is sampled exactly enough that ``analysis``
    (to degree ``lmax``) returns its exact truncation (sizes: ``product_sizes``). A
    smooth factor of low degree, such as a convolution potential, needs a grid barely
    larger than ``SphereGrid(lmax)`` instead of the 3/2 rule's 2.25 times the points.
    """
    nlat, nlon = product_sizes(lmax, other_lmax)
    return SphereGrid(lmax, nlat, nlon, threads=threads, backend=backend)
