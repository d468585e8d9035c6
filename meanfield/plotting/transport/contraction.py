"""Figures of a contraction study (``kind = "contraction"``): the W₂ distance to the target
against time on a log axis for each β, with the fitted exponential over its window and the
predicted slope, and the fitted rates against β with the predicted rate.

The dataset (see docs/datasets.md): coords ``beta``, ``time`` and ``source`` (a subset of
``"pde"``, ``"particles"``); ``distance`` (beta, time, source) in rad, NaN where not
computed; ``fitted_rate``, ``fitted_rate_low``, ``fitted_rate_high``, ``fit_start``,
``fit_stop`` (beta, source), the fit being log distance ≈ c − rate·t over
[fit_start, fit_stop]; ``predicted_rate`` (beta, source), the rate the source's window
measures (or (beta), from older results); optionally ``fit_regime`` (beta, source: "local",
"mean-field", ...), ``local_rate`` and ``mean_field_rate`` (beta), the two rates of
docs/contraction.md, and ``far_share`` (beta, time, source), the share of W₂² carried by
the far side (shown in a third summary panel: the crossover from the local to the
mean-field regime); optionally ``pair_distance`` (beta, time, source) and
``pair_fitted_rate`` (beta, source), the distance between two solutions from different
initial data, with (optionally) ``pair_fit_start``, ``pair_fit_stop`` (beta, source), the
window of that fit. The attrs ``target`` ("dirac" or "stationary"), ``model``, ``kappa``
and ``title`` label the figures.

The intercept c of a fitted line is not stored: it is the least-squares intercept for the
stored rate over the saved times in the window (exact for an exact exponential). The pair
fit's line is only drawn when its window is stored (no window is guessed). A source whose
distances are all NaN is left out of every panel.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from meanfield.errors import ConfigError
from meanfield.plotting.common import _KindPlots, _register_kind
from meanfield.plotting.helpers import (
    _attr_summary,
    _letter_panels,
    _new_figure,
    _time_label,
    style,
)
from meanfield.plotting.legible import _add_note, _plain_log_ticks

NEEDED = ("distance", "fitted_rate", "fitted_rate_low", "fitted_rate_high", "fit_start",
          "fit_stop", "predicted_rate")
COORDS = ("beta", "time", "source")
SOURCE_LABELS = {"pde": "PDE", "particles": "particles"}
SOURCE_MARKERS = {"pde": "o", "particles": "s"}
_MAX_BETA_LEGEND = 10  # more β than this: viridis and a colorbar instead of tab10 and a legend
_LOG_RATE_RANGE = 20.0  # rates panel on a log axis once max/min of the rates exceeds this
_DISTANCE_RANGE = 1e16  # the distance axis shows at most this factor below its largest value
# the predicted slope's line style by the regime its window measures
REGIME_STYLES = {"local": ":", "mean-field": "-."}
REGIME_LABELS = {"local": "local rate", "mean-field": "mean-field rate"}
# the fitted exponential lies on its β's distance curve: drawn as a wide pale band under
# it (a dashed line in the same colour on top of it could not be seen)
_FIT_STYLE = {"ls": "-", "lw": 5.0, "alpha": 0.3, "zorder": 1, "solid_capstyle": "butt"}
TARGET_LABELS = {"dirac": r"$W_2(\mu_t, \delta_{x_\infty})$",
                 "stationary": r"$W_2(\mu_t, \mu_\infty)$"}


def _check(ds: Any) -> xr.Dataset:
    missing = [name for name in NEEDED if name not in getattr(ds, "data_vars", {})]
    missing += [name for name in COORDS if name not in getattr(ds, "coords", {})]
    if missing:
        raise ConfigError(f"a contraction dataset needs {', '.join(missing)}", "result")
    return ds


def _title(ds: xr.Dataset) -> str:
    """The ``title`` attr with the model, κ and target, unless it names them already (as
    the study's own title does)."""
    title = str(ds.attrs.get("title", "")).strip() or "contraction"
    if any(word in title.lower() for word in ("kappa", "κ")):
        return title
    parts = [_attr_summary(ds)] if _attr_summary(ds) else []
    target = str(ds.attrs.get("target", ""))
    if target == "dirac":
        parts.append(r"target $\delta_{x_\infty}$")
    elif target == "stationary":
        parts.append(r"target $\mu_\infty$")
    return f"{title} ({', '.join(parts)})" if parts else title


def _sources(ds: xr.Dataset, name: str = "distance") -> list[str]:
    """The sources with at least one positive finite value of ``name``, in order."""
    out = []
    for source in ds["source"].values:
        values = ds[name].sel(source=source).values
        if np.any(np.isfinite(values) & (values > 0)):
            out.append(str(source))
    return out


def _colors(ds: xr.Dataset) -> tuple[list[Any], Any]:
    """One colour per β (tab10 up to 10 β, else viridis) and the viridis mappable or None."""
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    beta = ds["beta"].values.astype(float)
    if beta.size <= _MAX_BETA_LEGEND:
        return [colormaps["tab10"](i) for i in range(beta.size)], None
    norm = Normalize(float(np.nanmin(beta)), float(np.nanmax(beta)))
    cmap = colormaps["viridis"]
    return [cmap(norm(b)) for b in beta], ScalarMappable(norm=norm, cmap=cmap)


def _intercept(t: np.ndarray, d: np.ndarray, rate: float, start: float,
               stop: float) -> float | None:
    """Least-squares c of log d = c − rate·t over the saved times in [start, stop]."""
    span = max(abs(stop - start), 1.0)
    inside = ((t >= start - 1e-9 * span) & (t <= stop + 1e-9 * span)
              & np.isfinite(d) & (d > 0))
    if not inside.any():
        return None
    return float(np.mean(np.log(d[inside]) + rate * t[inside]))


def _beta_label(beta: float) -> str:
    return f"β = {beta:g}"


def _predicted(ds: xr.Dataset, i: int, source: str) -> tuple[float, str]:
    """The predicted rate of (β index i, source) and the regime it belongs to."""
    rate = ds["predicted_rate"].isel(beta=i)
    if "source" in rate.dims:
        rate = rate.sel(source=source)
    regime = "local"
    if "fit_regime" in ds.data_vars:
        regime = str(ds["fit_regime"].isel(beta=i).sel(source=source).values)
    return float(rate), regime


def distance_vs_time(ds: xr.Dataset, ax, variable: str = "distance") -> None:
    """The distances against time on a log axis: one colour per β, the PDE as a line and
    the particles as dots; the fitted exponential over its window (a wide pale band
    under the curve) and, for each source, the predicted slope of its window's regime
    through the start of its fitted line (black: dotted for the local rate, dash-dotted
    for the mean-field rate). ``variable = "pair_distance"`` draws the pair distances with the
    ``pair_fitted_rate`` lines where ``pair_fit_start``/``pair_fit_stop`` are stored (no
    predicted slope). Every line gets a ``gid``:
    ``"{variable}:{source}:{β}"``, ``"fit:{variable}:{source}:{β}"``,
    ``"predicted:{source}:{β}"``."""
    beta = ds["beta"].values.astype(float)
    colors, mappable = _colors(ds)
    pair = variable != "distance"
    shown: list[np.ndarray] = []
    sources = _sources(ds, variable)
    drawn_fit = False
    drawn_regimes: set[str] = set()
    for i in range(beta.size):
        for source in sources:
            d, fitted, regimes = _distance_curve(ax, ds, variable, i, source, colors[i])
            if d is not None:
                shown.append(d[np.isfinite(d)])
            drawn_fit |= fitted
            drawn_regimes |= regimes
    _decade_labels(ax, shown)
    ax.set_xlabel(_time_label(ds))
    if pair:
        ax.set_ylabel("distance between solutions (rad)")
        ax.set_title("two initial data", fontsize=8)
    else:
        target = TARGET_LABELS.get(str(ds.attrs.get("target", "")), r"$W_2$ to the target")
        ax.set_ylabel(f"{target} (rad)")
        ax.set_title("distance to the target", fontsize=8)
    _distance_legends(ax, ds, sources, drawn_fit, drawn_regimes, colors, mappable)


def _distance_curve(ax, ds: xr.Dataset, variable: str, i: int, source: str,
                    color: Any) -> tuple[np.ndarray | None, bool, set[str]]:
    """One (β index ``i``, source) curve of ``distance_vs_time`` with its fitted band and
    predicted slope. Returns the positive distances (None: nothing drawn), whether the
    fitted band was drawn, and the regimes whose slopes were drawn."""
    t = ds["time"].values.astype(float)
    b = float(ds["beta"].values[i])
    pair = variable != "distance"
    prefix = "pair_" if pair else ""
    fit_names = (f"{prefix}fitted_rate", f"{prefix}fit_start", f"{prefix}fit_stop")
    d = ds[variable].isel(beta=i).sel(source=source).values.astype(float)
    d = np.where(np.isfinite(d) & (d > 0), d, np.nan)
    if not np.isfinite(d).any():
        return None, False, set()
    gid = f"{variable}:{source}:{b:g}"
    if source == "pde":
        ax.semilogy(t, d, "-", color=color, lw=1.3, gid=gid)
    else:
        ax.semilogy(t, d, linestyle="none", marker=".", ms=4, color=color,
                    alpha=0.85, gid=gid)
    if not all(name in ds.data_vars for name in fit_names):
        return d, False, set()
    rate, start, stop = (float(ds[name].isel(beta=i).sel(source=source))
                         for name in fit_names)
    if not (np.isfinite(rate) and np.isfinite(start) and np.isfinite(stop)):
        return d, False, set()
    c = _intercept(t, d, rate, start, stop)
    if c is None:
        return d, False, set()
    tt = np.linspace(start, stop, 50)
    ax.semilogy(tt, np.exp(c - rate * tt), **_FIT_STYLE, color=color,
                gid=f"fit:{variable}:{source}:{b:g}")
    predicted, regime = _predicted(ds, i, source)
    if pair:
        return d, True, set()
    if np.isfinite(predicted) and regime in REGIME_STYLES:
        d0 = np.exp(c - rate * start)
        ax.semilogy(tt, d0 * np.exp(-predicted * (tt - start)), REGIME_STYLES[regime],
                    color="k", lw=1.0, zorder=4, gid=f"predicted:{source}:{b:g}")
        return d, True, {regime}
    if regime == "crossover":
        return d, True, _crossover_slopes(ax, ds, i, t, d, tt, f"{source}:{b:g}")
    return d, True, set()


def _distance_legends(ax, ds: xr.Dataset, sources: list[str], drawn_fit: bool,
                      drawn_regimes: set[str], colors: list[Any], mappable: Any) -> None:
    """The legends of ``distance_vs_time``: the styles (which line is which) in one, the
    β colours in another (or a colorbar, for many β)."""
    from matplotlib.lines import Line2D

    beta = ds["beta"].values.astype(float)
    styles = [Line2D([], [], color="0.3", lw=1.3, label=SOURCE_LABELS[s])
              if s == "pde" else
              Line2D([], [], color="0.3", ls="none", marker=".", ms=5, label=SOURCE_LABELS[s])
              for s in sources]
    if drawn_fit:
        styles.append(Line2D([], [], **_FIT_STYLE, color="0.3",
                             label="fitted rate (over its window)"))
    for regime in REGIME_STYLES:
        if regime in drawn_regimes:
            label = ("predicted rate" if "fit_regime" not in ds.data_vars
                     else f"predicted: {REGIME_LABELS[regime]}")
            styles.append(Line2D([], [], color="k", ls=REGIME_STYLES[regime], lw=1.0,
                                 label=label))
    # (outside the axes, on the right: the slow curves stay near the top right corner)
    if mappable is None:
        betas = [Line2D([], [], color=colors[i], lw=1.5, label=_beta_label(b))
                 for i, b in enumerate(beta)]
        ax.add_artist(ax.legend(handles=betas, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                                fontsize=7, borderaxespad=0.0))
    else:
        ax.figure.colorbar(mappable, ax=ax, label="β")
    if styles:
        ax.legend(handles=styles, loc="lower left", fontsize=7,
                  **({"bbox_to_anchor": (1.01, 0.0), "borderaxespad": 0.0}
                     if mappable is None else {}))


def _crossover_slopes(ax, ds: xr.Dataset, i: int, t: np.ndarray, d: np.ndarray,
                      tt: np.ndarray, tag: str) -> set[str]:
    """A window over the crossover: the local slope from the distance at its start and
    the mean-field slope into the distance at its end (the curve bends from one to the
    other). ``gid``s ``"local:{tag}"``, ``"mean_field:{tag}"``; the regimes drawn."""
    if not {"local_rate", "mean_field_rate"} <= set(ds.data_vars):
        return set()
    inside = np.flatnonzero((t >= tt[0]) & (t <= tt[-1]) & np.isfinite(d))
    if inside.size < 2:
        return set()
    first, last = inside[0], inside[-1]
    for name, regime, anchor, gid in (("local_rate", "local", first, "local"),
                                      ("mean_field_rate", "mean-field", last, "mean_field")):
        rate = float(ds[name].isel(beta=i))
        ax.semilogy(tt, d[anchor] * np.exp(-rate * (tt - t[anchor])), REGIME_STYLES[regime],
                    color="k", lw=1.0, gid=f"{gid}:{tag}")
    return {"local", "mean-field"}


def _decade_labels(ax, shown: list[np.ndarray]) -> None:
    """Readable labels on a log distance axis: plain numbers (0.02, 0.05, 0.1, ...) up to
    three decades, only the decades over more (no 6×10⁻¹ clutter); and at most 16
    decades shown (below that: the solver's round-off, or nothing)."""
    from matplotlib.ticker import NullFormatter

    if not shown:
        return
    values = np.concatenate(shown)
    top, bottom = float(values.max()), float(values.min())
    if top / bottom <= 1e3:
        _plain_log_ticks(ax.yaxis, bottom, top)
    else:
        ax.yaxis.set_minor_formatter(NullFormatter())
    if top / bottom > _DISTANCE_RANGE:
        ax.set_ylim(top / _DISTANCE_RANGE, top * 3.0)


def rates_vs_beta(ds: xr.Dataset, ax) -> None:
    """The fitted rates with their 95 % intervals against β, per source (and the pair
    rates as open markers when present), and the predicted rates as black lines: the local
    rate (solid) and the mean-field rate (dashed) where the dataset has both and they
    differ, else the one predicted rate; a log rate axis when the rates span more than a
    factor 20. ``gid``s: ``"rate:{source}"``, ``"pair_rate:{source}"``, ``"predicted"``
    (the local or only rate), ``"mean_field"``."""
    beta = ds["beta"].values.astype(float)
    sources = _sources(ds)
    spread = float(np.ptp(beta)) if beta.size > 1 else 1.0
    shift = 0.012 * spread if beta.size > 1 else 0.04  # one beta: a unit-wide axis
    values: list[np.ndarray] = []
    handles: list[Any] = []
    for k, source in enumerate(sources):
        dx = (k - (len(sources) - 1) / 2) * shift
        rate = ds["fitted_rate"].sel(source=source).values.astype(float)
        low = ds["fitted_rate_low"].sel(source=source).values.astype(float)
        high = ds["fitted_rate_high"].sel(source=source).values.astype(float)
        ok = np.isfinite(rate)
        if not ok.any():
            continue
        low = np.where(np.isfinite(low), low, rate)
        high = np.where(np.isfinite(high), high, rate)
        err = np.vstack([np.clip(rate - low, 0, None), np.clip(high - rate, 0, None)])
        color = f"C{k}"
        container = ax.errorbar(beta[ok] + dx, rate[ok], yerr=err[:, ok], fmt=SOURCE_MARKERS
                                .get(source, "o"), ms=4, color=color, capsize=2.5, lw=1.0,
                                label=f"fitted, {SOURCE_LABELS.get(source, source)}")
        container.lines[0].set_gid(f"rate:{source}")
        handles.append(container)
        values += [rate[ok], low[ok], high[ok]]
        if "pair_fitted_rate" in ds.data_vars:
            pair = ds["pair_fitted_rate"].sel(source=source).values.astype(float)
            if np.isfinite(pair).any():
                handles += ax.plot(beta + dx, pair, linestyle="none",
                        marker=SOURCE_MARKERS.get(source, "o"), ms=6, mfc="none",
                        color=color, gid=f"pair_rate:{source}",
                        label=f"fitted, two solutions, {SOURCE_LABELS.get(source, source)}")
                values.append(pair[np.isfinite(pair)])
    for name, gid, line_style, label in _rate_lines(ds):
        curve = ds[name].values.astype(float)
        if curve.ndim > 1:  # predicted_rate per source: the first finite one per β
            curve = np.array([row[np.isfinite(row)][0] if np.isfinite(row).any() else np.nan
                              for row in curve])
        ok = np.isfinite(curve)
        if ok.any():
            handles += ax.plot(beta[ok], curve[ok], line_style, color="k", lw=1.0, marker="x",
                               ms=4, gid=gid, label=label)
            values.append(curve[ok])
    if beta.size == 1:
        ax.set_xlim(beta[0] - 0.5, beta[0] + 0.5)
    ax.set_xlabel("β")
    ax.set_ylabel("rate (1/time)")
    ax.set_title("contraction rate against β", fontsize=8)
    every = np.concatenate(values) if values else np.array([])
    every = every[np.isfinite(every)]
    if every.size and every.min() > 0 and every.max() / every.min() > _LOG_RATE_RANGE:
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis, float(every.min()), float(every.max()))
    if handles:
        ax.legend(handles=handles, fontsize=7)


