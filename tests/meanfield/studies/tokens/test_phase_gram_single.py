"""``[phase_diagram] precision = "single"`` (issue 29, item 5): the Gram field's inner work in
float32 (``phase_gram_single``), the state and the step control in float64. Its exponential
against e^x in float64, its field against the float64 field with a rounding bound, its runs
against the float64 runs and a converged reference, a system's numbers independent of the
threads and the chunks, and the config key."""
from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from meanfield.errors import ConfigError
from meanfield.studies.tokens import phase_gram as pg
from meanfield.studies.tokens import phase_gram_single as ps
from meanfield.studies.tokens import phase_kernels as pk
from meanfield.studies.tokens import phase_numba as pn
from meanfield.studies.tokens.phase_diagram import phase_diagram

U = 2.0**-24  # float32's unit round-off
N = 32
SIZE = N * (N + 1) // 2
TIMES = np.linspace(0.0, 30.0, 121)
TOL = 1e-5


def _exp32(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    out = np.empty_like(x)
    ps.exp32_into(x, out, np.empty(2 * x.size, dtype=np.int32))
    return out


def test_exp32_within_one_ulp_of_the_float64_exponential():
    """Over [-110, 90] (overflow above 88.72, subnormal results below -87.3, 0 below
    -103.97): within 1.05 float32 ulp of e^x in float64 (the float32 rounding alone is
    0.5; measured 1.005); subnormal results within one least subnormal (2^-149); inf
    and 0 exactly where float32(e^x) is inf and 0."""
    x = np.random.default_rng(7).uniform(-110.0, 90.0, 400_000).astype(np.float32)
    got = _exp32(x).astype(np.float64)
    ref = np.exp(x.astype(np.float64))
    with np.errstate(over="ignore"):
        ref32 = ref.astype(np.float32)
    normal = np.isfinite(ref32) & (ref32 >= np.finfo(np.float32).tiny)
    ulp = np.spacing(ref32[normal]).astype(np.float64)
    assert (np.abs(got[normal] - ref[normal]) / ulp).max() < 1.05
    low = ~normal & np.isfinite(ref32)
    assert low.sum() > 1000 and np.abs(got[low] - ref[low]).max() <= 2.0**-149
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref32))
    np.testing.assert_array_equal(got == 0, ref32 == 0)


def test_exp32_edges():
    """1 at 0, the largest finite argument finite and the next float32 inf, 0 below the
    underflow, a subnormal just above it, inf, 0 and NaN at inf, -inf and NaN."""
    up = np.nextafter(ps.X_HI, np.float32(np.inf))
    got = _exp32([0.0, -0.0, ps.X_HI, up, -104.0, -103.9, np.inf, -np.inf, np.nan])
    assert got[0] == 1.0 and got[1] == 1.0
    assert np.isfinite(got[2]) and got[2] == pytest.approx(math.exp(float(ps.X_HI)), rel=2 * U)
    assert np.isinf(got[3]) and got[4] == 0.0 and 0.0 < got[5] < np.finfo(np.float32).tiny
    assert np.isinf(got[6]) and got[7] == 0.0 and np.isnan(got[8])


def _packed(g: np.ndarray) -> tuple:
    y, weight, index = np.empty(SIZE), np.empty(SIZE), np.empty(N * N, dtype=np.int64)
    pg._pack(g, y, weight, index)
    return y, index


def _fields(g: np.ndarray, beta: float, normalized: bool) -> tuple:
    y, index = _packed(g)
    work = (np.empty((3, N, N)), np.empty(SIZE), np.empty(SIZE),
            np.empty(2 * SIZE, dtype=np.int64), np.empty(N))
    double, single = np.empty(SIZE), np.empty(SIZE)
    pg._field(y, beta, normalized, work, index, double)
    ps.field_single(y, beta, normalized, ps.scratch(N, index), index, single)
    return double, single


def _states(g0, beta, normalized, tol, single):
    frac, saved = np.empty(TIMES.size), np.zeros((TIMES.size, SIZE))
    pg.gram_system(g0, beta, normalized, TIMES, 0.999, 0.9995, False, tol, pk.H0, 3.75,
                   frac, single, saved)
    return saved


@pytest.mark.parametrize("normalized", [True, False])
def test_single_field_within_the_float32_rounding_bound(normalized):
    """The float32 field against the float64 one, at the start (spread, |G - 1| ~ 1) and
    at t = 30 (clustered): the float32 A (exp within 1.05 ulp, the scaling: ~3u) and
    G - 1 (u), and sgemm's n-term sums (n u), twice (u + u^T): |error| <= 2 (n + 4) u R
    max|G - 1| with R the largest row sum of A (1 for SA, e^beta for USA). Its rounding
    scales with |G - 1| (the product is centred): near a cluster the error is that much
    smaller. The diagonal stays exactly 2 d_i (1 - G_ii): 0 where G_ii = 1."""
    g0 = pk.initial_states(N, 1024, np.arange(2), seed=3)
    iu = np.triu_indices(N)
    for s in range(2):
        for beta in (0.1, 1.0, 4.0, 9.0):
            late = _states(g0[s], beta, True, TOL, False)[-1]  # (SA's clusters)
            full = np.zeros((N, N))
            full[iu] = late
            full = full + np.triu(full, 1).T
            for g in (g0[s], full):
                double, single = _fields(g, beta, normalized)
                r = 1.0 if normalized else math.exp(beta)
                bound = 2 * (N + 4) * U * r * np.abs(g - 1).max()
                assert np.abs(single - double).max() <= bound
    g = g0[0].copy()
    np.fill_diagonal(g, 1.0)
    _, single = _fields(g, 2.0, normalized)
    assert (single[np.cumsum(np.r_[0, np.arange(N, 1, -1)])] == 0.0).all()  # packed (i, i)


