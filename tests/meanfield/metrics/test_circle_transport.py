"""Exact Wasserstein distances on S^1 (meanfield.metrics.circle_transport): closed forms,
the cross-check against POT's network simplex (ot.emd2 with the geodesic cost),
densities against fine discretisations, the metric axioms and bad input."""
import numpy as np
import pytest

from meanfield.metrics.circle_measures import CircleMeasure
from meanfield.metrics.circle_minimise import minimise_with_slope
from meanfield.metrics.circle_quadrature import gl_cost
from meanfield.metrics.circle_shift import shift_cost
from meanfield.metrics.circle_transport import circle_wasserstein, circle_wasserstein_to_dirac

L = 2 * np.pi


def geodesic(x, y):
    d = np.abs(np.asarray(x)[:, None] - np.asarray(y)[None, :])
    return np.minimum(d, L - d)


def von_mises(n, kappa=2.0, center=1.0):
    th = L * np.arange(n) / n
    v = np.exp(kappa * np.cos(th - center))
    return v / (v.sum() * L / n)


def test_two_diracs():
    for a, b in [(0.5, 6.0), (0.0, np.pi), (1.0, 1.0), (3.0, 0.2)]:
        d = min(abs(a - b), L - abs(a - b))
        mu, nu = CircleMeasure.from_points([a]), CircleMeasure.from_points([b])
        for p in (1, 2, 3.5):
            assert circle_wasserstein(mu, nu, p) == pytest.approx(d, abs=1e-14)


@pytest.mark.parametrize("method", ["spectral", "finite-volume"])
def test_uniform_vs_dirac(method):
    uni = CircleMeasure.from_density(np.full(32, 1 / L), method)
    for angle in (0.0, 1.3, L - 1e-9):
        dirac = CircleMeasure.from_points([angle])
        assert circle_wasserstein(uni, dirac, 1) == pytest.approx(np.pi / 2, abs=1e-14)
        assert circle_wasserstein(dirac, uni, 2) == pytest.approx(np.pi / np.sqrt(3),
                                                                abs=1e-14)
        assert circle_wasserstein_to_dirac(uni, angle, 1) == pytest.approx(np.pi / 2,
                                                                          abs=1e-14)
        assert circle_wasserstein_to_dirac(uni, angle, 2) == pytest.approx(
            np.pi / np.sqrt(3), abs=1e-14)
    # p = 3 (Gauss-Legendre path): int_0^pi t^3 dt / pi = pi^3 / 4.
    assert circle_wasserstein(uni, CircleMeasure.from_points([2.0]), 3) == pytest.approx(
        (np.pi**3 / 4) ** (1 / 3), abs=1e-13)


