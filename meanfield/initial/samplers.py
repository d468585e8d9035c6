"""Initial tokens for particle runs: i.i.d. draws from the densities the PDE solvers start from.

``sample_tokens(initial, n, dim, rng)`` returns ``(n, dim)`` unit vectors (rows of norm 1
to ~1e-16). For the density kinds they are independent draws from the density of the
validated ``[initial]`` table, the same density ``meanfield.initial`` (dim 2, the angle
theta being the point ``(cos theta, sin theta)``) and ``meanfield.initial.sphere`` (dim 3)
give the PDE solvers. Each sampler is exact; "acceptance" is the rate of a rejection step.

- ``uniform`` (any dim): normalised standard Gaussians.
- ``von_mises`` (any dim; ``center`` an angle for dim 2, a unit ``dim``-vector otherwise;
  ``concentration`` c, 0 = uniform). Dim 2: for c < 1, rejection from the uniform law
  (acceptance ``e^-c I_0(c)`` >= 0.46); for 1 <= c <= 1e6, numpy's ``Generator.vonmises``
  (Best-Fisher); for c > 1e6, where numpy switches to a wrapped-normal approximation,
  rejection from the normal of variance ``pi^2/(4c)``, which bounds the density by
  Jordan's inequality ``|sin(t/2)| >= |t|/pi`` (acceptance -> 2/pi). Dim 3: ``w = <x,
  center>`` by its inverse CDF, ``1 - w = -log1p(v expm1(-2c))/c`` with v uniform (stable
  from c -> 0 to c = 1e8). Dim >= 4: ``w`` by Wood's rejection (A. T. A. Wood, "Simulation
  of the von Mises Fisher distribution", Commun. Stat. Simul. Comput. 23 (1994); acceptance
  >= 0.67, written in ``1 - w`` for large c). Then ``x = w center + sqrt(1 - w^2) u`` with
  ``u`` a uniform unit vector orthogonal to ``center``.
- ``perturbed`` (dim 2 and 3): rejection from the uniform law, acceptance ``1/(1 + |a|)``
  (dim 3: ``1/(1 + |a| B)``, ``B`` >= 1 the sup of |Y|/max|Y| refined off the latitude grid
  that ``initial_sphere`` takes max|Y| on: B - 1 < 1e-7 up to degree 50, 4e-4 at 1000).
- ``mixture``: component labels i.i.d. with probabilities ``weight / sum(weights)``, each
  component's tokens drawn by its sampler into the rows of its label.
- ``samples`` (dim 2 and 3): the kernel density estimate of the PDE: a data point chosen
  uniformly, then a von Mises (dim 2) / von Mises-Fisher (dim 3) draw around it with the
  estimate's kernel concentration (``kde_concentration`` of ``initial``/``initial_sphere``).
- ``equiangular`` (``rho``, needs n <= dim): ``<x_i, x_j> = rho`` for i != j, a fixed
  frame turned by a uniformly random rotation (``tokens.equiangular_tokens``).
- ``tokens`` (``path``, ``unit_rows``): the rows of a file are the tokens (nothing is
  drawn); see ``load_token_file`` and ``sample_tokens``.

Zonal densities on S^{d-1} (``geometry = "zonal"``, any d) are drawn by
``meanfield.initial.zonal_samplers`` (t from its marginal, the rest uniform), which takes
its von Mises-Fisher and rejection steps from here.

Tokens in R^d (``geometry = "euclidean"``, any d >= 1; ``sample_tokens(...,
geometry="euclidean")``), from the same stream of the particle seed:

- ``gaussian`` (``mean``, ``covariance``): ``x = mean + L g`` with g standard normal in
  R^d and ``L`` the Cholesky factor of the covariance (``sqrt(s) I`` for a number s);
- ``tokens`` (``path``): the rows of the file as given (not normalised; a zero row is a
  token at the origin), see ``load_euclidean_tokens``;
- ``uniform``: uniform on the unit sphere S^{d-1} of R^d (d = 1: the signs +-1);
- ``equiangular``: the unit vectors of the sphere's kind (n <= d).
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from pathlib import Path

import numpy as np

from meanfield.errors import ConfigError
from meanfield.initial import circle as circle_initial
from meanfield.initial import sphere as initial_sphere
from meanfield.initial.tokens import equiangular_tokens
from meanfield.model.tokens import TOKEN_UNIT_TOLERANCE, check_size, initial_rng
from solvers.grids.coordinates import unit_vectors

ANY_DIM_KINDS = ("uniform", "von_mises", "mixture", "equiangular", "tokens")
LOW_DIM_KINDS = ("perturbed", "samples")  # defined on S^1 and S^2 only
COMPONENT_KINDS = ("uniform", "perturbed", "von_mises", "samples")
ZERO_ROW = 1e-12  # token-file rows shorter than this times the longest are zero vectors
WRAPPED_NORMAL_ABOVE = 1e6  # numpy's vonmises is an approximation beyond this


def valid_kinds(dim: int) -> tuple[str, ...]:
    """The initial kinds ``sample_tokens`` accepts in dimension ``dim``."""
    return ANY_DIM_KINDS + (LOW_DIM_KINDS if dim in (2, 3) else ())


def sample_tokens(initial: dict, n: int, dim: int,
                  rng: np.random.Generator | int | None,
                  geometry: str | None = None) -> np.ndarray:
    """``n`` tokens on S^{dim-1} (or in R^dim) for a validated ``[initial]`` table.

    Density kinds give i.i.d. draws (see the module docstring for the samplers);
    ``equiangular`` gives a randomly turned equiangular set; ``tokens`` gives the rows of
    ``initial["path"]``, each divided by its Euclidean length: with ``unit_rows = true``
    any non-zero lengths are accepted, with ``unit_rows = false`` every row must already
    be a unit vector to ``TOKEN_UNIT_TOLERANCE`` (1e-6) and the division only removes that
    round-off.

    Args:
        initial: validated ``[initial]`` table (``meanfield.config``).
        n: number of tokens, >= 2.
        dim: ambient dimension d >= 2 (tokens on S^{d-1}).
        rng: the Generator of the initial tokens (an int seed goes through
            ``meanfield.model.tokens.initial_rng``). The same state gives the same tokens, bit
            for bit.
        geometry: ``domain.geometry``; ``"euclidean"``: tokens in R^dim (dim >= 1, the
            kinds of ``EUCLIDEAN_KINDS``; see the module docstring), else on S^{dim-1}.

    Returns:
        float64 array ``(n, dim)`` of unit rows (in R^d: the tokens as drawn or read).

    Raises:
        ConfigError: a kind not defined in ``dim`` (key ``initial.kind``), a ``center``
            of the wrong length (``initial.center``), ``rho`` out of range, n > dim for
            equiangular tokens, or a bad token file (see ``load_token_file``).
    """
    if geometry == "euclidean":
        return _sample_euclidean(initial, n, dim, initial_rng(rng))
    check_size(n, dim)
    return _sample(initial, n, dim, initial_rng(rng), "initial")


EUCLIDEAN_KINDS = ("gaussian", "tokens", "uniform", "equiangular")


def _sample_euclidean(initial: dict, n: int, dim: int, rng: np.random.Generator
                      ) -> np.ndarray:
    """``n`` tokens in R^dim (module docstring)."""
    for value, key, low in ((n, "particles.n", 2), (dim, "domain.dim", 1)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
            raise ConfigError(f"{key} must be an integer >= {low}, got {value!r}", key)
    kind = initial.get("kind")
    if not isinstance(kind, str) or kind not in EUCLIDEAN_KINDS:
        raise ConfigError(f"initial.kind = {kind!r} is not an initial kind for tokens in "
                          f"R^d; valid: {', '.join(repr(k) for k in EUCLIDEAN_KINDS)}",
                          "initial.kind")
    if kind == "gaussian":
        return gaussian_tokens(initial["mean"], initial["covariance"], n, rng)
    if kind == "tokens":
        return load_euclidean_tokens(initial["path"], dim, n)
    if kind == "uniform":
        return _uniform(n, dim, rng)
    if n > dim:
        raise ConfigError(f"particles.n = {n}: equiangular tokens need n <= d = {dim}",
                          "particles.n")
    return _sample(initial, n, dim, rng, "initial")


def gaussian_tokens(mean, covariance, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` i.i.d. draws of N(mean, covariance) in R^d: ``mean + L g``, g standard normal
    (one ``(n, d)`` block of the stream), ``L`` the Cholesky factor (``sqrt(s) I`` for a
    number ``s``).

    Raises:
        ConfigError: ``initial.covariance`` not positive definite.
    """
    mu = np.asarray(mean, dtype=float)
    g = rng.standard_normal((n, mu.size))
    if np.ndim(covariance) == 0:
        return mu + math.sqrt(float(covariance)) * g
    try:
        low = np.linalg.cholesky(np.asarray(covariance, dtype=float))
    except np.linalg.LinAlgError:
        raise ConfigError("initial.covariance is not positive definite (a covariance must "
                          "be symmetric positive definite)", "initial.covariance") from None
    return mu + g @ low.T


