"""Figures of a phase diagram (``kind = "phase_diagram"``): as in [GLPR25, Figure 3]
(reproduced as [Rig25, Figure 3]), one panel per
token dimension d, the pair probability as an image over (beta, t) (beta on x, time on
y, one colour scale from 0 to 1 with its colorbar), the equiangular prediction
``t(beta)`` overlaid (cyan with a black edge, seen on the dark and on the pale end of the
colour scale; dashed where d < n, where no equiangular start with cosine 0 exists) and
the 50 % contour of the measured probability (black). The legend names each kind of
line once.

The dataset (docs/datasets.md): coords ``dim``, ``beta``, ``time``;
``pair_probability`` (dim, beta, time) in [0, 1]; ``equiangular_time`` (beta); attrs
``n``, ``threshold``, ``model``, ``systems`` label the figure. Every artist has a
``gid``: ``"probability:{d}"``, ``"equiangular:{d}"``, ``"half:{d}"``, ``"colorbar"``.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import xarray as xr

from meanfield.errors import ConfigError
from meanfield.plotting.common import _KindPlots, _register_kind
from meanfield.plotting.helpers import _letter_panels, _new_figure, style

NEEDED = ("pair_probability", "equiangular_time")
COORDS = ("dim", "beta", "time")
CMAP = "magma"
# the equiangular curve: a colour magma has not (white vanished on its pale end, where the
# curve runs at large d), edged in black
EQUIANGULAR = "#00e5ff"
EQUIANGULAR_WIDTH = 1.4


def _edge():
    import matplotlib.patheffects as pe

    return [pe.Stroke(linewidth=EQUIANGULAR_WIDTH + 1.2, foreground="black"), pe.Normal()]


def _check(ds: Any) -> xr.Dataset:
    missing = [name for name in NEEDED if name not in getattr(ds, "data_vars", {})]
    missing += [name for name in COORDS if name not in getattr(ds, "coords", {})]
    if missing:
        raise ConfigError(f"a phase_diagram dataset needs {', '.join(missing)}", "result")
    return ds


def _edges(x: np.ndarray) -> np.ndarray:
    """Cell edges around the points ``x`` (midpoints; the ends half a cell out)."""
    x = np.asarray(x, dtype=float)
    if x.size == 1:
        return np.array([x[0] - 0.5, x[0] + 0.5])
    mid = (x[1:] + x[:-1]) / 2
    return np.concatenate([[2 * x[0] - mid[0]], mid, [2 * x[-1] - mid[-1]]])


def probability_panel(ds: xr.Dataset, ax, i: int):
    """Panel of dimension ``ds.dim[i]``: the image, the equiangular curve, the 50 %
    contour; returns the image (for the colorbar)."""
    d = int(ds["dim"].values[i])
    beta = ds["beta"].values.astype(float)
    t = ds["time"].values.astype(float)
    p = ds["pair_probability"].isel(dim=i).values.astype(float)  # (beta, time)
    mesh = ax.pcolormesh(_edges(beta), _edges(t), p.T, cmap=CMAP, vmin=0.0, vmax=1.0,
                         shading="flat", rasterized=True)
    mesh.set_gid(f"probability:{d}")
    if beta.size > 1 and t.size > 1 and np.nanmin(p) < 0.5 < np.nanmax(p):
        cs = ax.contour(beta, t, p.T, levels=[0.5], colors="k", linewidths=0.8)
        cs.set_gid(f"half:{d}")
    n = ds.attrs.get("n")
    below = n is not None and d < int(n)
    eq = ds["equiangular_time"].values.astype(float)
    shown = np.isfinite(eq) & (eq <= t[-1])
    if shown.any():
        (line,) = ax.plot(beta[shown], eq[shown], color=EQUIANGULAR, lw=EQUIANGULAR_WIDTH,
                          ls="--" if below else "-", path_effects=_edge(),
                          label="equiangular" + (" (d < n)" if below else ""))
        line.set_gid(f"equiangular:{d}")
    ax.set_xlim(_edges(beta)[0], _edges(beta)[-1])
    ax.set_ylim(_edges(t)[0], _edges(t)[-1])
    ax.set_title(f"d = {d}")
    ax.set_xlabel(r"$\beta$")
    return mesh


def _title(ds: xr.Dataset) -> str:
    a = ds.attrs
    parts = [str(a.get("model", "")).strip()]
    if "n" in a:
        parts.append(f"n = {int(a['n'])}")
    if "systems" in a:
        parts.append(f"{int(a['systems'])} systems per β")
    w = str(a.get("weights", ""))
    if w and not w.startswith("identity"):  # (random weights: docs/weights.md, section 8)
        parts.append("weights drawn per system" if "per system" in w else "weights Q, K, V")
    thr = a.get("threshold")
    what = (r"P($\langle x_i, x_j\rangle \geq$ " + f"{float(thr):g})" if thr is not None
            and math.isfinite(float(thr)) else "pair probability")
    return f"{what}: " + ", ".join(p for p in parts if p)


def _legend_handles(axes) -> list:
    """One legend entry per kind of line drawn: the equiangular time once (the entry
    says when some panels dash it, d < n) and the P = 1/2 contour."""
    from matplotlib.lines import Line2D

    styles = {line.get_linestyle() for ax in axes for line in ax.get_lines()
              if str(line.get_gid()).startswith("equiangular")}
    handles = []
    if styles:
        label = "equiangular time t*(β)" + (" (dashed where d < n)" if "--" in styles
                                            else "")
        handles.append(Line2D([], [], color=EQUIANGULAR, lw=EQUIANGULAR_WIDTH,
                              ls="-" if "-" in styles else "--", label=label,
                              path_effects=_edge()))
    if any(str(c.get_gid()).startswith("half:") for ax in axes for c in ax.collections):
        handles.append(Line2D([], [], color="k", lw=0.8, label="P = 1/2 (contour)"))
    return handles


def phase_figure(ds: xr.Dataset):
    """The figure: one panel per d in a row, shared axes and colorbar."""
    ds = _check(ds)
    k = ds.sizes["dim"]
    with style():
        fig = _new_figure((min(2.3 * k + 0.9, 13.0), 2.8))
        axes = [fig.add_subplot(1, k, j + 1) for j in range(k)]
        mesh = None
        for j, ax in enumerate(axes):
            mesh = probability_panel(ds, ax, j)
            if j:
                ax.set_yticklabels([])
            else:
                ax.set_ylabel("time t")
        handles = _legend_handles(axes)
        if handles:
            # (under the panels: every line drawn, the dashed d < n curve and the P = 1/2
            # contour included; the white curves get a black edge to show on white)
            leg = fig.legend(handles=handles, loc="outside lower center", fontsize=7,
                             ncols=len(handles))
            leg.set_gid("legend")
        cb = fig.colorbar(mesh, ax=axes, shrink=0.9, pad=0.01)
        cb.set_label("pair probability")
        cb.ax.set_gid("colorbar")
        _letter_panels(axes)
        fig.suptitle(_title(ds), fontsize=9)
    return fig


def _summary(ds: xr.Dataset, log: Any = "auto") -> Any:
    del log
    return phase_figure(ds)


def _animate(ds: xr.Dataset, path: Any, **kwargs: Any) -> None:
    raise ConfigError("a phase diagram has no animation; plot it without --animate",
                      "--animate")


_register_kind("phase_diagram", _KindPlots(check=_check, summary=_summary, pages=(),
                                           animate=_animate))
