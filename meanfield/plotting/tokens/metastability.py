"""Figures of a metastability study (``kind = "metastability"``).

(a) the cluster count against t (log axis), each system a thin line, one colour per β,
the most unstable mode k* dashed; (b) the scaled energy ``S = (1/n²) Σ e^{β(⟨x_i,x_j⟩−1)}``
against ln(t)/β (the staircase: each step a merge); (c) the first plateau's cluster
count against β (log–log) with k* and √(2β); (d) the duration of the last merge
against the hardmax pairing prediction (the bracket of the saves as an error bar).
The ``times`` page (``metastability_times``): metastable times, the reduced merging
model, the KDE modes and the predicted places.

The dataset (``meanfield.studies.tokens.metastability``): coords ``beta``, ``time``, ``system``;
``clusters``, ``energy_scaled``, ``log_time_over_beta``, ``most_unstable_mode``,
``first_plateau_clusters``, ``first_plateau_mean``, ``last_merge_low``/``_high``/
``_hardmax``. Every line has a ``gid``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from meanfield.errors import ConfigError
from meanfield.plotting.common import _KindPlots, _register_kind
from meanfield.plotting.helpers import _letter_panels, _new_figure, style
from meanfield.plotting.legible import _add_note, _count_ticks, _greek, _plain_log_ticks
from meanfield.plotting.tokens.metastability_times import times_page

NEEDED = ("clusters", "energy_scaled", "log_time_over_beta", "most_unstable_mode",
          "first_plateau_clusters", "first_plateau_mean", "last_merge_low",
          "last_merge_high", "last_merge_hardmax")


def _check(ds: Any) -> xr.Dataset:
    missing = [name for name in NEEDED if name not in getattr(ds, "data_vars", {})]
    missing += [name for name in ("beta", "time", "system")
                if name not in getattr(ds, "coords", {})]
    if missing:
        raise ConfigError(f"a metastability dataset needs {', '.join(missing)}", "result")
    return ds


def clusters_vs_time(ds: xr.Dataset, ax) -> None:
    """Cluster counts per system (``gid`` ``"clusters:{β}:{s}"``) and k* (``"mode:{β}"``)."""
    t = ds["time"].values
    for i, b in enumerate(ds["beta"].values):
        color = f"C{i % 10}"
        for s in ds["system"].values:
            ax.plot(t, ds["clusters"].values[i, :, s], "-", color=color, lw=0.7,
                    alpha=0.6, gid=f"clusters:{b:g}:{s}",
                    label=f"β = {b:g}" if s == ds["system"].values[0] else None)
        ax.axhline(float(ds["most_unstable_mode"][i]), color=color, ls="--", lw=0.8,
                   gid=f"mode:{b:g}")
    ax.plot([], [], "--", color="0.3", label="most unstable mode k*")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _count_ticks(ax.yaxis)
    # a band above the curves (they start at n and fall) holds the legend
    if "n" in ds.attrs:
        ax.set_ylim(top=4 * int(ds.attrs["n"]))
    ax.set_xlabel("t")
    ax.set_ylabel("clusters")
    ax.set_title("cluster count", fontsize=8)
    ax.legend(fontsize=6, loc="upper right", ncol=3, columnspacing=0.8, handlelength=1.2)


def staircase(ds: xr.Dataset, ax) -> None:
    """``S`` against ln(t)/β per system (``gid`` ``"energy:{β}:{s}"``)."""
    for i, b in enumerate(ds["beta"].values):
        x = ds["log_time_over_beta"].values[i]
        for s in ds["system"].values:
            ax.plot(x, ds["energy_scaled"].values[i, :, s], "-", color=f"C{i % 10}",
                    lw=0.7, alpha=0.7, gid=f"energy:{b:g}:{s}",
                    label=f"β = {b:g}" if s == ds["system"].values[0] else None)
    ax.set_yscale("log")
    _plain_log_ticks(ax.yaxis)
    ax.set_xlabel("ln(t) / β")
    ax.set_ylabel("S = (1/n²) Σᵢⱼ exp β(⟨xᵢ, xⱼ⟩ − 1)")
    ax.set_title("energy staircase (a step per merge)", fontsize=8)
    ax.legend(fontsize=6, loc="lower right")  # (S rises from the lower left)


def plateau_vs_beta(ds: xr.Dataset, ax) -> None:
    """First plateau counts (``gid`` ``"plateau"``, mean ``"plateau_mean"``), k*
    (``"mode"``) and √(2β) (``"sqrt"``) against β."""
    b = ds["beta"].values
    counts = ds["first_plateau_clusters"].values
    bb = np.repeat(b[:, None], counts.shape[1], axis=1)
    ax.plot(bb.ravel(), counts.ravel(), "o", ms=3, mfc="none", color="C0", alpha=0.6,
            gid="plateau", label="first plateau (systems)")
    exponent = float(ds.attrs.get("plateau_exponent", np.nan))
    ax.plot(b, ds["first_plateau_mean"].values, "-s", ms=4, color="C0", gid="plateau_mean",
            label=f"mean: exponent {exponent:.3f}")
    ax.plot(b, ds["most_unstable_mode"].values, "-^", ms=4, color="C3", gid="mode",
            label=f"k* (exponent {float(ds.attrs.get('mode_exponent', np.nan)):.3f})")
    ax.plot(b, np.sqrt(2 * b), ":", color="0.3", gid="sqrt", label="√(2β)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(b, [f"{v:g}" for v in b])
    ax.xaxis.set_minor_formatter("")
    _count_ticks(ax.yaxis, subs=(1.0, 1.5))  # 4, 6, 8, 12, ...
    ax.set_xlabel("β")
    ax.set_ylabel("clusters")
    ax.set_title("first metastable state against the linear theory", fontsize=8)
    ax.legend(fontsize=6, loc="best")


def last_merge(ds: xr.Dataset, ax) -> None:
    """Observed duration of the last merge (bracket) against the hardmax pairing
    prediction (``gid`` ``"merge:{β}"``, diagonal ``"diagonal"``)."""
    low, high = ds["last_merge_low"].values, ds["last_merge_high"].values
    pred = ds["last_merge_hardmax"].values
    ok = np.isfinite(low) & np.isfinite(pred) & (pred > 0)
    if not ok.any():
        ax.text(0.5, 0.5, "no last merge within the saves", ha="center", va="center",
                transform=ax.transAxes, fontsize=8)
        ax.set_axis_off()
        return
    for i, b in enumerate(ds["beta"].values):
        k = ok[i]
        if not k.any():
            continue
        mid = np.sqrt(np.maximum(low[i, k], 1e-300) * high[i, k])
        ax.errorbar(pred[i, k], mid, yerr=[mid - low[i, k], high[i, k] - mid], fmt="o",
                    ms=3, color=f"C{i % 10}", gid=f"merge:{b:g}", label=f"β = {b:g}")
    span = np.array([np.nanmin(pred[ok]), np.nanmax(pred[ok])]) * [0.5, 2]
    ax.plot(span, span, "-", color="0.4", lw=0.8, gid="diagonal", label="equal")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"hardmax pairing prediction $\int e^{\beta(1-\cos\varphi)}\,"
                  r"d\varphi\,/\,(r \sin\varphi)$")
    ax.set_ylabel("observed duration of the last merge")
    ax.set_title(r"last merge (time rescaled by $e^{\beta(1-\langle x_i,x_j\rangle)}$)",
                 fontsize=8)
    ax.legend(fontsize=6, loc="upper left")


def _summary(ds: xr.Dataset, log: Any = "auto") -> Any:
    del log
    merged = _has_last_merge(ds)
    with style():
        # without a last merge in the saves: three panels and a caption saying so (the
        # fourth was an empty frame with that sentence in it)
        fig = _new_figure((9.0, 7.0) if merged else (12.0, 3.8))
        axes = [fig.add_subplot(2 if merged else 1, 2 if merged else 3, k + 1)
                for k in range(4 if merged else 3)]
        clusters_vs_time(ds, axes[0])
        staircase(ds, axes[1])
        plateau_vs_beta(ds, axes[2])
        if merged:
            last_merge(ds, axes[3])
        else:
            _add_note(fig, "no last merge within the saved times (run longer for the "
                      "merge panel)")
        _letter_panels(axes)
        fig.suptitle(_greek(str(ds.attrs.get("title", "metastability"))), fontsize=9)
    return fig


def _has_last_merge(ds: xr.Dataset) -> bool:
    pred = ds["last_merge_hardmax"].values
    return bool(np.any(np.isfinite(ds["last_merge_low"].values) & np.isfinite(pred)
                       & (pred > 0)))


def _animate(ds: xr.Dataset, path: Any, **kwargs: Any) -> None:
    raise ConfigError("a metastability study has no animation; plot it without --animate",
                      "--animate")


_register_kind("metastability", _KindPlots(check=_check, summary=_summary,
                                           pages=(("times", times_page),),
                                           animate=_animate))
