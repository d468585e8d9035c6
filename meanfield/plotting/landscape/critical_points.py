"""Figures of a critical-points study (``kind = "critical_points"``): the critical points
of E_beta of n tokens, their energies and Hessian indices.

(a) the energy levels against the index: each critical point found is a marker at its
index (the number of directions in which E_beta increases) and its energy as a fraction of
the synchronised state's, one colour per beta (offset sideways so that the betas do not
cover each other), one marker shape per kind; the synchronised state is the only point at
index 0 when the prediction of [GLPR25, Problem 3] holds. (b) one saddle and its unstable
direction: the tokens of the non-synchronised point of highest energy of the first member
(the last saddle before synchronisation), drawn on the circle (on S^{d-1}: in the plane of
the tokens' two principal axes, or of their line and the unstable direction), each
distinct position a dot whose area grows with its multiplicity, and the eigenvector of
the largest Hessian eigenvalue as tangent arrows: the direction in which the gradient
ascent leaves the saddle.

The dataset (``meanfield.studies.landscape.critical_points``): coords ``point``, ``beta``,
``n``; ``energy``, ``index``, ``kind``, ``positions``, ``unstable_direction``,
``unstable_eigenvalue``, ``cluster_sizes``. Every marker set has a ``gid``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from meanfield.errors import ConfigError
from meanfield.plotting.common import _KindPlots, _register_kind
from meanfield.plotting.helpers import _letter_panels, _new_figure, style
from meanfield.plotting.legible import _legend_below

NEEDED = ("energy", "index", "kind", "positions", "unstable_direction",
          "unstable_eigenvalue")
MARKERS = {"synchronised": "*", "antipodal": "D", "equally_spaced": "o",
           "regular_clusters": "s", "other": "^"}


def _check(ds: Any) -> xr.Dataset:
    missing = [name for name in NEEDED if name not in getattr(ds, "data_vars", {})]
    missing += [name for name in ("beta", "n") if name not in getattr(ds, "coords", {})]
    if missing:
        raise ConfigError(f"a critical_points dataset needs {', '.join(missing)}", "result")
    return ds


def _relative_energy(ds: xr.Dataset) -> np.ndarray:
    """Each point's energy over the synchronised state's of its (n, beta)."""
    energy = ds["energy"].values.astype(float)
    beta, n = ds["beta"].values, ds["n"].values
    out = np.full(energy.shape, np.nan)
    for b, m in set(zip(beta.tolist(), n.tolist())):
        rows = (beta == b) & (n == m)
        out[rows] = energy[rows] / np.max(energy[rows])
    return out


def energy_levels(ds: xr.Dataset, ax) -> None:
    """Energy / energy of the synchronised state against the index: ``gid``s
    ``"levels:{beta}:{kind}"``."""
    rel = _relative_energy(ds)
    index = ds["index"].values
    kinds = ds["kind"].values.astype(str)
    betas = np.unique(ds["beta"].values)
    width = 0.5 / max(len(betas), 1)
    for i, b in enumerate(betas):
        offset = (i - (len(betas) - 1) / 2) * width
        first = True
        for kind, marker in MARKERS.items():
            rows = (ds["beta"].values == b) & (kinds == kind)
            if not rows.any():
                continue
            ax.plot(index[rows] + offset, rel[rows], marker, color=f"C{i}", ms=5,
                    mfc="none" if kind != "synchronised" else f"C{i}", ls="none",
                    gid=f"levels:{b:g}:{kind}", label=f"β = {b:g}" if first else None)
            first = False
    for kind, marker in MARKERS.items():
        if (kinds == kind).any():
            ax.plot([], [], marker, color="0.3", mfc="none", ls="none",
                    label=kind.replace("_", " "))
    ax.set_xlabel("index (positive Hessian eigenvalues)")
    ax.set_ylabel("E$_β$ / E$_β$(synchronised)")
    top = int(np.max(index)) if index.size else 1
    ax.set_xticks(range(0, top + 1))
    ax.set_xlim(-0.6, top + 0.6)
    ns = np.unique(ds["n"].values)
    ax.set_title(f"critical points, n = {', '.join(str(int(m)) for m in ns)}", fontsize=8)
    _legend_below(ax, ncol=3)


def _chosen_saddle(ds: xr.Dataset) -> int | None:
    """The non-synchronised point of highest energy with index >= 1 of the first
    (n, beta), or None."""
    beta, n = ds["beta"].values, ds["n"].values
    if beta.size == 0:
        return None
    rows = np.flatnonzero((beta == beta[0]) & (n == n[0]) & (ds["index"].values >= 1))
    if rows.size == 0:
        return None
    return int(rows[np.argmax(ds["energy"].values[rows])])


def _plane(x: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tokens and tangent vectors in the plane of the tokens' two principal axes (S^1: the
    plane itself); tokens on one line (one cluster or two antipodal ones) take the line
    and the unstable direction as their plane."""
    if x.shape[1] == 2:
        return x, v
    _, s, vt = np.linalg.svd(x, full_matrices=False)
    axes = vt[:2]
    if s[1] < 1e-8 * s[0]:
        w = v[int(np.argmax(np.linalg.norm(v, axis=1)))]
        w = w - (w @ axes[0]) * axes[0]
        if np.linalg.norm(w) > 0:
            axes = np.stack([axes[0], w / np.linalg.norm(w)])
    return x @ axes.T, v @ axes.T


