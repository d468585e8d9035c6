"""Drawing of tokens (``kind = "particles"`` datasets): validation and data access, and
the panels ``trajectories`` (circle), ``token_map`` (sphere) and ``gram`` (any d), with
the private helpers the figures of ``particles`` and ``comparison`` build on.
"""
from __future__ import annotations

import contextlib
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from meanfield.errors import ConfigError
from meanfield.plotting.densities import sphere_grid as _grid
from meanfield.plotting.densities import sphere_maps as _maps
from meanfield.plotting.helpers import (
    TWO_PI,
    _attr_summary,
    _centred,
    _centred_theta_axis,
    _fmt_time,
    _mean_angle,
    _new_figure,
    _norm,
    _series,
    _shown,
    _snapshot_indices,
    style,
    _time_edges,
    _time_label,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    import xarray as xr
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MAX_LINES = 200  # circle: one line per token up to this many, else a density image
MAX_GRAM = 800  # Gram images: at most this many tokens (evenly spaced)
_FACE = "0.88"  # background of token maps: the white graticule shows on it
_TOKEN_CMAP = "twilight"  # cyclic: token colour = initial angle / longitude
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


# --------------------------------------------------------------------------------------
# validation and data access
# --------------------------------------------------------------------------------------
def _need(ds: xr.Dataset, name: str, dims: tuple[str, ...], what: str) -> None:
    """ConfigError unless ``ds[name]`` exists with exactly the dimensions ``dims``."""
    if name not in ds.data_vars:
        found = ", ".join(sorted(map(str, ds.data_vars))) or "none"
        raise ConfigError(f"{what} dataset has no {name!r} variable (data variables found: "
                          f"{found}); it needs {name}({', '.join(dims)})", name)
    have = ds[name].dims
    if set(have) != set(dims) or len(have) != len(dims):
        raise ConfigError(f"{name!r} has dimensions {have}; {what} plots need "
                          f"{tuple(dims)}", name)


def _per_head(ds: xr.Dataset, name: str) -> np.ndarray:
    """``ds[name]`` as (time, heads): a series of one attention (dims ``time``) or of
    each head (``time, head``: a run with several heads and ``save_attention``)."""
    var = ds[name]
    if var.dims == ("time",):
        return np.asarray(var.values, dtype=float)[:, None]
    if set(var.dims) == {"time", "head"} and var.ndim == 2:
        return np.asarray(var.transpose("time", "head").values, dtype=float)
    raise ConfigError(f"{name!r} has dimensions {var.dims}; expected ('time',) or "
                      "('time', 'head')", name)


def _sorted_time(ds: xr.Dataset) -> xr.Dataset:
    if ds.sizes.get("time", 0) < 1:
        raise ConfigError("dataset has no saved times (time has length 0)", "time")
    if "time" not in ds.coords:
        return ds.assign_coords(time=np.arange(ds.sizes["time"], dtype=float))
    t = np.asarray(ds["time"].values)
    if not np.issubdtype(t.dtype, np.number) or not np.all(np.isfinite(t)):
        raise ConfigError(f"coordinate 'time' must hold finite numbers (found dtype "
                          f"{t.dtype})", "time")
    return ds.sortby("time") if np.any(np.diff(t) < 0) else ds


def _check_particles(ds: Any) -> xr.Dataset:
    import xarray as xr

    if not isinstance(ds, xr.Dataset):
        raise ConfigError(f"cannot plot a {type(ds).__name__}; expected an xarray.Dataset "
                          "as returned by meanfield.particles", None)
    _need(ds, "position", ("time", "particle", "component"), "a 'particles'")
    if ds.sizes["particle"] < 1 or ds.sizes["component"] < 2:
        raise ConfigError(f"'position' has {ds.sizes['particle']} particle(s) of "
                          f"{ds.sizes['component']} component(s); need at least 1 of 2",
                          "position")
    d = ds.sizes["component"]
    geometry = ds.attrs.get("geometry")
    if geometry == "circle" and d != 2:
        raise ConfigError(f"geometry 'circle' but 'position' has {d} components; the "
                          "circle needs 2 (x, y)", "position")
    for name in ("angle", "radius"):
        if name in ds.data_vars:
            _need(ds, name, ("time", "particle"), "a 'particles'")
    for name in ("order_parameter", "energy", "clusters"):
        if name in ds.data_vars:
            _series(ds, name)  # (time,) or ConfigError
    if "attention_rank" in ds.data_vars:
        _per_head(ds, "attention_rank")  # (time,), (time, head) or ConfigError
    return _sorted_time(ds)


def _positions(ds: xr.Dataset) -> np.ndarray:
    """(time, particle, component) unit vectors (normalised here)."""
    x = np.asarray(ds["position"].transpose("time", "particle", "component").values,
                   dtype=float)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norms > 0, x / norms, np.nan)


