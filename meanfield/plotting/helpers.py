"""Shared helpers of ``meanfield.plotting``: the compact figure style, number and label
formatting, colour scales, cell edges, the choice of snapshots and animation frames,
dataset checks, animation writing, and the diagnostics panels (the time series drawn by
``diagnostics`` and in the bottom row of the summary figures).

Nothing here knows the geometries or the dataset kinds: their registries and the
dispatch of the public functions are in ``common``.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from meanfield.errors import ConfigError
from meanfield.io import write_atomic

if TYPE_CHECKING:  # pragma: no cover - typing only
    import xarray as xr
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

TWO_PI = 2.0 * math.pi
# one name for the interaction energy of PDE and token figures: both datasets store
# E_beta(rho) - E_beta(uniform) (dimensionless)
ENERGY_LABEL = "E(t) − E(uniform)"
_LOG_DYNAMIC_RANGE = 1e8  # log colour scale spans at most this factor below the maximum
_AUTO_LOG_PEAK = 25.0  # log="auto": log scale once the peak exceeds 25x the uniform density
_MAX_LEGEND_ENTRIES = 8  # more snapshot curves than this get a time colorbar instead

_STYLE: dict[str, Any] = {
    "font.size": 9,
    "axes.titlesize": 9.5,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 7.5,
    "figure.titlesize": 11,
    "lines.linewidth": 1.4,
    "axes.linewidth": 0.8,
    "legend.frameon": False,
    "savefig.facecolor": "white",
    "figure.facecolor": "white",
}


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------
def _new_figure(figsize: tuple[float, float]) -> Figure:
    """A pyplot-free figure with an Agg canvas and constrained layout."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def style() -> Any:
    """The package's figure style, as a context manager: compact fonts and lines sized
    for a two-column paper, no legend frames, white backgrounds.

    Every figure that ``meanfield.plotting`` makes on its own is drawn inside it; wrap
    your own figures in it so that they match the package's panels drawn into them::

        from meanfield.plotting import style
        with style():
            fig = matplotlib.figure.Figure(figsize=(6, 3), layout="constrained")
            ...

    Returns:
        ``matplotlib.rc_context`` over the style's rcParams (they are restored on exit).
    """
    import matplotlib

    return matplotlib.rc_context(_STYLE)


