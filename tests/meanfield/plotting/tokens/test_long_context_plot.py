"""The figure of a long-context study (``kind = "long_context"``): the study itself is
instantaneous for the closed form, so the dataset is a real one (explicit tokens to
n = 32)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure

from meanfield.errors import ConfigError
from meanfield.plotting import SUPPORTED_KINDS, figure, plot_result
from meanfield.plotting.tokens.long_context import cosine_vs_n, distance_vs_n
from meanfield.studies.tokens import long_context as lc

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def ds():
    return lc.long_context({"long_context": {"direct_max": 32,
                                             "n": {"start": 2, "stop": 1e9, "num": 30,
                                                   "scale": "log"}}})


def gids(ax) -> dict:
    return {line.get_gid(): line for line in ax.lines if line.get_gid()}


def test_the_panels_and_their_lines(ds):
    assert "long_context" in SUPPORTED_KINDS
    ax = Figure().add_subplot(1, 1, 1)
    cosine_vs_n(ds, ax)
    lines = gids(ax)
    for g in ds.gamma.values:
        assert {f"cosine:{g:g}", f"direct:{g:g}", f"limit:{g:g}"} <= set(lines)
        n, _ = lines[f"direct:{g:g}"].get_data()
        assert np.max(n) <= 32
    assert lines["limit:2"].get_ydata()[0] == pytest.approx(0.8)
    assert ax.get_xscale() == "log"
    ax = Figure().add_subplot(1, 1, 1)
    distance_vs_n(ds, ax)
    lines = gids(ax)
    for i, g in enumerate(ds.gamma.values):
        n, k = (np.asarray(v, dtype=float) for v in lines[f"predicted:{g:g}"].get_data())
        expected = float(ds.predicted_constant[i]) * n ** -float(ds.predicted_exponent[i])
        np.testing.assert_allclose(k, expected, rtol=1e-12)
    assert "tolerance" in lines and ax.get_yscale() == "log"


def test_plot_result_and_errors(ds, tmp_path):
    written = plot_result(ds, tmp_path, stem="l", dpi=50)
    assert [p.name for p in written] == ["l_summary.png"]
    assert written[0].read_bytes().startswith(PNG_MAGIC)
    assert len(figure(ds).axes) == 2
    with pytest.raises(ConfigError, match="needs limit"):
        figure(ds.drop_vars("limit"))
    with pytest.raises(ConfigError, match="no animation"):
        plot_result(ds, tmp_path, stem="l", animate=True)


def test_predictions_show_and_legends_sit_off_the_curves(ds):
    """Looked at: the predicted K n^-e lay exactly on the computed distance and hid under
    it, and the legend of (a) sat on the critical branch. Now each prediction is a wide
    pale line under the thin computed one, the powers are rendered (no "n^-1" as typed),
    and no legend covers a curve."""
    from tests.meanfield.plotting.figure_checks import legend_covers, texts_with_raw_tex

    fig = figure(ds)
    fig.canvas.draw()
    a, b = fig.axes
    lines = gids(b)
    for g in ds.gamma.values:
        data, pred = lines[f"distance:{g:g}"], lines[f"predicted:{g:g}"]
        assert pred.get_linewidth() >= 3 * data.get_linewidth()
        assert pred.get_zorder() < data.get_zorder() and pred.get_alpha() < 0.5
    assert not texts_with_raw_tex(fig), texts_with_raw_tex(fig)
    assert legend_covers(a) == [] and legend_covers(b) == []


def test_the_limit_is_cited_by_its_key(ds):
    """The limit's legend entry and the dataset's ``limit`` long_name cite the theorem as
    docs/references.md lists it ([Rig25, Theorem 7]), not as a bare "Theorem 7"."""
    ax = Figure().add_subplot(1, 1, 1)
    cosine_vs_n(ds, ax)
    labels = ax.get_legend_handles_labels()[1]
    assert "limit [Rig25, Thm 7]" in labels, labels
    assert ds["limit"].attrs["long_name"].startswith("[Rig25, Theorem 7]: ")
    references = (Path(__file__).resolve().parents[4] / "docs" / "references.md").read_text()
    assert "**[Rig25]" in references
