"""Growth rates of small perturbations of the uniform density on S^4 and S^15 (issue 26,
acceptance 2): the zonal spectral solver's measured rate of degrees l = 1, 2, 3 against
sigma_l = l (l + d - 2)(c a_l - 1/kappa) from scipy's Bessel functions, to 1e-6 relative.

The run starts at ``1 +- eps P_l(t)`` (eps = 1e-6) and the rate is ``log(c_l(T)/c_l(0))/T``,
the mean over the two signs: the quadratic term of the dynamics changes sign with eps and
cancels, so what is left is O(eps^2) (the even degrees feed themselves at O(eps): Q_2^2
holds Q_2). ``T`` is 1, or 2/|sigma| for fast modes, so that c_l stays far above the
round-off of the coefficients; the fixed ETDRK4 step T/100 puts the time error below 1e-9.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

import meanfield
from solvers.grids.zonal import ZonalGrid

BETA, LMAX, EPS = 2.0, 24, 1e-6


def exact_rate(l: int, dim: int, beta: float, kappa: float, normalized: bool) -> float:
    """sigma_l of issue 26 from scipy's iv (independent of meanfield.model.zonal_kernels):
    ``a_l = Gamma(d/2) 2^{d/2-1} beta^{-d/2} I_{l+d/2-1}(beta)`` (USA) or
    ``I_{l+d/2-1}(beta) / (beta I_{d/2-1}(beta))`` (SA)."""
    nu = dim / 2 - 1
    if normalized:
        a = special.iv(l + nu, beta) / (beta * special.iv(nu, beta))
    else:
        a = math.gamma(dim / 2) * 2**nu * beta ** (-dim / 2) * special.iv(l + nu, beta)
    return l * (l + dim - 2) * (a - 1 / kappa)


def measured_rate(l: int, dim: int, kappa: float, normalized: bool, t_final: float) -> float:
    grid = ZonalGrid(LMAX, dim)
    logs = []
    for amplitude in (EPS, -EPS):
        ds = meanfield.evolve({
            "domain": {"geometry": "zonal", "dim": dim},
            "model": {"beta": BETA, "kappa": kappa, "normalized": normalized},
            "discretization": {"resolution": LMAX},
            "initial": {"kind": "perturbed", "degree": l, "amplitude": amplitude},
            "time": {"t_final": t_final, "save_every": t_final, "dt": t_final / 100}})
        c = grid.analysis(ds.density.values)[:, l]
        logs.append(math.log(c[-1] / c[0]) / t_final)
    return 0.5 * (logs[0] + logs[1])


@pytest.mark.parametrize("dim", [5, 16])
@pytest.mark.parametrize("normalized,kappa", [(False, 4.0), (True, 10.0)], ids=["USA", "SA"])
def test_growth_rates_of_small_perturbations(dim, normalized, kappa):
    """Measured relative errors: 1e-10 to 1.8e-9 (largest: d = 5, USA, l = 1, sigma =
    0.056; d = 16, USA, l = 3, sigma = -12.7: 1.5e-9)."""
    for l in (1, 2, 3):
        sigma = exact_rate(l, dim, BETA, kappa, normalized)
        t_final = min(1.0, 2.0 / abs(sigma))
        rate = measured_rate(l, dim, kappa, normalized, t_final)
        assert rate == pytest.approx(sigma, rel=1e-6), (l, rate, sigma)


def test_the_acceptance_cases_include_an_unstable_mode():
    """Not a vacuous check: S^4 with USA (kappa = 4 > kappa_c = 3.79) and SA (kappa = 10 >
    5.54) has a growing degree 1; on S^15 every degree decays (kappa_c = 14.3, 16.2)."""
    assert exact_rate(1, 5, BETA, 4.0, False) > 0.05
    assert exact_rate(1, 5, BETA, 10.0, True) > 0.3
    assert exact_rate(1, 16, BETA, 4.0, False) < 0 and exact_rate(1, 16, BETA, 10.0, True) < 0
