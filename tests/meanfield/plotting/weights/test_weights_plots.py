"""Smoke tests of the figures of tokens in R^d with general weights
(meanfield.plotting.weights.panels and its dispatch, meanfield.plotting.weights.figures),
on short rescaled runs laid out as the particle runs write them: the figures are made, labelled, saved, and show the numbers the
metrics compute."""
from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr
from matplotlib.figure import Figure
from scipy.integrate import solve_ivp

from meanfield.cli import main
from meanfield.config import to_json
from meanfield.config.registry import validate
from meanfield.model.weighted_attention import build_heads
from meanfield.errors import ConfigError
from meanfield.metrics.limit_geometry import hull_vertices, hyperplane_values
from meanfield.model.weighted_attention import (
    pure_velocity, rescaled_attention, rescaled_velocity)
from meanfield.plotting import figure, plot_result
from meanfield.plotting.weights.figures import limit_kind
from meanfield.plotting.weights.panels import (
    attention_snapshots, boolean_distance_plot, hyperplane_plot, origin_plot, polytope_plot,
    token_paths, token_series)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run_dataset(weights: dict, d: int, n: int, t_final: float, saves: int, *,
                rescaled: bool = True, save_attention: bool = True,
                config: bool = True) -> xr.Dataset:
    """A particle dataset of a short run of the pure (or rescaled) flow."""
    cfg = validate({"domain": {"geometry": "euclidean", "dim": d}, "weights": weights,
                    "particles": {"n": n, "architecture": "pure", "rescaled": rescaled}},
                   "particles")
    head = build_heads(json.loads(to_json(cfg)))[0]
    z0 = np.random.default_rng(0).standard_normal((n, d))
    times = np.linspace(0.0, t_final, saves + 1)
    if rescaled:
        def f(t, y):
            return rescaled_velocity(y.reshape(n, d), t, head).ravel()
    else:
        def f(t, y):
            return pure_velocity(y.reshape(n, d), head).ravel()
    sol = solve_ivp(f, (0.0, t_final), z0.ravel(), method="DOP853", rtol=1e-8, atol=1e-10,
                    t_eval=times)
    z = sol.y.T.reshape(len(times), n, d)
    ds = xr.Dataset({"position": (("time", "particle", "component"), z)},
                    coords={"time": times})
    if save_attention:
        ds["attention"] = (("time", "particle", "key"),
                           np.stack([rescaled_attention(zk, t, head) for t, zk in
                                     zip(times, z)]))
    ds.attrs.update(kind="particles", geometry="euclidean", rescaled=int(rescaled))
    if config:
        ds.attrs["config"] = to_json(cfg)
    return ds


@pytest.fixture(scope="module")
def polytope2():
    return run_dataset({"key": {"kind": "symmetric", "eigenvalues": [0.8, 1.25],
                                "seed": 0}}, 2, 16, 8.0, 16)


@pytest.fixture(scope="module")
def polytope3():
    return run_dataset({}, 3, 16, 8.0, 8, save_attention=False)


@pytest.fixture(scope="module")
def hyperplanes2():
    return run_dataset({"value": {"kind": "symmetric", "eigenvalues": [1.35, -0.07],
                                  "seed": 1}}, 2, 16, 6.0, 12)


def saved(fig: Figure, tmp_path, name: str) -> None:
    path = tmp_path / f"{name}.png"
    fig.savefig(path, dpi=60)
    assert path.read_bytes()[:8] == PNG_MAGIC


def labelled(fig: Figure) -> None:
    for ax in fig.get_axes():
        if ax.get_label() == "<colorbar>":
            continue
        assert ax.get_xlabel(), ax


def test_each_panel_draws_and_saves(polytope2, polytope3, hyperplanes2, tmp_path):
    figs = {
        "paths2": token_paths(polytope2), "paths3": token_paths(polytope3),
        "paths_planes": token_paths(hyperplanes2, value_matrix=token_series(
            hyperplanes2).value),
        "attention": attention_snapshots(polytope2, count=3),
        "attention_computed": attention_snapshots(polytope3),  # from the config's head
        "boolean": boolean_distance_plot(polytope2),
        "polytope2": polytope_plot(polytope2), "polytope3": polytope_plot(polytope3),
        "planes": hyperplane_plot(hyperplanes2), "origin": origin_plot(polytope2),
    }
    for name, fig in figs.items():
        assert isinstance(fig, Figure)
        labelled(fig)
        saved(fig, tmp_path, name)
    assert len(figs["attention"].get_axes()) == 3 + 1  # three panels and the colour bar


def test_panels_take_plain_arrays(tmp_path):
    shrink = np.linspace(1, 0.5, 5)[:, None, None]
    z = np.random.default_rng(1).standard_normal((5, 7, 2)) * shrink
    p = np.full((5, 7, 7), 1 / 7)
    for fig in (token_paths(z, times=np.arange(5.0)), polytope_plot(z),
                attention_snapshots(z, attention=p), origin_plot(z, times=np.arange(5.0)),
                hyperplane_plot(z, value_matrix=np.diag([2.0, 1.0])),
                token_paths(np.random.default_rng(2).standard_normal((3, 6, 4))),  # d > 3
                token_paths(z[..., :1])):  # d = 1: z(t) against t
        labelled(fig)
        saved(fig, tmp_path, "array")


def test_the_panels_show_the_metrics(polytope2, hyperplanes2):
    z = token_series(polytope2).tokens[-1]
    fig = polytope_plot(polytope2)
    count = hull_vertices(z, 1e-3 * np.ptp(z, axis=0).max()).size
    assert fig.get_axes()[0].get_title().startswith(f"polytope: {count} vertices")
    s = token_series(hyperplanes2)
    values = hyperplane_values(s.tokens[-1], s.value, 1e-3 * np.ptp(
        s.tokens[-1] @ np.linalg.eigh(s.value)[1][:, -1]))
    title = hyperplane_plot(hyperplanes2).get_axes()[0].get_title()
    assert title.startswith(f"{values.size} hyperplane")
    assert values.size == 2  # Figure 6: two hyperplanes


