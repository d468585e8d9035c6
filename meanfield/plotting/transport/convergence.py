"""Figures of a convergence study (``kind = "convergence"``): the error against n at the
last saved time with its fitted slope and the n^{-1/2} guide, the errors against time
with Dobrushin's bound (the axis set by the data; the bound clipped and marked where it
leaves the frame), and, on the ``rates`` page, one panel of the fitted slopes against
time. Against the Gaussian mean field (``reference = "gaussian"``):
the errors of the mean and covariance and the coupling, each with its fitted slope."""
from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from meanfield.errors import ConfigError
from meanfield.plotting.common import _KindPlots, _register_kind
from meanfield.plotting.helpers import _new_figure, style
from meanfield.plotting.legible import _greek, _legend_below, _plain_log_ticks

NEEDED = ("distance", "coupling", "sampling_floor", "dobrushin_bound", "slope",
          "slope_low", "slope_high")
COLORS = {"distance": "C0", "coupling": "C1", "sampling_floor": "C2"}
LABELS = {"distance": r"$W_p(\mu^n_t, \mu_t)$", "coupling": "coupling (interaction)",
          "sampling_floor": "sampling floor"}
# the Gaussian reference (meanfield.studies.transport.gaussian_convergence)
GAUSSIAN = {"mean_error": ("C0", r"$|\bar X - \alpha_t|$"),
            "covariance_error": ("C3", r"$\|\mathrm{cov}\,X - \Sigma_t\|_F$"),
            "coupling": ("C1", "coupling")}


def _gaussian(ds: Any) -> bool:
    return getattr(ds, "attrs", {}).get("reference") == "gaussian"


def _check(ds: Any) -> xr.Dataset:
    needed = ([f"{q}{s}" for q in GAUSSIAN for s in ("", "_slope", "_slope_low", "_slope_high")]
              if _gaussian(ds) else NEEDED)
    missing = [name for name in needed if name not in getattr(ds, "data_vars", {})]
    if missing:
        raise ConfigError(f"a convergence dataset needs {', '.join(missing)}", "result")
    return ds


def _title(ds: xr.Dataset) -> str:
    return _greek(str(ds.attrs.get("title", "convergence")))


def _label(ds: xr.Dataset, name: str) -> str:
    """The legend label of a series; the distance says its order p (``attrs["p"]``)."""
    if name == "distance" and "p" in ds.attrs:
        return rf"$W_{{{float(ds.attrs['p']):g}}}(\mu^n_t, \mu_t)$"
    return LABELS[name]


def error_vs_n(ds: xr.Dataset, ax, k: int) -> None:
    """Replicas as dots, their mean as a line, the fitted slope and the n^{-1/2} guide."""
    n = ds["n"].values.astype(float)
    for name, color in COLORS.items():
        values = ds[name].isel(time=k).values  # (n, replica)
        if not np.any(np.isfinite(values) & (values > 0)):
            continue
        ax.loglog(np.repeat(n, values.shape[1]), values.ravel(), ".", color=color,
                  alpha=0.35, ms=3)
        ax.loglog(n, np.nanmean(values, axis=1), "-", color=color, label=_label(ds, name))
    ax.plot([], [], ".", color="0.45", ms=4, label="replicas (dots), mean (line)")
    mean = np.nanmean(ds["distance"].isel(time=k).values, axis=1)
    if np.isfinite(mean[0]) and mean[0] > 0:
        ax.loglog(n, mean[0] * (n / n[0]) ** -0.5, "k:", lw=1, label=r"$n^{-1/2}$")
    _plain_log_ticks(ax.xaxis)  # 100, 200, 500 (not 2 × 10², 3 × 10², ...)
    slope = float(ds["slope"].isel(time=k))
    low, high = float(ds["slope_low"].isel(time=k)), float(ds["slope_high"].isel(time=k))
    ax.set_title(f"t = {float(ds.time[k]):g}: slope {slope:.3f} [{low:.3f}, {high:.3f}]",
                 fontsize=8)
    ax.set_xlabel("tokens n")
    ax.set_ylabel("rad")


