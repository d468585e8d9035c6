"""Token figures: datasets of ``kind = "particles"`` (``meanfield.particles``).

A token dataset holds ``position (time, particle, component)``, unit vectors in R^d (the
directions, for Pre-LN, whose lengths are ``radius (time, particle)``), on the circle
``angle (time, particle)``, and time series ``order_parameter``, ``energy`` (NaN for
hardmax), ``clusters``, optionally ``attention_rank``. What is drawn depends on d, the
number of components:

- circle (d = 2): the trajectories θ_i(t), one line per token (coloured by its initial
  angle on a cyclic colormap) up to 200 tokens, else the empirical density of the angles
  over (θ, t) as an image -- the token analogue of the PDE space-time plot; and the
  tokens on the unit circle at the first and last time with their mean vector;
- sphere (d = 3): the tokens on orthographic views at three times (facing the final
  mean direction) and on a Mollweide map at the last time, coloured by initial longitude;
- d > 3: the Gram matrix <x_i, x_j> at the first and last time (tokens ordered by
  average-linkage clustering of the last configuration, so clusters are blocks), and the
  tokens projected on the two principal axes of the last configuration.

Each with a diagnostics row: order parameter, energy (when finite), number of clusters,
attention rank, mean radius (Pre-LN). The animations move the tokens on the circle, on
the orthographic view, or (d > 3) in the principal plane.

The panels themselves (``trajectories``, ``token_map``, ``gram``) are in ``panels``; this
module builds the figures and registers the kind.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from meanfield.errors import ConfigError
from meanfield.plotting.densities import sphere_grid as _grid
from meanfield.plotting.common import _KindPlots, _register_kind
from meanfield.plotting.helpers import _diagnostics_row as _shared_diagnostics_row
from meanfield.plotting.helpers import (
    ENERGY_LABEL,
    _draw_panel,
    _fmt_time,
    _frame_indices,
    _freeze_layout,
    _label_panel,
    _letter_panels,
    _new_figure,
    _Panel,
    _save_animation,
    _series,
    _snapshot_indices,
    style,
)
from meanfield.plotting.legible import _count_ticks, _distinct_snapshots
from meanfield.plotting.particles.panels import (  # noqa: F401  (gram, token_map, trajectories)
    MAX_GRAM,
    MAX_LINES,
    _check_particles,
    _circle_tokens,
    _cluster_order,
    _per_head,
    _default_view,
    _longitude_colorbar,
    _mollweide_tokens,
    _ortho_mean,
    _ortho_tokens,
    _ortho_xy,
    _plane_tokens,
    _positions,
    _principal_plane,
    _subsample,
    _title,
    _token_colours,
    gram,
    token_map,
    trajectories,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    import xarray as xr
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# --------------------------------------------------------------------------------------
# diagnostics
# --------------------------------------------------------------------------------------
def _panels(ds: xr.Dataset) -> list[_Panel]:
    panels = []
    if "order_parameter" in ds.data_vars:
        panels.append(_Panel("order_parameter", "order parameter", "r(t) = |⟨x⟩|"))
    if "energy" in ds.data_vars and np.any(np.isfinite(_series(ds, "energy"))):
        panels.append(_Panel("energy", "energy", ENERGY_LABEL))
    if "clusters" in ds.data_vars:
        thr = ds["clusters"].attrs.get("threshold")
        panels.append(_Panel("clusters", "clusters", "number of clusters" + (
            "" if thr is None else f"\n(linked at distance < {thr:g})")))
    if "attention_rank" in ds.data_vars:
        panels.append(_Panel("attention_rank", "attention rank", "rank of A(t)"))
    if "radius" in ds.data_vars:
        panels.append(_Panel("radius", "mean radius", "mean |xᵢ(t)| (Pre-LN)"))
    return panels


def _draw(ds: xr.Dataset, panel: _Panel, ax: Axes) -> None:
    from matplotlib.ticker import MaxNLocator

    if panel.key in ("order_parameter", "energy"):
        _draw_panel(ds, panel, ax)
        ax.set_ylabel(panel.ylabel)
        return
    t = np.asarray(ds["time"].values, dtype=float)
    if panel.key == "radius":
        y = np.nanmean(np.asarray(ds["radius"].transpose("time", "particle").values,
                                  dtype=float), axis=1)
        ax.plot(t, y, color="C4", marker="." if t.size <= 30 else None)
    elif panel.key == "attention_rank" and "head" in ds["attention_rank"].dims:
        y = _per_head(ds, panel.key)  # one step line per head (several heads)
        for h in range(y.shape[1]):  # dashes differ: heads of equal rank stay visible
            ax.step(t, y[:, h], where="post", color=f"C{(5 + h) % 10}", label=f"head {h}",
                    ls=("-", "--", ":", "-.")[h % 4], marker="." if t.size == 1 else None)
        ax.legend(fontsize=6.5, handlelength=2.0)
        if np.isfinite(y).any() and np.nanmax(y) - np.nanmin(y) < 2:  # integer ticks
            ax.set_ylim(np.nanmin(y) - 1, np.nanmax(y) + 1)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    else:
        y = _series(ds, panel.key)
        ax.step(t, y, where="post", color="C2" if panel.key == "clusters" else "C5")
        finite = y[np.isfinite(y)]
        if finite.size and finite.min() >= 1 and finite.max() >= 10 * finite.min():
            ax.set_yscale("log")
            _count_ticks(ax.yaxis)  # 1, 2, 4, ..., 64 (ScalarFormatter wrote 50.0, 2.0)
        else:
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    _label_panel(ds, panel, ax, t)


def _diagnostics_row(ds: xr.Dataset, fig: Figure, spec) -> list[Axes]:
    return _shared_diagnostics_row(ds, fig, spec, _panels(ds), _draw)


def _diagnostics(ds: xr.Dataset, axes: Any = None) -> list[Axes]:
    """``meanfield.plotting.diagnostics`` of a token dataset."""
    panels = _panels(ds)
    if not panels:
        found = ", ".join(sorted(map(str, ds.data_vars))) or "none"
        raise ConfigError(f"dataset has no token time series (data variables found: "
                          f"{found}); expected some of 'order_parameter', 'energy', "
                          "'clusters', 'attention_rank', 'radius'", "order_parameter")
    if axes is None:
        with style():
            fig = _new_figure((2.5 * len(panels), 2.6))
            axes = list(fig.subplots(1, len(panels), squeeze=False)[0])
            for panel, ax in zip(panels, axes):
                _draw(ds, panel, ax)
        return axes
    axes = list(np.ravel(np.asarray(axes, dtype=object)))
    if len(axes) != len(panels):
        raise ValueError(f"diagnostics needs {len(panels)} axes for this dataset "
                         f"({', '.join(p.key for p in panels)}); got {len(axes)}")
    for panel, ax in zip(panels, axes):
        _draw(ds, panel, ax)
    return axes


# --------------------------------------------------------------------------------------
# figures, pages, animation
# --------------------------------------------------------------------------------------
def _token_row(ds: xr.Dataset, fig: Figure, spec, log: bool | str) -> list[Axes]:
    """The top row of the summary, by dimension."""
    x = _positions(ds)
    t = np.asarray(ds["time"].values, dtype=float)
    d, last = x.shape[2], t.size - 1
    if d == 2:
        top = spec.subgridspec(1, 2, width_ratios=[1.7, 1])
        ax_tr, ax_c = fig.add_subplot(top[0]), fig.add_subplot(top[1])
        trajectories(ds, ax_tr, log=log)
        ax_tr.set_title("trajectories θᵢ(t)" if x.shape[1] <= MAX_LINES
                        else "token density over (θ, t)")
        _circle_tokens(ds, ax_c, last)
        ax_c.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), ncols=3, fontsize=6.5,
                    handlelength=1.0, columnspacing=0.8, borderaxespad=0.0)
        ax_c.set_title("tokens on the circle")
        return [ax_tr, ax_c]
    if d == 3:
        idx = _snapshot_indices(t, None, 3)
        top = spec.subgridspec(1, idx.size + 1, width_ratios=[1] * idx.size + [1.9])
        view, colours = _default_view(x), _token_colours(ds)
        axes = [fig.add_subplot(top[k]) for k in range(idx.size)]
        for ax, i in zip(axes, idx):
            _ortho_tokens(ax, x[i], view, colours, f"t = {_fmt_time(t[i])}")
        axes[0].set_title(f"t = {_fmt_time(t[idx[0]])}, facing\n"
                          f"{_grid._fmt_direction(view)}")
        moll = fig.add_subplot(top[idx.size], projection="mollweide")
        _mollweide_tokens(moll, x[last], colours, f"t = {_fmt_time(t[last])}")
        axes.append(moll)
        _longitude_colorbar(fig, axes)
        return axes
    top = spec.subgridspec(1, 3, width_ratios=[1, 1, 0.85])
    axes = [fig.add_subplot(top[k]) for k in range(3)]
    keep = _subsample(x.shape[1], MAX_GRAM)
    order = _cluster_order(x[-1, keep])
    gram(ds, axes[0], time=t[0], order=order, colorbar=False)
    image = gram(ds, axes[1], time=t[last], order=order, colorbar=False)
    axes[1].set_ylabel("")
    fig.colorbar(image, ax=axes[:2], pad=0.02, shrink=0.9).set_label("⟨xᵢ, xⱼ⟩")
    plane = _principal_plane(x[last])
    _plane_tokens(axes[2], x[last], plane, "C0",
                  f"t = {_fmt_time(t[last])}, tokens in\nthe principal plane")
    return axes


def _summary(ds: xr.Dataset, *, log: bool | str = "auto") -> Figure:
    panels = _panels(ds)
    d = ds.sizes["component"]
    height = {2: 3.2, 3: 2.4}.get(d, 2.9)
    with style():
        fig = _new_figure((7.5, height + (2.5 if panels else 0.4)))
        fig.get_layout_engine().set(w_pad=0.04, h_pad=0.04, hspace=0.06, wspace=0.04)
        grid = fig.add_gridspec(2 if panels else 1, 1,
                                height_ratios=[height, 2.3] if panels else None)
        axes = _token_row(ds, fig, grid[0], log)
        axes += _diagnostics_row(ds, fig, grid[1]) if panels else []
        _letter_panels(axes)
        fig.suptitle(_title(ds))
    return fig


def _tokens_page(ds: xr.Dataset, *, log: bool | str = "auto") -> Figure:
    """circle: the trajectories; sphere: orthographic views at five times; d > 3: the
    Gram matrices at five times."""
    x = _positions(ds)
    t = np.asarray(ds["time"].values, dtype=float)
    d = x.shape[2]
    with style():
        if d == 2:
            fig = _new_figure((4.6, 3.8))
            ax = fig.add_subplot()
            trajectories(ds, ax, log=log)
        else:
            # spread over the tokens' motion (four identical settled Gram matrices at
            # t = 7.5 .. 30 was what even times gave for 64 tokens that cluster by t = 11)
            idx = _distinct_snapshots(t, x, _snapshot_indices(t, None, 5).size)
            fig = _new_figure((1.6 * idx.size + 0.6, 2.3 if d == 3 else 2.0))
            axes = list(fig.subplots(1, idx.size, squeeze=False)[0])
            if d == 3:
                view, colours = _default_view(x), _token_colours(ds)
                for ax, i in zip(axes, idx):
                    _ortho_tokens(ax, x[i], view, colours, f"t = {_fmt_time(t[i])}")
                axes[0].set_title(f"t = {_fmt_time(t[idx[0]])}, facing\n"
                                  f"{_grid._fmt_direction(view)}")
                _longitude_colorbar(fig, axes)
            else:
                order = _cluster_order(x[-1, _subsample(x.shape[1], MAX_GRAM)])
                for k, (ax, i) in enumerate(zip(axes, idx)):
                    image = gram(ds, ax, time=t[i], order=order, colorbar=False)
                    ax.set_title(f"t = {_fmt_time(t[i])}")
                    ax.set_xlabel("")
                    if k:
                        ax.set_ylabel("")
                fig.supxlabel("token j (clustered order)", fontsize=9)
                fig.colorbar(image, ax=axes, pad=0.01, shrink=0.9).set_label("⟨xᵢ, xⱼ⟩")
        fig.suptitle(_title(ds), fontsize=9)
    return fig


def _diagnostics_page(ds: xr.Dataset, *, log: bool | str = "auto") -> Figure | None:
    if not _panels(ds):
        return None
    axes = _diagnostics(ds)
    axes[0].figure.suptitle(_title(ds), fontsize=10)
    return axes[0].figure


def _animate(ds: xr.Dataset, path: Path, *, dpi: float, fps: float, max_frames: int,
             log: bool | str = "auto") -> None:
    """Tokens moving: on the unit circle (with the mean vector), on the orthographic view
    facing the final mean direction, or (d > 3) in the final principal plane."""
    x = _positions(ds)
    t = np.asarray(ds["time"].values, dtype=float)
    d = x.shape[2]
    frames = _frame_indices(t.size, max_frames)
    with style():
        fig = _new_figure((3.8, 3.8))
        ax = fig.add_subplot()
        if d == 2:
            scatter, arrow = _circle_tokens(ds, ax, int(frames[0]), first=False)
        elif d == 3:
            scatter, cross, frame = _ortho_tokens(ax, x[frames[0]], _default_view(x),
                                                  _token_colours(ds), "")
        else:
            plane = _principal_plane(x[-1])
            scatter = _plane_tokens(ax, x[frames[0]], plane, "C0", "")
        label = ax.text(0.02, 0.98, "", transform=ax.transAxes, va="top", ha="left")
        fig.suptitle(_title(ds), fontsize=8)

        def update(i: int):
            p = x[i]
            if d == 2:
                scatter.set_offsets(p)
                m = np.nanmean(p, axis=0)
                arrow.set_data([0, m[0]], [0, m[1]])
            elif d == 3:
                scatter.set_offsets(np.column_stack(_ortho_xy(frame, p)))
                cross.set_data(*(_ortho_mean(frame, p) or ([], [])))
            else:
                scatter.set_offsets(p @ plane.T)
            label.set_text(f"t = {_fmt_time(t[i])}")
            return scatter, label

        update(int(frames[0]))
        _freeze_layout(fig)
        _save_animation(fig, update, frames, path, fps=fps, dpi=dpi)


_register_kind("particles", _KindPlots(
    check=_check_particles, summary=_summary,
    pages=(("tokens", _tokens_page), ("diagnostics", _diagnostics_page)),
    animate=_animate, diagnostics=_diagnostics))
