"""The figures ``figure`` / ``plot_result`` / ``meanfield plot`` draw for token datasets in
R^d (``attrs["kind"] = "particles"``, ``attrs["geometry"] = "euclidean"``: pure
self-attention with general weights, rescaled or not). The panels are in ``panels``, the
data they read in ``token_series``.

The summary: the token paths, the limit geometry that the weights predict ([GLPR23,
Table 1]: V = cI with c > 0, the polytope of the last tokens (d = 2, 3);
a real, positive, simple top eigenvalue, the hyperplanes along phi_1; V = cI with c < 0,
the distance to the origin) and, when the attention is saved or computable (one known
head), the distance to the nearest Boolean matrix and the attention matrices at four
times. Pages: ``_tokens``, ``_geometry``, ``_attention``, ``_diagnostics``; the animation
moves the tokens in their plane (d = 2) or in the principal plane of the last time.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from meanfield.errors import ConfigError
from meanfield.plotting.common import _KindPlots, _register_kind
from meanfield.plotting.helpers import (
    _fmt_time,
    _frame_indices,
    _freeze_layout,
    _letter_panels,
    _new_figure,
    _save_animation,
    style,
)
from meanfield.plotting.weights.token_series import (
    TokenSeries,
    _attention,
    _principal,
    _title,
    token_series,
)
from meanfield.plotting.weights.panels import (
    attention_snapshots,
    boolean_distance_plot,
    hyperplane_plot,
    origin_plot,
    polytope_plot,
    token_paths,
)
from meanfield.plotting.weights.vertices import vertex_distance_plot

if TYPE_CHECKING:  # pragma: no cover - typing only
    import xarray as xr
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def limit_kind(s: TokenSeries) -> str | None:
    """Which limit Table 1 predicts for the run's V: ``"polytope"`` (V = cI, c > 0, d = 2
    or 3), ``"origin"`` (V = cI, c < 0), ``"hyperplanes"`` (a real, positive, simple
    eigenvalue of largest modulus), or None (V unknown, or none of these)."""
    from meanfield.metrics.limit_geometry import leading_eigenvector

    v = s.value
    if v is None:
        return None
    d = v.shape[0]
    c = float(np.trace(v)) / d
    if np.allclose(v, c * np.eye(d), rtol=0, atol=1e-12 * max(abs(c), 1.0)) and c != 0:
        if c < 0:
            return "origin"
        return "polytope" if d in (2, 3) else None
    try:
        leading_eigenvector(v)
    except ValueError:
        return None
    return "hyperplanes"


def _limit_panel(s: TokenSeries, kind: str, ax: Axes) -> None:
    {"polytope": polytope_plot, "origin": origin_plot,
     "hyperplanes": hyperplane_plot}[kind](s, ax)


def _check(ds: Any) -> xr.Dataset:
    token_series(ds)  # ConfigError naming what is missing
    return ds.sortby("time")


def _summary(ds: xr.Dataset, *, log: bool | str = "auto") -> Figure:
    s = token_series(ds)
    d = s.tokens.shape[2]
    limit = limit_kind(s)
    p = _attention(s)
    if p is not None and p is not s.attention:
        s = replace(s, attention=p)  # computed once
    # V = -cI: the attention tends to uniform rows, not to a Boolean matrix
    boolean = p is not None and limit != "origin"
    ncol = 1 + (limit is not None) + boolean
    with style():
        fig = _new_figure((7.5, 5.6 if p is not None else 3.1))
        if p is not None:
            top, bottom = fig.subfigures(2, 1, height_ratios=[1.35, 1.0])
        else:
            top, bottom = fig, None
        axes = [top.add_subplot(1, ncol, 1, projection="3d" if d == 3 else None)]
        token_paths(s, axes[0], value_matrix=s.value if limit == "hyperplanes" else None)
        if limit is not None:
            three_d = limit == "polytope" and d == 3
            axes.append(top.add_subplot(1, ncol, 2, projection="3d" if three_d else None))
            _limit_panel(s, limit, axes[-1])
        if boolean:
            axes.append(top.add_subplot(1, ncol, ncol))
            boolean_distance_plot(s, axes[-1])
        if p is not None:
            attention_snapshots(s, fig=bottom)
        engine = fig.get_layout_engine()
        if d == 3 and ncol > 1 and engine is not None:
            # room for the 3D z labels (drawn outside their axes) beside the next panel
            engine.set(wspace=0.12)
        _letter_panels(axes)
        fig.suptitle(_title(s), fontsize=9)
    return fig


def _single(build, s: TokenSeries, three_d: bool = False) -> Figure:
    with style():
        fig = _new_figure((4.2, 3.8))
        ax = fig.add_subplot(projection="3d" if three_d else None)
        build(s, ax)
        fig.suptitle(_title(s), fontsize=8)
    return fig


def _tokens_page(ds: xr.Dataset, *, log: bool | str = "auto") -> Figure:
    s = token_series(ds)
    v = s.value if limit_kind(s) == "hyperplanes" else None
    return _single(lambda s, ax: token_paths(s, ax, value_matrix=v), s,
                   s.tokens.shape[2] == 3)


def _geometry_page(ds: xr.Dataset, *, log: bool | str = "auto") -> Figure | None:
    s = token_series(ds)
    limit = limit_kind(s)
    if limit is None:
        return None
    return _single(lambda s, ax: _limit_panel(s, limit, ax), s,
                   limit == "polytope" and s.tokens.shape[2] == 3)


def _attention_page(ds: xr.Dataset, *, log: bool | str = "auto") -> Figure | None:
    s = token_series(ds)
    p = _attention(s)
    if p is None:
        return None
    fig = attention_snapshots(replace(s, attention=p),
                              count=6)
    fig.suptitle(_title(s) + ": attention matrices", fontsize=8)
    return fig


def _diagnostics(ds: xr.Dataset, axes: Any = None) -> list[Axes]:
    """The Boolean distance (when the attention is known) and the distance to the
    polytope's vertices (V = cI, c > 0, d = 2, 3) or to the origin over time."""
    s = token_series(ds)
    p = _attention(s)
    if p is not None:
        s = replace(s, attention=p)
    limit = limit_kind(s)
    guide = limit == "origin"  # the t^(-1/2) of the collapse, only where expected
    # the polytope: the distance to its vertices, falling like e^{-ct} (the size of the
    # rescaled tokens, bounded, drew a flat line there)
    builders = ([boolean_distance_plot] if p is not None else []) + [
        vertex_distance_plot if limit == "polytope" else
        lambda s, ax: origin_plot(s, ax, guide=guide)]
    if axes is None:
        with style():
            fig = _new_figure((3.2 * len(builders), 2.6))
            axes = list(fig.subplots(1, len(builders), squeeze=False)[0])
    axes = list(np.ravel(np.asarray(axes, dtype=object)))
    if len(axes) != len(builders):
        raise ValueError(f"diagnostics needs {len(builders)} axes for this dataset; got "
                         f"{len(axes)}")
    for build, ax in zip(builders, axes):
        build(s, ax)
    return axes