def _fmt_number(value: Any) -> str:
    """``1.0 -> '1'``, ``inf -> '∞'``; other values as given."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    return f"{x:.4g}"


def _fmt_time(t: float) -> str:
    return f"{t:.3g}"


def _units_suffix(var: Any) -> str:
    """' (1/rad)' for a variable with units; '' when dimensionless ("1", "1 (...)")."""
    units = str(getattr(var, "attrs", {}).get("units", "")).strip()
    return "" if units == "" or units.split()[0] == "1" else f" ({units})"


def _time_label(ds: xr.Dataset) -> str:
    return "time t" + _units_suffix(ds["time"]) if "time" in ds.coords else "time t"


def _attr_summary(ds: xr.Dataset) -> str:
    """'SA, β = 1, κ = ∞, spectral' from whichever of those attrs are present."""
    attrs = ds.attrs
    parts = []
    if "model" in attrs:
        parts.append(_model_name(attrs))
    if "beta" in attrs:
        parts.append(f"β = {_fmt_number(attrs['beta'])}")
    if "kappa" in attrs:
        parts.append(f"κ = {_fmt_number(attrs['kappa'])}")
    if "method" in attrs:
        parts.append(f"{attrs['method']}")
    return ", ".join(parts)


def _model_name(attrs: Any) -> str:
    """'SA model', 'USA model'; at β = 0 both are the noisy Kuramoto model (the
    interaction e^{β⟨x, y⟩} is constant, so the normalisation is the only difference and
    it cancels), named 'Kuramoto model' rather than after the attention."""
    model = str(attrs["model"])
    try:
        beta = float(attrs.get("beta", math.nan))
    except (TypeError, ValueError):
        beta = math.nan
    if beta == 0.0 and model in ("SA", "USA"):
        return "Kuramoto model"
    return f"{model} model"


def _title(ds: xr.Dataset) -> str:
    """Parameters from the attrs, after the ``title`` attr unless that already has them."""
    title = str(ds.attrs.get("title", "")).strip()
    summary = _attr_summary(ds)
    if summary and any(word in title.lower() for word in ("beta", "β")):
        title = ""  # a generated title repeating the parameters (meanfield.evolve's)
    if title and summary:
        sep = "\n" if len(title) + len(summary) > 70 else " "
        return f"{title}{sep}({summary})"
    return title or summary or "meanfield result"


def _check_log(log: Any) -> None:
    if not (isinstance(log, (bool, np.bool_)) or log == "auto"):
        raise ConfigError(f"log = {log!r}; valid: True, False, 'auto'", "log")


def _use_log(log: bool | str, rho: np.ndarray, uniform: float = 1.0 / TWO_PI) -> bool:
    """Resolve ``log`` (True, False or "auto") for the densities ``rho``."""
    if isinstance(log, str):
        if log != "auto":
            raise ConfigError(f"log = {log!r}; valid: True, False, 'auto'", "log")
        finite = rho[np.isfinite(rho)]
        return bool(finite.size) and float(finite.max()) > _AUTO_LOG_PEAK * uniform
    return bool(log)


def _log_limits(rho: np.ndarray) -> tuple[float, float]:
    """(vmin, vmax) of a log scale: the positive range, at most 8 decades deep."""
    finite = rho[np.isfinite(rho)]
    vmax = float(finite.max()) if finite.size else 1.0
    if not vmax > 0:
        vmax = 1.0
    positive = finite[finite > 0]
    vmin = float(positive.min()) if positive.size else vmax / _LOG_DYNAMIC_RANGE
    vmin = max(vmin, vmax / _LOG_DYNAMIC_RANGE)
    if vmin >= vmax:
        vmin = vmax / 10.0
    return vmin, vmax


def _norm(rho: np.ndarray, log: bool | str, uniform: float):
    """The colour normalisation of an image of ``rho``: log (see ``_log_limits``) or
    linear from min(0, min) to the max."""
    from matplotlib.colors import LogNorm, Normalize

    if _use_log(log, rho, uniform):
        vmin, vmax = _log_limits(rho)
        return LogNorm(vmin=vmin, vmax=vmax)
    finite = rho[np.isfinite(rho)]
    vmax = float(finite.max()) if finite.size else 1.0
    vmin = min(0.0, float(finite.min())) if finite.size else 0.0
    return Normalize(vmin=vmin, vmax=vmax if vmax > vmin else vmin + 1.0)


def _shown(rho: np.ndarray, norm) -> np.ndarray:
    """``rho`` ready for a colour image: clipped to the floor of a log scale."""
    from matplotlib.colors import LogNorm

    if isinstance(norm, LogNorm):
        return np.where(np.isfinite(rho), np.clip(rho, norm.vmin, None), np.nan)
    return rho


def _periodic_edges(theta: np.ndarray) -> np.ndarray:
    """Cell edges around sorted angles in [0, 2π), wrapping periodically."""
    mid = 0.5 * (theta[:-1] + theta[1:])
    first = 0.5 * (theta[-1] - TWO_PI + theta[0])
    return np.concatenate([[first], mid, [first + TWO_PI]])


def _mean_angle(theta: np.ndarray, weights: np.ndarray) -> float:
    """The mean direction arg Σ w e^{iθ} in [0, 2π) (0 when the mean vector vanishes or
    the weights are not finite: a uniform state has no direction to centre on)."""
    w = np.where(np.isfinite(weights), weights, 0.0)
    z = np.sum(w * np.exp(1j * np.asarray(theta, dtype=float)))
    if not np.isfinite(z) or abs(z) <= 1e-12 * max(float(np.sum(np.abs(w))), 1e-300):
        return 0.0
    return float(np.mod(np.angle(z), TWO_PI))


def _centred(theta: np.ndarray, centre: float) -> np.ndarray:
    """Angles relative to ``centre``, wrapped into [−π, π)."""
    return np.mod(np.asarray(theta, dtype=float) - centre + math.pi, TWO_PI) - math.pi


def _centred_grid(theta: np.ndarray, rho: np.ndarray, centre: float
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A periodic grid relative to ``centre``, closed across the seam.

    Args:
        theta: sorted cell centres in [0, 2π).
        rho: values with the angle as last axis.
        centre: the angle drawn at 0.

    Returns:
        (centres, edges, values): the centres relative to ``centre`` sorted in [−π, π),
        the cell edges around them, and the values in that order, with the last cell
        repeated one period to the left and the first one period to the right, so that
        an image of them covers the whole of [−π, π] whatever the shift (no white strip
        at the frame's edge).
    """
    c = _centred(theta, centre)
    order = np.argsort(c, kind="stable")
    c, values = c[order], np.asarray(rho)[..., order]
    edges = _periodic_edges(c + math.pi) - math.pi  # one period, from c[0]'s left edge
    left = edges[-2] - TWO_PI  # the last cell, one period to the left
    right = edges[1] + TWO_PI  # the first cell, one period to the right
    edges = np.concatenate([[left], edges, [right]])
    values = np.concatenate([values[..., -1:], values, values[..., :1]], axis=-1)
    return c, edges, values


