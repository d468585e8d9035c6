"""Tokens of the particle models: their checks and the random streams of a seed.

Low in the package, in the model layer: the token models (``meanfield.model.particles``)
check the tokens they are given and draw their noise here, and the initial tokens of a
config (``meanfield.initial.samplers``, ``meanfield.initial.tokens``) use the same checks
and streams from here.

Random numbers: ``numpy.random.Generator(PCG64(...))``; an integer seed is split by
``SeedSequence(seed).spawn(2)`` into a stream for the initial tokens (``initial_rng``)
and one for the noise (``noise_rng``), so the same seed can be given to both.
"""
from __future__ import annotations

import numbers

import numpy as np

from meanfield.errors import ConfigError

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
