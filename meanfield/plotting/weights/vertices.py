"""The vertices of the polytope of [GLPR23, Theorem 3.1] in the figures of tokens in R^d:

- ``label_vertices``: the number of tokens at each vertex, written beside its star (not
  on it), outward from the middle of the vertices and away from the other labels and
  stars, in 2D and in 3D (placed in the projected plane of the view);
- ``vertex_distance_plot``: ``max_i min_k |z_i(t) - v_k|``, the distance of the farthest
  token to the nearest vertex ``v_k`` of the last time, on a log axis against t, with
  the rate the theorem gives once the attention is Boolean: each token then follows
  ``dz_i/dt = c (z_leader - z_i)`` (V = cI), so the distance falls like ``e^{-ct}``.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from meanfield.metrics.limit_geometry import groups, hull_vertices
from meanfield.plotting.helpers import _new_figure, style
from meanfield.plotting.weights.token_series import _tolerance, token_series

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

LABEL_OFFSET = 11.0  # points from the star's centre to the label's centre
ANGLES = (0, 35, -35, 70, -70, 110, -110, 150, -150, 180)  # tried in turn (degrees)


def _projected(ax: Axes, pts: np.ndarray) -> np.ndarray:
    """``pts`` in the axes' 2D data coordinates (3D: projected by the current view)."""
    if pts.shape[1] == 2:
        return pts
    from mpl_toolkits.mplot3d import proj3d

    x, y, _ = proj3d.proj_transform(*pts.T, ax.get_proj())
    return np.column_stack([x, y])


def _places(ax: Axes, pts: np.ndarray, renderer) -> np.ndarray:
    """Where the labels go, in display pixels (module docstring of ``label_vertices``)."""
    scale = ax.figure.dpi / 72.0  # points to pixels
    screen = ax.transData.transform(_projected(ax, pts))
    offset, clear = LABEL_OFFSET * scale, 1.5 * LABEL_OFFSET * scale
    box = ax.bbox.extents + np.array([1, 1, -1, -1]) * 0.6 * offset
    legend = ax.get_legend()
    keep_out = None
    if legend is not None and legend.get_visible():
        keep_out = legend.get_window_extent(renderer).extents
        keep_out = keep_out + np.array([-1, -1, 1, 1]) * 0.5 * offset

    def blocked(at: np.ndarray) -> bool:
        inside = box[0] <= at[0] <= box[2] and box[1] <= at[1] <= box[3]
        covered = keep_out is not None and (keep_out[0] <= at[0] <= keep_out[2]
                                            and keep_out[1] <= at[1] <= keep_out[3])
        return covered or not inside

    centre = screen.mean(axis=0)
    placed: list[np.ndarray] = []
    for k, p in enumerate(screen):
        away = p - centre
        base = math.atan2(away[1], away[0]) if np.hypot(*away) > 1e-9 else math.pi / 2
        others = [q for j, q in enumerate(screen) if j != k] + placed
        best, best_gap = None, -1.0
        for turn in ANGLES:
            a = base + math.radians(turn)
            at = p + offset * np.array([math.cos(a), math.sin(a)])
            if blocked(at):
                continue
            gap = min((float(np.hypot(*(at - q))) for q in others), default=np.inf)
            if gap >= clear:
                best = at
                break
            if gap > best_gap:
                best, best_gap = at, gap
        if best is None:  # (no clear place inside: outward, as a last resort)
            best = p + offset * np.array([math.cos(base), math.sin(base)])
        placed.append(best)
    return np.array(placed)


