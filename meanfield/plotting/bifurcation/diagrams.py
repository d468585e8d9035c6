"""Figures of a bifurcation study (``kind = "bifurcation"``): the bifurcation diagram
(order parameter against the continuation parameter, solid where stable, dashed where
unstable, one colour per mode, special points marked, the analytic ``kappa_c`` drawn)
and the free energy of each branch relative to the uniform state's.

Continuation datasets (docs/datasets.md): dims ``(branch, point)`` with ``kappa``, ``beta``,
``order_parameter``, ``free_energy``, ``stable`` (int8: 1 stable, 0 unstable, -1
unknown) and optionally ``leading_eigenvalue``; on ``branch``: ``branch_mode`` (0 for the
uniform state, k for the branch shed at mode / degree k) and ``branch_kind``; special
points on dim ``special``: ``special_type`` ("pitchfork", "fold", "bifurcation", others
drawn with a generic marker), ``special_kappa``, ``special_beta``, ``special_branch``,
``special_order_parameter``; attrs ``parameter`` ("kappa" or "beta") and
``critical_kappa`` (one value per mode, mode 1 first). Branches shorter than the
``point`` dim are padded with NaN.

Scan datasets (attrs ``mode = "scan"``, ``meanfield.studies.bifurcation.scan``): dims
``(sweep, value)`` with ``order_parameter``, ``stable`` and ``bistable`` (value), the
coordinate ``value`` the scanned parameter; attrs ``kappa_c`` (scalar). Drawn as open
markers, one shape per sweep, with the bistable interval shaded; overlaid on a
continuation diagram by ``bifurcation_figure(ds, scan=scan_ds)``.

Map datasets (attrs ``mode = "map"``, ``meanfield.studies.bifurcation.parameter_map``): dims
``(beta, kappa)``; ``map_figure`` draws ``map_order_parameter`` in colour with
``map_critical_kappa`` (and ``map_analytic_kappa``), the fold curve ``map_fold_kappa``,
the Maxwell points and ``map_bistable`` hatched (gids ``order_parameter``, ``kappa_c``,
``kappa_c_analytic``, ``fold``, ``maxwell``, ``bistable``).

The curves (what is drawn, exactly as computed: the uniform branch at 0, the splits at the
computed pitchforks and folds, the amplitude for modes k >= 2) are made by
``curves``; a study across dimensions (dim ``dim``, the zonal geometry) is drawn by
``across_dims``.

Every artist carries a ``gid``: ``"branch:{b}:{stable|unstable|unknown}:{run}"`` for
the line runs of panel (a), ``"free_energy:{b}:..."`` for panel (b), ``"special:{type}"``,
``"kappa_c:{mode}"`` (``"beta_c:{mode}"`` from the attrs ``critical_beta`` when the
parameter is beta), ``"scan:{sweep}"``, ``"scan_free_energy:{sweep}"`` and
``"bistable"``.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import xarray as xr

from meanfield.errors import ConfigError
from meanfield.plotting.bifurcation.curves import (  # noqa: F401 (stability_runs)
    STYLES,
    _at_special,
    _closed_baseline,
    _geometry,
    _modes,
    _parameter,
    _uses_amplitude,
    _with_junctions,
    branch_curve,
    stability_runs,
)
from meanfield.plotting.bifurcation.across_dims import dims_figure, is_across_dims
from meanfield.plotting.common import _KindPlots, _register_kind
from meanfield.plotting.helpers import _letter_panels, _new_figure, style

CONTINUATION_NEEDED = ("kappa", "beta", "order_parameter", "stable")
SCAN_NEEDED = ("order_parameter", "stable")
SPECIAL_MARKERS = {"pitchfork": "o", "fold": "s", "bifurcation": "D", "hopf": "^"}
GENERIC_MARKER = "X"
SCAN_MARKERS = ("o", "s", "^", "v", "D", "P")
PARAMETER_LABELS = {"kappa": r"$\kappa$ (inverse noise strength, dimensionless)",
                    "beta": r"$\beta$ (inverse temperature, dimensionless)"}
ORDER_LABEL = r"order parameter $r = |\int x\,\mathrm{d}\mu|$"
# (a branch of mode k >= 2 on S^1 has r = 0: drawn by its own amplitude |rho_k|)
AMPLITUDE_LABEL = (r"amplitude $|\hat\rho_k| = |\int e^{ik\theta}\,\mathrm{d}\mu|$"
                   "\n" r"of the branch's mode $k$ ($k = 1$: $r$)")
FREE_LABEL = r"$\mathcal{F} - \mathcal{F}_{\mathrm{uniform}}$ (dimensionless)"


# --- validation -----------------------------------------------------------------------
def _is_scan(ds: Any) -> bool:
    return str(getattr(ds, "attrs", {}).get("mode", "")) == "scan"


def _is_map(ds: Any) -> bool:
    return str(getattr(ds, "attrs", {}).get("mode", "")) == "map"


MAP_NEEDED = ("map_critical_kappa", "map_fold_kappa", "map_order_parameter",
              "map_bistable")


def _check(ds: Any) -> xr.Dataset:
    """The dataset if it is a continuation or scan bifurcation dataset; ConfigError naming
    what is missing otherwise."""
    variables = getattr(ds, "data_vars", {})
    if is_across_dims(ds):
        if "tricritical_beta_landau" not in variables:
            raise ConfigError("a bifurcation dataset across dimensions needs "
                              "tricritical_beta_landau (docs/datasets.md)", "result")
        return ds
    if _is_map(ds):
        missing = [n for n in MAP_NEEDED if n not in variables]
        missing += [d for d in ("beta", "kappa") if d not in getattr(ds, "dims", {})]
        what = "a bifurcation map dataset (mode 'map')"
    elif _is_scan(ds):
        missing = [n for n in SCAN_NEEDED if n not in variables]
        missing += [d for d in ("sweep", "value") if d not in getattr(ds, "dims", {})]
        what = "a bifurcation scan dataset (mode 'scan')"
    else:
        missing = [n for n in CONTINUATION_NEEDED if n not in variables]
        missing += [d for d in ("branch", "point") if d not in getattr(ds, "dims", {})]
        what = "a bifurcation continuation dataset"
    if missing:
        raise ConfigError(f"{what} needs {', '.join(missing)} (docs/datasets.md)", "result")
    parameter = _parameter(ds)
    if parameter not in PARAMETER_LABELS:
        raise ConfigError(f"attrs parameter = {parameter!r} must be 'kappa' or 'beta'",
                          "result")
    return ds


# --- pieces ---------------------------------------------------------------------------
def _color(mode: int) -> Any:
    """Black for the uniform state (mode 0), tab10's C{mode - 1} for mode k >= 1."""
    return "k" if mode == 0 else f"C{(mode - 1) % 10}"


