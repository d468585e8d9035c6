"""Checks of what a referee looks at in a figure, shared by the plotting tests: a legend
that covers no data, every drawn line named in a legend, no TeX left unrendered, integer
ticks on a count axis, the data inside the axis limits.

Each function works on a drawn figure (``fig.canvas.draw()`` first, where it says so) and
returns what it found wrong, so that a test can show it (``assert not found, found``).
"""
from __future__ import annotations

import re

import numpy as np

_MATH = re.compile(r"\$[^$]*\$")


def raw_tex(text: str) -> list[str]:
    """The TeX fragments of ``text`` outside ``$...$`` (shown as typed: ``n^-1``,
    ``\\beta``, ``x_i``), where matplotlib's mathtext does not render them."""
    plain = _MATH.sub("", text)
    return re.findall(r"\\[A-Za-z]+|\^\S*|(?<=\w)_\w+", plain)


def texts_with_raw_tex(fig) -> list[str]:
    """Every visible text of ``fig`` (titles, labels, tick labels, legends, annotations)
    that carries TeX outside ``$...$``."""
    from matplotlib.text import Text

    found = []
    for text in fig.findobj(Text):
        s = text.get_text()
        if text.get_visible() and s and raw_tex(s):
            found.append(s)
    return found


def _display_points(line, ax, per_segment: int = 24) -> np.ndarray:
    """The line's vertices and points along each segment, in display coordinates (a
    straight segment may cross a legend between its ends)."""
    xy = np.column_stack([np.asarray(v, dtype=float) for v in line.get_data()])
    xy = xy[np.all(np.isfinite(xy), axis=1)]
    if xy.size == 0:
        return np.empty((0, 2))
    pts = line.get_transform().transform(xy)
    if len(pts) > 1 and line.get_linestyle() not in ("None", "", " ", "none"):
        s = np.linspace(0.0, 1.0, per_segment)[:, None, None]
        pts = (pts[:-1][None] * (1 - s) + pts[1:][None] * s).reshape(-1, 2)
    box = ax.get_window_extent()
    inside = ((pts[:, 0] >= box.x0) & (pts[:, 0] <= box.x1)
              & (pts[:, 1] >= box.y0) & (pts[:, 1] <= box.y1))
    return pts[inside]


def legend_covers(ax) -> list[str]:
    """The lines (by gid or label) of ``ax`` that pass under its legend's box (drawn
    figure). Lines of the legend itself and of the axes' frame are not data."""
    legend = ax.get_legend()
    if legend is None:
        return []
    box = legend.get_window_extent()
    covered = []
    for line in ax.get_lines():
        if not line.get_visible():
            continue
        pts = _display_points(line, ax)
        hit = ((pts[:, 0] > box.x0) & (pts[:, 0] < box.x1)
               & (pts[:, 1] > box.y0) & (pts[:, 1] < box.y1))
        if hit.any():
            covered.append(str(line.get_gid() or line.get_label()))
    return covered


def unnamed_lines(axes, legends) -> list[str]:
    """The visible lines of ``axes`` that draw data but whose label is in none of
    ``legends`` (legend objects: of the axes or of the figure). Lines labelled
    ``_...`` (matplotlib's "no legend entry") count as unnamed."""
    named = set()
    for legend in legends:
        named |= {t.get_text() for t in legend.get_texts()}
    missing = []
    for ax in axes:
        for line in ax.get_lines():
            xy = line.get_xydata()
            if not line.get_visible() or xy.size == 0:
                continue
            if line.get_label() not in named:
                missing.append(str(line.get_gid() or line.get_label()))
    return missing


def non_integer_ticks(axis) -> list[float]:
    """The tick values shown on ``axis`` (inside its view) that are not integers."""
    lo, hi = sorted(axis.get_view_interval())
    ticks = [float(t) for t in axis.get_ticklocs() if lo <= t <= hi]
    shown = [t for t, label in zip(axis.get_ticklocs(), axis.get_ticklabels())
             if lo <= t <= hi and label.get_text()]
    return [t for t in (shown or ticks) if abs(t - round(t)) > 1e-9]


def outside_limits(ax) -> list[str]:
    """The lines (gid or label) of ``ax`` with a finite point inside the x view whose y
    lies outside the y view (cut at the top or bottom of the frame). A line that runs on
    past the x range is not cut: the panel chose what span of x to show."""
    x0, x1 = sorted(ax.get_xlim())
    y0, y1 = sorted(ax.get_ylim())
    out = []
    for line in ax.get_lines():
        xy = np.column_stack([np.asarray(v, dtype=float) for v in line.get_data()])
        xy = xy[np.all(np.isfinite(xy), axis=1)]
        xy = xy[(xy[:, 0] >= x0) & (xy[:, 0] <= x1)]
        if xy.size and ((xy[:, 1] < y0).any() or (xy[:, 1] > y1).any()):
            out.append(str(line.get_gid() or line.get_label()))
    return out