def label_vertices(ax: Axes, pts: np.ndarray, counts: np.ndarray, *,
                   fontsize: float = 7.0):
    """Write ``counts[k]`` beside the vertex ``pts[k]`` (2D or 3D axes): at LABEL_OFFSET
    points outward from the middle of the vertices, turned by the first angle of ANGLES
    that keeps it clear of every star, every label placed before and the axes' legend,
    inside the axes. The places are found when the figure is drawn (after its layout and,
    in 3D, with the view's projection), so they hold in any figure the panel goes into.
    Returns the artist; its texts have the ``gid`` ``"vertex_label:{k}"``."""
    import matplotlib.patheffects as pe
    from matplotlib.artist import Artist
    from matplotlib.text import Text
    from matplotlib.transforms import IdentityTransform

    class VertexLabels(Artist):
        def __init__(self):
            super().__init__()
            self.texts = []
            for k, count in enumerate(counts):
                text = Text(0, 0, f"{int(count)}", ha="center", va="center",
                            fontsize=fontsize, color="k", transform=IdentityTransform(),
                            path_effects=[pe.withStroke(linewidth=2.2, foreground="w")])
                text.set_gid(f"vertex_label:{k}")
                text.set_figure(ax.figure)
                self.texts.append(text)
            self.set_zorder(6)
            self.set_in_layout(False)

        def get_children(self):
            return list(self.texts)

        def draw(self, renderer):
            for text, at in zip(self.texts, _places(ax, pts, renderer)):
                text.set_position(tuple(at))
                text.draw(renderer)

    pts = np.asarray(pts, dtype=float)
    labels = VertexLabels()
    ax.add_artist(labels)
    return labels


def vertex_distance_plot(data: Any, ax: Axes | None = None, *, times: Any = None,
                         tolerance: float | None = None) -> Figure:
    """``max_i min_k |z_i(t) - v_k|`` on a log axis, ``v_k`` the vertices of the last
    tokens (Theorem 3.1), with the line ``e^{-c t}`` (V = cI) through the last point.

    Tokens not rescaled (``x``, which grows like ``e^{ct}``) are rescaled here,
    ``z = e^{-ct} x``, c from the dataset's V (1 when V is not known)."""
    s = token_series(data, times)
    z = s.tokens
    c = 1.0
    if s.value is not None:
        c = float(np.trace(s.value)) / s.value.shape[0]
    if not s.rescaled:
        z = z * np.exp(-c * s.times)[:, None, None]
    end = z[-1]
    tol = _tolerance(end, tolerance)
    label = groups(end, tol)
    # each vertex is its leader, the token of its group at rest (the others still close
    # in like e^{-ct}: measured to one of them the distance fell too fast at the end)
    moved = (np.linalg.norm(end - z[-2], axis=1) if len(z) > 1
             else np.zeros(end.shape[0]))
    v = np.array([end[np.flatnonzero(label == label[i])[
        np.argmin(moved[label == label[i]])]] for i in hull_vertices(end, tol)])
    dist = np.linalg.norm(z[:, :, None, :] - v[None, None], axis=-1).min(axis=2).max(axis=1)
    with style():
        fig = _new_figure((3.4, 2.6)) if ax is None else ax.figure
        if ax is None:
            ax = fig.add_subplot()
        ok = dist > 0
        ax.semilogy(s.times[ok], dist[ok], color="C0", marker=".", ms=3,
                    label="farthest token", gid="vertex_distance")
        if np.count_nonzero(ok) > 1:
            t_end, d_end = s.times[ok][-1], dist[ok][-1]
            guide = d_end * np.exp(-c * (s.times[ok] - t_end))
            keep = guide <= 2 * dist[ok].max()  # (the guide, where it meets the data)
            ax.semilogy(s.times[ok][keep], guide[keep], "k--", lw=0.8,
                        label=f"∝ e^{{-{c:g}t}} (Theorem 3.1)" if c != 1
                        else "∝ e⁻ᵗ (Theorem 3.1)", gid="vertex_rate")
        ax.set_xlabel("time t")
        ax.set_ylabel("maxᵢ minₖ |zᵢ(t) − vₖ|")
        ax.set_title(f"distance to the {len(v)} vertices of t = {s.times[-1]:g}")
        ax.legend(fontsize=6.5, loc="upper right")
    return fig
