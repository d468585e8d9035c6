"""Particle systems: equiangular ODEs, Pre-LN vs Post-LN rates, integrator orders (RK4
with retraction; geodesic Euler-Maruyama, strong and weak), thread-count independence,
the kernel sums against numpy, and bad input."""
from __future__ import annotations

import math

import numba
import numpy as np
import pytest
from scipy import integrate

from meanfield import ConfigError
from meanfield.initial import tokens
from meanfield.model import particles as pm
from solvers.particles import direct as sp
from solvers import steppers


def pair_products(positions):
    """<x_i, x_j> for i != j of every saved state: (time, n (n - 1))."""
    g = np.einsum("tid,tjd->tij", positions, positions)
    return g[:, ~np.eye(positions.shape[1], dtype=bool)]


def slope(x, y):
    return float(np.polyfit(x, y, 1)[0])


# ---------------------------------------------------------------------------------------
# (a) equiangular tokens follow the ODEs of docs/conventions.md.

@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("beta", [0.5, 2.0])
def test_orthogonal_tokens_follow_the_equiangular_ode(normalized, beta):
    n = d = 16
    model = pm.AttentionParticles(beta, normalized)
    x0 = tokens.equiangular_tokens(n, d, 0.0)
    assert np.array_equal(x0, np.eye(n))
    run = pm.simulate(model, x0, np.linspace(0.1, 10.0, 100), dt=0.005)
    ode = integrate.solve_ivp(model.equiangular_rhs(n), (0, 10), [0.0], t_eval=run.times,
                              method="DOP853", rtol=1e-12, atol=1e-14)
    err = np.abs(pair_products(run.positions) - ode.y[0][:, None]).max()
    assert err <= 1e-8, err
    assert ode.y[0][-1] > 0.999  # the run reaches the clustered regime


def test_hardmax_equiangular_ode_and_rotated_start():
    n, d = 8, 12
    model = pm.HardmaxParticles()
    x0 = tokens.equiangular_tokens(n, d, 0.2, seed=4)  # turned by a random rotation
    assert np.abs(pair_products(x0[None]) - 0.2).max() < 1e-14
    run = pm.simulate(model, x0, np.linspace(0.5, 5.0, 10), dt=0.01)
    ode = integrate.solve_ivp(model.equiangular_rhs(n), (0, 5), [0.2], t_eval=run.times,
                              method="DOP853", rtol=1e-12, atol=1e-14)
    assert np.abs(pair_products(run.positions) - ode.y[0][:, None]).max() < 1e-8


# ---------------------------------------------------------------------------------------
# (b) Post-LN: 1 - rho ~ e^{-2t}; Pre-LN: 1 - rho ~ t^{-2} (and the coupled rho, r ODE).

def test_post_ln_gap_decays_with_rate_two_and_pre_ln_like_t_to_minus_two():
    n, beta = 16, 1.0
    x0 = tokens.equiangular_tokens(n, n, 0.0)
    post = pm.simulate(pm.AttentionParticles(beta), x0, np.linspace(0.5, 10.0, 20),
                       tolerance=1e-10)
    gap = np.array([pm.correlation_gap(x) for x in post.positions])
    late = post.times >= 4.0  # 1 - rho from 7e-3 to 4e-9
    rate = -slope(post.times[late], np.log(gap[late]))
    assert abs(rate - 2.0) <= 0.05 * 2.0, rate

    pre_model = pm.PreLNParticles(beta)
    pre = pm.simulate(pre_model, x0, np.geomspace(1.0, 1000.0, 61), tolerance=1e-10)
    gap = np.array([pm.correlation_gap(x) for x in pre.positions])
    late = pre.times >= 100.0  # the radius grows like t: rate -2 t/(t + c)
    power = slope(np.log(pre.times[late]), np.log(gap[late]))
    assert abs(power + 2.0) <= 0.05 * 2.0, power
    # ... and the particles follow the reduced (rho, r) system.
    ode = integrate.solve_ivp(pre_model.equiangular_rhs(n), (0, 1000), [0.0, 1.0],
                              t_eval=pre.times, method="DOP853", rtol=1e-12, atol=1e-16)
    assert np.abs(gap[1:] / (1 - ode.y[0][1:]) - 1).max() < 1e-6
    radius = np.linalg.norm(pre.positions, axis=2)
    assert np.abs(radius - ode.y[1][:, None]).max() < 1e-6 * radius.max()