def _mode_label(mode: int, geometry: str | None) -> str:
    if mode == 0:
        return "uniform"
    name = {"circle": "k", "sphere": "l", "zonal": "l"}.get(geometry or "", "mode")
    return f"${name} = {mode}$" if geometry else f"mode {mode}"


def _critical_kappas(ds: xr.Dataset) -> list[tuple[int, float]]:
    """``(mode, kappa_c)`` from ``critical_kappa`` (list, mode 1 first) or ``kappa_c``
    (scalar, mode 1); finite values only."""
    raw = ds.attrs.get("critical_kappa", ds.attrs.get("kappa_c"))
    if raw is None:
        return []
    values = np.atleast_1d(np.asarray(raw, dtype=float))
    return [(i + 1, float(v)) for i, v in enumerate(values) if np.isfinite(v)]


# --- panels ---------------------------------------------------------------------------
def _draw_branches(ds: xr.Dataset, ax, values: str) -> set[int]:
    """The runs of every branch (``values``: "order_parameter" or "free_energy", the
    latter relative to the uniform state), split at the computed stability changes;
    returns the stability flags drawn."""
    modes = _modes(ds)
    drawn: set[int] = set()
    prefix = "branch" if values == "order_parameter" else "free_energy"
    for b in range(ds.sizes["branch"]):
        x, y = branch_curve(ds, b, values)
        x, y, stable = _with_junctions(ds, b, x, y, ds["stable"].isel(branch=b).values,
                                       values)
        finite = np.isfinite(x) & np.isfinite(y)
        for run, (flag, idx) in enumerate(stability_runs(stable, finite)):
            line_style = STYLES[flag][0]
            width = 1.5 if flag == 1 else 1.1
            ax.plot(x[idx], y[idx], linestyle=line_style, color=_color(int(modes[b])),
                    lw=width,
                    marker="." if idx.size == 1 else None,
                    gid=f"{prefix}:{b}:{STYLES[flag][1]}:{run}")
            drawn.add(flag)
    return drawn