def gaussian_error_vs_n(ds: xr.Dataset, ax, k: int) -> None:
    """The Gaussian reference's errors at time ``k``: replicas as dots, their mean as a
    line, the fitted slope with its 95 % interval in the legend, the n^{-1/2} guide."""
    n = ds["n"].values.astype(float)
    for name, (color, label) in GAUSSIAN.items():
        values = ds[name].isel(time=k).values
        if not np.any(np.isfinite(values) & (values > 0)):
            continue
        ax.loglog(np.repeat(n, values.shape[1]), values.ravel(), ".", color=color,
                  alpha=0.3, ms=3)
        fit = [float(ds[f"{name}_slope{s}"].isel(time=k)) for s in ("", "_low", "_high")]
        ax.loglog(n, np.nanmean(values, axis=1), "-", color=color,
                  label=f"{label}: {fit[0]:.3f} [{fit[1]:.3f}, {fit[2]:.3f}]")
    mean = np.nanmean(ds["mean_error"].isel(time=k).values, axis=1)
    if np.isfinite(mean[0]) and mean[0] > 0:
        ax.loglog(n, mean[0] * (n / n[0]) ** -0.5, "k:", lw=1, label=r"$n^{-1/2}$")
    ax.set_title(f"t = {float(ds.time[k]):g}: fitted slopes [95 %]", fontsize=8)
    ax.set_xlabel("tokens n")
    ax.legend(fontsize=6)


def gaussian_error_vs_time(ds: xr.Dataset, ax) -> None:
    """Mean errors over the replicas against time for each n (darker: larger n)."""
    for i in range(ds.sizes["n"]):
        shade = 0.35 + 0.65 * (i + 1) / ds.sizes["n"]
        for name, (color, label) in GAUSSIAN.items():
            mean = ds[name].isel(n=i).mean("replica").values
            ax.semilogy(ds.time.values, np.where(mean > 0, mean, np.nan), color=color,
                        alpha=shade, label=label if i == ds.sizes["n"] - 1 else None)
    ax.set_xlabel("time")
    ax.set_title("errors against time (darker: larger n)", fontsize=8)
    ax.legend(fontsize=7)


def error_vs_time(ds: xr.Dataset, ax) -> None:
    """Mean errors over the replicas against time for each n, with Dobrushin's bound.

    The vertical axis is set by the data alone: the bound (``e^{Ct}``-type, often orders
    of magnitude above the measured errors) is clipped at the frame, and where it leaves
    the frame an arrow at the top edge says so and gives its value there (gids
    ``dobrushin_bound:{i}`` for the lines, ``dobrushin_off_frame`` for the arrow)."""
    t = ds.time.values.astype(float)
    data: list[np.ndarray] = []
    for i in range(ds.sizes["n"]):
        shade = 0.35 + 0.65 * (i + 1) / ds.sizes["n"]
        for name, color in COLORS.items():
            mean = ds[name].isel(n=i).mean("replica").values
            mean = np.where(mean > 0, mean, np.nan)  # (the coupling starts at 0)
            data.append(mean)
            ax.semilogy(t, mean, color=color, alpha=shade,
                        label=_label(ds, name) if i == ds.sizes["n"] - 1 else None)
    values = np.concatenate(data) if data else np.zeros(0)
    values = values[np.isfinite(values) & (values > 0)]
    low, high = ((values.min() / 2, values.max() * 2) if values.size else (None, None))
    above: list[tuple[float, float]] = []
    for i in range(ds.sizes["n"]):
        shade = 0.35 + 0.65 * (i + 1) / ds.sizes["n"]
        bound = ds["dobrushin_bound"].isel(n=i).mean("replica").values.astype(float)
        if not np.isfinite(bound).any():
            continue
        ax.semilogy(t, bound, "k--", alpha=shade, lw=1, gid=f"dobrushin_bound:{i}",
                    label="Dobrushin bound" if i == ds.sizes["n"] - 1 else None)
        if high is not None:
            out = np.flatnonzero(np.isfinite(bound) & (bound > high))
            if out.size:
                above.append((t[out[0]], float(np.nanmax(bound))))
    if above:
        high *= 6.0  # (headroom for the note on the bound)
    if high is not None:
        ax.set_ylim(low, high)
    if above:
        t0 = min(t for t, _ in above)
        top = max(v for _, v in above)
        # (an upward arrow from inside the frame to where the bound leaves it)
        ax.annotate(f"Dobrushin bound above\n(up to {top:.1e})", xy=(t0, high),
                    xytext=(12, -6), textcoords="offset points", ha="left", va="top",
                    fontsize=6.5, gid="dobrushin_off_frame",
                    bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none",
                          "alpha": 0.8},
                    arrowprops={"arrowstyle": "->", "lw": 0.8, "color": "k"})
    ax.set_xlabel("time")
    ax.set_ylabel("rad")
    ax.set_title("errors against time (darker: larger n)", fontsize=8)