def _sample(initial: dict, n: int, dim: int, rng: np.random.Generator, key: str
            ) -> np.ndarray:
    kind = initial.get("kind")
    kinds = valid_kinds(dim) if key == "initial" else tuple(
        k for k in COMPONENT_KINDS if k in valid_kinds(dim))
    if not isinstance(kind, str) or kind not in kinds:
        where = "" if key == "initial" else " for a mixture component"
        raise ConfigError(f"{key}.kind = {kind!r} is not an initial kind in dimension {dim}"
                          f"{where}; valid: {', '.join(repr(k) for k in kinds)}",
                          f"{key}.kind")
    if kind == "uniform":
        return _uniform(n, dim, rng)
    if kind == "von_mises":
        return _von_mises(initial, n, dim, rng, key)
    if kind == "perturbed":
        return _perturbed(initial, n, dim, rng)
    if kind == "samples":
        return _kde_draws(initial, n, dim, rng, key)
    if kind == "mixture":
        comps = initial["components"]
        weights = np.array([c.get("weight", 1.0) for c in comps], dtype=float)
        labels = rng.choice(len(comps), size=n, p=weights / weights.sum())
        x = np.empty((n, dim))
        for i, comp in enumerate(comps):
            rows = np.flatnonzero(labels == i)
            x[rows] = _sample(comp, rows.size, dim, rng, f"{key}.components[{i}]")
        return x
    if kind == "equiangular":
        rho, lo = initial["rho"], -1.0 / (n - 1)
        if not lo <= rho < 1:
            raise ConfigError(f"{key}.rho = {rho!r}: {n} equiangular tokens need "
                              f"{lo:.6g} <= rho < 1", f"{key}.rho")
        return _normalize(equiangular_tokens(n, dim, float(rho), seed=rng))
    x = load_token_file(initial["path"], dim, n)  # kind == "tokens"
    norms = _row_norms(x)
    if not initial.get("unit_rows", True):
        bad = np.abs(norms - 1.0)
        if bad.max() > TOKEN_UNIT_TOLERANCE:
            i = int(np.argmax(bad))
            raise ConfigError(f"{key}.path = {initial['path']!r}: row {i} has length "
                              f"{norms[i]:.12g}, not 1 to {TOKEN_UNIT_TOLERANCE:g}, and "
                              f"{key}.unit_rows = false; give unit vectors or set "
                              "unit_rows = true (each row divided by its length)",
                              f"{key}.path")
    return x / norms[:, None]


