"""The compiled Gram-matrix system of the phase diagram (d >= n): ``phase_numba``'s scheme on
the upper triangle, with a vectorised exponential.

``phase_numba._system`` steps a system's full n x n Gram matrix, calls ``math.exp`` (libm, one
at a time) for the ``n(n+1)/2`` entries of ``e^{beta (G - 1)}`` and, per save, recomputes the
continuous extension's weights for every entry. At d = 1024 (n = 32, 50 beta x 2048 systems)
that took ~7 us per field evaluation and system (the least of many runs on the shared 2-core
machine), of which the exponentials ~3 us and one 32 x 32 x 32 product ~0.7 us. Here (the
same scheme, the same field, the same step control; ``benchmarks/bench_phase_gram.py``):

- the state and the seven stages hold the upper triangle, packed row by row (``n(n+1)/2``
  entries, 528 at n = 32): the stage sums, the error and the saves touch half the entries.
  ``G`` is exactly symmetric in the former code too (its field is written symmetric), so the
  integrated entries are the same; the error ``|E|_rms`` over the n^2 entries counts an
  off-diagonal entry twice (``_WEIGHT``), the same sum in another order;
- ``exp_into``: ``e^x`` by Cody-Waite reduction ``x = k ln 2 + r``, ``|r| <= ln 2 / 2``, the
  degree-13 Taylor polynomial of ``e^r`` (truncation 4e-18) and ``2^k`` built in the exponent
  bits (two factors, so that subnormal results are right), written so that LLVM vectorises it:
  within 1 ulp of libm's ``exp`` (``tests/.../test_phase_gram.py``), ~1.3 ns an entry against
  ~6 ns. The former code's ``math.exp`` is libm's; the two differ in the last bit for ~10 % of
  the arguments, so the paths part at round-off (the fractions were equal on the systems
  compared, see the test), and a system's numbers still depend on nothing but its own state:
  every entry of every system takes the same instructions (no lane of a vector is special:
  the packed loops have the same trip count for every system);
- the full matrices ``G`` and ``W`` that the product needs are gathered from the packed ones
  through an index map (one vectorised pass; mirroring in loops was slower);
- the saves compute the extension's seven weights once per save, not once per entry, and sum
  the stages in vectorised passes (each entry's sum in the same order); the pairs past the
  threshold (and, for freezing, those below the level) are counted in one vectorised pass
  over the packed entries less the diagonal's, in exact integers.

With ``single`` (``[phase_diagram] precision = "single"``) the field is
``phase_gram_single.field_single`` (its inner work in float32); all else is as above.

What is left per evaluation (n = 32, the least of many runs): the product (BLAS, ~0.7 us), the
exponentials (~0.7 us), the two gathers (~0.7 us), ``AG + (AG)^T`` on the triangle (~0.8 us:
a column read), the row sums (~0.2 us), the stage sums and the control (~0.6 us).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from meanfield.studies.tokens.phase_gram_single import field_single, scratch
from solvers.steppers.dormand_prince import DOPRI_A, DOPRI_B, DOPRI_E, DOPRI_P

# the Dormand-Prince tables as numba constants (``A_TAB`` rows padded with zeros: a
# rectangular array); ``phase_numba`` uses them too
A_TAB = np.zeros((6, 5))
for _i, _row in enumerate(DOPRI_A):
    A_TAB[_i, :len(_row)] = _row
B_TAB = np.append(DOPRI_B, 0.0)
E_TAB = DOPRI_E.copy()
P_TAB = DOPRI_P.copy()

LN2_HI = 6.93147180369123816490e-01  # ln 2 to 32 bits: k LN2_HI is exact for |k| < 2^20
LN2_LO = 1.90821492927058770002e-10  # ln 2 - LN2_HI
INV_LN2 = 1.44269504088896338700e+00
SHIFTER = 6755399441055744.0  # 1.5 * 2^52: (v + SHIFTER) - SHIFTER rounds v to an integer
X_HI = 709.782712893384  # e^x overflows above it
X_LO = -745.1332191019412  # e^x rounds to 0 below it


@njit(cache=True, fastmath={"contract"})
def exp_into(x, out, bits):  # pragma: no cover - compiled
    """``out[p] = e^{x[p]}`` for every entry of the 1-d ``x`` (within 1 ulp; ``inf`` above
    ``X_HI``, 0 below ``X_LO``, NaN for NaN). ``bits``: int64 scratch of ``2 x.size``."""
    m = x.size
    scale = bits.view(np.float64)
    for p in range(m):
        v = x[p]
        v = v if v > X_LO else X_LO  # (NaN goes to X_LO here: its result is set below)
        v = v if v < X_HI else X_HI
        kf = (v * INV_LN2 + SHIFTER) - SHIFTER
        r = (v - kf * LN2_HI) - kf * LN2_LO
        q = 1.0 / 6227020800.0  # 1/13!, Horner down to 1
        q = q * r + 1.0 / 479001600.0
        q = q * r + 1.0 / 39916800.0
        q = q * r + 1.0 / 3628800.0
        q = q * r + 1.0 / 362880.0
        q = q * r + 1.0 / 40320.0
        q = q * r + 1.0 / 5040.0
        q = q * r + 1.0 / 720.0
        q = q * r + 1.0 / 120.0
        q = q * r + 1.0 / 24.0
        q = q * r + 1.0 / 6.0
        q = q * r + 0.5
        q = q * r + 1.0
        q = q * r + 1.0
        k = np.int64(kf)
        half = k >> 1  # 2^k = 2^half 2^(k - half): both normal for k in [-1075, 1024]
        bits[p] = (half + 1023) << 52
        bits[m + p] = (k - half + 1023) << 52
        out[p] = q
    for p in range(m):
        v = x[p]
        e = out[p] * scale[p] * scale[m + p]
        if v < X_LO:
            e = 0.0
        if v > X_HI:
            e = math.inf
        if v != v:
            e = v
        out[p] = e


@njit(cache=True)
def _gather(g, e, gf, w, index):  # pragma: no cover - compiled
    """The symmetric ``gf`` and ``w`` (n, n) of the packed upper triangles ``g`` and ``e``
    (``index``: the packed entry of each full one)."""
    flat_g, flat_w = gf.reshape(gf.size), w.reshape(w.size)
    for q in range(flat_g.size):
        p = index[q]
        flat_g[q] = g[p]
        flat_w[q] = e[p]


@njit(cache=True, fastmath={"contract"})
def _field(g, beta, normalized, work, index, out):  # pragma: no cover - compiled
    """The Gram field (``phase_numba._field``, mode GRAM) of the packed ``g`` into the packed
    ``out``. ``work``: the scratch of ``_scratch``."""
    big, e, arg, bits, rows = work
    gf, w, ag = big[0], big[1], big[2]
    n = gf.shape[0]
    for p in range(g.size):
        arg[p] = beta * (g[p] - 1.0)
    exp_into(arg, e, bits)
    _gather(g, e, gf, w, index)
    for i in range(n):
        rows[i] = 0.0
    for j in range(n):  # the row sums, a row at a time in the order of j (w symmetric)
        for i in range(n):
            rows[i] += w[j, i]
    shift = math.exp(beta) / n
    for i in range(n):
        scale = 1.0 / rows[i] if normalized else shift
        for j in range(n):
            w[i, j] *= scale
    np.dot(w, gf, ag)  # (BLAS: a small gemm beats compiled loops several times)
    for i in range(n):
        rows[i] = ag[i, i]
    p = 0
    for i in range(n):
        di = rows[i]
        for k in range(i, n):
            out[p + k - i] = ag[i, k] + ag[k, i] - (di + rows[k]) * g[p + k - i]
        p += n - i


@njit(cache=True)
def _combine(y, k, coef, count, h, out):  # pragma: no cover - compiled
    """``out = y + h sum_{j < count} coef[j] k[j]`` (the sum in the order of j)."""
    m = y.size
    for c in range(m):
        out[c] = 0.0
    for j in range(count):
        a = coef[j]
        if a != 0.0:
            for c in range(m):
                out[c] += a * k[j, c]
    for c in range(m):
        out[c] = y[c] + h * out[c]


@njit(cache=True)
def _count_below(n, y, level):  # pragma: no cover - compiled
    """The number of pairs i < j with ``G_ij < level`` in the packed ``y``: all the
    entries counted in one vectorised pass, less the diagonal's (exact integers)."""
    count = 0
    for p in range(y.size):
        count += y[p] < level
    p = 0
    for i in range(n):
        count -= y[p] < level
        p += n - i
    return count