def _rate_lines(ds: xr.Dataset) -> list[tuple[str, str, str, str]]:
    """(variable, gid, style, label) of the predicted rate lines of the rates panel."""
    if {"local_rate", "mean_field_rate"} <= set(ds.data_vars):
        local = ds["local_rate"].values.astype(float)
        mean_field = ds["mean_field_rate"].values.astype(float)
        if np.any(np.abs(local - mean_field) > 1e-12 * np.abs(local)):
            model = str(ds.attrs.get("model", ""))
            circle = int(ds.attrs.get("dim", 2)) == 2
            return [("local_rate", "predicted", "-", "local rate " + {
                        "SA": "1", "USA": r"$e^{\beta}$"}.get(model, "")),
                    ("mean_field_rate", "mean_field", "--", "mean-field rate " + {
                        "SA": "1/2" if circle else "1",
                        "USA": r"$e^{-\beta}/2$" if circle else r"$e^{-\beta}$"
                    }.get(model, ""))]
        return [("local_rate", "predicted", "-", _predicted_label(ds))]
    return [("predicted_rate", "predicted", "-", _predicted_label(ds))]


def _predicted_label(ds: xr.Dataset) -> str:
    if str(ds.attrs.get("target", "")) == "stationary":
        return r"predicted $|\sigma|$ (slowest mode)"
    model = str(ds.attrs.get("model", ""))
    if model == "USA":
        return r"predicted $e^{\beta}$"
    if model == "SA":
        return "predicted 1"
    return "predicted"