# ---------------------------------------------------------------------------------------
# Samplers.

def _normalize(x: np.ndarray) -> np.ndarray:
    return x / np.sqrt(np.einsum("ij,ij->i", x, x))[:, None]


def _row_norms(x: np.ndarray) -> np.ndarray:
    """Euclidean lengths of the rows, scaled so that huge or tiny entries do not overflow."""
    scale = np.max(np.abs(x), axis=1)
    safe = np.where(scale > 0, scale, 1.0)
    y = x / safe[:, None]
    return scale * np.sqrt(np.einsum("ij,ij->i", y, y))


def _circle(theta: np.ndarray) -> np.ndarray:
    return np.stack([np.cos(theta), np.sin(theta)], axis=1)


def _uniform(n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    return _normalize(rng.standard_normal((n, dim)))


def _rejection(n: int, rate: float, rng: np.random.Generator,
               propose: Callable[[int], tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The first ``n`` accepted of i.i.d. proposals ``(values, acceptance probabilities)``
    drawn in batches sized by the expected acceptance ``rate``."""
    if n == 0:
        return propose(0)[0]
    kept, have = [], 0
    while have < n:
        k = int((n - have) / rate * 1.05) + 16
        values, p = propose(k)
        values = values[rng.random(k) < p]
        kept.append(values)
        have += values.shape[0]
    return np.concatenate(kept)[:n]


def _von_mises_angles(c: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """Angles around 0 with density ``exp(c cos t) / (2 pi I_0(c))`` on (-pi, pi]."""
    if c == 0:
        return rng.uniform(-np.pi, np.pi, n)
    if c < 1:
        def from_uniform(k: int) -> tuple[np.ndarray, np.ndarray]:
            t = rng.uniform(-np.pi, np.pi, k)
            return t, np.exp(-2 * c * np.sin(t / 2) ** 2)  # e^{c (cos t - 1)}

        return _rejection(n, 0.46, rng, from_uniform)
    if c <= WRAPPED_NORMAL_ABOVE:
        return rng.vonmises(0.0, c, n)
    sigma = np.pi / (2 * np.sqrt(c))

    def propose(k: int) -> tuple[np.ndarray, np.ndarray]:
        t = sigma * rng.standard_normal(k)
        ok = np.abs(t) <= np.pi
        log_p = 2 * c * ((t / np.pi) ** 2 - np.sin(t / 2) ** 2)  # <= 0 on |t| <= pi
        return t, np.where(ok, np.exp(np.minimum(log_p, 0.0)), 0.0)

    return _rejection(n, 0.6, rng, propose)


def _vmf_gap(c: float, dim: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``1 - <x, center>`` for ``n`` von Mises-Fisher draws (c > 0) on S^{dim-1}, dim >= 3."""
    if dim == 3:
        return -np.log1p(rng.random(n) * np.expm1(-2 * c)) / c
    m1 = dim - 1
    b = m1 / (2 * c + np.sqrt(4 * c * c + m1 * m1))  # Wood's b, without cancellation

    def propose(k: int) -> tuple[np.ndarray, np.ndarray]:
        g1, g2 = rng.standard_gamma(m1 / 2, k), rng.standard_gamma(m1 / 2, k)
        z, zc = g1 / (g1 + g2), g2 / (g1 + g2)  # Z ~ Beta(m1/2, m1/2) and 1 - Z
        y = 2 * b * z / (zc + b * z)  # 1 - W
        # log of Wood's test c W + m1 log(1 - x0 W) - c x0 - m1 log(1 - x0^2), x0 = (1-b)/(1+b)
        log_p = c * (2 * b / (1 + b) - y) + m1 * np.log((2 * b + (1 - b) * y) * (1 + b)
                                                        / (4 * b))
        return y, np.exp(np.minimum(log_p, 0.0))

    return _rejection(n, 0.67, rng, propose)


def _vmf(centers: np.ndarray, c: float, rng: np.random.Generator) -> np.ndarray:
    """One von Mises-Fisher draw around each row of ``centers`` (unit rows, dim >= 3)."""
    n, dim = centers.shape
    if c < 1e-17:  # e^{c <x, center>} is 1 to double precision
        return _uniform(n, dim, rng)
    y = _vmf_gap(c, dim, n, rng)
    u = rng.standard_normal((n, dim))
    u -= np.einsum("ij,ij->i", u, centers)[:, None] * centers
    u = _normalize(u)
    return _normalize((1 - y)[:, None] * centers + np.sqrt(y * (2 - y))[:, None] * u)


def _center_vector(initial: dict, dim: int, key: str) -> np.ndarray:
    center = initial["center"]
    if dim == 2 and np.ndim(center) == 0:
        return np.array([np.cos(center), np.sin(center)])
    center = np.asarray(center, dtype=float)
    if center.shape != (dim,):
        what = "an angle (radians) or a unit 2-vector" if dim == 2 else f"a unit {dim}-vector"
        raise ConfigError(f"{key}.center = {initial['center']!r} must be {what} in dimension "
                          f"{dim} (got {np.size(center)} entries)", f"{key}.center")
    norm = float(np.linalg.norm(center))
    if not np.isfinite(norm) or abs(norm - 1) > 1e-9:
        raise ConfigError(f"{key}.center = {initial['center']!r} must be a unit vector "
                          f"(length {norm:.12g})", f"{key}.center")
    return center


def _von_mises(initial: dict, n: int, dim: int, rng: np.random.Generator, key: str
               ) -> np.ndarray:
    center, c = _center_vector(initial, dim, key), float(initial["concentration"])
    if dim == 2:
        mu = np.arctan2(center[1], center[0])
        return _circle(mu + _von_mises_angles(c, n, rng))
    return _vmf(np.broadcast_to(center, (n, dim)), c, rng)


def _harmonic_bound(y: Callable[[np.ndarray], np.ndarray], order: int) -> float:
    """sup |y| over S^2 (>= 1) for ``y = Y_lm / max|Y_lm|`` of ``initial_sphere``: the
    latitude grid's local maxima refined by golden-section search on the meridian where
    the longitude factor is 1."""
    lon = 0.0 if order >= 0 else np.pi / (2 * abs(order))
    lat = np.linspace(-np.pi / 2, np.pi / 2, 20001)
    v = np.abs(y(unit_vectors(lat, lon)))
    padded = np.concatenate([[-1.0], v, [-1.0]])
    peaks = np.flatnonzero((v >= padded[:-2]) & (v >= padded[2:]) & (v >= 0.5 * v.max()))
    lo, hi = lat[np.maximum(peaks - 1, 0)], lat[np.minimum(peaks + 1, lat.size - 1)]
    g = (np.sqrt(5) - 1) / 2
    for _ in range(60):  # shrinks the 3e-4 brackets below 1e-16
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        fa = np.abs(y(unit_vectors(a, lon)))
        fb = np.abs(y(unit_vectors(b, lon)))
        lo, hi = np.where(fa < fb, a, lo), np.where(fa < fb, hi, b)
    best = np.abs(y(unit_vectors(0.5 * (lo + hi), lon))).max()
    return max(1.0, float(v.max()), float(best)) * (1 + 1e-12)


def _perturbed(initial: dict, n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    a = float(initial["amplitude"])
    if dim == 2:
        m, phase, top = initial["mode"], float(initial["phase"]), 1 + abs(a)

        def on_circle(k: int) -> tuple[np.ndarray, np.ndarray]:
            t = rng.uniform(0.0, 2 * np.pi, k)
            return t, (1 + a * np.cos(m * (t - phase))) / top

        return _circle(_rejection(n, 1 / top, rng, on_circle))
    y = initial_sphere._real_harmonic(initial["degree"], initial["order"])
    top = 1 + abs(a) * (_harmonic_bound(y, initial["order"]) if a else 1.0)

    def on_sphere(k: int) -> tuple[np.ndarray, np.ndarray]:
        x = _uniform(k, 3, rng)
        return x, (1 + a * y(x)) / top

    return _rejection(n, 1 / top, rng, on_sphere)


def _kde_draws(initial: dict, n: int, dim: int, rng: np.random.Generator, key: str
               ) -> np.ndarray:
    if dim == 2:
        angles = circle_initial.load_sample_angles(initial["path"], f"{key}.path")
        c = circle_initial.kde_concentration(initial, angles, f"{key}.path")
        picks = angles[rng.integers(angles.size, size=n)]
        return _circle(picks + _von_mises_angles(c, n, rng))
    points = initial_sphere.load_sample_vectors(initial["path"], f"{key}.path")
    c = initial_sphere.kde_concentration(initial, points, f"{key}.path")
    return _vmf(points[rng.integers(points.shape[0], size=n)], c, rng)


# ---------------------------------------------------------------------------------------
# Token files.

def load_euclidean_tokens(path: str | Path, dim: int, n: int | None = None) -> np.ndarray:
    """The tokens in R^dim of a file, as given: an ``(n, dim)`` float64 array.

    The file is ``.npy`` or whitespace-separated text (``#`` comments allowed), one token
    per row; for ``dim = 1`` also a 1-D list. Rows are not normalised and may be zero.

    Raises:
        ConfigError: key ``initial.path`` for a missing or unreadable file, NaN or
            infinite entries, a shape other than ``(n, dim)``; key ``particles.n`` if the
            file has not ``n`` rows.
    """
    key = "initial.path"
    data = circle_initial.read_sample_file(str(path), key, "tokens")  # 2-D, finite
    if data.ndim != 2 or data.shape[1] != dim:
        raise ConfigError(f"{key} = {str(path)!r} has shape {data.shape}; tokens in R^{dim} "
                          f"need shape (n, {dim})", key)
    if n is not None and data.shape[0] != n:
        raise ConfigError(f"particles.n = {n} but {key} = {str(path)!r} has {data.shape[0]} "
                          "tokens; set particles.n to the file's row count (or leave it "
                          "out)", "particles.n")
    return np.array(data, dtype=np.float64)


def _read_array(path: str | Path, key: str) -> np.ndarray:
    data = circle_initial.read_sample_file(str(path), key, "tokens")
    return data[:, 0] if data.shape[1] == 1 else data  # one column: a list of angles


def token_count(path: str | Path) -> int:
    """The number of tokens (rows, or angles of a 1-D list) in a token file."""
    return int(_read_array(path, "initial.path").shape[0])


def load_token_file(path: str | Path, dim: int, n: int | None = None) -> np.ndarray:
    """The raw tokens of a file, as an ``(n, dim)`` float64 array (not normalised).

    The file is ``.npy`` or whitespace-separated text (``#`` comments allowed) with one
    token per row, shape ``(n, dim)``; for ``dim = 2`` also a 1-D list (or one column)
    of angles in radians, read as ``(cos theta, sin theta)``.

    Args:
        path: the file.
        dim: the dimension d of the tokens.
        n: the expected number of tokens (``particles.n``), or None for any.

    Raises:
        ConfigError: key ``initial.path`` for a missing or unreadable file, a shape other
            than ``(n, dim)``, NaN or infinite entries, or a zero row (norm <= 1e-12 times
            the largest row norm); key ``particles.n`` if the file has not ``n`` rows.
    """
    key = "initial.path"
    data = _read_array(path, key)
    where = f"{key} = {str(path)!r}"
    if data.ndim == 1 and dim == 2:
        if not np.all(np.isfinite(data)):
            i = int(np.argmin(np.isfinite(data)))
            raise ConfigError(f"{where}: angle {i} is NaN or infinite", key)
        data = _circle(data)
    elif data.ndim != 2 or data.shape[1] != dim:
        extra = " or a list of angles" if dim == 2 else ""
        raise ConfigError(f"{where} has shape {data.shape}; tokens in dimension {dim} need "
                          f"shape (n, {dim}){extra}", key)
    if not np.all(np.isfinite(data)):
        i = int(np.argmin(np.all(np.isfinite(data), axis=1)))
        raise ConfigError(f"{where}: row {i} has NaN or infinite entries", key)
    norms = _row_norms(data)
    zero = norms <= ZERO_ROW * norms.max()
    if np.any(zero):
        i = int(np.argmax(zero))
        raise ConfigError(f"{where}: row {i} is a zero vector (length {norms[i]:.3g}, at most "
                          f"{ZERO_ROW:g} of the longest row), which has no direction", key)
    if n is not None and data.shape[0] != n:
        raise ConfigError(f"particles.n = {n} but {where} has {data.shape[0]} tokens; "
                          "set particles.n to the file's row count (or leave it out)",
                          "particles.n")
    return data
