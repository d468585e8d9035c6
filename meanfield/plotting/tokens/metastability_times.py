"""The ``times`` page of a metastability study (issue 28, items 2 and 3).

(a) the cluster count of the tokens against t (solid) beside the reduced merging model
started at the first plateau (dashed), one system per β; (b) T₁ (the first plateau),
the tight T₁ of [GKPR24] (``metastable_times``) and T₂ (the plateau's end) against β with
the fitted lines T₁ = a + bβ and log T₂ = a + bβ, their slopes' intervals and the tight
T₁'s predicted slope; (c) the modes of the initial KDE against β beside the first plateau,
k* and √β log β (scaled to the modes at the first β); (d) S¹: the distance of the first
plateau's clusters from the places predicted by the phases of mode k*, against the same
for a random turn of the pattern.

Needs the variables of ``meanfield.studies.tokens.metastability_merging``; a dataset
written before them has no ``times`` page (the builder returns None).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from meanfield.plotting.helpers import _letter_panels, _new_figure, style
from meanfield.plotting.legible import _count_ticks, _greek

NEEDED = ("reduced_clusters", "first_plateau_end", "kde_modes", "plateau_position_error",
          "plateau_position_null")


def staircases(ds: xr.Dataset, ax) -> None:
    """Tokens' count (``gid`` ``"tokens:{β}"``) and the reduced model's
    (``"reduced:{β}"``) of the first system with a plateau, per β."""
    t = ds["time"].values
    for i, b in enumerate(ds["beta"].values):
        red = ds["reduced_clusters"].values[i]
        has = np.nonzero(np.isfinite(red).any(axis=0))[0]
        if has.size == 0:
            continue
        s = int(has[0])
        color = f"C{i % 10}"
        ax.plot(t, ds["clusters"].values[i, :, s], "-", color=color, lw=1.0, alpha=0.8,
                gid=f"tokens:{b:g}", label=f"β = {b:g}")
        ax.plot(t, red[:, s], "--", color=color, lw=1.6, gid=f"reduced:{b:g}")
    ax.plot([], [], "-", color="0.3", label="tokens")
    ax.plot([], [], "--", color="0.3", lw=1.6, label="reduced model")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _count_ticks(ax.yaxis)
    ax.set_xlabel("t")
    ax.set_ylabel("clusters")
    ax.set_title("staircase: tokens and clusters as weighted points", fontsize=8)
    ax.legend(fontsize=6, loc="upper right", ncol=2)


def _fit_label(ds: xr.Dataset, name: str, text: str) -> str:
    a = ds.attrs
    lo, hi = (np.asarray(a.get(f"{name}_interval", [np.nan, np.nan]), float).tolist()
              + [np.nan, np.nan])[:2]
    level = 100 * float(a.get("confidence", np.nan))
    return f"{text}: slope {float(a.get(name, np.nan)):.3g} [{lo:.3g}, {hi:.3g}] ({level:g} %)"


def times_vs_beta(ds: xr.Dataset, ax) -> None:
    """T₁ (``gid`` ``"t1"``) and T₂ (``"t2"``) per system, the fitted lines
    (``"t1_fit"``, ``"t2_fit"``)."""
    b = ds["beta"].values
    bb = np.repeat(b[:, None], ds.sizes["system"], axis=1)
    t1, t2 = ds["first_plateau_time"].values, ds["first_plateau_end"].values
    ax.plot(bb.ravel(), t1.ravel(), "o", ms=3, mfc="none", color="C0", gid="t1",
            label="T₁ (first plateau)")
    ax.plot(bb.ravel(), t2.ravel(), "s", ms=3, mfc="none", color="C3", gid="t2",
            label="T₂ (its end)")
    fits = [(t1, "t1_slope", "C0", False, "T₁", "t1_fit"),
            (t2, "log_t2_slope", "C3", True, "log T₂", "t2_fit")]
    tight = ds["tight_time"].values if "tight_time" in ds else np.full_like(t1, np.nan)
    if np.isfinite(tight).any():  # [GKPR24]'s T_1: the clusters tight (metastable_times)
        ax.plot(bb.ravel(), tight.ravel(), "D", ms=3, mfc="none", color="C2",
                gid="t1_tight", label="T₁ tight (spread ≤ exp(−β(1 − cos φ)))")
        pred = float(ds.attrs.get("t1_tight_predicted_slope", np.nan))
        fits.insert(1, (tight, "t1_tight_slope", "C2", False,
                        f"T₁ tight (β(1−cos φ): {pred:.3g})", "t1_tight_fit"))
    for values, name, color, log, text, gid in fits:
        ok = np.isfinite(values) & (values > 0)
        if np.unique(bb[ok]).size < 2:
            continue
        y = np.log(values[ok]) if log else values[ok]
        coef = np.polyfit(bb[ok], y, 1)
        fine = np.linspace(b[0], b[-1], 200)
        line = np.polyval(coef, fine)
        # a fitted T_1 = a + b beta may fall below 0: not drawn on the log axis
        ax.plot(fine, np.exp(line) if log else np.where(line > 0, line, np.nan), "-",
                color=color, lw=1.0, gid=gid, label=_fit_label(ds, name, text))
    ax.set_yscale("log")
    data = np.concatenate([t1.ravel(), t2.ravel(), tight.ravel()])
    data = data[np.isfinite(data) & (data > 0)]
    if data.size:  # a band above the points holds the legend; a falling fit is cut
        ax.set_ylim(data.min() / 2, data.max() * 30)
    ax.set_xlabel("β")
    ax.set_ylabel("time")
    ax.set_title("metastable times against β", fontsize=8)
    ax.legend(fontsize=5.5, loc="upper left")


def modes_vs_beta(ds: xr.Dataset, ax) -> None:
    """KDE modes (``gid`` ``"kde"``, mean ``"kde_mean"``), first plateau mean
    (``"plateau_mean"``), k* (``"mode"``), √β log β scaled (``"sqrt_log"``)."""
    b = ds["beta"].values
    modes = ds["kde_modes"].values
    bb = np.repeat(b[:, None], modes.shape[1], axis=1)
    ax.plot(bb.ravel(), modes.ravel(), "o", ms=3, mfc="none", color="C2", alpha=0.6,
            gid="kde")
    a = ds.attrs
    lo, hi = np.asarray(a.get("kde_mode_exponent_interval", [np.nan, np.nan]), float)
    counted = np.isfinite(ds["kde_modes_mean"].values).any()
    ax.plot(b, ds["kde_modes_mean"].values, "-s", ms=4, color="C2", gid="kde_mean",
            label=f"KDE modes of the start: exponent "
                  f"{float(a.get('kde_mode_exponent', np.nan)):.2f} [{lo:.2f}, {hi:.2f}]"
            if counted else "KDE modes of the start: not counted (kde_modes = false)")
    ax.plot(b, ds["first_plateau_mean"].values, "-o", ms=4, color="C0",
            gid="plateau_mean", label="first plateau")
    ax.plot(b, ds["most_unstable_mode"].values, "-^", ms=4, color="C3", gid="mode",
            label="k*")
    ref = ds["sqrt_beta_log_beta"].values
    first = ds["kde_modes_mean"].values
    k = np.nonzero(np.isfinite(first) & (ref > 0))[0]
    if k.size:
        scale = first[k[0]] / ref[k[0]]
        ax.plot(b, scale * ref, ":", color="0.3", gid="sqrt_log",
                label=f"√β log β (exponent {float(a.get('sqrt_log_exponent', np.nan)):.2f})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(b, [f"{v:g}" for v in b])
    ax.xaxis.set_minor_formatter("")
    _count_ticks(ax.yaxis, subs=(1.0, 1.5))
    ax.set_xlabel("β")
    ax.set_ylabel("count")
    ax.set_title("mean-shift picture: modes of the initial KDE", fontsize=8)
    ax.legend(fontsize=5.5, loc="upper left")


def places(ds: xr.Dataset, ax) -> None:
    """Mean matched distance, predicted to observed (``gid`` ``"error"``), and for a
    random turn (``"null"``), per β."""
    b = ds["beta"].values
    err, null = ds["plateau_position_error"].values, ds["plateau_position_null"].values
    if not np.isfinite(err).any() or ds.attrs.get("start", "uniform") != "uniform":
        ax.text(0.5, 0.5, "no predicted places (for uniform starts on S¹ with a first "
                "plateau)",
                ha="center", va="center", transform=ax.transAxes, fontsize=7)
        ax.set_axis_off()
        return
    x = np.arange(b.size)
    ax.bar(x - 0.2, np.nanmean(err, axis=1), 0.4, color="C0", gid="error",
           label="phases of mode k* (Fourier)")
    ax.bar(x + 0.2, np.nanmean(null, axis=1), 0.4, color="0.7", gid="null",
           label="same pattern, random turn")
    ax.set_xticks(x, [f"{v:g}" for v in b])
    ax.set_xlabel("β")
    ax.set_ylabel("mean matched distance (rad)")
    ratio = float(ds.attrs.get("position_error_ratio", np.nan))
    ax.set_title(f"first plateau's places: ratio to chance {ratio:.2f}", fontsize=8)
    ax.legend(fontsize=6, loc="upper right")


def times_page(ds: xr.Dataset, log: Any = "auto") -> Any:
    """The four panels (module docstring), or None without this module's variables."""
    del log
    if any(name not in ds.data_vars for name in NEEDED):
        return None
    with style():
        fig = _new_figure((9.0, 7.0))
        axes = [fig.add_subplot(2, 2, k + 1) for k in range(4)]
        staircases(ds, axes[0])
        times_vs_beta(ds, axes[1])
        modes_vs_beta(ds, axes[2])
        places(ds, axes[3])
        _letter_panels(axes)
        fig.suptitle(_greek(str(ds.attrs.get("title", "metastability")))
                     + ": metastable times, reduced model, KDE modes", fontsize=9)
    return fig
