"""The PDE with the value matrix ``V = c I`` (issue 20): every discretization multiplies
its velocity by c.

Checked against what does not come from the code under test:
- c = 1 is the model without weights, bit for bit (the residual and a run);
- time rescaling: ``rho_c(t)`` solves the c = 1 equation with ``kappa' = c kappa`` at
  time ``c t`` (``d/dt = c (-div(rho v) + (c kappa)^-1 Delta)``), so the run with c to t
  equals the c = 1 run to ``c t``, to the solvers' tolerance, for each discretization;
- the Jacobian's eigenvalues at the uniform state equal ``k^2 (c a_k - 1/kappa)`` (S^1)
  and ``l(l+1) (c a_l - 1/kappa)`` (S^2), with ``a`` from scipy's unscaled Bessel
  functions here (not the package's multipliers), SA and USA, c = -1, 0.5, 2;
- c < 0: every mode decays; with noise the free energy ``kappa^-1 int rho log rho -
  c E`` never increases; without noise the energy decreases and the order parameter decays
  at the linear rate ``c a_1`` (the density tends to the uniform one).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from meanfield import config as cfgmod
from meanfield.discretizations.base import Discretization
from meanfield.studies.bifurcation.stationary_linear import jacobian_eigenvalues
from solvers.steppers import integrate

# Small resolutions: the checks compare a discretization with itself.
RESOLUTION = {("circle", "spectral"): 64, ("circle", "finite-volume"): 256,
              ("sphere", "spectral"): 24, ("sphere", "finite-volume"): 642}
CLUSTERS = {
    "circle": {"kind": "mixture", "components": [
        {"kind": "von_mises", "center": 0.5, "concentration": 4.0},
        {"kind": "von_mises", "center": 3.0, "concentration": 6.0, "weight": 0.5}]},
    "sphere": {"kind": "mixture", "components": [
        {"kind": "von_mises", "center": [0.0, 0.0, 1.0], "concentration": 2.0},
        {"kind": "von_mises", "center": [0.0, 1.0, 0.0], "concentration": 3.0,
         "weight": 0.5}]},
}
PAIRS = sorted(RESOLUTION)


def build(geometry: str, method: str, *, beta: float = 1.0, kappa: float = math.inf,
          normalized: bool = True, value: float = 1.0, initial: dict | None = None,
          dt: float | str = "auto", resolution: int | None = None):
    """A discretization with value c (through ``set_parameters``) and its initial state."""
    cfg = cfgmod.validate({
        "domain": {"geometry": geometry},
        "model": {"beta": beta, "kappa": kappa, "normalized": normalized},
        "discretization": {"method": method,
                           "resolution": resolution or RESOLUTION[geometry, method]},
        "initial": initial or CLUSTERS[geometry],
        "time": {"t_final": 1.0, "save_every": 0.25, "tolerance": 1e-12, "dt": dt}})
    disc = Discretization.from_config(cfg)
    if value != 1.0:
        disc.set_parameters(value=value)
    return disc, disc.initial_density(cfg["initial"])


def run(disc, rho0: np.ndarray, times: np.ndarray, first: float = 1e-3) -> list[np.ndarray]:
    """The densities at ``times`` (straight through the driver)."""
    frames: list[np.ndarray] = []
    integrate(disc.stepper(), disc.to_state(rho0), 0.0, times, first, check=disc.check,
              on_save=lambda _t, u, _h: frames.append(disc.to_density(u)))
    return frames


def a_coefficient(geometry: str, k: np.ndarray, beta: float, normalized: bool) -> np.ndarray:
    """``a_k`` (S^1) or ``a_l`` (S^2) from scipy's unscaled Bessel functions."""
    if geometry == "circle":
        bessel = special.iv(k, beta)
        base = special.iv(0, beta)
    else:
        bessel = special.spherical_in(k, beta)
        base = special.spherical_in(0, beta)
    return bessel / beta / (base if normalized else 1.0)


