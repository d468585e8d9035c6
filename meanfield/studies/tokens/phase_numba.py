"""The compiled engine of the phase diagram: each system integrated on its own, in cache.

The numpy engine (``phase_kernels`` with ``solvers.steppers.dormand_prince.
integrate_batch_dopri``) steps a batch as arrays ``(B, n, n)``: every stage combination
streams the whole batch through memory, and its time goes as much into that traffic and
Python's dispatch as into the field. Here one compiled function integrates one system
from t = 0 to the last save with the same scheme, the same fields (float64) and the same
step control, everything in a few kB of cache, and a ``prange`` runs the systems of a
block on the thread policy's threads. The Gram systems (mode GRAM, d >= n) run
``phase_gram.gram_system`` (the upper triangle packed, a vectorised exp: 1.5-1.6 times
faster at n = 32); mode GRAM_SINGLE (``[phase_diagram] precision = "single"``) runs it with
the field's inner work in float32 (``phase_gram_single``: ~1.35 times faster again); ``_system`` runs the tokens (d < n) and, as mode GRAM_FULL, the former
full-matrix Gram path, kept as the reference the tests and ``benchmarks/
bench_phase_gram.py`` compare with. Per field evaluation (Gram form, n = 32): the
``n(n+1)/2`` exponentials of the symmetric ``e^{beta (G - 1)}`` and one n x n x n
product.

The scheme (as ``integrate_batch_dopri``): Dormand-Prince 5(4), FSAL, error ``h
|sum_j E_j k_j|_rms / tolerance`` over the entries, step factor ``0.9 err^{-1/5}`` in
[0.2, 5] (at most 1 after a rejection), steps capped at ``h_max``, saves from Shampine's
order-4 continuous extension; a system stops once every cosine is past ``level`` (the
freezing of ``meanfield.studies.tokens.phase_diagram``), its later saves set to 1. A system's
numbers depend on nothing but its state and parameters (not on the block, the threads or
the order the systems run in).

``run_systems`` is what the study calls: ``run_block`` over chunks of about
``CHUNK_WORK / n^3`` systems per thread (~0.2 s of compiled work at n = 32), so that
Ctrl-C and SIGTERM are taken between short compiled calls (Python runs its signal
handlers only between them: one call over a member of 4096 systems ran for a minute
after a Ctrl-C); the chunks change no number (each system is integrated on its own).
The signals are noted while the chunks run and raised between them
(``meanfield.runs.signals.DeferredSignals``): raised inside a compiled call (numba calls
back into Python there) a ``KeyboardInterrupt`` came out as a ``SystemError``, taken
for the member's failure.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from meanfield.runs.signals import DeferredSignals
from meanfield.studies.tokens.phase_gram import A_TAB as _A
from meanfield.studies.tokens.phase_gram import B_TAB as _B
from meanfield.studies.tokens.phase_gram import E_TAB as _E
from meanfield.studies.tokens.phase_gram import P_TAB as _P
from meanfield.studies.tokens.phase_gram import gram_system, step_factor

# GRAM: ``phase_gram.gram_system`` (the study's path for d >= n); GRAM_FULL: the former
# full-matrix Gram path (``_system``, libm's exp), kept as the reference that
# ``benchmarks/bench_phase_gram.py`` and the tests compare with; TOKENS: d < n;
# GRAM_SINGLE: ``gram_system`` with the field's inner work in float32 (``[phase_diagram]
# precision = "single"``, ``phase_gram_single``)
GRAM, TOKENS, GRAM_FULL, GRAM_SINGLE = 0, 1, 2, 3
# systems x n^3 per thread in one compiled call (a field evaluation is ~n^3 multiply-adds):
# 128 systems of n = 32 per thread, ~0.2 s. Alone, chunks cost nothing (one thread, 2048
# systems: the same CPU time in calls of 32 and in one); on a loaded machine smaller ones
# lost up to ~15 % to threads waiting for each other at the end of a call
CHUNK_WORK = 2**22


@njit(cache=True, fastmath=False)
def _field(mode, x, beta, normalized, w, ag, out):  # pragma: no cover - compiled
    """``out = f(x)``: Gram flow (mode 0, x = G n x n) or tokens (mode 1, x n x d)."""
    n, m = x.shape
    g = x if mode == GRAM else np.dot(x, x.T)
    for i in range(n):
        for j in range(i, n):
            e = math.exp(beta * (g[i, j] - 1.0))
            w[i, j] = e
            w[j, i] = e
    shift = math.exp(beta) / n
    for i in range(n):
        if normalized:
            s = 0.0
            for j in range(n):
                s += w[i, j]
            scale = 1.0 / s
        else:
            scale = shift
        for j in range(n):
            w[i, j] *= scale
    np.dot(w, x, ag)  # (BLAS: a small gemm beats compiled loops several times)
    if mode == GRAM:
        for i in range(n):
            for k in range(i, n):
                v = ag[i, k] + ag[k, i] - (ag[i, i] + ag[k, k]) * x[i, k]
                out[i, k] = v
                out[k, i] = v
    else:
        for i in range(n):
            s = 0.0
            for c in range(m):
                s += x[i, c] * ag[i, c]
            for c in range(m):
                out[i, c] = ag[i, c] - s * x[i, c]


@njit(cache=True)
def _combine(y, k, coef, count, h, out):  # pragma: no cover - compiled
    """``out = y + h sum_{j < count} coef[j] k[j]`` (the sum in the order of j)."""
    n, m = y.shape
    for i in range(n):
        for c in range(m):
            out[i, c] = 0.0
    for j in range(count):
        a = coef[j]
        if a != 0.0:
            for i in range(n):
                for c in range(m):
                    out[i, c] += a * k[j, i, c]
    for i in range(n):
        for c in range(m):
            out[i, c] = y[i, c] + h * out[i, c]


@njit(cache=True)
def _cosine_stats(mode, x, thr):  # pragma: no cover - compiled
    """(fraction of pairs i < j with cosine >= thr, smallest cosine)."""
    n, m = x.shape
    count = 0
    low = 2.0
    for i in range(n):
        for j in range(i + 1, n):
            if mode == GRAM:
                s = x[i, j]
            else:
                s = 0.0
                for c in range(m):
                    s += x[i, c] * x[j, c]
            if s >= thr:
                count += 1
            low = min(low, s)
    return count / (n * (n - 1) / 2), low


@njit(cache=True)
def _system(mode, y0, beta, normalized, times, thr, level, freeze, tol, h0, h_max,
            frac):  # pragma: no cover - compiled
    """Integrate one system; fills ``frac`` (T,); returns (steps, rejected,
    evaluations, time left (inf if it did not), failed)."""
    n, m = y0.shape
    size = n * m
    y = y0.copy()
    k = np.empty((7, n, m))
    tmp = np.empty((n, m))
    ynew = np.empty((n, m))
    w = np.empty((n, n))
    ag = np.empty((n, m))
    zero = np.zeros((n, m))
    nt = times.size
    t_end = times[nt - 1]
    t = 0.0
    nxt = 0
    if times[0] == 0.0:
        frac[0] = _cosine_stats(mode, y, thr)[0]
        nxt = 1
    _field(mode, y, beta, normalized, w, ag, k[0])
    evals = 1
    steps = 0
    rejected = 0
    h = min(h0, h_max)
    h_min = 1e-14 * max(1.0, t_end)
    while nxt < nt:
        h = min(h, t_end - t)
        for s in range(1, 7):
            out = tmp if s < 6 else ynew
            _combine(y, k, _A[s] if s < 6 else _B, s, h, out)
            _field(mode, out, beta, normalized, w, ag, k[s])
        evals += 6
        _combine(zero, k, _E, 7, h, tmp)
        err = 0.0
        for i in range(n):
            for c in range(m):
                err += tmp[i, c] * tmp[i, c]
        err = math.sqrt(err / size) / tol
        if err <= 1.0:
            t_new = t + h
            if t_end - t_new <= 1e-12 * max(1.0, t_end):
                t_new = t_end
            while nxt < nt and times[nxt] <= t_new:
                theta = (times[nxt] - t) / h
                for i in range(n):
                    for c in range(m):
                        acc = 0.0
                        for j in range(7):
                            p = theta
                            wj = 0.0
                            for q in range(4):
                                wj += _P[j, q] * p
                                p *= theta
                            acc += wj * k[j, i, c]
                        tmp[i, c] = y[i, c] + h * acc
                frac[nxt] = _cosine_stats(mode, tmp, thr)[0]
                nxt += 1
            y[:, :] = ynew
            k[0, :, :] = k[6]
            t = t_new
            steps += 1
            if freeze and nxt < nt and _cosine_stats(mode, y, thr)[1] >= level:
                for r in range(nxt, nt):
                    frac[r] = 1.0
                return steps, rejected, evals, t, False
        else:
            rejected += 1
        h = min(h * step_factor(err), h_max)
        if h < h_min:
            return steps, rejected, evals, math.inf, True
    return steps, rejected, evals, math.inf, False


@njit(cache=True, parallel=True)
def run_block(mode, y0, beta, normalized, times, thr, level, freeze, tol, h0,
              h_max):  # pragma: no cover - compiled
    """All systems of a block (``y0`` (B, n, m), ``beta`` (B,)), in parallel (``mode``:
    GRAM, GRAM_SINGLE, TOKENS or GRAM_FULL)."""
    b = y0.shape[0]
    frac = np.empty((b, times.size))
    steps = np.zeros(b, dtype=np.int64)
    rejected = np.zeros(b, dtype=np.int64)
    evals = np.zeros(b, dtype=np.int64)
    left = np.full(b, np.inf)
    failed = np.zeros(b, dtype=np.bool_)
    for s in prange(b):
        if mode == GRAM or mode == GRAM_SINGLE:
            r = gram_system(y0[s], beta[s], normalized, times, thr, level, freeze, tol, h0,
                            h_max, frac[s], mode == GRAM_SINGLE)
        else:
            r = _system(GRAM if mode == GRAM_FULL else TOKENS, y0[s], beta[s], normalized,
                        times, thr, level, freeze, tol, h0, h_max, frac[s])
        steps[s], rejected[s], evals[s], left[s], failed[s] = r
    return frac, steps, rejected, evals, left, failed


def chunk_size(n: int, threads: int) -> int:
    """Systems per compiled call (module docstring): ``threads`` times ``CHUNK_WORK /
    n^3``, at least one per thread."""
    return max(1, threads) * max(1, CHUNK_WORK // max(n, 1) ** 3)


def run_systems(mode, y0, beta, normalized, times, thr, level, freeze, tol, h0, h_max,
                threads: int | None = None) -> tuple:
    """``run_block`` over the systems of ``y0`` in chunks (module docstring): the same
    arrays, and Ctrl-C (SIGTERM) stops it within a chunk as ``KeyboardInterrupt``.

    Args:
        mode, y0, beta, normalized, times, thr, level, freeze, tol, h0, h_max: as
            ``run_block``'s.
        threads: the threads a chunk runs on (default numba's current count).

    Returns:
        ``(fractions, steps, rejected, evaluations, left, failed)`` as ``run_block``.
    """
    if threads is None:
        import numba

        threads = numba.get_num_threads()
    step = chunk_size(y0.shape[1], threads)
    parts = []
    with DeferredSignals() as signals:
        for a in range(0, max(y0.shape[0], 1), step):
            signals.check()
            parts.append(run_block(mode, np.ascontiguousarray(y0[a:a + step]),
                                   np.ascontiguousarray(beta[a:a + step]), normalized,
                                   times, thr, level, freeze, tol, h0, h_max))
    return tuple(np.concatenate([part[i] for part in parts]) for i in range(6))
