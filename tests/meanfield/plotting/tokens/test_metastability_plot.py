"""The figure of a metastability study (``kind = "metastability"``): a synthetic dataset
with known values (each line checked against them), and a real small run through
``plot_result``."""
from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from matplotlib.figure import Figure

from meanfield.errors import ConfigError
from meanfield.plotting import SUPPORTED_KINDS, figure, plot_result
from meanfield.plotting.tokens.metastability import (
    clusters_vs_time,
    last_merge,
    plateau_vs_beta,
    staircase,
)
from meanfield.studies.tokens import metastability as ms

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def synthetic():
    beta, t = np.array([4.0, 16.0]), np.geomspace(0.1, 100.0, 7)
    clusters = np.array([[[9, 8], [5, 4], [3, 3], [3, 2], [2, 2], [2, 2], [2, 1]],
                         [[20, 20], [12, 11], [6, 6], [6, 6], [6, 5], [5, 5], [5, 5]]], float)
    s = 1.0 / clusters
    ds = xr.Dataset({
        "clusters": (("beta", "time", "system"), clusters),
        "energy_scaled": (("beta", "time", "system"), s),
        "log_time_over_beta": (("beta", "time"), np.log(t)[None] / beta[:, None]),
        "most_unstable_mode": ("beta", np.array([3, 6])),
        "first_plateau_clusters": (("beta", "system"), np.array([[3.0, 2.0], [6.0, 6.0]])),
        "first_plateau_mean": ("beta", np.array([2.5, 6.0])),
        "last_merge_low": (("beta", "system"), np.array([[np.nan, 40.0], [np.nan] * 2])),
        "last_merge_high": (("beta", "system"), np.array([[np.nan, 60.0], [np.nan] * 2])),
        "last_merge_hardmax": (("beta", "system"), np.array([[np.nan, 50.0], [np.nan] * 2])),
    }, coords={"beta": beta, "time": t, "system": [0, 1]})
    ds.attrs.update(kind="metastability", plateau_exponent=0.63, mode_exponent=0.5,
                    title="synthetic")
    return ds


def gids(ax) -> dict:
    return {line.get_gid(): line for line in ax.lines if line.get_gid()}


def test_the_panels_and_their_lines(synthetic):
    ds = synthetic
    assert "metastability" in SUPPORTED_KINDS
    ax = Figure().add_subplot(1, 1, 1)
    clusters_vs_time(ds, ax)
    lines = gids(ax)
    np.testing.assert_array_equal(lines["clusters:16:1"].get_ydata(), ds.clusters[1, :, 1])
    assert lines["mode:16"].get_ydata()[0] == 6 and ax.get_xscale() == "log"
    ax = Figure().add_subplot(1, 1, 1)
    staircase(ds, ax)
    x, y = gids(ax)["energy:4:0"].get_data()
    np.testing.assert_allclose(x, np.log(ds.time.values) / 4.0)
    np.testing.assert_allclose(y, 1.0 / ds.clusters.values[0, :, 0])
    ax = Figure().add_subplot(1, 1, 1)
    plateau_vs_beta(ds, ax)
    lines = gids(ax)
    np.testing.assert_allclose(lines["sqrt"].get_ydata(), np.sqrt(2 * ds.beta.values))
    np.testing.assert_array_equal(lines["mode"].get_ydata(), [3, 6])
    assert "0.630" in lines["plateau_mean"].get_label()
    ax = Figure().add_subplot(1, 1, 1)
    last_merge(ds, ax)
    lines = gids(ax)
    assert "diagonal" in lines and "merge:16" not in lines  # no merge seen at beta = 16
    x, y = lines["merge:4"].get_data()
    assert list(x) == [50.0] and y[0] == pytest.approx(np.sqrt(40.0 * 60.0))
    ax = Figure().add_subplot(1, 1, 1)
    last_merge(ds.assign(last_merge_low=ds.last_merge_low * np.nan), ax)
    assert not ax.axison and "no last merge" in ax.texts[0].get_text()


def test_plot_result_and_errors(synthetic, tmp_path):
    written = plot_result(synthetic, tmp_path, stem="m", dpi=50)
    assert [p.name for p in written] == ["m_summary.png"]
    assert written[0].read_bytes().startswith(PNG_MAGIC)
    assert len(figure(synthetic).axes) == 4
    with pytest.raises(ConfigError, match="needs clusters"):
        figure(synthetic.drop_vars("clusters"))
    with pytest.raises(ConfigError, match="no animation"):
        plot_result(synthetic, tmp_path, stem="m", animate=True)


def test_a_real_small_run_plots(tmp_path):
    ds = ms.metastability({"particles": {"n": 16, "seed": 3},
                           "metastability": {"beta": [6.0, 12.0], "systems": 2,
                                             "times": {"start": 0.5, "stop": 40.0,
                                                       "num": 10, "scale": "log"}}})
    written = plot_result(ds, tmp_path, stem="real", dpi=50)
    assert written[0].read_bytes().startswith(PNG_MAGIC)


def test_counts_get_integer_ticks_and_an_empty_merge_panel_becomes_a_caption(synthetic):
    """Looked at: the count axes were labelled 6 × 10¹, 4 × 10⁰, the energy label showed
    its TeX braces (e^{β(⟨x_i, x_j⟩ − 1)}), the title read "S^1 ... per beta", and a run
    without a last merge got an empty fourth frame with a sentence in it. Now the counts
    carry integer ticks (2^k; 1.5 x 2^k on the plateau panel), no text shows raw TeX,
    the title writes S¹ and β, no legend covers a curve, and without a merge the figure
    has three panels and a caption."""
    from tests.meanfield.plotting.figure_checks import (
        legend_covers,
        non_integer_ticks,
        texts_with_raw_tex,
    )

    ds = synthetic.copy()
    ds.attrs.update(n=20, title="metastability, SA on S^1, 2 systems per beta")
    fig = figure(ds)
    fig.canvas.draw()
    assert len(fig.axes) == 4
    for ax in (fig.axes[0], fig.axes[2]):
        labelled = [t for t, label in zip(ax.get_yticks(), ax.yaxis.get_ticklabels())
                    if label.get_text()]
        assert labelled and non_integer_ticks(ax.yaxis) == [], labelled
    assert not texts_with_raw_tex(fig), texts_with_raw_tex(fig)
    assert "S¹" in fig._suptitle.get_text() and "per β" in fig._suptitle.get_text()
    assert all(legend_covers(ax) == [] for ax in fig.axes[:2])
    none = ds.assign(last_merge_low=ds.last_merge_low * np.nan)
    fig = figure(none)
    assert len(fig.axes) == 3 and "no last merge" in fig._supxlabel.get_text()
