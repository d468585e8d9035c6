"""The curves of a bifurcation diagram, as computed (``diagrams`` draws them): each
branch's parameter and value (the order parameter ``r``, or for a mode k >= 2 its
amplitude ``|rho_k|``, since ``r`` is identically 0 there on S^1; or the free energy
relative to the uniform state's, from the closed form ``-log|S|/kappa``), the uniform
branch exactly 0, the computed special points (pitchforks, folds) inserted where the
stability changes so that stable and unstable runs meet exactly there, and the runs of
equal stability."""
from __future__ import annotations

import json
import math

import numpy as np
import xarray as xr

STYLES = {1: ("-", "stable"), 0: ("--", "unstable"), -1: (":", "unknown")}
AREAS = {"circle": 2 * math.pi, "sphere": 4 * math.pi, "zonal": 1.0}  # (zonal: normalized)


def _parameter(ds: xr.Dataset) -> str:
    return str(ds.attrs.get("parameter", "kappa"))


def _geometry(ds: xr.Dataset) -> str | None:
    """``attrs["geometry"]``, else the config's ``domain.geometry``, else None."""
    geometry = ds.attrs.get("geometry")
    if geometry is None and "config" in ds.attrs:
        try:
            geometry = json.loads(str(ds.attrs["config"]))["domain"]["geometry"]
        except (ValueError, KeyError, TypeError):
            geometry = None
    return str(geometry) if geometry in AREAS else None


