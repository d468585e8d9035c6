"""Initial zonal densities on S^{d-1}: functions of ``t = cos theta = <x, e>`` against the
normalized surface measure (the uniform density is 1), normalised to mass 1.

Kinds (config ``[initial]`` with ``geometry = "zonal"``):

- ``uniform``: 1.
- ``perturbed``: ``1 + amplitude P_l(t)``, ``P_l`` the Gegenbauer polynomial of ``degree`` l
  normalized by ``P_l(1) = 1`` (``cos(l theta)`` for d = 2, Legendre for d = 3), so that
  ``|P_l| <= 1`` and |amplitude| <= 1 keeps the density non-negative.
- ``von_mises``: von Mises-Fisher in dimension d about e, ``e^{c t} / lambda_0(c)`` with
  ``lambda_0(c) = Gamma(d/2) (2/c)^{d/2-1} I_{d/2-1}(c)`` (``concentration`` c >= 0),
  computed in logarithms (any d, any c).
- ``mixture``: ``sum_i w_i f_i / sum_i w_i`` over ``[[initial.components]]``.
- ``samples``: the zonal part of the von Mises-Fisher kernel density estimate of the points
  in a file (an ``(n, d)`` array of non-zero vectors, ``t = x_1/|x|``, or one column of
  values of ``t`` in [-1, 1]). Its Gegenbauer coefficients are exact: ``k_l (1/n) sum_i
  Q_l(t_i)``, ``k_l = lambda_l(c)/lambda_0(c)`` the Funk-Hecke multipliers of the kernel of
  concentration ``c = 1/h^2`` (``bandwidth`` h in radians; ``"auto"``: the normal-reference
  rule ``h = 1.06 s n^{-1/5}`` for the spread s of the polar angles, at least 1e-3).

Grid values: point values at the Gauss nodes (spectral; the run stops before any step if
the degrees above two thirds of the band limit carry more than 1e-10 of the mean: the data
are not resolved) or cell averages (finite volumes; 8-point Gauss-Legendre in theta on
sub-intervals of each cell, as many as the measure's variation across it needs, weighted
by the measure in logarithms). Checked and scaled to mass 1.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from meanfield.errors import ConfigError
from meanfield.initial.circle import (
    SPECTRAL_RESOLUTION_TOLERANCE,
    read_sample_file,
    unit_mass_density,
)
from meanfield.model.zonal_kernels import log_funk_hecke
from solvers.grids.zonal import log_measure_density
from solvers.transforms import gegenbauer

# Largest degree the samples' kernel estimate keeps (its multipliers decay
# super-exponentially past about the concentration).
SAMPLES_MAX_DEGREE = 4096


def von_mises_density(dim: int, concentration: float) -> Callable[[np.ndarray], np.ndarray]:
    """``t -> e^{c t} / lambda_0(c)``: the von Mises-Fisher density of S^{dim-1}."""
    c = float(concentration)
    if c == 0:
        return lambda t: np.ones(np.shape(t))
    log_norm = float(log_funk_hecke(0, dim, c)[0])
    return lambda t: np.exp(c * np.asarray(t, dtype=float) - log_norm)


def load_sample_t(path: str, dim: int, key: str = "initial.path") -> np.ndarray:
    """The values ``t = <x, e>`` of the samples in the file at ``path``."""
    data = read_sample_file(path, key)
    if data.shape[1] == 1:
        t = data[:, 0]
        if np.any(np.abs(t) > 1):
            raise ConfigError(f"{key} = {path!r}: a single column holds values of t = cos "
                              "theta, which must lie in [-1, 1]", key)
        return t
    if data.shape[1] != dim:
        raise ConfigError(f"{key} = {path!r}: expected an (n, {dim}) array of vectors of "
                          f"R^{dim} (domain.dim = {dim}) or one column of t = cos theta, got "
                          f"shape {data.shape}", key)
    norms = np.linalg.norm(data, axis=1)
    if np.any(norms == 0):
        raise ConfigError(f"{key} = {path!r}: row {int(np.argmax(norms == 0))} is a zero "
                          "vector, which has no direction", key)
    return np.clip(data[:, 0] / norms, -1.0, 1.0)


def samples_concentration(initial: dict, t_samples: np.ndarray) -> float:
    """The kernel's concentration ``c = 1/h^2`` of the samples' estimate (module
    docstring; the token sampler draws from the same kernel)."""
    bandwidth = initial["bandwidth"]
    if bandwidth == "auto":
        theta = np.arccos(t_samples)
        spread = float(np.std(theta)) if theta.size > 1 else 0.0
        bandwidth = max(1.06 * spread * theta.size ** (-1 / 5), 1e-3)
    return 1.0 / bandwidth**2


def samples_density(initial: dict, dim: int, key: str = "initial.path"
                    ) -> Callable[[np.ndarray], np.ndarray]:
    """The zonal kernel density estimate of the samples (module docstring)."""
    t_samples = load_sample_t(initial["path"], dim, key)
    c = samples_concentration(initial, t_samples)
    log_k = log_funk_hecke(SAMPLES_MAX_DEGREE, dim, c)
    k = np.exp(log_k - log_k[0])
    lmax = int(np.argmax(k < 1e-17)) if np.any(k < 1e-17) else SAMPLES_MAX_DEGREE
    moments = gegenbauer.table(lmax, dim, t_samples).mean(axis=1)
    coeffs = k[: lmax + 1] * moments

    def f(t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        out = coeffs @ gegenbauer.table(lmax, dim, t.ravel())
        floor = 1e-12 * max(float(np.abs(out).max()), 1e-300)
        out[(out < 0) & (out > -floor)] = 0.0  # round-off far from every sample
        return out.reshape(t.shape)

    return f


def density_function(initial: dict, dim: int) -> Callable[[np.ndarray], np.ndarray]:
    """The initial density as a function of ``t`` (not yet normalised on a grid)."""
    kind = initial["kind"]
    if kind == "uniform":
        return lambda t: np.ones(np.shape(t))
    if kind == "perturbed":
        l, amp = initial["degree"], initial["amplitude"]
        return lambda t: 1.0 + amp * gegenbauer.degree_values(l, dim, t)
    if kind == "von_mises":
        return von_mises_density(dim, initial["concentration"])
    if kind == "samples":
        return samples_density(initial, dim)
    if kind == "mixture":
        parts = [(c["weight"], density_function(c, dim)) for c in initial["components"]]
        total = sum(w for w, _ in parts)
        return lambda t: sum(w * f(t) for w, f in parts) / total
    raise ConfigError(f"initial.kind = {kind!r} has no zonal density", "initial.kind")


# Most sub-intervals of one cell in ``cell_averages`` (only cells near a pole at large d,
# which carry no mass to speak of, would want more).
MAX_SUBINTERVALS = 64


def cell_averages(f: Callable[[np.ndarray], np.ndarray], cells) -> np.ndarray:
    """Averages of ``f(t)`` over the cells against the measure: 8-point Gauss-Legendre in
    theta on ``m_j`` equal sub-intervals of cell j, the measure's density taken relative to
    its largest value in the cell.

    At large d the measure's log-density ``(d - 2) log sin theta`` changes by ``Delta_j = (d
    - 2) |cot theta| h`` across a cell away from the equator (d = 512, 40 cells: e^109 in
    the fifth cell), which one 8-point rule cannot follow (it was off by 1.3% there); ``m_j
    = ceil(Delta_j / 2)`` sub-intervals (at most ``MAX_SUBINTERVALS``) keep each one's
    change below 2, where the rule is exact to ~1e-10."""
    x, w = np.polynomial.legendre.leggauss(8)
    near = np.minimum(cells.edges[:-1], np.pi - cells.edges[1:])  # the edge nearer a pole
    with np.errstate(divide="ignore"):
        change = (cells.dim - 2) * cells.h / np.tan(np.maximum(near, 1e-300))
    m = np.clip(np.ceil(change / 2), 1, MAX_SUBINTERVALS).astype(int)
    out = np.empty(cells.n)
    for count in np.unique(m):  # the cells sharing a number of sub-intervals at once
        j = np.nonzero(m == count)[0]
        sub = cells.h / count
        # (cells, sub-intervals, nodes): theta of each node
        starts = cells.edges[j][:, None] + sub * np.arange(count)[None, :]
        theta = starts[..., None] + 0.5 * sub * (1 + x)
        logp = log_measure_density(cells.dim, theta).reshape(len(j), -1)
        weight = np.tile(w, count) * np.exp(logp - logp.max(axis=1, keepdims=True))
        values = f(np.cos(theta.reshape(len(j), -1)))
        out[j] = np.sum(weight * values, axis=1) / np.sum(weight, axis=1)
    return out


def initial_values(initial: dict, grid, averages: bool = False) -> np.ndarray:
    """Node values (spectral) or cell averages (finite volumes), of mass 1."""
    f = density_function(initial, grid.dim)
    rho = cell_averages(f, grid) if averages else f(grid.t)
    rho = unit_mass_density(np.asarray(rho, dtype=float), grid.integrate)
    if not averages:
        c = grid.analysis(rho)
        top = np.abs(c[2 * grid.lmax // 3 + 1:])
        if top.size and top.max() > SPECTRAL_RESOLUTION_TOLERANCE * abs(c[0]):
            raise ConfigError(
                f"the initial density is not resolved at band limit {grid.lmax} (degrees "
                f"above {2 * grid.lmax // 3} carry {top.max() / abs(c[0]):.2g} of the "
                f"mean, more than {SPECTRAL_RESOLUTION_TOLERANCE:g}); raise "
                "discretization.resolution, or use method = \"finite-volume\"",
                "discretization.resolution")
    return rho
