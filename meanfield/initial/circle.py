"""Initial densities on the circle (w.r.t. d theta, normalised to mass 1 on the grid).

Kinds (config ``[initial]``):

- ``uniform``: ``1/(2 pi)``.
- ``perturbed``: ``(1 + amplitude cos(mode (theta - phase))) / (2 pi)``, |amplitude| <= 1.
- ``von_mises``: ``exp(concentration cos(theta - center)) / (2 pi I_0(concentration))``.
- ``mixture``: ``sum_i w_i f_i / sum_i w_i`` over ``[[initial.components]]`` (each a kind
  above with a ``weight``, default 1).
- ``samples``: a von Mises kernel density estimate of the angles in a file. The file is
  ``.npy`` or text (``numpy.loadtxt``): either a 1-D list of angles in radians, or an
  ``(n, 2)`` array of vectors, taken as the angles ``atan2(y, x)`` (any non-zero length;
  zero vectors are an error; a single row of two numbers is one vector). The kernel is
  von Mises with concentration ``1/h^2`` for ``bandwidth = h`` (radians: then one sample,
  or identical samples, are a valid estimate, one kernel bump), or, for ``bandwidth =
  "auto"`` (which needs samples with spread: at least two, not all one point), the rule of
  thumb of
  C. C. Taylor, "Automatic bandwidth selection for circular density estimation",
  Comput. Stat. Data Anal. 52 (2008): ``c = [3 n k^2 I_2(2k) / (4 sqrt(pi) I_0(k)^2)]^(2/5)``
  with ``k`` the von Mises concentration fitted to the sample. The estimate is evaluated
  exactly through its Fourier series.

Grid values: point values for the spectral method; cell averages (4-point Gauss-Legendre
per cell) for finite volumes. Either way they are checked (finite, non-negative, positive
mass) and scaled to mass exactly 1 before any time stepping.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import special

from meanfield.config.input_files import read_numbers
from meanfield.errors import ConfigError

TWO_PI = 2 * np.pi
# Spectral runs need the initial Fourier coefficients above |k| = n/3 to be this small
# (relative to the mean): otherwise the initial condition is not resolved.
SPECTRAL_RESOLUTION_TOLERANCE = 1e-10


def read_sample_file(path: str, key: str, what: str = "samples") -> np.ndarray:
    """The numbers of a samples (or token: ``what``) file as a float array with 2
    dimensions (one row per line of a text file; a 1-D ``.npy`` array as one column).

    Raises:
        ConfigError: (``key``) no such file, not numbers, no numbers at all, NaN or inf.
    """
    # (the one reader of input files: regular files only, no pickle, complex refused,
    # nothing of the file quoted; an empty text file is said below, in one line)
    data = read_numbers(path, key, formats=".npy or whitespace-separated text")
    data = np.atleast_1d(data)  # (a 0-d .npy array: one number)
    data = data[:, None] if data.ndim == 1 else data
    if data.size == 0:
        raise ConfigError(f"{key} = {path!r} holds no {what} (the file is empty)", key)
    finite = np.isfinite(data).reshape(data.shape[0], -1).all(axis=1)
    if not finite.all():
        raise ConfigError(f"{key} = {path!r}: row {int(np.argmin(finite))} contains NaN or "
                          "infinite values", key)
    return data


def load_sample_angles(path: str, key: str = "initial.path") -> np.ndarray:
    """Angles (radians) of the samples in ``path`` (see the module docstring): one per
    line, or one line of angles, or rows ``x y`` of vectors (a single row of two numbers
    is one vector)."""
    data = read_sample_file(path, key)
    if data.ndim == 2 and data.shape[0] == 1 and data.shape[1] != 2:
        data = data.T  # one line of angles
    if data.ndim == 2 and data.shape[1] == 1:
        angles = data[:, 0]
    elif data.ndim == 2 and data.shape[1] == 2:
        norms = np.hypot(data[:, 0], data[:, 1])
        if np.any(norms == 0):
            raise ConfigError(f"{key} = {path!r}: row {int(np.argmax(norms == 0))} is a zero "
                              "vector, which has no direction", key)
        angles = np.arctan2(data[:, 1], data[:, 0])
    else:
        raise ConfigError(f"{key} = {path!r}: expected a list of angles or an (n, 2) array "
                          f"of vectors on the circle, got shape {data.shape}", key)
    return np.mod(angles, TWO_PI)


# Samples whose mean resultant length is this close to 1 lie within ~1e-6 rad of one
# point: the automatic bandwidth (a rule fitted to their spread) is undefined there.
SPREAD_TOLERANCE = 1e-12


def check_spread(resultant: float, n: int, path: str, key: str) -> None:
    """Refuse ``bandwidth = "auto"`` for samples without spread: fewer than 2, or
    ``resultant`` (the length of their mean unit vector) within ``SPREAD_TOLERANCE`` of 1.
    With an explicit bandwidth such samples are a valid estimate (one kernel bump)."""
    if n < 2:
        what = "one sample"
    elif resultant > 1 - SPREAD_TOLERANCE:
        what = f"{n} samples, all the same point"
    else:
        return
    raise ConfigError(f"{key} = {path!r} holds {what}: the automatic bandwidth needs "
                      "samples with spread; give initial.bandwidth (radians) or more "
                      "distinct samples", key)


def von_mises_concentration_estimate(angles: np.ndarray) -> float:
    """Approximate MLE of the von Mises concentration (Best & Fisher 1981)."""
    r = float(np.abs(np.mean(np.exp(1j * angles))))
    if r < 0.53:
        return 2 * r + r**3 + 5 * r**5 / 6
    if r < 0.85:
        return -0.4 + 1.39 * r + 0.43 / (1 - r)
    return 1 / (r**3 - 4 * r**2 + 3 * r)


def taylor_bandwidth_concentration(angles: np.ndarray) -> float:
    """Kernel concentration by Taylor's (2008) rule of thumb for circular KDE."""
    n = angles.size
    k = von_mises_concentration_estimate(angles)
    ratio = special.ive(2, 2 * k) / special.ive(0, k) ** 2  # I_2(2k)/I_0(k)^2, scaled
    return float((3 * n * k**2 * ratio / (4 * np.sqrt(np.pi))) ** 0.4)


