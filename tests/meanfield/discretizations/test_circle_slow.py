"""Longer checks of the circle solvers (``pytest -m slow``)."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import fitted_rate
from test_circle_growth import exact_rate, run
from test_circle_physics import _series_values, _smooth_problem

from meanfield import evolve

pytestmark = pytest.mark.slow


def test_finite_volume_order_two_persists_on_fine_grids():
    t_final = 2.0
    ref = _smooth_problem("spectral", 512, t_final).density.values[-1]
    coeffs = np.fft.rfft(ref) / ref.size
    errors = []
    sizes = [256, 512, 1024, 2048]
    for n in sizes:
        d = _smooth_problem("finite-volume", n, t_final).density.values[-1]
        dx = 2 * np.pi / n
        errors.append(np.sum(np.abs(d - _series_values(coeffs, dx * np.arange(n), dx))) * dx)
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(orders >= 1.9), orders


@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("beta,kappa", [(10.0, 20.0), (6.0, 1.0), (0.1, 0.5)])
def test_growth_rates_more_modes_and_betas(beta, kappa, normalized):
    # Round-off seeds every mode: keep the fastest one (USA at beta = 10: sigma_5 ~ 1900)
    # from growing by more than e^5, or it swamps the mode being measured.
    fastest = max(exact_rate(j, beta, kappa, normalized) for j in range(1, 64))
    for k in (1, 2, 3):
        sigma = exact_rate(k, beta, kappa, normalized)
        # ... and keep a decaying mode well above round-off (amplitude 1e-6 e^{-8}).
        t_final = min(1.5, 5.0 / max(fastest, 1e-9), 8.0 / abs(sigma))
        for method, n, rtol in [("spectral", 128, 1e-5), ("finite-volume", 512, 1e-2)]:
            ds = run(method, n, beta, kappa, normalized, k, t_final)
            assert fitted_rate(ds, k) == pytest.approx(sigma, rel=rtol), (method, k)


def test_noisy_kuramoto_finite_volume_fine_grid(kuramoto_r):
    ds = evolve({"model": {"beta": 0.0, "kappa": 4.0},
                 "discretization": {"method": "finite-volume", "resolution": 1024},
                 "initial": {"kind": "von_mises", "concentration": 3.3},
                 "time": {"t_final": 15.0, "save_every": 1.0}})
    assert abs(ds.order_parameter.values[-1] - kuramoto_r(4.0)) < 1e-5
    assert np.abs(ds.mass.values - 1).max() < 1e-12
