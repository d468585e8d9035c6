"""Tests for meanfield.plotting on synthetic circle and sphere datasets (no solver needed)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr
from scipy.special import i0e, i1e

from meanfield.errors import ConfigError
from meanfield.plotting import (
    diagnostics,
    figure,
    map_mollweide,
    map_orthographic,
    plot_result,
    snapshots,
    spacetime,
)

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
    import meanfield.plotting.output

    # the frame cap (100 by default) lowered to keep the test fast
    monkeypatch.setattr(meanfield.plotting.output, "_MAX_FRAMES", 12)
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
    # spacetime + colorbar + snapshots + 2 diagnostics (no free energy; the mass is a
    # caption, not a panel)
    assert len(fig.axes) == 5
    fig_noise = figure(ds_noise)
    assert len(fig_noise.axes) == 6
    title = fig_noise.get_suptitle()
    assert "β = 1" in title and "κ = 4" in title and "spectral" in title and "SA" in title
    assert "κ = ∞" in fig.get_suptitle()
    titles = [ax.get_title(loc="left") for ax in fig_noise.axes]
    assert any("free energy" in t for t in titles)
    assert not any("mass" in t for t in titles)


def test_spacetime_labels_and_ticks(ds):
    fig, (ax,) = new_axes()
    mesh = spacetime(ds, ax)
    # one cell repeated on each side of the seam
    assert mesh.get_array().size == ds.sizes["time"] * (ds.sizes["theta"] + 2)
    # relative to the last mean direction (1.0 rad), stated in the label
    assert ax.get_xlabel() == "θ − θ̄ (rad), θ̄ = 1.00 = mean direction at t = 5"
    assert ax.get_ylabel().startswith("time")
    assert np.allclose(ax.get_xticks(), [-np.pi, -np.pi / 2, 0, np.pi / 2, np.pi])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["−π", "−π/2", "0", "π/2", "π"]
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
    assert any(ax.get_yscale() == "log" and ax.get_xlabel().startswith("θ − θ̄ (rad)")
               for ax in fig.axes)
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
    assert legend[0] == "uniform" and legend[1] == "t = 0" and legend[-1] == "t = 5"
    # spread evenly over the change of the density, not over the clock: the L1 change
    # accumulated between consecutive snapshots is a quarter of the total each, to
    # within the largest change between two saves (the snapshots are saved times)
    rho = ds.density.values
    step = np.abs(np.diff(rho, axis=0)).sum(axis=1)
    done = np.concatenate([[0.0], np.cumsum(step)])
    shown = [float(text.split("= ")[1]) for text in legend[1:]]
    idx = [int(np.argmin(np.abs(ds.time.values - v))) for v in shown]
    np.testing.assert_allclose(np.diff(done[idx]), done[-1] / 4, atol=step.max())
    fig, (ax,) = new_axes()
    lines = snapshots(ds, ax, times=[0.1, 2.0, 2.1, 100.0], reference=False)
    # nearest saved times: 0, 2 (twice, deduplicated), 5
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["t = 0", "t = 2", "t = 5"]
    # curves are closed across the seam: they reach past both ends of [−π, π]
    x = lines[0].get_xdata()
    assert x[0] < -np.pi and x[-1] > np.pi and np.all(np.diff(x) > 0)


def test_snapshots_of_a_settled_run_do_not_repeat_the_settled_state():
    """Looked at: the noisy Kuramoto demo at κ = 4 settles by t ≈ 20 of 40, and its
    snapshots at t = 20, 30, 40 were one curve drawn three times. Here the density
    sharpens until t = 2.5 and then stays: of five snapshots one shows the settled
    state (the last), the others the transient."""
    ds = von_mises_dataset(t_final=5.0)
    k_settle = int(np.searchsorted(ds.time.values, 2.5))
    ds["density"][k_settle:] = ds["density"][k_settle].values
    fig, (ax,) = new_axes()
    snapshots(ds, ax, n=5)
    shown = [float(t.get_text().split("= ")[1]) for t in ax.get_legend().get_texts()[1:]]
    assert len(shown) == 5 and shown[-1] == 5.0
    assert sum(v >= 2.5 for v in shown) == 1, shown


def test_snapshots_many_curves_use_colorbar(ds):
    fig, (ax,) = new_axes()
    lines = snapshots(ds, ax, n=15)
    assert len(lines) == 15
    assert ax.get_legend() is None
    assert len(fig.axes) == 2


def test_diagnostics_panels(ds, ds_noise):
    axes = diagnostics(ds)
    assert [ax.get_title() for ax in axes] == ["order parameter", "energy"]
    assert all(ax.get_xlabel().startswith("time") for ax in axes)
    axes = diagnostics(ds_noise)
    assert len(axes) == 3 and axes[2].get_title() == "free energy"
    fig, given = new_axes(3)
    assert diagnostics(ds_noise, given) == given
    with pytest.raises(ValueError, match="needs 3 axes"):
        diagnostics(ds_noise, given[:2])


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


# ---------------------------------------------------------------------------------------
# sphere
# ---------------------------------------------------------------------------------------
def vmf_dataset(n_lat: int = 10, n_time: int = 6, kappa: float = math.inf,
                center=(1.0, 0.0, 0.0), rate: float = 3.0, t_final: float = 5.0) -> xr.Dataset:
    """Von Mises-Fisher densities with concentration k(t) = rate t around ``center``, on a
    Gauss-Legendre grid (n_lat latitudes, 2 n_lat longitudes) as meanfield.evolve writes.

    Uniform at t = 0 (order parameter 0, mean direction NaN).
    """
    x, w = np.polynomial.legendre.leggauss(n_lat)
    lat = np.arcsin(x)
    n_lon = 2 * n_lat
    lon = np.linspace(0.0, 2 * np.pi, n_lon, endpoint=False)
    weights = np.outer(w, np.full(n_lon, 2 * np.pi / n_lon))
    time = np.linspace(0.0, t_final, n_time)
    k = rate * time
    mu = np.asarray(center, dtype=float) / np.linalg.norm(center)
    dot = (np.cos(lat)[:, None] * np.cos(lon) * mu[0] + np.cos(lat)[:, None] * np.sin(lon)
           * mu[1] + np.sin(lat)[:, None] * mu[2])
    kk = np.maximum(k, 1e-300)[:, None, None]
    # k exp(k (x.mu - 1)) / (2π (1 - exp(-2k))), the uniform 1/(4π) at k = 0
    norm = np.where(kk > 1e-12, kk / (2 * np.pi * -np.expm1(-2 * kk)), 1 / (4 * np.pi))
    rho = norm * np.exp(kk * (dot[None] - 1.0))
    with np.errstate(divide="ignore"):
        r = np.where(k > 0, 1 / np.tanh(np.maximum(k, 1e-300)) - 1 / np.maximum(k, 1e-300), 0.0)
    mean = np.where(r[:, None] > 0, mu, np.nan)
    data_vars = {
        "density": (("time", "lat", "lon"), rho, {"units": "1/sr"}),
        "weights": (("lat", "lon"), weights, {"units": "sr"}),
        "mass": (("time",), (rho * weights).sum(axis=(1, 2))),
        "energy": (("time",), -0.5 * r**2),
        "order_parameter": (("time",), r),
        "mean_direction": (("time", "component"), mean),
    }
    return xr.Dataset(
        data_vars,
        coords={"time": time, "lat": ("lat", lat, {"units": "rad"}),
                "lon": ("lon", lon, {"units": "rad"}), "component": ["x", "y", "z"]},
        attrs={"geometry": "sphere", "method": "spectral", "model": "USA", "beta": 2.0,
               "kappa": kappa, "title": "vMF test"})


@pytest.fixture
def sph() -> xr.Dataset:
    return vmf_dataset()


def mollweide_axes(n: int = 1):
    from matplotlib.figure import Figure

    fig = Figure(layout="constrained")
    return fig, [fig.add_subplot(1, n, k + 1, projection="mollweide") for k in range(n)]


def render(fig) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()


def overlay(ax, marker: str):
    return [line for line in ax.get_lines() if line.get_marker() == marker]


def test_synthetic_sphere_density_is_normalised(sph):
    assert np.allclose(sph["mass"], 1.0, atol=1e-12)
    assert float(sph["order_parameter"][-1]) > 0.9


def test_sphere_plot_result_files(tmp_path, monkeypatch):
    import meanfield.plotting.output

    monkeypatch.setattr(meanfield.plotting.output, "_MAX_FRAMES", 4)
    data = vmf_dataset(n_lat=8, n_time=7, kappa=5.0)
    paths = plot_result(data, tmp_path, stem="s", animate=True, dpi=40,
                        points=[[0, 0, 1], [1, 1, 0]])
    assert [p.name for p in paths] == ["s_summary.png", "s_maps.png", "s_spacetime.png",
                                       "s_snapshots.png", "s_diagnostics.png",
                                       "s_animation.gif"]
    for p in paths[:-1]:
        assert p.read_bytes()[:8] == PNG_MAGIC
    from PIL import Image

    with Image.open(paths[-1]) as img:
        assert img.n_frames == 4
    assert sorted(x.name for x in tmp_path.iterdir()) == sorted(p.name for p in paths)


def test_sphere_summary_axes_and_projections(sph):
    fig = figure(sph)
    names = [ax.name for ax in fig.axes]
    # two Mollweide maps, the orthographic view, the shared colorbar, 2 diagnostics
    assert len(fig.axes) == 6
    assert names[:3] == ["mollweide", "mollweide", "rectilinear"]
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert titles[0] == "(a) t = 0" and titles[1] == "(b) t = 5"
    assert titles[2].startswith("(c) t = 5, facing")
    assert not any("mass" in t for t in titles)
    assert fig._supxlabel.get_text().startswith("mass: max over t of |M(t) − 1| = ")
    assert fig.axes[2].get_aspect() == 1.0 and not fig.axes[2].axison
    assert "USA model" in fig.get_suptitle() and "β = 2" in fig.get_suptitle()


def test_map_mollweide_covers_the_sphere(sph):
    fig, (ax,) = mollweide_axes()
    mesh = map_mollweide(sph, ax, time=2.2, smooth=False)
    # nearest saved time is t = 2; flat cells show the grid values of that time
    assert ax.get_title() == "t = 2"
    assert set(np.unique(mesh.get_array())) == set(np.unique(sph["density"].isel(time=2)))
    corners = mesh.get_coordinates()  # (rows + 1, columns + 1, 2): lon, lat
    assert corners[0, 0, 0] == -np.pi and corners[0, -1, 0] == np.pi  # seam edge to edge
    assert corners[0, 0, 1] == -np.pi / 2 and corners[-1, 0, 1] == np.pi / 2  # poles
    assert np.all(np.diff(corners[0, :, 0]) > 0) and np.all(np.diff(corners[:, 0, 1]) > 0)
    assert len(fig.axes) == 2 and fig.axes[1].get_ylabel() == "ρ (1/sr)"
    render(fig)


def test_map_mollweide_smooth_and_default_figure(sph):
    mesh = map_mollweide(sph)  # last time, new figure
    values = np.asarray(mesh.get_array())
    last = sph["density"].isel(time=-1).values
    # bilinear interpolation stays within the data range, on a finer grid
    assert values.min() >= last.min() * (1 - 1e-12) and values.max() <= last.max() * (1 + 1e-12)
    assert values.size > last.size
    assert mesh.axes.name == "mollweide" and mesh.axes.get_title() == "t = 5"
    # the mean direction (order parameter > 0) is marked with a cross at lon 0, lat 0
    (cross,) = overlay(mesh.axes, "+")
    assert np.allclose(cross.get_xdata(), 0.0) and np.allclose(cross.get_ydata(), 0.0)


def test_mollweide_seam_cells_odd_and_even():
    from meanfield.plotting.common import _periodic_edges
    from meanfield.plotting.densities.sphere import _mollweide_cells

    for n in (7, 8, 32):
        lon = np.linspace(0, 2 * np.pi, n, endpoint=False)
        edges = _periodic_edges(lon)
        b, column = _mollweide_cells(edges)
        assert b[0] == -np.pi and b[-1] == np.pi and np.all(np.diff(b) > 0)
        centres = np.mod(0.5 * (b[:-1] + b[1:]), 2 * np.pi)
        # every map cell shows the grid column whose angle is nearest
        distance = np.abs(np.angle(np.exp(1j * (centres - lon[column]))))
        assert np.all(distance <= np.pi / n + 1e-12)
        assert set(column) == set(range(n))


def test_mean_direction_cross_only_with_order(sph):
    _, (ax,) = mollweide_axes()
    map_mollweide(sph, ax, time=0)  # uniform: order parameter 0, mean direction NaN
    (cross,) = overlay(ax, "+")
    assert len(cross.get_xdata()) == 0


def test_points_overlay(sph):
    pts = np.array([[0.0, 0.0, 2.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    _, (ax,) = mollweide_axes()
    map_mollweide(sph, ax, points=pts)
    (dots,) = overlay(ax, "o")
    assert np.allclose(dots.get_ydata(), [np.pi / 2, 0.0, 0.0])
    assert np.allclose(dots.get_xdata(), [0.0, -np.pi, np.pi / 2])
    # orthographic: only the hemisphere facing (1, 0, 0); the point behind is dropped
    _, (ax,) = new_axes()
    map_orthographic(sph, ax, center=[1, 0, 0], points=pts)
    (dots,) = overlay(ax, "o")
    assert np.allclose(dots.get_xdata(), [0.0, 1.0]) and np.allclose(dots.get_ydata(), [1, 0])
    with pytest.raises(ConfigError, match=r"points has shape \(3, 2\)") as info:
        map_mollweide(sph, mollweide_axes()[1][0], points=pts[:, :2])
    assert info.value.key == "points"
    with pytest.raises(ConfigError, match="only drawn on sphere maps"):
        figure(von_mises_dataset(n_time=3), points=pts)


def test_map_orthographic(sph):
    fig, (ax,) = new_axes()
    mesh = map_orthographic(sph, ax)  # faces the mean direction (1, 0, 0)
    assert "facing 0°N 0°E" in ax.get_title()
    (cross,) = overlay(ax, "+")
    assert np.allclose(cross.get_xdata(), 0) and np.allclose(cross.get_ydata(), 0)
    # the far hemisphere is masked, the near one drawn
    mask = np.ma.getmaskarray(mesh.get_array())
    assert 0.3 < mask.mean() < 0.6
    assert ax.get_aspect() == 1.0 and len(fig.axes) == 2
    render(fig)
    # t = 0 has no mean direction: the view falls back to (1, 0, 0)
    fig, (ax,) = new_axes()
    map_orthographic(sph, ax, time=0, colorbar=False)
    assert "facing 0°N 0°E" in ax.get_title() and len(fig.axes) == 1
    fig, (ax,) = new_axes()
    map_orthographic(sph, ax, center=[0, 0, -3], log=True)
    assert "facing 90°S" in ax.get_title()
    with pytest.raises(ConfigError, match="center") as info:
        map_orthographic(sph, new_axes()[1][0], center=[0, 0])
    assert info.value.key == "center"
    with pytest.raises(ConfigError, match="ordinary axes; got a 'mollweide'"):
        map_orthographic(sph, mollweide_axes()[1][0])
    with pytest.raises(ConfigError, match="projection='mollweide'.*'rectilinear'"):
        map_mollweide(sph, new_axes()[1][0])


def test_sphere_snapshots_row(sph):
    fig, (ax,) = new_axes()
    meshes = snapshots(sph, ax, n=3)
    assert len(meshes) == 3
    axes = [m.axes for m in meshes]
    assert all(a.name == "mollweide" for a in axes) and ax not in fig.axes
    # first, last, and between them the save where half the density's change is done
    rho = sph.density.values.reshape(sph.sizes["time"], -1)
    done = np.concatenate([[0.0], np.cumsum(np.abs(np.diff(rho, axis=0)).sum(axis=1))])
    middle = sph.time.values[np.argmin(np.abs(done - done[-1] / 2))]
    assert [a.get_title() for a in axes] == ["t = 0", f"t = {middle:g}", "t = 5"]
    assert len({(m.norm.vmin, m.norm.vmax) for m in meshes}) == 1  # one colour scale
    assert len(fig.axes) == 4  # + one shared colorbar
    fig, given = mollweide_axes(2)
    assert [m.axes for m in snapshots(sph, given, times=[0, 5])] == given
    with pytest.raises(ConfigError, match="2 axes given for 3 snapshot maps"):
        snapshots(sph, mollweide_axes(2)[1], n=3)
    with pytest.raises(ConfigError, match="projection='mollweide'"):
        snapshots(sph, new_axes(2)[1], n=2)


def test_sphere_spacetime_is_max_over_longitude(sph):
    fig, (ax,) = new_axes()
    mesh = spacetime(sph, ax)
    expected = sph["density"].max("lon").values
    assert np.allclose(np.asarray(mesh.get_array()).reshape(expected.shape), expected)
    assert ax.get_xlabel() == "latitude" and ax.get_xlim() == (-90, 90)
    assert fig.axes[1].get_ylabel() == "max over longitude of ρ (1/sr)"


def test_sphere_log_auto():
    from matplotlib.colors import LogNorm

    sharp = vmf_dataset(rate=20.0)  # peak k/(2π) = 16 (1/sr), 200 times 1/(4π)
    fig = figure(sharp)
    assert isinstance(fig.axes[0].collections[0].norm, LogNorm)
    assert not isinstance(figure(sharp, log=False).axes[0].collections[0].norm, LogNorm)
    smooth = vmf_dataset(rate=0.3)
    assert not isinstance(figure(smooth).axes[0].collections[0].norm, LogNorm)


def test_bad_sphere_datasets(sph):
    with pytest.raises(ConfigError, match="no 'lat' coordinate") as info:
        figure(sph.drop_vars("lat"))
    assert info.value.key == "lat"
    with pytest.raises(ConfigError, match="no 'lon' coordinate"):
        map_mollweide(sph.drop_vars("lon"), mollweide_axes()[1][0])
    flat = sph.assign(density=sph["density"].isel(lon=0))
    with pytest.raises(ConfigError, match=r"'density' has dimensions \('time', 'lat'\); "
                       r"sphere plots need \('time', 'lat', 'lon'\)"):
        figure(flat)
    with pytest.raises(ConfigError, match="sphere plots need"):
        figure(sph.rename({"lat": "theta"}))
    with pytest.raises(ConfigError, match="not degrees"):
        figure(sph.assign_coords(lat=np.degrees(sph["lat"])))
    with pytest.raises(ConfigError, match="'mean_direction'.*3 components") as info:
        figure(sph.isel(component=slice(0, 2)))
    assert info.value.key == "mean_direction"
    with pytest.raises(ConfigError, match="map_mollweide draws sphere datasets"):
        map_mollweide(von_mises_dataset(n_time=3), mollweide_axes()[1][0])
    with pytest.raises(ConfigError, match="time = 'last'"):
        map_orthographic(sph, time="last")


def test_sphere_detected_without_geometry_attr_and_unsorted(sph):
    bare = sph.copy()
    del bare.attrs["geometry"]
    shuffled = bare.isel(lon=np.r_[5:20, 0:5], lat=slice(None, None, -1))
    shuffled = shuffled.assign_coords(lon=shuffled["lon"] - 2 * np.pi)  # in [-2π, 0)
    _, (ax,) = mollweide_axes()
    mesh = map_mollweide(shuffled, ax, smooth=False, colorbar=False)
    _, (ax2,) = mollweide_axes()
    original = map_mollweide(sph, ax2, smooth=False, colorbar=False)
    assert np.allclose(mesh.get_array(), original.get_array())


def test_sphere_cell_dataset_is_drawn_by_nearest_cell(tmp_path):
    """Finite-volume results hold densities on mesh cells: (time, cell) with the centres'
    lat(cell), lon(cell); the maps sample that piecewise-constant function."""
    import xarray as xr

    from meanfield.plotting.densities.sphere import _cells_to_latlon
    from solvers.grids.mesh import icosahedral_mesh

    mesh = icosahedral_mesh(3)
    c = mesh.centers
    rho = np.stack([np.exp(3 * c[:, 2]), np.exp(6 * c[:, 0])])
    rho /= (rho @ mesh.weights)[:, None]
    ds = xr.Dataset({"density": (("time", "cell"), rho), "weights": (("cell",), mesh.weights),
                     "order_parameter": (("time",), [0.5, 0.8])},
                    coords={"time": [0.0, 1.0], "lat": ("cell", np.arcsin(c[:, 2])),
                            "lon": ("cell", np.mod(np.arctan2(c[:, 1], c[:, 0]), 2 * np.pi))},
                    attrs={"geometry": "sphere", "model": "SA", "beta": 1.0,
                           "kappa": float("inf"), "method": "finite-volume"})
    grid = _cells_to_latlon(ds)
    assert grid.density.dims == ("time", "lat", "lon")
    assert set(np.unique(grid.density.values[0])) <= set(rho[0])  # values of cells only
    written = plot_result(ds, tmp_path, stem="cells")
    assert all(p.stat().st_size > 5000 for p in written)


def test_the_mean_direction_cross_is_explained_in_the_caption(sph):
    """Looked at: every sphere map carried a cyan cross that no figure explained. Each
    figure that draws it (the standard pages, a map of its own) now says in its caption
    that it is the mean direction; a figure without it says nothing of it."""
    from meanfield.plotting import map_mollweide, plot

    explained = []
    for name, fig in plot(sph).items():
        drawn = [line for line in fig.findobj(lambda a: getattr(a, "get_gid", None)
                                              and a.get_gid() == "mean_direction")
                 if np.size(line.get_xdata())]
        note = fig._supxlabel.get_text() if fig._supxlabel is not None else ""
        assert bool(drawn) == ("mean direction" in note), name
        explained += [name] if drawn else []
    assert "summary" in explained
    assert "mean direction" in map_mollweide(sph).axes.figure._supxlabel.get_text()


def test_gif_frames_keep_a_smooth_colour_bar(tmp_path):
    """Looked at: the sphere GIF's colour bar came out in bands (Pillow gave each frame
    its own 256 colours). The animation writer now builds one palette for all frames
    and dithers: averaged over 4 x 4 pixels, the last frame of a magma gradient with a
    cyan and a green line matches its full-colour rendering to 4/255 in every channel
    (measured 2.5; the per-frame palettes gave 6.7, steps of the bands), the background
    stays pure white and the rare cyan survives."""
    import io
    from pathlib import Path

    from PIL import Image

    from meanfield.plotting.helpers import _new_figure, _save_animation

    fig = _new_figure((3.0, 2.0))
    ax = fig.add_subplot()
    grad = np.linspace(0, 1, 256)[:, None] * np.ones((1, 8))
    img = ax.imshow(grad, aspect="auto", cmap="magma", origin="lower")
    ax.plot([2, 5], [50, 200], color="#00e5ff", lw=3)
    ax.plot([1, 6], [200, 20], color="C2", lw=2)
    ax.set_title("a gradient")

    def update(i):
        img.set_data(grad * (0.8 + 0.2 * i / 3))

    path = Path(tmp_path) / "g.gif"
    _save_animation(fig, update, np.arange(4), path, fps=4, dpi=60)
    update(3)
    buf = io.BytesIO()
    fig.savefig(buf, format="rgba", dpi=60)
    w, h = (int(round(v * 60)) for v in fig.get_size_inches())
    raw = np.asarray(Image.frombuffer("RGBA", (w, h), buf.getbuffer(), "raw", "RGBA", 0, 1)
                     .convert("RGB"), dtype=float)
    with Image.open(path) as gif:
        assert gif.n_frames == 4
        gif.seek(3)
        got = np.asarray(gif.convert("RGB"), dtype=float)

    def box(a, k=4):
        rows, cols = a.shape[0] // k * k, a.shape[1] // k * k
        return a[:rows, :cols].reshape(rows // k, k, cols // k, k, 3).mean(axis=(1, 3))

    assert np.abs(box(raw) - box(got)).max() < 4.0
    assert np.all(got[0, 0] == 255)
    assert np.any(np.all(np.abs(got - [0, 229, 255]) < 3, axis=-1))