@pytest.mark.parametrize("geometry,method", PAIRS)
def test_value_one_is_the_model_without_weights(geometry, method):
    """Bit for bit: a fresh build, and one that went to c = 2 and back."""
    disc, rho0 = build(geometry, method, kappa=5.0)
    u = disc.to_state(rho0)
    reference = disc.residual(u)
    again, _ = build(geometry, method, kappa=5.0)
    again.set_parameters(value=1.0)
    np.testing.assert_array_equal(again.residual(u), reference)
    again.set_parameters(value=2.0)
    assert np.abs(again.residual(u) - reference).max() > 1e-3 * np.abs(reference).max()
    again.set_parameters(value=1.0)
    np.testing.assert_array_equal(again.residual(u), reference)
    diag = disc.model.diagnostics(rho0)
    assert diag["free_energy"] == 0.2 * diag["entropy"] - diag["energy"]


@pytest.mark.parametrize("normalized", [True, False], ids=["SA", "USA"])
@pytest.mark.parametrize("geometry,method", PAIRS)
def test_value_rescales_time(geometry, method, normalized):
    """The run with c = 3 (and 0.6) to t equals the c = 1 run with kappa' = c kappa to
    c t: without noise and with it. (Not powers of 2, whose runs are the same to the
    last bit: every product by c is exact there.)"""
    fv = method == "finite-volume"
    # Finite volumes: fixed steps dt/c against dt, the same SSP-RK3 steps (round-off);
    # spectral: adaptive steps at tolerance 1e-12 (the runs take different steps).
    rtol = 1e-11 if fv else 1e-8
    times = np.array([0.05, 0.1]) if fv else np.array([0.1, 0.2])
    for value, kappa in [(3.0, math.inf), (0.6, 4.0)]:
        dt = 2e-4 if fv else "auto"
        disc, rho0 = build(geometry, method, kappa=kappa, normalized=normalized,
                           value=value, dt=dt if not fv else dt / value)
        scaled = run(disc, rho0, times, first=disc.first_step(times[-1]))
        ref, _ = build(geometry, method, kappa=kappa * value, normalized=normalized,
                       dt=dt)
        plain = run(ref, rho0, value * times, first=ref.first_step(value * times[-1]))
        for a, b in zip(scaled, plain):
            assert np.abs(a - rho0).max() > 1e-2 * np.abs(rho0).max()  # it moved
            np.testing.assert_allclose(a, b, rtol=0, atol=rtol * np.abs(b).max())


@pytest.mark.parametrize("normalized", [True, False], ids=["SA", "USA"])
@pytest.mark.parametrize("geometry", ["circle", "sphere"])
def test_uniform_state_eigenvalues_are_the_growth_rates(geometry, normalized):
    """``k^2 (c a_k - 1/kappa)`` with multiplicity 2 (S^1), ``l(l+1) (c a_l - 1/kappa)``
    with multiplicity 2l + 1 (S^2); c < 0: every eigenvalue negative."""
    beta, kappa = 1.5, 4.0
    resolution = 32 if geometry == "circle" else 14
    for value in (-1.0, 0.5, 2.0):
        disc, rho0 = build(geometry, "spectral", beta=beta, kappa=kappa,
                           normalized=normalized, value=value, resolution=resolution,
                           initial={"kind": "uniform"})
        lam = jacobian_eigenvalues(disc, disc.to_state(rho0))
        k = np.arange(1, 6)
        weight = k**2 if geometry == "circle" else k * (k + 1)
        sigma = weight * (value * a_coefficient(geometry, k, beta, normalized) - 1 / kappa)
        count = 2 * np.ones_like(k) if geometry == "circle" else 2 * k + 1
        expected = np.sort(np.repeat(sigma, count))[::-1]
        np.testing.assert_allclose(lam.imag, 0.0, atol=1e-10)
        # the five lowest modes carry the largest rates (k >= 6: below -36/kappa)
        np.testing.assert_allclose(lam.real[:expected.size], expected, rtol=1e-10)
        if value < 0:
            assert lam.real.max() < 0
        else:
            assert lam.real.max() == pytest.approx(sigma.max(), rel=1e-10)


