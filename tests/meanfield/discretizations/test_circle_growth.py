"""Acceptance 1 (issue 2): growth of mode k about the uniform density against the exact
linear theory sigma_k = k^2 (a_k - 1/kappa) of docs/conventions.md."""
from __future__ import annotations

import math

import pytest
from conftest import fitted_rate
from scipy import special

from meanfield import evolve
from meanfield.model.kernels import growth_rate

# (beta, kappa): stable and unstable modes, with and without noise.
PAIRS = [(0.0, 1.5), (0.5, 3.0), (1.0, 4.0), (3.0, 2.0), (2.0, math.inf)]


def exact_rate(k, beta, kappa, normalized):
    """sigma_k computed here independently from scipy's unscaled I_k."""
    if beta == 0:
        a = 0.5 if k == 1 else 0.0
    else:
        a = special.iv(k, beta) / beta
        if normalized:
            a /= special.iv(0, beta)
    return k**2 * (a - (0 if math.isinf(kappa) else 1 / kappa))


def run(method, resolution, beta, kappa, normalized, k, t_final=1.5, amplitude=1e-6):
    """A run that stays linear: keep |sigma| t_final moderate (amplitude grows e^{sigma t}
    and must stay far above round-off when it decays)."""
    cfg = {
        "model": {"beta": beta, "kappa": kappa, "normalized": normalized},
        "discretization": {"method": method, "resolution": resolution},
        "initial": {"kind": "perturbed", "mode": k, "amplitude": amplitude},
        "time": {"t_final": t_final, "save_every": t_final / 15, "tolerance": 1e-11},
    }
    return evolve(cfg)


def test_growth_rate_formula_matches_independent_evaluation():
    for beta, kappa in PAIRS:
        for normalized in (True, False):
            for k in (1, 2):
                assert growth_rate(k, beta, kappa, normalized) == pytest.approx(
                    exact_rate(k, beta, kappa, normalized), rel=1e-13, abs=1e-15)
    # beta -> 0 limit: a_1 = 1/2, so kappa_c = 2 for noisy Kuramoto.
    assert growth_rate(1, 1e-8, 2.0, True) == pytest.approx(0.0, abs=1e-8)


@pytest.mark.parametrize("normalized", [True, False], ids=["SA", "USA"])
@pytest.mark.parametrize("beta,kappa", PAIRS)
@pytest.mark.parametrize("method,resolution,rtol", [("spectral", 64, 1e-4),
                                                    ("finite-volume", 512, 1e-2)])
def test_mode_growth_matches_linear_theory(method, resolution, rtol, beta, kappa, normalized):
    for k in (1, 2):
        sigma = exact_rate(k, beta, kappa, normalized)
        ds = run(method, resolution, beta, kappa, normalized, k)
        measured = fitted_rate(ds, k)
        assert measured == pytest.approx(sigma, rel=rtol), (k, measured, sigma)
