"""The Gram field of the phase diagram with its inner work in float32 (``[phase_diagram]
precision = "single"``, issue 29 item 5).

``phase_gram.gram_system`` steps the packed Gram matrix in float64 (state, Dormand-Prince
stages, stage sums, error control, saves). With ``single`` it evaluates the field here: only
the field's inner work runs in float32,

- the argument ``beta (G - 1)`` formed in float64 from the float64 state and rounded once to
  float32 (its absolute error ``beta 2^-25 |beta (G - 1)|``, not that of ``G`` rounded first:
  ``G - 1`` is ~1e-3 for clustered pairs);
- ``e^{beta (G - 1)}`` by ``exp32_into``: Cody-Waite reduction ``x = k ln 2 + r`` with
  float32 constants (``ln 2`` split in 12 + 24 bits: ``k LN2_HI`` exact for ``|k| < 2^12``),
  Cephes' ``expf`` polynomial (degree 5 after ``1 + r + r^2/2``, its coefficients; relative
  error ~1e-7 on ``|r| <= ln 2 / 2``) and ``2^k`` in two factors built in int32 exponent bits
  (subnormal results rounded once), vectorised by LLVM (16 float32 lanes here): within 1
  float32 ulp of ``e^x`` rounded from float64 (``tests/.../test_phase_gram_single.py``);
- the full ``G`` (converted to float32 as it is gathered) and ``W``, the row sums and the
  scaling in float32, the product ``W G`` by BLAS ``sgemm`` (``np.dot`` on float32 arrays);
- ``AG + (AG)^T - (d_i + d_k) G`` written into the float64 stage: the product's entries and
  the ``d_i`` converted to float64, the ``G`` of the last term the float64 state's. The
  diagonal ``2 ((AG)_ii - d_i G_ii) = 2 d_i (1 - G_ii)`` (``d_i`` is exactly ``(AG)_ii``):
  the unit diagonal stays invariant as in float64.

The field's error is then ~1e-7 relative (the float32 rounding of ``W`` and ``G`` and the
32-term sums of ``sgemm``; ``|AG| <= 1`` for SA): a perturbation ``delta <= ~3e-7`` of the
field, integrated over ``t <= 30``, moves the state by at most ``delta t`` ~1e-5 where the
flow does not expand (the clustered states it ends in attract), i.e. of the order of the
step control's own tolerance (1e-5): the step sequences part at round-off as they do
between two float64 exponentials, and the fractions agree within their statistical error
(``benchmarks/bench_phase_gram.py`` item 1, the tests). A system's numbers still depend on
nothing but its own state: every entry takes the same instructions whatever the block.
"""
from __future__ import annotations

import numpy as np
from numba import njit

F32 = np.float32
LN2_HI = F32(0.693359375)  # ln 2 to 12 bits (Cephes): k LN2_HI exact for |k| < 2^12
LN2_LO = F32(-2.12194440e-4)  # ln 2 - LN2_HI
INV_LN2 = F32(1.44269504088896341)
SHIFTER = F32(12582912.0)  # 1.5 * 2^23: (v + SHIFTER) - SHIFTER rounds v to an integer
X_HI = F32(88.72283172607421875)  # the largest float32 whose e^x is finite in float32
X_LO = F32(-103.97207708399179)  # e^x < 2^-150 (half the least subnormal) below: 0
# Cephes expf: e^r = 1 + r + r^2 (C0 + C1 r + ... + C5 r^5) on |r| <= ln 2 / 2
C0, C1, C2 = F32(5.0000001201e-1), F32(1.6666665459e-1), F32(4.1665795894e-2)
C3, C4, C5 = F32(8.3334519073e-3), F32(1.3981999507e-3), F32(1.9875691500e-4)
ONE = F32(1.0)
INF = F32(np.inf)
ZERO = F32(0.0)
I1, BIAS, MANT = np.int32(1), np.int32(127), np.int32(23)


