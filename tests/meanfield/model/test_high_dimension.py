"""The uniform pair integral and the interaction energy in high dimension (issue 9: d >= 400
once gave "math domain error", ``ive`` underflowing in the energy's uniform term)."""
from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest

from meanfield.model.kernels import log_uniform_pair_integral
from meanfield.model.particles import interaction_energy


def reference_log_pair_integral(d: int, beta: float) -> float:
    """``log 0F1(; d/2; beta^2/4)`` summed in 50-digit decimals, term by term
    (``t_{k+1} = t_k (beta^2/4) / ((k + 1)(d/2 + k))``) until past the largest term and
    below 1e-40 of the sum: the pair integral ``Gamma(d/2) (2/beta)^{d/2-1}
    I_{d/2-1}(beta)`` of the uniform measure on S^{d-1}, independent of scipy."""
    with localcontext() as ctx:
        ctx.prec = 50
        x = Decimal(beta) ** 2 / 4
        half = Decimal(d) / 2
        term = total = Decimal(1)
        k = 0
        while k <= float(x) ** 0.5 or term >= total * Decimal("1e-40"):
            term = term * x / ((k + 1) * (half + k))
            total += term
            k += 1
        return float(total.ln())


@pytest.mark.parametrize("d", [2, 3, 5, 100, 301, 400, 1024, 4096])
@pytest.mark.parametrize("beta", [1e-3, 0.7, 10.0, 300.0])
def test_log_pair_integral_against_decimal_series(d, beta):
    assert log_uniform_pair_integral(d, beta) == pytest.approx(
        reference_log_pair_integral(d, beta), rel=1e-13)


@pytest.mark.parametrize("d, beta", [(400, 1.0), (1024, 10.0), (1024, 5e4), (300, 3e4),
                                     (4, 3e4)])
def test_log_pair_integral_bessel_recurrence(d, beta):
    # I_{nu-1} - I_{nu+1} = (2 nu / beta) I_nu, for F(nu) = Gamma(nu+1) (2/beta)^nu I_nu:
    # F(nu - 1) = F(nu) + beta^2 / (4 nu (nu + 1)) F(nu + 1), with nu = d/2 - 1; at beta
    # = 3e4 and 5e4 the closed form with ive is taken (large series), so both ways meet
    nu = d / 2 - 1
    below, here, above = (log_uniform_pair_integral(e, beta) for e in (d - 2, d, d + 2))
    right = np.logaddexp(here, math.log(beta**2 / (4 * nu * (nu + 1))) + above)
    assert below == pytest.approx(right, rel=1e-13)
    assert math.isfinite(here)


def test_energy_in_dimension_1024_against_direct_sum():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((32, 1024))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    beta = 2.0
    pairs = np.mean(np.exp(beta * (x @ x.T)))
    expected = (pairs - math.exp(reference_log_pair_integral(1024, beta))) / (2 * beta)
    energy = interaction_energy(x, beta)
    assert math.isfinite(energy)
    assert energy == pytest.approx(expected, rel=1e-12)


def test_particle_run_in_dimension_1024_finishes():
    import meanfield
    ds = meanfield.particles({
        "domain": {"geometry": "sphere", "dim": 1024}, "particles": {"n": 32},
        "initial": {"kind": "uniform"},
        "time": {"t_final": 0.03, "dt": 0.01, "save_every": 0.01}})
    assert ds.attrs["status"] == 0
    assert ds["energy"].size == 4 and np.all(np.isfinite(ds["energy"].values))