def _draw_specials(ds: xr.Dataset, ax, values: str) -> list[str]:
    """Markers at the special points, on the drawn curve of their branch; returns the
    types drawn (in order)."""
    if "special_type" not in ds.data_vars or "special" not in ds.dims \
            or ds.sizes["special"] == 0:
        return []
    types = [str(t) for t in ds["special_type"].values]
    x = ds[f"special_{_parameter(ds)}"].values.astype(float)
    y = np.full(x.shape, np.nan)
    branches = (ds["special_branch"].values if "special_branch" in ds.data_vars
                else np.full(x.shape, -1))
    for j, b in enumerate(branches):
        if 0 <= int(b) < ds.sizes["branch"] and np.isfinite(x[j]):
            bx, by = branch_curve(ds, int(b), values)
            y[j] = _at_special(ds, j, bx, by, ds["stable"].isel(branch=int(b)).values,
                               values)[1]
        elif values == "order_parameter" and "special_order_parameter" in ds.data_vars:
            y[j] = float(ds["special_order_parameter"].values[j])
    drawn = []
    for kind in dict.fromkeys(types):
        sel = np.array([t == kind for t in types]) & np.isfinite(x) & np.isfinite(y)
        if not sel.any():
            continue
        ax.plot(x[sel], y[sel], linestyle="none",
                marker=SPECIAL_MARKERS.get(kind, GENERIC_MARKER), ms=5.5, mfc="white",
                mec="k", mew=1.0, zorder=5, gid=f"special:{kind}" if values ==
                "order_parameter" else f"special_free_energy:{kind}")
        drawn.append(kind)
    return drawn


def _critical_betas(ds: xr.Dataset) -> list[tuple[int, float]]:
    """``(mode, beta_c)`` from ``critical_beta`` (list, mode 1 first); finite only."""
    raw = ds.attrs.get("critical_beta")
    if raw is None:
        return []
    values = np.atleast_1d(np.asarray(raw, dtype=float))
    return [(i + 1, float(v)) for i, v in enumerate(values) if np.isfinite(v)]


def _draw_kappa_c(ds: xr.Dataset, ax, modes: list[int]) -> bool:
    """Thin vertical lines at the analytic threshold of each mode drawn (or of every
    listed mode when no branch says which): ``kappa_c`` (gid ``kappa_c:{mode}``) for
    ``parameter = "kappa"``, ``beta_c`` from ``critical_beta`` (``beta_c:{mode}``) for
    ``parameter = "beta"``."""
    if _parameter(ds) == "kappa":
        where, name = _critical_kappas(ds), "kappa_c"
    else:
        where, name = _critical_betas(ds), "beta_c"
    drawn = False
    for mode, value in where:
        if modes and mode not in modes:
            continue
        ax.axvline(value, color=_color(mode), lw=0.6, ls=(0, (1, 2)), alpha=0.9, zorder=0,
                   gid=f"{name}:{mode}")
        drawn = True
    return drawn