def _random_instance(rng, it):
    n, m = rng.integers(1, 41, 2)
    x, y = rng.uniform(0, L, n), rng.uniform(0, L, m)
    if it % 5 == 0:  # ties: duplicate atoms on both sides
        x[: n // 2] = x[0]
        y[m // 2:] = y[-1]
    if it % 7 == 0:  # atoms at 0 and just below 2 pi
        x[0], y[-1] = 0.0, L - 1e-12
    if it % 11 == 0:  # a single atom
        x, n = x[:1], 1
    if it % 13 == 0:  # the same support on both sides
        y, m = x.copy(), n
    return x, rng.uniform(0.01, 1, n), y, rng.uniform(0.01, 1, m)


def test_against_emd2_random_instances():
    """1200 seeded instances, sizes 1..40, random weights: |W_p^p - emd2| <= 1e-10
    (absolute on W_p^p) for p = 1 (median formula and shift formula), 2 and 1.5."""
    ot = pytest.importorskip("ot")
    rng = np.random.default_rng(20261123)
    worst = {}
    for it in range(1200):
        x, a, y, b = _random_instance(rng, it)
        mu, nu = CircleMeasure.from_points(x, a), CircleMeasure.from_points(y, b)
        d = geodesic(mu.angles, nu.angles)
        for p in (1.0, 2.0) if it % 4 else (1.0, 2.0, 1.5):
            exact = ot.emd2(mu.weights, nu.weights, d**p)
            ours = circle_wasserstein(mu, nu, p) ** p
            worst[p] = max(worst.get(p, 0.0), abs(ours - exact))
            if p == 1.0:
                worst["shift"] = max(worst.get("shift", 0.0),
                                     abs(shift_cost(mu, nu, 1.0)[0] - exact))
    assert max(worst.values()) < 1e-10, worst


def test_pot_circle_solver_is_off_on_small_unequal_inputs():
    # Documents why we do not use ot.wasserstein_circle (POT 0.9.7): on this input it
    # returns a W1 above half the circumference while emd2 agrees with ours. Not an
    # assertion that POT's bug stays: only ours and emd2 are checked.
    ot = pytest.importorskip("ot")
    # Found by a seeded search (3 vs 7 equal-weight atoms): POT gives 1.0851 on the
    # circle of length 1 (more than the largest possible 0.5); the truth is 0.19381 (emd2 and ours).
    # (Full precision matters: rounded to 16 digits POT is right again.)
    u = np.array([0.8715760559548247, 0.13217691594949643, 0.3050751526083735])
    v = np.array([0.40777455723490097, 0.7725284557686096, 0.686684721711338,
                  0.5367303424045855, 0.37685879376523146, 0.28691070626120985,
                  0.5824724774589648])
    a, b = np.full(3, 1 / 3), np.full(7, 1 / 7)
    pot = float(np.ravel(ot.wasserstein_circle(u, v, a, b, p=1))[0])  # on [0, 1)
    mu, nu = CircleMeasure.from_points(L * u), CircleMeasure.from_points(L * v)
    exact = ot.emd2(mu.weights, nu.weights, geodesic(mu.angles, nu.angles))
    assert circle_wasserstein(mu, nu, 1) == pytest.approx(exact, abs=1e-14)
    assert exact / L == pytest.approx(0.19380590741883758, abs=1e-12)
    print("POT wasserstein_circle (x 2 pi):", pot * L, "emd2:", exact)


def test_empirical_vs_density_quantile_discretisation():
    """A von Mises density (spectral) against its N = 1e5 midpoint-quantile atoms: the
    known error of that discretisation is W1 = 2 pi / (4 N) exactly (each atom is the
    median of its mass cell; to first order the cells are linear pieces of F^{-1}) and
    W2^2 = (1 / (12 N^2)) int 1 / rho d theta to O(N^-4)."""
    sp = CircleMeasure.from_density(von_mises(256), "spectral")
    n_atoms = 10**5
    atoms = CircleMeasure.from_points(sp.quantile((np.arange(n_atoms) + 0.5) / n_atoms))
    assert circle_wasserstein(sp, atoms, 1) == pytest.approx(L / (4 * n_atoms), rel=1e-6)
    th = (np.arange(200000) + 0.5) / 200000 * L
    inv = np.mean(1 / sp.density_at(th[::50])) * L
    w2sq = circle_wasserstein(atoms, sp, 2) ** 2
    assert w2sq * 12 * n_atoms**2 == pytest.approx(inv, rel=1e-6)


def test_spectral_vs_finite_volume_second_order():
    """Point values read as cell averages differ by h^2 rho'' / 24: W between the two
    representations falls like h^2 (ratio 4 per doubling)."""
    ws = []
    for n in (64, 128, 256):
        v = von_mises(n)
        sp = CircleMeasure.from_density(v, "spectral")
        fv = CircleMeasure.from_density(v, "finite-volume")
        ws.append(circle_wasserstein(sp, fv, 2))
    ratios = np.array(ws[:-1]) / np.array(ws[1:])
    assert np.all(np.abs(ratios - 4) < 0.2), (ws, ratios)
    assert ws[-1] < 1e-4


def test_quadrature_converged():
    """Density vs density (Gauss-Legendre path): doubling the nodes changes W_p^p by
    < 1e-15 relative for integer p and ~1e-13 for p = 1.5 (|z|^1.5 is not smooth at the
    split where F^{-1} - G^{-1} vanishes: algebraic convergence there); atoms vs density
    agrees with the exact moment path."""
    a = CircleMeasure.from_density(von_mises(128, 2.0, 1.0), "spectral")
    b = CircleMeasure.from_density(von_mises(128, 3.0, 4.0), "finite-volume")
    for p in (1.0, 1.5, 2.0, 3.0):
        v16 = minimise_with_slope(lambda s, p=p: gl_cost(a, b, s, 0.0, p, 16))[0]
        v32 = minimise_with_slope(lambda s, p=p: gl_cost(a, b, s, 0.0, p, 32))[0]
        assert abs(v16 - v32) < (1e-15 if p == int(p) else 1e-12) * v32
    atoms = CircleMeasure.from_points(np.random.default_rng(0).uniform(0, L, 30))
    for p in (1.0, 2.0):
        moments = shift_cost(atoms, a, p)[0]
        quad = minimise_with_slope(lambda s, p=p: gl_cost(atoms, a, s, 0.0, p))[0]
        assert moments == pytest.approx(quad, abs=1e-14)


def test_spectral_cdf_is_the_fourier_antiderivative():
    n = 64
    v = von_mises(n, 3.0)
    m = CircleMeasure.from_density(v, "spectral")
    c = np.fft.rfft(v) / n
    c[-1] /= 2
    k = np.arange(1, c.size)

    def exact(t):
        return c[0].real * t + 2 * np.real((np.exp(1j * np.outer(t, k)) / (1j * k)) @ c[1:])

    th = np.random.default_rng(1).uniform(0, L, 500)
    assert np.max(np.abs(m.cdf(th) - (exact(th) - exact(np.zeros(1))))) < 1e-14
    t = np.random.default_rng(2).uniform(0, 1, 500)
    assert np.max(np.abs(m.cdf(m.quantile(t)) - t)) < 1e-14


def test_sampling_rate_n_w2_squared():
    """n E W2^2(mu_n, uniform) -> L^2 / 12 = pi^2 / 3 (the variance of a
    Brownian bridge on a circle of length 2 pi, mean removed: L^2 / 12). n = 500 i.i.d.
    uniform samples, R = 3000 replicas: the standard error of the mean is measured from
    the replicas (about 1.2% of the mean), so the 5% margin is > 3 standard errors and
    covers the O(1/n) finite-n bias."""
    uni = CircleMeasure.from_density(np.full(4, 1 / L), "finite-volume")
    rng = np.random.default_rng(7)
    n, reps = 500, 3000
    vals = np.array([n * circle_wasserstein(CircleMeasure.from_points(
        rng.uniform(0, L, n)), uni, 2) ** 2 for _ in range(reps)])
    mean, se = vals.mean(), vals.std(ddof=1) / np.sqrt(reps)
    target = np.pi**2 / 3
    assert 3 * se < 0.05 * target
    assert abs(mean - target) < 0.05 * target, (mean, se)


def test_modulo_rotation():
    rng = np.random.default_rng(3)
    x, a = rng.uniform(0, L, 15), rng.uniform(0.1, 1, 15)
    mu = CircleMeasure.from_points(x, a)
    rotated = CircleMeasure.from_points(x + 1.234, a)
    assert circle_wasserstein(mu, rotated, 2) > 0.1
    assert circle_wasserstein(mu, rotated, 2, modulo_rotation=True) < 1e-7
    assert circle_wasserstein(mu, rotated, 1, modulo_rotation=True) < 1e-7
    # Exact breakpoint enumeration vs a brute-force scan of rotations.
    y, b = rng.uniform(0, L, 6), rng.uniform(0.1, 1, 6)
    nu = CircleMeasure.from_points(y, b)
    exact = circle_wasserstein(mu, nu, 2, modulo_rotation=True)
    scan = min(circle_wasserstein(mu, CircleMeasure.from_points(y + f, b), 2)
               for f in np.linspace(0, L, 3001))
    assert exact <= scan + 1e-14
    assert scan - exact < 1e-4


@pytest.mark.slow
def test_modulo_rotation_densities():
    """A von Mises rotated by two grid steps (the grid search over rotations, ~10 s)."""
    v = CircleMeasure.from_density(von_mises(128, 2.0, 1.0), "spectral")
    w = CircleMeasure.from_density(von_mises(128, 2.0, 1.0 + 2 * L / 128), "spectral")
    assert circle_wasserstein(v, w, 2) > 0.05
    assert circle_wasserstein(v, w, 2, modulo_rotation=True) < 1e-6


def test_metric_axioms_and_rotation_invariance():
    rng = np.random.default_rng(11)
    for _ in range(30):
        ms = [CircleMeasure.from_points(rng.uniform(0, L, k), rng.uniform(0.1, 1, k))
              for k in rng.integers(1, 25, 3)]
        for p in (1, 2):
            ab = circle_wasserstein(ms[0], ms[1], p)
            assert ab == pytest.approx(circle_wasserstein(ms[1], ms[0], p), abs=1e-13)
            bc = circle_wasserstein(ms[1], ms[2], p)
            ac = circle_wasserstein(ms[0], ms[2], p)
            assert ac <= ab + bc + 1e-12
            phi = rng.uniform(0, L)
            r0 = CircleMeasure.from_points(ms[0].angles + phi, ms[0].weights)
            r1 = CircleMeasure.from_points(ms[1].angles + phi, ms[1].weights)
            assert circle_wasserstein(r0, r1, p) == pytest.approx(ab, abs=1e-12)
    dens = CircleMeasure.from_density(von_mises(64), "spectral")
    atoms = CircleMeasure.from_points(rng.uniform(0, L, 50))
    assert circle_wasserstein(dens, atoms, 2) == pytest.approx(
        circle_wasserstein(atoms, dens, 2), abs=1e-13)
    assert circle_wasserstein(dens, dens, 2) < 1e-7


def test_bad_input():
    mu = CircleMeasure.from_points([1.0, 2.0])
    with pytest.raises(ValueError, match="p must be"):
        circle_wasserstein(mu, mu, 0.5)
    with pytest.raises(ValueError, match="p must be"):
        circle_wasserstein_to_dirac(mu, 0.0, np.inf)
    with pytest.raises(ValueError, match="finite"):
        CircleMeasure.from_points([1.0, np.nan])
    with pytest.raises(ValueError, match="nonnegative"):
        CircleMeasure.from_points([1.0, 2.0], [0.5, -0.1])
    with pytest.raises(ValueError, match="empty"):
        CircleMeasure.from_points([])
    with pytest.raises(ValueError, match="zero"):
        CircleMeasure.from_points([1.0], [0.0])
    with pytest.raises(ValueError, match="shape"):
        CircleMeasure.from_points([1.0, 2.0], [1.0, 2.0, 3.0])
    v = von_mises(32)
    v[3] = -1e-3
    with pytest.raises(ValueError, match="negative"):
        CircleMeasure.from_density(v, "spectral")
    with pytest.raises(ValueError, match="differs from 1"):
        CircleMeasure.from_density(2 * von_mises(32), "finite-volume")
    with pytest.raises(ValueError, match="unknown density method"):
        CircleMeasure.from_density(von_mises(32), "chebyshev")
    with pytest.raises(TypeError):
        circle_wasserstein(np.array([1.0]), mu)
    # Renormalised below 1e-8: not an error.
    m = CircleMeasure.from_density(von_mises(32) * (1 + 1e-10), "spectral")
    assert m.mass_defect == pytest.approx(1e-10, rel=1e-3)


@pytest.mark.parametrize("kappa", [100.0, 300.0])
def test_concentrated_densities_a_rotation_apart(kappa):
    """Two von Mises densities of concentration kappa, 2 rad apart: the rotation is a
    transport map of cost 2 and the optimal one (mass e^{-2 kappa} far from the centres),
    so W_1 = W_2 = 2; modulo rotation 0. (Known limit, not tested: at kappa = 30 the
    computed W_2 is 2 - 8e-5; see the circle_transport docstring.)
    (The slope of C(alpha) used to be trusted where 1/rho(G^{-1}) cannot be integrated: W_2
    came out 2.84 at kappa = 100.)"""
    n = 512
    theta = 2 * np.pi * np.arange(n) / n

    def vm(c):
        f = np.exp(kappa * (np.cos(theta - c) - 1))
        return f / (f.sum() * 2 * np.pi / n)

    a = CircleMeasure.from_density(vm(0.0), "spectral")
    b = CircleMeasure.from_density(vm(2.0), "spectral")
    assert circle_wasserstein(a, b, 2) == pytest.approx(2.0, abs=1e-8)
    assert circle_wasserstein(a, b, 1) == pytest.approx(2.0, abs=1e-8)
    assert circle_wasserstein(a, b, 2, modulo_rotation=True) == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("method", ["spectral", "finite-volume"])
@pytest.mark.parametrize("p", [1, 2])
def test_atoms_vs_panels_newton_matches_the_reference(method, p, monkeypatch):
    """Atoms against a density, p = 1, 2: the one-pass sweep (C, C', C'' with warm-started
    quantiles) and Newton from the coarse shift give the minimum of the reference
    evaluation (``atoms_panels_cost``: quantiles and moments from scratch) minimised over
    [-1, 1] by the certified cutting planes, to round-off; also C and C' of the two
    evaluations at a few shifts, and with the coarse pre-solve forced on a small n."""
    from meanfield.metrics import circle_panels as cp

    rng = np.random.default_rng(3)
    nu = CircleMeasure.from_density(von_mises(64, kappa=3.0, center=2.0), method)
    for n, phi in ((3000, 0.0), (20000, 0.7)):
        x = rng.vonmises(0.5, 1.0, n) % L
        w = rng.uniform(0.5, 1.5, n) if n == 3000 else None
        mu = CircleMeasure.from_points(x, w)
        sweep = cp.PanelSweep(mu, nu, phi, p)
        for alpha in (-0.7, 0.1, 0.1 + 1e-7, 0.45):
            c, s, _ = sweep(alpha)
            c_ref, s_ref = cp.atoms_panels_cost(mu, nu, alpha, phi, p)
            assert c == pytest.approx(c_ref, rel=1e-13, abs=1e-15)
            assert s == pytest.approx(s_ref, rel=1e-9, abs=1e-12)
        ref = minimise_with_slope(
            lambda a, mu=mu, phi=phi: cp.atoms_panels_cost(mu, nu, a, phi, p), smooth=True)
        monkeypatch.setattr(cp, "COARSE_ABOVE", 1000)
        monkeypatch.setattr(cp, "COARSE_GROUPS", 256)
        new = shift_cost(mu, nu, p, phi)
        monkeypatch.undo()
        assert new[0] == pytest.approx(ref[0], rel=1e-13)
        assert new[1] == pytest.approx(ref[1], abs=1e-6)
        assert shift_cost(mu, nu, p, phi)[0] == pytest.approx(ref[0], rel=1e-13)
