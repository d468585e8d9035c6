"""The marginals of a zonal PDE frame (``domain.geometry = "zonal"``) and 1-D transport
against them: what tokens on S^{d-1} are compared with.

A zonal density rho on S^{d-1} (a function of ``t = <x, e>`` against the normalized
surface measure) has the polar angle ``theta = arccos t`` distributed as ``w_d
sin^{d-2}(theta) rho(cos theta) dtheta``. ``angle_cumulative(ds, theta)`` is the PDE mass
of ``{angle to e <= theta}``, ``t_cdf(ds, t)`` the mass of ``{<x, e> <= t}``, for the
frames of an evolve dataset (or one frame), in the solution's own representation:

- spectral: the Gegenbauer coefficients of the node values (exact: the frame is
  band-limited, ``solvers.grids.zonal.ZonalGrid``), the mass between consecutive angles by
  a composite Gauss-Legendre rule in theta (``theta_rule``): pieces of length ``h <= 64 /
  N`` with ``ceil(N h / 2) + 16`` nodes each, ``N = L + d - 2`` the degree of ``rho(cos
  theta) sin^{d-2} theta`` as a trigonometric polynomial (a Gauss rule of m nodes
  integrates ``e^{i w s}`` on [-1, 1] to round-off once 2m exceeds w by ~30): exact to
  round-off, any d (the measure's density is taken from its logarithm). A result dataset leaves the density NaN at the nodes of
  weight ``w_i < 1e-18`` (large d: their values are round-off, ``ZonalGrid.reliable``);
  they count as 0 in the coefficients, which moves a mass by at most ``sqrt(w_i) rho_i <
  1e-9 rho_i`` (``w_i |Q_l(t_i)| <= sqrt(w_i)``, Christoffel).
- finite volumes: the piecewise-constant density of the cells (its value in a cell is the
  cell average): the whole cells' masses ``weights x density`` and, for the cell cut by
  theta, the value times the exact measure of its part, ``G(theta) - G(left edge)`` with
  ``G(theta) = I_{sin^2(theta/2)}((d-1)/2, (d-1)/2)`` (the law of ``(1 - t)/2`` under the
  uniform measure is Beta((d-1)/2, (d-1)/2)).

``line_wasserstein(values, nodes, cdf, p)`` is the exact W_p on the line between the
empirical measure of ``values`` and the measure whose CDF is linear between ``nodes``
(``cdf`` at the nodes), from the quantile functions: ``W_p^p = int_0^1 |Q_n(u) - Q(u)|^p
du`` with ``Q_n`` a step function and ``Q`` piecewise linear, integrated in closed form
on every piece between their breakpoints. ``marginal_nodes`` gives the nodes fine enough
that the linear interpolation of the PDE's CDF costs far less than the distance
measured (its error is ``O(h^2 f')`` per node interval; 4096 intervals across the
interval that holds all but ``SPAN_TAIL`` of the mass at every time, and the two tails).
``angle_nodes`` does the same in the polar angle theta (the geodesic distance to e): for
zonal measures the W_p of their theta-marginals is their W_p on S^{d-1} (the monotone
rearrangement along the meridians attains it, any d, any p >= 1; as
``meanfield.metrics.sphere_zonal`` on S^2), and for any measures it is a lower bound
(theta is 1-Lipschitz). ``w1_floor`` is the expected W_1 of N exact samples, ``sqrt(2 / (pi N)) int sqrt(F (1 -
F)) dt`` (the normal limit of ``E|F_N(t) - F(t)|``; exact for F linear between the nodes).
"""
from __future__ import annotations

import functools
import math

import numpy as np
import xarray as xr
from scipy import special

from solvers.grids.zonal import ZonalGrid, log_measure_density
from solvers.transforms import gegenbauer

SPAN_TAIL = 1e-10  # mass left out of the span of the fine nodes, on either side
FINE_INTERVALS = 4096  # node intervals across the span (marginal_nodes)
CHUNK_POINTS = 8192  # quadrature points per table of Q_l (memory: (L + 1) x this)
PIECE_WIDTH = 64.0  # a quadrature piece spans at most this / degree radians (<= 48 nodes)


def _frames(ds: xr.Dataset) -> tuple[np.ndarray, bool]:
    """The density as (frames, polar) and whether the dataset had a time axis."""
    rho = np.asarray(ds["density"].values, dtype=float)
    return (rho, True) if rho.ndim == 2 else (rho[None], False)