# ---------------------------------------------------------------------------------------
# (c) RK4 with retraction: order 4, unit norms; step doubling meets its tolerance.

def test_retracted_rk4_is_fourth_order_and_keeps_norms():
    model = pm.AttentionParticles(4.0)
    x0 = tokens.uniform_tokens(64, 3, seed=1)
    scheme = steppers.RetractedRK4(model.velocity)

    def solve(steps):
        x, worst = x0, 0.0
        for _ in range(steps):
            x = scheme.step(x, 1.0 / steps)
            worst = max(worst, np.abs(np.linalg.norm(x, axis=1) - 1).max())
        return x, worst

    reference, _ = solve(1024)
    errors, worst = [], 0.0
    for steps in (8, 16, 32, 64):
        x, w = solve(steps)
        errors.append(np.abs(x - reference).max())
        worst = max(worst, w)
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(orders > 3.7) and np.all(orders < 4.4), orders
    assert worst <= 1e-12

    run = pm.simulate(model, x0, [1.0], tolerance=1e-9)
    assert np.abs(run.positions[-1] - reference).max() < 1e-7
    assert np.abs(np.linalg.norm(run.positions, axis=2) - 1).max() <= 1e-12


# ---------------------------------------------------------------------------------------
# (d) geodesic Euler-Maruyama: strong order 1/2, weak order 1.

