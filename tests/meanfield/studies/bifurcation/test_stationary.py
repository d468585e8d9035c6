"""Stationary states and their stability against closed forms (docs/conventions.md).

beta = 0: the stationary states are ``rho ∝ exp(kappa r <x, e>)`` with ``r = I_1/I_0
(kappa r)`` on S^1 (noisy Kuramoto, pitchfork at kappa = 2) and ``r = L(kappa r)`` (the
Langevin function) on S^2 (pitchfork at 3); their free energy is ``r^2/2 - log Z /
kappa`` (``int rho log rho = kappa r^2 - log Z``, the energy less its uniform value is
``r^2/2``). beta > 0: the uniform state's leading eigenvalue crosses 0 at ``1/a_1``
with multiplicity 2 (S^1) or 3 (S^2).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special

from meanfield import config
from meanfield.discretizations.base import Discretization
from meanfield.discretizations.spectrum import leading_eigenvalues
from meanfield.errors import ConfigError
from meanfield.model.kernels import critical_kappa as kernels_critical_kappa
from meanfield.model.kernels import growth_rate, sphere_growth_rate
from meanfield.studies.bifurcation import spectral_state as ss
from meanfield.studies.bifurcation import stationary as st
from meanfield.studies.bifurcation import stationary_linear as lin


def build(geometry: str, resolution: int, beta: float, kappa: float,
          normalized: bool = True, method: str = "spectral"):
    cfg = config.validate({"domain": {"geometry": geometry},
                           "discretization": {"resolution": resolution, "method": method},
                           "model": {"beta": beta, "kappa": kappa, "normalized": normalized},
                           "initial": {"kind": "uniform"}})
    disc = Discretization.from_config(cfg)
    return disc, disc.to_state(disc.initial_density(cfg["initial"]))


def kuramoto_root(kappa: float) -> float:
    """The non-trivial root of r = I_1(kappa r)/I_0(kappa r), by brentq (independent of
    the package's ``noisy_order_parameter``)."""
    return optimize.brentq(lambda r: special.i1e(kappa * r) / special.i0e(kappa * r) - r,
                           1e-3, 1.0, xtol=1e-15)


def langevin_root(kappa: float) -> float:
    return optimize.brentq(lambda r: 1 / np.tanh(kappa * r) - 1 / (kappa * r) - r,
                           1e-3, 1.0, xtol=1e-15)


# --- beta = 0 on S^1: noisy Kuramoto -------------------------------------------------------
# n = 64 keeps modes |k| <= 31: the coefficients I_k(s)/I_0(s) of exp(s cos) (s = kappa r
# <= 7.5) fall below 1e-14 there.
@pytest.fixture(scope="module")
def circle():
    return build("circle", 64, 0.0, 3.0)


@pytest.mark.parametrize("kappa", [2.5, 3.0, 4.0, 8.0])
def test_noisy_kuramoto_branch(circle, kappa):
    disc, _ = circle
    seed = lin.branch_seed(disc, 1, kappa=kappa)
    # rotate the seed: the phase condition must bring the mean direction back to theta = 0
    seed = seed * np.exp(-1j * disc.grid.k * 0.7)
    res = st.stationary_state(disc, seed, tol=1e-12)
    assert res.converged, res.message
    r = kuramoto_root(kappa)
    assert abs(res.order_parameter - r) <= 1e-8
    assert abs(lin.noisy_order_parameter("circle", kappa) - r) <= 1e-13
    rho = np.exp(kappa * r * np.cos(disc.grid.theta)) / (2 * np.pi * special.i0(kappa * r))
    assert np.abs(disc.to_density(res.state) - rho).max() <= 1e-10
    assert res.state[1].real > 0 and res.state[1].imag == 0.0
    assert np.abs(res.multipliers).max() <= 1e-10
    assert res.mode == 1
    s = kappa * r
    assert res.free_energy == pytest.approx(
        r**2 / 2 - math.log(2 * math.pi * special.i0(s)) / kappa, abs=1e-10)
    # the branch is stable; the rotation's zero eigenvalue (one) is dropped, not counted
    stab = lin.stability(disc, res.state)
    assert stab.stable, stab.message
    assert stab.zero_modes == 1 and stab.symmetry_modes == 1
    assert np.all(stab.eigenvalues.real < 0)
    lam = leading_eigenvalues(disc, res.state, 3)  # the spectrum module agrees
    np.testing.assert_allclose(lam, stab.eigenvalues[:3], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("kappa", [1.5, 2.5])
def test_uniform_state_on_the_circle(circle, kappa):
    """Stable below kappa_c = 2, unstable above: the leading eigenvalue is sigma_1 =
    1/2 - 1/kappa, twice (cos and sin); no phase condition, no zero mode."""
    disc, uniform = circle
    disc.set_parameters(kappa=kappa)
    res = st.stationary_state(disc, uniform)
    assert res.converged and res.mode == 0 and res.iterations == 0
    assert res.order_parameter <= 1e-14
    stab = lin.stability(disc, res.state, count=3)
    np.testing.assert_allclose(stab.eigenvalues.real[:2], 0.5 - 1 / kappa, atol=1e-12)
    assert stab.stable == (kappa < 2) and stab.zero_modes == 0


def test_a_small_seed_falls_back_to_the_uniform_state(circle):
    """Below kappa_c every seed leads back to the uniform state."""
    disc, _ = circle
    res = st.stationary_state(disc, lin.branch_seed(disc, 1, kappa=1.8, amplitude=0.5))
    assert res.converged and res.order_parameter <= 1e-10


# --- beta = 0 on S^2 -----------------------------------------------------------------
@pytest.mark.parametrize("kappa", [4.0, 6.0])
def test_sphere_langevin_branch(kappa):
    """L = 24: i_l(s)/i_0(s) < 1e-13 beyond l = 21 for s = kappa r <= 4.8."""
    disc, _ = build("sphere", 24, 0.0, kappa)
    res = st.stationary_state(disc, lin.branch_seed(disc, 1), tol=1e-12)
    assert res.converged, res.message
    r = langevin_root(kappa)
    assert abs(res.order_parameter - r) <= 1e-8
    rho = lin.noisy_stationary_density("sphere", kappa, disc.grid.points)
    s = kappa * r
    direct = np.exp(s * disc.grid.points[..., 2]) * s / (4 * np.pi * np.sinh(s))
    assert np.abs(rho - direct).max() <= 1e-13 * direct.max()
    assert np.abs(disc.to_density(res.state) - rho).max() <= 1e-10
    assert res.free_energy == pytest.approx(
        r**2 / 2 - math.log(4 * math.pi * np.sinh(s) / s) / kappa, abs=1e-10)
    diag = disc.model.diagnostics(disc.to_density(res.state))
    assert res.order_parameter == pytest.approx(diag["order_parameter"], abs=1e-12)


def test_sphere_branch_stability_from_a_tilted_guess():
    """A guess whose dipole points elsewhere is rotated onto +z; the state is stable with
    exactly two zero modes (rotations about x and y) dropped. L = 16 (s = 2.4)."""
    kappa = 4.0
    disc, _ = build("sphere", 16, 0.0, kappa)
    pts = disc.grid.points
    e = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    res = st.stationary_state(disc, np.exp(2.0 * pts @ e), tol=1e-12)  # grid values
    assert res.converged, res.message
    assert abs(res.order_parameter - langevin_root(kappa)) <= 1e-8
    grid = disc.grid
    assert abs(res.state[grid.index(1, 1)]) <= 1e-13 and res.state[grid.index(1, 0)].real > 0
    stab = lin.stability(disc, res.state)
    assert stab.stable and stab.zero_modes == 2 and stab.symmetry_modes == 2, stab.message
    lam = leading_eigenvalues(disc, res.state, 3)
    np.testing.assert_allclose(lam, stab.eigenvalues[:3], rtol=1e-8, atol=1e-10)


# --- beta > 0: branches without a closed form -----------------------------------------
# Checked by the zero-flux relation rho v = kappa^-1 grad rho (independent of F, which
# only says the flux is divergence-free) and by the free energy (USA: a Lyapunov function,
# so the stable branch lies below the unstable uniform state).
@pytest.fixture(scope="module")
def circle_beta():
    """n = 96: the concentrated USA state at kappa = 1.5 kappa_c needs modes up to ~40."""
    return {norm: build("circle", 96, 2.0, 3.0, norm) for norm in (True, False)}


@pytest.mark.parametrize("normalized,mode,amplitude,stable", [
    (True, 1, None, True), (True, 2, 1.0, False), (False, 1, 3.0, True)],
    ids=["SA-1", "SA-2", "USA-1"])
def test_circle_branches_at_positive_beta(circle_beta, normalized, mode, amplitude, stable):
    disc, uniform = circle_beta[normalized]
    kappa = 1.5 * lin.critical_kappa("circle", 2.0, normalized, mode)
    res = st.stationary_state(disc, lin.branch_seed(disc, mode, kappa=kappa,
                                                      amplitude=amplitude), tol=1e-11)
    assert res.converged, res.message
    assert res.mode == mode and res.flux_defect <= 1e-9
    assert st.zero_flux_defect(disc, uniform) <= 1e-13
    if mode == 2:  # the two-cluster state: odd modes absent, no order parameter
        assert np.abs(res.state[1::2]).max() <= 1e-10 and res.order_parameter <= 1e-10
    else:
        assert res.order_parameter > 0.5
    if not normalized:
        assert res.free_energy < st.free_energy(disc, uniform) - 0.1
    stab = lin.stability(disc, res.state)
    assert stab.stable == stable and stab.zero_modes == 1, stab.message


def test_a_root_with_a_negative_density_is_refused(circle_beta):
    """Too large a seed (1 + 3 cos theta) leads Newton to a root of F that is no density."""
    disc, _ = circle_beta[True]
    kappa = 1.5 * lin.critical_kappa("circle", 2.0, True)
    res = st.stationary_state(disc, lin.branch_seed(disc, 1, kappa=kappa, amplitude=3.0))
    assert not res.converged and "negative" in res.message
    assert res.order_parameter > 1  # (|int x rho| > 1: impossible for a probability)


def test_sphere_branch_at_positive_beta():
    """SA, beta = 1, L = 16, kappa = 1.5 kappa_c: stable, two zero modes."""
    disc, _ = build("sphere", 16, 1.0, 3.0, True)
    kappa = 1.5 * lin.critical_kappa("sphere", 1.0, True)
    res = st.stationary_state(disc, lin.branch_seed(disc, 1, kappa=kappa), tol=1e-11)
    assert res.converged and res.mode == 1, res.message
    assert res.flux_defect <= 1e-9 and 0.5 < res.order_parameter < 1
    stab = lin.stability(disc, res.state, count=3)
    assert stab.stable and stab.zero_modes == 2, stab.message


# --- beta > 0: the critical kappa ------------------------------------------------------
@pytest.mark.parametrize("geometry,resolution,beta", [("circle", 24, 1.0), ("sphere", 9, 0.5)])
@pytest.mark.parametrize("normalized", [True, False], ids=["SA", "USA"])
def test_critical_kappa_is_where_the_uniform_state_turns_unstable(geometry, resolution,
                                                                  beta, normalized):
    disc, uniform = build(geometry, resolution, beta, 3.0, normalized)
    kc = lin.critical_kappa(geometry, beta, normalized)
    if geometry == "circle":
        assert kc == pytest.approx(kernels_critical_kappa(beta, normalized), rel=1e-14)

    def leading(kappa: float) -> float:
        disc.set_parameters(kappa=float(kappa))
        return float(lin.jacobian_eigenvalues(disc, uniform)[0].real)

    root = optimize.brentq(leading, 0.95 * kc, 1.05 * kc, xtol=1e-13, rtol=1e-14)
    assert root == pytest.approx(kc, rel=1e-8)
    disc.set_parameters(kappa=kc)
    lam = lin.jacobian_eigenvalues(disc, uniform)
    assert int(np.sum(np.abs(lam) < 1e-8)) == (2 if geometry == "circle" else 3)


def test_critical_kappa_of_higher_modes():
    for k in (1, 2, 3):
        a = growth_rate(k, 2.0, math.inf, True) / k**2
        assert lin.critical_kappa("circle", 2.0, True, k) == pytest.approx(1 / a)
        a = sphere_growth_rate(k, 2.0, math.inf, False) / (k * (k + 1))
        assert lin.critical_kappa("sphere", 2.0, False, k) == pytest.approx(1 / a)
    assert lin.critical_kappa("circle", 0.0, True, 1) == 2.0
    assert lin.critical_kappa("sphere", 0.0, False, 1) == pytest.approx(3.0)
    assert lin.critical_kappa("circle", 0.0, True, 2) == math.inf
    with pytest.raises(ValueError):
        lin.critical_kappa("torus", 1.0, True)
    with pytest.raises(ValueError):
        lin.critical_kappa("circle", 1.0, True, 0)


@pytest.mark.parametrize("geometry,resolution,mode", [("circle", 24, 2), ("sphere", 9, 2)])
def test_critical_modes_are_eigenvectors_of_the_uniform_state(geometry, resolution, mode):
    beta, kappa = 1.0 if geometry == "circle" else 0.5, 5.0
    disc, uniform = build(geometry, resolution, beta, kappa, True)
    modes = lin.critical_modes(disc, mode)
    if geometry == "circle":
        sigma = growth_rate(mode, beta, kappa, True)
        assert len(modes) == 2
    else:
        sigma = sphere_growth_rate(mode, beta, kappa, True)
        assert len(modes) == 2 * mode + 1
    for v in modes:
        np.testing.assert_allclose(disc.jvp(uniform, v), sigma * v, atol=1e-12)
    rho = disc.to_density(modes[0])
    if geometry == "circle":  # cos k theta, P_l(cos colatitude): maximum 1
        expected = np.cos(mode * disc.grid.theta)
    else:
        expected = special.eval_legendre(mode, disc.grid.points[..., 2])
    np.testing.assert_allclose(rho, expected, atol=1e-14)
    seed = lin.branch_seed(disc, mode, amplitude=0.3)
    area = 2 * np.pi if geometry == "circle" else 4 * np.pi
    np.testing.assert_allclose(disc.to_density(seed), (1 + 0.3 * rho) / area, atol=1e-14)


# --- the pieces ----------------------------------------------------------------------
def test_sphere_rotation_generators_match_the_gradient():
    """i L_x f = grad f . (e_x x x), i L_y f likewise (ducc0's evaluation off the grid)."""
    pytest.importorskip("ducc0")
    from solvers.transforms.pointwise import sphere_synthesis_at

    disc, _ = build("sphere", 10, 0.0, 4.0)
    pts = disc.grid.points.reshape(-1, 3)
    a = disc.to_state(np.exp(pts @ [0.5, -0.2, 0.9] + pts[:, 0] ** 2).reshape(disc.grid.shape))
    _, grad = sphere_synthesis_at(a, disc.grid.lmax, pts, gradient=True)
    for generator, axis in zip(ss.rotation_generators(disc, a), np.eye(3)):
        expected = np.sum(grad * np.cross(axis, pts), axis=1)
        np.testing.assert_allclose(disc.to_density(generator).ravel(), expected,
                                   atol=1e-11 * np.abs(expected).max())


def test_real_view_round_trip(circle):
    disc, uniform = circle
    view = ss.RealView(disc, uniform)
    assert view.size == 63  # Re c_0, (Re, Im) c_1..c_31; not Im c_0, not the Nyquist mode
    assert view.mass(view.to_real(uniform)) == pytest.approx(1.0, abs=1e-15)
    x = np.random.default_rng(1).standard_normal(view.size)
    np.testing.assert_array_equal(view.to_real(view.to_state(x)), x)
    sphere, a = build("sphere", 8, 0.0, 4.0)
    assert ss.RealView(sphere, a).size == 81  # (L + 1)^2 real components


def test_failure_reports_the_distance_of_the_guess(circle):
    disc, _ = circle
    disc.set_parameters(kappa=8.0)
    seed = lin.branch_seed(disc, 1, amplitude=1.0)
    res = st.stationary_state(disc, seed, max_iter=1)
    assert not res.converged
    assert "||F(guess)|| = " in res.message and "no convergence" in res.message
    assert res.residual_norm > 1e-6


def test_bad_arguments_are_refused(circle):
    disc, uniform = circle
    for tol in (0.0, -1e-10, math.nan, "1e-10"):
        with pytest.raises(ValueError):
            st.stationary_state(disc, uniform, tol=tol)
    with pytest.raises(ValueError):
        st.stationary_state(disc, uniform[:-1])
    with pytest.raises(ValueError):
        st.stationary_state(disc, np.full(uniform.shape, np.nan))
    fv, u = build("circle", 64, 0.0, 3.0, method="finite-volume")
    with pytest.raises(ConfigError):
        st.stationary_state(fv, u)
    with pytest.raises(ConfigError):
        lin.stability(fv, u)
    with pytest.raises(ValueError):
        lin.branch_seed(disc, 40)


def test_arpack_stability_agrees_with_the_dense_one(circle, monkeypatch):
    """Above DENSE_MAX components the leading eigenvalues come from ARPACK (largest real
    part); the zero mode is counted there too."""
    disc, _ = circle
    res = st.stationary_state(disc, lin.branch_seed(disc, 1, kappa=4.0), tol=1e-12)
    dense = lin.stability(disc, res.state)
    monkeypatch.setattr(lin, "DENSE_MAX", 10)
    sparse = lin.stability(disc, res.state)
    assert sparse.stable and sparse.zero_modes == 1
    np.testing.assert_allclose(sparse.eigenvalues, dense.eigenvalues, rtol=1e-9)


@pytest.mark.parametrize("geometry, resolution, beta, normalized", [
    ("circle", 64, 0.0, False), ("circle", 65, 0.5, False), ("circle", 48, 2.0, True),
    ("sphere", 11, 1.0, True)])
def test_dense_bordered_jacobian_equals_its_products(geometry, resolution, beta,
                                                     normalized):
    """``BorderedSystem.jacobian`` (the circle's batched ``jvp_many``; the sphere's loop)
    against one ``jvp`` per unit vector, on a non-uniform state with its phase borders;
    and ``stability`` from that matrix against ``stability`` from products."""
    kappa = 4.0
    disc, _ = build(geometry, resolution, beta, kappa, normalized)
    res = st.stationary_state(disc, lin.branch_seed(disc, 1, kappa=kappa), tol=1e-10)
    assert res.converged and res.mode == 1, res.message
    view = ss.RealView(disc, res.state)
    system = st.BorderedSystem(disc, view, res.state, 1)
    z = np.concatenate([view.to_real(res.state), np.zeros(system.p)])
    dense = system.jacobian(z)
    columns = np.column_stack([system.jvp(z, e) for e in np.eye(system.size)])
    scale = np.abs(columns).max()
    assert np.abs(dense - columns).max() <= 1e-13 * scale
    # (the aligned circle states are even: stability from the matrix takes its cosine
    # and sine blocks apart, against the full products' spectrum)
    assert lin.is_even(disc, res.state) == (geometry == "circle")
    a = lin.stability(disc, res.state, count=8)
    b = lin.stability(disc, res.state, count=8, jacobian=dense[: view.size, : view.size])
    assert (a.stable, a.zero_modes) == (b.stable, b.zero_modes)
    np.testing.assert_allclose(b.eigenvalues, a.eigenvalues, rtol=1e-9, atol=1e-9 * scale)


def test_axisymmetric_stability_by_blocks_equals_the_dense_spectrum():
    """At an axisymmetric S^2 state the eigenvalues by order-m blocks (2L products)
    equal those of the dense mass-preserving Jacobian ((L+1)^2 - 1 products), matched
    one to one (assignment) to 1e-11 of the spectral radius; a tilted state is not
    axisymmetric and takes the dense path; the axisymmetric view is the sphere's."""
    from scipy.optimize import linear_sum_assignment

    disc, _ = build("sphere", 11, 1.0, 5.0, True)
    res = st.stationary_state(disc, lin.branch_seed(disc, 1, kappa=5.0), tol=1e-11)
    assert res.converged and lin.is_axisymmetric(disc, res.state)
    blocks = lin.axisymmetric_eigenvalues(disc, res.state)
    matvec, size = lin.mass_preserving_operator(disc, res.state)
    dense = np.linalg.eigvals(np.column_stack([matvec(e) for e in np.eye(size)]))
    assert blocks.size == dense.size == size
    cost = np.abs(blocks[:, None] - dense[None, :])
    rows, cols = linear_sum_assignment(cost)
    assert cost[rows, cols].max() <= 1e-11 * np.abs(dense).max()
    tilted = res.state.copy()
    tilted[disc.grid.index(1, 1)] = 1e-3 * abs(tilted[0])
    assert not lin.is_axisymmetric(disc, tilted)
    circle_disc, _ = build("circle", 32, 1.0, 5.0)
    with pytest.raises(ValueError, match="sphere"):
        ss.RealView(circle_disc, res.state[:17], axisymmetric=True)
