"""Figures of a long-context study (``kind = "long_context"``): one attention layer on
equiangular inputs with β_n = γ log n.

(a) the output cosine against n (log axis) for each γ, the closed form as a line, the
explicit-token computation as dots, the limit of [Rig25, Theorem 7] (1, 4ρ/(1+3ρ), ρ)
dotted; (b) the distance to the limit against n on log–log axes with the predicted
K n^{−e} as a wide pale line under the thin computed one (where the two agree the
prediction shows as a halo around the data instead of hiding under it). The legends sit
below the panels, off the curves.

The dataset (``meanfield.studies.tokens.long_context``): coords ``gamma``, ``n``; ``cosine``,
``direct_cosine``, ``distance`` (gamma, n); ``limit``, ``regime``, ``predicted_exponent``,
``predicted_constant``, ``fitted_exponent`` (gamma); attrs ``rho``. Every line has a
``gid``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from meanfield.errors import ConfigError
from meanfield.plotting.common import _KindPlots, _register_kind
from meanfield.plotting.helpers import _letter_panels, _new_figure, style
from meanfield.plotting.legible import _legend_below

NEEDED = ("cosine", "direct_cosine", "distance", "limit", "regime", "predicted_exponent",
          "predicted_constant", "fitted_exponent")


def _check(ds: Any) -> xr.Dataset:
    missing = [name for name in NEEDED if name not in getattr(ds, "data_vars", {})]
    missing += [name for name in ("gamma", "n") if name not in getattr(ds, "coords", {})]
    if missing:
        raise ConfigError(f"a long_context dataset needs {', '.join(missing)}", "result")
    return ds


def _label(ds: xr.Dataset, i: int) -> str:
    g = float(ds["gamma"][i])
    rho = float(ds.attrs.get("rho", np.nan))
    ratio = g * (1 - rho)
    return f"γ = {g:.4g} (γ(1−ρ) = {ratio:.3g}, {ds['regime'].values[i]})"


def cosine_vs_n(ds: xr.Dataset, ax) -> None:
    """Output cosine against n per γ: ``gid``s ``"cosine:{γ}"``, ``"direct:{γ}"``,
    ``"limit:{γ}"``."""
    n = ds["n"].values.astype(float)
    for i, g in enumerate(ds["gamma"].values):
        color = f"C{i}"
        ax.plot(n, ds["cosine"].values[i], "-", color=color, gid=f"cosine:{g:g}",
                label=_label(ds, i))
        direct = ds["direct_cosine"].values[i]
        ok = np.isfinite(direct)
        if ok.any():
            ax.plot(n[ok], direct[ok], "o", mfc="none", ms=4, color=color,
                    gid=f"direct:{g:g}")
        ax.axhline(float(ds["limit"][i]), color=color, ls=":", lw=1.0, gid=f"limit:{g:g}")
    ax.plot([], [], "o", mfc="none", ms=4, color="0.3", label="explicit tokens")
    ax.plot([], [], ":", color="0.3", label="limit [Rig25, Thm 7]")
    ax.set_xscale("log")
    ax.set_xlabel("context length n")
    ax.set_ylabel(r"output cosine $\langle\theta_i,\theta_j\rangle$")
    ax.set_title(f"ρ = {float(ds.attrs.get('rho', np.nan)):g}, β$_n$ = γ log n", fontsize=8)
    _legend_below(ax)


def distance_vs_n(ds: xr.Dataset, ax) -> None:
    """|cosine − limit| against n per γ with the predicted K n^{−e}: ``gid``s
    ``"distance:{γ}"``, ``"predicted:{γ}"``."""
    n = ds["n"].values.astype(float)
    for i, g in enumerate(ds["gamma"].values):
        color = f"C{i}"
        d = ds["distance"].values[i]
        d = np.where(np.isfinite(d) & (d > 0), d, np.nan)
        e = float(ds["predicted_exponent"][i])
        k = float(ds["predicted_constant"][i])
        ax.loglog(n, d, "-", color=color, lw=1.1, zorder=3, gid=f"distance:{g:g}",
                  label=f"γ = {g:.4g}: fitted e = {float(ds['fitted_exponent'][i]):.4f}")
        ax.loglog(n, k * n ** -e, "-", color=color, lw=5.0, alpha=0.25, zorder=2,
                  solid_capstyle="butt", gid=f"predicted:{g:g}",
                  label=f"predicted {k:.3g} $n^{{-{e:.3g}}}$")
    tol = ds.attrs.get("tolerance")
    if tol is not None:
        ax.axhline(float(tol), color="0.5", lw=0.8, ls="-.", gid="tolerance",
                   label=f"tolerance {float(tol):g}")
    ax.set_xlabel("context length n")
    ax.set_ylabel("|cosine − limit|")
    ax.set_title("approach to the limit", fontsize=8)
    _legend_below(ax)


def _summary(ds: xr.Dataset, log: Any = "auto") -> Any:
    del log
    with style():
        fig = _new_figure((9.0, 4.4))
        axes = [fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)]
        cosine_vs_n(ds, axes[0])
        distance_vs_n(ds, axes[1])
        _letter_panels(axes)
        fig.suptitle(_title(ds), fontsize=9)
    return fig


def _title(ds: xr.Dataset) -> str:
    """The figure's title from the dataset's numbers (the study's ``title`` attribute
    spells the Greek letters out: "rho", "beta_n")."""
    rho = float(ds.attrs.get("rho", np.nan))
    text = f"One attention layer on equiangular tokens (ρ = {rho:g}), β$_n$ = γ log n"
    if 0 <= rho < 1:
        text += f": the threshold γ = 1/(1 − ρ) = {1 / (1 - rho):.4g}"
    return text


def _animate(ds: xr.Dataset, path: Any, **kwargs: Any) -> None:
    raise ConfigError("a long_context study has no animation; plot it without --animate",
                      "--animate")


_register_kind("long_context", _KindPlots(check=_check, summary=_summary, pages=(),
                                          animate=_animate))
