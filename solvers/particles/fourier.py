"""Kernel sums on S^1 by Fourier moments (the ``"fourier"`` fast method).

``e^{beta cos phi} = sum_k I_k(beta) e^{ik phi}``. Moments ``M_k = sum_j e^{-ik theta_j}``,
``|k| <= K + 1``, by one type-1 NUFFT (finufft, ``isign = -1``); then ``z_i = sum_{|k|<=K}
I_k M_k e^{ik theta_i}`` and ``s_i^x + i s_i^y = sum_{|k|<=K} I_k M_{k-1} e^{ik theta_i}``
(the kernel times ``e^{i theta_j}``: ``e^{ik(theta_i - theta_j)} e^{i theta_j} = e^{ik
theta_i} e^{-i(k-1) theta_j}``) by one type-2 NUFFT of two transforms. The multipliers
``I_k(beta) e^{-beta}`` and the order K come from the caller (``FastMultipliers``).
Plain numpy (dense ``exp(-1j k theta)`` blocks for the same moments) measured 2.4x (n =
1e3) to 32x (n = 1e6) slower than the NUFFTs.
"""
from __future__ import annotations

import numpy as np

from solvers.particles import chunks
from solvers.particles.multipliers import FastMultipliers, tool_eps

try:  # optional: the S^1 method
    import finufft
except ImportError:  # pragma: no cover - depends on the environment
    finufft = None

_FINUFFT_OPTIONS = {"nthreads": 1, "upsampfac": 2.0}  # maxbatchsize: 1 (= nthreads)
# Sorting the points before spreading pays for fine grids that leave the cache; the grids
# here have 2 (2K + 3) points: up to this K, no sorting (measured at n = 1e6, K = 17:
# type 1 0.073 -> 0.047 s, type 2 0.152 -> 0.132 s, one thread).
UNSORTED_MAX_ORDER = 2000


def require() -> None:
    """``ValueError`` if finufft is missing."""
    if finufft is None:
        raise ValueError("method 'fourier' needs the package finufft; use 'direct'")


def fourier_kernel_sums(queries: np.ndarray, keys: np.ndarray,
                        multipliers: FastMultipliers, threads: int | None = None,
                        project: bool = False
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kernel sums on S^1 by Fourier moments (module docstring).

    Args:
        queries: (m, 2) points (used as their angles).
        keys: (n, 2) points (used as their angles, i.e. as unit vectors).
        multipliers: the kernel's (d = 2): ``I_k(beta) e^{-beta}`` to the order K for the
            accuracy they were made for: every component of ``e^{shift} s`` and
            ``e^{shift} z`` is then within ``accuracy * n * e^beta`` of the exact sum.
        threads: Python threads running the chunks (default: all cores); the result does
            not depend on it.
        project: return the tangent part ``P^perp_q s`` instead of ``s``: one type-2
            transform instead of two (``z + i T`` packed, both real with Hermitian
            coefficients; ``T = <s, e_theta> = Z'/beta`` has coefficients
            ``(I_{k+1} - I_{k-1}) M_k/(2i)``, taken to order K + 1 so that its tail is
            bounded by the same Bessel tail).

    Returns:
        ``(s, z, shift)`` of shapes (m, 2), (m,), (m,), ``shift = beta``.
    """
    require()
    q, y, s, z, shift = chunks.prepare(queries, keys, 2, multipliers)
    m, n = q.shape[0], y.shape[0]
    if m == 0 or n == 0:
        return s, z, shift
    order = multipliers.order
    eps = tool_eps(2, multipliers.accuracy)
    key_chunks = chunks.chunk_slices(n)
    options = {**_FINUFFT_OPTIONS, "spread_sort": 0 if order <= UNSORTED_MAX_ORDER else 2}

    def moments(sl: slice) -> tuple[np.ndarray, np.ndarray]:
        th = chunks.angles(y[sl])
        ones = np.ones(th.size, dtype=complex)
        return finufft.nufft1d1(th, ones, 2 * order + 3, eps=eps, isign=-1,
                                **options), th

    mom, parts = chunks.moments_in_order(moments, key_chunks, threads)
    ik = multipliers.values[0]  # I_k e^{-beta}, k = -(K+2)..K+2
    if project:
        coef = (mom * (ik[1:-1] + 0.5 * (ik[2:] - ik[:-2])))[None]  # k = -(K+1)..K+1
    else:
        ik = ik[2:-2]  # |k| <= K
        coef = np.empty((2, 2 * order + 1), dtype=complex)
        coef[0] = ik * mom[1:-1]  # I_k M_k, k = -K..K
        coef[1] = ik * mom[:-2]  # I_k M_{k-1}

    def evaluate(job: tuple[slice, np.ndarray | None]) -> None:
        sl, th = job
        if th is None:
            th = chunks.angles(q[sl])
        out = finufft.nufft1d2(th, coef, eps=eps, isign=1, **options)
        z[sl] = out[0].real
        if project:  # T (-sin th, cos th), the direction from the point itself
            p = q[sl]
            tangent = out[0].imag / np.sqrt(np.einsum("ij,ij->i", p, p))
            s[sl, 0] = -p[:, 1] * tangent
            s[sl, 1] = p[:, 0] * tangent
        else:
            s[sl, 0] = out[1].real
            s[sl, 1] = out[1].imag

    chunks.run_chunks(evaluate, chunks.query_jobs(q, y, key_chunks, parts), threads)
    return s, z, shift