def _centred_theta_axis(ax: Axes, centre: float | None, what: str = "mean direction"
                        ) -> None:
    """x from −π to π in multiples of π/2, labelled as relative to ``centre`` (None: the
    label names θ̄ only, for panels whose figure states it once, see ``_centre_note``)."""
    ax.set_xlim(-math.pi, math.pi)
    ax.set_xticks([-math.pi, -math.pi / 2, 0.0, math.pi / 2, math.pi])
    ax.set_xticklabels(["−π", "−π/2", "0", "π/2", "π"])
    ax.set_xlabel("θ − θ̄ (rad)" if centre is None else
                  f"θ − θ̄ (rad), {_centre_note(centre, what)}")


def _centre_note(centre: float, what: str) -> str:
    """'θ̄ = 3.06 = mean direction at t = 6', θ̄ written in (−π, π]."""
    shown = round(math.pi - float(np.mod(math.pi - centre, TWO_PI)), 2) + 0.0  # no −0.00
    return f"θ̄ = {shown:.2f}".replace("-", "−") + f" = {what}"


def _time_edges(t: np.ndarray) -> np.ndarray:
    if t.size == 1:
        half = 0.5 * max(abs(t[0]), 1.0)
        return np.array([t[0] - half, t[0] + half])
    mid = 0.5 * (t[:-1] + t[1:])
    return np.concatenate([[t[0] - (mid[0] - t[0])], mid, [t[-1] + (t[-1] - mid[-1])]])


def _snapshot_indices(t: np.ndarray, times: Sequence[float] | None, n: int) -> np.ndarray:
    if times is None:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ConfigError(f"n = {n!r} snapshots; need an integer >= 1", "n")
        count = min(int(n), t.size)
        return np.unique(np.rint(np.linspace(0, t.size - 1, count)).astype(int))
    try:
        wanted = np.atleast_1d(np.asarray(times, dtype=float))
    except (TypeError, ValueError):
        wanted = np.array([np.nan])
    if wanted.size == 0 or not np.all(np.isfinite(wanted)):
        raise ConfigError(f"times = {times!r} must be finite numbers", "times")
    return np.unique(np.abs(t[None, :] - wanted.ravel()[:, None]).argmin(axis=1))


def _frame_indices(n_saved: int, max_frames: int) -> np.ndarray:
    """At most ``max_frames`` indices spread evenly over ``n_saved`` saved times."""
    return np.unique(np.rint(np.linspace(0, n_saved - 1, min(n_saved, max_frames)))
                     .astype(int))