def _draw_scan(scan: xr.Dataset, ax, values: str) -> list[str]:
    """Open markers per sweep (only finite points; at stable states when ``stable`` says
    so), the bistable interval shaded; returns the sweeps drawn."""
    x = scan["value"].values.astype(float)
    drawn = []
    for i, sweep in enumerate(scan["sweep"].values):
        y = scan["order_parameter"].sel(sweep=sweep).values.astype(float)
        if values == "free_energy":
            if "free_energy" not in scan.data_vars:
                return drawn
            kappa = (scan["kappa"].values.astype(float) if "kappa" in scan.coords
                     or "kappa" in scan.data_vars else np.full(x.shape, np.nan))
            y = scan["free_energy"].sel(sweep=sweep).values.astype(float) \
                - _closed_baseline(scan, kappa)
        ok = np.isfinite(x) & np.isfinite(y)
        if not ok.any():
            continue
        ax.plot(x[ok], y[ok], linestyle="none", marker=SCAN_MARKERS[i % len(SCAN_MARKERS)],
                ms=4.5, mfc="none", mec="0.35", mew=0.8, zorder=4,
                gid=f"scan:{sweep}" if values == "order_parameter"
                else f"scan_free_energy:{sweep}")
        drawn.append(str(sweep))
    if values == "order_parameter" and "bistable" in scan.data_vars:
        bistable = np.asarray(scan["bistable"].values).astype(bool)
        if bistable.any():
            spacing = float(np.median(np.diff(np.sort(x)))) if x.size > 1 else 0.0
            low, high = float(x[bistable].min()), float(x[bistable].max())
            ax.axvspan(low - spacing / 2, high + spacing / 2, color="0.88", zorder=-1,
                       lw=0, gid="bistable")
    return drawn


def bifurcation_diagram(ds: xr.Dataset, ax, scan: xr.Dataset | None = None) -> list[Any]:
    """Panel (a): the order parameter against the continuation parameter.

    Args:
        ds: a continuation dataset, or a scan dataset (then drawn as ``scan``).
        ax: the axes to draw into.
        scan: a scan dataset to overlay (open markers), if any.

    Returns:
        The legend handles (modes, stability styles, special points, scan sweeps,
        ``kappa_c``), for the caller to place.
    """
    from matplotlib.lines import Line2D

    handles: list[Any] = []
    if _is_scan(ds):
        scan, ds = ds, None
    parameter = _parameter(ds if ds is not None else scan)
    flags: set[int] = set()
    specials: list[str] = []
    modes: list[int] = []
    geometry = _geometry(ds if ds is not None else scan)
    if ds is not None:
        flags = _draw_branches(ds, ax, "order_parameter")
        specials = _draw_specials(ds, ax, "order_parameter")
        modes = sorted({int(m) for b, m in enumerate(_modes(ds))
                        if np.isfinite(ds[parameter].isel(branch=b).values).any()})
        handles += [Line2D([], [], color=_color(m), lw=1.5, label=_mode_label(m, geometry))
                    for m in modes]
    sweeps = _draw_scan(scan, ax, "order_parameter") if scan is not None else []
    kc = _draw_kappa_c(ds if ds is not None else scan, ax, [m for m in modes if m > 0])
    handles += [Line2D([], [], color="0.3", ls=STYLES[f][0], lw=1.3, label=STYLES[f][1])
                for f in (1, 0, -1) if f in flags]
    handles += [Line2D([], [], ls="none", marker=SPECIAL_MARKERS.get(t, GENERIC_MARKER),
                       mfc="white", mec="k", ms=5.5, label=t) for t in specials]
    handles += [Line2D([], [], ls="none", marker=SCAN_MARKERS[i % len(SCAN_MARKERS)],
                       mfc="none", mec="0.35", ms=4.5, label=f"scan: {s}")
                for i, s in enumerate(sweeps)]
    if kc:
        symbol = r"$\kappa_c$" if parameter == "kappa" else r"$\beta_c$"
        handles.append(Line2D([], [], color="0.3", lw=0.6, ls=(0, (1, 2)),
                              label=f"{symbol} (linear theory)"))
    ax.set_xlabel(PARAMETER_LABELS[parameter])
    amplitude = ds is not None and any(_uses_amplitude(ds, b)
                                       for b in range(ds.sizes["branch"]))
    ax.set_ylabel(AMPLITUDE_LABEL if amplitude else ORDER_LABEL)
    top = ax.get_ylim()[1]
    ax.set_ylim(-0.03 * max(top, 1e-3), max(top, 1e-3))
    ax.set_title("bifurcation diagram")
    return handles


