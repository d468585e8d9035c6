"""Figures of a bifurcation study across dimensions (``domain.dim`` a list on the zonal
geometry, ``meanfield.studies.bifurcation.across_dims``: every variable has the leading
dimension ``dim``).

``dims_figure``: (a) the branches per d, one colour per d (viridis, small d dark):
continuation, the order parameter of the degree-1 branches against ``kappa/d`` (solid
stable, dashed unstable; the pitchfork at ``kappa_c/d``, which tends to 1 as beta -> 0);
scan, the polished states' order parameter against ``kappa/d``; map, ``kappa_c(beta,
d)/d`` found (markers) over the closed form (lines) and the folds. (b) the transition per
d: the USA tricritical ``beta*(d)`` of the Landau theory (``tricritical_beta_landau``),
the fold curves' estimates (``tricritical_beta``, map) and the expansion ``1 + 2/d +
1/d^2``; where there is none (SA), ``kappa_c/d`` against d. Artists carry gids
``"branch:{d}:{stable|unstable|unknown}:{run}"``, ``"pitchfork:{d}"``, ``"scan:{d}"``,
``"kappa_c:{d}"``, ``"kappa_c_analytic:{d}"``, ``"fold:{d}"``, ``"tricritical_landau"``,
``"tricritical_fold_curve"``, ``"tricritical_expansion"``, ``"kappa_c_over_d"``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from meanfield.plotting.bifurcation.curves import STYLES, stability_runs
from meanfield.plotting.helpers import _letter_panels, _new_figure, style


def is_across_dims(ds: Any) -> bool:
    return "dim" in getattr(ds, "dims", {})


def _colors(dims: np.ndarray) -> list:
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    if dims.size == 1:
        return [cmap(0.0)]
    return [cmap(0.85 * i / (dims.size - 1)) for i in range(dims.size)]


def _branches(ds: xr.Dataset, ax, dims: np.ndarray, colors: list) -> None:
    """Panel (a) of a continuation: r against kappa/d on the degree-1 branches."""
    for i, d in enumerate(dims):
        one = ds.isel(dim=i)
        for b in np.flatnonzero(one.branch_mode.values == 1):
            n = int(one.branch_points.values[b])
            x = one.kappa.values[b, :n] / d
            y = one.order_parameter.values[b, :n]
            stable = one.stable.values[b, :n]
            for k, (flag, idx) in enumerate(stability_runs(stable, np.isfinite(x + y))):
                ls, name = STYLES[flag]
                ax.plot(x[idx], y[idx], color=colors[i], ls=ls, lw=1.2,
                        gid=f"branch:{d}:{name}:{k}",
                        label=f"$d = {d}$" if k == 0 and b == 1 else None)
        pitch = one.special_type.values == "pitchfork"
        if pitch.any():
            ax.plot(one.special_kappa.values[pitch] / d, np.zeros(int(pitch.sum())), "o",
                    ms=4, mfc="white", mec=colors[i], gid=f"pitchfork:{d}")
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_ylabel(r"order parameter $r$")


def _scan_points(ds: xr.Dataset, ax, dims: np.ndarray, colors: list) -> None:
    """Panel (a) of a scan: the polished states' r against kappa/d."""
    for i, d in enumerate(dims):
        one = ds.isel(dim=i)
        kappa = np.broadcast_to(one.kappa.values, one.order_parameter.shape)
        ax.plot((kappa / d).ravel(), one.order_parameter.values.ravel(), "o", ms=3,
                mfc="none", color=colors[i], gid=f"scan:{d}", label=f"$d = {d}$")
    ax.set_ylabel(r"order parameter $r$ (scan)")


def _map_lines(ds: xr.Dataset, ax, dims: np.ndarray, colors: list) -> None:
    """Panel (a) of a map: kappa_c(beta, d)/d and the folds."""
    beta = ds.beta.values
    for i, d in enumerate(dims):
        one = ds.isel(dim=i)
        ax.plot(one.map_analytic_kappa.values / d, beta, color=colors[i], lw=1.0,
                gid=f"kappa_c_analytic:{d}", label=f"$d = {d}$")
        ax.plot(one.map_critical_kappa.values / d, beta, "o", ms=3, color=colors[i],
                gid=f"kappa_c:{d}")
        fold = one.map_fold_kappa.values
        if np.isfinite(fold).any():
            ax.plot(fold / d, beta, "v", ms=3, color=colors[i], gid=f"fold:{d}")
    ax.set_xlabel(r"$\kappa_c(\beta)/d$ (lines: $1/(d a_1)$, o: found, v: fold)")
    ax.set_ylabel(r"$\beta$")


def _transition(ds: xr.Dataset, ax, dims: np.ndarray) -> None:
    """Panel (b): beta*(d) (USA), else kappa_c/d against d."""
    star = ds["tricritical_beta_landau"].values if "tricritical_beta_landau" in ds else []
    if np.isfinite(star).any():
        grid = np.geomspace(dims.min(), dims.max(), 200)
        ax.plot(grid, 1 + 2 / grid + 1 / grid**2, color="0.6", ls="--", lw=0.8,
                gid="tricritical_expansion", label=r"$1 + 2/d + 1/d^2$")
        ax.plot(dims, star, "o-", color="tab:red", ms=4, lw=1.0,
                gid="tricritical_landau", label=r"$\beta^*(d)$ (Landau)")
        if "tricritical_beta" in ds and np.isfinite(ds.tricritical_beta.values).any():
            ax.plot(dims, ds.tricritical_beta.values, "x", color="k", ms=6,
                    gid="tricritical_fold_curve", label=r"$\beta^*$ (fold curve)")
        ax.set_ylabel(r"tricritical $\beta^*$ (USA: first order above)")
        ax.legend(fontsize=6.5, loc="best")
    else:
        if "critical_kappa" in ds:
            kc = np.atleast_2d(ds.critical_kappa.values)[:, 0]
        else:
            kc = np.asarray(ds["kappa_c"].values if "kappa_c" in ds else np.nan * dims)
        ax.plot(dims, kc / dims, "o-", ms=4, gid="kappa_c_over_d")
        ax.set_ylabel(r"$\kappa_c / d$ (no tricritical point)")
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(ScalarFormatter())  # (d = 4, 8, 64: not 4 x 10^0)
    ax.xaxis.set_minor_formatter(NullFormatter())
    if dims.size <= 10:
        ax.set_xticks(dims)
    ax.set_xlabel("$d$")


def dims_figure(ds: xr.Dataset) -> Any:
    """The two panels of the module docstring for a study across dimensions.

    Returns:
        A ``matplotlib.figure.Figure`` (Agg canvas, not registered with pyplot).
    """
    dims = np.asarray(ds["dim"].values, dtype=int)
    colors = _colors(dims)
    mode = str(ds.attrs.get("mode", "continuation"))
    with style():
        fig = _new_figure((8.6, 3.6))
        a, b = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
        if mode == "map":
            _map_lines(ds, a, dims, colors)
            a.set_title(r"$\kappa_c(\beta, d)$")
        else:
            (_scan_points if mode == "scan" else _branches)(ds, a, dims, colors)
            a.set_xlabel(r"$\kappa / d$")
            a.set_title("branches per dimension")
        a.legend(fontsize=6.5, loc="best")
        _transition(ds, b, dims)
        b.set_title("transition type per dimension")
        _letter_panels([a, b])
        fig.suptitle(str(ds.attrs.get("title", "bifurcations across dimensions")),
                     fontsize=9)
    return fig
