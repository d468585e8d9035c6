"""Masses of a PDE solution in bins, and the bins of points: what a histogram of tokens
is compared with. ``histogram_bins(geometry, count)`` gives the bins of either geometry
behind one interface (``weights``, ``locate``, ``masses``, ``coords``, ``variables``),
so a comparison need not know which it has.

- circle: arcs between given edges (``equal_arcs``: ``b`` arcs from 0; ``arc_index`` bins
  points). The PDE mass of an arc is exact: from the Fourier series (spectral) or the
  cell averages (finite volumes, piecewise constant).
- sphere: the cells of a ``SphereMesh`` (points are binned by its ``locate``, the
  ``solvers.grids.Grid`` protocol). The PDE mass of a cell is a degree-5
  quadrature (``cell_averages``) of the spectral solution (spectral) or of the
  piecewise-constant finite-volume solution (its value at a quadrature point is that of
  the nearest PDE cell; the quadrature triangles are refined 3 times, so the cut PDE cells
  along the edges cost O(h^2)).
- zonal (S^{d-1}, densities of t = <x, e>): intervals of t (``PolarBins``), equal across
  the span that holds all but ``BIN_TAIL`` of the PDE's mass on either side at every
  saved time, with the two tails [-1, lo] and [hi, 1] as bins of their own where they are
  not empty; points are binned by their first component t. The PDE mass of an interval
  is exact (``meanfield.metrics.zonal_marginal``: the spectral series integrated by a
  Gauss rule exact to round-off, or the finite volumes' piecewise-constant density with
  the exact measure of the cut cells).
"""
from __future__ import annotations

import numpy as np
import xarray as xr

from meanfield.metrics import zonal_marginal as zm
from solvers.grids.coordinates import angle, colat_lon, lat_lon, unit_vectors
from solvers.grids.mesh import SphereMesh, icosahedral_level, icosahedral_mesh
from solvers.grids.mesh import cell_averages as mesh_cell_averages
from solvers.grids.sphere import SphereGrid
from solvers.transforms.sht import alm_lmax


def equal_arcs(bins: int) -> np.ndarray:
    """The ``bins + 1`` edges of ``bins`` equal arcs of [0, 2 pi]."""
    return np.linspace(0, 2 * np.pi, bins + 1)


def arc_index(x: np.ndarray, bins: int) -> np.ndarray:
    """Index of the arc of ``equal_arcs(bins)`` holding each point ``(..., 2)``."""
    return np.minimum((angle(x) / (2 * np.pi / bins)).astype(int), bins - 1)


def circle_bin_masses(ds: xr.Dataset, edges: np.ndarray) -> np.ndarray:
    """PDE mass of the arcs between ``edges`` (increasing, spanning 2 pi), per time."""
    rho = ds["density"].values
    n = rho.shape[1]
    if ds.attrs["method"] == "spectral":
        c = np.fft.rfft(rho, axis=1) / n  # c_k of rho = sum_k c_k e^{ik theta}
        k = np.arange(1, c.shape[1])
        if n % 2 == 0:
            c[:, -1] /= 2  # the Nyquist mode counted once (the cosine of the grid values)
        # Antiderivative: c_0 theta + 2 Re sum_{k>0} c_k e^{ik theta} / (ik).
        e = np.exp(1j * np.outer(edges, k)) / (1j * k)
        cumulative = c[:, :1].real * edges + 2 * np.real(c[:, 1:] @ e.T)
        return np.diff(cumulative, axis=1)
    dx = 2 * np.pi / n
    # Piecewise-constant density on cells [theta_j - dx/2, theta_j + dx/2]: the cumulative
    # mass from the first cell's left edge a is linear between cell edges; an edge past
    # a + 2 pi wraps around with the whole mass added.
    a = float(ds["theta"].values[0]) - dx / 2
    span = a + dx * np.arange(n + 1)
    cum = np.concatenate([np.zeros((rho.shape[0], 1)), np.cumsum(rho * dx, axis=1)], axis=1)
    laps = np.floor((edges - a) / (2 * np.pi))
    local = edges - 2 * np.pi * laps
    values = np.stack([np.interp(local, span, row) + laps * row[-1] for row in cum])
    return np.diff(values, axis=1)


def sphere_bin_masses(ds: xr.Dataset, mesh: SphereMesh) -> np.ndarray:
    """PDE mass of each cell of ``mesh``, per time."""
    rho = ds["density"].values
    if "cell" in ds["density"].dims:
        from scipy.spatial import cKDTree
        tree = cKDTree(unit_vectors(ds["lat"].values, ds["lon"].values))
        return np.stack([mesh_cell_averages(mesh, lambda x, r=frame: r[tree.query(x)[1]],
                                            refine=3) * mesh.weights for frame in rho])
    lmax = ds.sizes["lat"] - 1
    grid = SphereGrid(lmax)
    out = []
    for frame in rho:
        alm = grid.analysis(frame)
        out.append(mesh_cell_averages(mesh, lambda x, a=alm: synthesis_at(a, x))
                   * mesh.weights)
    return np.stack(out)