def unstable_direction(ds: xr.Dataset, ax) -> None:
    """One saddle's tokens and its unstable direction: ``gid``s ``"tokens"``,
    ``"direction"``."""
    p = _chosen_saddle(ds)
    t = np.linspace(0, 2 * np.pi, 361)
    ax.plot(np.cos(t), np.sin(t), color="0.75", lw=0.8, gid="circle")
    ax.set_aspect("equal")
    ax.set_xlim(-1.45, 1.45)
    ax.set_ylim(-1.45, 1.45)
    ax.set_xticks([])
    ax.set_yticks([])
    if p is None:
        ax.set_title("no saddle found", fontsize=8)
        return
    n = int(ds["n"].values[p])
    x, v = _plane(ds["positions"].values[p, :n], ds["unstable_direction"].values[p, :n])
    # one dot per distinct position, its area the multiplicity
    keys = np.round(x, 6)
    uniq, counts = np.unique(keys, axis=0, return_counts=True)
    ax.scatter(uniq[:, 0], uniq[:, 1], s=30 * counts, color="k", zorder=3, gid="tokens")
    for c, (a, b) in zip(counts, uniq):
        if c > 1:
            ax.annotate(f"×{c}", (a, b), xytext=(1.17 * a, 1.17 * b), fontsize=7,
                        ha="center", va="center")
    scale = 0.9 / max(float(np.max(np.linalg.norm(v, axis=1))), 1e-300)
    ax.quiver(x[:, 0], x[:, 1], scale * v[:, 0], scale * v[:, 1], angles="xy",
              scale_units="xy", scale=1.0, color="C3", width=0.008, zorder=4,
              gid="direction")
    b = float(ds["beta"].values[p])
    d = ds.sizes.get("component", 2)
    where = "" if d == 2 else f"\n(S$^{{{d - 1}}}$ seen in the plane of its principal axes)"
    ax.set_title(f"{str(ds['kind'].values[p]).replace('_', ' ')} saddle, n = {n}, β = {b:g}, "
                 f"index {int(ds['index'].values[p])}\nunstable direction, "
                 f"eigenvalue {float(ds['unstable_eigenvalue'].values[p]):.3g}{where}",
                 fontsize=8)


def _summary(ds: xr.Dataset, log: Any = "auto") -> Any:
    del log
    with style():
        fig = _new_figure((9.0, 4.6))
        axes = [fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)]
        energy_levels(ds, axes[0])
        unstable_direction(ds, axes[1])
        _letter_panels(axes)
        fig.suptitle(_title(ds), fontsize=9)
    return fig


def _title(ds: xr.Dataset) -> str:
    d = int(ds.attrs.get("dim", ds.sizes.get("component", 2)))
    where = "S¹" if d == 2 else f"S$^{{{d - 1}}}$"
    total = ds.attrs.get("counterexamples_total")
    verdict = "" if total is None else (
        ": every non-synchronised point is a strict saddle" if int(total) == 0 else
        f": {int(total)} non-synchronised point(s) of index 0")
    return f"Critical points of the interaction energy on {where}{verdict}"


def _animate(ds: xr.Dataset, path: Any, **kwargs: Any) -> None:
    raise ConfigError("a critical_points study has no animation; plot it without "
                      "--animate", "--animate")


_register_kind("critical_points", _KindPlots(check=_check, summary=_summary, pages=(),
                                             animate=_animate))
