"""Fast interaction sums (solvers.particles.fast) against the direct kernel: accuracy of the
USA sums and the SA averages, beta = 0, clustered points with the row fix-up,
thread-count independence, bad input. The multipliers come from the model layer
(meanfield.model.kernels; their truncation rules: tests/meanfield/model)."""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from meanfield.model import kernels as kn
from solvers.particles import chunks
from solvers.particles import fast as fs
from solvers.particles.direct import exp_kernel_sums
from solvers.particles.fourier import fourier_kernel_sums
from solvers.particles.harmonic import harmonic_kernel_sums


def fast_sums(d, queries, keys, beta, accuracy=1e-12, threads=None, project=False):
    """The fast method of ``d`` with the kernel's multipliers for beta and accuracy."""
    sums = fourier_kernel_sums if d == 2 else harmonic_kernel_sums
    return sums(queries, keys, kn.fast_multipliers(d, beta, accuracy), threads, project)


FAST = {d: functools.partial(fast_sums, d) for d in (2, 3)}


def uniform(n, d, seed):
    x = np.random.default_rng(seed).standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1)[:, None]


def clusters(n, d, seed, kappa=400.0):
    """Two tight clusters (about e_1 and -e_2), half the points each."""
    rng = np.random.default_rng(seed)
    centers = np.zeros((2, d))
    centers[0, 0], centers[1, 1] = 1.0, -1.0
    x = centers[np.arange(n) % 2] + rng.standard_normal((n, d)) / math.sqrt(kappa)
    return x / np.linalg.norm(x, axis=1)[:, None]


def unshifted(s, z, shift, beta):
    """``(e^{shift - beta} s, e^{shift - beta} z)``: the sums in units of e^beta."""
    f = np.exp(shift - beta)
    return s * f[:, None], z * f


def errors(fast, direct, beta):
    """Max errors of ``e^shift s`` and ``e^shift z`` (units of e^beta) and of ``s/z``."""
    (sf, zf), (sd, zd) = unshifted(*fast, beta), unshifted(*direct, beta)
    sa = np.abs(fast[0] / fast[1][:, None] - direct[0] / direct[1][:, None]).max()
    return np.abs(sf - sd).max(), np.abs(zf - zd).max(), sa


@pytest.fixture(scope="module")
def points():
    return {d: uniform(10_000, d, 10 + d) for d in (2, 3)}


# ---------------------------------------------------------------------------------------
# Accuracy against the direct kernel.

@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("beta", [1.0, 5.0, 20.0])
def test_fast_sums_match_the_direct_kernel(points, d, beta):
    x = points[d]
    n = x.shape[0]
    direct = exp_kernel_sums(x, x, beta)
    fast = FAST[d](x, x, beta, accuracy=1e-10)
    assert np.all(fast[2] == beta)
    usa, zerr, sa = errors(fast, direct, beta)
    # USA: e^shift s / n relative to e^beta; the accuracy contract: <= accuracy n e^beta.
    assert usa / n <= 1e-10 and zerr / n <= 1e-10
    assert sa <= 1e-10


@pytest.mark.parametrize("d", [2, 3])
def test_beta_zero_and_queries_other_than_keys(d):
    y = uniform(2000, d, 1)
    q = uniform(300, d, 2)
    for beta in (0.0, 3.0):
        direct = exp_kernel_sums(q, y, beta)
        fast = kn.kernel_sums(q, y, beta, method=fs.FAST_METHOD[d], accuracy=1e-12)
        usa, zerr, sa = errors(fast, direct, beta)
        assert max(usa, zerr) / 2000 <= 1e-12 and sa <= 1e-11
    assert kn.fast_order(2, 0.0, 1e-12) == 0 and kn.fast_order(3, 0.0, 1e-12) == 1


def test_poles_and_points_off_the_sphere():
    # S^2 queries at the poles (longitude undefined there) and the fast methods' use of
    # directions: scaling the rows changes nothing.
    y = uniform(3000, 3, 3)
    q = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, -1.0], [-0.0, 0.0, 1.0], [1e-12, 0.0, 1.0]])
    for d, queries, keys in ((3, q, y), (2, uniform(50, 2, 4), uniform(3000, 2, 5))):
        direct = exp_kernel_sums(queries / np.linalg.norm(queries, axis=1)[:, None], keys,
                                 4.0)
        fast = FAST[d](2.5 * queries, 0.5 * keys, 4.0, accuracy=1e-12)
        usa, zerr, sa = errors(fast, direct, 4.0)
        assert max(usa, zerr) / 3000 <= 1e-12 and sa <= 1e-11