def kde_concentration(initial: dict, angles: np.ndarray | None = None,
                      key: str = "initial.path") -> float:
    """Kernel concentration of the ``samples`` estimate: ``1/h^2`` for ``bandwidth = h``,
    Taylor's rule for ``"auto"``; ``angles`` are the samples if already loaded.

    Raises:
        ConfigError: (``key``) ``"auto"`` for samples without spread (``check_spread``).
    """
    if angles is None:
        angles = load_sample_angles(initial["path"], key)
    bw = initial["bandwidth"]
    if bw != "auto":
        return 1.0 / bw**2
    check_spread(float(np.abs(np.mean(np.exp(1j * angles)))), angles.size, initial["path"],
                 key)
    return taylor_bandwidth_concentration(angles)


def _kde(angles: np.ndarray, concentration: float) -> Callable[[np.ndarray], np.ndarray]:
    # Fourier series of the KDE: c_k = (1/2pi) I_k(c)/I_0(c) * mean(e^{-ik theta_i}).
    k = np.arange(1, 1_000_000)
    ratio = special.ive(k[:2000], concentration) / special.ive(0, concentration)
    kmax = int(np.argmax(ratio < 1e-17)) if np.any(ratio < 1e-17) else 2000
    ks = np.arange(1, kmax + 1)
    moments = np.exp(-1j * np.outer(ks, angles)).mean(axis=1) * ratio[:kmax]

    def f(theta: np.ndarray) -> np.ndarray:
        theta = np.asarray(theta, dtype=float)
        out = np.ones(theta.shape)
        for start in range(0, kmax, 256):  # blocks keep the (modes x points) array small
            kk = ks[start:start + 256]
            phase = np.exp(1j * np.multiply.outer(theta, kk))
            out += 2 * np.real(phase @ moments[start:start + 256])
        return out / TWO_PI

    return f


