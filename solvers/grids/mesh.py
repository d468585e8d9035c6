"""Finite-volume meshes of the unit sphere: icosahedral Voronoi cells (lat-lon to compare).

``icosahedral_mesh(level)`` is the spherical Voronoi tessellation whose generators are the
``n = 10 4^level + 2`` vertices of the icosahedron refined ``level`` times (42, 162, 642,
2562, 10242, 40962 cells for levels 1..6): 12 pentagons, the rest hexagons, areas within
a factor 0.68 of each other. The mesh carries what the two-point-flux scheme of
``solvers.operators.finite_volume.GradientFlowMeshFV`` needs: cell areas, the cell pairs of the
edges with the Voronoi side lengths ``l`` and generator distances ``d``, side midpoints,
CSR neighbour lists and least-squares gradient weights in local tangent frames.

Why Voronoi: a Voronoi side lies on the bisector plane of its two generators, so it is
orthogonal to the generator arc, and ``(f_b - f_a)/d`` is the normal derivative across
it. Two-point fluxes ``l rho_up u`` with ``u = -(xi_b - xi_a)/d`` are then consistent,
and summing ``xi_a - xi_b`` against them gives the discrete free-energy identity
``dF/dt = -sum l d rho_up u^2 <= 0`` exactly.

Why icosahedral and not latitude-longitude: the explicit steps are set by the smallest
cells (positivity ``dt <= A_c / (2 sum_out l u+)``, i.e. ``~ diameter/|u|``; diffusion
``dt <= 2.51 / (D lambda_max)``, i.e. ``~ diameter^2 / D``). Measured with
``mesh_statistics`` (hydraulic diameter ``4A/P``; steps per unit speed, per unit D):

    cells  mesh               min/mean diameter  dt_advective  dt_diffusive
    2562   icosahedral L4     0.868              8.1e-3        1.9e-3
    2592   lat-lon 36 x 72    0.115              9.1e-4        1.2e-5
    10242  icosahedral L5     0.846              4.0e-3        4.5e-4
    10368  lat-lon 72 x 144   0.059              2.3e-4        7.6e-7
    40962  icosahedral L6     0.824              1.9e-3        1.1e-4
    41472  lat-lon 144 x 288  0.030              5.9e-5        4.7e-8

At equal cell counts the polar cells of the lat-lon mesh cut the advective step by 9-33
and the diffusive step by 160-2300 (``dt ~ h^4`` there). On the diffusion test of the tests
(degrees 1-3, ``D = 1`` to ``t = 0.1``) SSP-RK3 at the bound took 66 / 276 steps on the
icosahedral L4 / L5 meshes and 10350 / 165071 steps on lat-lon 36x72 / 72x144, for the
same L1 error (2.1e-4 / 5.3e-5 against 2.6e-4 / 6.6e-5).

Why Lloyd iterations: the scheme's cell values are averages but its fluxes are centred at
the generators, so second order wants generator = centroid. The refined icosahedron is
not centroidal: the offset reaches 0.039 sqrt(A) along the edges of the original
icosahedron at every level (an O(h) defect). Multilevel Lloyd (``lloyd`` iterations
"generator <- normalised centroid" after each refinement) brings it to <= 0.006 sqrt(A)
(mean 4e-4 at level 6): on the diffusion test the L1 error at level 5 drops from 8.7e-5
to 5.3e-5 and the observed order from 1.82 to 1.95 (2 Lloyd sweeps only at the finest
level: 7.3e-5; a converged centroidal tessellation: 5.2e-5). The price: the cells next to
the pentagons shrink, the diffusive step is 8 % (L5) to 12 % (L6) below ``lloyd=0``.

Construction (level 6 in ~1.2 s on 2 cores): ``solvers.grids.voronoi`` (refinement, Lloyd
sweeps, the Voronoi diagram, exact areas). The diffusive bound uses the largest
eigenvalue of the mesh Laplacian (Lanczos, 0.08 s at level 6); Gershgorin's bound is
1.30-1.46 times larger, i.e. that much smaller steps.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from solvers.grids.coordinates import lat_lon
from solvers.grids.voronoi import (
    arc,
    icosahedral_triangulation,
    log_map,
    next_in_cycle,
    normalize,
    polygon_areas_and_moments,
    spherical_voronoi,
    tangent_basis,
    voronoi_edges,
    voronoi_from_delaunay,
)

# Stability interval of SSP-RK3 on the negative real axis is [-2.51, 0].
SSPRK3_REAL_STABILITY = 2.51


@dataclass(frozen=True, eq=False, repr=False)
class SphereMesh:
    """A conforming finite-volume mesh of the unit sphere with orthogonal dual edges.

    A ``solvers.grids.Grid`` (geometry ``"sphere"``, dims ``("cell",)``, no transforms):
    its nodes are the generators, its weights the cell areas.

    ``n`` cells, ``m`` edges (each between two cells, ``edges[:, 0] < edges[:, 1]``), and the
    neighbour lists in CSR form: the slots ``k in range(neighbor_start[c],
    neighbor_start[c + 1])`` of cell ``c`` list its neighbours ``neighbor[k]`` across the
    edges ``neighbor_edge[k]``; ``edge_slot[e] = (k_a, k_b)`` are the slots of edge ``e`` in
    its two cells. All arrays are read-only (meshes are cached and shared).

    Attributes:
        kind: ``"icosahedral"`` (spherical Voronoi) or ``"latlon"``.
        centers: (n, 3) unit vectors, the generators (where potentials are sampled; the
            cell values are averages, and generators are close to the centroids).
        weights: (n,) cell areas, the quadrature weights; they sum to 4 pi to round-off.
        edges: (m, 2) the two cells of each edge.
        edge_length: (m,) arc length of the edge (the interface).
        edge_distance: (m,) arc distance between the two centres (orthogonal to the edge).
        edge_midpoint: (m, 3) the midpoint of the interface (where faces are evaluated).
        neighbor_start: (n + 1,) CSR offsets.
        neighbor: (2m,) neighbouring cell of each slot.
        neighbor_edge: (2m,) edge of each slot.
        edge_slot: (m, 2) slots of each edge in its cells ``edges[e, 0]`` and ``edges[e, 1]``.
        tangent_basis: (n, 2, 3) orthonormal tangent frame (east, north; a fixed frame at
            the poles) at each centre.
        gradient_weights: (2m, 2) least-squares gradient weights: the tangent gradient of
            ``f`` at ``c`` in its frame is ``sum_k gradient_weights[k] (f[neighbor[k]] -
            f[c])`` over the slots of ``c`` (exact for functions linear in the geodesic
            normal coordinates at ``c``).
        face_offset: (2m, 2) normal coordinates (log map, in the frame of ``c``) of the
            midpoint of edge ``neighbor_edge[k]`` seen from ``c``.
        vertices: (nv, 3) cell corners.
        vertex_start: (n + 1,) CSR offsets into ``cell_vertices``.
        cell_vertices: corners of each cell, counter-clockwise seen from outside.
        laplacian_radius: spectral radius of the two-point-flux Laplacian
            ``(L f)_c = (1/A_c) sum_e (l_e/d_e) (f_b - f_c)``.
        level: subdivision level (icosahedral) or ``nlat`` (lat-lon).
        lloyd: Lloyd iterations after each refinement (icosahedral).
    """

    geometry = "sphere"
    dims = ("cell",)
    components = ("x", "y", "z")
    has_transforms = False

    kind: str
    centers: np.ndarray
    weights: np.ndarray
    edges: np.ndarray
    edge_length: np.ndarray
    edge_distance: np.ndarray
    edge_midpoint: np.ndarray
    neighbor_start: np.ndarray
    neighbor: np.ndarray
    neighbor_edge: np.ndarray
    edge_slot: np.ndarray
    tangent_basis: np.ndarray
    gradient_weights: np.ndarray
    face_offset: np.ndarray
    vertices: np.ndarray
    vertex_start: np.ndarray
    cell_vertices: np.ndarray
    laplacian_radius: float
    level: int
    lloyd: int = 0

    def __repr__(self) -> str:
        return (f"SphereMesh(kind={self.kind!r}, level={self.level}, lloyd={self.lloyd}, "
                f"cells={self.n_cells}, edges={self.n_edges})")

    @property
    def n_cells(self) -> int:
        return self.centers.shape[0]

    @property
    def n_edges(self) -> int:
        return self.edges.shape[0]

    @property
    def shape(self) -> tuple[int]:
        return (self.n_cells,)

    @property
    def points(self) -> np.ndarray:
        """``(n, 3)`` the generators ``centers`` (read-only)."""
        return self.centers

    def coords(self) -> dict[str, tuple[str, np.ndarray]]:
        """Dataset coordinates: ``lat`` and ``lon`` of the generators along ``cell``."""
        lat, lon = lat_lon(self.centers)
        return {"lat": ("cell", lat), "lon": ("cell", lon)}

    @functools.cached_property
    def _tree(self):
        from scipy.spatial import cKDTree
        return cKDTree(self.centers)

    def locate(self, x: np.ndarray) -> np.ndarray:
        """Index of the cell holding each unit vector of ``x`` ``(..., 3)``: the nearest
        generator's (a Voronoi cell) or, on a lat-lon mesh, the latitude band and
        longitude sector's."""
        x = np.asarray(x, dtype=float)
        if self.kind == "latlon":
            nlat, lat_lon_ = self.level, lat_lon(x)
            nlon = self.n_cells // nlat
            i_lat = np.floor((lat_lon_[0] / np.pi + 0.5) * nlat).astype(np.int64)
            i_lon = np.floor(lat_lon_[1] * (nlon / (2 * np.pi))).astype(np.int64)
            return np.clip(i_lat, 0, nlat - 1) * nlon + np.clip(i_lon, 0, nlon - 1)
        return self._tree.query(x.reshape(-1, 3))[1].reshape(x.shape[:-1])

    def difference(self, values: np.ndarray) -> np.ndarray:
        """``values[b] - values[a]`` on each edge ``(a, b)`` (last axis indexes cells)."""
        return values[..., self.edges[:, 1]] - values[..., self.edges[:, 0]]

    def integrate(self, values: np.ndarray) -> np.ndarray:
        """``sum_c A_c values[c]`` (the mass of a density, last axis indexes cells)."""
        return values @ self.weights

    def perimeters(self) -> np.ndarray:
        """(n,) sum of the edge lengths of each cell."""
        return (np.bincount(self.edges[:, 0], self.edge_length, self.n_cells)
                + np.bincount(self.edges[:, 1], self.edge_length, self.n_cells))