def test_single_states_within_a_few_tolerances_of_double():
    """SA, d = 1024, n = 32, t <= 30 on 121 saves, tolerance 1e-5, 8 systems x 5 beta
    (no freezing: every save kept). Each run's own global error against a reference at
    tolerance 1e-9 is E (measured <= 3.9e-5 in float64); the float32 field is the float64
    one perturbed by delta <= ~1.2e-6 (the previous test), which moves a solution by at
    most delta t = 3.6e-5 over t <= 30 where the flow does not expand. So |single -
    double| <= 2 E + delta t ~ 1.1e-4 ~ 10 tolerances (measured 1.7e-5), and single is no
    further from the reference than E + delta t (measured: as far as double)."""
    g0 = pk.initial_states(N, 1024, np.arange(8), seed=0)
    worst_double = worst_single = 0.0
    for s in range(8):
        for beta in np.linspace(0.1, 9.0, 50)[::10]:
            ref = _states(g0[s], beta, True, 1e-9, False)
            double = _states(g0[s], beta, True, TOL, False)
            single = _states(g0[s], beta, True, TOL, True)
            assert np.abs(single - double).max() <= 10 * TOL
            worst_double = max(worst_double, np.abs(double - ref).max())
            worst_single = max(worst_single, np.abs(single - ref).max())
    assert worst_single <= worst_double + 1.2e-6 * TIMES[-1]


def test_single_fractions_within_the_statistical_error():
    """The study's fractions (SA, freezing on, d = 1024), 64 systems x 5 beta: max |p_single
    - p_double| over (beta, t) within the 95 % half-width at those systems (1.96 sqrt(1/4
    / 64) = 0.12 at p = 1/2; measured ~1e-3); the same work (evaluations within 2 %)."""
    x0 = pk.initial_states(N, 1024, np.arange(64), seed=0)
    betas = np.linspace(0.1, 9.0, 5)
    x0, beta = np.ascontiguousarray(np.repeat(x0, betas.size, axis=0)), np.tile(betas, 64)
    args = (True, TIMES, 0.999, 0.9995, True, TOL, pk.H0, 3.75)
    double = pn.run_systems(pn.GRAM, x0, beta, *args)
    single = pn.run_systems(pn.GRAM_SINGLE, x0, beta, *args)
    p_double = double[0].reshape(64, betas.size, -1).mean(0)
    p_single = single[0].reshape(64, betas.size, -1).mean(0)
    assert np.abs(p_double - p_single).max() <= 1.96 * math.sqrt(0.25 / 64)
    assert single[3].sum() == pytest.approx(double[3].sum(), rel=0.02)
    assert not single[5].any()


def test_single_is_bit_identical_at_any_threads_and_chunks(monkeypatch):
    """A system's numbers depend on nothing but its own state: 1 and 2 numba threads, one
    block and chunks of 4, the same arrays bit for bit."""
    x0 = np.ascontiguousarray(pk.initial_states(N, 64, np.arange(11), seed=5))
    beta = np.linspace(0.2, 8.0, 11)
    args = (pn.GRAM_SINGLE, x0, beta, True, TIMES[:25], 0.999, 0.9995, True, TOL, pk.H0,
            1.0)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = pn.run_block(*args)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = pn.run_block(*args)
    finally:
        numba.set_num_threads(before)
    monkeypatch.setattr(pn, "CHUNK_WORK", 2 * N**3)  # 2 systems per thread and call
    chunked = pn.run_systems(*args, threads=2)
    for a, b, c in zip(one, two, chunked):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def test_numpy_engine_single_is_the_compiled_single_field():
    """The array engines' "single" Gram field (float32 exp, sums and product, centred as
    the compiled one) equals the compiled float32 field within the float32 rounding bound
    (different float32 exponentials and sums), and its runs give the same fractions."""
    g0 = pk.initial_states(N, 1024, np.arange(3), seed=2)
    beta = np.array([0.5, 3.0, 8.0])
    for normalized in (True, False):
        full = pk.gram_field(beta, normalized, single=True)(g0, np.arange(3))
        for s in range(3):
            _, single = _fields(g0[s], beta[s], normalized)
            r = 1.0 if normalized else math.exp(beta[s])
            bound = 2 * (N + 4) * U * r * np.abs(g0[s] - 1).max()
            np.testing.assert_allclose(single, full[s][np.triu_indices(N)], rtol=0,
                                       atol=bound)
    kw = {"n": 8, "d": 16, "beta": np.array([0.5, 2.0, 6.0]), "systems": np.arange(3),
          "times": np.linspace(0.0, 12.0, 25), "threshold": 0.999, "seed": 5,
          "tolerance": 1e-6, "normalized": True, "precision": "single"}
    a = pk.pair_fractions(engine="numpy", **kw)
    b = pk.pair_fractions(engine="numba", **kw)
    np.testing.assert_array_equal(a["fractions"], b["fractions"])


def test_precision_key():
    """A bad value is refused before any work, naming the key and the values accepted;
    the dataset records the precision."""
    with pytest.raises(ConfigError) as err:
        phase_diagram({"phase_diagram": {"precision": "half"}})
    assert err.value.key == "phase_diagram.precision"
    assert "'half'" in str(err.value) and "'double', 'single'" in str(err.value)
    ds = phase_diagram({"particles": {"n": 6, "seed": 1},
                        "phase_diagram": {"dims": [3, 8], "beta": [1.0, 4.0],
                                          "times": {"start": 0.0, "stop": 4.0, "num": 5},
                                          "systems": 4, "precision": "single"}})
    assert ds.attrs["precision"] == "single"
