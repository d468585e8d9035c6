"""Zonal figures (issue 26, item 5): the density in θ and the marginal of t = cos θ at
time slices coloured by time, the marginal over (t, time), the diagnostics; and the
linear-theory figures in every dimension. Synthetic datasets are von Mises-Fisher
densities on S^{d-1} at the Gauss nodes of the zonal grid, with NaN at the nodes of
negligible weight as ``meanfield.evolve`` writes them: every expected value is analytic.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

import meanfield
from meanfield.errors import ConfigError
from meanfield.model.zonal_kernels import log_funk_hecke, zonal_critical_kappa
from meanfield.plotting import figure, marginal_snapshots, plot, snapshots, spacetime
from meanfield.plotting.densities.zonal import zonal_title
from meanfield.plotting.densities.zonal_grid import _Zonal, uniform_marginal
from meanfield.plotting.densities.zonal_theory import (
    critical_kappa_by_dim,
    growth_rates_by_dim,
    linear_theory_figure,
    log_critical_kappa,
)
from solvers.grids.zonal import ZonalGrid
from tests.meanfield.plotting.figure_checks import legend_covers, texts_with_raw_tex


def von_mises_dataset(dim: int = 64, lmax: int = 64, method: str = "spectral"
                      ) -> xr.Dataset:
    """vMF densities e^{c t}/λ_0(c) on S^{dim-1} sharpening in time (c = 0, 10, ..., 60),
    NaN at the nodes of weight below 1e-18 (as the evolve datasets)."""
    grid = ZonalGrid(lmax, dim)
    time = np.arange(7, dtype=float)
    conc = 10.0 * time
    rho = np.stack([np.exp(c * grid.t - (log_funk_hecke(0, dim, c)[0] if c else 0.0))
                    for c in conc])
    rho[:, grid.weights < 1e-18] = np.nan
    marginal = grid.marginal(rho)
    r = np.array([0.0] + [float(np.exp(log_funk_hecke(1, dim, c)[1]
                                       - log_funk_hecke(1, dim, c)[0])) for c in conc[1:]])
    return xr.Dataset(
        {"density": (("time", "polar"), rho), "weights": (("polar",), grid.weights),
         "marginal": (("time", "polar"), marginal),
         "mass": (("time",), np.ones(time.size)),
         "energy": (("time",), r**2 / 2),
         "order_parameter": (("time",), r)},
        coords={"time": time, "polar": grid.theta, "cos_polar": ("polar", grid.t)},
        attrs={"geometry": "zonal", "dim": dim, "model": "SA", "beta": 0.0,
               "kappa": 128.0, "method": method})


@pytest.fixture(scope="module")
def zonal():
    return von_mises_dataset()


def test_curves_pass_through_the_nodes_and_the_marginal_has_mass_one(zonal):
    z = _Zonal.of(zonal)
    nodes = zonal.polar.values
    at_nodes = np.isin(z.theta, nodes)
    np.testing.assert_allclose(z.rho[:, at_nodes], zonal.density.values, rtol=1e-12)
    # the marginal of t integrates to 1 in t (trapezoid on the fine curve: 1e-3)
    for row in z.marginal:
        finite = np.isfinite(row)
        mass = abs(np.trapezoid(row[finite], z.cos[finite]))
        assert abs(mass - 1) < 2e-3, mass
    # the uniform density's marginal is the reference curve, exactly
    drawn = np.isfinite(z.marginal[0])
    np.testing.assert_allclose(z.marginal[0][drawn], uniform_marginal(64, z.cos[drawn]),
                               rtol=1e-12)
    # the curves stop at the last node with a value (NaN at the nodes of no weight)
    finite = nodes[np.isfinite(zonal.density.values[0])]
    assert z.theta[drawn].min() == finite.min() and z.theta[drawn].max() == finite.max()


def test_summary_panels_titles_and_time_colorbar(zonal):
    fig = figure(zonal)
    fig.canvas.draw()
    axes = fig.axes
    titles = [ax.get_title(loc="left") for ax in axes]
    assert titles[:2] == ["(a) density in θ, 7 times", "(b) marginal of t = cos θ"]
    assert "(c) order parameter" in titles and "(d) energy" in titles
    assert "S⁶³" in fig._suptitle.get_text()
    assert axes[0].get_yscale() == "log"  # the peak is far above uniform: log = "auto"
    bars = [ax for ax in axes if ax.get_ylabel() == "time t"]
    assert len(bars) == 1  # one colorbar of the slices, labelled with their times
    labels = [t.get_text() for t in bars[0].get_yticklabels()]
    assert labels[0] == "0" and labels[-1] == "6" and len(labels) == 7
    assert not texts_with_raw_tex(fig)
    assert not legend_covers(axes[1])


def test_density_axis_spans_the_mass_region_and_at_most_14_decades(zonal):
    fig = figure(zonal)
    ax = fig.axes[0]
    low, high = ax.get_ylim()
    z = _Zonal.of(zonal)
    assert high / low <= 3e14 * 1.0001
    assert high >= np.nanmax(z.rho)  # the density on the axis is drawn in full
    # the density where the last slice holds its mass is inside the frame
    peak = np.nanargmax(z.marginal[-1])
    assert low < z.rho[-1, peak] < high


def test_marginal_snapshots_and_spacetime(zonal):
    from matplotlib.figure import Figure

    fig = Figure(layout="constrained")
    lines = marginal_snapshots(zonal, fig.add_subplot(), times=[0, 3, 6])
    assert len(lines) == 3
    # the x range is where the marginal lives: around t = 0 .. r(6) in d = 64, not [-1, 1]
    lo, hi = lines[0].axes.get_xlim()
    assert -0.6 < lo < -0.2 and 0.7 < hi <= 1.0
    fig = Figure(layout="constrained")
    mesh = spacetime(zonal, fig.add_subplot())
    assert mesh.get_array().shape == (7, _Zonal.of(zonal).theta.size)
    assert mesh.axes.get_xlabel() == "t = cos θ = ⟨x, e⟩"
    lines = snapshots(zonal, Figure().add_subplot(), n=4)
    assert len(lines) == 4


def test_finite_volume_and_low_dimension(zonal):
    """Cells cover [0, π] (d = 3: the marginal of the uniform density is 1/2)."""
    cells = meanfield.evolve({
        "domain": {"geometry": "zonal", "dim": 3},
        "model": {"beta": 1.0, "kappa": 10.0},
        "discretization": {"method": "finite-volume", "resolution": 32},
        "initial": {"kind": "perturbed", "degree": 2, "amplitude": 0.3},
        "time": {"t_final": 0.5, "save_every": 0.25}})
    z = _Zonal.of(cells)
    np.testing.assert_allclose(uniform_marginal(3, z.cos), 0.5, rtol=1e-12)
    fig = figure(cells)
    assert fig.axes[0].get_yscale() == "linear"
    assert fig.axes[0].get_xlim() == (0.0, math.pi)
    assert "S²" in fig._suptitle.get_text()


def test_plot_writes_the_pages_and_the_animation(tmp_path):
    ds = meanfield.evolve({
        "domain": {"geometry": "zonal", "dim": 16},
        "model": {"beta": 2.0, "kappa": 40.0},
        "discretization": {"method": "spectral", "resolution": 24},
        "initial": {"kind": "perturbed", "degree": 1, "amplitude": 0.1},
        "time": {"t_final": 1.0, "save_every": 0.25}})
    path = tmp_path / "z.nc"
    ds.to_netcdf(path)
    from meanfield.cli import main as cli

    assert cli(["plot", str(path), "--out", str(tmp_path / "figs"), "--animate"]) == 0
    names = sorted(p.name for p in (tmp_path / "figs").iterdir())
    assert names == ["z_animation.gif", "z_diagnostics.png", "z_slices.png",
                     "z_spacetime.png", "z_summary.png"]
    assert all((tmp_path / "figs" / n).stat().st_size > 10_000 for n in names)
    from PIL import Image

    with Image.open(tmp_path / "figs" / "z_animation.gif") as gif:
        assert gif.n_frames == 5
    figs = plot(xr.open_dataset(path))
    assert list(figs) == ["summary", "slices", "spacetime", "diagnostics"]


def test_bad_zonal_datasets(zonal):
    with pytest.raises(ConfigError, match="dim = d") as info:
        figure(zonal.drop_attrs().assign_attrs(geometry="zonal"))
    assert info.value.key == "dim"
    with pytest.raises(ConfigError, match="distinct angles in"):
        figure(zonal.assign_coords(polar=zonal.polar + 4.0))
    circle = xr.Dataset({"density": (("time", "theta"), np.ones((2, 8)))},
                        coords={"time": [0.0, 1.0], "theta": np.linspace(0, 6, 8)},
                        attrs={"geometry": "circle"})
    from matplotlib.figure import Figure

    with pytest.raises(ConfigError, match="draws zonal results"):
        marginal_snapshots(circle, Figure().add_subplot())
    assert zonal_title(zonal).endswith("; zonal on S⁶³")


# --- the linear theory ----------------------------------------------------------------
def test_critical_kappa_curves_and_their_large_d_limits():
    from matplotlib.figure import Figure

    ax = Figure().add_subplot()
    lines = critical_kappa_by_dim(ax, True, dims=(2, 512))
    x, y = lines[1].get_data()
    # SA, d = 512: kappa_c/d against beta/d is 1/2 + sqrt(1/4 + x^2) within 1e-3 (at
    # beta = 0.01 d it is d within 1e-4), and the curve is zonal_critical_kappa / d
    np.testing.assert_allclose(y, 0.5 + np.sqrt(0.25 + x**2), rtol=2e-3)
    k = 100
    assert math.isclose(y[k], zonal_critical_kappa(512, x[k] * 512, True) / 512,
                        rel_tol=1e-12)
    ax = Figure().add_subplot()
    x, y = critical_kappa_by_dim(ax, False, dims=(4096,))[0].get_data()
    keep = y > 1e-3  # USA, d = 4096: d e^{-beta^2/(2d)} against beta/sqrt(d)
    np.testing.assert_allclose(y[keep], np.exp(-x[keep] ** 2 / 2), rtol=2e-2)
    # logs where kappa_c underflows (USA, beta = 1000) and kappa_c = d/c at beta = 0
    assert math.isfinite(log_critical_kappa(2, 1000.0, False))
    assert log_critical_kappa(8, 0.0, True, value=2.0) == math.log(4.0)


def test_growth_rates_panel_and_figure():
    from matplotlib.figure import Figure

    ax = Figure().add_subplot()
    lines = growth_rates_by_dim(ax, dims=(2, 64), beta=16.0, ratio=1.5, lmax=4)
    # sigma_1 = (d - 1) a_1 (1 - 1/1.5) with a_1 = 1/kappa_c
    for d, line in zip((2, 64), lines):
        sigma_1 = (d - 1) / zonal_critical_kappa(d, 16.0, True) * (1 - 1 / 1.5)
        assert math.isclose(line.get_ydata()[0], sigma_1, rel_tol=1e-12)
    with pytest.raises(ConfigError, match="exactly one"):
        growth_rates_by_dim(ax, kappa=10.0, ratio=1.5)
    fig = linear_theory_figure(dims=(2, 3, 8))
    fig.canvas.draw()
    assert len(fig.axes) == 3 and not texts_with_raw_tex(fig)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [
        "d = 2", "d = 3", "d = 8", "d → ∞"]
