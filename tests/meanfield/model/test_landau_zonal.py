"""The Landau coefficient of the first bifurcation on S^{d-1} (``meanfield.model.landau``
with ``geometry = "zonal"``, ``dim = d``) against independent references:

- d = 2 and 3 give the circle's and the sphere's numbers (their own closed forms);
- the uniform moments (M12, M13, E, m) by Gauss-Gegenbauer quadrature of scipy
  (``roots_gegenbauer`` and ``eval_gegenbauer``: the measure ``(1 - t^2)^{(d-3)/2} dt``);
- beta = 0: ``kappa = d + d^2 r^2/(d + 2) + O(r^4)`` from the exact self-consistency
  ``r = I_{d/2}(kappa r)/I_{d/2-1}(kappa r)`` solved for kappa at small r by brentq;
- beta > 0: zonal stationary states by Newton at ``kappa = kappa_c + kappa_2 r^2``
  (``(kappa - kappa_c)/r_num^2 -> kappa_2`` with an O(r^2) error, Richardson to 1e-5);
- the USA tricritical beta*(d): the root of ``I_{d/2+1}/I_{d/2} = 1/d`` (scipy's ``hyp0f1``),
  and its expansion ``beta* = 1 + 2/d + 1/d^2 + 5/d^4 + O(d^-5)`` (from Perron's continued
  fraction ``I_{nu+1}/I_nu = beta/(2(nu + 1) + beta I_{nu+2}/I_{nu+1})``; the error falls
  by 2^5 per doubling of d).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special

from meanfield import config
from meanfield.discretizations.base import Discretization
from meanfield.model import landau
from meanfield.studies.bifurcation import stationary as st
from meanfield.studies.bifurcation import stationary_linear as lin


@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("beta", [0.0, 0.7, 2.0, 5.0])
@pytest.mark.parametrize("d, geometry", [(2, "circle"), (3, "sphere")])
def test_dimensions_two_and_three_are_the_circle_and_the_sphere(d, geometry, beta,
                                                                 normalized):
    zonal = landau.landau_terms("zonal", beta, normalized, value=1.5, dim=d)
    other = landau.landau_terms(geometry, beta, normalized, value=1.5)
    for key, expected in other.items():
        assert zonal[key] == pytest.approx(expected, rel=1e-12, abs=1e-15), key
    assert landau.tricritical_beta("zonal", normalized, d) == (
        None if normalized else pytest.approx(landau.tricritical_beta(geometry, False),
                                              rel=1e-12))


@pytest.mark.parametrize("d", [2, 3, 5, 8, 64])
def test_uniform_moments_by_quadrature(d):
    """M12 = <psi_1 e_1 e_2>, M13 = <psi_1 e_1^3>, E = <e_1^2>, m = <psi_2 e_1^2> with
    psi_l = P_l (P_l(1) = 1) and e_l = N_l P_l, by Gauss-Gegenbauer quadrature."""
    alpha = (d - 2) / 2
    if d == 2:  # (Chebyshev: scipy's Gegenbauer of order 0 is degenerate)
        t, w = special.roots_chebyt(40)
        p1, p2 = t, 2 * t**2 - 1
    else:
        t, w = special.roots_gegenbauer(40, alpha)
        p1 = special.eval_gegenbauer(1, alpha, t) / special.eval_gegenbauer(1, alpha, 1.0)
        p2 = special.eval_gegenbauer(2, alpha, t) / special.eval_gegenbauer(2, alpha, 1.0)
    w = w / w.sum()
    n1 = 1.0 / np.sum(w * p1**2)  # N_l = 1 / <P_l^2>
    n2 = 1.0 / np.sum(w * p2**2)
    e1, e2 = n1 * p1, n2 * p2
    expected = (np.sum(w * p1 * e1 * e2), np.sum(w * p1 * e1**3), np.sum(w * e1**2),
                np.sum(w * p2 * e1**2))
    np.testing.assert_allclose(landau.zonal_moments(d), expected, rtol=1e-12)


def bessel_ratio(nu: float, x: float) -> float:
    """``I_{nu+1}(x)/I_nu(x) = (x/(2 nu + 2)) 0F1(; nu + 2; x^2/4) / 0F1(; nu + 1; x^2/4)``
    (scipy's ``hyp0f1``: no underflow at large orders, where ``ive(256, 20)`` is 0)."""
    return (x / (2 * nu + 2) * special.hyp0f1(nu + 2, x * x / 4)
            / special.hyp0f1(nu + 1, x * x / 4))


def exact_kappa(d: int, r: float) -> float:
    """beta = 0: the kappa at which the branch of S^{d-1} has order parameter r."""
    def gap(kappa: float) -> float:
        return bessel_ratio(d / 2 - 1, kappa * r) - r

    return optimize.brentq(gap, 0.9 * d, 2.0 * d, xtol=1e-15, rtol=1e-15)


@pytest.mark.parametrize("d", [4, 8, 64, 512])
def test_beta_zero_matches_the_exact_self_consistency(d):
    kappa_2 = landau.landau_coefficient("zonal", 0.0, True, dim=d)
    assert kappa_2 == pytest.approx(d * d / (d + 2), rel=1e-14)
    assert landau.landau_critical_kappa("zonal", 0.0, False, dim=d) == pytest.approx(d,
                                                                                     rel=1e-15)
    fits = [(exact_kappa(d, r) - d) / r**2 for r in (0.04, 0.02, 0.01)]
    errors = np.array(fits) - kappa_2
    assert abs(errors[-1]) < 1e-3 * kappa_2
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.05)
    assert errors[1] / errors[2] == pytest.approx(4.0, rel=0.05)


