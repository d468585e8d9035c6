"""The S² density next to its particle ensemble
=============================================

The S^2 density next to its particle ensemble, as an animation (``meanfield.compare``
on the sphere; examples/compare_sphere.toml; docs/conventions.md).

SA at beta = 2 with noise kappa = 15 from two von Mises-Fisher bumps that merge: the PDE
(spectral, degree 32) against an ensemble of 2000-token runs started from i.i.d. samples
of the same density. At each saved time the pooled tokens are binned on the Voronoi cells
of an icosahedral mesh and compared with the PDE's mass in the same cells. The L1 distance
``sum_b |p_b - q_b|`` of N exact samples of the PDE is about the sampling floor
``l1_noise_floor`` = sum_b sqrt(2 q_b (1 - q_b) / (pi N)); the tokens start as such
samples, so early on the distance sits on the floor, and it can rise above it only by
the finite-n error of the particle system (O(n^(-1/2)) per run, growing with time). The
PDE conserves mass (the spectral scheme keeps the l = 0 coefficient).

Run ``python examples/sphere_density_and_tokens.py`` (``--quick``: 2 runs to t = 2);
writes ``sphere_density_and_tokens.gif`` (the package's comparison animation, as
``meanfield plot RESULT.nc --animate`` writes it) and ``sphere_density_and_tokens.png``
(``--out``: the last frame with the L1 distance and the order parameter over time), and
prints the early L1 distance against its floor and the worst ``|M(t) - 1|`` of the PDE.
"""
from __future__ import annotations

import argparse
import copy
import tomllib
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

import meanfield
from meanfield.plotting import (
    histogram_map,
    l1_distance,
    map_mollweide,
    order_comparison,
    style,
)
from meanfield.plotting.common import _kind_plots
from meanfield.plotting.transport.comparison_series import l1_meaning

CONFIG = Path(__file__).resolve().parent / "compare_sphere.toml"
EARLY = 1.0  # "early": t <= EARLY, before the finite-n error of the tokens shows


def comparison(quick: bool) -> xr.Dataset:
    """examples/compare_sphere.toml (``quick``: 2 runs to t = 2 instead of 8 to t = 6)."""
    with open(CONFIG, "rb") as f:
        cfg = copy.deepcopy(tomllib.load(f))
    if quick:
        cfg["time"]["t_final"] = 2.0
        cfg["particles"]["ensemble"] = 2
    return meanfield.compare(cfg)


def key_numbers(ds: xr.Dataset) -> dict:
    """The L1 distance against its sampling floor, and the PDE's mass error."""
    t = ds["time"].values
    ratio = ds["l1_distance"].values / ds["l1_noise_floor"].values
    mass = (ds["density"] * ds["weights"]).sum(("lat", "lon")).values
    early = t <= EARLY
    return {"time": t, "l1": ds["l1_distance"].values, "floor": ds["l1_noise_floor"].values,
            "ratio": ratio, "early_ratio_max": float(ratio[early].max()),
            "final_ratio": float(ratio[-1]),
            "mass_error": float(np.abs(mass - 1.0).max()), "dataset": ds}


def last_frame(ds: xr.Dataset, mass_error: float, path: str) -> None:
    """The animation's last frame (PDE map beside the token histogram, one colour
    scale) above the L1 distance and the order parameter over time."""
    with style():  # the package's figure style, for its panels and ours
        fig = Figure(figsize=(9.0, 6.0), layout="constrained")
        FigureCanvasAgg(fig)
        grid = fig.add_gridspec(2, 2, height_ratios=[1.15, 1.0])
        maps = [fig.add_subplot(grid[0, k], projection="mollweide") for k in range(2)]
        top = max(float(ds["density"].isel(time=-1).max()),
                  float(ds["particle_density"].isel(time=-1).max()))
        norm = Normalize(0.0, top)
        mesh = map_mollweide(ds, maps[0], norm=norm, colorbar=False)
        histogram_map(ds, maps[1], norm=norm, colorbar=False)
        maps[0].set_title(f"PDE, t = {ds['time'].values[-1]:g}", pad=8)
        fig.colorbar(mesh, ax=maps, shrink=0.8, pad=0.02, label="ρ (1/sr)")
        series = [fig.add_subplot(grid[1, k]) for k in range(2)]
        l1_distance(ds, series[0])  # (the package's panels: legends under them)
        order_comparison(ds, series[1])
        fig.suptitle(f"SA on S², β = {ds.attrs['beta']:g}, κ = {ds.attrs['kappa']:g}: PDE "
                     f"against {ds.attrs['ensemble']} × {ds.attrs['n']} tokens "
                     f"({ds.attrs['bins']} mesh cells)", fontsize=9)
        fig.supxlabel(f"{l1_meaning(ds)}\nPDE mass conserved: max_t |M(t) − 1| = "
                      f"{mass_error:.1e}. Cyan +: the PDE's mean direction.", fontsize=7,
                      color="0.3", x=0.01, ha="left")
        fig.savefig(path, dpi=150)


# The gallery's card: a panel of the PNG (image 2), not the animated GIF (image 1).
# sphinx_gallery_thumbnail_number = 2


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="sphere_density_and_tokens.png",
                        help="the PNG; the GIF goes beside it with the suffix .gif")
    args = parser.parse_args(argv)
    ds = comparison(args.quick)
    out = key_numbers(ds)
    gif = Path(args.out).with_suffix(".gif")
    # the comparison's animation, exactly as `meanfield plot RESULT.nc --animate` draws it
    _kind_plots(ds).animate(ds, gif, dpi=100.0, fps=8, max_frames=100)
    last_frame(ds, out["mass_error"], args.out)
    out["gif"] = gif
    early = out["time"] <= EARLY
    print(f"{ds.attrs['ensemble']} x {ds.attrs['n']} tokens, {ds.attrs['bins']} cells: "
          f"L1 / floor for t <= {EARLY:g}: "
          + ", ".join(f"{r:.2f}" for r in out["ratio"][early])
          + f" (max {out['early_ratio_max']:.2f}); at t = {out['time'][-1]:g}: "
          f"{out['l1'][-1]:.3f} against a floor of {out['floor'][-1]:.3f}")
    print(f"PDE mass: max_t |M(t) - 1| = {out['mass_error']:.1e}")
    print(f"wrote {args.out} and {gif}")
    return out


if __name__ == "__main__":
    main()
