"""Figures of a normalization study (``kind = "normalization"``): Post-LN against Pre-LN.

(a) the mean pairwise cosine ρ(t) of each architecture with the band of the systems and
the equiangular prediction (dashed), on a linear time axis up to where Post-LN has
clustered; (b) 1 − ρ on a log axis against t (Post-LN's exponential: a line, with the
fitted rate over its window); (c) 1 − ρ against t on log–log axes (Pre-LN's t⁻²: a
line, with the fitted power over its window and the t⁻² guide).

The dataset (``meanfield.studies.tokens.normalization``): coords ``architecture`` ("post-ln",
"pre-ln") and ``time``; ``cosine``, ``cosine_low``, ``cosine_high``, ``gap_mean``,
``gap_low``, ``gap_high``, ``equiangular_gap``, ``equiangular_cosine`` (architecture,
time); scalars ``fitted_rate``, ``rate_fit_start``, ``rate_fit_stop``, ``fitted_power``,
``power_fit_start``, ``power_fit_stop``, ``predicted_rate``. Every line has a ``gid``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from meanfield.errors import ConfigError
from meanfield.plotting.common import _KindPlots, _register_kind
from meanfield.plotting.helpers import _letter_panels, _new_figure, style
from meanfield.plotting.legible import _legend_below

NEEDED = ("cosine", "cosine_low", "cosine_high", "gap_mean", "gap_low", "gap_high",
          "equiangular_gap", "equiangular_cosine", "fitted_rate", "rate_fit_start",
          "rate_fit_stop", "fitted_power", "power_fit_start", "power_fit_stop",
          "predicted_rate")
LABELS = {"post-ln": "Post-LN", "pre-ln": "Pre-LN"}
COLORS = {"post-ln": "C0", "pre-ln": "C3"}
_FLOOR = 1e-30  # 1 - rho below this is round-off (Post-LN after its collapse): not drawn


def _check(ds: Any) -> xr.Dataset:
    missing = [name for name in NEEDED if name not in getattr(ds, "data_vars", {})]
    missing += [name for name in ("architecture", "time") if name not in
                getattr(ds, "coords", {})]
    if missing:
        raise ConfigError(f"a normalization dataset needs {', '.join(missing)}", "result")
    return ds


def _arch(ds: xr.Dataset) -> list[str]:
    return [str(a) for a in ds["architecture"].values]


def _positive(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    return np.where(np.isfinite(v) & (v > _FLOOR), v, np.nan)


def _view_time(ds: xr.Dataset) -> float:
    """The end of the linear time axis: three times the time Post-LN takes to reach
    1 − ρ = 1e-3 (the whole axis when it never does)."""
    t = ds["time"].values.astype(float)
    if "post-ln" not in _arch(ds):
        return float(t[-1])
    g = ds["gap_mean"].sel(architecture="post-ln").values
    hit = np.flatnonzero(np.isfinite(g) & (g <= 1e-3))
    return float(min(t[-1], 3.0 * t[hit[0]])) if hit.size and t[hit[0]] > 0 else float(t[-1])


def cosine_vs_time(ds: xr.Dataset, ax) -> None:
    """ρ(t) per architecture: the mean over the systems (line), the band of the systems
    (shaded) and the equiangular prediction (dashed). ``gid``s ``"cosine:{arch}"``,
    ``"band:{arch}"``, ``"equiangular:{arch}"``."""
    t = ds["time"].values.astype(float)
    band = float(ds.attrs.get("band", 0.9))
    for a in _arch(ds):
        s = ds.sel(architecture=a)
        color = COLORS.get(a, "k")
        ax.fill_between(t, s["cosine_low"].values, s["cosine_high"].values, color=color,
                        alpha=0.2, lw=0, gid=f"band:{a}",
                        label=f"{LABELS.get(a, a)}, {band:.0%} of systems")
        ax.plot(t, s["cosine"].values, "-", color=color, gid=f"cosine:{a}",
                label=f"{LABELS.get(a, a)}, mean")
        ax.plot(t, s["equiangular_cosine"].values, "--", color="k" if a == "post-ln"
                else "0.45", lw=1.0, gid=f"equiangular:{a}",
                label=f"equiangular ODE, {LABELS.get(a, a)}")
    ax.set_xlim(0.0, _view_time(ds))
    ax.set_ylim(min(-0.02, float(np.nanmin(ds["cosine_low"].values)) - 0.02), 1.02)
    ax.set_xlabel("time t")
    ax.set_ylabel(r"mean pairwise cosine $\rho(t)$")
    ax.set_title("clustering of the directions", fontsize=8)
    ax.legend(fontsize=6.5, loc="lower right")


def _gap_curves(ds: xr.Dataset, ax, loglog: bool) -> None:
    t = ds["time"].values.astype(float)
    for a in _arch(ds):
        s = ds.sel(architecture=a)
        color = COLORS.get(a, "k")
        tt = np.where(t > 0, t, np.nan) if loglog else t
        ax.fill_between(tt, _positive(s["gap_low"].values), _positive(s["gap_high"].values),
                        color=color, alpha=0.2, lw=0, gid=f"gap_band:{a}")
        ax.plot(tt, _positive(s["gap_mean"].values), "-", color=color, gid=f"gap:{a}",
                label=LABELS.get(a, a))
        ax.plot(tt, _positive(s["equiangular_gap"].values), "--", lw=1.0,
                color="k" if a == "post-ln" else "0.45", gid=f"equiangular_gap:{a}",
                label=f"equiangular ODE, {LABELS.get(a, a)}")
    ax.set_yscale("log")
    if loglog:
        ax.set_xscale("log")


def _fit_line(ds: xr.Dataset, ax, kind: str) -> None:
    """The fitted exponential (Post-LN) or power law (Pre-LN) over its window through the
    mean gap (least-squares intercept), dashed and thick."""
    t = ds["time"].values.astype(float)
    if kind == "rate":
        a, value = "post-ln", float(ds["fitted_rate"])
        start, stop = float(ds["rate_fit_start"]), float(ds["rate_fit_stop"])
    else:
        a, value = "pre-ln", float(ds["fitted_power"])
        start, stop = float(ds["power_fit_start"]), float(ds["power_fit_stop"])
    if a not in _arch(ds) or not all(np.isfinite([value, start, stop])):
        return
    g = _positive(ds["gap_mean"].sel(architecture=a).values)
    inside = (t >= start * (1 - 1e-9)) & (t <= stop * (1 + 1e-9)) & np.isfinite(g)
    if not inside.any():
        return
    x = t[inside] if kind == "rate" else np.log(t[inside])
    slope = -value if kind == "rate" else value
    c = float(np.mean(np.log(g[inside]) - slope * x))
    tt = np.linspace(start, stop, 60) if kind == "rate" else np.geomspace(start, stop, 60)
    xx = tt if kind == "rate" else np.log(tt)
    label = (f"fit: rate {value:.4f} (pred. {float(ds['predicted_rate']):.4g})"
             if kind == "rate" else f"fit: power {value:.4f} (pred. −2)".replace("-", "−"))
    ax.plot(tt, np.exp(c + slope * xx), color="k", lw=2.2, alpha=0.5, ls=(0, (4, 2)),
            gid=f"fit:{a}", label=label)
    ax.axvspan(start, stop, color="0.85", alpha=0.4, lw=0, gid=f"window:{a}",
               label="fit window")


def gap_semilog(ds: xr.Dataset, ax) -> None:
    """1 − ρ against t (log y): Post-LN's exponential with its fit."""
    _gap_curves(ds, ax, loglog=False)
    _fit_line(ds, ax, "rate")
    stop = float(ds["rate_fit_stop"]) if np.isfinite(float(ds["rate_fit_stop"])) else None
    if stop is not None:
        ax.set_xlim(0.0, 1.5 * stop)
        # the y range of what is in view (the bands beyond it pulled the axis decades
        # below the last drawn point)
        t = ds["time"].values.astype(float)
        # (up to the first saved time past the frame: the segment to it is drawn)
        last = t[min(int(np.searchsorted(t, 1.5 * stop)), t.size - 1)]
        seen = np.concatenate([_positive(ds[name].values[:, t <= last]).ravel()
                               for name in ("gap_low", "gap_mean", "gap_high",
                                            "equiangular_gap")])
        if np.isfinite(seen).any():
            ax.set_ylim(np.nanmin(seen) / 10.0, 10.0 * np.nanmax(seen))
    ax.set_xlabel("time t")
    ax.set_ylabel(r"$1-\rho(t)$")
    ax.set_title(r"Post-LN: $1-\rho \sim e^{-2t}$", fontsize=8)
    _legend_below(ax)