@pytest.mark.parametrize("d", [2, 3])
def test_relative_rows_fix_the_rows_far_from_the_clusters(d):
    beta, accuracy = 20.0, 1e-10
    y = clusters(6000, d, 7)
    q = np.concatenate([uniform(1500, d, 8), y[:500]])
    direct = exp_kernel_sums(q, y, beta)
    method = fs.FAST_METHOD[d]
    plain = kn.kernel_sums(q, y, beta, method=method, accuracy=accuracy)
    fixed = kn.kernel_sums(q, y, beta, method=method, accuracy=accuracy,
                                relative_rows=True)
    assert errors(plain, direct, beta)[2] > 1e-3  # far rows: z ~ e^{-40} n e^beta
    usa, zerr, sa = errors(fixed, direct, beta)
    assert sa <= 2 * accuracy
    redone = fixed[2] != beta  # recomputed rows carry their own shift (none inside an arc
    # of keys here: the far rows are > 0.5 rad from the clusters)
    assert 0 < redone.sum() < 1500 and not redone[1500:].any()  # cluster rows stay fast
    if d == 3:  # the direct kernel's shift: the row's largest exponent
        assert np.allclose(fixed[2][redone], direct[2][redone], rtol=0, atol=1e-12)
    else:  # the arcs': beta cos(angle to the nearest arc of keys) >= that
        assert np.all(fixed[2][redone] >= direct[2][redone] - 1e-12)
    # Each row's sum is within accuracy of itself.
    zf, zd = unshifted(*fixed, beta)[1], unshifted(*direct, beta)[1]
    assert np.all(np.abs(zf - zd) <= accuracy * zd)


@pytest.mark.parametrize("d,accuracy", [(2, 1e-6), (2, 1e-13), (3, 1e-6), (3, 1e-12)])
def test_accuracy_contract_end_to_end(d, accuracy):
    x = uniform(2000, d, 20 + d)
    for beta in (2.0, 30.0):
        direct = exp_kernel_sums(x, x, beta)
        usa, zerr, _ = errors(FAST[d](x, x, beta, accuracy=accuracy), direct, beta)
        assert max(usa, zerr) <= accuracy * 2000


# ---------------------------------------------------------------------------------------
# Threads, dispatch, bad input.

@pytest.mark.parametrize("d", [2, 3])
def test_results_do_not_depend_on_threads_or_runs(d):
    n = 4 * chunks.CHUNK_POINTS + 123  # several chunks
    assert len(chunks.chunk_slices(n)) == 4
    x = uniform(n, d, 30)
    q = uniform(1000, d, 31)
    runs = [FAST[d](x, x, 5.0, 1e-10, threads=t) for t in (1, 2, 2, 3)]
    runs += [FAST[d](q, x, 5.0, 1e-10, threads=t) for t in (1, 2)]
    for a in runs[1:4]:
        assert all(np.array_equal(u, v) for u, v in zip(runs[0], a))
    assert all(np.array_equal(u, v) for u, v in zip(runs[4], runs[5]))


def test_auto_picks_direct_for_few_keys_and_fast_for_many():
    for d in (2, 3):
        cross = kn.crossover_n(d, 5.0, 1e-10)
        assert 100 < cross < 10_000
        assert kn.choose_method(cross - 1, d, 5.0, 1e-10) == "direct"
        assert kn.choose_method(cross, d, 5.0, 1e-10) == fs.FAST_METHOD[d]
        assert kn.crossover_n(d, 1000.0, 1e-10) >= cross
        assert kn.choose_method(10**6, d, -1.0, 1e-10) == "direct"  # negative beta
        assert kn.choose_method(10**6, d, 5.0, 1e-15) == "direct"  # below the floor
    assert kn.choose_method(10**6, 3, 1e5, 1e-10) == "direct"  # L > 1000
    assert kn.choose_method(10**6, 4, 5.0, 1e-10) == "direct"
    x = uniform(50, 4, 40)
    s, z, shift = kn.kernel_sums(x, x, 2.0)
    assert np.allclose(s, exp_kernel_sums(x, x, 2.0)[0])


