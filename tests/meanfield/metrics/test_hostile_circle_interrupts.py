"""Issue 31, "every compiled loop that can run for more than a second interruptible": the
panel kernels of ``circle_measures`` (quantiles and CDF of a density) took every point
in one compiled call: the quadrature of W_p (p != 2) of n tokens against a density asks
for n x 16 x 2 quantiles at once (~10 s a call at n = 1e6, spectral panels, 260-460 ns a
point). They now run ``KERNEL_CALL`` points a call; the quantiles' warm start (the
previous level's panel and Newton solution) is carried from call to call, so the result
is that of one call bit for bit; a SIGINT during a call is raised after it."""
from __future__ import annotations

import signal

import numpy as np
import pytest

from meanfield.metrics import circle_measures as cm


@pytest.fixture(scope="module")
def density():
    grid = np.linspace(0, 2 * np.pi, 256, endpoint=False)
    values = np.exp(2 * np.cos(grid - 1.0)) + 0.05 * np.cos(3 * grid) + 0.1
    return values / (values.mean() * 2 * np.pi)


@pytest.mark.parametrize("method", ["spectral", "finite-volume"])
def test_quantiles_and_cdf_in_many_calls_have_the_bits_of_one(monkeypatch, density,
                                                               method):
    mu = cm.CircleMeasure.from_density(density, method)
    rng = np.random.default_rng(1)
    t = np.sort(rng.uniform(0, 1, 20_001))  # sorted: the warm starts matter
    theta = rng.uniform(0, 2 * np.pi, 20_001)
    monkeypatch.setattr(cm, "KERNEL_CALL", 1 << 40)
    whole, cdf = mu.panel_quantile(t), mu.cdf(theta)
    monkeypatch.setattr(cm, "KERNEL_CALL", 333)
    chunked = mu.panel_quantile(t)
    assert all(np.array_equal(a, b) for a, b in zip(whole, chunked))
    assert np.array_equal(mu.cdf(theta), cdf)
    # and they are quantiles: F(G^{-1}(t)) = t (to the Newton solve's 1e-10 in u)
    assert np.max(np.abs(mu.cdf(chunked[2]) - t)) < 1e-9


def test_a_sigint_during_the_quantiles_stops_after_that_call(monkeypatch, density):
    mu = cm.CircleMeasure.from_density(density, "spectral")
    cheb, cdf, quantile = cm.make_panel_kernels()
    started, completed = [], []

    def spy(*args):
        started.append(1)
        if len(started) == 1:
            signal.raise_signal(signal.SIGINT)
        quantile(*args)
        completed.append(1)

    monkeypatch.setattr(cm, "make_panel_kernels", lambda: (cheb, cdf, spy))
    monkeypatch.setattr(cm, "KERNEL_CALL", 1000)
    with pytest.raises(KeyboardInterrupt):
        mu.quantile(np.linspace(0, 1, 10_000))
    assert started == completed == [1]


# --- the sweeps of W_p on the circle: atoms / atoms (circle_atoms) and atoms / panels
# (circle_panels), one pass over n + m breakpoints or n + 1 levels; measured at n = 1e7
# (2 loaded cores) one call was 1.7 s (atoms) and 3.1 s (panels). Now passes of
# SWEEP_CALL points a call, the carried state in an array: the same bits.

def test_the_atom_sweep_in_many_calls_has_the_bits_of_one(monkeypatch):
    from meanfield.metrics import circle_atoms as ca

    rng = np.random.default_rng(2)
    mu = cm.CircleMeasure.from_points(rng.vonmises(0.5, 2.0, 5000) % (2 * np.pi))
    nu = cm.CircleMeasure.from_points(rng.uniform(0, 2 * np.pi, 5007))
    cases = [(0.3, 0.0, 2.0, 0.0), (-0.41, 0.2, 3.0, 0.0), (0.05, 0.0, 1.5, ca.SNAP)]
    monkeypatch.setattr(ca, "SWEEP_CALL", 1 << 40)
    whole = [ca._scaled(mu, nu, *case) for case in cases]
    monkeypatch.setattr(ca, "SWEEP_CALL", 97)
    assert [ca._scaled(mu, nu, *case) for case in cases] == whole
    # and the value is C(alpha) of the plan's pieces (atoms_cost, an independent sum)
    m, value, slope = whole[0]
    plain = ca.atoms_cost(mu, nu, 0.3, 0.0, 2.0)  # (value, right slope)
    assert np.exp(m) * np.array([value, slope]) == pytest.approx(plain, rel=1e-12)


@pytest.mark.parametrize("method", ["spectral", "finite-volume"])
def test_the_panel_sweep_in_many_calls_has_the_bits_of_one(monkeypatch, density, method):
    from meanfield.metrics import circle_panels as cp

    rng = np.random.default_rng(3)
    mu = cm.CircleMeasure.from_points(rng.vonmises(0.5, 2.0, 5000) % (2 * np.pi))
    nu = cm.CircleMeasure.from_density(density, method)
    for p in (1, 2):
        one, many = cp.PanelSweep(mu, nu, 0.1, p), cp.PanelSweep(mu, nu, 0.1, p)
        for alpha in (0.2, 0.2004, -0.3):  # cold, warm (moved by 4e-4), cold
            monkeypatch.setattr(cp, "SWEEP_CALL", 1 << 40)
            whole = one(alpha)
            monkeypatch.setattr(cp, "SWEEP_CALL", 333)
            assert many(alpha) == whole


def test_a_sigint_during_a_sweep_stops_after_that_call(monkeypatch):
    from meanfield.metrics import circle_atoms as ca

    rng = np.random.default_rng(4)
    mu = cm.CircleMeasure.from_points(rng.uniform(0, 2 * np.pi, 3000))
    nu = cm.CircleMeasure.from_points(rng.uniform(0, 2 * np.pi, 3000))
    sweep, started, completed = ca.make_sweep_kernel(), [], []

    def spy(*args):
        started.append(1)
        if len(started) == 1:
            signal.raise_signal(signal.SIGINT)
        sweep(*args)
        completed.append(1)

    monkeypatch.setattr(ca, "make_sweep_kernel", lambda: spy)
    monkeypatch.setattr(ca, "SWEEP_CALL", 1000)
    with pytest.raises(KeyboardInterrupt):
        ca._scaled(mu, nu, 0.1, 0.0, 2.0)
    assert started == completed == [1]
