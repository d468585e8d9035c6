"""``stationary.mode_amplitude``: the amplitude of mode k / degree l of a state, against
closed forms: on S^1 a density proportional to ``exp(a cos k theta)`` has
``|int e^{ik theta} dmu| = I_1(a)/I_0(a)`` and zero amplitude in modes that are not
multiples of k; on S^2 an axisymmetric ``exp(a z^2)`` has ``|int P_2(z) dmu|`` given by a
1-D quadrature in z (scipy.integrate.quad, independent of the harmonic transform); mode 1
is the order parameter r."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special

from meanfield.studies.bifurcation import stationary as st
from meanfield.discretizations.base import Discretization
from meanfield import config


def build(geometry: str, resolution: int):
    cfg = config.validate({"domain": {"geometry": geometry},
                           "discretization": {"resolution": resolution, "method": "spectral"},
                           "model": {"beta": 0.0, "kappa": 4.0},
                           "initial": {"kind": "uniform"}})
    return Discretization.from_config(cfg)


@pytest.mark.parametrize("k, a", [(1, 1.5), (2, 3.0), (3, 0.7)])
def test_circle_amplitude_of_a_k_fold_von_mises(k, a):
    disc = build("circle", 128)
    theta = disc.grid.theta
    u = disc.to_state(np.exp(a * np.cos(k * (theta - 0.4))))  # (any phase, any mass)
    exact = special.i1(a) / special.i0(a)
    assert abs(st.mode_amplitude(disc, u, k) - exact) <= 1e-12
    if k > 1:
        assert abs(st.mode_amplitude(disc, u, k + 1)) <= 1e-12  # (not a multiple of k)
    assert st.mode_amplitude(disc, u, 1) == pytest.approx(st.order_parameter(disc, u),
                                                           abs=1e-14)


def test_sphere_degree_two_amplitude_of_an_axisymmetric_state():
    a = 2.0
    disc = build("sphere", 32)
    z = disc.grid.points[..., 2]
    u = disc.to_state(np.exp(a * z**2))
    weight = lambda t: np.exp(a * t**2)  # noqa: E731 (the density in z; dS = dz dphi)
    p2 = integrate.quad(lambda t: 0.5 * (3 * t**2 - 1) * weight(t), -1, 1)[0]
    exact = abs(p2 / integrate.quad(weight, -1, 1)[0])
    assert abs(st.mode_amplitude(disc, u, 2) - exact) <= 1e-10
    assert abs(st.mode_amplitude(disc, u, 1)) <= 1e-12  # (even in z: r = 0)
    tilted = disc.to_state(np.exp(1.3 * disc.grid.points[..., 0]))  # (degree 1, along x)
    assert st.mode_amplitude(disc, tilted, 1) == pytest.approx(
        st.order_parameter(disc, tilted), abs=1e-13)


def test_the_study_writes_each_branch_amplitude():
    """USA at beta = 3 on S^1: the k = 2 branch has r = 0 (up to round-off) at every point
    and a growing |rho_2|, which the dataset's ``amplitude`` carries (the figure draws
    it); on mode 1 the amplitude is r; on the uniform branch 0."""
    from meanfield.studies.bifurcation import study as bf

    ds = bf.bifurcation({"model": {"beta": 3.0, "normalized": False},
                         "discretization": {"resolution": 64},
                         "bifurcation": {"start": 0.5, "stop": 2.5, "modes": 2}})
    modes = ds.branch_mode.values
    one, two = int(np.flatnonzero(modes == 1)[0]), int(np.flatnonzero(modes == 2)[0])
    ok = np.isfinite(ds.kappa.values)
    assert np.all(ds.amplitude.values[0][ok[0]] == 0.0)
    np.testing.assert_allclose(ds.amplitude.values[one][ok[one]],
                               ds.order_parameter.values[one][ok[one]], atol=1e-13)
    r2, a2 = ds.order_parameter.values[two][ok[two]], ds.amplitude.values[two][ok[two]]
    assert ok[two].sum() >= 5 and np.max(r2) <= 1e-10 and np.max(a2) > 0.3