def test_bad_methods_dimensions_and_accuracies():
    x2, x3 = uniform(10, 2, 0), uniform(10, 3, 0)
    with pytest.raises(ValueError, match="'auto', 'direct', 'fourier', 'harmonic'"):
        kn.kernel_sums(x2, x2, 1.0, method="fmm")
    with pytest.raises(ValueError, match="for d = 3 use one of 'auto', 'direct', 'harmonic'"):
        kn.kernel_sums(x3, x3, 1.0, method="fourier")
    with pytest.raises(ValueError, match="for d = 2 use one of 'auto', 'direct', 'fourier'"):
        kn.kernel_sums(x2, x2, 1.0, method="harmonic")
    with pytest.raises(ValueError, match="for d = 4 use one of 'auto', 'direct'$"):
        kn.kernel_sums(uniform(10, 4, 0), uniform(10, 4, 0), 1.0, method="fourier")
    for acc in (1e-15, 0.0, -1.0, float("nan"), 1.0):
        with pytest.raises(ValueError, match=r"reaches accuracies in \[1e-13, 1\)"):
            kn.kernel_sums(x2, x2, 1.0, method="fourier", accuracy=acc)
    with pytest.raises(ValueError, match=r"reaches accuracies in \[1e-12, 1\)"):
        FAST[3](x3, x3, 1.0, accuracy=1e-13)
    with pytest.raises(ValueError, match="needs order .* > 1000 .* reaches beta <= "):
        kn.check_fast_accuracy(3, 1e5, 1e-10)
    with pytest.raises(ValueError, match="beta >= 0"):
        FAST[2](x2, x2, -1.0)
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        FAST[3](x2, x2, 1.0)
    with pytest.raises(ValueError, match="d = 2 .* d = 3"):
        kn.fast_order(4, 1.0, 1e-10)
    beta_max = kn.max_fast_beta(3, 1e-10)
    assert kn.fast_order(3, beta_max, 1e-10) <= 1000 < kn.fast_order(3, 1.02 * beta_max, 1e-10)


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("beta", [0.3, 5.0, 20.0])
def test_projected_sums_are_the_tangent_parts(d, beta):
    # project=True packs z and the tangent part into fewer transforms (S^1: one complex
    # type-2 NUFFT of z + i T; S^2: no radial synthesis): it must equal P^perp_q s of the
    # direct kernel to the accuracy contract (relative to n e^beta)
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3000, d))
    x /= np.linalg.norm(x, axis=1)[:, None]
    method = fs.FAST_METHOD[d]
    s, z, shift = kn.kernel_sums(x, x, beta, method=method, accuracy=1e-10,
                                      project=True)
    sd, zd, hd = exp_kernel_sums(x, x, beta)
    exact = (sd - np.einsum("ij,ij->i", x, sd)[:, None] * x) * np.exp(hd - beta)[:, None]
    scale = x.shape[0]
    assert np.max(np.abs(s - exact)) / scale < 1e-10
    assert np.max(np.abs(z - zd * np.exp(hd - beta))) / scale < 1e-10
    assert np.max(np.abs(np.einsum("ij,ij->i", s, x))) < 1e-12 * scale  # tangent


def test_fast_methods_take_the_callers_multipliers():
    # solvers computes no Bessel function: a fast method without multipliers, or with
    # those of another beta or dimension, is refused; relative rows need multipliers
    # made for them (row_accuracy)
    x2 = uniform(50, 2, 50)
    with pytest.raises(ValueError, match="needs the kernel's multipliers"):
        fs.interaction_sums(x2, x2, 1.0, method="fourier")
    with pytest.raises(ValueError, match="beta = 2.0 given to sums with d = 2, beta = 1.0"):
        fs.interaction_sums(x2, x2, 1.0, method="fourier",
                            multipliers=kn.fast_multipliers(2, 2.0, 1e-10))
    with pytest.raises(ValueError, match="d = 3"):
        fourier_kernel_sums(x2, x2, kn.fast_multipliers(3, 1.0, 1e-10))
    with pytest.raises(ValueError, match="row_accuracy"):
        fs.interaction_sums(x2, x2, 1.0, method="fourier", relative_rows=True,
                            multipliers=kn.fast_multipliers(2, 1.0, 1e-10))
    # the same multipliers give the same sums as the model layer's kernel_sums
    m = kn.fast_multipliers(2, 1.0, 1e-10, relative_rows=True)
    assert m.row_accuracy == 1e-10 and m.accuracy < 1e-10
    a = fs.interaction_sums(x2, x2, 1.0, method="fourier", multipliers=m, relative_rows=True)
    b = kn.kernel_sums(x2, x2, 1.0, method="fourier", accuracy=1e-10, relative_rows=True)
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    # without multipliers "auto" has no fast method to pick
    assert fs.choose_method(10**6, 2, None) == "direct"