def _diagnostics_page(ds: xr.Dataset, *, log: bool | str = "auto") -> Figure:
    axes = _diagnostics(ds)
    fig = axes[0].figure
    fig.suptitle(_title(token_series(ds)), fontsize=9)
    return fig


def _animate(ds: xr.Dataset, path: Path, *, dpi: float, fps: float, max_frames: int,
             log: bool | str = "auto") -> None:
    """The tokens moving in their plane (d = 2), on the line against their index (d = 1)
    or in the principal plane of the last time (d >= 3), on fixed axes."""
    s = token_series(ds)
    z, t = s.tokens, s.times
    n, d = z.shape[1:]
    if d == 1:
        p = np.stack([np.broadcast_to(np.arange(n, dtype=float), z.shape[:2]), z[..., 0]],
                     axis=-1)
    else:
        p = z if d == 2 else z @ _principal(z[-1])
    frames = _frame_indices(t.size, max_frames)
    with style():
        fig = _new_figure((3.8, 3.8))
        ax = fig.add_subplot()
        lo, hi = p.reshape(-1, 2).min(axis=0), p.reshape(-1, 2).max(axis=0)
        pad = 0.05 * np.maximum(hi - lo, 1e-12)
        ax.set_xlim(lo[0] - pad[0], hi[0] + pad[0])
        ax.set_ylim(lo[1] - pad[1], hi[1] + pad[1])
        ax.set_xlabel("token i" if d == 1 else "z₁" if d == 2 else "principal axis 1")
        ax.set_ylabel("z" if d == 1 else "z₂" if d == 2 else "principal axis 2")
        scatter = ax.scatter(*p[frames[0]].T, s=12, color="C0")
        label = ax.text(0.02, 0.98, "", transform=ax.transAxes, va="top", ha="left")
        fig.suptitle(_title(s), fontsize=8)

        def update(i: int):
            scatter.set_offsets(p[i])
            label.set_text(f"t = {_fmt_time(t[i])}")
            return scatter, label

        update(int(frames[0]))
        _freeze_layout(fig)
        _save_animation(fig, update, frames, path, fps=fps, dpi=dpi)


def _check_geometry(ds: Any) -> xr.Dataset:
    if ds.attrs.get("geometry") != "euclidean":
        raise ConfigError(f"expected geometry 'euclidean', got "
                          f"{ds.attrs.get('geometry')!r}", "geometry")
    return _check(ds)


_register_kind("particles", _KindPlots(
    check=_check_geometry, summary=_summary,
    pages=(("tokens", _tokens_page), ("geometry", _geometry_page),
           ("attention", _attention_page), ("diagnostics", _diagnostics_page)),
    animate=_animate, diagnostics=_diagnostics), geometry="euclidean")
