"""Tests of ``meanfield.model.landau``: the Landau coefficient ``kappa_2`` of the first
bifurcation of the noisy model against independent references.

- beta = 0 (noisy Kuramoto): the exact self-consistency ``r = I_1(kappa r)/I_0(kappa r)``
  (S^1) and ``r = coth(kappa r) - 1/(kappa r)`` (S^2), solved for kappa at small r by
  brentq: ``(kappa - kappa_c)/r^2 -> 1`` and ``9/5``.
- beta > 0: numerical branches from ``meanfield.studies.bifurcation.stationary`` (Newton-Krylov on the
  spectral discretization) at ``kappa = kappa_c + kappa_2 r^2`` from a branch seed of
  amplitude r: ``(kappa - kappa_c)/r_num^2`` agrees with ``kappa_2`` to ~1e-4 at r = 0.01,
  the error falls like r^2 (factor 4 per halving) and its Richardson extrapolation agrees
  to 1e-5; the slaved second moment ``rho_2 = s r^2`` to 1e-3; supercritical and
  subcritical cases, USA and SA, S^1 and S^2.
- the tricritical beta of USA from the Bessel-ratio conditions ``I_2/I_1 = 1/2`` (S^1) and
  ``i_2/i_1 = 1/3`` (S^2), with scipy's ``iv`` / ``spherical_in``.
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


def build(geometry: str, resolution: int, beta: float, kappa: float, normalized: bool):
    cfg = config.validate({"domain": {"geometry": geometry},
                           "discretization": {"resolution": resolution,
                                              "method": "spectral"},
                           "model": {"beta": beta, "kappa": kappa, "normalized": normalized},
                           "initial": {"kind": "uniform"}})
    return Discretization.from_config(cfg)


def second_moment(disc, u) -> float:
    """``rho_2 = int psi_2 rho`` (``cos 2 theta`` on S^1, ``P_2`` on S^2) from the state's
    coefficients: ``c_2/c_0`` on S^1, ``a_20 / (sqrt(5) a_00)`` on S^2 (orthonormal
    harmonics)."""
    if disc.geometry == "circle":
        return float(u[2].real / u[0].real)
    return float(u[disc.grid.index(2, 0)].real / (math.sqrt(5) * u[0].real))


def exact_kappa(geometry: str, r: float) -> float:
    """beta = 0: the kappa at which the branch has order parameter r."""
    if geometry == "circle":
        def gap(k: float) -> float:
            return special.i1e(k * r) / special.i0e(k * r) - r
    else:
        def gap(k: float) -> float:
            s = k * r
            return 1 / np.tanh(s) - 1 / s - r
    return optimize.brentq(gap, 1.5, 10.0, xtol=1e-15, rtol=1e-15)


@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("geometry,kappa_c,kappa_2", [("circle", 2.0, 1.0),
                                                      ("sphere", 3.0, 9.0 / 5.0)])
def test_beta_zero_matches_exact_noisy_kuramoto(geometry, kappa_c, kappa_2, normalized):
    value = landau.landau_coefficient(geometry, 0.0, normalized)
    assert value == pytest.approx(kappa_2, rel=1e-14)
    assert landau.landau_critical_kappa(geometry, 0.0, normalized) == kappa_c
    # the exact branch: (kappa - kappa_c)/r^2 -> kappa_2 with an O(r^2) error
    errors = []
    for r in (0.04, 0.02, 0.01):
        fit = (exact_kappa(geometry, r) - kappa_c) / r**2
        errors.append(fit - value)
    assert abs(errors[-1]) < 1e-3 * value
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.05)
    assert errors[1] / errors[2] == pytest.approx(4.0, rel=0.05)
    assert landau.transition_type(geometry, 0.0, normalized) == "supercritical"


# (geometry, resolution, beta, normalized, expected type)
BRANCHES = [
    ("circle", 32, 1.0, False, "supercritical"),
    ("circle", 48, 4.0, False, "subcritical"),
    ("circle", 48, 2.0, True, "supercritical"),
    ("sphere", 16, 1.0, False, "supercritical"),
    ("sphere", 20, 4.0, False, "subcritical"),
    ("sphere", 20, 2.0, True, "supercritical"),
]


@pytest.mark.parametrize("geometry,resolution,beta,normalized,kind", BRANCHES)
def test_against_numerical_branches(geometry, resolution, beta, normalized, kind):
    k2 = landau.landau_coefficient(geometry, beta, normalized)
    assert landau.transition_type(geometry, beta, normalized) == kind
    assert (k2 < 0) == (kind == "subcritical")
    kc = lin.critical_kappa(geometry, beta, normalized)
    assert landau.landau_critical_kappa(geometry, beta, normalized) == pytest.approx(
        kc, rel=1e-12)
    disc = build(geometry, resolution, beta, kc, normalized)
    d = 2 if geometry == "circle" else 3  # seed (1 + d r <x, e>)/|S| has order parameter r
    fits = []
    for r in (0.04, 0.02, 0.01):
        kappa = kc + k2 * r * r  # below kappa_c on a subcritical branch
        disc.set_parameters(kappa=kappa)
        result = st.stationary_state(disc, lin.branch_seed(disc, 1, amplitude=d * r),
                                     tol=1e-13)
        assert result.converged, result.message
        assert result.mode == 1
        rn = result.order_parameter
        assert rn == pytest.approx(r, rel=0.02)
        fits.append((kappa - kc) / rn**2)
        second = second_moment(disc, result.state) / rn**2
    # the slaved second moment rho_2 = s r^2 (order r^2 of the expansion)
    s = landau.landau_terms(geometry, beta, normalized)["s"]
    assert second == pytest.approx(s, rel=1e-3)
    errors = np.array(fits) - k2
    assert abs(errors[-1]) < 1e-3 * abs(k2)
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.05)  # O(r^2)
    assert errors[1] / errors[2] == pytest.approx(4.0, rel=0.05)
    richardson = (4 * fits[2] - fits[1]) / 3
    assert richardson == pytest.approx(k2, rel=1e-5)


def test_tricritical_beta_usa():
    circle = landau.tricritical_beta("circle", False)
    ref = optimize.brentq(lambda b: special.iv(2, b) / special.iv(1, b) - 0.5, 0.5, 10.0,
                          xtol=1e-14)
    assert circle == pytest.approx(ref, rel=1e-10)
    sphere = landau.tricritical_beta("sphere", False)
    ref = optimize.brentq(lambda b: special.spherical_in(2, b) / special.spherical_in(1, b)
                          - 1.0 / 3.0, 0.5, 10.0, xtol=1e-14)
    assert sphere == pytest.approx(ref, rel=1e-10)
    for geometry, b in (("circle", circle), ("sphere", sphere)):
        assert landau.transition_type(geometry, 0.99 * b, False) == "supercritical"
        assert landau.transition_type(geometry, 1.01 * b, False) == "subcritical"
        assert abs(landau.landau_coefficient(geometry, b, False)) < 1e-10


def test_sa_stays_supercritical():
    assert landau.tricritical_beta("circle", True) is None
    assert landau.tricritical_beta("sphere", True) is None
    for beta in (0.5, 5.0, 50.0, 300.0):
        for geometry in ("circle", "sphere"):
            assert landau.landau_coefficient(geometry, beta, True) > 0


def test_closed_forms_usa():
    """USA: kappa_2 = kappa_c (1 - 2q)/(2(1 - q)) on S^1, (3 kappa_c/5)(1 - 3q)/(1 - q)
    on S^2 (the general formula specialised by hand)."""
    for beta in (0.3, 1.0, 3.0, 7.0):
        q = special.iv(2, beta) / special.iv(1, beta)
        kc = beta / special.iv(1, beta)
        assert landau.landau_coefficient("circle", beta, False) == pytest.approx(
            kc * (1 - 2 * q) / (2 * (1 - q)), rel=1e-12)
        q = special.spherical_in(2, beta) / special.spherical_in(1, beta)
        kc = beta / special.spherical_in(1, beta)
        assert landau.landau_coefficient("sphere", beta, False) == pytest.approx(
            0.6 * kc * (1 - 3 * q) / (1 - q), rel=1e-12)


@pytest.mark.parametrize("beta", [-1.0, math.nan, math.inf, True, "1"])
def test_bad_beta(beta):
    with pytest.raises(ValueError, match="beta"):
        landau.landau_coefficient("circle", beta, False)


def test_bad_geometry():
    with pytest.raises(ValueError, match="geometry"):
        landau.transition_type("torus", 1.0, False)