def angle_cumulative(ds: xr.Dataset, theta: np.ndarray) -> np.ndarray:
    """The PDE mass of ``{angle to e <= theta}`` at the angles ``theta`` (any order, in
    [0, pi]): ``(time, k)`` (or ``(k,)`` for a frame without a time axis)."""
    rho, timed = _frames(ds)
    theta = np.clip(np.asarray(theta, dtype=float), 0.0, math.pi)
    dim = int(ds.attrs["dim"])
    if ds.attrs["method"] == "spectral":
        out = _spectral_cumulative(rho, dim, theta)
    else:
        out = _cell_cumulative(rho, np.asarray(ds["weights"].values, dtype=float), dim, theta)
    return out if timed else out[0]


def t_cdf(ds: xr.Dataset, t: np.ndarray) -> np.ndarray:
    """The PDE mass of ``{<x, e> <= t}`` at the points ``t`` in [-1, 1] (as
    ``angle_cumulative``): the total mass less that of the angles below ``arccos t``."""
    t = np.clip(np.asarray(t, dtype=float), -1.0, 1.0)
    both = angle_cumulative(ds, np.concatenate([np.arccos(t), [math.pi]]))
    return both[..., -1:] - both[..., :-1]


def _spectral_cumulative(rho: np.ndarray, dim: int, theta: np.ndarray) -> np.ndarray:
    lmax = rho.shape[1] - 1
    # (frames, L + 1): exact, but for the nodes a dataset leaves NaN (weight < 1e-18),
    # taken as 0 (module docstring)
    coeffs = ZonalGrid(lmax, dim).analysis(np.nan_to_num(rho, nan=0.0))
    order = np.argsort(theta)
    edges = np.concatenate([[0.0], theta[order]])
    th, w, owner = theta_rule(edges, lmax + dim - 2)
    w = w * np.exp(log_measure_density(dim, th))
    values = np.concatenate([coeffs @ gegenbauer.table(lmax, dim, np.cos(th[s:s + CHUNK_POINTS]))
                             for s in range(0, th.size, CHUNK_POINTS)], axis=1)
    masses = np.zeros((rho.shape[0], edges.size - 1))
    for k in range(rho.shape[0]):
        masses[k] = np.bincount(owner, values[k] * w, minlength=edges.size - 1)
    out = np.empty_like(masses)
    out[:, order] = np.cumsum(masses, axis=1)
    return out