@njit(cache=True, fastmath={"contract"})
def exp32_into(x, out, bits):  # pragma: no cover - compiled
    """``out[p] = e^{x[p]}`` in float32 for every entry of the float32 1-d ``x`` (within 1
    ulp; ``inf`` above ``X_HI``, 0 below ``X_LO``, NaN for NaN). ``bits``: int32 scratch
    of ``2 x.size``. Every constant is a float32 (a float64 one would promote the loop)."""
    m = x.size
    scale = bits.view(np.float32)
    for p in range(m):
        v = x[p]
        v = v if v > X_LO else X_LO  # (NaN goes to X_LO here: its result is set below)
        v = v if v < X_HI else X_HI
        kf = (v * INV_LN2 + SHIFTER) - SHIFTER
        r = (v - kf * LN2_HI) - kf * LN2_LO
        q = C5 * r + C4
        q = q * r + C3
        q = q * r + C2
        q = q * r + C1
        q = q * r + C0
        q = (q * (r * r) + r) + ONE
        k = np.int32(kf)
        half = k >> I1  # 2^k = 2^half 2^(k - half): both normal for k in [-150, 128]
        bits[p] = (half + BIAS) << MANT
        bits[m + p] = (k - half + BIAS) << MANT
        out[p] = q
    for p in range(m):
        v = x[p]
        e = out[p] * scale[p] * scale[m + p]
        if v < X_LO:
            e = ZERO
        if v > X_HI:
            e = INF
        if v != v:
            e = v
        out[p] = e


@njit(cache=True)
def scratch(n, index):  # pragma: no cover - compiled
    """The scratch of ``field_single`` at n tokens (n = 0: empty, for a system run in
    float64), ``index`` the gather index of ``phase_gram._pack``: the full ``G``, ``W``,
    ``AG`` in float32 (3, n, n); the full ``G`` in float64 (n, n); the argument, the
    exponentials (size,) float32 and their int32 bits (2 size,); the row sums (n,) float32;
    the diagonal of ``AG`` (n,) float64; ``up``, ``lo`` (size,): the full entries (i, k)
    and (k, i) of each packed one."""
    size = n * (n + 1) // 2
    up, lo = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
    for q in range(n * n):
        i, k = q // n, q % n
        if i <= k:
            up[index[q]] = q
            lo[index[q]] = k * n + i
    return (np.empty((3, n, n), dtype=np.float32), np.empty((n, n)),
            np.empty(size, dtype=np.float32), np.empty(size, dtype=np.float32),
            np.empty(2 * size, dtype=np.int32), np.empty(n, dtype=np.float32),
            np.empty(n), np.empty(n), up, lo)


@njit(cache=True, fastmath={"contract"})
def field_single(g, beta, normalized, work, index, out):  # pragma: no cover - compiled
    """The Gram field of the float64 packed ``g`` into the float64 packed ``out``, its
    inner work in float32 (module docstring). ``work``: ``scratch(n, index)``; ``index``:
    the packed entry of each full one (``phase_gram._pack``).

    The last term is summed as ``u_ik + u_ki`` with ``u = AG - G diag(d)`` formed on the
    full matrix in float64 (a loop of fixed length that vectorises) and gathered to the
    packed entries: ~0.3 us less than the triangle's loops of every length (measured at
    n = 32; the column read of ``(AG)^T`` was not what cost)."""
    big, g64, arg, e, bits, rows, diag, sums, up, lo = work
    gf, w, ag = big[0], big[1], big[2]
    n = gf.shape[0]
    for p in range(g.size):
        arg[p] = beta * (g[p] - 1.0)  # (float64, rounded once to float32 as stored)
    exp32_into(arg, e, bits)
    flat_g, flat_w, flat64 = gf.reshape(gf.size), w.reshape(w.size), g64.reshape(g64.size)
    for q in range(flat_g.size):  # the full G (float64) and W
        p = index[q]
        flat64[q] = g[p]
        flat_w[q] = e[p]
    for q in range(flat_g.size):  # H = G - 1 to float32 for the product
        flat_g[q] = flat64[q] - 1.0
    for i in range(n):
        rows[i] = ZERO
    for j in range(n):  # the row sums, a row at a time in the order of j (w symmetric)
        for i in range(n):
            rows[i] += w[j, i]
    shift = F32(np.exp(beta) / n)
    for i in range(n):
        scale = ONE / rows[i] if normalized else shift
        for j in range(n):
            w[i, j] *= scale
        sums[i] = np.float64(rows[i]) * np.float64(scale)  # the rows of A: 1 for SA
    np.dot(w, gf, ag)  # sgemm: A H
    for i in range(n):
        diag[i] = sums[i] + ag[i, i]  # d_i = (AG)_ii = sum_j A_ij + (AH)_ii
    for i in range(n):  # u = AG - G diag(d) in float64 (in place of the full G)
        for k in range(n):
            g64[i, k] = (sums[i] + np.float64(ag[i, k])) - diag[k] * g64[i, k]
    for p in range(out.size):  # AG + (AG)^T - (d_i + d_k) G = u + u^T
        out[p] = flat64[up[p]] + flat64[lo[p]]