def test_the_limit_panel_follows_the_value_matrix(polytope2, hyperplanes2):
    assert limit_kind(token_series(polytope2)) == "polytope"
    assert limit_kind(token_series(hyperplanes2)) == "hyperplanes"
    repulsive = run_dataset({"value": -1.0}, 2, 6, 2.0, 4, rescaled=False,
                            save_attention=False)
    assert limit_kind(token_series(repulsive)) == "origin"
    bare = polytope2.copy()
    del bare.attrs["config"]
    assert limit_kind(token_series(bare)) is None  # V unknown: no limit panel


def test_figure_and_plot_result_dispatch_euclidean_particles(polytope2, hyperplanes2,
                                                              tmp_path):
    fig = figure(polytope2)
    titles = [ax.get_title(loc="left") for ax in fig.get_axes()]
    assert any("token paths" in t for t in titles)
    assert any("polytope" in t for t in titles)
    assert any("distance δ to Boolean" in t for t in titles)
    paths = plot_result(hyperplanes2, tmp_path, stem="planes", animate=True, dpi=50)
    names = [p.name for p in paths]
    assert names == ["planes_summary.png", "planes_tokens.png", "planes_geometry.png",
                     "planes_attention.png", "planes_diagnostics.png",
                     "planes_animation.gif"]
    for p in paths[:-1]:
        assert p.read_bytes()[:8] == PNG_MAGIC


def test_without_config_or_attention_only_the_paths_are_drawn(polytope3, tmp_path):
    bare = polytope3.copy()
    del bare.attrs["config"]
    fig = figure(bare)
    assert len(fig.get_axes()) == 1
    names = [p.name for p in plot_result(bare, tmp_path, stem="bare", dpi=50,
                                         animate=True)]
    assert names == ["bare_summary.png", "bare_tokens.png", "bare_diagnostics.png",
                     "bare_animation.gif"]  # d = 3: the principal plane
    with pytest.raises(ConfigError, match="no attention"):
        attention_snapshots(bare)


def test_several_heads_draw_the_first_heads_attention(polytope2):
    two = polytope2.copy()
    p = two["attention"].values
    two["attention"] = (("time", "head", "particle", "key"), np.stack([p, p[:, ::-1]], 1))
    np.testing.assert_array_equal(token_series(two).attention, p)
    assert isinstance(attention_snapshots(two), Figure)


def test_meanfield_plot_draws_a_saved_result(polytope2, tmp_path, capsys):
    path = tmp_path / "run.nc"
    polytope2.to_netcdf(path)
    assert main(["plot", str(path), "--out", str(tmp_path / "figs")]) == 0
    assert (tmp_path / "figs" / "run_geometry.png").read_bytes()[:8] == PNG_MAGIC


def test_bad_input_is_refused_with_its_name(polytope2):
    with pytest.raises(ConfigError, match="position"):
        token_paths(np.full((2, 3, 2), np.nan))
    with pytest.raises(ConfigError, match="d = 2 or 3"):
        polytope_plot(np.zeros((2, 5, 4)))
    with pytest.raises(ConfigError, match="attention must be"):
        attention_snapshots(np.zeros((2, 3, 2)), attention=np.zeros((2, 3, 4)))
    with pytest.raises(ConfigError, match="value matrix"):
        hyperplane_plot(np.zeros((2, 3, 2)))
    with pytest.raises(ValueError, match="eigenvalue"):
        hyperplane_plot(polytope2)  # V = I: no simple leading eigenvalue


def test_what_a_referee_looks_at(polytope2, polytope3, hyperplanes2):
    """Legends off the data and naming every line, no TeX typed out, the Boolean distance
    and the vertex labels explained (each was missing in the gallery's figures)."""
    from tests.meanfield.plotting.figure_checks import (
        legend_covers,
        raw_tex,
        texts_with_raw_tex,
        unnamed_lines,
    )

    from meanfield.plotting.weights.token_series import _title

    assert not raw_tex(_title(token_series(polytope2)))  # the summary's suptitle

    figs = {"polytope 2D": polytope_plot(polytope2),
            "polytope 3D": polytope_plot(polytope3),
            "hyperplanes": hyperplane_plot(hyperplanes2),
            "paths with lines": token_paths(
                hyperplanes2, value_matrix=token_series(hyperplanes2).value),
            "origin": origin_plot(hyperplanes2),
            "snapshots": attention_snapshots(polytope2),
            "boolean": boolean_distance_plot(polytope2)}
    for name, fig in figs.items():
        fig.canvas.draw()
        assert not texts_with_raw_tex(fig), (name, texts_with_raw_tex(fig))
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is None or ax.name == "3d":
                continue
            assert not legend_covers(ax), (name, legend_covers(ax))
            assert not unnamed_lines([ax], [legend]), (name, unnamed_lines([ax], [legend]))
    for name in ("polytope 2D", "polytope 3D"):
        texts = [t.get_text() for t in figs[name].axes[0].get_legend().get_texts()]
        assert "vertices (number: tokens there)" in texts and "convex hull" in texts
    assert figs["hyperplanes"].axes[0].get_title().startswith("2 hyperplanes,")
    assert "the distance to a Boolean matrix" in figs["snapshots"]._suptitle.get_text()
    assert all(ax.get_title().split("\n")[1].startswith("δ = ")
               for ax in figs["snapshots"].axes[:-1])  # (the last axes: the colour bar)