@njit(cache=True)
def _pack(y0, y, weight, index):  # pragma: no cover - compiled
    """The packed upper triangle of ``y0``, the error's weights (1 on the diagonal, 2 off:
    the entries of the full matrix) and the gather index of the full matrix."""
    n = y0.shape[0]
    p = 0
    for i in range(n):
        for j in range(i, n):
            y[p] = y0[i, j]
            weight[p] = 1.0 if i == j else 2.0
            index[i * n + j] = p
            index[j * n + i] = p
            p += 1


@njit(cache=True)
def _save(y, k, h, theta, wj, out):  # pragma: no cover - compiled
    """Shampine's order-4 extension at ``t + theta h``: ``y + h sum_j w_j(theta) k_j``
    (each entry's sum in the order of j, as ``phase_numba``'s, in vectorised passes)."""
    for j in range(7):
        wj[j] = 0.0
        pw = theta
        for q in range(4):
            wj[j] += P_TAB[j, q] * pw
            pw *= theta
    _combine(y, k, wj, 7, h, out)


@njit(cache=True)
def _eval(g, beta, normalized, work, work32, single, index, out):  # pragma: no cover
    """The field of ``gram_system``: float64 (``_field``) or its inner work in float32
    (``phase_gram_single.field_single``)."""
    if single:
        field_single(g, beta, normalized, work32, index, out)
    else:
        _field(g, beta, normalized, work, index, out)