def free_energy_diagram(ds: xr.Dataset, ax, scan: xr.Dataset | None = None) -> None:
    """Panel (b): each branch's free energy minus the uniform state's at the same
    parameter (the uniform branch lies on 0), with the special points and the scan.

    Args:
        ds: a continuation dataset, or a scan dataset (then drawn as ``scan``).
        ax: the axes to draw into.
        scan: a scan dataset to overlay, if any.
    """
    if _is_scan(ds):
        scan, ds = ds, None
    if ds is not None and "free_energy" in ds.data_vars:
        _draw_branches(ds, ax, "free_energy")
        _draw_specials(ds, ax, "free_energy")
    if scan is not None:
        _draw_scan(scan, ax, "free_energy")
    ax.axhline(0.0, color="0.6", lw=0.5, zorder=0)
    _draw_kappa_c(ds if ds is not None else scan, ax,
                  [] if ds is None else [m for m in set(_modes(ds).tolist()) if m > 0])
    ax.set_xlabel(PARAMETER_LABELS[_parameter(ds if ds is not None else scan)])
    ax.set_ylabel(FREE_LABEL)
    ax.set_title("free energy relative to the uniform state")


def _title(ds: xr.Dataset) -> str:
    parts = []
    model = ds.attrs.get("model")
    if model is None and "normalized" in ds.attrs:
        model = "SA" if bool(ds.attrs["normalized"]) else "USA"
    title = str(ds.attrs.get("title", "")).strip() or "bifurcations of the noisy model"
    # (the study's title names the parameter in words: "... in kappa")
    title = title.replace(" in kappa", " in κ").replace(" in beta", " in β")
    if model is not None and str(model) not in title and "Kuramoto" not in title:
        parts.append(f"{model} model")  # (at beta = 0 the study's title says Kuramoto)
    geometry = _geometry(ds)
    if geometry and geometry not in title:
        parts.append({"circle": r"$\mathbb{S}^1$", "sphere": r"$\mathbb{S}^2$",
                      "zonal": "zonal"}[geometry])
    other = "beta" if _parameter(ds) == "kappa" else "kappa"
    if other in ds.attrs:
        symbol = {"beta": r"$\beta$", "kappa": r"$\kappa$"}[other]
        parts.append(f"{symbol} = {float(ds.attrs[other]):.4g}")
    return f"{title} ({', '.join(parts)})" if parts else title


def bifurcation_figure(ds: xr.Dataset, scan: xr.Dataset | None = None) -> Any:
    """The two-panel figure: (a) ``bifurcation_diagram``, (b) ``free_energy_diagram``,
    one legend below both.

    Args:
        ds: a continuation (or scan) dataset.
        scan: a scan dataset to overlay on a continuation, if any.

    Returns:
        A ``matplotlib.figure.Figure`` (Agg canvas, not registered with pyplot).

    Raises:
        ConfigError: a dataset that is not a bifurcation dataset.
    """
    _check(ds)
    if scan is not None:
        _check(scan)
    with style():
        fig = _new_figure((8.6, 3.6))
        a, b = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
        handles = bifurcation_diagram(ds, a, scan)
        free_energy_diagram(ds, b, scan)
        _letter_panels([a, b])
        if handles:
            fig.legend(handles=handles, loc="outside lower center",
                       ncols=min(len(handles), 6), fontsize=7)
        fig.suptitle(_title(ds), fontsize=9)
    return fig