# (d, band limit, beta, normalized, expected type)
BRANCHES = [
    (8, 24, 1.0, False, "supercritical"),
    (8, 24, 2.0, False, "subcritical"),
    (8, 24, 2.0, True, "supercritical"),
    (32, 24, 1.5, False, "subcritical"),
]


@pytest.mark.parametrize("d, resolution, beta, normalized, kind", BRANCHES)
def test_against_numerical_zonal_branches(d, resolution, beta, normalized, kind):
    k2 = landau.landau_coefficient("zonal", beta, normalized, dim=d)
    assert landau.transition_type("zonal", beta, normalized, dim=d) == kind
    assert (k2 < 0) == (kind == "subcritical")
    kc = lin.critical_kappa("zonal", beta, normalized, dim=d)
    cfg = config.validate({"domain": {"geometry": "zonal", "dim": d},
                           "discretization": {"resolution": resolution},
                           "model": {"beta": beta, "kappa": kc, "normalized": normalized},
                           "initial": {"kind": "uniform"}})
    disc = Discretization.from_config(cfg)
    fits = []
    for r in (0.04, 0.02, 0.01):
        kappa = kc + k2 * r * r
        disc.set_parameters(kappa=kappa)
        # the seed 1 + d r t has order parameter r (<t^2> = 1/d)
        result = st.stationary_state(disc, lin.branch_seed(disc, 1, amplitude=d * r),
                                     tol=1e-13)
        assert result.converged, result.message
        assert result.mode == 1 and result.order_parameter == pytest.approx(r, rel=0.02)
        fits.append((kappa - kc) / result.order_parameter**2)
    errors = np.array(fits) - k2
    assert abs(errors[-1]) < 1e-3 * abs(k2)
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.05)  # O(r^2)
    assert errors[1] / errors[2] == pytest.approx(4.0, rel=0.05)
    assert (4 * fits[2] - fits[1]) / 3 == pytest.approx(k2, rel=1e-5)


@pytest.mark.parametrize("d", [4, 8, 16, 64, 300])
def test_tricritical_beta_of_usa_in_dimension_d(d):
    b = landau.tricritical_beta("zonal", False, d)
    ref = optimize.brentq(lambda x: bessel_ratio(d / 2, x) - 1 / d, 0.5, 10.0, xtol=1e-14)
    assert b == pytest.approx(ref, rel=1e-10)
    assert landau.transition_type("zonal", 0.99 * b, False, d) == "supercritical"
    assert landau.transition_type("zonal", 1.01 * b, False, d) == "subcritical"
    # USA closed form: kappa_2 = kappa_c d (1 - d q)/((d + 2)(1 - q)), q = I_{d/2+1}/I_{d/2}
    for beta in (0.5, 1.7, 4.0):
        q = bessel_ratio(d / 2, beta)
        kc = landau.landau_critical_kappa("zonal", beta, False, dim=d)
        assert landau.landau_coefficient("zonal", beta, False, dim=d) == pytest.approx(
            kc * d * (1 - d * q) / ((d + 2) * (1 - q)), rel=1e-10)


def test_tricritical_beta_tends_to_one_as_d_grows():
    """beta*(d) = 1 + 2/d + 1/d^2 + 5/d^4 + O(d^-5): the remainder falls by 2^5 per
    doubling of d, and beta* decreases with d from 2.447 (S^1) to 1."""
    dims = [32, 64, 128, 256]
    rest = [landau.tricritical_beta("zonal", False, d) - (1 + 2 / d + 1 / d**2 + 5 / d**4)
            for d in dims]
    for a, b in zip(rest[:-1], rest[1:]):
        assert a / b == pytest.approx(32.0, rel=0.1)
    betas = [landau.tricritical_beta("zonal", False, d) for d in (2, 3, 4, 8, 16, 64, 512)]
    assert all(x > y for x, y in zip(betas[:-1], betas[1:])) and betas[-1] > 1.0


@pytest.mark.parametrize("d", [4, 8, 64, 512])
def test_sa_stays_supercritical_in_every_dimension(d):
    assert landau.tricritical_beta("zonal", True, d) is None
    for beta in (0.5, 5.0, 50.0, 300.0):
        assert landau.landau_coefficient("zonal", beta, True, dim=d) > 0


@pytest.mark.parametrize("dim", [None, 1, 2.5, True])
def test_a_zonal_geometry_needs_an_integer_dimension(dim):
    with pytest.raises(ValueError, match="dim"):
        landau.landau_coefficient("zonal", 1.0, False, dim=dim)
