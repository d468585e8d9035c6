"""The polytope's vertices in the figures (issue 30, item 7). Looked at: the vertex counts
were written on the stars (orange on orange) and on each other in 3D, and the
diagnostics page of a polytope run drew max |z_i|, a flat line (the rescaled tokens stay
bounded). Now the labels sit beside the stars, clear of one another and of the legend,
and the page draws the distance to the vertices, which Theorem 3.1 of [GLPR23] makes fall
like e^{-t} (V = I) once the attention is Boolean."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from meanfield.plotting.weights.figures import _diagnostics
from meanfield.plotting.weights.vertices import LABEL_OFFSET, vertex_distance_plot
from meanfield.plotting.weights.panels import polytope_plot

from tests.meanfield.plotting.weights.test_weights_plots import run_dataset


@pytest.fixture(scope="module")
def polytope3():
    return run_dataset({"key": {"kind": "symmetric", "eigenvalues": [0.8, 1.0, 1.25],
                                "seed": 1}}, 3, 24, 10.0, 20, save_attention=False)


def _labels_and_stars(fig):
    fig.canvas.draw()  # (the labels are placed at draw time)
    ax = fig.get_axes()[0]
    texts = sorted((a for a in fig.findobj() if str(a.get_gid()).startswith(
        "vertex_label:")), key=lambda a: int(a.get_gid().split(":")[1]))
    stars = next(c for c in ax.collections if c.get_label().startswith("vertices"))
    points = np.asarray(stars.get_offsets())  # 3D: the projected positions
    star_px = ax.transData.transform(points)
    label_px = np.array([t.get_position() for t in texts])
    return texts, star_px, label_px, fig.dpi / 72.0


@pytest.mark.parametrize("dim", [2, 3])
def test_vertex_labels_sit_beside_their_stars_and_apart(polytope3, dim):
    ds = polytope3 if dim == 3 else run_dataset(
        {"key": {"kind": "symmetric", "eigenvalues": [0.8, 1.25], "seed": 0}}, 2, 16, 8.0, 8)
    fig = polytope_plot(ds)
    texts, star_px, label_px, scale = _labels_and_stars(fig)
    assert len(texts) == len(star_px) >= 2
    # each label at LABEL_OFFSET points from its own star (to a pixel), so off the star
    own = np.hypot(*(label_px - star_px).T)
    np.testing.assert_allclose(own, LABEL_OFFSET * scale, atol=1.0)
    # and not on another star or label: at least the offset from every other one
    for k, p in enumerate(label_px):
        others = np.vstack([np.delete(star_px, k, axis=0), np.delete(label_px, k, axis=0)])
        assert np.hypot(*(others - p).T).min() > 0.9 * LABEL_OFFSET * scale
    # the counts add up to the tokens
    assert sum(int(t.get_text()) for t in texts) == ds.sizes["particle"]


def test_the_distance_to_the_vertices_falls_at_rate_one(polytope3):
    """Theorem 3.1 (V = I): once P is Boolean, each rescaled token follows its leader,
    dz/dt = z_leader - z, so the distance falls like e^{-t}: the late slope of its
    logarithm is -1 (measured -0.99999984 from t = 3; the margin 1e-3)."""
    fig = vertex_distance_plot(polytope3)
    line = next(a for a in fig.findobj() if a.get_gid() == "vertex_distance")
    t, dist = (np.asarray(v, dtype=float) for v in line.get_data())
    late = t >= 3.0
    slope = np.polyfit(t[late], np.log(dist[late]), 1)[0]
    assert slope == pytest.approx(-1.0, rel=1e-3)
    assert next(a for a in fig.findobj() if a.get_gid() == "vertex_rate")


def test_the_diagnostics_of_a_polytope_draw_the_vertex_distance(polytope3):
    axes = _diagnostics(polytope3)
    gids = {a.get_gid() for ax in axes for a in ax.get_lines()}
    assert "vertex_distance" in gids
    assert not any(ax.get_title() == "farthest token" for ax in axes)