def _angles(ds: xr.Dataset) -> np.ndarray:
    """(time, particle) angles in [0, 2π) of circle tokens."""
    if "angle" in ds.data_vars:
        return np.mod(np.asarray(ds["angle"].transpose("time", "particle").values, float),
                      TWO_PI)
    x = _positions(ds)
    return np.mod(np.arctan2(x[..., 1], x[..., 0]), TWO_PI)


def _mean_direction(p: np.ndarray) -> np.ndarray | None:
    """The unit mean direction of tokens (n, d), or None where the mean vanishes."""
    m = np.nanmean(p, axis=0)
    norm = float(np.linalg.norm(m))
    return m / norm if np.isfinite(norm) and norm > 1e-9 else None


def _title(ds: xr.Dataset) -> str:
    """'1000 tokens on S¹ (SA model, β = 1, κ = ∞)'."""
    n, d = ds.sizes["particle"], ds.sizes["component"]
    head = f"{n} tokens on S{str(d - 1).translate(_SUPERSCRIPT)}"
    summary = _attr_summary(ds)
    return f"{head} ({summary})" if summary else head


def _token_colours(ds: xr.Dataset) -> np.ndarray:
    """RGBA per token: the cyclic colormap at its initial angle (circle) or longitude."""
    from matplotlib import colormaps

    p0 = _positions(ds)[0]
    phase = np.mod(np.arctan2(p0[:, 1], p0[:, 0]), TWO_PI) / TWO_PI
    return colormaps[_TOKEN_CMAP](np.nan_to_num(phase))


def _marker_size(n: int) -> float:
    return 14.0 if n <= 50 else 7.0 if n <= 300 else 3.0 if n <= 3000 else 1.0


def _check_dim(ds: xr.Dataset, dim: int, function: str) -> None:
    d = ds.sizes["component"]
    if d != dim:
        raise ConfigError(f"{function} draws tokens in R^{dim}; this dataset has d = {d} "
                          "components", "component")


# --------------------------------------------------------------------------------------
# circle
# --------------------------------------------------------------------------------------
def trajectories(ds: xr.Dataset, ax: Axes, *, log: bool | str = "auto",
                 max_lines: int = MAX_LINES, colorbar: bool = True):
    """Circle tokens over time: angle θ − θ̄ (x, rad, on [−π, π); θ̄ the tokens' mean
    direction at the last time, stated in the label) against time (y), like the PDE's
    space-time image.

    Up to ``max_lines`` tokens: one line per token, coloured by its initial angle on a
    cyclic colormap (so merging tokens show where they came from), cut where it wraps
    across ±π. More tokens: the empirical density of the angles at each saved time
    (a histogram of an odd number of bins near √n, 17 to 181, the middle one centred on
    θ̄, divided by n and the bin width: 1/rad) as
    an image, with the colour scale of ``spacetime`` (``log`` as there).

    Returns:
        The ``LineCollection`` of the trajectories or the ``QuadMesh`` of the image.

    Raises:
        ConfigError: not a circle token dataset.
    """
    from matplotlib.collections import LineCollection

    ds = _check_particles(ds)
    _check_dim(ds, 2, "trajectories")
    t = np.asarray(ds["time"].values, dtype=float)
    # relative to the tokens' last mean direction, so no cluster sits on the frame's edge
    last = _angles(ds)[-1]
    centre = _mean_angle(last, np.isfinite(last).astype(float))
    theta = _centred(_angles(ds), centre)
    n = theta.shape[1]
    if n <= max_lines:
        colours = _token_colours(ds)
        segments, seg_colours = [], []
        for k in range(n):
            curve = np.column_stack([theta[:, k], t])
            cuts = np.flatnonzero(np.abs(np.diff(theta[:, k])) > math.pi) + 1
            for piece in np.split(curve, cuts):
                segments.append(piece)
                seg_colours.append(colours[k])
        artist = LineCollection(segments, colors=seg_colours, linewidths=0.8 if n <= 50
                                else 0.5, alpha=0.9)
        ax.add_collection(artist)
        if t.size == 1:
            ax.scatter(theta[0], t.repeat(n), c=colours, s=_marker_size(n))
    else:
        # odd: the middle bin is centred on θ̄, so the cluster there is not split in two
        bins = int(np.clip(round(math.sqrt(n)), 16, 180)) // 2 * 2 + 1
        edges = np.linspace(-math.pi, math.pi, bins + 1)
        idx = np.clip(((np.nan_to_num(theta) + math.pi) / (TWO_PI / bins)).astype(int), 0,
                      bins - 1)
        counts = np.stack([np.bincount(row[row >= 0], minlength=bins)
                           for row in np.where(np.isfinite(theta), idx, -1)])
        rho = counts / (n * (TWO_PI / bins))
        norm = _norm(rho, log, 1.0 / TWO_PI)
        artist = ax.pcolormesh(edges, _time_edges(t), _shown(rho, norm), cmap="magma",
                               norm=norm, shading="flat", rasterized=True)
        if colorbar:
            cbar = ax.figure.colorbar(artist, ax=ax, pad=0.02)
            cbar.set_label(f"token density, {bins} bins (1/rad)")
    _centred_theta_axis(ax, centre, f"token mean direction at t = {_fmt_time(t[-1])}")
    ax.set_ylim(*(_time_edges(t)[[0, -1]] if t.size == 1 else (t[0], t[-1])))
    ax.set_ylabel(_time_label(ds))
    return artist


