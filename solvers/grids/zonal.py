"""Zonal grids: functions on S^{d-1} (any d >= 2) that depend only on the polar angle
``theta = angle(x, e)`` to one axis ``e`` (here the first coordinate vector), integrated
against the normalized surface measure (total mass 1; ``solvers.transforms.gegenbauer``).

Two grids answer the ``solvers.grids.Grid`` protocol (geometry ``"zonal"``, dims
``("polar",)``, one component ``"axis"``: a node's ``point`` is ``t = cos theta``, the
only coordinate a zonal quantity can have, so that ``int x dmu = (int t dmu) e``):

- ``ZonalGrid``: the Gauss nodes of the zonal measure and the transforms to and from the
  coefficients of the orthonormal Gegenbauer polynomials ``Q_0 .. Q_lmax`` (dense tables:
  the analysis of ``n`` nodes is exact for polynomials of degree ``2n - 1 - lmax``);
- ``ZonalCells``: ``n`` cells of equal width in theta on [0, pi] (finite volumes) with
  their exact measures, and the ratios face measure / cell measure the fluxes need,
  computed in logarithms (at d = 4096 the measure of a cell near a pole is 1e-1300).

Nodes and cells are ordered by increasing theta (decreasing t).

Large d: the measure concentrates in ``|t| < few/sqrt(d)`` and the outer Gauss nodes carry
weights down to 1e-200 (d = 4096, L = 256). The coefficients are known to round-off
``eps`` in the L^2 norm of the measure, so the value of the series at a node of weight
``w`` is known only to about ``eps / sqrt(w)`` (Christoffel: ``sum_l Q_l(t_i)^2 ~ 1/w_i``):
at nodes with ``w < RELIABLE_WEIGHT`` that exceeds 1e-7 of the density. Such nodes carry
under 1e-18 of the mass; ``ZonalGrid.reliable`` marks the others, and what reports a
pointwise density (the negativity check, the result dataset) looks at those only.
"""
from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

from solvers.grids.coordinates import read_only
from solvers.transforms import gegenbauer

# Nodes of smaller weight have pointwise values below the precision the run needs (module
# docstring): eps / sqrt(1e-18) = 1e-7 of the density.
RELIABLE_WEIGHT = 1e-18


def log_measure_density(dim: int, theta: np.ndarray) -> np.ndarray:
    """``log(w_d sin^{d-2} theta)``: the normalized measure per unit theta (``-inf`` at the
    poles for d > 2)."""
    log_norm = special.gammaln(dim / 2) - special.gammaln((dim - 1) / 2) - 0.5 * math.log(math.pi)
    theta = np.asarray(theta, dtype=float)
    if dim == 2:  # (0 log 0 at the poles: the circle's measure is d theta / pi)
        return np.full(theta.shape, log_norm)
    with np.errstate(divide="ignore"):
        return log_norm + (dim - 2) * np.log(np.sin(theta))


class _ZonalBase:
    geometry = "zonal"
    dims = ("polar",)
    components = ("axis",)
    dim: int
    theta: np.ndarray
    weights: np.ndarray

    @property
    def shape(self) -> tuple[int]:
        return (self.theta.size,)

    @functools.cached_property
    def t(self) -> np.ndarray:
        """``cos theta`` of the nodes (read-only)."""
        return read_only(np.cos(self.theta))

    @functools.cached_property
    def points(self) -> np.ndarray:
        """``(n, 1)``: the component ``t = <x, e>`` of the nodes (read-only)."""
        return read_only(self.t[:, None].copy())

    def coords(self) -> dict:
        return {"polar": self.theta.copy(), "cos_polar": ("polar", np.cos(self.theta))}

    def integrate(self, f: np.ndarray):
        """``int f dsigma`` (normalized measure) of node values ``f`` (last axis)."""
        return np.tensordot(f, self.weights, axes=([-1], [0]))

    def marginal(self, rho: np.ndarray) -> np.ndarray:
        """The density of ``t = cos theta`` at the nodes: ``rho(t) w_d (1 - t^2)^{(d-3)/2}``
        (per unit t; it integrates to the mass in dt)."""
        with np.errstate(divide="ignore"):
            log_w = log_measure_density(self.dim, self.theta) - np.log(np.sin(self.theta))
        return rho * np.exp(log_w)

    def _boundaries(self) -> np.ndarray:
        return 0.5 * (self.theta[1:] + self.theta[:-1])

    def locate(self, x: np.ndarray) -> np.ndarray:
        """Index of the node (cell) whose theta-interval holds each point: unit vectors
        ``(..., d)`` (their first component is ``t``) or ``(..., 1)`` values of ``t``."""
        t = np.clip(np.asarray(x, dtype=float)[..., 0], -1.0, 1.0)
        return np.searchsorted(self._boundaries(), np.arccos(t)).astype(np.int64)


