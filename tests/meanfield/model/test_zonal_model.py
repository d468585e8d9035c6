"""The zonal models on S^{d-1} against independent quadrature in dimensions beyond the
circle and the sphere (issue 26): the velocity field ``P_x^perp int e^{beta <x, y>} y rho(y)
dsigma(y)`` (SA: over ``int e^{beta <x, y>} rho``) by a double Gauss rule, the transport in
weak form against that velocity, the exact JVP, the energy, and the finite volumes' kernel
(all of its degrees, at any beta).

The double rule: for ``x = (x_1, s_1, 0, ...)`` and ``y = (t, sqrt(1 - t^2) tau, ...)`` the
measure of S^{d-1} is ``w_d (1 - t^2)^{(d-3)/2} dt`` times that of ``tau = <u, e_2>`` on
S^{d-2}, ``w_{d-1} (1 - tau^2)^{(d-4)/2} d tau``, and ``<x, y> = x_1 t + s_1 sqrt(1 - t^2) tau``;
each factor by its own Gauss rule with many nodes (the integrands are entire).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield.initial.zonal import cell_averages, von_mises_density
from meanfield.model.zonal import ZonalFVModel, ZonalModel
from meanfield.model.zonal_kernels import zonal_multipliers
from solvers.grids.zonal import ZonalCells, ZonalGrid
from solvers.transforms import gegenbauer

NODES = 160


def density(dim: int, t: np.ndarray) -> np.ndarray:
    """A lopsided zonal density: a von Mises bump and a degree-2 mode."""
    return 0.7 * von_mises_density(dim, 3.0)(t) + 0.3 * (
        1 + 0.8 * gegenbauer.degree_values(2, dim, t))


def direct_velocity(dim, beta, normalized, rho, x1):
    """First component of the velocity at ``x = (x_1, sqrt(1 - x_1^2), 0, ...)`` (the
    velocity is ``U'(x_1) (e - x_1 x)``: its first component is ``U'(1 - x_1^2)``)."""
    t, wt = gegenbauer.gauss_nodes(NODES, dim)
    tau, wtau = gegenbauer.gauss_nodes(NODES, dim - 1)
    s1 = np.sqrt(1 - x1**2)
    st = np.sqrt(1 - t**2)
    out = np.empty(x1.size)
    for i, (a, b) in enumerate(zip(x1, s1)):
        dot = a * t[:, None] + b * st[:, None] * tau[None, :]
        k = np.exp(beta * (dot - abs(a) - b)) * (wt * rho(t))[:, None] * wtau[None, :]
        j1, j2, mass = np.sum(k * t[:, None]), np.sum(k * st[:, None] * tau[None, :]), k.sum()
        v1 = j1 - (j1 * a + j2 * b) * a  # the first component of P_x^perp J
        scale = 1 / mass if normalized else math.exp(beta * (abs(a) + b))
        out[i] = v1 * scale
    return out


@pytest.mark.parametrize("dim", [4, 5, 16])
@pytest.mark.parametrize("normalized", [False, True], ids=["USA", "SA"])
def test_velocity_against_double_quadrature(dim, normalized):
    beta = 2.5
    grid = ZonalGrid(40, dim)
    model = ZonalModel(grid, beta, 5.0, normalized)
    c = grid.analysis(density(dim, grid.t))
    x1 = np.linspace(-0.95, 0.95, 9)
    points = np.zeros((x1.size, dim))
    points[:, 0], points[:, 1] = x1, np.sqrt(1 - x1**2)
    got = model.velocity_at(c, points)
    want = direct_velocity(dim, beta, normalized, lambda t: density(dim, t), x1)
    np.testing.assert_allclose(got[:, 0], want, rtol=0, atol=1e-12 * np.abs(want).max())
    assert np.abs(np.einsum("ij,ij->i", got, points)).max() < 1e-15  # tangent
    assert np.abs(got[:, 2:]).max() == 0


@pytest.mark.parametrize("dim", [4, 9])
@pytest.mark.parametrize("normalized", [False, True], ids=["USA", "SA"])
def test_transport_in_weak_form(dim, normalized):
    """``int (-div(rho v)) Q_k dsigma = int rho v . grad Q_k dsigma = int rho v_1 Q_k'``:
    the tendency's coefficients against the velocity (``velocity_at``, from the derivative
    table) at 200 Gauss nodes: an independent check of the model's two-term gradient
    recurrence, its division by ``1 - t^2`` and its product grid."""
    beta, lmax = 3.0, 40
    grid = ZonalGrid(lmax, dim)
    model = ZonalModel(grid, beta, math.inf, normalized)
    c = grid.analysis(density(dim, grid.t))
    tendency = model.tendency(c)
    t, w = gegenbauer.gauss_nodes(200, dim)
    points = np.zeros((t.size, dim))
    points[:, 0], points[:, 1] = t, np.sqrt(1 - t**2)
    v1 = model.velocity_at(c, points)[:, 0]
    _, dq = gegenbauer.table(lmax, dim, t, derivative=True)
    weak = dq @ (w * density(dim, t) * v1)
    np.testing.assert_allclose(tendency, weak, rtol=0, atol=1e-12 * np.abs(weak).max())
    assert tendency[0] == 0.0


@pytest.mark.parametrize("normalized", [False, True], ids=["USA", "SA"])
def test_jvp_is_the_derivative(normalized):
    grid = ZonalGrid(32, 6)
    model = ZonalModel(grid, 2.0, 4.0, normalized, value=1.5)
    c = grid.analysis(density(6, grid.t))
    rng = np.random.default_rng(2)
    v = rng.standard_normal(33) * 0.5 ** np.arange(33)
    eps = 1e-5
    fd = (model.tendency(c + eps * v) - model.tendency(c - eps * v)) / (2 * eps)
    jvp = model.tendency_jvp(c, v)
    np.testing.assert_allclose(jvp, fd, rtol=0, atol=1e-8 * np.abs(jvp).max())


def test_energy_against_double_quadrature():
    """``E(rho) - E(uniform) = (1/(2 beta)) (int int e^{beta <x, y>} drho drho - lambda_0)``
    on S^4, with the double rule above (x ranges over S^{d-1} by its own Gauss rule)."""
    dim, beta = 5, 1.7
    grid = ZonalGrid(40, dim)
    model = ZonalModel(grid, beta, 5.0, False)
    c = grid.analysis(density(dim, grid.t))
    t, wt = gegenbauer.gauss_nodes(NODES, dim)
    tau, wtau = gegenbauer.gauss_nodes(NODES, dim - 1)
    st = np.sqrt(1 - t**2)
    # for x at each node t_i: int e^{beta <x, y>} rho(y) dsigma(y)
    dot = (t[:, None, None] * t[None, :, None]
           + st[:, None, None] * st[None, :, None] * tau[None, None, :])
    inner = np.einsum("ijk,j,k->i", np.exp(beta * dot), wt * density(dim, t), wtau)
    pair = np.sum(wt * density(dim, t) * inner)
    lambda0 = math.exp(float(np.log(np.sum(wt * np.exp(beta * t)))))
    expected = (pair - lambda0) / (2 * beta)
    assert model.energy(c) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("dim,beta,cells", [(3, 3000.0, 1000), (3, 5000.0, 1100),
                                            (8, 20000.0, 2200)])
def test_finite_volume_kernel_keeps_every_degree(dim, beta, cells):
    """SA at large beta: the potential of the finite volumes takes the kernel's degrees as
    far as they matter (625 at beta = 5000, 1248 at 2e4), not a fixed 400, which dropped
    4e-8 (beta = 5000) and 2% (2e4) of the potential differences."""
    zc = ZonalCells(cells, dim)
    rho = cell_averages(von_mises_density(dim, 1.0), zc)
    model = ZonalFVModel(zc, beta, 10.0, True)
    lmax = 2 * model.lmax
    q = gegenbauer.table(lmax, dim, zc.t)
    a = zonal_multipliers(lmax, dim, beta, True)
    coeffs = q @ (zc.weights * rho)
    kernel = coeffs[0] + beta * (a * coeffs) @ q
    want = np.diff(np.log(kernel)) / beta
    got = model.potential_difference(rho)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-11 * np.abs(want).max())


@pytest.mark.parametrize("dim", [2, 3, 64])
@pytest.mark.parametrize("normalized", [False, True], ids=["USA", "SA"])
@pytest.mark.parametrize("parity", [False, True], ids=["full", "parity"])
@pytest.mark.parametrize("beta", [2.0, 400.0], ids=["few-degrees", "all-degrees"])
def test_fused_tendency_equals_the_reference_transport(dim, normalized, parity, beta,
                                                      monkeypatch):
    """``tendency`` (one compiled loop, tables split by parity from PARITY_MIN_DEGREES on,
    the potential's degrees synthesised apart when few, stacked with rho when many)
    equals the plain composition ``_transport(*slope_fields(c))`` to round-off."""
    import meanfield.model.zonal as zonal_module

    monkeypatch.setattr(zonal_module, "PARITY_MIN_DEGREES", 0 if parity else 10**9)
    rng = np.random.default_rng(3)
    grid = ZonalGrid(47, dim)
    model = zonal_module.ZonalModel(grid, beta, 10.0, normalized, value=1.5)
    assert (2 * (model.a_lmax + 2) > 48) == (beta > 100)  # (both paths are taken)
    c = np.zeros(48)
    c[0] = 1.0
    c[1:10] = 0.1 * rng.standard_normal(9) / np.arange(1, 10) ** 2
    fused = model.tendency(c)
    reference = model._transport(*model.slope_fields(c))
    assert np.abs(fused - reference).max() <= 1e-12 * np.abs(reference).max()
    assert fused[0] == 0.0
    batched = model.tendency(np.stack([c, 2 * c]))  # (the batched path: rows at once)
    np.testing.assert_allclose(batched[0], reference, rtol=0,
                               atol=1e-12 * np.abs(reference).max())