def _has_far_share(ds: xr.Dataset) -> bool:
    return "far_share" in ds.data_vars and bool(_sources(ds, "far_share"))


def _far_share_shows(ds: xr.Dataset) -> bool:
    """Whether the far-side panel would show anything: a share at or above the panel's
    floor (a tenth of the local-regime threshold) at some time. A cluster that stays
    near its limit point has a far share of round-off (|share| < 1e-6 in the example),
    and the panel was an empty frame with a line along its bottom edge."""
    from meanfield.studies.transport.contraction_rates import FAR_EMPTY

    share = ds["far_share"].sel(source=_sources(ds, "far_share")).values.astype(float)
    return bool(np.any(np.isfinite(share) & (share >= FAR_EMPTY / 10)))


def _far_share_note(ds: xr.Dataset) -> str:
    from meanfield.studies.transport.contraction_rates import FAR_EMPTY

    share = ds["far_share"].sel(source=_sources(ds, "far_share")).values.astype(float)
    worst = float(np.nanmax(np.abs(share))) if np.isfinite(share).any() else float("nan")
    return (f"far side: the share of W₂² beyond π/2 stays below {FAR_EMPTY / 10:g} "
            f"(max {worst:.1e}): every fit window is in the local regime")


def far_share_vs_time(ds: xr.Dataset, ax) -> None:
    """The far side's share of W₂² against time (log axis), one colour per β, each
    source that has it (the densities); the fit windows bold, and the threshold under which
    a window measures the local rate (dotted). ``gid``s: ``"far_share:{source}:{β}"``."""
    from meanfield.studies.transport.contraction_rates import FAR_EMPTY

    t = ds["time"].values.astype(float)
    colors, _ = _colors(ds)
    low = FAR_EMPTY / 10
    for i, b in enumerate(ds["beta"].values.astype(float)):
        for source in _sources(ds, "far_share"):
            share = ds["far_share"].isel(beta=i).sel(source=source).values.astype(float)
            share = np.where(np.isfinite(share), np.maximum(share, low), np.nan)
            ax.semilogy(t, share, "-", color=colors[i], lw=1.0, alpha=0.6,
                        gid=f"far_share:{source}:{b:g}")
            start, stop = (float(ds[n].isel(beta=i).sel(source=source))
                           for n in ("fit_start", "fit_stop"))
            if np.isfinite(start) and np.isfinite(stop):
                inside = (t >= start) & (t <= stop)
                ax.semilogy(t[inside], share[inside], "-", color=colors[i], lw=2.4)
    ax.axhline(FAR_EMPTY, color="k", ls=":", lw=0.8)
    ax.text(0.98, FAR_EMPTY * 1.3, "local regime below", transform=ax.get_yaxis_transform(),
            ha="right", va="bottom", fontsize=7)
    ax.set_ylim(low, 1.5)
    ax.set_xlabel(_time_label(ds))
    ax.set_ylabel(r"share of $W_2^2$ beyond $\pi/2$")
    ax.set_title("far side (bold: fit window)", fontsize=8)


