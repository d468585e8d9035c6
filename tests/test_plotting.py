"""Tests for meanfield.plotting on synthetic circle datasets (no solver needed)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr
from scipy.special import i0e, i1e

from meanfield.errors import ConfigError
from meanfield.plotting import diagnostics, figure, plot_result, snapshots, spacetime

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
GIF_MAGIC = (b"GIF87a", b"GIF89a")


def von_mises_dataset(n_theta: int = 64, n_time: int = 21, kappa: float = math.inf,
                      t_final: float = 5.0, center: float = 1.0) -> xr.Dataset:
    """Von Mises densities with concentration k(t) = 3 t sharpening around ``center``.

    At t = 0 the density is uniform, so the order parameter is 0 and the mean direction
    NaN, as in real results.
    """
    theta = np.linspace(0.0, 2 * np.pi, n_theta, endpoint=False)
    weights = np.full(n_theta, 2 * np.pi / n_theta)
    time = np.linspace(0.0, t_final, n_time)
    k = 3.0 * time
    # exp(k cos) / (2π I0(k)) computed stably with the scaled Bessel function i0e
    rho = np.exp(k[:, None] * (np.cos(theta[None, :] - center) - 1.0)) / (
        2 * np.pi * i0e(k)[:, None])
    r = i1e(k) / i0e(k)
    mean = np.where(r[:, None] > 0, [math.cos(center), math.sin(center)], np.nan)
    mass = (rho * weights).sum(axis=1)
    energy = -0.5 * r**2
    data_vars = {
        "density": (("time", "theta"), rho, {"units": "1/rad"}),
        "weights": (("theta",), weights, {"units": "rad"}),
        "mass": (("time",), mass),
        "energy": (("time",), energy),
        "order_parameter": (("time",), r),
        "mean_direction": (("time", "component"), mean),
    }
    if math.isfinite(kappa):
        entropy = (rho * np.log(rho) * weights).sum(axis=1)
        data_vars["free_energy"] = (("time",), energy + entropy / kappa)
    return xr.Dataset(
        data_vars,
        coords={"time": ("time", time, {"units": "1"}),
                "theta": ("theta", theta, {"units": "rad"}),
                "component": ["x", "y"]},
        attrs={"geometry": "circle", "method": "spectral", "model": "SA", "beta": 1.0,
               "kappa": kappa, "title": "von Mises test", "resolution": n_theta},
    )


@pytest.fixture
def ds() -> xr.Dataset:
    return von_mises_dataset()


@pytest.fixture
def ds_noise() -> xr.Dataset:
    return von_mises_dataset(kappa=4.0)


def new_axes(n: int = 1):
    from matplotlib.figure import Figure

    fig = Figure(layout="constrained")
    axes = fig.subplots(1, n, squeeze=False)[0]
    return fig, list(axes)


# ---------------------------------------------------------------------------------------
def test_synthetic_density_is_normalised(ds):
    assert np.allclose(ds["mass"], 1.0, atol=1e-12)


def test_plot_result_writes_pngs(tmp_path, ds_noise):
    out = tmp_path / "new" / "dir"
    paths = plot_result(ds_noise, out, stem="run", dpi=50)
    names = [p.name for p in paths]
    assert names == ["run_summary.png", "run_spacetime.png", "run_snapshots.png",
                     "run_diagnostics.png"]
    for p in paths:
        assert p.parent == out
        assert p.stat().st_size > 1000
        assert p.read_bytes()[:8] == PNG_MAGIC
    # nothing else (no leftover temp files)
    assert sorted(x.name for x in out.iterdir()) == sorted(names)


def test_plot_result_default_stem_and_overwrite(tmp_path, ds):
    (tmp_path / "result_summary.png").write_bytes(b"old")
    paths = plot_result(ds, str(tmp_path), dpi=40)
    assert paths[0] == tmp_path / "result_summary.png"
    assert paths[0].read_bytes()[:8] == PNG_MAGIC
    assert sorted(x.name for x in tmp_path.iterdir()) == sorted(p.name for p in paths)


def test_plot_result_animation(tmp_path, monkeypatch):
    import meanfield.plotting

    # the frame cap (100 by default) lowered to keep the test fast
    monkeypatch.setattr(meanfield.plotting, "_MAX_FRAMES", 12)
    data = von_mises_dataset(n_time=31, n_theta=48)
    paths = plot_result(data, tmp_path, stem="anim", animate=True, dpi=40)
    gif = paths[-1]
    assert gif.name == "anim_animation.gif"
    assert gif.read_bytes()[:6] in GIF_MAGIC
    from PIL import Image

    with Image.open(gif) as img:
        assert img.n_frames == 12
    assert not [x for x in tmp_path.iterdir() if x.name.startswith(".")]


def test_summary_figure_axes_and_labels(ds, ds_noise):
    fig = figure(ds)
    # spacetime + colorbar + snapshots + 3 diagnostics (no free energy)
    assert len(fig.axes) == 6
    fig_noise = figure(ds_noise)
    assert len(fig_noise.axes) == 7
    title = fig_noise.get_suptitle()
    assert "β = 1" in title and "κ = 4" in title and "spectral" in title and "SA" in title
    assert "κ = ∞" in fig.get_suptitle()
    titles = [ax.get_title(loc="left") for ax in fig_noise.axes]
    assert any("free energy" in t for t in titles)
    assert any("mass error" in t for t in titles)


def test_spacetime_labels_and_ticks(ds):
    fig, (ax,) = new_axes()
    mesh = spacetime(ds, ax)
    assert mesh.get_array().size == ds.sizes["time"] * ds.sizes["theta"]
    assert ax.get_xlabel() == "θ (rad)"
    assert ax.get_ylabel().startswith("time")
    assert np.allclose(ax.get_xticks(), [0, np.pi / 2, np.pi, 3 * np.pi / 2, 2 * np.pi])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "π/2", "π", "3π/2", "2π"]
    assert len(fig.axes) == 2  # colorbar
    assert fig.axes[1].get_ylabel().startswith("ρ(θ, t)")


def test_spacetime_log_scale(ds):
    from matplotlib.colors import LogNorm

    fig, (ax,) = new_axes()
    mesh = spacetime(ds, ax, log=True, colorbar=False)
    assert isinstance(mesh.norm, LogNorm)
    assert mesh.norm.vmin > 0 and mesh.norm.vmax / mesh.norm.vmin <= 1e8 * (1 + 1e-12)
    assert len(fig.axes) == 1
    fig.canvas.draw()


def test_log_auto_for_clusters(ds):
    from matplotlib.colors import LogNorm

    sharp = von_mises_dataset(t_final=50.0)  # peak ~ 31 times the uniform density
    fig = figure(sharp)
    assert isinstance(fig.axes[0].collections[0].norm, LogNorm)
    assert any(ax.get_yscale() == "log" and ax.get_xlabel() == "θ (rad)" for ax in fig.axes)
    fig = figure(ds)  # smooth: linear scale
    assert not isinstance(fig.axes[0].collections[0].norm, LogNorm)
    fig = figure(sharp, log=False)
    assert not isinstance(fig.axes[0].collections[0].norm, LogNorm)
    with pytest.raises(ConfigError, match="log = 'yes'"):
        figure(ds, log="yes")


def test_snapshots_legend_and_times(ds):
    fig, (ax,) = new_axes()
    lines = snapshots(ds, ax, n=5)
    assert len(lines) == 5
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[1:] == ["t = 0", "t = 1.25", "t = 2.5", "t = 3.75", "t = 5"]
    fig, (ax,) = new_axes()
    lines = snapshots(ds, ax, times=[0.1, 2.0, 2.1, 100.0], reference=False)
    # nearest saved times: 0, 2 (twice, deduplicated), 5
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["t = 0", "t = 2", "t = 5"]
    # curves are closed over [0, 2π]
    x = lines[0].get_xdata()
    assert x[0] == 0 and x[-1] == pytest.approx(2 * np.pi)


def test_snapshots_many_curves_use_colorbar(ds):
    fig, (ax,) = new_axes()
    lines = snapshots(ds, ax, n=15)
    assert len(lines) == 15
    assert ax.get_legend() is None
    assert len(fig.axes) == 2


def test_diagnostics_panels(ds, ds_noise):
    axes = diagnostics(ds)
    assert [ax.get_title() for ax in axes] == ["order parameter", "energy",
                                               "mass error"]
    assert axes[-1].get_yscale() == "log"
    # exact conservation is floored, not log(0)
    assert np.all(axes[-1].get_lines()[0].get_ydata() >= 1e-17)
    assert all(ax.get_xlabel().startswith("time") for ax in axes)
    axes = diagnostics(ds_noise)
    assert len(axes) == 4 and axes[2].get_title() == "free energy"
    fig, given = new_axes(4)
    assert diagnostics(ds_noise, given) == given
    with pytest.raises(ValueError, match="needs 4 axes"):
        diagnostics(ds_noise, given[:3])


def test_unsorted_and_wrapped_theta_is_accepted(ds):
    shuffled = ds.assign_coords(theta=ds["theta"] - np.pi).isel(theta=slice(None, None, -1))
    fig, (ax,) = new_axes()
    mesh = spacetime(shuffled, ax, colorbar=False)
    # drawn in the sorted order: the same image as the original dataset
    fig2, (ax2,) = new_axes()
    original = spacetime(ds.isel(theta=np.r_[32:64, 0:32]).assign_coords(
        theta=np.sort(np.mod(shuffled["theta"].values, 2 * np.pi))), ax2, colorbar=False)
    assert np.allclose(mesh.get_array(), original.get_array())


# ---------------------------------------------------------------------------------------
def test_sphere_not_supported(ds):
    bad = ds.assign_attrs(geometry="sphere")
    with pytest.raises(ConfigError, match="'sphere'.*not supported yet; supported: 'circle'"):
        figure(bad)


def test_unknown_geometry(ds, tmp_path):
    with pytest.raises(ConfigError, match="'torus' is not a known geometry") as info:
        plot_result(ds.assign_attrs(geometry="torus"), tmp_path / "out")
    assert info.value.key == "geometry"
    assert not (tmp_path / "out").exists()  # nothing written before validation


def test_missing_density(ds):
    with pytest.raises(ConfigError, match="no 'density' variable.*found: .*energy") as info:
        figure(ds.drop_vars("density"))
    assert info.value.key == "density"


def test_wrong_density_dims(ds):
    bad = ds.assign(density=(("time", "component"), np.ones((ds.sizes["time"], 2))))
    with pytest.raises(ConfigError, match=r"'density' has dimensions \('time', 'component'\)"):
        spacetime(bad, new_axes()[1][0])


def test_not_a_dataset(ds):
    with pytest.raises(ConfigError, match="DataArray.*xarray.Dataset"):
        figure(ds["density"])


def test_bad_stem_and_snapshot_args(ds, tmp_path):
    with pytest.raises(ConfigError, match="stem"):
        plot_result(ds, tmp_path, stem="a/b")
    with pytest.raises(ConfigError, match="n = 0"):
        snapshots(ds, new_axes()[1][0], n=0)


def test_empty_time(ds):
    with pytest.raises(ConfigError, match="no saved times"):
        figure(ds.isel(time=slice(0, 0)))


def test_no_diagnostics(ds):
    bare = ds[["density", "weights"]]
    with pytest.raises(ConfigError, match="no diagnostic time series"):
        diagnostics(bare)
    fig = figure(bare)  # still draws the density panels
    assert len(fig.axes) == 3