def gap_loglog(ds: xr.Dataset, ax) -> None:
    """1 − ρ against t (log–log): Pre-LN's power law with its fit and the t⁻² guide."""
    _gap_curves(ds, ax, loglog=True)
    _fit_line(ds, ax, "power")
    t = ds["time"].values.astype(float)
    if "pre-ln" in _arch(ds):
        g = _positive(ds["gap_mean"].sel(architecture="pre-ln").values)
        ok = np.flatnonzero(np.isfinite(g) & (t > 0))
        if ok.size:
            k = ok[-1]
            tt = np.geomspace(t[k] / 100.0, t[k], 20)
            ax.plot(tt, 3.0 * g[k] * (tt / t[k]) ** -2.0, ":", color="k", lw=1.0,
                    gid="guide", label=r"$\propto t^{-2}$")
    pre = ds["gap_mean"].sel(architecture="pre-ln").values if "pre-ln" in _arch(ds) \
        else ds["gap_mean"].values
    low = np.nanmin(_positive(pre)) if np.isfinite(_positive(pre)).any() else 1e-16
    ax.set_ylim(low / 10.0, 2.0)
    ax.set_xlabel("time t")
    ax.set_ylabel(r"$1-\rho(t)$")
    ax.set_title(r"Pre-LN: $1-\rho \sim t^{-2}$", fontsize=8)
    _legend_below(ax)


def _title(ds: xr.Dataset) -> str:
    """The title from the dataset's numbers (the study's ``title`` attribute spells the
    Greek letters out)."""
    a = ds.attrs
    if not all(k in a for k in ("n", "dim", "beta")):
        return str(a.get("title", "normalization"))
    text = (f"Post-LN against Pre-LN ({a.get('model', 'SA')}): n = {int(a['n'])} tokens "
            f"in d = {int(a['dim'])}, β = {float(a['beta']):g}")
    return text + (f", {int(a['systems'])} systems" if "systems" in a else "")


def _summary(ds: xr.Dataset, log: Any = "auto") -> Any:
    del log
    with style():
        fig = _new_figure((11.0, 4.3))
        axes = [fig.add_subplot(1, 3, k) for k in (1, 2, 3)]
        cosine_vs_time(ds, axes[0])
        gap_semilog(ds, axes[1])
        gap_loglog(ds, axes[2])
        _letter_panels(axes)
        fig.suptitle(_title(ds), fontsize=9)
    return fig


def _animate(ds: xr.Dataset, path: Any, **kwargs: Any) -> None:
    raise ConfigError("a normalization study has no animation; plot it without --animate",
                      "--animate")


_register_kind("normalization", _KindPlots(check=_check, summary=_summary, pages=(),
                                           animate=_animate))