def test_geodesic_euler_maruyama_strong_order_one_half():
    n, kappa, t_final = 300, 1.0, 1.0
    model = pm.AttentionParticles(2.0)
    x0 = tokens.uniform_tokens(n, 3, seed=3)
    scheme = steppers.GeodesicEulerMaruyama(model.velocity, kappa)
    fine = 2**11
    dw = np.random.Generator(np.random.PCG64(7)).standard_normal((fine, n, 3))
    dw *= math.sqrt(t_final / fine)

    def solve(steps):  # driven by the same Brownian path, increments summed
        increments = dw.reshape(steps, fine // steps, n, 3).sum(axis=1)
        x = x0
        for k in range(steps):
            x = scheme.step(x, t_final / steps, increments[k])
        assert np.abs(np.linalg.norm(x, axis=1) - 1).max() <= 1e-12
        return x

    reference = solve(fine)
    steps = np.array([8, 16, 32, 64, 128])
    errors = [np.linalg.norm(solve(s) - reference, axis=1).mean() for s in steps]
    order = slope(np.log(t_final / steps), np.log(errors))
    # Measured 0.52 (mean over 300 particles); 0.45 leaves room for the sampling noise.
    assert order >= 0.45, (order, errors)


def test_geodesic_euler_maruyama_weak_order_one_on_brownian_motion():
    """E<X_t, e> = e^{-2t/kappa} <X_0, e> for Brownian motion on S^2. The scheme's own mean
    is exactly (E cos|u|)^N <X_0, e> (the sine part averages out), |u| = sqrt(2h/kappa) R
    with R Rayleigh(1); its error against the exact mean is first order in h.
    Common random numbers make the differences between levels precise: each is checked
    against the scheme's exact difference within 4 standard errors, and their fitted
    order lies within 0.8..1.2 (the finest difference is ~9 standard errors from 0)."""
    kappa, t_final, samples = 1.0, 0.5, 200_000
    e = np.array([0.0, 0.0, 1.0])
    scheme = steppers.GeodesicEulerMaruyama(None, kappa)
    levels = np.array([4, 8, 16, 32])
    fine = levels[-1]
    dw = np.random.Generator(np.random.PCG64(12345)).standard_normal((fine, samples, 3))
    dw *= math.sqrt(t_final / fine)

    def mean_cos(h):
        a = math.sqrt(2 * h / kappa)
        return integrate.quad(lambda r: math.cos(a * r) * r * math.exp(-r * r / 2), 0,
                              np.inf)[0]

    values = []
    for steps in levels:
        increments = dw.reshape(steps, fine // steps, samples, 3).sum(axis=1)
        x = np.tile(e, (samples, 1))
        for k in range(steps):
            x = scheme.step(x, t_final / steps, increments[k])
        values.append(x @ e)
    h = t_final / levels
    predicted = np.array([mean_cos(hh) ** s for hh, s in zip(h, levels)])
    exact = math.exp(-2 * t_final / kappa)
    assert 0.95 <= slope(np.log(h), np.log(np.abs(predicted - exact))) <= 1.05
    for k in range(len(levels) - 1):
        diff = values[k] - values[k + 1]
        se = diff.std() / math.sqrt(samples)
        assert abs(diff.mean() - (predicted[k] - predicted[k + 1])) <= 4 * se
    means = np.array([v.mean() for v in values])
    order = slope(np.log(h[:-1]), np.log(np.abs(np.diff(means))))
    assert 0.8 <= order <= 1.2, order
    assert np.abs(means - predicted).max() <= 4 * values[0].std() / math.sqrt(samples)


# ---------------------------------------------------------------------------------------
# (e) same seed, 1 or 2 numba threads: the same trajectory bit for bit.

@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 numba threads")
def test_runs_are_bit_identical_with_one_and_two_threads():
    def runs():
        out = []
        x0 = tokens.uniform_tokens(200, 3, seed=11)
        out.append(pm.simulate(pm.AttentionParticles(5.0), x0, [0.05, 0.1], kappa=4.0,
                               dt=0.01, seed=11).positions)
        out.append(pm.simulate(pm.AttentionParticles(1.0, False), x0, [0.2],
                               dt=0.05).positions)
        out.append(pm.simulate(pm.HardmaxParticles(), x0, [0.1], kappa=8.0, dt=0.02,
                               seed=2).positions)
        x1 = tokens.uniform_tokens(70, 40, seed=5)  # the BLAS backend (d > 32)
        out.append(pm.simulate(pm.AttentionParticles(3.0), x1, [0.1], kappa=10.0,
                               dt=0.02, seed=5).positions)
        return out

    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = runs()
        numba.set_num_threads(2)
        two = runs()
        again = runs()
    finally:
        numba.set_num_threads(before)
    for a, b, c in zip(one, two, again):
        assert np.array_equal(a, b) and np.array_equal(b, c)
    assert not np.array_equal(one[0][-1], pm.simulate(
        pm.AttentionParticles(5.0), one[0][0], [0.1], kappa=4.0, dt=0.01,
        seed=12).positions[-1])  # and another seed gives another path


# ---------------------------------------------------------------------------------------
# (f) the direct sums against plain numpy.

def reference_sums(q, y, beta):
    g = beta * (q @ y.T)
    w = np.exp(g)  # no shift: fine for the betas used here (|g| <= 100)
    return w @ y, w.sum(axis=1)


@pytest.mark.parametrize("backend", ["numba", "blas"])
@pytest.mark.parametrize("d", [2, 3, 17, 70])
def test_kernel_sums_match_numpy(backend, d):
    rng = np.random.default_rng(d)
    keys = sp.normalize_rows(rng.standard_normal((1100, d)))
    queries = sp.normalize_rows(rng.standard_normal((45, d)))
    # Keys sorted by closeness to the first query: its row maximum rises tile by tile.
    keys = keys[np.argsort(keys @ queries[0])]
    for q, y in ((queries, keys), (keys[:300], keys[:300])):
        for beta in (0.0, 1.0, 100.0):
            s, z, shift = sp.exp_kernel_sums(q, y, beta, backend)
            s_ref, z_ref = reference_sums(q, y, beta)
            # 1e-13, or the conditioning of e^{beta t} when larger: a dot product of
            # unit vectors is exact to d eps in any order, so e^{beta <q, y>} only to
            # beta d eps (2e-13 at d = 3, 3e-12 at d = 70 for beta = 100).
            tol = max(1e-13, 2 * beta * d * np.finfo(float).eps)
            scale = np.exp(shift)
            assert np.abs(scale * z / z_ref - 1).max() <= tol
            assert (np.abs(scale[:, None] * s - s_ref).max(axis=1)
                    <= tol * np.abs(s_ref).max(axis=1)).all()
            mean = s / z[:, None]
            assert np.abs(mean - s_ref / z_ref[:, None]).max() <= tol
            assert np.all(z >= 1.0)


def test_kernel_sums_survive_large_beta():
    x = tokens.uniform_tokens(300, 3, seed=8)
    for backend in ("numba", "blas"):
        s, z, shift = sp.exp_kernel_sums(x, x, 1e4, backend)
        assert np.all(np.isfinite(s)) and np.all(z >= 1.0)
        assert np.allclose(shift, 1e4, rtol=1e-14)  # the self term: beta <x, x> = beta


def test_hardmax_means_match_numpy_with_ties():
    rng = np.random.default_rng(2)
    x = sp.normalize_rows(rng.standard_normal((90, 4)))
    x[10] = x[3]  # x_3 and x_10 are each other's nearest (distance 0)
    x[20] = x[21] = x[5] * np.array([1, 1, 1, -1])  # two tied nearest for some tokens
    g = x @ x.T
    np.fill_diagonal(g, -np.inf)
    mask = g >= g.max(axis=1, keepdims=True) - 1e-12
    expected = (mask @ x) / mask.sum(axis=1, keepdims=True)
    for backend in ("numba", "blas"):
        got = sp.hardmax_means(x, None, 1e-12, backend)
        assert np.abs(got - expected).max() <= 1e-14
    assert np.array_equal(sp.hardmax_means(x, backend="numba")[3], x[10])


# ---------------------------------------------------------------------------------------
# (g) bad input: ConfigError naming the key.

def test_bad_input_names_the_key():
    good = tokens.uniform_tokens(8, 3, seed=0)
    model = pm.AttentionParticles(1.0)
    nan = good.copy()
    nan[2, 1] = np.nan
    cases = [
        (lambda: tokens.uniform_tokens(10, 1), "domain.dim"),
        (lambda: tokens.uniform_tokens(1, 3), "particles.n"),
        (lambda: pm.simulate(model, good[:, :1] / np.abs(good[:, :1]), [1.0]), "domain.dim"),
        (lambda: pm.simulate(model, good[:1], [1.0]), "particles.n"),
        (lambda: pm.simulate(model, nan, [1.0]), "initial"),
        (lambda: pm.simulate(model, np.where(np.isnan(nan), np.inf, nan), [1.0]), "initial"),
        (lambda: pm.simulate(model, 2 * good, [1.0]), "initial"),
        (lambda: pm.simulate(model, good, [1.0], kappa=0.0, dt=0.1), "model.kappa"),
        (lambda: pm.simulate(model, good, [1.0], kappa=-1.0, dt=0.1), "model.kappa"),
        (lambda: pm.simulate(model, good, [1.0], kappa=math.nan, dt=0.1), "model.kappa"),
        (lambda: pm.simulate(model, good, [1.0], kappa=2.0), "time.dt"),
        (lambda: pm.simulate(model, good, [1.0], dt=0.0), "time.dt"),
        (lambda: pm.simulate(pm.PreLNParticles(1.0), good, [1.0], kappa=2.0, dt=0.1),
         "model.kappa"),
        (lambda: pm.AttentionParticles(-800.0, normalized=False), "model.beta"),  # e^|beta|
        (lambda: pm.AttentionParticles(math.inf), "model.beta"),
        (lambda: pm.AttentionParticles(800.0, normalized=False), "model.beta"),
        (lambda: tokens.equiangular_tokens(5, 4), "particles.n"),
        (lambda: tokens.equiangular_tokens(4, 4, rho=1.0), "initial.rho"),
        (lambda: tokens.equiangular_tokens(4, 4, rho=-0.5), "initial.rho"),
    ]
    for call, key in cases:
        with pytest.raises(ConfigError) as info:
            call()
        assert info.value.key == key, (key, str(info.value))
