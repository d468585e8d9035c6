"""Tests for the token and PDE-vs-token figures of meanfield.plotting, on synthetic datasets
laid out as meanfield.particles and meanfield.compare write them (no solver needed)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr
from scipy.special import i0e, i1e

from meanfield.errors import ConfigError
from meanfield.plotting import (
    density_vs_histogram,
    diagnostics,
    figure,
    gram,
    histogram_map,
    l1_distance,
    map_mollweide,
    order_comparison,
    plot_result,
    spacetime,
    token_map,
    trajectories,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
GIF_MAGIC = (b"GIF87a", b"GIF89a")


# ---------------------------------------------------------------------------------------
# synthetic datasets
# ---------------------------------------------------------------------------------------
def fibonacci_sphere(m: int) -> np.ndarray:
    """m nearly uniformly spread unit vectors (the centres of equal-area bins)."""
    k = np.arange(m) + 0.5
    z = 1 - 2 * k / m
    phi = math.pi * (1 + 5**0.5) * k
    r = np.sqrt(1 - z**2)
    return np.column_stack([r * np.cos(phi), r * np.sin(phi), z])


def contracting_tokens(n: int, d: int, n_time: int, centres: np.ndarray,
                       seed: int = 0) -> np.ndarray:
    """Uniform tokens on S^{d-1} moving towards their nearest of ``centres`` (rate 1)."""
    rng = np.random.default_rng(seed)
    x0 = rng.standard_normal((n, d))
    x0 /= np.linalg.norm(x0, axis=1, keepdims=True)
    c = centres[np.argmax(x0 @ centres.T, axis=1)]
    time = np.linspace(0.0, 4.0, n_time)
    w = np.exp(-time)[:, None, None]
    x = w * x0[None] + (1 - w) * c[None]
    return time, x / np.linalg.norm(x, axis=2, keepdims=True)


def particles_dataset(n: int = 40, d: int = 2, n_time: int = 9, model: str = "SA",
                      pre_ln: bool = False, rank: bool = True) -> xr.Dataset:
    centres = np.eye(d)[:2] if d != 3 else np.array([[1.0, 0, 0], [0, 0.6, 0.8]])
    if d == 2:
        centres = np.array([[1.0, 0.0], [-0.6, 0.8]])
    time, x = contracting_tokens(n, d, n_time, centres)
    mean = x.mean(axis=1)
    r = np.linalg.norm(mean, axis=1)
    energy = -0.5 * r**2 if model != "hardmax" else np.full(n_time, np.nan)
    data = {
        "position": (("time", "particle", "component"), x, {"units": "1"}),
        "order_parameter": (("time",), r),
        "energy": (("time",), energy),
        "clusters": (("time",), np.maximum(2, np.rint(n * np.exp(-2 * time))).astype(int),
                     {"threshold": 0.05}),
        "mean_direction": (("time", "component"), mean / r[:, None]),
    }
    if d == 2:
        data["angle"] = (("time", "particle"), np.mod(np.arctan2(x[..., 1], x[..., 0]),
                                                      2 * np.pi), {"units": "rad"})
    if rank:
        data["attention_rank"] = (("time",), np.maximum(2, n - 3 * np.arange(n_time)))
    if pre_ln:
        data["radius"] = (("time", "particle"), 1.0 + time[:, None] * np.ones((1, n)))
    comps = ["x", "y", "z"] if d == 3 else ["x", "y"] if d == 2 else \
        [f"x{k + 1}" for k in range(d)]
    ds = xr.Dataset(data, coords={"time": ("time", time, {"units": "1"}),
                                  "particle": np.arange(n), "component": comps})
    ds.attrs.update({"kind": "particles", "geometry": "circle" if d == 2 else "sphere",
                     "dim": d, "model": model, "beta": 1.0, "kappa": math.inf, "n": n,
                     "title": f"{n} tokens, {model}, beta = 1", "config": "{}",
                     "status": 0, "message": "finished"})
    return ds


def compare_circle(n_theta: int = 64, n_time: int = 7, bins: int = 24, runs: int = 3,
                   n: int = 200) -> xr.Dataset:
    """A von Mises PDE sharpening around 1 rad and histograms of samples of it."""
    rng = np.random.default_rng(1)
    theta = np.linspace(0.0, 2 * np.pi, n_theta, endpoint=False)
    time = np.linspace(0.0, 3.0, n_time)
    k = 0.2 + 2.0 * time
    rho = np.exp(k[:, None] * (np.cos(theta[None] - 1.0) - 1)) / (2 * np.pi * i0e(k)[:, None])
    edges = np.linspace(0.0, 2 * np.pi, bins + 1)
    width = np.diff(edges)
    samples = np.stack([np.mod(rng.vonmises(1.0, kk, size=(runs, n)), 2 * np.pi)
                        for kk in k])  # time, run, token
    counts = np.stack([[np.histogram(s, edges)[0] for s in st] for st in samples])
    q = np.stack([np.interp(0.5 * (edges[:-1] + edges[1:]), theta, r) for r in rho]) * width
    p_member = counts / n
    p = p_member.mean(axis=1)
    r_pde = i1e(k) / i0e(k)
    r_tokens = np.abs(np.exp(1j * samples).mean(axis=2))
    x = np.stack([np.cos(samples[:, 0]), np.sin(samples[:, 0])], axis=-1)
    ds = xr.Dataset(
        {"density": (("time", "theta"), rho, {"units": "1/rad"}),
         "weights": (("theta",), np.full(n_theta, 2 * np.pi / n_theta)),
         "pde_bin_density": (("time", "bin"), q / width, {"units": "1/rad"}),
         "particle_density": (("time", "bin"), p / width, {"units": "1/rad"}),
         "bin_size": (("bin",), width),
         "l1_distance": (("time",), np.abs(p - q).sum(axis=1)),
         "l1_distance_member": (("time", "run"), np.abs(p_member - q[:, None]).sum(axis=2)),
         "l1_noise_floor": (("time",), np.sqrt(2 * q * (1 - q) / (np.pi * runs * n)).sum(1)),
         "order_parameter": (("time",), r_pde),
         "particle_order_parameter": (("time", "run"), r_tokens),
         "energy": (("time",), -0.5 * r_pde**2),
         "particle_energy": (("time", "run"), -0.5 * r_tokens**2),
         "position": (("time", "particle", "component"), x),
         "bin_edges": (("bin_edge",), edges)},
        coords={"time": time, "run": np.arange(runs), "theta": ("theta", theta),
                "bin": 0.5 * (edges[:-1] + edges[1:]), "component": ["x", "y"],
                "particle": np.arange(n)},
        attrs={"geometry": "circle", "kind": "compare", "n": n, "ensemble": runs,
               "bins": bins, "title": "PDE vs tokens: test, beta = 1", "method": "spectral",
               "model": "SA", "beta": 1.0, "kappa": math.inf})
    return ds


def compare_sphere(fv: bool = False, n_time: int = 4, bins: int = 80, runs: int = 2,
                   n: int = 300) -> xr.Dataset:
    """A von Mises-Fisher PDE around the north pole, on a (lat, lon) grid or on cells,
    and noisy histograms of it on ``bins`` equal-area bins."""
    rng = np.random.default_rng(2)
    time = np.linspace(0.0, 2.0, n_time)
    k = 0.5 + 3.0 * time

    def vmf(z: np.ndarray) -> np.ndarray:  # (time, ...) densities at heights z
        kk = k.reshape((-1,) + (1,) * z.ndim)
        return kk * np.exp(kk * (z[None] - 1)) / (2 * np.pi * -np.expm1(-2 * kk))

    centres = fibonacci_sphere(bins)
    area = np.full(bins, 4 * np.pi / bins)
    q = vmf(centres[:, 2]) * area
    counts = np.stack([rng.multinomial(n, qq / qq.sum(), size=runs) for qq in q])
    p_member = counts / n
    p = p_member.mean(axis=1)
    r_pde = 1 / np.tanh(k) - 1 / k
    data = {
        "pde_bin_density": (("time", "bin"), q / area, {"units": "1/sr"}),
        "particle_density": (("time", "bin"), p / area, {"units": "1/sr"}),
        "bin_size": (("bin",), area),
        "l1_distance": (("time",), np.abs(p - q).sum(axis=1)),
        "l1_distance_member": (("time", "run"), np.abs(p_member - q[:, None]).sum(axis=2)),
        "l1_noise_floor": (("time",), np.sqrt(2 * q * (1 - q) / (np.pi * runs * n)).sum(1)),
        "order_parameter": (("time",), r_pde),
        "particle_order_parameter": (("time", "run"), r_pde[:, None] + 0.02 * rng.standard_normal(
            (n_time, runs))),
        "mean_direction": (("time", "component"), np.tile([0.0, 0.0, 1.0], (n_time, 1))),
    }
    coords = {"time": time, "run": np.arange(runs), "bin": np.arange(bins),
              "bin_lat": ("bin", np.arcsin(centres[:, 2])),
              "bin_lon": ("bin", np.mod(np.arctan2(centres[:, 1], centres[:, 0]), 2 * np.pi)),
              "component": ["x", "y", "z"]}
    if fv:
        cells = fibonacci_sphere(200)
        data["density"] = (("time", "cell"), vmf(cells[:, 2]), {"units": "1/sr"})
        data["weights"] = (("cell",), np.full(200, 4 * np.pi / 200))
        coords.update(lat=("cell", np.arcsin(cells[:, 2])),
                      lon=("cell", np.mod(np.arctan2(cells[:, 1], cells[:, 0]), 2 * np.pi)))
    else:
        x, w = np.polynomial.legendre.leggauss(8)
        lat, lon = np.arcsin(x), np.linspace(0, 2 * np.pi, 16, endpoint=False)
        data["density"] = (("time", "lat", "lon"),
                           np.repeat(vmf(np.sin(lat))[:, :, None], 16, axis=2),
                           {"units": "1/sr"})
        data["weights"] = (("lat", "lon"), np.outer(w, np.full(16, 2 * np.pi / 16)))
        coords.update(lat=("lat", lat), lon=("lon", lon))
    return xr.Dataset(data, coords=coords, attrs={
        "geometry": "sphere", "kind": "compare", "n": n, "ensemble": runs, "bins": bins,
        "title": "PDE vs tokens: sphere test", "method": "finite-volume" if fv else "spectral",
        "model": "USA", "beta": 2.0, "kappa": math.inf})


def render(fig) -> None:
    fig.canvas.draw()


def map_axes(fig) -> list:
    return [ax for ax in fig.axes if ax.name == "mollweide"]


# ---------------------------------------------------------------------------------------
# particles
# ---------------------------------------------------------------------------------------
def test_circle_particles_summary():
    from matplotlib.collections import LineCollection

    ds = particles_dataset(n=40)
    fig = figure(ds)
    render(fig)
    # trajectories + circle + order, energy, clusters, attention rank
    assert len(fig.axes) == 6
    assert "40 tokens on S¹" in fig.get_suptitle() and "β = 1" in fig.get_suptitle()
    traj = fig.axes[0]
    lines = [c for c in traj.collections if isinstance(c, LineCollection)]
    assert len(lines) == 1 and len(lines[0].get_segments()) >= 40
    assert traj.get_xlabel().startswith("θ − θ̄ (rad)") and "time" in traj.get_ylabel()
    titles = " ".join(ax.get_title(loc="left") for ax in fig.axes)
    for word in ("(a) trajectories", "order parameter", "energy", "(e) clusters",
                 "attention rank"):
        assert word in titles
    assert fig.axes[4].get_yscale() == "log"  # clusters: 40 down to 2
    # looked at: the counts were labelled 50.0, 20.0, 2.0; now integers (2^k)
    from tests.meanfield.plotting.figure_checks import non_integer_ticks

    labels = [t.get_text() for t in fig.axes[4].yaxis.get_ticklabels() if t.get_text()]
    assert labels and non_integer_ticks(fig.axes[4].yaxis) == []
    assert not any("." in label for label in labels), labels


def test_circle_many_tokens_draw_a_density_image():
    ds = particles_dataset(n=500, pre_ln=True, model="hardmax", rank=False)
    fig, ax = _axes()
    mesh = trajectories(ds, ax)
    # round(sqrt(500)) = 22 made odd: 23 bins, the middle one centred on the mean
    assert mesh.get_array().shape[-1] == 23 or mesh.get_array().size == 9 * 23
    assert "token density" in fig.axes[-1].get_ylabel()  # the colorbar
    full = figure(ds)
    titles = [ax.get_title(loc="left") for ax in full.axes]
    # hardmax: no energy panel (all NaN); Pre-LN: the mean radius
    assert not any("energy" in t for t in titles)
    assert any("mean radius" in t for t in titles)


def _axes(n: int = 1, projection=None):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, n, k + 1, projection=projection) for k in range(n)]
    return fig, axes[0] if n == 1 else axes


def test_sphere_particles_summary_and_maps():
    ds = particles_dataset(n=60, d=3)
    fig = figure(ds)
    render(fig)
    # 3 orthographic views + Mollweide + colorbar + 4 diagnostics
    assert len(fig.axes) == 9
    assert len(map_axes(fig)) == 1
    assert "initial longitude" in fig.axes[4].get_ylabel()
    _, ax = _axes()
    scatter = token_map(ds, ax, time=0.0)
    offsets = scatter.get_offsets()
    assert offsets.shape == (60, 2)
    visible = np.isfinite(offsets).all(axis=1)
    assert 0 < visible.sum() < 60  # the far side is hidden
    assert np.all(np.hypot(*offsets[visible].T) <= 1 + 1e-12)
    _, moll = _axes(projection="mollweide")
    assert np.isfinite(token_map(ds, moll, projection="mollweide").get_offsets()).all()
    standalone = token_map(ds, center=[0, 0, 1])
    assert standalone.axes.figure is not None
    with pytest.raises(ConfigError, match="projection = 'globe'"):
        token_map(ds, projection="globe")
    with pytest.raises(ConfigError, match="R\\^3; this dataset has d = 2"):
        token_map(particles_dataset())


def test_high_dimensional_particles_gram():
    ds = particles_dataset(n=50, d=8)
    fig = figure(ds)
    render(fig)
    # Gram first, Gram last + colorbar, principal plane, 4 diagnostics
    assert len(fig.axes) == 8
    image = fig.axes[1].get_images()[0]
    g = image.get_array()
    assert g.shape == (50, 50)
    assert np.allclose(np.diag(g), 1.0)
    # at the end the tokens sit at two orthogonal centres: clustered order gives 2 blocks
    values = np.unique(np.abs(np.round(np.asarray(g), 1)))
    assert set(values) <= {0.0, 1.0}
    first_row = np.asarray(g[0]) > 0.5
    assert np.all(np.diff(first_row.astype(int)) <= 0) or np.all(
        np.diff(first_row.astype(int)) >= 0)  # one contiguous block
    _, ax = _axes()
    img = gram(ds, ax, time=0.0, max_tokens=20)
    assert img.get_array().shape == (20, 20)
    with pytest.raises(ConfigError, match="permutation"):
        gram(ds, ax, order=[0, 0, 1])


def test_particles_plot_result_files_and_animation(tmp_path, monkeypatch):
    import meanfield.plotting.output
    from PIL import Image

    monkeypatch.setattr(meanfield.plotting.output, "_MAX_FRAMES", 5)
    paths = plot_result(particles_dataset(n=30), tmp_path, stem="tok", dpi=40, animate=True)
    assert [p.name for p in paths] == ["tok_summary.png", "tok_tokens.png",
                                       "tok_diagnostics.png", "tok_animation.gif"]
    for p in paths[:-1]:
        assert p.read_bytes()[:8] == PNG_MAGIC and p.stat().st_size > 1000
    assert paths[-1].read_bytes()[:6] in GIF_MAGIC
    with Image.open(paths[-1]) as img:
        assert img.n_frames == 5
    # nothing else (no leftover temp files)
    assert sorted(x.name for x in tmp_path.iterdir()) == sorted(p.name for p in paths)


@pytest.mark.parametrize("d", [3, 8])
def test_particles_animation_sphere_and_high_dimension(tmp_path, d):
    from PIL import Image

    from meanfield.plotting.common import _KINDS

    kind, path = _KINDS["particles"], tmp_path / "a.gif"  # the GIF plot_result writes
    kind.animate(kind.check(particles_dataset(n=25, d=d)), path, dpi=30, fps=5, max_frames=3)
    with Image.open(path) as img:
        assert img.n_frames == 3


def test_particles_diagnostics_and_density_functions():
    ds = particles_dataset()
    axes = diagnostics(ds)
    assert [ax.get_title() for ax in axes][2].startswith("clusters")
    with pytest.raises(ValueError, match="needs 4 axes"):
        diagnostics(ds, axes[:2])
    _, ax = _axes()
    with pytest.raises(ConfigError, match="holds tokens, not a density"):
        spacetime(ds, ax)


def test_bad_particle_datasets(tmp_path):
    ds = particles_dataset()
    with pytest.raises(ConfigError, match="no 'position' variable") as info:
        figure(ds.drop_vars("position"))
    assert info.value.key == "position"
    with pytest.raises(ConfigError, match="'position' has dimensions"):
        figure(ds.isel(particle=0))
    with pytest.raises(ConfigError, match="'angle' has dimensions"):
        figure(ds.assign(angle=ds["angle"].isel(time=0)))
    with pytest.raises(ConfigError, match="circle needs 2"):
        figure(particles_dataset(d=3).assign_attrs(geometry="circle"))
    with pytest.raises(ConfigError, match="kind 'tokens' is not known") as info:
        figure(ds.assign_attrs(kind="tokens"))
    assert info.value.key == "kind"
    with pytest.raises(ConfigError, match="points"):
        plot_result(ds, tmp_path, points=[[1, 0, 0]])
    with pytest.raises(ConfigError, match="no saved times"):
        figure(ds.isel(time=slice(0, 0)))
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------------------
def test_compare_circle_summary():
    from matplotlib.patches import StepPatch

    ds = compare_circle()
    assert np.allclose(ds["pde_bin_density"].values @ ds["bin_size"].values, 1.0, atol=0.01)
    fig = figure(ds)
    render(fig)
    # 4 snapshots + L1 + order + energy
    assert len(fig.axes) == 7
    snap = fig.axes[0]
    assert len([p for p in snap.patches if isinstance(p, StepPatch)]) == 1
    assert [t.get_text() for t in snap.get_legend().get_texts()] == [
        "uniform", "tokens (3 × 200)", "PDE"]
    l1 = fig.axes[4]
    assert l1.get_yscale() == "log"
    assert "noise floor" in " ".join(t.get_text() for t in l1.get_legend().get_texts())
    assert "PDE vs 3 × 200 tokens" in fig.get_suptitle()


def test_compare_circle_panels():
    ds = compare_circle(runs=1)
    _, ax = _axes()
    line, steps = density_vs_histogram(ds, ax, time=3.0, log=True)
    assert ax.get_yscale() == "log" and ax.get_title() == "t = 3"
    # the bins in the frame of the mean direction, one repeated on each side of the seam
    values, edges = steps.get_data().values, steps.get_data().edges
    assert edges[0] < -np.pi and edges[-1] > np.pi and np.all(np.diff(edges) > 0)
    hist = ds["particle_density"].values[-1]
    assert np.allclose(np.sort(values[1:-1]), np.sort(hist))
    assert values[0] == values[-2] and values[-1] == values[1]
    _, (a1, a2) = _axes(2)
    assert len(l1_distance(ds, a1)) == 2  # pooled and floor; one run: no band
    assert len(order_comparison(ds, a2)) == 2
    assert [t.get_text() for t in a2.get_legend().get_texts()] == ["PDE", "tokens"]
    # the PDE density is still drawable by the generic functions
    spacetime(ds, _axes()[1])


def test_compare_sphere_spectral_and_fv(tmp_path):
    for fv in (False, True):
        ds = compare_sphere(fv=fv)
        fig = figure(ds)
        render(fig)
        # 3 PDE maps + 3 histogram maps + colorbar + L1 + order
        assert len(fig.axes) == 9
        assert len(map_axes(fig)) == 6
        titles = [ax.get_title(loc="left") for ax in map_axes(fig)]
        assert titles[0].endswith("PDE, t = 0") and titles[3].endswith("tokens, t = 0")
    _, (a, b) = _axes(2, projection="mollweide")
    mesh = histogram_map(ds, a, time=2.0, colorbar=False)
    values = np.asarray(mesh.get_array()).ravel()
    assert set(np.round(np.unique(values), 10)) <= set(
        np.round(ds["particle_density"].values[-1], 10))  # bin values only: no smoothing
    map_mollweide(ds, b)  # the PDE part as a PDE result
    with pytest.raises(ConfigError, match="circle comparisons"):
        density_vs_histogram(ds, a)
    with pytest.raises(ConfigError, match="sphere comparisons"):
        histogram_map(compare_circle())


def test_compare_plot_result_and_animation(tmp_path):
    from PIL import Image

    from meanfield.plotting.common import _KINDS

    paths = plot_result(compare_circle(), tmp_path / "c", stem="cmp", dpi=40)
    assert [p.name for p in paths] == ["cmp_summary.png", "cmp_snapshots.png",
                                       "cmp_distance.png"]
    assert all(p.read_bytes()[:8] == PNG_MAGIC and p.stat().st_size > 1000 for p in paths)
    for name, ds in (("circle", compare_circle(n_time=3)), ("sphere", compare_sphere(fv=True))):
        path = tmp_path / f"{name}.gif"
        _KINDS["compare"].animate(_KINDS["compare"].check(ds), path, dpi=30, fps=5,
                                  max_frames=3)
        with Image.open(path) as img:
            assert img.n_frames == 3


def test_bad_compare_datasets():
    ds = compare_circle()
    with pytest.raises(ConfigError, match="no 'particle_density' variable") as info:
        figure(ds.drop_vars("particle_density"))
    assert info.value.key == "particle_density"
    with pytest.raises(ConfigError, match="no 'l1_distance'"):
        figure(ds.drop_vars("l1_distance"))
    with pytest.raises(ConfigError, match="no 'density' variable"):
        figure(ds.drop_vars("density"))
    with pytest.raises(ConfigError, match="'bin_edges' has 3 values"):
        figure(ds.isel(bin_edge=slice(0, 3)))
    with pytest.raises(ConfigError, match="'l1_distance_member' has dimensions"):
        figure(ds.assign(l1_distance_member=ds["l1_distance_member"].isel(run=0)))
    sph = compare_sphere()
    with pytest.raises(ConfigError, match="'bin_lat'") as info:
        figure(sph.drop_vars("bin_lat"))
    assert info.value.key == "bin_lat"
    with pytest.raises(ConfigError, match="geometry = 'circle', 'sphere' or 'zonal'"):
        figure(ds.assign_attrs(geometry="torus"))


def test_gram_page_of_a_settled_run_shows_the_motion_not_the_settled_state():
    """Looked at: 64 tokens on S^15 that cluster by t = 11 of 30 drew four identical
    Gram matrices (t = 7.5 .. 30). The Gram page now spreads its five times over the
    tokens' motion: tokens frozen from the middle save on appear in one panel only."""
    from meanfield.plotting import plot

    ds = particles_dataset(n=12, d=5, n_time=9)
    frozen = ds["position"].values.copy()
    frozen[4:] = frozen[4]
    ds["position"] = (ds["position"].dims, frozen)
    fig = plot(ds)["tokens"]
    titles = [ax.get_title() for ax in fig.axes if ax.get_title().startswith("t = ")]
    times = [float(title.split("= ")[1]) for title in titles]
    settled = float(ds.time.values[4])
    assert len(times) == 5 and times[-1] == float(ds.time.values[-1])
    assert sum(v >= settled for v in times) == 1, times