def _check_coords_numeric(ds: xr.Dataset, names: Sequence[str]) -> None:
    for name in names:
        if name in ds.coords:
            values = np.asarray(ds[name].values)
            if not np.issubdtype(values.dtype, np.number) or not np.all(np.isfinite(values)):
                raise ConfigError(
                    f"coordinate {name!r} must hold finite numbers (found dtype "
                    f"{values.dtype})", name)


def _check_density(ds: xr.Dataset, dims: tuple[str, ...], geometry: str) -> None:
    """``density`` exists with exactly ``dims`` (any order) and there is a saved time."""
    found = ", ".join(sorted(map(str, ds.data_vars))) or "none"
    wanted = "(" + ", ".join(dims) + ")"
    if "density" not in ds.data_vars:
        raise ConfigError(
            f"dataset has no 'density' variable (data variables found: {found}); "
            f"{geometry} plots need density{wanted}", "density")
    have = ds["density"].dims
    if set(have) != set(dims) or len(have) != len(dims):
        raise ConfigError(
            f"'density' has dimensions {have}; {geometry} plots need {tuple(dims)}",
            "density")
    if ds.sizes["time"] < 1:
        raise ConfigError("dataset has no saved times (time has length 0)", "time")


def _freeze_layout(fig: Figure) -> None:
    """Lay the figure out once, then stop re-running constrained layout for every frame
    of an animation (frames differ only in data, and the layout would dominate)."""
    fig.canvas.draw()
    fig.set_layout_engine(None)
    fig.canvas.draw_idle = lambda *args, **kwargs: None  # frames are drawn by savefig


_PALETTE_SAMPLE_FRAMES = 12  # frames whose colours build the GIF's one palette