class ZonalGrid(_ZonalBase):
    """Gauss nodes of the zonal measure of S^{dim-1} with the Gegenbauer transforms.

    A ``solvers.grids.SpectralGrid``: ``analysis`` gives the ``lmax + 1`` coefficients of
    the orthonormal ``Q_l`` (exact for band-limited values), ``synthesis`` the node values.

    Args:
        lmax: band limit (degrees 0..lmax).
        dim: d of S^{d-1}, d >= 2.
        nodes: number of Gauss nodes (default ``lmax + 1``: the output grid; a product
            grid takes more).
    """

    has_transforms = True

    def __init__(self, lmax: int, dim: int, nodes: int | None = None):
        if dim < 2 or lmax < 1:
            raise ValueError(f"a zonal grid needs dim >= 2 and lmax >= 1, got {dim}, {lmax}")
        self.lmax, self.dim = int(lmax), int(dim)
        n = self.lmax + 1 if nodes is None else int(nodes)
        t, w = gegenbauer.gauss_nodes(n, self.dim)
        t, w = t[::-1].copy(), w[::-1].copy()  # increasing theta
        self.theta = np.arccos(t)
        self.weights = w
        self.table, self.derivative_table = gegenbauer.table(self.lmax, self.dim, t,
                                                             derivative=True)
        # analysis matrix (nodes -> coefficients), weights folded in; the C order of both
        # tables makes a stack of fields one matrix product
        self.analysis_matrix = np.ascontiguousarray((self.table * w).T)
        self.synthesis_matrix = np.ascontiguousarray(self.table)
        self.laplacian = gegenbauer.laplacian_symbol(self.lmax, self.dim)
        self.l = np.arange(self.lmax + 1)
        # nodes whose pointwise values are determined by the coefficients (docstring)
        self.reliable = read_only(self.weights >= RELIABLE_WEIGHT)
        # the values table by parity on the first half of the nodes (Q_l(-t) = (-1)^l
        # Q_l(t), the nodes mirror): half the multiply-adds of the full products
        # (parity_*); one table serves synthesis and projection (transposed), so a
        # right-hand side keeps one table in cache
        half = (n + 1) // 2
        self._half, self._pairs = half, n // 2
        self._values_by_parity = (np.ascontiguousarray(self.table[0::2, :half]),
                                  np.ascontiguousarray(self.table[1::2, :half]))

    @property
    def parity_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """The values table's even and odd degrees at the first half of the nodes
        (``(ceil((lmax + 1)/2), ceil(n/2))`` and ``(floor(...), ...)``, read-only use)."""
        return self._values_by_parity

    @functools.cached_property
    def _derivatives_by_parity(self) -> tuple[np.ndarray, np.ndarray]:
        return (np.ascontiguousarray(self.derivative_table[0::2, :self._half]),
                np.ascontiguousarray(self.derivative_table[1::2, :self._half]))

    def analysis(self, f: np.ndarray) -> np.ndarray:
        """Coefficients ``(..., lmax + 1)`` of node values ``(..., n)``."""
        return np.asarray(f, dtype=float) @ self.analysis_matrix

    def synthesis(self, c: np.ndarray) -> np.ndarray:
        """Node values ``(..., n)`` of coefficients ``(..., lmax + 1)``."""
        return np.asarray(c, dtype=float) @ self.synthesis_matrix

    def project(self, g: np.ndarray) -> np.ndarray:
        """``sum_i Q_l(t_i) g_i`` for l = 0..lmax (no weights: ``analysis(f)`` is
        ``project(weights * f)``); node values ``(..., n)``."""
        return np.asarray(g, dtype=float) @ self.synthesis_matrix.T

    def parity_synthesis(self, c: np.ndarray, derivative: bool = False) -> np.ndarray:
        """``synthesis(c)`` (or ``derivative(c)``) from the half tables by parity: the even
        and odd degrees at the first half of the nodes, combined as ``E + O`` there and
        ``+-(E - O)`` at the mirrored nodes (values are even/odd with the degree,
        derivatives odd/even). Equal to the full product to round-off, in half the
        multiply-adds. ``c`` may hold fewer than ``lmax + 1`` degrees (the rest zero): the
        tables' first rows serve it."""
        c = np.asarray(c, dtype=float)
        even, odd = self._derivatives_by_parity if derivative else self._values_by_parity
        ce, co = c[..., 0::2], c[..., 1::2]
        e, o = ce @ even[: ce.shape[-1]], co @ odd[: co.shape[-1]]
        out = np.empty(c.shape[:-1] + (self.theta.size,))
        out[..., :self._half] = e + o
        mirrored = (e - o)[..., self._pairs - 1::-1] if self._pairs else e[..., :0]
        out[..., self._half:] = -mirrored if derivative else mirrored
        return out

    def parity_project(self, g: np.ndarray) -> np.ndarray:
        """``project(g)`` from the half tables by parity (transposed): the even degrees
        from ``g(t) + g(-t)``, the odd from ``g(t) - g(-t)`` (the middle node, t = 0,
        once). Equal to the full product to round-off, in half the multiply-adds."""
        g = np.asarray(g, dtype=float)
        h = self._half
        mirror = g[..., ::-1][..., :h]
        total, difference = g[..., :h] + mirror, g[..., :h] - mirror
        if h > self._pairs:  # (odd count: the node t = 0 is its own mirror)
            total[..., -1] = g[..., h - 1]
        out = np.empty(g.shape[:-1] + (self.lmax + 1,))
        out[..., 0::2] = total @ self._values_by_parity[0].T
        out[..., 1::2] = difference @ self._values_by_parity[1].T
        return out

    def parity_analysis(self, f: np.ndarray) -> np.ndarray:
        """``analysis(f)`` from the half tables by parity (``parity_project``)."""
        return self.parity_project(np.asarray(f, dtype=float) * self.weights)

    def derivative(self, c: np.ndarray) -> np.ndarray:
        """``d f / d t`` at the nodes of the series with coefficients ``c``."""
        return np.asarray(c, dtype=float) @ self.derivative_table

    def evaluate(self, c: np.ndarray, t: np.ndarray, derivative: bool = False):
        """The series (and its t-derivative) at arbitrary ``t`` in [-1, 1]: coefficients
        ``(..., L + 1)`` and points of any shape give values ``(..., *t.shape)``."""
        c = np.asarray(c, dtype=float)
        t = np.asarray(t, dtype=float)
        # the table flattened to one matrix: ``c @ table`` on an N-d table would broadcast
        # c against the table's leading axes instead of contracting the degree axis
        q = gegenbauer.table(c.shape[-1] - 1, self.dim, t.ravel(), derivative=derivative)
        shape = c.shape[:-1] + t.shape
        if derivative:
            return (c @ q[0]).reshape(shape), (c @ q[1]).reshape(shape)
        return (c @ q).reshape(shape)


