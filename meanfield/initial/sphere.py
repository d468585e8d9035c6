"""Initial densities on the sphere S^2 (w.r.t. surface area, normalised to mass 1).

Kinds (config ``[initial]`` with ``geometry = "sphere"``):

- ``uniform``: ``1/(4 pi)``.
- ``perturbed``: ``(1 + amplitude Y(x) / max|Y|) / (4 pi)`` with ``Y`` the real spherical
  harmonic of ``degree`` l and ``order`` m (``lambda_lm(sin lat) cos(m lon)`` for m >= 0,
  ``lambda_l|m|(sin lat) sin(|m| lon)`` for m < 0); ``max|Y|`` is taken on a fine grid of
  latitudes, so |amplitude| <= 1 keeps the density non-negative.
- ``von_mises``: von Mises-Fisher, ``c exp(c <center, x>) / (4 pi sinh c)`` with
  ``center`` a unit 3-vector (checked, never normalised) and ``concentration`` c >= 0.
- ``mixture``: weighted sum of the kinds above (``[[initial.components]]``).
- ``samples``: a von Mises-Fisher kernel density estimate of the points in a file: ``.npy``
  or text, an ``(n, 3)`` array of non-zero vectors, each divided by its length (zero
  vectors are an error). Kernel concentration ``1/h^2`` for ``bandwidth = h`` (radians;
  one sample or identical samples are then a valid estimate); ``"auto"`` (samples with
  spread needed: at least two, not all one point) uses the rule of thumb of E. Garcia-Portugues, "Exact risk improvement of
  bandwidth selectors for kernel density estimation with directional data", Electron. J.
  Stat. 7 (2013), for S^2: ``h = [8 sinh^2 k / (k n ((1 + 4k^2) sinh 2k - 2k cosh 2k))]^(1/6)``
  with ``k`` the von Mises-Fisher concentration fitted to the sample (it reduces to the
  normal-reference rule ``h = n^(-1/6) / sqrt(k)`` for large k).

The grid values are point values on the Gauss-Legendre grid, checked (finite,
non-negative, positive mass) and scaled to mass 1.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import optimize, special

from meanfield.errors import ConfigError
from meanfield.initial.circle import (
    SPECTRAL_RESOLUTION_TOLERANCE,
    check_spread,
    read_sample_file,
    unit_mass_density,
)
from solvers.grids.coordinates import colat_lon
from solvers.grids.sphere import SphereGrid
from solvers.transforms.legendre import legendre_table

FOUR_PI = 4 * np.pi


def load_sample_vectors(path: str, key: str = "initial.path") -> np.ndarray:
    """Unit vectors ``(n, 3)`` from the file at ``path`` (see the module docstring)."""
    data = read_sample_file(path, key)
    if data.shape[1] != 3:
        raise ConfigError(f"{key} = {path!r}: expected an (n, 3) array of vectors on the "
                          f"sphere, got shape {data.shape}", key)
    norms = np.linalg.norm(data, axis=1)
    if np.any(norms == 0):
        raise ConfigError(f"{key} = {path!r}: row {int(np.argmax(norms == 0))} is a zero "
                          "vector, which has no direction", key)
    return data / norms[:, None]


def vmf_concentration_estimate(points: np.ndarray) -> float:
    """MLE of the von Mises-Fisher concentration on S^2: solve coth k - 1/k = |mean|."""
    r = float(np.linalg.norm(points.mean(axis=0)))
    if r < 1e-8:
        return 0.0
    if r > 1 - 1e-12:
        return 1e12
    f = lambda k: 1 / np.tanh(k) - 1 / k - r
    return float(optimize.brentq(f, 1e-10, 1e13))


def garcia_portugues_bandwidth(points: np.ndarray) -> float:
    """Rule-of-thumb bandwidth (radians) for vMF kernel density estimation on S^2."""
    n = points.shape[0]
    k = max(vmf_concentration_estimate(points), 1e-6)
    if k > 300:  # the large-k limit, written without overflowing sinh
        return float(n ** (-1 / 6) / np.sqrt(k))
    num = 8 * np.sinh(k) ** 2
    den = k * n * ((1 + 4 * k**2) * np.sinh(2 * k) - 2 * k * np.cosh(2 * k))
    return float((num / den) ** (1 / 6))


def vmf_density(center: np.ndarray, concentration: float
                ) -> Callable[[np.ndarray], np.ndarray]:
    """The von Mises-Fisher density as a function of points ``(..., 3)``."""
    c = float(concentration)
    center = np.asarray(center, dtype=float)
    if c == 0:
        return lambda x: np.full(np.shape(x)[:-1], 1 / FOUR_PI)
    norm = c / (2 * np.pi * -np.expm1(-2 * c))  # c / (4 pi sinh c) * e^c
    return lambda x: norm * np.exp(c * (np.asarray(x) @ center - 1))


def kde_concentration(initial: dict, points: np.ndarray | None = None,
                      key: str = "initial.path") -> float:
    """Kernel concentration ``1/h^2`` of the ``samples`` estimate (``h`` the bandwidth, or
    the rule of thumb for ``"auto"``); ``points`` are the samples if already loaded.

    Raises:
        ConfigError: (``key``) ``"auto"`` for samples without spread (``check_spread``).
    """
    if points is None:
        points = load_sample_vectors(initial["path"], key)
    bw = initial["bandwidth"]
    if bw == "auto":
        check_spread(float(np.linalg.norm(points.mean(axis=0))), points.shape[0],
                     initial["path"], key)
        bw = garcia_portugues_bandwidth(points)
    return 1.0 / bw**2


def _kde(points: np.ndarray, c: float) -> Callable[[np.ndarray], np.ndarray]:
    # Spectrally: the vMF kernel of concentration c acts on degree l by
    # k_l = i_l(c)/i_0(c) (Funk-Hecke), so a_lm = k_l (1/n) sum_i conj(Y_lm(x_i)); the
    # sample moments and the evaluation are ducc0's transforms at arbitrary points, exact
    # to ~1e-13 and O(n + L^2 log L) instead of O(n x points).
    import ducc0

    degrees = np.arange(4097)
    k = special.ive(degrees + 0.5, c) / special.ive(0.5, c)
    lmax = int(np.argmax(k < 1e-17)) if np.any(k < 1e-17) else 4096
    loc = colat_lon(points)
    moments = ducc0.sht.experimental.adjoint_synthesis_general(
        map=np.full((1, points.shape[0]), 1.0 / points.shape[0]), spin=0, lmax=lmax,
        loc=loc, epsilon=1e-13)[0]
    alm = k[SphereGrid.degrees(lmax)[0]] * moments

    def f(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        flat = x.reshape(-1, 3)
        where = colat_lon(flat)
        out = ducc0.sht.experimental.synthesis_general(
            alm=alm[None], spin=0, lmax=lmax, loc=where, epsilon=1e-13)[0]
        # The estimate is positive; far from all samples the transforms leave round-off
        # (~1e-16 of the peak) of either sign, which is set to zero.
        floor = 1e-12 * np.abs(out).max()
        out[(out < 0) & (out > -floor)] = 0.0
        return out.reshape(x.shape[:-1])

    return f


def _real_harmonic(degree: int, order: int) -> Callable[[np.ndarray], np.ndarray]:
    m = abs(order)
    fine = np.sin(np.linspace(-np.pi / 2, np.pi / 2, 20001))
    peak = float(np.abs(legendre_table(degree, m, fine)[degree - m]).max())

    def y(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        z = np.clip(x[..., 2], -1.0, 1.0)
        lam = legendre_table(degree, m, z.ravel())[degree - m].reshape(z.shape)
        lon = np.arctan2(x[..., 1], x[..., 0])
        trig = np.cos(m * lon) if order >= 0 else np.sin(m * lon)
        return lam * trig / peak

    return y


def density_function(initial: dict) -> Callable[[np.ndarray], np.ndarray]:
    """A function of points ``(..., 3)`` for a validated ``[initial]`` table on S^2."""
    kind = initial["kind"]
    if kind == "uniform":
        return lambda x: np.full(np.shape(x)[:-1], 1 / FOUR_PI)
    if kind == "perturbed":
        y, a = _real_harmonic(initial["degree"], initial["order"]), initial["amplitude"]
        return lambda x: (1 + a * y(x)) / FOUR_PI
    if kind == "von_mises":
        return vmf_density(initial["center"], initial["concentration"])
    if kind == "samples":
        pts = load_sample_vectors(initial["path"])
        return _kde(pts, kde_concentration(initial, pts))
    if kind == "mixture":
        parts = [(c["weight"], density_function(c)) for c in initial["components"]]
        total = sum(w for w, _ in parts)
        return lambda x: sum(w * f(x) for w, f in parts) / total
    raise ConfigError(f"initial.kind = {kind!r} is not a known initial kind", "initial.kind")


def initial_values(initial: dict, grid) -> np.ndarray:
    """Checked values of the initial density on ``grid`` (a ``SphereGrid``), mass 1.

    Raises:
        ConfigError: the density is NaN, negative or massless, or its spherical-harmonic
            coefficients above degree 2 lmax / 3 exceed ``SPECTRAL_RESOLUTION_TOLERANCE``
            of the mean (not resolved; the message names the band limit needed).
    """
    f = density_function(initial)
    rho = unit_mass_density(f(grid.points), grid.integrate)

    def tail(g: SphereGrid, values: np.ndarray) -> float:
        a = np.abs(g.analysis(values))
        return float(a[g.l > 2 * g.lmax // 3].max(initial=0.0) / a[0])

    if tail(grid, rho) <= SPECTRAL_RESOLUTION_TOLERANCE:
        return rho
    needed = grid.lmax
    while needed < 2047:
        needed = min(2 * needed + 1, 2047)
        g = SphereGrid(needed)
        if tail(g, f(g.points)) <= SPECTRAL_RESOLUTION_TOLERANCE:
            break
    raise ConfigError(
        f"discretization.resolution = {grid.lmax} (the band limit) does not resolve the "
        f"initial density (coefficients above degree 2 lmax/3 reach {tail(grid, rho):.1e} "
        f"of the mean, more than {SPECTRAL_RESOLUTION_TOLERANCE:g}); use resolution >= "
        f"{needed}", "discretization.resolution")
