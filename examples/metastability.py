"""Metastability: the energy staircase and the cluster count
=========================================================

Metastability: the energy staircase in rescaled time and the cluster count on S^1 and
S^2 (``meanfield.metastability``; examples/metastability.toml; docs/conventions.md).

Tokens i.i.d. uniform on S^1 and on S^2 follow SA without noise. The uniform state is
unstable; its most unstable mode k* (``argmax_k k^2 a_k`` on S^1, ``argmax_l l(l+1) a_l``
on S^2; k* ~ sqrt(2 beta) at large beta) sets the first metastable state: on S^1 the
mode-k* perturbation has k* maxima, hence about k* clusters. The clusters then merge
pairwise on times ~ e^{beta(1 - cos gap)}: in the rescaled time ln(t)/beta the merges,
each a step of the energy, keep their places as beta grows. The interaction energy E_beta
(reported as E_beta - E_beta(uniform), which is >= 0) never decreases: SA is a gradient
ascent of E_beta for a weighted metric.

Run ``python examples/metastability.py`` (``--quick``: 64 tokens, 2 systems per beta);
writes ``metastability.png`` (``--out``) and prints, per sphere and beta, the first
plateau's cluster counts against k* and the smallest energy increment between saves.
"""
from __future__ import annotations

import argparse
import copy
import tomllib
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import meanfield
from meanfield.plotting import style
from meanfield.plotting.metastability import clusters_vs_time, plateau_vs_beta, staircase

CONFIG = Path(__file__).resolve().parent / "metastability.toml"
GEOMETRIES = {"circle": "S¹", "sphere": "S²"}


def study(geometry: str, quick: bool) -> xr.Dataset:
    """One metastability study of examples/metastability.toml, made smaller."""
    with open(CONFIG, "rb") as f:
        cfg = copy.deepcopy(tomllib.load(f))
    cfg["domain"]["geometry"] = geometry
    cfg["particles"]["n"] = 64 if quick else 128
    systems = 2 if quick else 4
    cfg["metastability"].update(
        beta=[8.0, 16.0, 32.0] if quick else [8.0, 16.0, 32.0, 64.0],
        systems=systems, chunk=systems,
        times={"start": 0.5, "stop": 50.0 if quick else 200.0, "num": 25 if quick else 40,
               "scale": "log"})
    return meanfield.metastability(cfg)


def summary(ds: xr.Dataset) -> dict:
    """The key numbers of one study: first plateau counts against k*, energy steps."""
    energy = np.asarray(ds["energy"].values, float)  # (beta, time, system)
    steps = np.diff(energy, axis=1)
    mode = np.asarray(ds["most_unstable_mode"].values, float)
    plateau = np.asarray(ds["first_plateau_clusters"].values, float)
    return {"beta": ds["beta"].values, "mode": mode, "plateau": plateau,
            "ratio": np.array([np.nan if np.isnan(p).all() else np.nanmean(p) / k
                               for p, k in zip(plateau, mode)]),
            "min_energy_step": float(np.nanmin(steps)),
            "energy_scale": float(np.nanmax(np.abs(energy))),
            "plateau_exponent": float(ds.attrs["plateau_exponent"]),
            "mode_exponent": float(ds.attrs["mode_exponent"]), "dataset": ds}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="metastability.png")
    args = parser.parse_args(argv)
    out = {g: summary(study(g, args.quick)) for g in GEOMETRIES}
    for g, s in out.items():
        ds = s["dataset"]
        print(f"SA on {GEOMETRIES[g]}, n = {ds.attrs['n']}, {ds.attrs['systems']} systems "
              "per beta:")
        for b, k, counts, r in zip(s["beta"], s["mode"], s["plateau"], s["ratio"]):
            shown = ", ".join("-" if np.isnan(c) else f"{c:.0f}" for c in counts)
            print(f"  beta = {b:5g}: most unstable mode k* = {k:.0f}, first plateau "
                  f"clusters {shown} (mean / k* = {r:.2f})")
        print(f"  fitted exponents in beta: plateau {s['plateau_exponent']:.3f}, k* "
              f"{s['mode_exponent']:.3f} (sqrt(2 beta): 0.5)")
        print(f"  smallest energy increment between saves {s['min_energy_step']:.2e} "
              f"(energies up to {s['energy_scale']:.2e}): E_beta never decreases")

    with style():  # the package's figure style and panels (integer count ticks,
        # legends placed off the curves), with our titles
        fig = Figure(figsize=(10.0, 6.4), layout="constrained")
        FigureCanvasAgg(fig)
        for row, (g, s) in enumerate(out.items()):
            ds = s["dataset"]
            axes = [fig.add_subplot(2, 3, 3 * row + k + 1) for k in range(3)]
            titles = ("cluster count per system", "energy staircase: a step per merge",
                      "first plateau against k*")
            for draw, ax, title in zip((clusters_vs_time, staircase, plateau_vs_beta), axes,
                                       titles):
                draw(ds, ax)
                ax.set_title(f"{GEOMETRIES[g]}: {title}", fontsize=8)
        fig.suptitle("Metastability of SA from uniform tokens: the first plateau against "
                     "the most unstable mode k*, then pairwise merges (steps of the energy)",
                     fontsize=9)
        fig.savefig(args.out, dpi=150)
    return out


if __name__ == "__main__":
    main()