@pytest.mark.parametrize("geometry,method", PAIRS)
def test_repulsive_mode_decays_at_the_linear_rate(geometry, method):
    """A small first mode (degree) with c = -1: ``sigma = k^2 (c a_1 - 1/kappa) < 0``,
    fitted from the order parameter of a linear run (finite volumes: to their O(h^2))."""
    beta, kappa, value = 1.0, 8.0, -1.0
    first = ({"kind": "perturbed", "mode": 1, "amplitude": 1e-6} if geometry == "circle"
             else {"kind": "perturbed", "degree": 1, "amplitude": 1e-6})
    rtol = 1e-4 if method == "spectral" else 3e-2
    for normalized in (True, False):
        disc, rho0 = build(geometry, method, beta=beta, kappa=kappa, normalized=normalized,
                           value=value, initial=first)
        times = np.linspace(0.1, 1.0, 10)
        frames = run(disc, rho0, times, first=disc.first_step(1.0))
        r = [disc.model.diagnostics(f)["order_parameter"] for f in frames]
        rate = np.polyfit(times, np.log(r), 1)[0]
        weight = 1 if geometry == "circle" else 2
        exact = weight * (value * float(a_coefficient(geometry, np.array(1), beta,
                                                      normalized)) - 1 / kappa)
        assert exact < -0.5
        assert rate == pytest.approx(exact, rel=rtol), (normalized, rate, exact)


@pytest.mark.parametrize("geometry,method", PAIRS)
def test_repulsive_free_energy_never_increases(geometry, method):
    """c = -1 with noise: ``F = kappa^-1 int rho log rho - c E`` is a Lyapunov function;
    its steps are never above round-off (1e-13 of |F|), and it falls."""
    disc, rho0 = build(geometry, method, beta=2.0, kappa=5.0, value=-1.0, normalized=False)
    times = np.linspace(0.05, 1.0, 20)
    frames = [rho0, *run(disc, rho0, times, first=disc.first_step(1.0))]
    diag = [disc.model.diagnostics(f) for f in frames]
    free = np.array([d["free_energy"] for d in diag])
    np.testing.assert_allclose(free, [0.2 * d["entropy"] + d["energy"] for d in diag],
                               rtol=1e-14)
    steps = np.diff(free)
    assert steps.max() <= 1e-13 * np.abs(free).max(), steps.max()
    assert free[-1] < free[0] - 0.1 * abs(free[0] - free[-1]) - 1e-3


@pytest.mark.parametrize("geometry,method", PAIRS)
def test_repulsive_without_noise_spreads_to_uniform(geometry, method):
    """c = -1, no noise: the interaction energy (relative to the uniform density)
    decreases at every save, to below 1e-3 of its start by t = 12, and the order parameter
    to below 1e-2 of its start (the linear rate ``c a_1`` would give 5e-3 on S^1, 5e-4 on
    S^2; the modes k >= 3 decay at ``k^2 c a_k``, slowly, and their products feed the
    first mode, so that the rate itself is checked on the linear runs above)."""
    initial = ({"kind": "von_mises", "center": 0.0, "concentration": 1.0}
               if geometry == "circle" else
               {"kind": "von_mises", "center": [0.0, 0.0, 1.0], "concentration": 1.0})
    disc, rho0 = build(geometry, method, beta=1.0, value=-1.0, initial=initial)
    times = np.linspace(1.0, 12.0, 12)
    frames = [rho0, *run(disc, rho0, times, first=disc.first_step(12.0))]
    diag = [disc.model.diagnostics(f) for f in frames]
    energy = np.array([d["energy"] for d in diag])
    r = np.array([d["order_parameter"] for d in diag])
    assert np.all(np.diff(energy) < 0)
    assert energy[-1] < 1e-3 * energy[0]
    assert r[-1] < 1e-2 * r[0]
