"""Acceptance 2-5 (issue 2): noisy Kuramoto equilibria, convergence studies, conservation,
positivity, free-energy decay, and beta = 50 clustering."""
from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield import SolverError, evolve
from meanfield.model.kernels import growth_rate


def kuramoto(method, resolution, kappa, t_final, initial):
    return evolve({
        "model": {"beta": 0.0, "kappa": kappa},
        "discretization": {"method": method, "resolution": resolution},
        "initial": initial,
        "time": {"t_final": t_final, "save_every": t_final / 40, "tolerance": 1e-11},
    })


@pytest.mark.parametrize("method,resolution,tol,t_final", [("spectral", 64, 1e-6, 40.0),
                                                           ("finite-volume", 512, 1e-3, 15.0)])
def test_noisy_kuramoto_relaxes_to_self_consistent_order_parameter(method, resolution, tol,
                                                                    t_final, kuramoto_r):
    r_star = kuramoto_r(4.0)  # root of r = I_1(4r)/I_0(4r), by brentq
    assert r_star == pytest.approx(0.8314620, abs=1e-7)
    ds = kuramoto(method, resolution, 4.0, t_final,
                  {"kind": "von_mises", "center": 0.7, "concentration": 2.0})
    assert abs(ds.order_parameter.values[-1] - r_star) <= tol
    # and the profile is the von Mises exp(kappa r cos(theta - theta_0)) it predicts
    theta0 = math.atan2(*ds.mean_direction.values[-1][::-1])
    th = ds.theta.values
    profile = np.exp(4.0 * r_star * np.cos(th - theta0))
    profile /= np.sum(profile * ds.weights.values)
    assert np.abs(ds.density.values[-1] - profile).max() <= 50 * tol


def test_noisy_kuramoto_below_threshold_reaches_uniform():
    ds = kuramoto("spectral", 64, 1.5, 60.0, {"kind": "perturbed", "mode": 1,
                                              "amplitude": 0.2})
    r = ds.order_parameter.values
    assert r[-1] < 1e-4
    assert np.abs(ds.density.values[-1] - 1 / (2 * np.pi)).max() < 1e-4
    # the late decay is the linear rate sigma_1 = 1/2 - 1/kappa < 0
    late = ds.time.values > 30
    rate = np.polyfit(ds.time.values[late], np.log(r[late]), 1)[0]
    assert rate == pytest.approx(growth_rate(1, 0.0, 1.5, True), rel=1e-4)


def _smooth_problem(method, n, t_final):
    return evolve({
        "model": {"beta": 8.0, "kappa": 50.0, "normalized": True},
        "discretization": {"method": method, "resolution": n},
        "initial": {"kind": "mixture", "components": [
            {"kind": "perturbed", "mode": 1, "amplitude": 0.8},
            {"kind": "perturbed", "mode": 2, "amplitude": 0.5, "phase": 0.4}]},
        "time": {"t_final": t_final, "save_every": t_final, "tolerance": 1e-13},
    })


def _series_values(coeffs, theta, dx=None):
    """Values (or, with dx, cell averages) of a real Fourier series at theta."""
    k = np.arange(coeffs.size)
    c = coeffs * np.where(k == 0, 1.0, 2.0)
    if dx is not None:
        c = c * np.sinc(k * dx / (2 * np.pi))
    return np.real(np.exp(1j * np.outer(theta, k)) @ c)


def test_spectral_error_decays_exponentially_with_resolution():
    ref = _smooth_problem("spectral", 256, 6.0).density.values[-1]
    coeffs = np.fft.rfft(ref) / ref.size
    sizes = [52, 58, 64, 72, 80]
    errors = []
    for n in sizes:
        d = _smooth_problem("spectral", n, 6.0).density.values[-1]
        errors.append(np.abs(d - _series_values(coeffs, 2 * np.pi * np.arange(n) / n)).max())
    errors = np.array(errors)
    resolved = errors > 1e-13  # above round-off
    slope = np.polyfit(np.array(sizes)[resolved], np.log(errors[resolved]), 1)[0]
    assert resolved.sum() >= 3
    assert slope < -0.3  # error ~ exp(-0.3 n) or faster (measured: -0.41): exponential
    assert np.all(np.diff(errors[resolved]) < 0)
    assert errors[-1] < 1e-12


def test_finite_volume_is_second_order_against_spectral_reference():
    t_final = 2.0
    ref = _smooth_problem("spectral", 256, t_final).density.values[-1]
    coeffs = np.fft.rfft(ref) / ref.size
    sizes = [64, 128, 256, 512]
    errors = []
    for n in sizes:
        d = _smooth_problem("finite-volume", n, t_final).density.values[-1]
        dx = 2 * np.pi / n
        avg = _series_values(coeffs, dx * np.arange(n), dx)
        errors.append(np.sum(np.abs(d - avg)) * dx)  # L1 error against cell averages
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(orders >= 1.8), orders


