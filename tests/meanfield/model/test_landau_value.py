"""``meanfield.model.landau`` with the value matrix ``V = c I``: ``kappa_c`` and ``kappa_2``
are those of c = 1 divided by c, checked against numerical branches of the c-model
(Newton-Krylov on the spectral discretization with ``value = c``), the reference of
``test_landau.py``: ``(kappa - kappa_c/c)/r^2`` tends to ``kappa_2/c`` like r^2 (Richardson
to 1e-5); and c <= 0 is refused (no bifurcation)."""
from __future__ import annotations

import pytest

from meanfield.model import landau
from meanfield.studies.bifurcation import stationary as st
from meanfield.studies.bifurcation import stationary_linear as lin
from test_landau import build


@pytest.mark.parametrize("geometry,resolution,beta,normalized,value", [
    ("circle", 48, 2.0, True, 2.0),
    ("circle", 48, 4.0, True, 0.5),   # SA at beta = 4: supercritical
    ("sphere", 16, 1.0, True, 3.0),
])
def test_value_divides_kappa_c_and_kappa_2(geometry, resolution, beta, normalized, value):
    k2_plain = landau.landau_coefficient(geometry, beta, normalized)
    kc_plain = landau.landau_critical_kappa(geometry, beta, normalized)
    k2 = landau.landau_coefficient(geometry, beta, normalized, value)
    kc = landau.landau_critical_kappa(geometry, beta, normalized, value)
    assert (kc, k2) == (pytest.approx(kc_plain / value, rel=1e-15),
                        pytest.approx(k2_plain / value, rel=1e-15))
    assert kc == pytest.approx(lin.critical_kappa(geometry, beta, normalized, 1, value),
                               rel=1e-12)
    disc = build(geometry, resolution, beta, kc, normalized)
    disc.set_parameters(value=value)
    d = 2 if geometry == "circle" else 3
    fits = []
    for r in (0.04, 0.02, 0.01):
        disc.set_parameters(kappa=kc + k2 * r * r)
        result = st.stationary_state(disc, lin.branch_seed(disc, 1, amplitude=d * r),
                                     tol=1e-13)
        assert result.converged and result.mode == 1, result.message
        fits.append((disc.parameters[1] - kc) / result.order_parameter**2)
    richardson = (4 * fits[2] - fits[1]) / 3
    assert richardson == pytest.approx(k2, rel=1e-5)
    assert landau.transition_type(geometry, beta, normalized) == (
        "subcritical" if k2 < 0 else "supercritical")


@pytest.mark.parametrize("value", [0.0, -1.0, float("nan"), True])
def test_value_not_positive_is_refused(value):
    with pytest.raises(ValueError, match="c of V = c I"):
        landau.landau_coefficient("circle", 1.0, True, value)
