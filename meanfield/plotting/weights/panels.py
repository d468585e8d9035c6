"""Figures of tokens in R^d with general weights (Q, K, V): the pictures of [GLPR23]
(issue 20); the theorems below are those of [GLPR23].

Every function takes either a token dataset (``attrs["kind"] = "particles"``,
``attrs["geometry"] = "euclidean"``: ``position (time, particle, component)``, holding the
rescaled tokens ``z = e^{-tV} x`` when ``attrs["rescaled"]`` says so, and optionally
``attention (time, particle, key)``) or plain arrays (``tokens`` ``(time, n, d)`` with
``times``), and returns a ``matplotlib.figure.Figure`` (pyplot-free, as in the rest of
``meanfield.plotting``):

- ``token_paths``: the tokens' paths, fading from the first to the last time (d = 1: z(t)
  against t; d = 2 in the plane; d = 3 in 3D; d > 3 in the principal plane of the last
  time), coloured by the vertex group they end in;
- ``attention_snapshots``: the attention matrix P(t) at a few times, tokens ordered by the
  token they attend to at the end, so the leaders' columns stand out;
- ``boolean_distance_plot``: ``max_i (1 - max_j P_ij)`` on a log scale, with the number of
  leaders and the numerical rank;
- ``polytope_plot``: the last tokens and the convex hull of their vertices (V = I,
  Theorem 3.1), a polygon in 2D and its faces in 3D, each vertex labelled with the number
  of tokens at it;
- ``hyperplane_plot``: the coordinates along phi_1 over time with their limiting values
  (a simple top eigenvalue of V, Theorem 4.1);
- ``origin_plot``: ``max_i |x_i|`` over time (V = -I, the collapse to the origin).

``figures`` puts them together for ``figure`` / ``plot_result`` / ``meanfield plot
RESULT.nc``. The data (``TokenSeries``, ``token_series``) are read in ``token_series``:
the weights of a dataset come from its ``config`` attribute
(``meanfield.config.weights``); when they cannot be rebuilt (a ``{file = ...}`` matrix
not found where the plot runs), the panels that need them are left out. The attention is
the saved one (of several heads, the first's), or recomputed from the weights (one head)
when it was not saved.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from meanfield.errors import ConfigError
from meanfield.metrics.attention import boolean_distance, leader_count, numerical_rank
from meanfield.metrics.limit_geometry import (
    groups, hull_vertices, hyperplane_values, leading_coordinates, leading_eigenvector,
    origin_distance, vertex_distance)
from meanfield.plotting.helpers import _fmt_time, _new_figure, style
from meanfield.plotting.weights.vertices import label_vertices
from meanfield.plotting.weights.token_series import (  # noqa: F401  (TokenSeries: public)
    TokenSeries,
    _attention,
    _principal,
    _tolerance,
    token_series,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MAX_PATHS = 400  # more tokens: a subsample of the paths is drawn (all final points)


def _end_groups(z_end: np.ndarray, tolerance: float | None) -> np.ndarray:
    """Each token's vertex group at the last time (for the colours)."""
    return groups(z_end, _tolerance(z_end, tolerance))


def _colours(labels: np.ndarray) -> np.ndarray:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if labels.max() < 10 else "tab20"]
    return cmap(np.mod(labels, cmap.N))


def _ax(fig: Figure, ax: Axes | None, three_d: bool = False) -> Axes:
    if ax is not None:
        return ax
    return fig.add_subplot(projection="3d") if three_d else fig.add_subplot()


def _hyperplanes(s: TokenSeries, v: np.ndarray, tolerance: float | None) -> tuple:
    """``(psi_1, values, label)``: the left eigenvector, the values the last coordinates
    cluster to and each token's value (index)."""
    _, _, psi = leading_eigenvector(v)
    c = leading_coordinates(s.tokens[-1], v)
    values = hyperplane_values(s.tokens[-1], v, _tolerance(c[:, None], tolerance))
    return psi, values, np.argmin(np.abs(c[:, None] - values), axis=1)


def _unique_legend(ax: Axes, **kwargs) -> None:
    """A legend with one entry per label (many lines may share one: the token paths)."""
    handles, labels = ax.get_legend_handles_labels()
    first = dict(zip(labels[::-1], handles[::-1]))  # the first handle of each label
    ax.legend([first[k] for k in dict.fromkeys(labels)], list(dict.fromkeys(labels)),
              **kwargs)


