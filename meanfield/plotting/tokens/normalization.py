"""Figures of a normalization study (``kind = "normalization"``): the normalization rules
side by side (Post-LN, Pre-LN, Peri-LN, nGPT, Mix-LN: those the dataset holds).

(a) the mean pairwise cosine ρ(t) of each architecture with the band of the systems and
the equiangular prediction (dashed), on a linear time axis up to where Post-LN has
clustered; (b) 1 − ρ on a log axis against t of the exponential laws (Post-LN, nGPT: a
line each, with the fitted rate over its window); (c) 1 − ρ against t on log–log axes of
the power laws (Pre-LN, Peri-LN, Mix-LN: t⁻², with the fitted powers over their windows
and the t⁻² guide).

The dataset (``meanfield.studies.tokens.normalization``): coords ``architecture`` and
``time``; ``cosine``, ``cosine_low``, ``cosine_high``, ``gap_mean``, ``gap_low``,
``gap_high``, ``equiangular_gap``, ``equiangular_cosine`` (architecture, time); per
architecture ``law``, ``fitted``, ``fit_start``, ``fit_stop``, ``predicted`` (a dataset
without them, written before the other rules: the scalars ``fitted_rate``,
``rate_fit_start``, ``rate_fit_stop``, ``fitted_power``, ``power_fit_start``,
``power_fit_stop``, ``predicted_rate``). Every line has a ``gid``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from meanfield.errors import ConfigError
from meanfield.plotting.common import _KindPlots, _register_kind
from meanfield.plotting.helpers import _letter_panels, _new_figure, style

NEEDED = ("cosine", "cosine_low", "cosine_high", "gap_mean", "gap_low", "gap_high",
          "equiangular_gap", "equiangular_cosine", "fitted_rate", "rate_fit_start",
          "rate_fit_stop", "fitted_power", "power_fit_start", "power_fit_stop",
          "predicted_rate")
LABELS = {"post-ln": "Post-LN", "pre-ln": "Pre-LN", "peri-ln": "Peri-LN", "ngpt": "nGPT",
          "mix-ln": "Mix-LN"}
COLORS = {"post-ln": "C0", "pre-ln": "C3", "peri-ln": "C2", "ngpt": "C1", "mix-ln": "C4"}
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


def _law(ds: xr.Dataset, a: str) -> str:
    """'rate' (1 - rho ~ e^{-rate t}) or 'power' (~ t^power); a dataset written before
    the other architectures: Post-LN's rate and Pre-LN's power."""
    if "law" in ds:
        return str(ds["law"].sel(architecture=a).values)
    return "rate" if a == "post-ln" else "power"


def _fit(ds: xr.Dataset, a: str) -> tuple[float, float, float, float]:
    """(fitted, start, stop, predicted) of architecture ``a``."""
    if "fitted" in ds:
        s = ds.sel(architecture=a)
        return tuple(float(s[k]) for k in ("fitted", "fit_start", "fit_stop", "predicted"))
    if a == "post-ln":
        return (float(ds["fitted_rate"]), float(ds["rate_fit_start"]),
                float(ds["rate_fit_stop"]), float(ds["predicted_rate"]))
    return (float(ds["fitted_power"]), float(ds["power_fit_start"]),
            float(ds["power_fit_stop"]), -2.0)


def _legend_once(ax, below: bool = False, **kwargs) -> None:
    """A legend with one entry per label (the equiangular curves and the fit windows
    share theirs), inside (``kwargs``) or under the axes in two columns (``below``)."""
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    if below:  # (as legible._legend_below: the curves cross every corner)
        kwargs = dict(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2,
                      fontsize=6.5, handlelength=1.4)
    ax.legend(list(unique.values()), list(unique), **kwargs)


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
    (shaded) and the equiangular prediction (dashed, one legend entry for all).
    ``gid``s ``"cosine:{arch}"``, ``"band:{arch}"``, ``"equiangular:{arch}"``."""
    t = ds["time"].values.astype(float)
    band = float(ds.attrs.get("band", 0.9))
    for a in _arch(ds):
        s = ds.sel(architecture=a)
        color = COLORS.get(a, "k")
        ax.fill_between(t, s["cosine_low"].values, s["cosine_high"].values, color=color,
                        alpha=0.15, lw=0, gid=f"band:{a}",
                        label=f"{band:.0%} of systems (shaded)")
        ax.plot(t, s["cosine"].values, "-", color=color, gid=f"cosine:{a}",
                label=f"{LABELS.get(a, a)}, mean")
        ax.plot(t, s["equiangular_cosine"].values, "--", color="k", lw=0.8, alpha=0.6,
                gid=f"equiangular:{a}", label="equiangular ODE (dashed)")
    ax.set_xlim(0.0, _view_time(ds))
    ax.set_ylim(min(-0.02, float(np.nanmin(ds["cosine_low"].values)) - 0.02), 1.02)
    ax.set_xlabel("time t")
    ax.set_ylabel(r"mean pairwise cosine $\rho(t)$")
    ax.set_title("clustering of the directions", fontsize=8)
    _legend_once(ax, fontsize=6.5, loc="lower right")


def _gap_curves(ds: xr.Dataset, ax, loglog: bool) -> None:
    """1 − ρ of the architectures whose law the panel shows (rates: semilog; powers:
    log–log), with their bands and equiangular curves."""
    t = ds["time"].values.astype(float)
    for a in _shown(ds, loglog):
        s = ds.sel(architecture=a)
        color = COLORS.get(a, "k")
        tt = np.where(t > 0, t, np.nan) if loglog else t
        ax.fill_between(tt, _positive(s["gap_low"].values), _positive(s["gap_high"].values),
                        color=color, alpha=0.2, lw=0, gid=f"gap_band:{a}")
        ax.plot(tt, _positive(s["gap_mean"].values), "-", color=color, gid=f"gap:{a}",
                label=LABELS.get(a, a))
        ax.plot(tt, _positive(s["equiangular_gap"].values), "--", lw=1.0, color="k",
                alpha=0.6, gid=f"equiangular_gap:{a}",
                label="equiangular ODE of each (dashed)")
    ax.set_yscale("log")
    if loglog:
        ax.set_xscale("log")


