"""Initial tokens (meanfield.initial.samplers): each sampler against the exact law of the PDE's
initial density, equiangular sets, token files and their errors, reproducibility.

Statistical margins: a KS or chi-square test passes at p > 1e-3, i.e. a correct sampler
would fail it for 1 seed in 1000; a "5 sigma" check for 1 in 1.7 million (normal
approximation). Every test uses a fixed seed, so the outcome is deterministic; the p-values
measured at these seeds are noted next to each test.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats

from meanfield import ConfigError
from meanfield.initial import circle as circle_initial
from meanfield.initial import sphere as initial_sphere
from meanfield.initial.samplers import load_token_file, sample_tokens, token_count

N = 20000
P_MIN = 1e-3
TWO_PI = 2 * np.pi
DATA = "data/three_clusters_angles.txt"


def _assert_p(p: float, label: str) -> None:
    assert p > P_MIN, f"{label}: p = {p:.3g}"


def _assert_z(z: float, label: str) -> None:
    assert abs(z) < 5, f"{label}: {z:.2f} standard errors"


def _angles(x: np.ndarray) -> np.ndarray:
    return np.mod(np.arctan2(x[:, 1], x[:, 0]), TWO_PI)


def _tabulated_cdf(f, lo: float, hi: float, points: int = 2**15 + 1):
    """CDF of the density ``f`` on [lo, hi] by a fine cumulative trapezoid (normalised;
    also returns the raw mass)."""
    t = np.linspace(lo, hi, points)
    cdf = integrate.cumulative_trapezoid(f(t), t, initial=0.0)
    mass = cdf[-1]
    return (lambda s: np.interp(s, t, cdf / mass)), mass


def _chi_square(samples: np.ndarray, cdf, edges: np.ndarray) -> float:
    observed = np.histogram(samples, edges)[0]
    expected = np.diff(cdf(edges)) * samples.size
    return float(stats.chisquare(observed, expected * observed.sum() / expected.sum())[1])


# ---------------------------------------------------------------------------------------
# Circle: KS and chi-square against the CDF of meanfield.initial.density_function.

CIRCLE_CASES = {
    "uniform": {"kind": "uniform"},
    "von_mises c=0.5": {"kind": "von_mises", "center": 2.0, "concentration": 0.5},
    "von_mises c=5": {"kind": "von_mises", "center": -1.0, "concentration": 5.0},
    "perturbed m=1": {"kind": "perturbed", "mode": 1, "amplitude": 0.9, "phase": 1.0},
    "perturbed m=3": {"kind": "perturbed", "mode": 3, "amplitude": -0.6, "phase": 0.4},
    "mixture": {"kind": "mixture", "components": [
        {"kind": "von_mises", "center": 1.0, "concentration": 8.0, "weight": 2.0},
        {"kind": "perturbed", "mode": 2, "amplitude": 1.0, "phase": 0.0, "weight": 1.0},
        {"kind": "uniform", "weight": 0.5}]},
    "samples auto": {"kind": "samples", "path": DATA, "bandwidth": "auto"},
    "samples h=0.3": {"kind": "samples", "path": DATA, "bandwidth": 0.3},
}


@pytest.mark.parametrize("name", list(CIRCLE_CASES))
def test_circle_kinds_follow_their_density(name):
    # KS and chi-square (64 bins), p > 1e-3 each. Measured (KS, chi-square): uniform
    # (0.73, 0.59), von Mises c = 0.5 (0.74, 0.14), c = 5 (0.98, 0.72), perturbed m = 1
    # (0.24, 0.87), m = 3 (0.87, 0.97), mixture (0.54, 0.51), samples auto (0.33, 0.43),
    # samples h = 0.3 (0.57, 0.048).
    initial = CIRCLE_CASES[name]
    seed = list(CIRCLE_CASES).index(name)
    theta = _angles(sample_tokens(initial, N, 2, np.random.default_rng(seed)))
    cdf, mass = _tabulated_cdf(circle_initial.density_function(initial), 0.0, TWO_PI)
    assert mass == pytest.approx(1.0, abs=1e-8)  # the tabulated CDF is the exact one
    _assert_p(stats.kstest(theta, cdf).pvalue, f"{name} KS")
    _assert_p(_chi_square(theta, cdf, np.linspace(0, TWO_PI, 65)), f"{name} chi-square")


@pytest.mark.parametrize("c", [1e4, 1e6, 1e8])
def test_concentrated_von_mises_on_the_scaled_angle(c):
    # s = sqrt(c) (theta - center) against the CDF of the density at theta = center +
    # s/sqrt(c) (mass beyond |s| = 12 is e^-72). c = 1e4, 1e6: numpy's Best-Fisher;
    # c = 1e8: the normal-envelope rejection. KS p > 1e-3; measured 0.82, 0.41, 0.075.
    center = 1.0
    initial = {"kind": "von_mises", "center": center, "concentration": c}
    x = sample_tokens(initial, N, 2, np.random.default_rng(int(np.log10(c))))
    s = np.sqrt(c) * np.arctan2(x[:, 1] * np.cos(center) - x[:, 0] * np.sin(center),
                                x @ [np.cos(center), np.sin(center)])
    f = circle_initial.density_function(initial)
    cdf, mass = _tabulated_cdf(lambda u: f(center + u / np.sqrt(c)), -12.0, 12.0)
    assert mass / np.sqrt(c) == pytest.approx(1.0, rel=1e-6)
    _assert_p(stats.kstest(s, cdf).pvalue, f"von Mises c = {c:g}")


# ---------------------------------------------------------------------------------------
# Sphere and higher dimensions.

def _frame(center: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    q = np.linalg.qr(np.column_stack([center, np.eye(3)]))[0]
    return q[:, 1], q[:, 2]


@pytest.mark.parametrize("c", [0.1, 3.0, 50.0, 1e6])
def test_vmf_on_s2_cosine_and_azimuth(c):
    # 1 - w = |x - center|^2/2 has the CDF expm1(-c y)/expm1(-2c); the azimuth about the
    # centre is uniform. KS p > 1e-3 each; measured (w, azimuth): (0.41, 0.57),
    # (0.75, 0.77), (0.57, 0.023), (0.20, 0.66).
    center = np.array([0.0, 0.6, 0.8])
    x = sample_tokens({"kind": "von_mises", "center": list(center), "concentration": c},
                      N, 3, np.random.default_rng(int(7 + 10 * c) % 1000))
    y = 0.5 * np.sum((x - center) ** 2, axis=1)
    _assert_p(stats.kstest(y, lambda t: np.expm1(-c * t) / np.expm1(-2 * c)).pvalue,
              f"vMF c = {c:g}: w")
    e1, e2 = _frame(center)
    phi = np.arctan2(x @ e2, x @ e1)
    _assert_p(stats.kstest(phi, stats.uniform(-np.pi, TWO_PI).cdf).pvalue,
              f"vMF c = {c:g}: azimuth")


def test_vmf_in_dimension_5_cosine_law():
    # Wood's sampler: w = <x, center> has density ~ e^{cw} (1 - w^2)^{(d-3)/2}, here d = 5.
    # KS p > 1e-3; measured 0.62.
    c, d = 3.0, 5
    center = np.ones(d) / np.sqrt(d)
    x = sample_tokens({"kind": "von_mises", "center": list(center), "concentration": c},
                      N, d, np.random.default_rng(3))
    cdf, _ = _tabulated_cdf(lambda w: np.exp(c * (w - 1)) * (1 - w * w), -1.0, 1.0)
    _assert_p(stats.kstest(x @ center, cdf).pvalue, "vMF d = 5 cosine")


@pytest.mark.parametrize("d", [5, 16])
@pytest.mark.parametrize("c", [2.0, 40.0, 1e6])
def test_vmf_mean_resultant_length(d, c):
    # E<x, center> = A_d(c) = I_{d/2}(c)/I_{d/2-1}(c), within 5 standard errors of the
    # sample mean (compared as 1 - w, exact to round-off for c = 1e6); measured |z| <= 0.76.
    center = np.zeros(d)
    center[-1] = 1.0
    x = sample_tokens({"kind": "von_mises", "center": list(center), "concentration": c},
                      N, d, np.random.default_rng(d))
    gap = 0.5 * np.sum((x - center) ** 2, axis=1)
    expected = 1 - special.ive(d / 2, c) / special.ive(d / 2 - 1, c)
    _assert_z((gap.mean() - expected) / (gap.std() / np.sqrt(N)), f"d = {d}, c = {c:g}")


def test_uniform_on_s2_moments():
    # Mean 0 (sd 1/sqrt(3N)), E[x x^T] = I/3 (sd of x_i^2: sqrt(4/45 N); of x_i x_j:
    # sqrt(1/15 N)), all within 5 sd; z = x_3 uniform on [-1, 1] (KS p > 1e-3; measured
    # 0.87). Largest |deviation| measured: 2.2 sd.
    x = sample_tokens({"kind": "uniform"}, N, 3, np.random.default_rng(5))
    for i, z in enumerate(x.mean(axis=0) * np.sqrt(3 * N)):
        _assert_z(z, f"mean x_{i}")
    second = x.T @ x / N
    sd = np.where(np.eye(3, dtype=bool), np.sqrt(4 / 45 / N), np.sqrt(1 / 15 / N))
    for z in ((second - np.eye(3) / 3) / sd)[np.triu_indices(3)]:
        _assert_z(z, "second moment")
    _assert_p(stats.kstest(x[:, 2], stats.uniform(-1, 2).cdf).pvalue, "uniform z")


def _sphere_quadrature(nz: int = 32, nlon: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Points and weights (Gauss-Legendre in z, equispaced longitudes) on S^2."""
    z, wz = np.polynomial.legendre.leggauss(nz)
    lon = TWO_PI * np.arange(nlon) / nlon
    r = np.sqrt(1 - z * z)[:, None]
    pts = np.stack([r * np.cos(lon), r * np.sin(lon), z[:, None] * np.ones(nlon)], -1)
    return pts, wz[:, None] * np.full(nlon, TWO_PI / nlon)