def stability_runs(stable: np.ndarray, finite: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Split a branch into runs of equal stability.

    Args:
        stable: the stability flags along the branch (1, 0, -1).
        finite: where the point can be drawn (finite parameter and value).

    Returns:
        ``(flag, indices)`` per run, in order; a run's last point is also the next run's
        first when they are adjacent, so the drawn curve has no gap at a change of
        stability. Non-finite points end a run.
    """
    runs: list[tuple[int, list[int]]] = []
    previous = None
    for i, (flag, ok) in enumerate(zip(np.asarray(stable).astype(int), finite)):
        if not ok:
            previous = None
            continue
        flag = int(flag) if int(flag) in STYLES else -1
        if previous is not None and runs and runs[-1][0] == flag:
            runs[-1][1].append(i)
        else:
            start = [previous] if previous is not None else []
            runs.append((flag, start + [i]))
        previous = i
    return [(flag, np.array(idx)) for flag, idx in runs]


def _modes(ds: xr.Dataset) -> np.ndarray:
    if "branch_mode" in ds.data_vars or "branch_mode" in ds.coords:
        return np.asarray(ds["branch_mode"].values).astype(int)
    return np.arange(ds.sizes["branch"])


def _uniform_baseline(ds: xr.Dataset, x: np.ndarray, kappa: np.ndarray) -> np.ndarray:
    """The uniform state's free energy at the parameter values ``x``: the closed form
    ``-log|S| / kappa`` (the run diagnostics' convention: ``E`` counted from the uniform
    state's) when the geometry is known -- exact at every point, where a linear
    interpolation between the uniform branch's points would lie below the concave
    ``-log|S|/kappa`` and lift every other branch above it --, else interpolated along
    the uniform branch (mode 0), else NaN."""
    if _geometry(ds) is not None:
        return _closed_baseline(ds, kappa)
    modes = _modes(ds)
    out = np.full(np.shape(x), np.nan)
    if "free_energy" in ds.data_vars and np.any(modes == 0):
        b = int(np.flatnonzero(modes == 0)[0])
        ux = ds[_parameter(ds)].isel(branch=b).values.astype(float)
        uf = ds["free_energy"].isel(branch=b).values.astype(float)
        ok = np.isfinite(ux) & np.isfinite(uf)
        if ok.sum() >= 2:
            order = np.argsort(ux[ok])
            out = np.interp(x, ux[ok][order], uf[ok][order], left=np.nan, right=np.nan)
    return out


def _closed_baseline(ds: xr.Dataset, kappa: np.ndarray) -> np.ndarray:
    geometry = _geometry(ds)
    if geometry is None:
        return np.full(np.shape(kappa), np.nan)
    return -math.log(AREAS[geometry]) / np.asarray(kappa, dtype=float)


def _uses_amplitude(ds: xr.Dataset, b: int) -> bool:
    """Whether branch ``b`` is drawn by its mode's amplitude: a branch of mode k >= 2 with
    a finite ``amplitude`` (its ``r = |int x dmu|`` is identically 0 on S^1)."""
    if "amplitude" not in ds.data_vars or int(_modes(ds)[b]) < 2:
        return False
    return bool(np.isfinite(ds["amplitude"].isel(branch=b).values).any())


def branch_curve(ds: xr.Dataset, b: int, values: str) -> tuple[np.ndarray, np.ndarray]:
    """The drawn curve of branch ``b``: the parameter and, for ``values``
    "order_parameter", ``r`` (the amplitude of the branch's mode for k >= 2, see
    ``_uses_amplitude``), for "free_energy" the free energy relative to the uniform
    state's. The uniform branch (mode 0) is exactly 0 in both: its ``r`` vanishes and its
    relative free energy is 0 by definition (no interpolation, no round-off)."""
    x = ds[_parameter(ds)].isel(branch=b).values.astype(float)
    if int(_modes(ds)[b]) == 0:
        y = np.where(np.isfinite(x), 0.0, np.nan)
    elif values == "order_parameter":
        name = "amplitude" if _uses_amplitude(ds, b) else "order_parameter"
        y = ds[name].isel(branch=b).values.astype(float)
    else:
        kappa = ds["kappa"].isel(branch=b).values.astype(float)
        y = (ds["free_energy"].isel(branch=b).values.astype(float)
             - _uniform_baseline(ds, x, kappa))
    return x, y


def _specials_on(ds: xr.Dataset, b: int) -> list[int]:
    """Indices of the special points on branch ``b`` (finite parameter)."""
    if "special_branch" not in ds.data_vars or "special" not in ds.dims:
        return []
    x = ds[f"special_{_parameter(ds)}"].values.astype(float)
    return [j for j in np.flatnonzero(ds["special_branch"].values == b) if np.isfinite(x[j])]


def _at_special(ds: xr.Dataset, j: int, x: np.ndarray, y: np.ndarray,
                stable: np.ndarray, values: str) -> tuple[float, float]:
    """``(parameter, value)`` of special point ``j`` on a branch drawn as ``(x, y)``: 0 on
    the uniform branch, the computed ``special_order_parameter`` when ``y`` is ``r``,
    else ``y`` interpolated in the interval of the branch where its stability changes
    nearest to the point (a fold is an extremum of the parameter, outside its two
    neighbours: the fraction is clipped), else at the nearest point."""
    xs = float(ds[f"special_{_parameter(ds)}"].values[j])
    b = int(ds["special_branch"].values[j])
    if int(_modes(ds)[b]) == 0:
        return xs, 0.0
    if values == "order_parameter" and not _uses_amplitude(ds, b) \
            and "special_order_parameter" in ds.data_vars:
        r = float(ds["special_order_parameter"].values[j])
        if math.isfinite(r):
            return xs, r
    ok = np.isfinite(x) & np.isfinite(y)
    if not ok.any():
        return xs, math.nan
    flags = np.asarray(stable).astype(int)
    changes = [i for i in range(len(x) - 1) if ok[i] and ok[i + 1] and flags[i] != flags[i + 1]]
    if changes:
        gap = [max(min(x[i], x[i + 1]) - xs, xs - max(x[i], x[i + 1]), 0.0) for i in changes]
        i = changes[int(np.argmin(gap))]
        t = 0.0 if x[i + 1] == x[i] else float(np.clip((xs - x[i]) / (x[i + 1] - x[i]), 0, 1))
        return xs, float(y[i] + t * (y[i + 1] - y[i]))
    near = np.flatnonzero(ok)[np.argmin(np.abs(x[ok] - xs))]
    return xs, float(y[near])


def _with_junctions(ds: xr.Dataset, b: int, x: np.ndarray, y: np.ndarray,
                    stable: np.ndarray, values: str
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The branch with each computed special point of it (pitchfork on the uniform branch,
    fold, ...) inserted between the two points where its stability changes, with the
    earlier point's flag (``stability_runs`` starts the next run there): the solid/dashed
    split then falls exactly at the computed change, not at a grid point beside it."""
    flags = np.asarray(stable).astype(int)
    specials = [_at_special(ds, j, x, y, stable, values) for j in _specials_on(ds, b)]
    specials = [(xs, ys) for xs, ys in specials if math.isfinite(ys)]
    if not specials:
        return x, y, flags
    ok = np.isfinite(x) & np.isfinite(y)
    xo, yo, fo = [], [], []
    used: set[int] = set()
    for i in range(len(x)):
        if i > 0 and ok[i - 1] and ok[i] and flags[i - 1] != flags[i]:
            width = abs(x[i] - x[i - 1])
            lo, hi = min(x[i - 1], x[i]), max(x[i - 1], x[i])
            gaps = [(max(lo - xs, xs - hi, 0.0), k) for k, (xs, _) in enumerate(specials)
                    if k not in used]
            if gaps:
                gap, k = min(gaps)
                if gap <= width + 1e-12 * max(1.0, abs(hi)):
                    used.add(k)
                    xo.append(specials[k][0])
                    yo.append(specials[k][1])
                    fo.append(flags[i - 1])
        xo.append(x[i])
        yo.append(y[i])
        fo.append(flags[i])
    return np.array(xo), np.array(yo), np.array(fo)