def theta_rule(edges: np.ndarray, degree: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points, weights and interval index of a composite Gauss-Legendre rule on the
    intervals between ``edges`` (increasing), exact to round-off for trigonometric
    polynomials of ``degree`` (module docstring): each interval in pieces no longer than
    ``PIECE_WIDTH / degree``, each piece with ``ceil(degree h / 2) + 16`` nodes."""
    widths = np.diff(np.asarray(edges, dtype=float))
    pieces = np.where(widths > 0, np.maximum(np.ceil(widths * max(degree, 1)
                                                     / PIECE_WIDTH), 1), 0).astype(int)
    owner = np.repeat(np.arange(widths.size), pieces)
    h = (widths / np.maximum(pieces, 1))[owner]
    first = np.cumsum(pieces) - pieces  # each interval's first piece
    start = edges[:-1][owner] + h * (np.arange(owner.size) - first[owner])
    nodes = np.ceil(degree * h / 2).astype(int) + 16
    points, weights, owners = [], [], []
    for m in np.unique(nodes):  # (a few sizes: one rule each, all its pieces at once)
        sel = nodes == m
        x, w = _gauss(int(m))
        points.append((start[sel, None] + 0.5 * h[sel, None] * (x + 1.0)).ravel())
        weights.append((0.5 * h[sel, None] * w).ravel())
        owners.append(np.repeat(owner[sel], m))
    if not points:
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=int)
    return np.concatenate(points), np.concatenate(weights), np.concatenate(owners)


@functools.lru_cache(maxsize=64)
def _gauss(m: int) -> tuple[np.ndarray, np.ndarray]:
    return special.roots_legendre(m)


def marginal_density(ds: xr.Dataset, t: np.ndarray) -> np.ndarray:
    """The PDE's density of ``t = <x, e>`` per unit t, ``rho(t) w_d (1 - t^2)^{(d-3)/2}``,
    at points ``t`` in (-1, 1): the series (spectral) or the cell values (finite
    volumes); ``(time, k)`` (or ``(k,)``). Near the poles in high d a spectral value is
    round-off times |Q_l| (huge there); the mass is not there, nor are the points a
    histogram is drawn at."""
    rho, timed = _frames(ds)
    dim = int(ds.attrs["dim"])
    t = np.clip(np.asarray(t, dtype=float), -1.0, 1.0)
    theta = np.arccos(t)
    factor = np.exp(float(log_measure_density(dim, np.array(0.5 * math.pi))))  # w_d
    if dim != 3:  # (1 - t^2)^{(d-3)/2}: 0 at the poles for d > 3, infinite for d = 2
        with np.errstate(divide="ignore"):
            factor = factor * np.exp(0.5 * (dim - 3) * np.log1p(-t * t))
    if ds.attrs["method"] == "spectral":
        lmax = rho.shape[1] - 1
        coeffs = ZonalGrid(lmax, dim).analysis(np.nan_to_num(rho, nan=0.0))
        values = coeffs @ gegenbauer.table(lmax, dim, t)
    else:
        n = rho.shape[1]
        values = rho[:, np.clip(np.floor(theta / (math.pi / n)).astype(int), 0, n - 1)]
    out = values * factor
    return out if timed else out[0]


def cell_measure_cdf(dim: int, theta: np.ndarray) -> np.ndarray:
    """``G(theta)``: the normalized measure of ``{angle to e <= theta}`` on S^{dim-1}."""
    a = 0.5 * (dim - 1)
    return special.betainc(a, a, np.sin(0.5 * np.asarray(theta, dtype=float)) ** 2)


def _cell_cumulative(rho: np.ndarray, weights: np.ndarray, dim: int, theta: np.ndarray
                     ) -> np.ndarray:
    n = rho.shape[1]
    h = math.pi / n
    whole = np.concatenate([np.zeros((rho.shape[0], 1)), np.cumsum(rho * weights, axis=1)],
                           axis=1)
    k = np.clip(np.floor(theta / h).astype(int), 0, n - 1)
    part = cell_measure_cdf(dim, theta) - cell_measure_cdf(dim, k * h)
    return whole[:, k] + rho[:, k] * np.clip(part, 0.0, None)


def marginal_nodes(ds: xr.Dataset, tail: float = SPAN_TAIL,
                   intervals: int = FINE_INTERVALS) -> tuple[np.ndarray, np.ndarray]:
    """Nodes in t (increasing, from -1 to 1) and the PDE's CDF there ``(time, nodes)``:
    ``intervals`` equal intervals across ``span(ds, tail)``, with -1 and 1 added."""
    lo, hi = span(ds, tail)
    inner = np.linspace(lo, hi, intervals + 1)
    nodes = np.unique(np.concatenate([[-1.0], inner, [1.0]]))
    return nodes, t_cdf(ds, nodes)


def angle_nodes(ds: xr.Dataset | list[xr.Dataset], tail: float = SPAN_TAIL,
                intervals: int = FINE_INTERVALS) -> tuple[np.ndarray, np.ndarray]:
    """Nodes in theta (increasing, from 0 to pi) and the PDE's CDF of the polar angle
    there ``(time, nodes)`` (or ``(nodes,)``): ``intervals`` equal intervals across the
    angles of ``span(ds, tail)``, with 0 and pi added. A list of frames: nodes across
    all their spans, and a list of their CDFs there."""
    frames = ds if isinstance(ds, list) else [ds]
    spans = [span(f, tail) for f in frames]
    lo, hi = min(s[0] for s in spans), max(s[1] for s in spans)
    inner = np.linspace(math.acos(hi), math.acos(lo), intervals + 1)
    nodes = np.unique(np.concatenate([[0.0], inner, [math.pi]]))
    if isinstance(ds, list):
        return nodes, [angle_cumulative(f, nodes) for f in frames]
    return nodes, angle_cumulative(ds, nodes)


def polar_angles(x: np.ndarray) -> np.ndarray:
    """``theta = angle(x, e)`` of unit vectors ``(n, d)``, accurate near the poles
    (``atan2`` of the orthogonal length)."""
    x = np.asarray(x, dtype=float)
    return np.arctan2(np.sqrt(np.einsum("ij,ij->i", x[:, 1:], x[:, 1:])), x[:, 0])


def span(ds: xr.Dataset, tail: float) -> tuple[float, float]:
    """``[lo, hi]`` in t holding all but ``tail`` of the mass on either side at every
    time of ``ds`` (located on 4097 angles equal in theta, then widened by one of them)."""
    theta = np.linspace(0.0, math.pi, 4097)
    t = np.cos(theta)[::-1]  # increasing
    cdf = np.atleast_2d(t_cdf(ds, t))
    cdf = cdf / cdf[:, -1:]
    lo = min(float(t[max(np.searchsorted(row, tail) - 1, 0)]) for row in cdf)
    hi = max(float(t[min(np.searchsorted(row, 1.0 - tail), t.size - 1)]) for row in cdf)
    return lo, hi


def line_wasserstein(values: np.ndarray, nodes: np.ndarray, cdf: np.ndarray,
                     p: float = 1.0) -> float:
    """Exact ``W_p`` between the empirical measure of ``values`` (each of mass 1/n) and the
    measure with CDF linear between ``nodes`` (``cdf`` there, non-decreasing; scaled to
    total 1), on the line (module docstring)."""
    x = np.sort(np.asarray(values, dtype=float))
    n = x.size
    f = _unit_cdf(cdf)
    u = np.unique(np.concatenate([f, np.arange(n + 1) / n]))
    a, b = u[:-1], u[1:]
    keep = b > a
    a, b = a[keep], b[keep]
    mid = 0.5 * (a + b)
    sample = x[np.minimum((mid * n).astype(int), n - 1)]
    qa, qb = _quantile(nodes, f, a, b)
    return float(np.sum((b - a) * _mean_power(qa - sample, qb - sample, p)) ** (1.0 / p))


def cdf_wasserstein(nodes: np.ndarray, cdf_a: np.ndarray, cdf_b: np.ndarray,
                    p: float = 2.0) -> float:
    """Exact ``W_p`` on the line between two measures whose CDFs are linear between the
    same ``nodes`` (each scaled to total 1): both quantile functions are linear between
    the merged breakpoints of the two CDFs, and ``|Q_a - Q_b|^p`` is integrated there in
    closed form."""
    fa, fb = (_unit_cdf(c) for c in (cdf_a, cdf_b))
    u = np.unique(np.concatenate([fa, fb]))
    a, b = u[:-1], u[1:]
    keep = b > a
    a, b = a[keep], b[keep]
    ends = [_quantile(nodes, f, a, b) for f in (fa, fb)]
    ga, gb = ends[0][0] - ends[1][0], ends[0][1] - ends[1][1]
    return float(np.sum((b - a) * _mean_power(ga, gb, p)) ** (1.0 / p))


def _unit_cdf(cdf: np.ndarray) -> np.ndarray:
    f = np.maximum.accumulate(np.asarray(cdf, dtype=float))
    f = f / f[-1]
    f[0] = 0.0
    return f


def _quantile(nodes: np.ndarray, f: np.ndarray, a: np.ndarray, b: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """The quantile function of the CDF ``f`` (linear between ``nodes``) at the ends
    ``a < b`` of pieces on which it is linear (the piece found from its left end, ``f[k]
    <= a < f[k + 1]``, which rounding cannot push onto a flat part of ``f`` as it can a
    midpoint next to 1)."""
    k = np.clip(np.searchsorted(f, a, side="right") - 1, 0, f.size - 2)
    slope = (nodes[k + 1] - nodes[k]) / (f[k + 1] - f[k])
    return nodes[k] + slope * (a - f[k]), nodes[k] + slope * (b - f[k])


def _mean_power(ga: np.ndarray, gb: np.ndarray, p: float) -> np.ndarray:
    """The mean of ``|g|^p`` over an interval where g is linear from ``ga`` to ``gb``."""
    x, y = np.abs(ga), np.abs(gb)
    cross = ga * gb < 0
    # a sign change: the two pieces from the root, each (|end|^p / (p + 1)) x its share
    share = np.where(cross, x / np.where(cross, x + y, 1.0), 0.0)
    across = (share * x**p + (1 - share) * y**p) / (p + 1)
    hi, lo = np.maximum(x, y), np.minimum(x, y)
    close = hi - lo <= 1e-6 * hi
    # (hi^(p+1) - lo^(p+1)) / ((p + 1)(hi - lo)); where they nearly agree, the midpoint
    # power (relative error O(((hi - lo)/hi)^2) < 1e-12)
    safe = np.where(close, 1.0, hi - lo)
    apart = (hi ** (p + 1) - lo ** (p + 1)) / ((p + 1) * safe)
    same = np.where(close, (0.5 * (hi + lo)) ** p, apart)
    return np.where(cross, across, same)


def w1_floor(nodes: np.ndarray, cdf: np.ndarray, count: int) -> float:
    """``sqrt(2 / (pi N)) int sqrt(F (1 - F)) dt`` for ``F`` linear between the nodes (in
    closed form on each node interval): the expected W_1 of ``count`` exact samples, to
    leading order in 1/N."""
    f = np.clip(np.asarray(cdf, dtype=float) / cdf[-1], 0.0, 1.0)
    dt, df = np.diff(np.asarray(nodes, dtype=float)), np.diff(f)
    # int sqrt(v (1 - v)) dv = (arccos(1 - 2v) - 2 (1 - 2v) sqrt(v (1 - v))) / 8
    g = (np.arccos(1 - 2 * f) - 2 * (1 - 2 * f) * np.sqrt(f * (1 - f))) / 8
    flat = df <= 1e-12
    mid = 0.5 * (f[:-1] + f[1:])
    pieces = np.where(flat, dt * np.sqrt(mid * (1 - mid)),
                      dt * np.diff(g) / np.where(flat, 1.0, df))
    return float(math.sqrt(2 / (math.pi * count)) * np.sum(pieces))
