"""The contraction study on zonal densities (``meanfield.studies.transport.
contraction_zonal``): the exact W_2 of zonal frames, the rates against their closed
forms, and the refusals.

Margins: those of the circle's and the sphere's tests (``test_contraction``): 1 % with
noise, 5 % without (measured here: 2e-4 and 3e-5; above the threshold the window's top
``fit_below`` leaves a nonlinear bias of about fit_below / 2, 2.5 % at 0.1, 0.5 % at
0.01).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special

import meanfield
from meanfield.errors import ConfigError
from meanfield.studies.transport import contraction_zonal as cz
from meanfield.studies.transport.convergence import frame_dataset
from meanfield.discretizations.base import Discretization
from meanfield import config as cfgmod
from solvers.grids.zonal import log_measure_density

DIM = 8
CONFIG = {"domain": {"geometry": "zonal", "dim": DIM},
          "model": {"beta": 1.0, "kappa": 4.0},
          "initial": {"kind": "von_mises", "concentration": 3.0},
          "discretization": {"resolution": 64},
          "time": {"t_final": 5.0, "save_every": 0.25, "dt": 0.01},
          "contraction": {"beta": [1.0], "sources": ["pde"]},
          "particles": {"n": 300}}


def frame(dim: int, concentration: float, resolution: int = 64):
    cfg = cfgmod.validate({**CONFIG, "domain": {"geometry": "zonal", "dim": dim},
                           "discretization": {"resolution": resolution},
                           "initial": {"kind": "von_mises",
                                       "concentration": concentration}})
    solver = Discretization.from_config(cfg, threads=1)
    return frame_dataset(solver, solver.to_state(solver.initial_density(cfg["initial"])))


def test_w2_to_the_poles_against_quad():
    """W_2(mu, delta_{+-e})^2 = int angle(x, +-e)^2 dmu, the integral by quad."""
    c = 3.0
    f = lambda th: math.exp(log_measure_density(DIM, th) + c * (math.cos(th) - 1))
    total = integrate.quad(f, 0, math.pi, epsabs=1e-15, epsrel=1e-13)[0]
    for sign, angle in ((1.0, lambda th: th), (-1.0, lambda th: math.pi - th)):
        exact = math.sqrt(integrate.quad(lambda th: angle(th) ** 2 * f(th), 0, math.pi,
                                         epsabs=1e-15, epsrel=1e-13)[0] / total)
        got = cz.wasserstein2(frame(DIM, c), np.array([[sign]]))
        assert got == pytest.approx(exact, rel=1e-7)


def test_w2_of_two_zonal_frames_is_the_spheres_on_s2():
    """d = 3: the W_2 of two von Mises-Fisher frames about e against
    ``meanfield.metrics.sphere_zonal`` on the sphere's own grid (an independent exact
    method: Newton on the Legendre CDFs)."""
    from meanfield.metrics.wasserstein import wasserstein

    sphere = {**CONFIG, "domain": {"geometry": "sphere"}, "model": {"beta": 1.0},
              "discretization": {"resolution": 48}, "time": {"t_final": 1e-6,
                                                             "save_every": 1e-6}}
    frames = [meanfield.evolve({**sphere, "initial": {"kind": "von_mises",
                                                       "center": [0.0, 0.0, 1.0],
                                                       "concentration": c}}).isel(time=0)
              for c in (2.0, 5.0)]
    exact = wasserstein(frames[0], frames[1], 2.0, method="exact")
    assert cz.wasserstein2(frame(3, 2.0, 48), frame(3, 5.0, 48)) == pytest.approx(
        exact, rel=1e-6)


def test_first_bessel_zero():
    assert cz.first_bessel_zero(0.5) == pytest.approx(math.pi, rel=1e-13)
    np.testing.assert_allclose([cz.first_bessel_zero(n) for n in (0, 1, 3, 31)],
                               [special.jn_zeros(n, 1)[0] for n in (0, 1, 3, 31)],
                               rtol=1e-12)
    assert cz.core_scale(2) == pytest.approx(1.482602218505602, rel=1e-12)
    assert cz.core_scale(3) == pytest.approx(1.2011224087864498, rel=1e-12)


def test_noisy_pde_below_threshold_decays_at_sigma_1():
    """kappa = 4 < kappa_c = 8.0 (d = 8, SA, beta = 1): the uniform target; the rate is
    |sigma_1| = (d - 1)(1/kappa - I_4(1)/I_3(1)) (closed form here, scipy's Bessel)."""
    ds = meanfield.contraction(CONFIG)
    sigma = (DIM - 1) * (1 / 4.0 - special.iv(DIM / 2, 1.0) / special.iv(DIM / 2 - 1, 1.0))
    assert ds.attrs["status"] == 0
    assert ds.predicted_rate.item() == pytest.approx(sigma, rel=1e-12)
    assert ds.fitted_rate.item() == pytest.approx(sigma, rel=0.01)
    assert "S⁷" in ds.attrs["title"]


def test_tokens_without_noise_contract_at_one():
    """SA tokens on S^7 collapse to their limit point at the local rate 1."""
    cfg = {**CONFIG, "model": {"beta": 1.0, "kappa": "inf"},
           "contraction": {"beta": [1.0], "sources": ["particles"]},
           "time": {"t_final": 8.0, "save_every": 0.25, "dt": "auto"},
           "particles": {"n": 100}}
    ds = meanfield.contraction(cfg)
    assert ds.fitted_rate.item() == pytest.approx(1.0, rel=0.05)


@pytest.mark.parametrize("change, key", [
    ({"model": {"beta": 1.0, "kappa": 4.0},
      "contraction": {"beta": [1.0], "sources": ["particles"]}}, "contraction.sources"),
    ({"contraction": {"beta": [1.0], "sources": ["pde"], "other": {"kind": "uniform"}}},
     "contraction.other"),
])
def test_refused(change, key):
    with pytest.raises(ConfigError) as info:
        meanfield.contraction({**CONFIG, **change})
    assert info.value.key == key


@pytest.mark.slow
def test_noisy_pde_above_threshold_decays_at_the_leading_eigenvalue():
    """kappa = 20 > kappa_c: the PDE to twice the final time is the target and the rate
    minus the leading eigenvalue of the zonal linearisation there; with fit_below = 1e-3
    the nonlinear bias is about 5e-4 relative (the house's margin: 1 %)."""
    cfg = {**CONFIG, "model": {"beta": 1.0, "kappa": 20.0},
           "time": {"t_final": 11.0, "save_every": 0.25, "dt": 0.01},
           "contraction": {"beta": [1.0], "sources": ["pde"], "fit_below": 1e-3}}
    ds = meanfield.contraction(cfg)
    assert ds.fitted_rate.item() == pytest.approx(ds.predicted_rate.item(), rel=0.01)
