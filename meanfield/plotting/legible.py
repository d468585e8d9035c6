"""What makes a figure of ``meanfield.plotting`` readable as a referee reads it: plain
numbers on short log axes and integers on counts, the Greek letters that the studies'
titles spell out, legends under their panels where the curves fill every corner, and
caption notes that say what a marker is.

Each helper here was written after looking at a figure that got it wrong (the module
docstrings of the figures say which); ``tests/meanfield/plotting/figure_checks.py``
holds the checks that keep them right.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

_GREEK = {"beta": "β", "kappa": "κ", "gamma": "γ", "rho": "ρ"}


def _greek(text: str) -> str:
    """A study's title as a figure shows it: ``beta = 1, kappa = inf`` -> ``β = 1, κ = ∞``,
    ``S^1`` -> ``S¹`` (the studies spell the letters out for terminals and file
    attributes)."""
    text = re.sub(r"\b(beta|kappa|gamma|rho)\b", lambda m: _GREEK[m.group(1)], text)
    text = re.sub(r"\bS\^([12])\b", lambda m: "S" + "¹²"[int(m.group(1)) - 1], text)
    return re.sub(r"(=\s*)inf\b", "\\1∞", text)


def _plain_log_ticks(axis: Any, low: float | None = None, high: float | None = None
                     ) -> None:
    """Label a log axis with plain numbers over a range of up to three decades:
    0.01, 0.02, 0.05, 0.1, ... (matplotlib's default wrote "6 × 10⁻²" at the minor ticks,
    a column of crowded powers); 1, 2, 3, 4, 6 times the powers of ten under a decade,
    evenly spaced values under a factor 3 (else it might hold a single tick). Wider
    ranges are left alone. ``low`` and ``high`` default to the axis's view; call after
    the data are drawn."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    lo, hi = sorted(axis.get_view_interval()) if low is None else (low, high)
    if not (lo > 0 and hi / lo <= 1e3):
        return
    span = hi / lo
    if span < 3.0:  # linear steps (0.10, 0.12, 0.14): 1..9 x 10^k leaves [0.1, 0.2) bare
        from matplotlib.ticker import FixedLocator, MaxNLocator

        ticks = MaxNLocator(nbins=5, steps=[1, 2, 5, 10]).tick_values(lo, hi)
        axis.set_major_locator(FixedLocator(ticks[ticks > 0]))
    else:
        subs = (1.0, 2.0, 3.0, 4.0, 6.0) if span < 10.0 else (1.0, 2.0, 5.0)
        axis.set_major_locator(LogLocator(base=10.0, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _count_ticks(axis: Any, subs: tuple[float, ...] = (1.0,)) -> None:
    """Integer labels on a log axis of counts (clusters): ticks at 2^k (times ``subs``),
    written 4, 8, 16 (matplotlib wrote 4 × 10⁰, 6 × 10¹ on a count)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=2.0, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _legend_below(ax: Axes, *, ncol: int = 2, fontsize: float = 6.5,
                  offset: float = 0.2) -> None:
    """The legend under the axes, in ``ncol`` columns: for panels whose curves cross
    every corner (the long-context distances, Post-LN's fall, the L¹ gap and its floor),
    where a legend inside covered one of them. ``offset`` (axes fraction) clears the
    x label."""
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -offset), ncol=ncol,
              fontsize=fontsize, handlelength=1.4)


def _add_note(fig: Figure, text: str) -> None:
    """Append a line to the figure's caption (its ``supxlabel``), or start one."""
    old = getattr(fig, "_supxlabel", None)
    if old is not None and old.get_text():
        if text not in old.get_text():
            old.set_text(f"{old.get_text()}\n{text}")
    else:
        fig.supxlabel(text, fontsize=7.5, color="0.3", x=0.99, ha="right")


MEAN_DIRECTION_NOTE = "cyan +: the mean direction ∫x dρ / |∫x dρ|"


def _explain_markers(fig: Figure) -> None:
    """Say in the caption what the sphere maps' cyan cross is, when one is drawn (a
    marker on a map, unexplained, was a question for every reader)."""
    from matplotlib.lines import Line2D

    for line in fig.findobj(Line2D):
        if line.get_gid() == "mean_direction" and np.size(line.get_xdata()):
            _add_note(fig, MEAN_DIRECTION_NOTE)
            return


def _distinct_snapshots(t: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """``n`` saved times spread evenly over the run's change, not its clock: the k-th
    snapshot is the saved time nearest to where the accumulated change
    ``Σ_j Σ|ρ_j − ρ_{j−1}|`` reaches k/(n − 1) of its total (the first and the last
    saved times always among them). A run that settles early then shows its transient,
    instead of three identical curves of the settled state on top of each other (the
    noisy Kuramoto demo at κ = 4: t = 20, 30, 40). Falls back to even times when the
    state does not change; where one save is nearest to several targets (a large change
    between two saves), the missing snapshots come from the saves nearest to even
    times (before the state stops changing). Indices sorted, without repeats, as many as
    asked where the run changes at that many saves."""
    t = np.asarray(t, dtype=float)
    count = min(int(n), t.size)
    even = np.unique(np.rint(np.linspace(0, t.size - 1, count)).astype(int))
    v = np.asarray(values, dtype=float).reshape(t.size, -1)
    step = np.nansum(np.abs(np.diff(v, axis=0)), axis=1)
    total = float(step.sum()) if step.size else 0.0
    if count < 2 or not np.isfinite(total) or total <= 0:
        return even
    done = np.concatenate([[0.0], np.cumsum(step)])
    targets = np.linspace(0.0, total, count)
    idx = np.abs(done[None, :] - targets[:, None]).argmin(axis=1)
    # the final state once, labelled with the run's last time: no other snapshot from
    # where the state has stopped changing (it would draw the same picture again)
    settled = int(np.argmax(done >= total * (1 - 1e-12)))
    idx = np.minimum(idx, max(settled - 1, 0))
    idx[-1] = t.size - 1
    idx = np.unique(idx)
    if idx.size < count:  # one save held several targets: fill in from even times
        spare = [i for i in range(min(settled, t.size - 1)) if i not in idx]
        spare = sorted(spare, key=lambda i: np.min(np.abs(even - i)))[:count - idx.size]
        idx = np.union1d(idx, spare).astype(int)
    return idx
