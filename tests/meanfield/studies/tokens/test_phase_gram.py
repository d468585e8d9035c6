"""The packed Gram system of the phase diagram (issue 29, item 5): its exponential against
an extended-precision one, its field against the numpy Gram field, and its runs against the
former full-matrix path (an independent implementation of the same scheme)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield.studies.tokens import phase_gram as pg
from meanfield.studies.tokens import phase_kernels as pk
from meanfield.studies.tokens import phase_numba as pn


def _exp(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    pg.exp_into(x, out, np.empty(2 * x.size, dtype=np.int64))
    return out


@pytest.mark.parametrize("lo, hi", [(-18.0, 0.0), (-1.0, 1.0), (-745.0, -700.0),
                                    (-700.0, 709.7)])
def test_exp_is_faithful(lo, hi):
    """Within 1 ulp of e^x computed in x86 extended precision (64-bit mantissa: its own
    error is 2^-11 of a double's ulp); subnormal results (below e^-708) within one unit
    of the least subnormal."""
    x = np.random.default_rng(7).uniform(lo, hi, 200_000)
    got = _exp(x)
    ref = np.exp(x.astype(np.longdouble))
    if np.finfo(np.longdouble).nmant < 60:  # pragma: no cover - no extended type here
        pytest.skip("np.longdouble is a double on this platform")
    ulp = np.spacing(ref.astype(np.float64))
    err = np.abs(got.astype(np.longdouble) - ref) / ulp.astype(np.longdouble)
    assert err.max() < 1.0, float(err.max())


def test_exp_edges():
    """0 and 1 exactly, overflow to inf, underflow to 0, NaN kept, +-inf."""
    got = _exp(np.array([0.0, -0.0, 709.78, 709.79, 1e300, -745.2, -1e300, np.inf,
                         -np.inf, np.nan]))
    assert got[0] == 1.0 and got[1] == 1.0
    assert got[2] == pytest.approx(math.exp(709.78), rel=2.3e-16)
    assert np.isinf(got[3]) and np.isinf(got[4]) and np.isinf(got[7])
    assert got[5] == 0.0 and got[6] == 0.0 and got[8] == 0.0 and np.isnan(got[9])


@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("n", [5, 32])
def test_packed_field_is_the_gram_field(normalized, n):
    """The packed field equals the upper triangle of ``phase_kernels.gram_field`` (numpy,
    the full matrix) to round-off, at beta from 0.3 to 9."""
    g0 = pk.initial_states(n, 2 * n, np.arange(4), seed=3)
    beta = np.array([0.3, 2.0, 5.0, 9.0])
    full = pk.gram_field(beta, normalized)(g0, np.arange(4))
    size = n * (n + 1) // 2
    iu = np.triu_indices(n)
    for s in range(4):
        y, weight, index = np.empty(size), np.empty(size), np.empty(n * n, dtype=np.int64)
        pg._pack(g0[s], y, weight, index)
        work = (np.empty((3, n, n)), np.empty(size), np.empty(size),
                np.empty(2 * size, dtype=np.int64), np.empty(n))
        out = np.empty(size)
        pg._field(y, beta[s], normalized, work, index, out)
        scale = np.abs(full[s]).max()
        np.testing.assert_allclose(out, full[s][iu], rtol=0, atol=1e-13 * scale)
        assert weight.sum() == n * n  # the error's weights count the full matrix


@pytest.mark.parametrize("normalized", [True, False])
def test_packed_runs_equal_the_full_matrix_path(normalized):
    """Same steps, rejections and evaluations, fractions equal to 1e-12, as the former
    full-matrix path (libm's exp, full stage sums), over beta from 0.2 to 9 (some systems
    freeze, USA's long trial steps overflow and are rejected). The freezing times (sums of
    the steps) agree to 1e-7: a step is ``h 0.9 err^{-1/5}`` and ``err`` is a difference of
    nearly equal stage sums, whose last-bit changes (the other exp and order of the sums)
    come out ~1e-9 relative (seen: 4e-9 at USA, beta = 9)."""
    n, count = 12, 16
    x0 = np.ascontiguousarray(pk.initial_states(n, 64, np.arange(count), seed=11))
    beta = np.linspace(0.2, 9.0, count)
    times = np.linspace(0.0, 20.0, 41)
    args = (x0, beta, normalized, times, 0.999, 0.9995, True, 1e-5, pk.H0, 2.5)
    new, old = pn.run_block(pn.GRAM, *args), pn.run_block(pn.GRAM_FULL, *args)
    np.testing.assert_allclose(new[0], old[0], rtol=0, atol=1e-12)
    for a, b in zip(new[1:4], old[1:4]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(new[4], old[4], rtol=1e-7)
    assert np.isfinite(new[4]).any() and not new[5].any()