def _gif_writer(fps: float):
    """A GIF writer with one palette for all frames, dithered.

    matplotlib's ``PillowWriter`` lets Pillow quantise each frame to its own 256
    colours: a smooth colour bar (256 shades of the map) next to text and other colours
    then came out in visible bands, and the palette changed from frame to frame. Here
    the palette is built once from frames spread over the whole animation and each
    frame is mapped to it with Floyd–Steinberg dithering (bands become fine noise).
    """
    from matplotlib.animation import PillowWriter
    from PIL import Image

    class _OnePaletteGif(PillowWriter):
        def finish(self) -> None:
            frames = [im.convert("RGB") for im in self._frames]
            step = max(1, len(frames) // _PALETTE_SAMPLE_FRAMES)
            sample = frames[::step]
            width, height = sample[0].size
            sheet = Image.new("RGB", (width, height * len(sample)))
            for k, im in enumerate(sample):
                sheet.paste(im, (0, k * height))
            # pure white and black first (the background and the text: a box average
            # tinted them), then the frames' colours by octree (median cut dropped the
            # few pixels of the cyan cross), less those so near white or black that
            # Pillow's coarse colour lookup took them for it
            found = np.asarray(sheet.quantize(254, method=Image.Quantize.FASTOCTREE)
                               .getpalette()[:254 * 3]).reshape(-1, 3)
            found = found[(found.min(axis=1) < 247) & (found.max(axis=1) > 8)]
            palette = Image.new("P", (1, 1))
            palette.putpalette([255, 255, 255, 0, 0, 0] + found.ravel().tolist())
            out = [im.quantize(palette=palette, dither=Image.Dither.FLOYDSTEINBERG)
                   for im in frames]
            out[0].save(self.outfile, save_all=True, append_images=out[1:],
                        duration=int(1000 / self.fps), loop=0, optimize=False)

    return _OnePaletteGif(fps=fps)


def _save_animation(fig: Figure, update: Callable[[int], Any], frames: np.ndarray,
                    path: Path, *, fps: float, dpi: float) -> None:
    from matplotlib.animation import FuncAnimation

    anim = FuncAnimation(fig, update, frames=[int(i) for i in frames], blit=False,
                         repeat=False, cache_frame_data=False)
    write_atomic(path, lambda tmp: anim.save(tmp, writer=_gif_writer(fps), dpi=dpi))


def _letter_panels(axes: Sequence[Axes]) -> None:
    """Prefix the panels' titles with (a), (b), ... and move them to the left."""
    for letter, ax in zip("abcdefghijklmnop", axes):
        ax.set_title(f"({letter}) {ax.get_title(loc='left') or ax.get_title()}", loc="left")
        ax.set_title("")  # one title per panel, on the left


# --------------------------------------------------------------------------------------
# diagnostics (geometry-independent: time series only)
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Panel:
    key: str
    title: str
    ylabel: str


def _diagnostic_panels(ds: xr.Dataset) -> list[_Panel]:
    panels = []
    if "order_parameter" in ds.data_vars:
        panels.append(_Panel("order_parameter", "order parameter", "r(t)"))
    if "energy" in ds.data_vars:
        panels.append(_Panel("energy", "energy", ENERGY_LABEL + _units_suffix(ds["energy"])))
    if "free_energy" in ds.data_vars:
        panels.append(_Panel("free_energy", "free energy", "F(t)"
                             + _units_suffix(ds["free_energy"])))
    return panels  # the mass is conserved to round-off: a caption, not a panel


def _mass_caption(ds: xr.Dataset) -> str | None:
    """'mass: max over t of |M(t) − 1| = 2.2e-16', or None without ``mass``.

    The densities are probability densities (M = 1); a panel of the round-off error only
    shows noise at 1e-16, so the figures state its worst value in one line instead.
    """
    if "mass" not in ds.data_vars:
        return None
    m = _series(ds, "mass")
    finite = m[np.isfinite(m)]
    if finite.size == 0:
        return "mass: not finite"
    return f"mass: max over t of |M(t) − 1| = {float(np.max(np.abs(finite - 1.0))):.1e}"


def _caption(fig: Figure, ds: xr.Dataset) -> None:
    """The mass caption (if any) under the figure, laid out by constrained layout."""
    text = _mass_caption(ds)
    if text is not None:
        fig.supxlabel(text, fontsize=7.5, color="0.3", x=0.99, ha="right")


def _series(ds: xr.Dataset, key: str) -> np.ndarray:
    var = ds[key]
    if var.dims != ("time",):
        raise ConfigError(f"{key!r} has dimensions {var.dims}; expected ('time',)", key)
    return np.asarray(var.values, dtype=float)


def _draw_panel(ds: xr.Dataset, panel: _Panel, ax: Axes) -> None:
    t = np.asarray(ds["time"].values, dtype=float)
    y = _series(ds, panel.key)
    if panel.key == "order_parameter":
        ax.plot(t, y, color="C0", marker="." if t.size <= 30 else None)
        ax.set_ylim(-0.02, 1.02)
    else:
        colour = "C1" if panel.key == "energy" else "C2"
        ax.plot(t, y, color=colour, marker="." if t.size <= 30 else None)
        ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 4), useOffset=True)
    _label_panel(ds, panel, ax, t)


def _label_panel(ds: xr.Dataset, panel, ax: Axes, t: np.ndarray) -> None:
    """Time axis, labels and title of one diagnostics panel."""
    if t.size > 1:
        ax.set_xlim(t[0], t[-1])
    ax.set_xlabel(_time_label(ds))
    ax.set_ylabel(panel.ylabel)
    ax.set_title(panel.title)


def _diagnostics_row(ds: xr.Dataset, fig: Figure, spec, panels=None, draw=None
                     ) -> list[Axes]:
    """The diagnostics panels in a row filling the gridspec slot ``spec`` (default: the
    PDE panels of ``ds`` drawn by ``_draw_panel``; token datasets pass their own)."""
    panels = _diagnostic_panels(ds) if panels is None else panels
    draw = _draw_panel if draw is None else draw
    if not panels:
        return []
    row = spec.subgridspec(1, len(panels))
    axes = [fig.add_subplot(row[k]) for k in range(len(panels))]
    for panel, ax in zip(panels, axes):
        draw(ds, panel, ax)
    return axes