def _draw_lines(ax: Axes, psi: np.ndarray, values: np.ndarray) -> None:
    """The lines ``<psi, z> = value`` across the current 2D view (dashed)."""
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    direction = np.array([-psi[1], psi[0]]) / np.linalg.norm(psi)
    centre, span = np.array([(x0 + x1) / 2, (y0 + y1) / 2]), np.hypot(x1 - x0, y1 - y0)
    for value in values:
        # the point of the line nearest the view's centre, then both ways along it
        foot = centre + (value - psi @ centre) * psi / (psi @ psi)
        ends = foot + np.outer([-span, span], direction)
        ax.plot(ends[:, 0], ends[:, 1], "k--", lw=0.7, zorder=1, scalex=False,
                scaley=False,  # the view stays the tokens'
                label="limit hyperplanes")


# ------------------------------------------------------------------------------------
# the panels
# ------------------------------------------------------------------------------------
def token_paths(data: Any, ax: Axes | None = None, *, times: Any = None,
                tolerance: float | None = None, value_matrix: Any = None) -> Figure:
    """The tokens' paths, fading from the first time (light) to the last (dark).

    Args:
        data: dataset or ``(T, n, d)`` array (see ``token_series``).
        ax: axes to draw into (3D axes for d = 3); None: a new figure.
        times: times of an array.
        tolerance: the grouping distance of the colours (tokens ending within it share
            one); None: 1e-3 of the last configuration's extent.
        value_matrix: a V with a simple leading eigenvalue: the tokens are coloured by
            the hyperplane they end on and, in 2D, the hyperplanes are drawn ([GLPR23,
            Figure 6]); None: coloured by the point they end at.

    Returns:
        The figure.
    """
    s = token_series(data, times)
    z, t = s.tokens, s.times
    n, d = z.shape[1:]
    planes = None
    if value_matrix is not None:
        planes = _hyperplanes(s, np.asarray(value_matrix, dtype=float), tolerance)
        colours = _colours(planes[2])
    else:
        colours = _colours(_end_groups(z[-1], tolerance))
    keep = np.unique(np.linspace(0, n - 1, min(n, MAX_PATHS)).astype(int))
    with style():
        fig = _new_figure((3.6, 3.3)) if ax is None else ax.figure
        ax = _ax(fig, ax, three_d=d == 3)
        if d == 1:
            for i in keep:
                ax.plot(t, z[:, i, 0], color=colours[i], lw=0.8)
            ax.set_xlabel("time t")
            ax.set_ylabel("z" if s.rescaled else "x")
        elif d == 3:
            _paths_3d(ax, s, keep, colours)
        else:
            _paths_plane(ax, s, keep, colours, planes)
        ax.set_title("token paths" + ("" if d != 3 else
                                      f", coloured\nby end point (grey: t = "
                                      f"{_fmt_time(t[0])})"))
    return fig


