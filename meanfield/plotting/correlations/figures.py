"""Figures of a correlations study (``kind = "correlations"``): the BBGKY hierarchy's one-
and two-point functions of token ensembles.

(a) ``(n − 1) g(ψ)`` at the last time for each n, with ±1 standard error bars, and the
linear fluctuation theory (S¹) as a wide pale line; (b) ``max |g|`` against n on log–log
axes at each time, with the fitted exponent in the legend and a 1/n guide; (c) the
chaos-closure error of the second equation against t for each n, with the linear
theory (S¹); (d) the one-point function f⁽¹⁾ at the last time with its band (flat: the
start is rotation invariant). Every line has a ``gid``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from meanfield.errors import ConfigError
from meanfield.plotting.common import _KindPlots, _register_kind
from meanfield.plotting.helpers import _letter_panels, _new_figure, style
from meanfield.plotting.legible import _legend_below

NEEDED = ("correlation", "correlation_stderr", "correlation_max", "correlation_exponent",
          "predicted_correlation", "closure_error", "predicted_closure_error",
          "one_point_density", "one_point_density_stderr")


def _check(ds: Any) -> xr.Dataset:
    missing = [k for k in NEEDED if k not in getattr(ds, "data_vars", {})]
    missing += [k for k in ("n", "time", "angle", "position") if k not in
                getattr(ds, "coords", {})]
    if missing:
        raise ConfigError(f"a correlations dataset needs {', '.join(missing)}", "result")
    return ds


def scaled_correlation(ds: xr.Dataset, ax) -> None:
    """``(n − 1) g`` at the last time: ``gid``s ``"g:{n}"``, ``"theory"``."""
    psi = ds["angle"].values
    t = len(ds["time"]) - 1
    for i, n in enumerate(ds["n"].values):
        g = (n - 1) * ds["correlation"].values[i, t]
        e = (n - 1) * ds["correlation_stderr"].values[i, t]
        ax.errorbar(psi, g, yerr=e, fmt="o-", ms=2.5, lw=0.9, capsize=1.5,
                    color=f"C{i}", gid=f"g:{n}", label=f"n = {n}")
    theory = ds["predicted_correlation"].values[t]
    if np.isfinite(theory).any():
        ax.plot(psi, theory, "-", color="0.2", lw=5, alpha=0.2, gid="theory",
                label="linear fluctuation theory")
    ax.axhline(0.0, color="0.5", lw=0.6)
    ax.set_xlabel(r"pair angle $\psi = \arccos\langle x_i, x_j\rangle$ (rad)")
    ax.set_ylabel(r"$(n-1)\,g(\psi)$  (1/rad)")
    ax.set_title(f"t = {float(ds['time'][t]):g}", fontsize=8)
    _legend_below(ax)


def max_against_n(ds: xr.Dataset, ax) -> None:
    """``max |g|`` against n per time: ``gid``s ``"max:{t}"``, ``"guide"``."""
    n = ds["n"].values.astype(float)
    for j, t in enumerate(ds["time"].values):
        e = float(ds["correlation_exponent"][j])
        ax.loglog(n, ds["correlation_max"].values[:, j], "o-", ms=3, color=f"C{j}",
                  gid=f"max:{t:g}", label=f"t = {t:g}: slope {e:.2f}")
    top = np.nanmax(ds["correlation_max"].values[0])
    ax.loglog(n, top * n[0] / n, ":", color="0.3", gid="guide", label="∝ 1/n")
    ax.set_xlabel("tokens n")
    ax.set_ylabel(r"$\max_\psi |g|$  (1/rad)")
    ax.set_title("correlation against n", fontsize=8)
    _legend_below(ax)


def closure(ds: xr.Dataset, ax) -> None:
    """The closure error against t: ``gid``s ``"closure:{n}"``, ``"closure theory"``."""
    t = ds["time"].values
    for i, n in enumerate(ds["n"].values):
        ax.plot(t, ds["closure_error"].values[i], "o-", ms=3, color=f"C{i}",
                gid=f"closure:{n}", label=f"n = {n}")
    theory = ds["predicted_closure_error"].values
    if np.isfinite(theory).any():
        ax.plot(t, theory, "-", color="0.2", lw=5, alpha=0.2, gid="closure theory",
                label=r"linear theory $|1 - e^{-2\lambda_k t}|$")
    ax.set_xlabel("t")
    ax.set_ylabel("closure error of the second equation")
    ax.set_title(r"chaos closure $f^{(3)} = f^{(2)}\otimes f^{(1)}$", fontsize=8)
    _legend_below(ax)


def one_point(ds: xr.Dataset, ax) -> None:
    """f⁽¹⁾ at the last time for the largest n with its band: ``gid`` ``"f1"``."""
    x = ds["position"].values
    f = ds["one_point_density"].values[-1, -1]
    e = ds["one_point_density_stderr"].values[-1, -1]
    ax.fill_between(x, f - 2 * e, f + 2 * e, color="C0", alpha=0.25, lw=0)
    ax.plot(x, f, "-", color="C0", gid="f1",
            label=f"n = {int(ds['n'][-1])}, ±2 standard errors")
    if int(ds.attrs.get("dim", 2)) == 2:
        ax.axhline(1 / (2 * np.pi), color="0.3", ls=":", label="uniform 1/(2π)")
        ax.set_xlabel(r"$\theta$ (rad)")
    else:
        ax.set_xlabel(r"polar angle $\arccos\langle x, e_1\rangle$ (rad)")
    ax.set_ylabel(r"$f^{(1)}$  (1/rad)")
    ax.set_title(f"one-point function, t = {float(ds['time'][-1]):g}", fontsize=8)
    _legend_below(ax)


def _summary(ds: xr.Dataset, log: Any = "auto") -> Any:
    del log
    with style():
        fig = _new_figure((9.0, 8.6))
        axes = [fig.add_subplot(2, 2, k) for k in (1, 2, 3, 4)]
        scaled_correlation(ds, axes[0])
        max_against_n(ds, axes[1])
        closure(ds, axes[2])
        one_point(ds, axes[3])
        _letter_panels(axes)
        fig.suptitle(f"Correlations of {ds.attrs.get('model', '')} tokens on "
                     f"S$^{{{int(ds.attrs.get('dim', 2)) - 1}}}$, β = "
                     f"{float(ds.attrs.get('beta', np.nan)):g}, "
                     f"{ds.attrs.get('systems', '')} systems per n", fontsize=9)
    return fig


def _animate(ds: xr.Dataset, path: Any, **kwargs: Any) -> None:
    raise ConfigError("a correlations study has no animation; plot it without --animate",
                      "--animate")


_register_kind("correlations", _KindPlots(check=_check, summary=_summary, pages=(),
                                          animate=_animate))