def _shown(ds: xr.Dataset, loglog: bool) -> list[str]:
    """The architectures of the log–log panel (power laws) or of the semilog one."""
    return [a for a in _arch(ds) if (_law(ds, a) == "power") == loglog]


def _fit_line(ds: xr.Dataset, ax, a: str) -> None:
    """The fitted exponential or power law of architecture ``a`` over its window through
    its mean gap (least-squares intercept), dashed and thick, and the window shaded."""
    t = ds["time"].values.astype(float)
    kind = _law(ds, a)
    value, start, stop, predicted = _fit(ds, a)
    if not all(np.isfinite([value, start, stop])):
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
    label = f"{LABELS.get(a, a)} fit: {kind} " + \
        f"{value:.4f} (pred. {predicted:.4g})".replace("-", "−")
    ax.plot(tt, np.exp(c + slope * xx), color=COLORS.get(a, "k"), lw=2.2, alpha=0.5,
            ls=(0, (4, 2)), gid=f"fit:{a}", label=label)
    ax.axvspan(start, stop, color="0.85", alpha=0.25, lw=0, gid=f"window:{a}",
               label="fit window")


def gap_semilog(ds: xr.Dataset, ax) -> None:
    """1 − ρ against t (log y) of the exponential laws (Post-LN, nGPT) with their fits."""
    _gap_curves(ds, ax, loglog=False)
    shown = _shown(ds, loglog=False)
    for a in shown:
        _fit_line(ds, ax, a)
    stops = [_fit(ds, a)[2] for a in shown if np.isfinite(_fit(ds, a)[2])]
    if stops:
        stop = max(stops)
        ax.set_xlim(0.0, 1.5 * stop)
        # the y range of what is in view (the bands beyond it pulled the axis decades
        # below the last drawn point)
        t = ds["time"].values.astype(float)
        # (up to the first saved time past the frame: the segment to it is drawn)
        last = t[min(int(np.searchsorted(t, 1.5 * stop)), t.size - 1)]
        rows = [_arch(ds).index(a) for a in shown]
        seen = np.concatenate([_positive(ds[name].values[rows][:, t <= last]).ravel()
                               for name in ("gap_low", "gap_mean", "gap_high",
                                            "equiangular_gap")])
        if np.isfinite(seen).any():
            ax.set_ylim(np.nanmin(seen) / 10.0, 10.0 * np.nanmax(seen))
    ax.set_xlabel("time t")
    ax.set_ylabel(r"$1-\rho(t)$")
    names = " and ".join(LABELS.get(a, a) for a in shown) or "no exponential law"
    ax.set_title(rf"{names}: $1-\rho \sim e^{{-\lambda t}}$", fontsize=8)
    _legend_once(ax, below=True)


def gap_loglog(ds: xr.Dataset, ax) -> None:
    """1 − ρ against t (log–log) of the power laws (Pre-LN, Peri-LN, Mix-LN) with their
    fits and the t⁻² guide (through Pre-LN's last point, else the first shown)."""
    _gap_curves(ds, ax, loglog=True)
    shown = _shown(ds, loglog=True)
    for a in shown:
        _fit_line(ds, ax, a)
    t = ds["time"].values.astype(float)
    guide = "pre-ln" if "pre-ln" in shown else (shown[0] if shown else None)
    if guide is not None:
        g = _positive(ds["gap_mean"].sel(architecture=guide).values)
        ok = np.flatnonzero(np.isfinite(g) & (t > 0))
        if ok.size:
            k = ok[-1]
            tt = np.geomspace(t[k] / 100.0, t[k], 20)
            ax.plot(tt, 3.0 * g[k] * (tt / t[k]) ** -2.0, ":", color="k", lw=1.0,
                    gid="guide", label=r"$\propto t^{-2}$")
    rows = [_arch(ds).index(a) for a in shown] or list(range(len(_arch(ds))))
    values = _positive(ds["gap_mean"].values[rows])
    low = np.nanmin(values) if np.isfinite(values).any() else 1e-16
    ax.set_ylim(low / 10.0, 2.0)
    ax.set_xlabel("time t")
    ax.set_ylabel(r"$1-\rho(t)$")
    names = ", ".join(LABELS.get(a, a) for a in shown) or "no power law"
    ax.set_title(rf"{names}: $1-\rho \sim t^{{-2}}$", fontsize=8)
    _legend_once(ax, below=True)


def _title(ds: xr.Dataset) -> str:
    """The title from the dataset's numbers (the study's ``title`` attribute spells the
    Greek letters out)."""
    a = ds.attrs
    if not all(k in a for k in ("n", "dim", "beta")):
        return str(a.get("title", "normalization"))
    rules = ", ".join(LABELS.get(x, x) for x in _arch(ds))
    extra = "".join([f", nGPT α = {float(a['ngpt_alpha']):g}" if "ngpt" in _arch(ds)
                     and "ngpt_alpha" in a else "",
                     f", Mix-LN switch at t = {float(a['mix_switch']):g}"
                     if "mix-ln" in _arch(ds) and "mix_switch" in a else ""])
    text = (f"{rules} ({a.get('model', 'SA')}): n = {int(a['n'])} tokens "
            f"in d = {int(a['dim'])}, β = {float(a['beta']):g}{extra}")
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