def slope_vs_time(ds: xr.Dataset, ax) -> None:
    """The fitted slope of each error against n (log-log) at every saved time, its 95 %
    interval as a band, and the mean-field rate -1/2 (gids ``slope:{name}``). For the
    main reference: ``W_p`` (``slope``), the coupling and the sampling floor when the
    dataset has their slopes; for the Gaussian one: the mean, covariance and coupling."""
    t = ds.time.values.astype(float)
    if _gaussian(ds):
        series = [(name, f"{name}_slope", color, label)
                  for name, (color, label) in GAUSSIAN.items()]
    else:
        series = [(name, "slope" if name == "distance" else f"{name}_slope", color,
                   _label(ds, name)) for name, color in COLORS.items()]
    for name, key, color, label in series:
        if key not in ds.data_vars:
            continue
        slope = ds[key].values.astype(float)
        if not np.isfinite(slope).any():
            continue
        ax.plot(t, slope, "-o", color=color, ms=3, lw=1.2, label=label,
                gid=f"slope:{name}")
        if f"{key}_low" in ds.data_vars and f"{key}_high" in ds.data_vars:
            ax.fill_between(t, ds[f"{key}_low"].values.astype(float),
                            ds[f"{key}_high"].values.astype(float), color=color,
                            alpha=0.15, lw=0)
    ax.axhline(-0.5, color="k", ls=":", lw=1, label=r"$n^{-1/2}$: $-1/2$")
    ax.set_xlabel("time")
    ax.set_ylabel("slope of log(error) against log n")
    # (under the panel: the 95 % bands fill it from top to bottom)
    ax.legend(fontsize=6.5, title="fitted slope (band: 95 % interval)",
              title_fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2)


def _summary(ds: xr.Dataset, log: Any = "auto") -> Any:
    del log
    with style():
        fig = _new_figure((8.0, 3.6))
        a, b = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
        if _gaussian(ds):
            gaussian_error_vs_n(ds, a, ds.sizes["time"] - 1)
            gaussian_error_vs_time(ds, b)
            fig.suptitle(_title(ds), fontsize=9)
            return fig
        error_vs_n(ds, a, ds.sizes["time"] - 1)
        error_vs_time(ds, b)
        # (below the panels: the replicas' dots fill (a), the note on the bound (b)'s top)
        for ax in (a, b):
            _legend_below(ax)
        fig.suptitle(_title(ds), fontsize=9)
    return fig


def _rates_page(ds: xr.Dataset, log: Any = "auto") -> Any:
    """One panel: the slopes against time (``slope_vs_time``), not one panel per time."""
    del log
    with style():
        fig = _new_figure((4.6, 3.8))
        slope_vs_time(ds, fig.add_subplot(1, 1, 1))
        fig.suptitle(_title(ds), fontsize=9)
    return fig


def _animate(ds: xr.Dataset, path: Any, **kwargs: Any) -> None:
    raise ConfigError("a convergence study has no animation; plot it without --animate",
                      "--animate")


_register_kind("convergence", _KindPlots(
    check=_check, summary=_summary, pages=(("rates", _rates_page),), animate=_animate))
