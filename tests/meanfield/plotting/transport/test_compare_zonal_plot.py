"""The figures of a zonal comparison (tokens on S^{d-1} against a density of t = <x, e>):
``meanfield plot`` writes the summary, the snapshots and the distance page, and the
animation; the zonal panels refuse the other geometries."""
from __future__ import annotations

import numpy as np
import pytest

import meanfield
from meanfield.errors import ConfigError
from meanfield.plotting import figure, plot_result
from meanfield.plotting.transport.comparison_zonal import (
    marginal_vs_histogram,
    t_range,
    w1_comparison,
    zonal_order_comparison,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CONFIG = {"domain": {"geometry": "zonal", "dim": 8},
          "model": {"beta": 0.0, "kappa": 12.0},
          "initial": {"kind": "von_mises", "concentration": 6.0},
          "discretization": {"resolution": 48},
          "time": {"t_final": 1.0, "dt": 0.05, "save_every": 0.25},
          "particles": {"n": 300, "ensemble": 3, "cluster_threshold": 1e-3}}


@pytest.fixture(scope="module")
def run():
    return meanfield.compare(CONFIG)


def test_pages_and_animation(run, tmp_path):
    from PIL import Image

    from meanfield.plotting.common import _KINDS

    paths = plot_result(run, tmp_path, stem="z", dpi=40)
    assert [p.name for p in paths] == ["z_summary.png", "z_snapshots.png", "z_distance.png"]
    assert all(p.read_bytes()[:8] == PNG_MAGIC and p.stat().st_size > 1000 for p in paths)
    path = tmp_path / "z.gif"
    _KINDS["compare"].animate(_KINDS["compare"].check(run), path, dpi=30, fps=5,
                              max_frames=3)
    with Image.open(path) as img:
        assert img.n_frames == 3


def test_summary_panels(run):
    fig = figure(run)
    titles = " ".join(ax.get_title(loc="left") for ax in fig.axes)  # (lettered)
    assert "W₁ of the marginals of t" in titles and "order parameter" in titles
    assert "S⁷" in fig._suptitle.get_text()


def test_marginal_panel_draws_the_pde_over_the_histogram(run):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    line, steps = marginal_vs_histogram(run, ax, time=0.5)
    lo, hi = t_range(run)
    x, y = line.get_data()
    assert x[0] == pytest.approx(lo) and x[-1] == pytest.approx(hi)
    # the curve integrates to about the mass it covers (all but 2e-3 of it)
    assert np.trapezoid(y, x) == pytest.approx(1.0, abs=5e-3)
    np.testing.assert_allclose(steps.get_data().edges, run.bin_edges.values)
    w1_comparison(run, ax)
    zonal_order_comparison(run, ax)
    plt.close(fig)


def test_zonal_panels_refuse_other_geometries(run):
    import matplotlib.pyplot as plt

    from test_plotting_particles import compare_circle

    fig, ax = plt.subplots()
    with pytest.raises(ConfigError, match="zonal comparisons"):
        marginal_vs_histogram(compare_circle(), ax)
    with pytest.raises(ConfigError, match="bin_edges"):
        figure(run.drop_vars("bin_edges"))
    with pytest.raises(ConfigError, match="attribute dim"):
        figure(run.assign_attrs(dim="sixteen"))
    plt.close(fig)


def test_legends_cover_no_data_and_nothing_is_raw_tex(run):
    from tests.meanfield.plotting.figure_checks import (
        legend_covers,
        texts_with_raw_tex,
        unnamed_lines,
    )

    fig = figure(run)
    fig.canvas.draw()
    for ax in fig.axes:
        if ax.get_legend() is not None:
            assert legend_covers(ax) == [], ax.get_title(loc="left")
    series = [ax for ax in fig.axes if ax.get_xlabel().startswith("time")]
    assert len(series) == 3
    for ax in series:
        assert unnamed_lines([ax], [ax.get_legend()]) == []
    assert not texts_with_raw_tex(fig), texts_with_raw_tex(fig)