def _circle_tokens(ds: xr.Dataset, ax: Axes, i: int, *, first: bool = True):
    """Tokens on the unit circle at saved time ``i`` (the first time in grey) and their
    mean vector (length = order parameter); returns (scatter, arrow line)."""
    from matplotlib.patches import Circle

    x = _positions(ds)
    n = x.shape[1]
    ax.add_patch(Circle((0, 0), 1.0, fill=False, lw=0.8, color="0.5", zorder=1))
    ax.plot([-1.1, 1.1], [0, 0], color="0.85", lw=0.6, zorder=0)
    ax.plot([0, 0], [-1.1, 1.1], color="0.85", lw=0.6, zorder=0)
    if first and i != 0:
        ax.scatter(x[0, :, 0], x[0, :, 1], s=_marker_size(n), color="0.75", zorder=2,
                   label=f"t = {_fmt_time(float(ds['time'][0]))}")
    scatter = ax.scatter(x[i, :, 0], x[i, :, 1], s=_marker_size(n) * 1.6,
                         c=_token_colours(ds), edgecolors="black", linewidths=0.3,
                         zorder=3, label=f"t = {_fmt_time(float(ds['time'][i]))}")
    m = np.nanmean(x[i], axis=0)
    (arrow,) = ax.plot([0, m[0]], [0, m[1]], color="black", lw=1.2, marker="o",
                       markevery=[1], ms=3, zorder=4, label="mean vector")
    for angle, text in ((0, "0"), (math.pi / 2, "π/2"), (math.pi, "π"),
                        (3 * math.pi / 2, "3π/2")):
        ax.text(1.2 * math.cos(angle), 1.2 * math.sin(angle), text, ha="center",
                va="center", fontsize=7, color="0.35")
    ax.set_aspect("equal")
    ax.set_xlim(-1.32, 1.32)
    ax.set_ylim(-1.32, 1.32)
    ax.set_axis_off()
    return scatter, arrow


# --------------------------------------------------------------------------------------
# sphere (d = 3)
# --------------------------------------------------------------------------------------
def _ortho_tokens(ax: Axes, p: np.ndarray, center: np.ndarray, colours: np.ndarray,
                  title: str):
    """Tokens (n, 3) on the hemisphere facing ``center`` (grey disc, white graticule);
    tokens on the far side are not drawn. Returns (scatter, cross, frame)."""
    from matplotlib.patches import Circle

    frame = _maps._view_frame(center)
    ax.add_patch(Circle((0.0, 0.0), 1.0, facecolor=_FACE, edgecolor="none", zorder=0))
    _maps._ortho_graticule(ax, frame)
    ax.add_patch(Circle((0.0, 0.0), 1.0, fill=False, lw=0.9, color="0.15", zorder=4))
    scatter = ax.scatter(*_ortho_xy(frame, p), c=colours, s=_marker_size(len(p)) * 1.6,
                         edgecolors="black", linewidths=0.3, zorder=5)
    cross = _maps._draw_overlay(ax, _ortho_mean(frame, p), None, 0)
    ax.set_aspect("equal")
    ax.set_xlim(-1.04, 1.04)
    ax.set_ylim(-1.04, 1.04)
    ax.set_axis_off()
    ax.set_title(title)
    return scatter, cross, frame