# ---------------------------------------------------------------------------------------
# Assembly of the finite-volume data.

def _assemble(kind, level, lloyd, centers, areas, edges, edge_length, edge_midpoint,
              vertices, vertex_start, cell_vertices) -> SphereMesh:
    n, m = len(centers), len(edges)
    order = np.lexsort((edges[:, 1], edges[:, 0]))
    edges, edge_length, edge_midpoint = edges[order], edge_length[order], edge_midpoint[order]
    a, b = edges[:, 0], edges[:, 1]
    edge_distance = arc(centers[a], centers[b])
    # CSR neighbour lists: slot of every (cell, edge) pair.
    owner = np.concatenate([a, b])
    other = np.concatenate([b, a])
    edge_id = np.concatenate([np.arange(m), np.arange(m)])
    order = np.lexsort((other, owner))
    neighbor = other[order]
    neighbor_edge = edge_id[order]
    neighbor_start = np.concatenate([[0], np.cumsum(np.bincount(owner, minlength=n))])
    slot = np.empty(2 * m, dtype=np.int64)
    slot[order] = np.arange(2 * m)
    edge_slot = np.stack([slot[:m], slot[m:]], axis=1)
    owner = owner[order]
    # Normal coordinates of neighbours and face midpoints in the frame of each cell.
    basis = tangent_basis(centers)
    frame = basis[owner]
    r_nb = np.einsum("kij,kj->ki", frame, log_map(centers[owner], centers[neighbor]))
    r_face = np.einsum("kij,kj->ki", frame,
                       log_map(centers[owner], edge_midpoint[neighbor_edge]))
    # Weighted least squares (weights 1/d^2): g = M^-1 sum_k w_k r_k (f_k - f_c).
    w = 1.0 / np.einsum("ki,ki->k", r_nb, r_nb)
    mxx = np.bincount(owner, w * r_nb[:, 0] ** 2, n)
    mxy = np.bincount(owner, w * r_nb[:, 0] * r_nb[:, 1], n)
    myy = np.bincount(owner, w * r_nb[:, 1] ** 2, n)
    det = mxx * myy - mxy**2
    ixx, ixy, iyy = myy / det, -mxy / det, mxx / det
    gradient_weights = w[:, None] * np.stack(
        [ixx[owner] * r_nb[:, 0] + ixy[owner] * r_nb[:, 1],
         ixy[owner] * r_nb[:, 0] + iyy[owner] * r_nb[:, 1]], axis=1)
    mesh_arrays = {
        "centers": centers, "weights": areas, "edges": edges, "edge_length": edge_length,
        "edge_distance": edge_distance, "edge_midpoint": edge_midpoint,
        "neighbor_start": neighbor_start, "neighbor": neighbor, "neighbor_edge": neighbor_edge,
        "edge_slot": edge_slot, "tangent_basis": basis, "gradient_weights": gradient_weights,
        "face_offset": r_face, "vertices": vertices, "vertex_start": vertex_start,
        "cell_vertices": cell_vertices}
    for arr in mesh_arrays.values():
        arr.setflags(write=False)
    return SphereMesh(kind=kind, laplacian_radius=_laplacian_radius(
        areas, edges, edge_length / edge_distance), level=level, lloyd=lloyd, **mesh_arrays)


