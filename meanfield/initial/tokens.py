"""The two token sets defined without a density: uniform draws and equiangular sets
(their checks and random streams: ``meanfield.model.tokens``).
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from meanfield.errors import ConfigError
from meanfield.model.tokens import check_size, initial_rng
from solvers.particles.direct import normalize_rows


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