def _ortho_xy(frame: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Projected coordinates, NaN on the far side (not drawn)."""
    x, y, depth = _maps._project(frame, p)
    return np.where(depth >= 0, x, np.nan), np.where(depth >= 0, y, np.nan)


def _ortho_mean(frame: np.ndarray, p: np.ndarray):
    m = _mean_direction(p)
    if m is None:
        return None
    x, y, depth = _maps._project(frame, m[None, :])
    return (x, y) if depth[0] >= 0 else None


def _default_view(x: np.ndarray) -> np.ndarray:
    m = _mean_direction(x[-1])
    return np.array([1.0, 0.0, 0.0]) if m is None else m


def token_map(ds: xr.Dataset, ax: Axes | None = None, time: float | None = None, *,
              projection: str = "orthographic", center: Any = None):
    """Sphere tokens (d = 3) at one saved time on an orthographic view or a Mollweide map.

    Tokens are coloured by their initial longitude on a cyclic colormap; a cyan cross
    marks their mean direction. Orthographic: the hemisphere facing ``center`` (default:
    the mean direction at the last saved time), tokens behind it hidden. Mollweide: the
    whole sphere, longitude 0 in the middle.

    Args:
        ds: a token dataset with 3 components.
        ax: ordinary axes (orthographic) or an axes with ``projection="mollweide"``;
            ``None`` makes a new figure (``scatter.axes.figure``).
        time: the saved time nearest this; ``None``: the last one.
        projection: ``"orthographic"`` or ``"mollweide"``.
        center: orthographic view direction (x, y, z).

    Returns:
        The ``PathCollection`` of the tokens.

    Raises:
        ConfigError: not a sphere token dataset, or bad ``projection``/``center``/``ax``.
    """
    ds = _check_particles(ds)
    _check_dim(ds, 3, "token_map")
    if projection not in ("orthographic", "mollweide"):
        raise ConfigError(f"projection = {projection!r}; valid: 'orthographic', "
                          "'mollweide'", "projection")
    x = _positions(ds)
    t = np.asarray(ds["time"].values, dtype=float)
    i = t.size - 1 if time is None else int(_snapshot_indices(t, [time], 1)[0])
    colours = _token_colours(ds)
    with style() if ax is None else contextlib.nullcontext():
        if ax is None:
            _, ax = _maps._new_map_figure(projection)
        if projection == "mollweide":
            _maps._check_mollweide_axes(ax, "token_map")
            return _mollweide_tokens(ax, x[i], colours, f"t = {_fmt_time(t[i])}")[0]
        if getattr(ax, "name", "rectilinear") != "rectilinear":
            raise ConfigError(f"an orthographic token map draws into ordinary axes; got a "
                              f"{ax.name!r} projection", "ax")
        view = _default_view(x) if center is None else _grid._center_vector(center)
        return _ortho_tokens(ax, x[i], view, colours, f"t = {_fmt_time(t[i])}")[0]


def _mollweide_tokens(ax: Axes, p: np.ndarray, colours: np.ndarray, title: str):
    ax.set_facecolor(_FACE)
    _maps._mollweide_frame(ax, True)
    lon, lat = _grid._lon_lat(p)
    scatter = ax.scatter(lon, lat, c=colours, s=_marker_size(len(p)) * 1.6,
                         edgecolors="black", linewidths=0.3, zorder=5)
    cross = _maps._draw_overlay(ax, _maps._mollweide_xy(_mean_direction(p)), None, 0)
    ax.set_title(title, pad=8)
    return scatter, cross


def _longitude_colorbar(fig: Figure, axes: Any) -> None:
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    sm = ScalarMappable(norm=Normalize(0, 360), cmap=colormaps[_TOKEN_CMAP])
    cbar = fig.colorbar(sm, ax=axes, pad=0.02, shrink=0.8, aspect=15)
    cbar.set_ticks([0, 90, 180, 270, 360])
    cbar.set_label("initial longitude (°)")


# --------------------------------------------------------------------------------------
# any d: Gram matrix and principal plane
# --------------------------------------------------------------------------------------
def _subsample(n: int, max_tokens: int) -> np.ndarray:
    return np.unique(np.rint(np.linspace(0, n - 1, min(n, max_tokens))).astype(int))


def _cluster_order(p: np.ndarray) -> np.ndarray:
    """Order of tokens (n, d) placing clusters next to each other: the leaves of their
    average-linkage tree (chordal distances)."""
    from scipy.cluster.hierarchy import leaves_list, linkage

    if len(p) < 3 or not np.all(np.isfinite(p)):
        return np.arange(len(p))
    return leaves_list(linkage(p, method="average", metric="euclidean"))


def gram(ds: xr.Dataset, ax: Axes | None = None, time: float | None = None, *,
         order: Any = None, max_tokens: int = MAX_GRAM, colorbar: bool = True):
    """Image of the Gram matrix <x_i, x_j> of the tokens at one saved time (any d).

    Args:
        ds: a token dataset.
        ax: axes to draw into; ``None`` makes a new figure (``image.axes.figure``).
        time: the saved time nearest this; ``None``: the last one.
        order: the token order (indices into the tokens drawn). Default: the leaves of
            the average-linkage tree of the last saved configuration, so that clusters
            are diagonal blocks at the end and one order serves every time.
        max_tokens: at most this many tokens are drawn, evenly spaced by index.
        colorbar: add a colorbar "<x_i, x_j>" from -1 to 1.

    Returns:
        The ``AxesImage``.

    Raises:
        ConfigError: not a token dataset, or ``order`` is not a permutation.
    """
    ds = _check_particles(ds)
    x = _positions(ds)
    t = np.asarray(ds["time"].values, dtype=float)
    i = t.size - 1 if time is None else int(_snapshot_indices(t, [time], 1)[0])
    keep = _subsample(x.shape[1], max_tokens)
    if order is None:
        order = _cluster_order(x[-1, keep])
    order = np.asarray(order)
    if order.shape != keep.shape or not np.array_equal(np.sort(order), np.arange(keep.size)):
        raise ConfigError(f"order must be a permutation of the {keep.size} tokens drawn",
                          "order")
    p = x[i, keep[order]]
    with style() if ax is None else contextlib.nullcontext():
        if ax is None:
            ax = _new_figure((3.6, 3.0)).add_subplot()
        image = ax.imshow(p @ p.T, cmap="RdBu_r", vmin=-1.0, vmax=1.0,
                          interpolation="nearest", origin="upper", rasterized=True)
        ax.set_xlabel("token j (clustered order)")
        ax.set_ylabel("token i")
        ax.set_title(f"t = {_fmt_time(t[i])}" + ("" if keep.size == x.shape[1] else
                                                 f", {keep.size} of {x.shape[1]} tokens"))
        if colorbar:
            cbar = ax.figure.colorbar(image, ax=ax, pad=0.02, shrink=0.9)
            cbar.set_label("⟨xᵢ, xⱼ⟩")
    return image


def _principal_plane(p: np.ndarray) -> np.ndarray:
    """(2, d): the top two eigenvectors of the second moment of tokens (n, d)."""
    p = p[np.all(np.isfinite(p), axis=1)]
    if len(p) == 0:
        return np.eye(p.shape[1])[:2]
    _, vecs = np.linalg.eigh(p.T @ p)
    return vecs[:, ::-1][:, :2].T


def _plane_tokens(ax: Axes, p: np.ndarray, plane: np.ndarray, colours: Any, title: str):
    from matplotlib.patches import Circle

    q = p @ plane.T
    ax.add_patch(Circle((0, 0), 1.0, facecolor=_FACE, edgecolor="0.3", lw=0.8, zorder=0))
    scatter = ax.scatter(q[:, 0], q[:, 1], c=colours, s=_marker_size(len(p)) * 1.6,
                         edgecolors="black", linewidths=0.3, zorder=3)
    ax.set_aspect("equal")
    ax.set_xlim(-1.05, 1.05)
    ax.set_ylim(-1.05, 1.05)
    ax.set_xticks([-1, -0.5, 0, 0.5, 1])
    ax.set_yticks([-1, -0.5, 0, 0.5, 1])
    ax.set_xlabel("⟨x, u₁⟩")
    ax.set_ylabel("⟨x, u₂⟩")
    ax.set_title(title)
    return scatter