def _laplacian_radius(areas, edges, coupling) -> float:
    """Largest eigenvalue of ``-L``, ``(L f)_c = (1/A_c) sum (l/d)(f_b - f_c)``.

    ``L`` is similar to the symmetric ``A^-1/2 S A^-1/2``; its largest eigenvalue is found
    by Lanczos (ARPACK), and the Gershgorin bound is the fallback.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.linalg import ArpackNoConvergence, eigsh

    n = len(areas)
    a, b = edges[:, 0], edges[:, 1]
    diag = np.bincount(a, coupling, n) + np.bincount(b, coupling, n)
    gershgorin = float(np.max(2 * diag / areas))
    if n < 50:
        s = np.zeros((n, n))
        np.add.at(s, (a, b), -coupling)
        np.add.at(s, (b, a), -coupling)
        s[np.diag_indices(n)] += diag
        s /= np.sqrt(np.outer(areas, areas))
        return float(np.linalg.eigvalsh(s)[-1])
    r = 1 / np.sqrt(areas)
    rows = np.concatenate([a, b, np.arange(n)])
    cols = np.concatenate([b, a, np.arange(n)])
    vals = np.concatenate([-coupling * r[a] * r[b], -coupling * r[a] * r[b], diag * r * r])
    s = coo_matrix((vals, (rows, cols)), shape=(n, n)).tocsr()
    try:
        lam = eigsh(s, k=1, which="LA", tol=1e-4, ncv=8, return_eigenvectors=False,
                    v0=np.cos(np.arange(n)))[0]
    except ArpackNoConvergence:
        return gershgorin
    # Ritz values approach the top eigenvalue from below: pad by more than the tolerance.
    return float(min(gershgorin, lam * (1 + 1e-3)))


def icosahedral_level(cells: int) -> int:
    """The refinement level of the icosahedral mesh with ``cells = 10 4^level + 2`` cells.

    Raises:
        ValueError: ``cells`` is not such a number.
    """
    level = round(float(np.log((max(cells, 12) - 2) / 10) / np.log(4)))
    if level < 0 or 10 * 4**level + 2 != cells:
        raise ValueError(f"{cells} is not a number of icosahedral cells 10 4^level + 2 "
                         "(12, 42, 162, 642, ...)")
    return level


@functools.lru_cache(maxsize=16)
def icosahedral_mesh(level: int, lloyd: int = 3) -> SphereMesh:
    """The spherical Voronoi mesh of the ``level``-times refined icosahedron.

    Args:
        level: 0..7; ``10 4^level + 2`` cells (42, 162, 642, 2562, 10242, 40962, ...);
            mean generator distance ``~ 3.82 / sqrt(n)`` (0.075 at level 4, 0.0189 at 6).
        lloyd: Lloyd iterations after each refinement, moving every generator to the
            (normalised spherical) centroid of its cell, toward a centroidal Voronoi
            tessellation (3: offsets <= 0.006 sqrt(A); 0: the plain refined icosahedron).

    Returns:
        SphereMesh (cached per ``(level, lloyd)``; do not modify). Builds in 0.3 s at
        level 5 and 1.2 s at level 6.
    """
    if not 0 <= level <= 7:
        raise ValueError(f"level must be in 0..7, got {level}")
    generators, triangles = icosahedral_triangulation(level, lloyd)
    voronoi = voronoi_from_delaunay(generators, triangles)
    vertices, start, flat = voronoi if voronoi is not None else spherical_voronoi(generators)
    areas, _ = polygon_areas_and_moments(generators, vertices, start, flat)
    edges, length, midpoint = voronoi_edges(vertices, start, flat)
    return _assemble("icosahedral", level, lloyd, generators, areas, edges, length,
                     midpoint, vertices, start, flat)


@functools.lru_cache(maxsize=16)
def latlon_mesh(nlat: int, nlon: int) -> SphereMesh:
    """Regular latitude-longitude cells (for comparisons only: the polar cells are thin).

    ``nlat`` bands of equal latitude width times ``nlon`` equal longitude sectors; the
    centres are the normalised centroids. Neighbours across meridians and parallels; the
    cells touching a pole share only the pole with each other, no edge.
    """
    lat_e = np.linspace(-np.pi / 2, np.pi / 2, nlat + 1)
    lon_e = np.linspace(0, 2 * np.pi, nlon + 1)
    dlon = 2 * np.pi / nlon
    s1, s2 = np.sin(lat_e[:-1]), np.sin(lat_e[1:])
    band_area = dlon * (s2 - s1)
    # int cos^2(lat) dlat and int sin cos dlat over each band: the centroid directions.
    icc = (lat_e[1:] - lat_e[:-1]) / 2 + (np.sin(2 * lat_e[1:]) - np.sin(2 * lat_e[:-1])) / 4
    isc = (s2**2 - s1**2) / 2
    mx = icc[:, None] * (np.sin(lon_e[1:]) - np.sin(lon_e[:-1]))[None, :]
    my = icc[:, None] * (np.cos(lon_e[:-1]) - np.cos(lon_e[1:]))[None, :]
    mz = np.broadcast_to(isc[:, None] * dlon, mx.shape)
    centers = normalize(np.stack([mx, my, mz], axis=-1).reshape(-1, 3))
    areas = np.repeat(band_area, nlon)
    areas = areas * (4 * np.pi / areas.sum())
    idx = np.arange(nlat * nlon).reshape(nlat, nlon)

    def point(lat, lon):
        return np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon),
                         np.sin(lat) + 0 * lon], axis=-1)

    lat_c = (lat_e[:-1] + lat_e[1:]) / 2
    lon_c = (lon_e[:-1] + lon_e[1:]) / 2
    # Across meridians: (j, k) - (j, k+1) at longitude lon_e[k+1].
    zonal = np.stack([idx.ravel(), np.roll(idx, -1, axis=1).ravel()], axis=1)
    zonal_len = np.repeat(lat_e[1:] - lat_e[:-1], nlon)
    zonal_mid = point(np.repeat(lat_c, nlon), np.tile(lon_e[1:], nlat))
    # Across parallels: (j, k) - (j+1, k) at latitude lat_e[j+1].
    merid = np.stack([idx[:-1].ravel(), idx[1:].ravel()], axis=1)
    merid_len = np.repeat(dlon * np.cos(lat_e[1:-1]), nlon)
    merid_mid = point(np.repeat(lat_e[1:-1], nlon), np.tile(lon_c, nlat - 1))
    edges = np.concatenate([zonal, merid])
    flip = edges[:, 0] > edges[:, 1]
    edges[flip] = edges[flip][:, ::-1]
    corners = point(np.repeat(lat_e, nlon), np.tile(lon_e[:-1], nlat + 1))
    cidx = np.arange((nlat + 1) * nlon).reshape(nlat + 1, nlon)
    quad = np.stack([cidx[:-1], np.roll(cidx[:-1], -1, axis=1),
                     np.roll(cidx[1:], -1, axis=1), cidx[1:]], axis=-1).reshape(-1, 4)
    return _assemble("latlon", nlat, 0, centers, areas, edges,
                     np.concatenate([zonal_len, merid_len]),
                     np.concatenate([zonal_mid, merid_mid]), corners,
                     np.arange(0, 4 * nlat * nlon + 1, 4), quad.ravel())


# ---------------------------------------------------------------------------------------
# Cell averages and mesh statistics.

# Radon's 7-point rule on the reference triangle (degree 5); weights sum to 1.
_R15 = 15**0.5
_A, _B = (6 - _R15) / 21, (6 + _R15) / 21
_TRI_POINTS = np.array([[1 / 3, 1 / 3], [_A, _A], [1 - 2 * _A, _A], [_A, 1 - 2 * _A],
                        [_B, _B], [1 - 2 * _B, _B], [_B, 1 - 2 * _B]])
_TRI_WEIGHTS = np.array([9 / 40] + [(155 - _R15) / 1200] * 3 + [(155 + _R15) / 1200] * 3)


def cell_averages(mesh: SphereMesh, f: Callable[[np.ndarray], np.ndarray],
                  refine: int = 1) -> np.ndarray:
    """Cell averages ``(1/A_c) int_c f dA`` by quadrature.

    Icosahedral cells are split into the triangles (centre, corner, next corner), each
    split ``4^(refine-1)`` times, and Radon's degree-5 rule is applied on the flat triangles
    radially projected to the sphere (area element ``det[p0, p1, p2] / |P|^3 ds dt``);
    lat-lon cells use a ``4 refine``-point Gauss-Legendre product rule in (lat, lon).

    Args:
        mesh: the mesh.
        f: vectorised function of unit vectors ``(k, 3) -> (k,)``.
        refine: subdivision of the quadrature triangles (1: none).
    """
    n = mesh.n_cells
    if mesh.kind == "latlon":
        nlat = mesh.level
        nlon = n // nlat
        q = 4 * refine
        xg, wg = np.polynomial.legendre.leggauss(q)
        lat_e = np.linspace(-np.pi / 2, np.pi / 2, nlat + 1)
        lon_e = np.linspace(0, 2 * np.pi, nlon + 1)
        lat = (lat_e[:-1, None] + lat_e[1:, None]) / 2 + np.outer(np.diff(lat_e) / 2, xg)
        lon = (lon_e[:-1, None] + lon_e[1:, None]) / 2 + np.outer(np.diff(lon_e) / 2, xg)
        lat_b = lat[:, None, :, None]
        lon_b = lon[None, :, None, :]
        x = np.stack(np.broadcast_arrays(np.cos(lat_b) * np.cos(lon_b),
                                         np.cos(lat_b) * np.sin(lon_b), np.sin(lat_b)),
                     axis=-1)
        vals = f(x.reshape(-1, 3)).reshape(nlat, nlon, q, q)
        w = wg[None, :] * np.cos(lat)  # dA = cos(lat) dlat dlon
        return (np.einsum("jkab,ja,b->jk", vals, w, wg)
                / np.einsum("ja,b->j", w, wg)[:, None]).ravel()
    start, flat, verts = mesh.vertex_start, mesh.cell_vertices, mesh.vertices
    counts = np.diff(start)
    cell = np.repeat(np.arange(n), counts)
    nxt = next_in_cycle(start, counts)
    tris = [(mesh.centers[cell], verts[flat], verts[flat[nxt]])]
    for _ in range(refine - 1):
        new = []
        for p0, p1, p2 in tris:
            m01, m12, m20 = normalize(p0 + p1), normalize(p1 + p2), normalize(p2 + p0)
            new += [(p0, m01, m20), (m01, p1, m12), (m20, m12, p2), (m01, m12, m20)]
        tris = new
    total = np.zeros(n)
    area = np.zeros(n)
    for p0, p1, p2 in tris:
        det = np.einsum("ij,ij->i", p0, np.cross(p1, p2))
        for (s, t), w in zip(_TRI_POINTS, _TRI_WEIGHTS):
            p = (1 - s - t) * p0 + s * p1 + t * p2
            r = np.linalg.norm(p, axis=1)
            jac = 0.5 * w * det / r**3
            total += np.bincount(cell, jac * f(p / r[:, None]), n)
            area += np.bincount(cell, jac, n)
    return total / area


def mesh_statistics(mesh: SphereMesh) -> dict[str, float]:
    """Resolution and the explicit step bounds of ``GradientFlowMeshFV`` on this mesh.

    ``diameter`` is the hydraulic diameter ``4 A / P`` of a cell (the side of a square,
    the distance between opposite sides of a regular hexagon). ``dt_advective`` is the
    positivity bound ``min_c A_c / (2 P_c)`` for unit speed out of every edge (multiply by
    ``1/|u|``); ``dt_diffusive`` is ``2.51 / laplacian_radius`` (divide by ``D``).
    """
    per = mesh.perimeters()
    diam = 4 * mesh.weights / per
    return {
        "cells": float(mesh.n_cells),
        "min_diameter": float(diam.min()),
        "mean_diameter": float(diam.mean()),
        "min_over_mean_diameter": float(diam.min() / diam.mean()),
        "min_center_distance": float(mesh.edge_distance.min()),
        "mean_center_distance": float(mesh.edge_distance.mean()),
        "dt_advective": float(np.min(mesh.weights / (2 * per))),
        "dt_diffusive": float(SSPRK3_REAL_STABILITY / mesh.laplacian_radius),
    }