@njit(cache=True)
def step_factor(err):  # pragma: no cover - compiled
    """The next step over this one (both compiled systems): ``0.9 err^{-1/5}`` in [0.2, 5]
    after an accepted step (``err <= 1``; 5 at err = 0), in [0.2, 1] after a rejected one,
    0.1 after a non-finite error (a trial step that overflowed)."""
    if err <= 1.0:
        factor = 0.9 * err ** -0.2 if err > 0 else 5.0
        return min(5.0, max(0.2, factor))
    if math.isfinite(err):
        return min(1.0, max(0.2, 0.9 * err ** -0.2))
    return 0.1


@njit(cache=True)
def gram_system(y0, beta, normalized, times, thr, level, freeze, tol, h0, h_max,
                frac, single=False, saved=None):  # pragma: no cover - compiled
    """``phase_numba._system`` (mode GRAM) on the packed triangle: fills ``frac`` (T,);
    returns (steps, rejected, evaluations, time left (inf if it did not), failed).
    ``single``: the field's inner work in float32 (``phase_gram_single``; the state, the
    stages and the control stay float64). ``saved``: None, or (T, n(n+1)/2) to receive
    the packed state at each save (the saves after freezing are not written)."""
    n = y0.shape[0]
    size = n * (n + 1) // 2
    y, weight, index = np.empty(size), np.empty(size), np.empty(n * n, dtype=np.int64)
    _pack(y0, y, weight, index)
    k = np.empty((7, size))
    tmp, ynew, zero = np.empty(size), np.empty(size), np.zeros(size)
    work = (np.empty((3, n, n)), np.empty(size), np.empty(size),
            np.empty(2 * size, dtype=np.int64), np.empty(n))
    work32 = scratch(n if single else 0, index)  # (empty in float64)
    nt = times.size
    t_end = times[nt - 1]
    t = 0.0
    nxt = 0
    pairs = n * (n - 1) // 2  # (the fraction as phase_numba's: hits / pairs, exactly)
    wj = np.empty(7)
    if times[0] == 0.0:
        frac[0] = (pairs - _count_below(n, y, thr)) / (n * (n - 1) / 2)
        if saved is not None:
            saved[0, :] = y
        nxt = 1
    _eval(y, beta, normalized, work, work32, single, index, k[0])
    evals, steps, rejected = 1, 0, 0
    h = min(h0, h_max)
    h_min = 1e-14 * max(1.0, t_end)
    while nxt < nt:
        h = min(h, t_end - t)
        for s in range(1, 7):
            out = tmp if s < 6 else ynew
            _combine(y, k, A_TAB[s] if s < 6 else B_TAB, s, h, out)
            _eval(out, beta, normalized, work, work32, single, index, k[s])
        evals += 6
        _combine(zero, k, E_TAB, 7, h, tmp)
        err = 0.0
        for c in range(size):
            err += weight[c] * tmp[c] * tmp[c]
        err = math.sqrt(err / (n * n)) / tol
        if err <= 1.0:
            t_new = t + h
            if t_end - t_new <= 1e-12 * max(1.0, t_end):
                t_new = t_end
            while nxt < nt and times[nxt] <= t_new:
                _save(y, k, h, (times[nxt] - t) / h, wj, tmp)
                if saved is not None:
                    saved[nxt, :] = tmp
                frac[nxt] = (pairs - _count_below(n, tmp, thr)) / (n * (n - 1) / 2)
                nxt += 1
            y[:] = ynew
            k[0, :] = k[6]
            t = t_new
            steps += 1
            if freeze and nxt < nt and _count_below(n, y, level) == 0:
                for r in range(nxt, nt):
                    frac[r] = 1.0
                return steps, rejected, evals, t, False
        else:
            rejected += 1
        h = min(h * step_factor(err), h_max)
        if h < h_min:
            return steps, rejected, evals, math.inf, True
    return steps, rejected, evals, math.inf, False