def synthesis_at(alm: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Values at unit vectors ``points`` (k, 3) of the real field with packed ``alm``."""
    import ducc0

    loc = colat_lon(points)
    return ducc0.sht.experimental.synthesis_general(
        alm=np.ascontiguousarray(alm)[None], spin=0, lmax=alm_lmax(alm.size),
        loc=np.ascontiguousarray(loc), epsilon=1e-13)[0]


class ArcBins:
    """``count`` equal arcs of [0, 2 pi) from 0: the bins of a histogram on the circle.

    Attributes:
        edges: the ``count + 1`` arc ends.
        weights: the arc lengths.
    """

    geometry = "circle"

    def __init__(self, count: int):
        self.count = int(count)
        self.edges = equal_arcs(self.count)
        self.weights = np.full(self.count, 2 * np.pi / self.count)

    def locate(self, x: np.ndarray) -> np.ndarray:
        """The arc of each point ``(..., 2)``."""
        return arc_index(x, self.count)

    def masses(self, ds: xr.Dataset) -> np.ndarray:
        """PDE mass of each arc, per time (exact)."""
        return circle_bin_masses(ds, self.edges)

    def coords(self) -> dict:
        """Dataset coordinates: ``bin``, the arc midpoints."""
        return {"bin": (self.edges[:-1] + self.edges[1:]) / 2}

    def variables(self) -> dict:
        """Dataset variables: ``bin_edges``."""
        return {"bin_edges": (("bin_edge",), self.edges)}


class CellBins:
    """The cells of a sphere mesh: the bins of a histogram on the sphere.

    Attributes:
        mesh: the ``SphereMesh``.
        weights: the cell areas.
    """

    geometry = "sphere"

    def __init__(self, mesh: SphereMesh):
        self.mesh = mesh
        self.weights = mesh.weights

    def locate(self, x: np.ndarray) -> np.ndarray:
        """The cell of each unit vector ``(..., 3)`` (``SphereMesh.locate``)."""
        return self.mesh.locate(x)

    def masses(self, ds: xr.Dataset) -> np.ndarray:
        """PDE mass of each cell, per time (``sphere_bin_masses``)."""
        return sphere_bin_masses(ds, self.mesh)

    def coords(self) -> dict:
        """Dataset coordinates: ``bin`` (the cell index), ``bin_lat``, ``bin_lon`` (of the
        generators)."""
        lat, lon = lat_lon(self.mesh.centers)
        return {"bin": np.arange(self.mesh.n_cells), "bin_lat": ("bin", lat),
                "bin_lon": ("bin", lon)}

    def variables(self) -> dict:
        """Dataset variables: none."""
        return {}


BIN_TAIL = 1e-8  # PDE mass left to each tail bin of a zonal histogram (at every time)


class PolarBins:
    """Intervals of ``t = <x, e>``: the bins of a histogram of tokens on S^{d-1} against
    a zonal density (module docstring).

    Attributes:
        edges: the interval ends, increasing from -1 to 1.
        weights: the interval lengths (in t).
    """

    geometry = "zonal"

    def __init__(self, edges: np.ndarray):
        self.edges = np.asarray(edges, dtype=float)
        self.weights = np.diff(self.edges)

    @classmethod
    def spanning(cls, ds: xr.Dataset, count: int, tail: float = BIN_TAIL) -> PolarBins:
        """``count`` equal intervals across ``zonal_marginal.span(ds, tail)``, and the
        tails beyond it (where wider than half an interval) as two more."""
        lo, hi = zm.span(ds, tail)
        h = (hi - lo) / count
        edges = lo + h * np.arange(count + 1)
        edges[0] = -1.0 if lo + 1.0 < 0.5 * h else edges[0]
        edges[-1] = 1.0 if 1.0 - hi < 0.5 * h else hi
        return cls(np.unique(np.concatenate([[-1.0], edges, [1.0]])))

    def locate(self, x: np.ndarray) -> np.ndarray:
        """The interval of each point: unit vectors ``(..., d)`` (their first component
        is t)."""
        t = np.asarray(x, dtype=float)[..., 0]
        return np.clip(np.searchsorted(self.edges, t, side="right") - 1, 0,
                       self.weights.size - 1)

    def masses(self, ds: xr.Dataset) -> np.ndarray:
        """PDE mass of each interval, per time (``zonal_marginal.t_cdf``)."""
        return np.diff(zm.t_cdf(ds, self.edges), axis=-1)

    def coords(self) -> dict:
        """Dataset coordinates: ``bin``, the interval midpoints in t."""
        return {"bin": 0.5 * (self.edges[:-1] + self.edges[1:])}

    def variables(self) -> dict:
        """Dataset variables: ``bin_edges``."""
        return {"bin_edges": (("bin_edge",), self.edges)}


def histogram_bins(geometry: str, count: int, pde: xr.Dataset | None = None
                   ) -> ArcBins | CellBins | PolarBins:
    """``count`` bins on the ``geometry``: equal arcs on the circle, the cells of the
    icosahedral mesh with ``count = 10 4^level + 2`` cells on the sphere, ``count``
    intervals of t across the mass of the PDE result ``pde`` for zonal densities."""
    if geometry == "circle":
        return ArcBins(count)
    if geometry == "zonal":
        return PolarBins.spanning(pde, count)
    return CellBins(icosahedral_mesh(icosahedral_level(count)))