def _fading(colour: np.ndarray, path: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The segments of one token's path (T, k) and their colours, fading from the first
    time (light) to the last (dark)."""
    seg = np.stack([path[:-1], path[1:]], axis=1)
    fade = np.linspace(0.12, 1.0, max(path.shape[0] - 1, 1))
    rgba = np.repeat(colour[None], seg.shape[0], axis=0)
    rgba[:, 3] = fade[: seg.shape[0]]
    return seg, rgba


def _paths_3d(ax: Axes, s: Any, keep: np.ndarray, colours: np.ndarray) -> None:
    """``token_paths`` in d = 3: the paths on 3D axes, grey starts, coloured ends."""
    from mpl_toolkits.mplot3d.art3d import Line3DCollection

    z = s.tokens
    # one frame (an interrupted run) has no path, and matplotlib fails on no segment
    for i in keep if z.shape[0] > 1 else ():
        seg, rgba = _fading(colours[i], z[:, i])
        ax.add_collection3d(Line3DCollection(seg, colors=rgba, linewidths=0.8))
    ax.scatter(*z[0].T, s=5, color="0.6", depthshade=False)
    ax.scatter(*z[-1].T, s=12, color=colours, depthshade=False)
    letter = "z" if s.rescaled else "x"
    for k, name in enumerate("xyz"):
        getattr(ax, f"set_{name}label")(f"{letter}{'₁₂₃'[k]}", labelpad=-2)
    ax.tick_params(labelsize=6, pad=0)
    ax.set_box_aspect(None, zoom=0.85)  # room for the labels beside other panels


def _paths_plane(ax: Axes, s: Any, keep: np.ndarray, colours: np.ndarray,
                 planes: Any) -> None:
    """``token_paths`` in d = 2 (or d > 3, projected on the last configuration's two
    principal axes): the paths, the first and last times, the limit lines (d = 2, with
    ``planes``) and a legend."""
    from matplotlib.collections import LineCollection

    z, t = s.tokens, s.times
    d = z.shape[2]
    p = z if d == 2 else z @ _principal(z[-1])
    for i in keep:
        seg, rgba = _fading(colours[i], p[:, i])
        ax.add_collection(LineCollection(seg, colors=rgba, linewidths=0.9))
    ax.scatter(*p[0].T, s=6, color="0.6", zorder=3, label=f"t = {_fmt_time(t[0])}")
    ax.scatter(*p[-1].T, s=14, color=colours, zorder=4, edgecolors="k",
               linewidths=0.3, label=f"t = {_fmt_time(t[-1])}")
    ax.autoscale_view()
    ax.set_aspect("equal", adjustable="datalim")
    if planes is not None and d == 2:
        _draw_lines(ax, planes[0], planes[1])
    name = "z" if s.rescaled else "x"
    ax.set_xlabel(f"{name}₁" if d == 2 else "principal axis 1 (last time)")
    ax.set_ylabel(f"{name}₂" if d == 2 else "principal axis 2")
    # (the limit lines cross the whole view: legend below it)
    place = ({"loc": "upper center", "bbox_to_anchor": (0.5, -0.15), "ncol": 3}
             if planes is not None and d == 2 else {"loc": "best"})
    _unique_legend(ax, fontsize=6, markerscale=1.2, handletextpad=0.2, **place)
    legend = ax.get_legend()
    for handle, text in zip(legend.legend_handles, legend.get_texts()):
        if text.get_text() == f"t = {_fmt_time(t[-1])}":  # many colours: one
            handle.set_facecolor("0.25")


def attention_snapshots(data: Any, *, times: Any = None, count: int = 4,
                        at: Any = None, attention: Any = None, heads: Any = None,
                        fig: Any = None) -> Figure:
    """The attention matrix at ``count`` times (or the saved times nearest ``at``).

    Tokens are ordered by the token they attend to most at the last time (then by index),
    so each leader's column is one block. Colour: P_ij from 0 to 1. ``fig``: a figure or
    subfigure to draw into (None: a new figure); the figure drawn into is returned.

    Raises:
        ConfigError: no attention saved and none computable (several heads, unknown
            weights).
    """
    s = token_series(data, times, attention=attention, heads=heads)
    p = _attention(s)
    if p is None:
        raise ConfigError("no attention to draw: the dataset has no 'attention' variable "
                          "(particles.save_attention = true) and its weights are not one "
                          "known head", "attention")
    t = s.times
    if at is None:
        idx = np.unique(np.rint(np.linspace(0, t.size - 1, min(count, t.size))).astype(int))
    else:
        idx = np.unique(np.abs(t[None] - np.atleast_1d(np.asarray(at, float))[:, None])
                        .argmin(axis=1))
    order = np.lexsort((np.arange(p.shape[1]), np.argmax(p[-1], axis=1)))
    with style():
        fig = _new_figure((1.75 * idx.size + 0.7, 2.75)) if fig is None else fig
        axes = list(fig.subplots(1, idx.size, squeeze=False)[0])
        for k, (ax, i) in enumerate(zip(axes, idx)):
            image = ax.imshow(p[i][np.ix_(order, order)], vmin=0, vmax=1, cmap="magma_r",
                              interpolation="nearest")
            ax.set_title(f"t = {_fmt_time(t[i])}\nδ = {boolean_distance(p[i]):.1e}",
                         fontsize=7)
            ax.set_xlabel("key j")
            ax.set_ylabel("query i" if k == 0 else "")
            ax.set_xticks([])
            ax.set_yticks([])
        fig.colorbar(image, ax=axes, shrink=0.85, pad=0.02).set_label("Pᵢⱼ(t)")
        fig.suptitle("attention matrices (tokens ordered by their last leader); "
                     "δ = maxᵢ (1 − maxⱼ Pᵢⱼ), the distance to a Boolean matrix",
                     fontsize=8)
    return fig


def boolean_distance_plot(data: Any, ax: Axes | None = None, *, times: Any = None,
                          attention: Any = None, heads: Any = None) -> Figure:
    """``max_i (1 - max_j P_ij)`` over time on a log scale (0 is not drawn), with the
    number of leaders and the numerical rank of the last P in the legend."""
    s = token_series(data, times, attention=attention, heads=heads)
    p = _attention(s)
    if p is None:
        raise ConfigError("no attention to draw (see attention_snapshots)", "attention")
    dist = boolean_distance(p)
    with style():
        fig = _new_figure((3.4, 2.6)) if ax is None else ax.figure
        ax = _ax(fig, ax)
        shown = dist > 0
        ax.semilogy(s.times[shown], dist[shown], color="C3", marker="." if s.times.size
                    <= 40 else None, label=f"δ(t); at t = {_fmt_time(s.times[-1])}: "
                    f"{leader_count(p[-1])} leaders, rank {numerical_rank(p[-1])}")
        if not np.all(shown):  # exactly Boolean in doubles from then on
            first = s.times[np.argmin(shown)]
            ax.axvline(first, color="0.5", ls=":", lw=0.8,
                       label=f"exactly 0 from t = {_fmt_time(first)}")
        top = float(dist[shown].max()) if np.any(shown) else 1.0
        ax.set_ylim(top=2.0 * top)
        if np.any(shown):  # decades at a round stride (matplotlib's gives 10^-37, 10^-74)
            low = math.floor(math.log10(float(dist[shown].min())))
            high = math.ceil(math.log10(2.0 * top))
            step = next(k for k in (1, 2, 5, 10, 20, 25, 50, 100, 200) if
                        (high - low) / k <= 6)
            ax.set_yticks(10.0 ** np.arange(math.ceil(low / step) * step, high + 1, step))
            ax.minorticks_off()
        ax.set_xlabel("time t")
        ax.set_ylabel("δ = maxᵢ (1 − maxⱼ Pᵢⱼ)")
        ax.set_title("distance δ to Boolean")
        ax.legend(loc="lower left", fontsize=6.5)
    return fig


def polytope_plot(data: Any, ax: Axes | None = None, *, times: Any = None,
                  tolerance: float | None = None) -> Figure:
    """The last tokens, their first positions (grey) and the convex hull of the vertex
    tokens (Theorem 3.1): a polygon in 2D, faces in 3D; vertices as stars labelled with
    the number of tokens nearest to them. d = 2 or 3 only.

    Args:
        tolerance: tokens within it count as one vertex; None: 1e-3 of the extent.
    """
    from scipy.spatial import ConvexHull, QhullError

    s = token_series(data, times)
    z0, z = s.tokens[0], s.tokens[-1]
    d = z.shape[1]
    if d not in (2, 3):
        raise ConfigError(f"polytope_plot draws d = 2 or 3, got d = {d}", "component")
    tol = _tolerance(z, tolerance)
    v = hull_vertices(z, tol)
    dist = vertex_distance(z, v)
    nearest = np.argmin(np.linalg.norm(z[:, None] - z[v][None], axis=-1), axis=1)
    with style():
        fig = _new_figure((3.6, 3.3)) if ax is None else ax.figure
        ax = _ax(fig, ax, three_d=d == 3)
        kw = {"depthshade": False} if d == 3 else {}
        ax.scatter(*z0.T, s=5, color="0.7", label=f"t = {_fmt_time(s.times[0])}", **kw)
        pts = z[v]
        try:
            hull = ConvexHull(pts) if v.size > d else None
        except QhullError:  # flat vertex set: drawn as its edges below
            hull = None
        if d == 2:
            ring = pts[hull.vertices] if hull is not None else pts
            ring = np.vstack([ring, ring[:1]])
            ax.fill(ring[:, 0], ring[:, 1], color="C0", alpha=0.12, lw=0)
            ax.plot(ring[:, 0], ring[:, 1], color="C0", lw=1.0, label="convex hull")
        elif hull is not None:
            from mpl_toolkits.mplot3d.art3d import Poly3DCollection

            ax.add_collection3d(Poly3DCollection(pts[hull.simplices], alpha=0.18,
                                                 facecolor="C0", edgecolor="C0", lw=0.5,
                                                 label="convex hull"))
        else:
            ring = np.vstack([pts, pts[:1]])
            ax.plot(*ring.T, color="C0", lw=1.0, label="convex hull")
        ax.scatter(*z.T, s=10, color="k", label=f"t = {_fmt_time(s.times[-1])}", **kw)
        ax.scatter(*pts.T, s=90, marker="*", color="C1", edgecolors="k", linewidths=0.4,
                   zorder=5, label="vertices (number: tokens there)", **kw)
        name = "z" if s.rescaled else "x"
        for k, axis in enumerate("xyz"[:d]):
            getattr(ax, f"set_{axis}label")(f"{name}{'₁₂₃'[k]}",
                                            **({"labelpad": -2} if d == 3 else {}))
        if d == 2:  # a band above the tokens for the legend (it covered the hull)
            low = min(z0[:, 1].min(), z[:, 1].min())
            high = max(z0[:, 1].max(), z[:, 1].max())
            ax.update_datalim([(float(z[0, 0]), high + 0.35 * (high - low))])
            ax.autoscale_view()
            ax.set_aspect("equal", adjustable="datalim")
            ax.legend(loc="upper center", ncol=2, fontsize=6, handletextpad=0.2,
                      columnspacing=0.8)
        else:
            from matplotlib.ticker import MaxNLocator

            ax.tick_params(labelsize=6, pad=0)
            for axis in (ax.xaxis, ax.yaxis, ax.zaxis):  # (nine ticks ran into each other)
                axis.set_major_locator(MaxNLocator(5))
            ax.set_box_aspect(None, zoom=0.85)
            ax.legend(loc="upper left", fontsize=6, handletextpad=0.2)
        ax.set_title(f"polytope: {v.size} vertices,\ntokens ≤ {dist.max():.1e} from one")
        # last: in 3D the labels are placed in the projection of the final view
        label_vertices(ax, pts, np.bincount(nearest, minlength=v.size))
    return fig


def hyperplane_plot(data: Any, ax: Axes | None = None, *, times: Any = None,
                    value_matrix: Any = None, tolerance: float | None = None) -> Figure:
    """The coordinates ``c_1(z_i(t))`` along phi_1 over time and the values they end on
    (dashed; Theorem 4.1: at most three).

    Args:
        value_matrix: V (default: the dataset's one head).
        tolerance: coordinates within it are one value; None: 1e-3 of their range.

    Raises:
        ConfigError: no V known; ValueError: V without a simple leading eigenvalue.
    """
    s = token_series(data, times)
    v = s.value if value_matrix is None else np.asarray(value_matrix, dtype=float)
    if v is None:
        raise ConfigError("hyperplane_plot needs the value matrix (value_matrix = V, or a "
                          "dataset of one head with its config)", "value_matrix")
    lam, phi, _ = leading_eigenvector(v)
    c = leading_coordinates(s.tokens, v)
    _, values, label = _hyperplanes(s, v, tolerance)
    colours = _colours(label)
    with style():
        fig = _new_figure((3.6, 2.8)) if ax is None else ax.figure
        ax = _ax(fig, ax)
        for i in range(c.shape[1]):  # one label for all: one legend entry (_unique_legend)
            ax.plot(s.times, c[:, i], color=colours[i], lw=0.7, alpha=0.7,
                    label="tokens (colour: the value reached)")
        for value in values:
            ax.axhline(value, color="k", ls="--", lw=0.8, label="limit values")
        ax.set_xlabel("time t")
        shown = ", ".join(f"{x:.2f}" for x in phi)
        ax.set_ylabel(f"coordinate along φ₁ = ({shown})")
        ax.set_title(f"{values.size} hyperplane{'s' if values.size != 1 else ''}, "
                     f"λ₁ = {lam:.3g}")
        _unique_legend(ax, loc="center right", fontsize=6.5)
    return fig


def origin_plot(data: Any, ax: Axes | None = None, *, times: Any = None,
                guide: bool = True) -> Figure:
    """``max_i |x_i(t)|`` on log-log axes (V = -I: the collapse to the origin, like
    ``t^{-1/2}``; with ``guide`` a dashed ``t^{-1/2}`` line through the last point)."""
    s = token_series(data, times)
    r = origin_distance(s.tokens)
    with style():
        fig = _new_figure((3.4, 2.6)) if ax is None else ax.figure
        ax = _ax(fig, ax)
        t = s.times
        ok = t > 0
        label = "max |zᵢ|" if s.rescaled else "max |xᵢ|"
        if guide:
            ax.loglog(t[ok], r[ok], color="C2", label=label)
        else:  # a bounded size (no collapse expected): linear, without an offset
            from matplotlib.ticker import ScalarFormatter
            ax.semilogx(t[ok], r[ok], color="C2", label=label)
            ax.yaxis.set_major_formatter(ScalarFormatter(useOffset=False))
            ax.set_ylim(0.0, 1.1 * float(np.max(r[ok])) if np.any(ok) else 1.0)
        if guide and np.count_nonzero(ok) > 1:
            ax.loglog(t[ok], r[ok][-1] * np.sqrt(t[ok][-1] / t[ok]), "k--", lw=0.7,
                      label=r"$\propto t^{-1/2}$")
        ax.set_xlabel("time t")
        ax.set_ylabel("distance to the origin")
        ax.set_title("collapse to the origin" if guide else "farthest token")
        ax.legend(fontsize=6.5)
    return fig