def map_figure(ds: xr.Dataset) -> Any:
    """The (beta, kappa) map of a ``mode = "map"`` study: the order parameter of the
    stable non-uniform state (colour; 0 where only the uniform state is stable), the
    pitchfork kappa_c(beta) found (solid) over the closed form 1/a_1 (dashed), the fold
    curve and the Maxwell points of the first-order part, the bistable region hatched;
    when the dataset has them, the fold curve continued in (beta, kappa)
    (``fold_curve_kappa``/``fold_curve_beta``, a line) and the tricritical point (attr
    ``tricritical_beta`` at kappa = 1/a_1 there, a star).

    Args:
        ds: a map dataset (``meanfield.studies.bifurcation.parameter_map``).

    Returns:
        A ``matplotlib.figure.Figure`` (Agg canvas, not registered with pyplot).
    """
    _check(ds)
    beta, kappa = ds.beta.values, ds.kappa.values
    with style():
        fig = _new_figure((5.2, 3.8))
        ax = fig.add_subplot(1, 1, 1)
        mesh = ax.pcolormesh(kappa, beta, ds.map_order_parameter.values, shading="nearest",
                             cmap="viridis", vmin=0.0, vmax=1.0, gid="order_parameter")
        fig.colorbar(mesh, ax=ax, label=r"order parameter $r$ of the stable state")
        bistable = ds.map_bistable.values.astype(float)
        if np.any(bistable > 0):
            ax.contourf(kappa, beta, bistable, levels=[0.5, 1.5], colors="none",
                        hatches=["////"], gid="bistable")
        handles = [ax.plot(ds.map_critical_kappa.values, beta, color="white", lw=1.4,
                           marker="o", ms=2.5, label=r"$\kappa_c(\beta)$ found",
                           gid="kappa_c")[0]]
        if "map_analytic_kappa" in ds:
            handles += ax.plot(ds.map_analytic_kappa.values, beta, color="black", lw=0.8,
                               ls="--", label=r"$1/a_1(\beta)$", gid="kappa_c_analytic")
        fold = ds.map_fold_kappa.values
        if np.any(np.isfinite(fold)):
            handles += ax.plot(fold, beta, color="tab:red", lw=1.2, marker="v", ms=3,
                               label="fold", gid="fold")
        if "fold_curve_kappa" in ds and ds.fold_curve_kappa.size:
            handles += ax.plot(ds.fold_curve_kappa.values, ds.fold_curve_beta.values,
                               color="tab:red", lw=1.0, label="fold curve (continued)",
                               gid="fold_curve")
        star = float(ds.attrs.get("tricritical_beta", math.nan))
        if math.isfinite(star):
            from meanfield.model.landau import landau_critical_kappa

            kc = landau_critical_kappa(str(ds.attrs.get("geometry", "circle")), star,
                                       ds.attrs.get("model") == "SA",
                                       float(ds.attrs.get("value", 1.0)),  # V = c I
                                       ds.attrs.get("dim"))  # (zonal: d)
            exact = float(ds.attrs.get("tricritical_beta_landau", math.nan))
            label = rf"tricritical $\beta^* = {star:.4f}$" + (
                f" (Landau {exact:.4f})" if math.isfinite(exact) else "")
            handles += ax.plot([kc], [star], ls="none", marker="*", ms=9,
                               color="tab:red", mec="black", mew=0.5, label=label,
                               gid="tricritical")
        if "map_maxwell_kappa" in ds and np.any(np.isfinite(ds.map_maxwell_kappa.values)):
            handles += ax.plot(ds.map_maxwell_kappa.values, beta, color="tab:orange",
                               lw=1.0, ls=":", label="Maxwell point", gid="maxwell")
        ax.set_xlabel(r"$\kappa$ (inverse noise)")
        ax.set_ylabel(r"$\beta$")
        ax.set_xlim(kappa.min(), kappa.max())
        ax.legend(handles=handles, fontsize=6.5, loc="best")
        fig.suptitle(_title(ds), fontsize=9)
    return fig


def _summary(ds: xr.Dataset, log: Any = "auto") -> Any:
    del log
    if is_across_dims(ds):
        return dims_figure(ds)
    return map_figure(ds) if _is_map(ds) else bifurcation_figure(ds)


def _diagram_page(ds: xr.Dataset, log: Any = "auto") -> Any:
    del log
    if is_across_dims(ds):
        return dims_figure(ds)
    if _is_map(ds):
        return map_figure(ds)
    with style():
        fig = _new_figure((4.6, 3.6))
        ax = fig.add_subplot(1, 1, 1)
        handles = bifurcation_diagram(ds, ax)
        if handles:
            ax.legend(handles=handles, fontsize=6.5, loc="best")
        fig.suptitle(_title(ds), fontsize=9)
    return fig


def _animate(ds: xr.Dataset, path: Any, **kwargs: Any) -> None:
    raise ConfigError("a bifurcation study has no animation; plot it without --animate",
                      "--animate")


_register_kind("bifurcation", _KindPlots(
    check=_check, summary=_summary, pages=(("diagram", _diagram_page),), animate=_animate))