@pytest.mark.parametrize("method,resolution", [("spectral", 128), ("finite-volume", 256)])
@pytest.mark.parametrize("normalized", [False, True], ids=["USA", "SA"])
def test_mass_positivity_and_free_energy(method, resolution, normalized):
    ds = evolve({
        "model": {"beta": 2.0, "kappa": 6.0, "normalized": normalized},
        "discretization": {"method": method, "resolution": resolution},
        "initial": {"kind": "mixture", "components": [
            {"kind": "von_mises", "center": 0.5, "concentration": 3.0},
            {"kind": "von_mises", "center": 3.5, "concentration": 5.0, "weight": 0.5}]},
        "time": {"t_final": 8.0, "save_every": 0.05},
    })
    mass = ds.mass.values
    assert np.abs(mass / mass[0] - 1).max() <= 1e-12
    if method == "finite-volume":
        assert ds.density.values.min() >= 0.0
    if not normalized:  # USA with noise is a Wasserstein gradient flow of F
        free = ds.free_energy.values
        assert np.diff(free).max() <= 1e-13 * np.abs(free).max()
        assert free[-1] < free[0]


def _clusters(ds, width=0.15):
    """Local maxima of the last density and the mass within +-width of them."""
    rho = ds.density.values[-1]
    th, w = ds.theta.values, ds.weights.values
    peaks = np.flatnonzero((rho > np.roll(rho, 1)) & (rho >= np.roll(rho, -1))
                           & (rho > 1.0))
    near = np.zeros(rho.size, bool)
    for p in peaks:
        near |= np.abs(np.angle(np.exp(1j * (th - th[p])))) <= width
    return peaks, float(np.sum((rho * w)[near]))


MIXTURE = {"kind": "mixture", "components": [
    {"kind": "von_mises", "center": 0.0, "concentration": 8.0},
    {"kind": "von_mises", "center": 2.0, "concentration": 8.0},
    {"kind": "von_mises", "center": 4.0, "concentration": 8.0, "weight": 0.6}]}


@pytest.mark.filterwarnings("error")  # any overflow warning fails the test
def test_beta_50_clusters_without_overflow_finite_volume():
    ds = evolve({"model": {"beta": 50.0, "normalized": True},
                 "discretization": {"method": "finite-volume", "resolution": 512},
                 "initial": MIXTURE, "time": {"t_final": 15.0, "save_every": 0.5}})
    assert np.all(np.isfinite(ds.density.values)) and np.all(np.isfinite(ds.energy.values))
    peaks, mass_near = _clusters(ds)
    assert 1 <= len(peaks) <= 3
    assert mass_near > 0.99  # all mass sits in narrow clusters
    assert ds.density.values.min() >= 0


@pytest.mark.filterwarnings("error")
def test_beta_50_usa_runs_without_overflow():
    # USA velocities carry e^50 ~ 5e21: the time scale is e^-50.
    ds = evolve({"model": {"beta": 50.0, "normalized": False},
                 "discretization": {"method": "spectral", "resolution": 128},
                 "initial": {"kind": "von_mises", "concentration": 2.0},
                 "time": {"t_final": 2e-21, "save_every": 2e-22}})
    assert np.all(np.isfinite(ds.density.values))
    assert np.isfinite(ds.energy.values).all() and ds.energy.values[-1] > ds.energy.values[0]


def test_beta_50_spectral_resolved_run_forms_clusters():
    ds = evolve({"model": {"beta": 50.0, "normalized": True},
                 "discretization": {"method": "spectral", "resolution": 512},
                 "initial": MIXTURE, "time": {"t_final": 4.0, "save_every": 0.1}})
    assert ds.order_parameter.values[-1] > ds.order_parameter.values[0]
    assert ds.density.values[-1].max() > 2 * ds.density.values[0].max()


def test_beta_50_spectral_underresolved_stops_with_advice():
    with pytest.raises(SolverError, match="raise discretization.resolution"):
        evolve({"model": {"beta": 50.0, "normalized": True},
                "discretization": {"method": "spectral", "resolution": 128},
                "initial": MIXTURE, "time": {"t_final": 10.0, "save_every": 0.1}})


def test_spectral_blow_up_from_too_large_fixed_step_is_reported():
    with pytest.raises(SolverError, match="time.dt|resolution"):
        evolve({"model": {"beta": 5.0, "normalized": False},
                "discretization": {"method": "spectral", "resolution": 64},
                "initial": {"kind": "von_mises", "concentration": 3.0},
                "time": {"t_final": 20.0, "save_every": 1.0, "dt": 1.0}})


def test_finite_volume_fixed_step_above_stability_bound_is_refused():
    with pytest.raises(SolverError, match="lower time.dt"):
        evolve({"model": {"beta": 1.0, "kappa": 2.0},
                "discretization": {"method": "finite-volume", "resolution": 256},
                "time": {"t_final": 1.0, "save_every": 0.5, "dt": 0.1}})
