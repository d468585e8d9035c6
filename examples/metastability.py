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

The metastable times (issue 28): from [GKPR24]'s well-separated start (tokens in three
caps at 0, 0.5 and 1.3 rad) the caps collapse by T_1 and the closest pair merges at T_2
~ e^{beta(1 - cos 0.5)}: the study fits T_1 = a + b beta (T_1 when the caps are tight on
the scale of their attention, spread <= e^{-beta(1 - cos phi)}: slope 1 - cos phi) and
log T_2 = a + b beta with bootstrap intervals, and runs the reduced merging model (the clusters as weighted points
from the first plateau) beside the tokens. The mean-shift picture: the modes of the KDE
of the starts against beta, beside the first plateau and sqrt(beta) log beta.

Run ``python examples/metastability.py`` (``--quick``: 64 tokens, 2 systems per beta);
writes ``metastability.png`` (``--out``) and prints, per sphere and beta, the first
plateau's cluster counts against k* and the smallest energy increment between saves,
then the fitted slopes, the reduced model's largest merge-time error and the KDE modes.
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
from meanfield.plotting.tokens.metastability import (
    clusters_vs_time,
    plateau_vs_beta,
    staircase,
)
from meanfield.plotting.tokens.metastability_times import (
    modes_vs_beta,
    staircases,
    times_vs_beta,
)
from meanfield.studies.tokens.metastability_merging import fit_slope
from meanfield.studies.tokens.metastability_theory import pairing_times
from meanfield.studies.tokens.metastable_times import predicted_slope

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


def caps_study(quick: bool) -> xr.Dataset:
    """Tokens in three caps (radius 0.05 rad at 0, 0.5, 1.3 rad) on S^1: T_1, T_2 and the
    reduced model over beta."""
    with open(CONFIG, "rb") as f:
        cfg = copy.deepcopy(tomllib.load(f))
    cfg["particles"]["n"] = 16 if quick else 32
    systems = 2 if quick else 4
    cfg["metastability"].update(
        beta=[32.0, 48.0, 64.0] if quick else [8.0, 16.0, 32.0, 48.0, 64.0],
        systems=systems, chunk=systems, start_caps=[0.0, 0.5, 1.3], cap_radius=0.05,
        kde_modes=False, times={"start": 0.5, "stop": 400.0 if quick else 3000.0,
                                "num": 88 if quick else 124, "scale": "log"})
    return meanfield.metastability(cfg)


def pairing_slope(beta: np.ndarray) -> float:
    """The slope in beta of log T_pair: the hardmax pairing time of two caps of a third
    of the tokens each, 0.5 rad apart (``pairing_times``), over the betas given."""
    t = [pairing_times(b, 0.5, 1 / 3, 1 / 3, 1e-2)[1] for b in beta]
    return float(np.polyfit(beta, np.log(t), 1)[0])


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
    caps = caps_study(args.quick)
    for g in GEOMETRIES:
        s = out[g]
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

    a = caps.attrs
    # the fit over the betas where the caps are separated (a plateau of 3 clusters)
    sep = caps["beta"].values[np.all(caps["first_plateau_clusters"].values == 3, axis=1)]
    out["caps"] = {"dataset": caps, "pairing_slope": pairing_slope(sep), "separated": sep}
    print("Caps at 0, 0.5, 1.3 rad (n = {}), beta = {}:".format(
        a["n"], ", ".join(f"{b:g}" for b in caps["beta"].values)))
    print(f"  T_1 slope {a['t1_slope']:.3g} [{a['t1_slope_interval'][0]:.3g}, "
          f"{a['t1_slope_interval'][1]:.3g}], log T_2 slope {a['log_t2_slope']:.3g} "
          f"[{a['log_t2_slope_interval'][0]:.3g}, {a['log_t2_slope_interval'][1]:.3g}] "
          f"({100 * a['confidence']:g} %); hardmax pairing over beta = "
          f"{', '.join(f'{b:g}' for b in sep)}: {out['caps']['pairing_slope']:.3g}")
    tight = fit_slope(
        sep, caps["tight_time"].sel(beta=sep).values, a["bootstrap"], a["confidence"], 1)
    predicted = predicted_slope(
        sep, caps["tight_exponent"].sel(beta=sep).values, True)
    print(f"  T_1 tight (spread <= e^-beta(1 - cos phi)) over the same beta: slope "
          f"{tight['slope']:.3g} [{tight['interval'][0]:.3g}, {tight['interval'][1]:.3g}]"
          f" against {predicted:.3g} predicted (beta(1 - cos phi), rate-1 contraction)")
    print(f"  reduced model: largest relative merge-time error "
          f"{a['reduced_merge_relative_max']:.3g} against the tokens' merges located "
          f"inside their saves, over "
          f"{int(np.nansum(caps['reduced_merges_compared'].values))} merges")
    ring = out["circle"]["dataset"].attrs
    print(f"KDE modes of the S^1 starts: exponent {ring['kde_mode_exponent']:.3f} "
          f"[{ring['kde_mode_exponent_interval'][0]:.3f}, "
          f"{ring['kde_mode_exponent_interval'][1]:.3f}] against sqrt(beta) log beta's "
          f"{ring['sqrt_log_exponent']:.3f}; predicted places / chance "
          f"{ring['position_error_ratio']:.2f}")

    with style():  # the package's figure style and panels (integer count ticks,
        # legends placed off the curves), with our titles
        fig = Figure(figsize=(10.0, 9.6), layout="constrained")
        FigureCanvasAgg(fig)
        for row, g in enumerate(GEOMETRIES):
            s = out[g]
            ds = s["dataset"]
            axes = [fig.add_subplot(3, 3, 3 * row + k + 1) for k in range(3)]
            titles = ("cluster count per system", "energy staircase: a step per merge",
                      "first plateau against k*")
            for draw, ax, title in zip((clusters_vs_time, staircase, plateau_vs_beta), axes,
                                       titles):
                draw(ds, ax)
                ax.set_title(f"{GEOMETRIES[g]}: {title}", fontsize=8)
        axes = [fig.add_subplot(3, 3, 7 + k) for k in range(3)]
        staircases(caps, axes[0])
        axes[0].set_title("caps on S¹: tokens and the reduced model", fontsize=8)
        times_vs_beta(caps, axes[1])
        axes[1].set_title("caps on S¹: metastable times T₁, T₂", fontsize=8)
        modes_vs_beta(out["circle"]["dataset"], axes[2])
        axes[2].set_title("S¹ uniform: modes of the initial KDE", fontsize=8)
        fig.suptitle("Metastability of SA: the first plateau against the most unstable "
                     "mode k*, pairwise merges (steps of the energy), metastable times and "
                     "the KDE modes", fontsize=9)
        fig.savefig(args.out, dpi=150)
    return out


if __name__ == "__main__":
    main()
