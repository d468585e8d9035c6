"""Tokens of the particle runs: their checks, the random streams of a seed, and the two
token sets defined without a density (uniform draws, equiangular sets).

Low in the package: ``meanfield.initial.samplers`` (initial tokens of a config) and
``meanfield.model.particles`` (the token models) both use it, and it imports neither.

Random numbers: ``numpy.random.Generator(PCG64(...))``; an integer seed is split by
``SeedSequence(seed).spawn(2)`` into a stream for the initial tokens (``initial_rng``)
and one for the noise (``noise_rng``), so the same seed can be given to both.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from meanfield.errors import ConfigError
from solvers.particles.direct import normalize_rows

# Token arrays (a token file with unit_rows = false, the tokens handed to a model on the
# sphere) must have |x| = 1 to this, then they are divided by their lengths: the check
# only catches data that are not unit vectors, and admits files written in single
# precision (rounding ~6e-8). A von Mises centre typed in a config is used as given and
# checked far tighter (meanfield.config.initial.CENTER_UNIT_TOLERANCE).
TOKEN_UNIT_TOLERANCE = 1e-6


def check_size(n: int, d: int) -> None:
    """``n >= 2`` tokens (``particles.n``) in dimension ``d >= 2`` (``domain.dim``)."""
    for value, key, what in ((n, "particles.n", "tokens"), (d, "domain.dim", "dimension")):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ConfigError(f"{key} must be an integer, got {value!r}", key)
        if value < 2:
            raise ConfigError(f"{key} ({what}) must be >= 2, got {value}", key)


def check_tokens(x: np.ndarray, on_sphere: bool, key: str = "initial") -> np.ndarray:
    """Tokens as a new float ``(n, d)`` array: finite, n, d >= 2, no zero rows; on the
    sphere, ``| |x_i| - 1 | <= TOKEN_UNIT_TOLERANCE`` and renormalised."""
    x = np.array(x, dtype=np.float64)
    if x.ndim != 2:
        raise ConfigError(f"{key}: tokens must be an (n, d) array, got shape {x.shape}", key)
    check_size(x.shape[0], x.shape[1])
    if not np.all(np.isfinite(x)):
        raise ConfigError(f"{key}: tokens must be finite (found NaN or inf)", key)
    norms = np.sqrt(np.einsum("ij,ij->i", x, x))
    if on_sphere:
        worst = float(np.max(np.abs(norms - 1.0)))
        if worst > TOKEN_UNIT_TOLERANCE:
            raise ConfigError(f"{key}: tokens must be unit vectors (| |x| - 1 | up to "
                              f"{worst:.3g} > {TOKEN_UNIT_TOLERANCE})", key)
    elif np.any(norms == 0):
        raise ConfigError(f"{key}: tokens must be non-zero vectors", key)
    return x / norms[:, None] if on_sphere else x


def _generator(seed: int | np.random.Generator | None, child: int) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed).spawn(2)[child]))


def initial_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """The generator of the initial tokens for ``seed`` (a Generator is passed through)."""
    return _generator(seed, 0)


def noise_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """The generator of the Brownian increments for ``seed`` (independent of the above)."""
    return _generator(seed, 1)


# ---------------------------------------------------------------------------------------
# Token sets.

def uniform_tokens(n: int, d: int, seed: int | np.random.Generator | None = 0) -> np.ndarray:
    """``n`` independent uniform points on S^{d-1} (normalised standard Gaussians)."""
    check_size(n, d)
    x = initial_rng(seed).standard_normal((n, d))
    return normalize_rows(x)


def equiangular_tokens(n: int, d: int, rho: float = 0.0,
                       seed: int | np.random.Generator | None = None) -> np.ndarray:
    """``n <= d`` unit vectors with ``<x_i, x_j> = rho`` for all ``i != j``.

    ``x_i = a e_i + b u`` with ``u = (e_1 + ... + e_n)/sqrt(n)``, ``a = sqrt(1 - rho)``,
    ``b = -a/sqrt(n) + sqrt((1 + (n-1) rho)/n)``; ``rho = 0`` gives ``x_i = e_i``
    exactly. Needs ``-1/(n-1) <= rho < 1``. With a ``seed``, the set is turned by a
    uniformly random rotation (QR of a Gaussian matrix).
    """
    check_size(n, d)
    if n > d:
        raise ConfigError(f"equiangular tokens need n <= d; got n = {n} > d = {d}",
                          "particles.n")
    lo = -1.0 / (n - 1)
    if not (isinstance(rho, numbers.Real) and not isinstance(rho, bool) and lo <= rho < 1):
        raise ConfigError(f"initial.rho must be in [{lo:.6g}, 1), got {rho!r}",
                          "initial.rho")
    a = math.sqrt(1.0 - rho)
    b = -a / math.sqrt(n) + math.sqrt(max(0.0, (1.0 + (n - 1) * rho) / n))
    x = np.zeros((n, d))
    x[:, :n] = b / math.sqrt(n)
    x[np.arange(n), np.arange(n)] += a
    if seed is not None:
        q, r = np.linalg.qr(initial_rng(seed).standard_normal((d, d)))
        x = x @ (q * np.sign(np.diag(r))).T
    return x
