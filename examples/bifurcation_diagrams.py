"""Bifurcation diagrams of the noisy models on S¹ and S²
=======================================================

Bifurcation diagrams of the noisy Kuramoto model (beta = 0) and of the noisy
transformer (SA and USA) on S^1 and S^2: the branch of the first mode continued in kappa
from its pitchfork on the uniform state (``meanfield.bifurcation``, arclength
continuation; docs/bifurcation.md), stable and unstable segments as computed.

The uniform density loses stability at the analytic ``kappa_c = 1/a_1`` (docs/conventions.md):
2 on S^1 and 3 on S^2 for beta = 0, ``beta I_0/I_1`` (SA) and ``beta e^beta/I_1`` (USA, in
terms of the scaled Bessel function) on S^1, their spherical analogues on S^2. Whether the
transition is continuous (a supercritical pitchfork) or first order (subcritical: the
branch bends back to a fold below kappa_c, bistability and hysteresis) is the sign of the
Landau coefficient kappa_2 in ``kappa = kappa_c + kappa_2 r^2`` (``meanfield.model.landau``):
SA stays continuous at every beta, USA turns first order above the tricritical beta*
(about 2.45 on S^1, 1.82 on S^2). The second open circle on the uniform branch (where
drawn) is its next pitchfork, of mode 2.

The example checks that every pitchfork the continuation locates is at the closed-form
kappa_c (to 1e-6) and that each branch's transition type is the sign of kappa_2. Run
``python examples/bifurcation_diagrams.py`` (``--quick``: coarser grids and arclength
steps); writes ``bifurcation_diagrams.png`` (``--out``).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

import meanfield
from meanfield.discretizations.base import Discretization
from meanfield.model import landau
from meanfield.plotting import style
from meanfield.plotting.bifurcation.diagrams import bifurcation_diagram

GEOMETRIES = ("circle", "sphere")
SPHERE_NAME = {"circle": "S¹", "sphere": "S²"}
# (label, beta, normalized): beta = 0 is the noisy Kuramoto model (SA and USA agree);
# USA at beta = 1 is below beta* on both spheres, at beta = 3 above it on both.
CASES = [("noisy Kuramoto", 0.0, True), ("SA", 2.0, True), ("USA", 1.0, False),
         ("USA", 3.0, False)]


def _config(geometry: str, beta: float, normalized: bool, quick: bool) -> dict:
    kappa_c = landau.landau_critical_kappa(geometry, beta, normalized)
    # from well below the threshold to where the branch is strongly clustered
    # (--quick: on S^2, where each Newton step costs most, a shorter range)
    start = 0.5 * kappa_c
    stop = (2.5 if geometry == "circle" else 1.6 if quick else 2.0) * kappa_c
    base = {"circle": 32 if quick else 64, "sphere": 12 if quick else 20}[geometry]
    # (at least what the kernel of this beta needs: the study refuses less)
    needed = Discretization.from_name(geometry, "spectral").needed_resolution(beta)
    resolution = max(base, needed + needed % 2)
    # (--quick: 0.1 on both spheres; 0.25 left 15 points on an S^2 branch, a visible
    # polygon, for 7 s less of the quick run)
    ds_max = 0.05 if not quick else 0.1
    config = {"model": {"beta": beta, "normalized": normalized, "kappa": kappa_c},
              "discretization": {"resolution": resolution},
              "bifurcation": {"parameter": "kappa", "start": start, "stop": stop,
                              "modes": 1, "mode": "continuation",
                              "ds": min(0.05, ds_max), "ds_max": ds_max,
                              "points": 1000,  # (the whole range, not the first 200)
                              "stride": 10_000}}  # (no states kept: only the branch)
    if geometry == "sphere":
        config["domain"] = {"geometry": "sphere"}
    return config


def diagram(geometry: str, beta: float, normalized: bool, quick: bool) -> dict:
    """One continuation and what it says against the closed forms."""
    ds = meanfield.bifurcation(_config(geometry, beta, normalized, quick))
    kappa_c = landau.landau_critical_kappa(geometry, beta, normalized)
    kappa_2 = landau.landau_coefficient(geometry, beta, normalized)
    types = [str(t) for t in ds.special_type.values]
    pitchforks = ds.special_kappa.values[[t == "pitchfork" for t in types]].astype(float)
    # the pitchfork of mode 1 is the one nearest the mode-1 closed form
    first = float(pitchforks[np.argmin(np.abs(pitchforks - kappa_c))])
    modes = ds.branch_mode.values.astype(int)
    transition = str(ds.transition.values[np.flatnonzero(modes == 1)[0]])
    fold = float(ds.fold_kappa.values[np.flatnonzero(modes == 1)[0]])
    return {"ds": ds, "geometry": geometry, "beta": beta, "normalized": normalized,
            "kappa_c": kappa_c, "pitchfork": first, "error": abs(first - kappa_c),
            "kappa_2": kappa_2, "transition": transition, "fold": fold,
            "expected": "supercritical" if kappa_2 > 0 else "subcritical",
            "status": int(ds.attrs["status"]),  # 0: finished, every check passed
            "completed": all(str(s) == "completed" for s in ds.branch_status.values)}


def _landau_panel(ax, runs: list[dict], beta_star: dict) -> None:
    """kappa_2 / kappa_c over beta for SA and USA on both spheres, beta* marked."""
    beta = np.linspace(0.0, 6.0, 241)
    colors = {"circle": "C0", "sphere": "C3"}
    for geometry in GEOMETRIES:
        for normalized, style in ((True, "-"), (False, "--")):
            k2 = [landau.landau_coefficient(geometry, float(b), normalized)
                  / landau.landau_critical_kappa(geometry, float(b), normalized)
                  for b in beta]
            ax.plot(beta, k2, style, color=colors[geometry], lw=1.3,
                    label=f"{'SA' if normalized else 'USA'} on {SPHERE_NAME[geometry]}")
        b = beta_star[geometry]
        ax.plot([b], [0.0], "o", mfc="white", mec=colors[geometry], ms=6, zorder=5)
        ax.annotate(f"β* = {b:.3f}", (b, 0.0), textcoords="offset points",
                    xytext=(6, 4) if geometry == "circle" else (-50, -14),
                    fontsize=7.5, color=colors[geometry])
    for run in runs:
        ax.plot([run["beta"]], [run["kappa_2"] / run["kappa_c"]], "x", color="k", ms=5,
                zorder=6)
    ax.axhline(0.0, color="0.5", lw=0.6)
    low = ax.get_ylim()[0]
    ax.axhspan(low, 0.0, color="0.93", zorder=-1, lw=0)
    ax.set_ylim(low, None)
    ax.text(5.9, -0.05, "κ₂ < 0: first order (subcritical)", ha="right", va="top",
            fontsize=7.5)
    ax.text(0.99, 0.96, "κ₂ > 0: continuous (supercritical)", ha="right", va="top",
            fontsize=7.5, transform=ax.transAxes)
    ax.plot([], [], "x", color="k", label="the diagrams above")
    ax.set_xlim(0.0, 6.0)
    ax.set_xlabel(r"$\beta$")
    ax.set_ylabel(r"Landau coefficient $\kappa_2/\kappa_c$")
    ax.set_title(r"$\kappa = \kappa_c + \kappa_2 r^2$: the sign of $\kappa_2$ is the "
                 "transition type")
    ax.legend(fontsize=7.5, loc="lower left", ncols=3)


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="bifurcation_diagrams.png")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    runs = [diagram(g, beta, normalized, args.quick)
            for g in GEOMETRIES for _, beta, normalized in CASES]
    beta_star = {g: landau.tricritical_beta(g, False) for g in GEOMETRIES}
    for run in runs:
        name = ("noisy Kuramoto" if run["beta"] == 0 else
                f"{'SA' if run['normalized'] else 'USA'} beta = {run['beta']:g}")
        fold = f", fold at kappa = {run['fold']:.4f}" if np.isfinite(run["fold"]) else ""
        print(f"{SPHERE_NAME[run['geometry']]} {name}: pitchfork at kappa = "
              f"{run['pitchfork']:.8f}, closed form {run['kappa_c']:.8f} (|diff| "
              f"{run['error']:.1e}); {run['transition']}{fold}; Landau kappa_2 = "
              f"{run['kappa_2']:+.4f} ({run['expected']})")
    print(f"tricritical beta* of USA: {beta_star['circle']:.4f} on S¹, "
          f"{beta_star['sphere']:.4f} on S² (SA: none)")

    with style():
        fig = Figure(figsize=(13.0, 9.4), layout="constrained")
        FigureCanvasAgg(fig)
        grid = fig.add_gridspec(3, len(CASES), height_ratios=[1.0, 1.0, 0.95])
        handles: dict[str, object] = {}
        for row, geometry in enumerate(GEOMETRIES):
            for col, (label, beta, normalized) in enumerate(CASES):
                run = runs[row * len(CASES) + col]
                ax = fig.add_subplot(grid[row, col])
                for h in bifurcation_diagram(run["ds"], ax):
                    handles.setdefault(h.get_label().replace("$l = 1$", "$k = 1$"), h)
                ax.set_xlim(run["ds"].kappa.min(), run["ds"].kappa.max())
                kind = ("continuous" if run["transition"] == "supercritical"
                        else "first order")
                beta_text = "" if beta == 0 else f", β = {beta:g}"
                ax.set_title(f"{label} on {SPHERE_NAME[geometry]}{beta_text}: {kind}\n"
                             f"κ$_c$ = {run['kappa_c']:.4f} (pitchfork found at "
                             f"{run['pitchfork']:.4f})", fontsize=8.5)
                if np.isfinite(run["fold"]):
                    ax.axvspan(run["fold"], run["kappa_c"], color="0.92", zorder=-1, lw=0)
                    handles.setdefault("bistable (fold to κ$_c$)", Line2D(
                        [], [], color="0.92", lw=6, label="bistable (fold to κ$_c$)"))
                if col:
                    ax.set_ylabel("")
        _landau_panel(fig.add_subplot(grid[2, :]), runs, beta_star)
        labels = list(handles)
        labels = [("mode 1 branch ($k = 1$ on S¹, $l = 1$ on S²)" if lab == "$k = 1$"
                   else lab) for lab in labels]
        fig.legend(list(handles.values()), labels, loc="outside lower center",
                   ncols=len(labels), fontsize=8)
        fig.suptitle("Noisy Kuramoto and noisy transformer: the first bifurcation of the "
                     "uniform state in κ (order parameter r = |∫x dμ|)", fontsize=10.5)
        fig.savefig(args.out, dpi=150)
    print(f"{len(runs)} continuations in {time.perf_counter() - start:.1f} s; "
          f"wrote {args.out}")
    return runs


if __name__ == "__main__":
    main()