def _summary(ds: xr.Dataset, log: Any = "auto") -> Any:
    del log
    far = _has_far_share(ds) and _far_share_shows(ds)
    with style():
        fig = _new_figure((12.6 if far else 8.6, 3.2))
        axes = [fig.add_subplot(1, 2 + far, k + 1) for k in range(2 + far)]
        distance_vs_time(ds, axes[0])
        if far:
            far_share_vs_time(ds, axes[1])
        elif _has_far_share(ds):  # nothing to draw: say so instead of an empty panel
            _add_note(fig, _far_share_note(ds))
        rates_vs_beta(ds, axes[-1])
        _letter_panels(axes)
        fig.suptitle(_title(ds), fontsize=9)
    return fig


def _curves_page(ds: xr.Dataset, log: Any = "auto") -> Any:
    del log
    pair = "pair_distance" in ds.data_vars and bool(_sources(ds, "pair_distance"))
    with style():
        fig = _new_figure((4.8 * (1 + pair), 3.3))
        axes = [fig.add_subplot(1, 1 + pair, 1)]
        distance_vs_time(ds, axes[0])
        if pair:
            axes.append(fig.add_subplot(1, 2, 2))
            distance_vs_time(ds, axes[1], "pair_distance")
            _letter_panels(axes)
        fig.suptitle(_title(ds), fontsize=9)
    return fig


def _rates_page(ds: xr.Dataset, log: Any = "auto") -> Any:
    del log
    with style():
        fig = _new_figure((4.2, 3.2))
        rates_vs_beta(ds, fig.add_subplot(1, 1, 1))
        fig.suptitle(_title(ds), fontsize=9)
    return fig


def _animate(ds: xr.Dataset, path: Any, **kwargs: Any) -> None:
    raise ConfigError("a contraction study has no animation; plot it without --animate",
                      "--animate")


_register_kind("contraction", _KindPlots(
    check=_check, summary=_summary,
    pages=(("curves", _curves_page), ("rates", _rates_page)), animate=_animate))