def density_function(initial: dict) -> Callable[[np.ndarray], np.ndarray]:
    """A vectorised function of theta for a validated ``[initial]`` table (or component)."""
    kind = initial["kind"]
    if kind == "uniform":
        return lambda th: np.full(np.shape(th), 1 / TWO_PI)
    if kind == "perturbed":
        m, a, ph = initial["mode"], initial["amplitude"], initial["phase"]
        return lambda th: (1 + a * np.cos(m * (np.asarray(th) - ph))) / TWO_PI
    if kind == "von_mises":
        mu, c = initial["center"], initial["concentration"]
        norm = TWO_PI * special.ive(0, c)  # exp(c (cos - 1)) / (2 pi e^{-c} I_0(c))
        return lambda th: np.exp(c * (np.cos(np.asarray(th) - mu) - 1)) / norm
    if kind == "samples":
        angles = load_sample_angles(initial["path"])
        return _kde(angles, kde_concentration(initial, angles))
    if kind == "mixture":
        parts = [(c["weight"], density_function(c)) for c in initial["components"]]
        total = sum(w for w, _ in parts)
        return lambda th: sum(w * f(th) for w, f in parts) / total
    raise ConfigError(f"initial.kind = {kind!r} is not a known initial kind", "initial.kind")


def cell_averages(f: Callable[[np.ndarray], np.ndarray], theta: np.ndarray, dx: float,
                  points: int = 4) -> np.ndarray:
    """Averages of ``f`` over the cells ``[theta_j - dx/2, theta_j + dx/2]`` (Gauss-Legendre)."""
    x, w = np.polynomial.legendre.leggauss(points)
    values = f(theta[:, None] + 0.5 * dx * x[None, :])
    return values @ (0.5 * w)


def unit_mass_density(rho: np.ndarray, integrate: Callable[[np.ndarray], float]
                       ) -> np.ndarray:
    """``rho / int rho`` after checking that rho is finite, non-negative and has mass.

    Raises:
        ConfigError: (key ``initial``) saying which of the three fails.
    """
    if not np.all(np.isfinite(rho)):
        raise ConfigError("the initial density has NaN or infinite values; check [initial]",
                          "initial")
    if np.any(rho < 0):
        raise ConfigError(f"the initial density is negative (min {rho.min():.3g}); check "
                          "[initial] (amplitude, mixture weights)", "initial")
    mass = integrate(rho)
    if not mass > 0:
        raise ConfigError("the initial density has no mass; check [initial]", "initial")
    return rho / mass


def initial_values(initial: dict, grid, averages: bool = False) -> np.ndarray:
    """Checked values of the initial density on a circle grid, of mass exactly 1.

    Args:
        initial: validated ``[initial]`` table.
        grid: a ``solvers.grids.circle.CircleGrid`` (nodes ``theta``, spacing ``dx``).
        averages: cell averages over ``[theta - dx/2, theta + dx/2]`` (finite volumes)
            instead of point values, which must then resolve the density (spectral).

    Raises:
        ConfigError: the density is NaN, negative, massless, or (point values) not
            resolved by the grid.
    """
    f = density_function(initial)
    rho = cell_averages(f, grid.theta, grid.dx) if averages else f(grid.theta)
    rho = unit_mass_density(rho, grid.integrate)
    if not averages:
        _check_resolved(f, rho, grid.n)
    return rho


def _check_resolved(f: Callable, rho: np.ndarray, n: int) -> None:
    def tail(values: np.ndarray) -> float:
        c = np.abs(np.fft.rfft(values))
        m = values.size
        return float(c[m // 3 + 1:].max() / c[0]) if m // 3 + 1 < c.size else 0.0

    if tail(rho) <= SPECTRAL_RESOLUTION_TOLERANCE:
        return
    needed = n
    while needed < 1 << 20:
        needed *= 2
        th = TWO_PI * np.arange(needed) / needed
        if tail(f(th)) <= SPECTRAL_RESOLUTION_TOLERANCE:
            break
    raise ConfigError(
        f"discretization.resolution = {n} does not resolve the initial density (Fourier "
        f"coefficients above |k| = n/3 reach {tail(rho):.1e} of the mean, more than "
        f"{SPECTRAL_RESOLUTION_TOLERANCE:g}); use resolution >= {needed}, or method = "
        "\"finite-volume\"", "discretization.resolution")