@pytest.mark.parametrize("degree,order,amplitude", [(2, 1, 0.8), (3, -2, -1.0)])
def test_perturbed_sphere_harmonic_mean(degree, order, amplitude):
    # The sample mean of Y = Y_lm / max|Y_lm| against int Y rho dS (quadrature exact for
    # these polynomials), within 5 standard errors; also the harmonic of the other sign of
    # order (zero mean) within 5. Measured |z| <= 1.26.
    initial = {"kind": "perturbed", "degree": degree, "order": order, "amplitude": amplitude}
    x = sample_tokens(initial, N, 3, np.random.default_rng(degree))
    y = initial_sphere._real_harmonic(degree, order)
    pts, w = _sphere_quadrature()
    exact = np.sum(w * y(pts) * initial_sphere.density_function(initial)(pts))
    assert abs(exact) > 0.1
    values = y(x)
    _assert_z((values.mean() - exact) / (values.std() / np.sqrt(N)), f"Y_{degree},{order}")
    other = initial_sphere._real_harmonic(degree, -order)(x)
    _assert_z(other.mean() / (other.std() / np.sqrt(N)), f"Y_{degree},{-order}")


def test_mixture_proportions_on_s2():
    # Two vMF (c = 200, opposite poles; mass in the wrong hemisphere e^-200) with weights
    # 1 and 3: the northern count is Binomial(N, 1/4), within 5 sd, in each half of the
    # rows too (labels are i.i.d., not blocks). Measured z = 1.96, 0.14, 2.63.
    initial = {"kind": "mixture", "components": [
        {"kind": "von_mises", "center": [0.0, 0.0, 1.0], "concentration": 200.0,
         "weight": 1.0},
        {"kind": "von_mises", "center": [0.0, 0.0, -1.0], "concentration": 200.0,
         "weight": 3.0}]}
    x = sample_tokens(initial, N, 3, np.random.default_rng(9))
    for part in (x, x[: N // 2], x[N // 2:]):
        m = part.shape[0]
        _assert_z((np.sum(part[:, 2] > 0) - m / 4) / np.sqrt(m * 3 / 16), "north")


@pytest.mark.parametrize("bandwidth", [0.5, "auto"])
def test_samples_on_s2_follow_the_kde(tmp_path, bandwidth):
    # Bin masses of initial_sphere's KDE on 6 equal-area latitude bands x 8 longitude
    # sectors (Gauss-Legendre 12 x 12 per cell) against the counts: chi-square p > 1e-3;
    # measured 0.53 (h = 0.5) and 0.63 (auto).
    rng = np.random.default_rng(2)
    pts = rng.standard_normal((6, 3)) * rng.uniform(0.5, 3.0, (6, 1))  # any lengths
    path = tmp_path / "points.txt"
    np.savetxt(path, pts)
    initial = {"kind": "samples", "path": str(path), "bandwidth": bandwidth}
    x = sample_tokens(initial, N, 3, np.random.default_rng(4))
    zb, lb = np.linspace(-1, 1, 7), np.linspace(0, TWO_PI, 9)
    g, gw = np.polynomial.legendre.leggauss(12)
    z = (0.5 * (zb[:-1, None] + zb[1:, None]) + 0.5 * np.diff(zb)[:, None] * g).ravel()
    lon = (0.5 * (lb[:-1, None] + lb[1:, None]) + 0.5 * np.diff(lb)[:, None] * g).ravel()
    r = np.sqrt(1 - z * z)[:, None]
    grid = np.stack([r * np.cos(lon), r * np.sin(lon), z[:, None] * np.ones_like(lon)], -1)
    f = initial_sphere.density_function(initial)(grid)
    cell = (f.reshape(6, 12, 8, 12) * gw[None, :, None, None] * gw[None, None, None, :])
    masses = cell.sum(axis=(1, 3)) * (np.diff(zb)[0] / 2) * (np.diff(lb)[0] / 2)
    assert masses.sum() == pytest.approx(1.0, abs=1e-4)
    band = np.clip(np.searchsorted(zb, x[:, 2]) - 1, 0, 5)
    sector = np.clip(np.searchsorted(lb, np.mod(np.arctan2(x[:, 1], x[:, 0]), TWO_PI)) - 1,
                     0, 7)
    counts = np.bincount(band * 8 + sector, minlength=48)
    expected = masses.ravel() * N
    _assert_p(stats.chisquare(counts, expected * N / expected.sum())[1],
              f"sphere samples h = {bandwidth}")


# ---------------------------------------------------------------------------------------
# Equiangular tokens, dimension checks, reproducibility.

@pytest.mark.parametrize("rho", [0.3, -0.2, 0.0])
def test_equiangular_products(rho):
    x = sample_tokens({"kind": "equiangular", "rho": rho}, 5, 8, np.random.default_rng(1))
    gram = x @ x.T
    off = gram[~np.eye(5, dtype=bool)]
    assert np.abs(off - rho).max() < 1e-14
    assert np.abs(np.diag(gram) - 1).max() < 1e-15


def test_equiangular_errors():
    with pytest.raises(ConfigError, match="n <= d") as info:
        sample_tokens({"kind": "equiangular", "rho": 0.0}, 9, 8, np.random.default_rng(0))
    assert info.value.key == "particles.n"
    with pytest.raises(ConfigError, match="-0.25 <= rho") as info:
        sample_tokens({"kind": "equiangular", "rho": -0.3}, 5, 8, np.random.default_rng(0))
    assert info.value.key == "initial.rho"


def test_kinds_and_centers_by_dimension():
    rng = np.random.default_rng(0)
    for kind in ("perturbed", "samples"):
        with pytest.raises(ConfigError, match="dimension 4") as info:
            sample_tokens({"kind": kind}, 10, 4, rng)
        assert info.value.key == "initial.kind"
        valid = str(info.value).split("valid:")[1]
        assert "'von_mises'" in valid and f"'{kind}'" not in valid
    with pytest.raises(ConfigError, match="unit 4-vector") as info:
        sample_tokens({"kind": "von_mises", "center": [0.0, 0.0, 1.0],
                       "concentration": 1.0}, 10, 4, rng)
    assert info.value.key == "initial.center"
    with pytest.raises(ConfigError) as info:
        sample_tokens({"kind": "mixture", "components": [
            {"kind": "uniform", "weight": 1.0},
            {"kind": "von_mises", "center": [1.0, 0.0], "concentration": 1.0,
             "weight": 1.0}]}, 10, 3, rng)
    assert info.value.key == "initial.components[1].center"


def test_zero_concentration_is_uniform():
    # KS p > 1e-3 for z uniform on [-1, 1] (dim 3); measured 0.0073 (over 150 other
    # seeds the p-values are uniform: meta-KS p = 0.12). Norms to 1e-15.
    for d in (2, 3, 6):
        x = sample_tokens({"kind": "von_mises", "center": 0.0 if d == 2 else
                           list(np.eye(d)[0]), "concentration": 0.0}, N, d,
                          np.random.default_rng(d))
        assert np.abs(np.linalg.norm(x, axis=1) - 1).max() < 1e-15
        if d == 3:
            _assert_p(stats.kstest(x[:, 2], stats.uniform(-1, 2).cdf).pvalue, "c = 0")


REPRODUCIBLE = [
    ({"kind": "uniform"}, 4),
    ({"kind": "von_mises", "center": [0.0, 0.0, 0.0, 0.0, 1.0], "concentration": 7.0}, 5),
    ({"kind": "perturbed", "degree": 2, "order": 1, "amplitude": 0.5}, 3),
    ({"kind": "samples", "path": DATA, "bandwidth": "auto"}, 2),
    ({"kind": "mixture", "components": [
        {"kind": "von_mises", "center": 1.0, "concentration": 1e7, "weight": 1.0},
        {"kind": "perturbed", "mode": 2, "amplitude": 0.3, "phase": 0.0, "weight": 2.0}]}, 2),
    ({"kind": "equiangular", "rho": 0.1}, 12),
]


@pytest.mark.parametrize("initial,dim", REPRODUCIBLE)
def test_same_seed_same_tokens(initial, dim):
    a = sample_tokens(initial, 10, dim, np.random.default_rng(123))
    b = sample_tokens(initial, 10, dim, np.random.default_rng(123))
    c = sample_tokens(initial, 10, dim, np.random.default_rng(124))
    assert a.dtype == np.float64 and a.shape == (10, dim)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert np.abs(np.linalg.norm(a, axis=1) - 1).max() < 1e-15
    # an integer seed goes through meanfield.model.tokens.initial_rng
    assert np.array_equal(sample_tokens(initial, 10, dim, 5), sample_tokens(initial, 10, dim, 5))


# ---------------------------------------------------------------------------------------
# Token files.

def test_token_file_rows_are_normalised(tmp_path):
    raw = np.array([[3.0, 4.0, 0.0], [0.0, 1e-3, 0.0], [1e5, -2e5, 2e5], [0.6, 0.0, 0.8]])
    path = tmp_path / "tokens.txt"
    np.savetxt(path, raw)
    assert token_count(path) == 4
    assert np.array_equal(load_token_file(path, 3), raw)  # raw rows (Pre-LN radii)
    x = sample_tokens({"kind": "tokens", "path": str(path), "unit_rows": True}, 4, 3, 0)
    lengths = np.linalg.norm(raw, axis=1)
    assert np.abs(np.linalg.norm(x, axis=1) - 1).max() < 1e-15
    assert np.allclose(np.einsum("ij,ij->i", x, raw), lengths, rtol=1e-15)  # same directions
    np.save(tmp_path / "tokens.npy", raw)
    y = sample_tokens({"kind": "tokens", "path": str(tmp_path / "tokens.npy")}, 4, 3, 0)
    assert np.array_equal(x, y)


def test_token_file_unit_rows_kept_as_given(tmp_path):
    raw = np.array([[1.0, 0.0], [0.6, 0.8 + 5e-7], [0.0, -1.0]])
    path = tmp_path / "unit.npy"
    np.save(path, raw)
    x = sample_tokens({"kind": "tokens", "path": str(path), "unit_rows": False}, 3, 2, 0)
    assert np.abs(x - raw).max() < 1e-6 and np.abs(np.linalg.norm(x, axis=1) - 1).max() < 1e-15
    raw[1] *= 1.1
    np.save(path, raw)
    with pytest.raises(ConfigError, match=r"row 1 has length 1\.1.*unit_rows") as info:
        sample_tokens({"kind": "tokens", "path": str(path), "unit_rows": False}, 3, 2, 0)
    assert info.value.key == "initial.path"


def test_token_file_of_angles(tmp_path):
    angles = np.array([0.1, 2.0, -1.0, 4.0])
    for path in (tmp_path / "angles.txt", tmp_path / "angles.npy"):
        if path.suffix == ".npy":
            np.save(path, angles)
        else:
            np.savetxt(path, angles)
        assert token_count(path) == 4
        x = sample_tokens({"kind": "tokens", "path": str(path)}, 4, 2, 0)
        assert np.allclose(x, np.column_stack([np.cos(angles), np.sin(angles)]), atol=1e-15)
    with pytest.raises(ConfigError, match=r"shape \(4,\).*dimension 3"):
        load_token_file(tmp_path / "angles.npy", 3)


def _write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("text,dim,n,key,words", [
    (None, 3, None, "initial.path", ["no such file"]),
    ("1 2 x\n3 4 5\n", 3, None, "initial.path", ["cannot be read"]),
    ("1 2 3\n4 5 6\n", 4, None, "initial.path", ["shape (2, 3)", "dimension 4"]),
    ("1 2\n3 4\n", 3, None, "initial.path", ["shape (2, 2)", "(n, 3)"]),
    ("1 2 3\n4 nan 6\n", 3, None, "initial.path", ["row 1", "NaN"]),
    ("1 0 0\n0 1 0\n0 0 0\n", 3, None, "initial.path", ["row 2", "zero vector"]),
    ("1 0 0\n0 1 0\n1e-13 0 0\n", 3, None, "initial.path", ["row 2", "zero vector"]),
    ("1 0 0\n0 1 0\n0 0 1\n", 3, 5, "particles.n", ["particles.n = 5", "3 tokens"]),
    ("", 3, None, "initial.path", ["empty"]),
])
def test_token_file_errors(tmp_path, text, dim, n, key, words):
    path = str(tmp_path / "missing.txt") if text is None else _write(tmp_path, "t.txt", text)
    with pytest.raises(ConfigError) as info:
        if n is None:
            load_token_file(path, dim)
        else:
            sample_tokens({"kind": "tokens", "path": path, "unit_rows": True}, n, dim, 0)
    assert info.value.key == key
    for word in words:
        assert word in str(info.value)
