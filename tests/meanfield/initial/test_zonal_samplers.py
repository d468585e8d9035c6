"""Tokens drawn from zonal densities on S^{d-1} (``meanfield.initial.zonal_samplers``),
tested against the exact laws.

The polar angle theta = angle(x, e) of a zonal density rho has the density
``w_d sin^{d-2}(theta) rho(cos theta)`` on [0, pi]; each test tabulates that CDF
independently (``scipy.special`` and the trapezoid rule on 200001 angles, normalised
numerically) and runs a Kolmogorov-Smirnov test of the drawn angles against it: with a
fixed seed, the test fails if p < 1e-3 (a correct sampler fails one seed in a thousand).
The orthogonal part u = x_perp / |x_perp| must be uniform on S^{d-2} and independent of t:
Rayleigh's test of its mean ((d-1) n |mean u|^2 ~ chi^2_{d-1}), Bingham's test of its
second moments (n (d-1)(d+1)/2 ||T - I/(d-1)||^2 ~ chi^2 with (d-1)d/2 - 1 degrees of
freedom, T = mean u u^T) and a two-sample KS test of u_1 between the tokens with t above
and below its median, each at p >= 1e-3.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats
from scipy.integrate import cumulative_trapezoid

from meanfield.errors import ConfigError
from meanfield.initial.zonal import load_sample_t
from meanfield.initial.zonal_samplers import zonal_tokens

P_MIN = 1e-3
N = 20000


def count(dim: int) -> int:
    """Tokens per test: fewer in d >= 1000, where each costs d normal draws."""
    return N if dim < 1000 else 3000


def angle_cdf(log_rho, dim: int):
    """The CDF of theta for the zonal density ``exp(log_rho(t))`` (unnormalised)."""
    theta = np.linspace(0.0, math.pi, 200001)
    log_p = log_rho(np.cos(theta))
    if dim > 2:
        with np.errstate(divide="ignore"):
            log_p = log_p + (dim - 2) * np.log(np.sin(theta))
    p = np.exp(log_p - np.max(log_p[np.isfinite(log_p)]))
    cdf = cumulative_trapezoid(np.nan_to_num(p), theta, initial=0.0)
    cdf /= cdf[-1]
    return lambda x: np.interp(x, theta, cdf)


def angles(x: np.ndarray) -> np.ndarray:
    """theta = angle(x, e), accurate near e (atan2 of the orthogonal length)."""
    return np.arctan2(np.linalg.norm(x[:, 1:], axis=1), x[:, 0])


def von_mises_log(c: float):
    return lambda t: c * t


def assert_law(x: np.ndarray, cdf) -> None:
    p = stats.kstest(angles(x), cdf).pvalue
    assert p >= P_MIN, f"KS p-value {p:.2g}"


@pytest.mark.parametrize("dim", [2, 3, 16, 2000])
def test_uniform_angle_law(dim):
    x = zonal_tokens({"kind": "uniform"}, count(dim), dim, 1)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=2e-15)
    a = (dim - 1) / 2  # exact: (1 - t)/2 ~ Beta(a, a)
    assert_law(x, lambda th: special.betainc(a, a, np.sin(th / 2) ** 2))


@pytest.mark.parametrize("dim, c", [(2, 5.0), (3, 5.0), (16, 9.3), (1000, 60.0),
                                    (4096, 1e6)])
def test_von_mises_angle_law(dim, c):
    """Up to a concentrated law in d = 4096 (its angles within 7e-4 of 0.063)."""
    x = zonal_tokens({"kind": "von_mises", "concentration": c}, count(dim), dim, 2)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=2e-15)
    assert_law(x, angle_cdf(von_mises_log(c), dim))


def test_concentrated_von_mises_mean_gap():
    """E(1 - t) = 1 - I_{d/2}(c)/I_{d/2-1}(c): d = 4096, c = 1e6, within 4 standard
    errors of the sample mean (the gap is drawn, not 1 - t: its digits are kept)."""
    dim, c = 4096, 1e6
    x = zonal_tokens({"kind": "von_mises", "concentration": c}, count(dim), dim, 3)
    gap = np.linalg.norm(x[:, 1:], axis=1) ** 2 / (1 + x[:, 0])  # 1 - t, accurately
    exact = 1 - special.ive(dim / 2, c) / special.ive(dim / 2 - 1, c)
    assert abs(gap.mean() - exact) < 4 * gap.std() / math.sqrt(count(dim))


@pytest.mark.parametrize("dim, degree, amplitude", [(2, 3, 0.9), (5, 2, 0.8),
                                                    (16, 1, -1.0)])
def test_perturbed_angle_law(dim, degree, amplitude):
    lam = (dim - 2) / 2

    def log_rho(t):
        if dim == 2:
            p = np.cos(degree * np.arccos(np.clip(t, -1, 1)))
        else:
            p = special.eval_gegenbauer(degree, lam, t) / special.eval_gegenbauer(degree,
                                                                                  lam, 1.0)
        with np.errstate(divide="ignore"):
            return np.log(np.clip(1 + amplitude * p, 0, None))

    initial = {"kind": "perturbed", "degree": degree, "amplitude": amplitude}
    assert_law(zonal_tokens(initial, N, dim, 4), angle_cdf(log_rho, dim))


def test_mixture_angle_law():
    dim = 8
    initial = {"kind": "mixture", "components": [
        {"kind": "uniform", "weight": 1.0},
        {"kind": "von_mises", "concentration": 30.0, "weight": 3.0}]}
    cdf_u = angle_cdf(lambda t: 0 * t, dim)
    cdf_v = angle_cdf(von_mises_log(30.0), dim)
    assert_law(zonal_tokens(initial, N, dim, 5), lambda th: 0.25 * cdf_u(th)
               + 0.75 * cdf_v(th))


@pytest.mark.parametrize("dim", [2, 6])
def test_samples_follow_the_pde_initial_density(tmp_path, dim):
    """The sampler draws the zonal kernel estimate exactly; the PDE's initial density is
    its Gegenbauer series (``meanfield.initial.zonal``): the same law."""
    from meanfield.initial.zonal import samples_density

    rng = np.random.default_rng(0)
    points = rng.standard_normal((40, dim)) + np.r_[2.0, np.zeros(dim - 1)]
    path = tmp_path / "points.npy"
    np.save(path, points)
    initial = {"kind": "samples", "path": str(path), "bandwidth": 0.3}
    f = samples_density(initial, dim)
    assert_law(zonal_tokens(initial, N, dim, 6),
               angle_cdf(lambda t: np.log(np.clip(f(t), 1e-300, None)), dim))
    assert load_sample_t(str(path), dim).size == 40


@pytest.mark.parametrize("dim", [4, 16])
def test_orthogonal_part_is_uniform_and_independent(dim):
    x = zonal_tokens({"kind": "von_mises", "concentration": 9.3}, N, dim, 7)
    perp = x[:, 1:]
    u = perp / np.linalg.norm(perp, axis=1)[:, None]
    k = dim - 1
    rayleigh = k * N * np.sum(u.mean(axis=0) ** 2)
    assert stats.chi2.sf(rayleigh, k) >= P_MIN
    scatter = u.T @ u / N - np.eye(k) / k
    bingham = N * k * (k + 2) / 2 * np.sum(scatter**2)
    assert stats.chi2.sf(bingham, k * (k + 1) / 2 - 1) >= P_MIN
    high = x[:, 0] > np.median(x[:, 0])
    assert stats.ks_2samp(u[high, 0], u[~high, 0]).pvalue >= P_MIN


def test_circle_signs_are_balanced():
    """d = 2: the orthogonal sphere S^0 is two points, each taken half the time."""
    x = zonal_tokens({"kind": "perturbed", "degree": 2, "amplitude": 0.5}, N, 2, 8)
    assert stats.binomtest(int(np.sum(x[:, 1] > 0)), N).pvalue >= P_MIN


def test_seeded_and_reproducible():
    initial = {"kind": "von_mises", "concentration": 4.0}
    a = zonal_tokens(initial, 500, 12, 11)
    np.testing.assert_array_equal(a, zonal_tokens(initial, 500, 12, 11))
    assert not np.array_equal(a, zonal_tokens(initial, 500, 12, 12))
    rng = np.random.default_rng(3)
    np.testing.assert_array_equal(zonal_tokens(initial, 500, 12, np.random.default_rng(3)),
                                  zonal_tokens(initial, 500, 12, rng))


def test_too_few_tokens_refused():
    with pytest.raises(ConfigError, match="particles.n"):
        zonal_tokens({"kind": "uniform"}, 1, 5, 0)