def product_nodes(lmax: int, other_lmax: int | None = None) -> int:
    """Nodes for which the analysis to degree ``lmax`` of a product of a degree-``lmax``
    field with one of degree ``other_lmax`` is exact (``None``: not band-limited, the
    3/2 rule): Gauss with n nodes is exact to degree 2n - 1 >= 2 lmax + other."""
    other = (lmax + 1) // 2 * 2 if other_lmax is None else other_lmax
    return (2 * lmax + other) // 2 + 1


class ZonalCells(_ZonalBase):
    """``n`` cells of equal width ``h = pi/n`` in theta on [0, pi] (finite volumes).

    ``weights`` are the exact cell measures (the regularized incomplete beta function of
    ``sin^2(theta/2)``: the law of ``(1 - t)/2`` is Beta((d-1)/2, (d-1)/2)); ``up`` and
    ``down`` the ratios ``s(theta_{j +- 1/2}) / A_j`` of the face measure (the normalized
    measure per unit theta at the face) to the cell measure, from logarithms so that they
    stay finite where both underflow; the poles carry no flux (``down[0] = up[-1] = 0``).
    """

    has_transforms = False

    def __init__(self, n: int, dim: int):
        if dim < 2 or n < 8:
            raise ValueError(f"zonal cells need dim >= 2 and n >= 8, got {dim}, {n}")
        self.n, self.dim = int(n), int(dim)
        self.h = math.pi / self.n
        self.edges = self.h * np.arange(self.n + 1)
        self.edges[-1] = math.pi  # (h n may round above pi, where sin < 0: log NaN)
        self.theta = self.edges[:-1] + 0.5 * self.h
        log_a = self._log_cell_measures()
        self.weights = np.exp(log_a)
        log_face = log_measure_density(self.dim, self.edges)
        self.up = np.exp(log_face[1:] - log_a)
        self.down = np.exp(log_face[:-1] - log_a)
        self.up[-1] = self.down[0] = 0.0

    def _log_cell_measures(self) -> np.ndarray:
        """``log A_j``: exact (the incomplete beta function of the nearer pole, so nothing
        cancels) where A_j is a normal double; else (cells within 1e-280 of no mass, d in
        the hundreds) Laplace's estimate at the cell's edge nearer the equator, where
        ``g = log(w_d sin^{d-2})`` peaks on the cell: ``A = e^{g(b)} (1 - e^{-g' h}) / g'``
        to a relative ``O(1/((d-2) cos^2 theta))``: finite, and right in scale, which is
        all the fluxes of those cells need. The cells mirror about the equator."""
        a = (self.dim - 1) / 2
        # distance to the nearer pole of each cell's two edges, from integers so that the
        # cells j and n - 1 - j get the same numbers (the measures mirror to the last bit)
        j = np.arange(self.n)
        near = self.h * np.minimum(j, self.n - 1 - j)
        far = near + self.h

        def law(theta):  # P((1 - t)/2 <= x), x = sin^2(theta/2): relative accuracy near
            # the pole; (1 - cos theta)/2 near the equator, where the Beta density peaks
            # (~ sqrt(d)) and the ulp of sin^2 would cost sqrt(d) ulps of the measure
            x = np.where(theta < 1.0, np.sin(theta / 2) ** 2, 0.5 - 0.5 * np.cos(theta))
            return special.betainc(a, a, x)

        with np.errstate(divide="ignore"):
            exact = np.log(law(far) - law(near))
        top = np.minimum(far, math.pi / 2)
        slope = (self.dim - 2) / np.tan(top)
        with np.errstate(divide="ignore", invalid="ignore"):
            laplace = (log_measure_density(self.dim, top) - np.log(slope)
                       + np.log(-np.expm1(-slope * self.h)))
        return np.where(exact > math.log(1e-280), exact, laplace)
