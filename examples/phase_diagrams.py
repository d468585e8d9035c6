"""The (t, β) clustering phase diagrams
=======================================

The (t, beta) clustering phase diagrams of the transformer papers for d = 8, 128 and
1024, with the equiangular curve (``meanfield.studies.tokens.phase_diagram``).

``systems`` independent systems of n = 32 tokens, i.i.d. uniform on S^{d-1}, follow SA at
inverse temperature beta; the image is the probability that a pair of tokens has
<x_i, x_j> >= 0.999 at time t. In high dimension the start is equiangular with cosine
0 up to O(d^{-1/2}), so every pair reaches the threshold together, at the time t*(beta)
at which the equiangular ODE for the common cosine rho(t) (from rho(0) = 0) reaches it:
the 1/2-crossing of the pair probability follows t*(beta) more closely as d grows. For
d = 8 < n no equiangular start with cosine 0 exists (the curve is dashed there) and the
tokens cluster over a spread of times. Measured (full run, 256 systems, 36 betas in
[0.25, 9]): largest relative gap 2.8 % for d = 1024, 17 % for d = 128, 110 % for d = 8.

Run ``python examples/phase_diagrams.py`` (two minutes on two cores; ``--quick``: d = 8
and 128, 3 betas, 32 systems, t <= 15 every 0.125); writes ``phase_diagrams.png``
(``--out``) and prints, for each d, the largest relative gap between the 1/2-crossing
time and t*(beta) over the betas where both lie in the time window.
"""
from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import meanfield
from meanfield.plotting import style
from meanfield.plotting.tokens.phase_diagram import probability_panel
from meanfield.studies.tokens.phase_diagram import equiangular_time

CONFIG = Path(__file__).resolve().parent / "phase_diagram.toml"


def half_crossing(times: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The first time at which each row of ``p`` (beta, time) reaches 1/2, linear between
    the saved times (NaN where it does not, or already at the first time)."""
    out = np.full(p.shape[0], np.nan)
    for j, row in enumerate(p):
        k = np.flatnonzero(row >= 0.5)
        if k.size and k[0] > 0:
            k = k[0]
            out[j] = times[k - 1] + (0.5 - row[k - 1]) / (row[k] - row[k - 1]) * (
                times[k] - times[k - 1])
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="phase_diagrams.png")
    args = parser.parse_args(argv)
    with CONFIG.open("rb") as f:
        cfg = tomllib.load(f)  # n = 32, threshold 0.999, t in [0, 30] every 0.25
    study = cfg["phase_diagram"]
    if args.quick:
        study.update(dims=[8, 128], systems=32, beta={"start": 1.0, "stop": 5.0, "num": 3},
                     times={"start": 0.0, "stop": 15.0, "num": 121})
        cfg["parallel"]["workers"] = 1
    else:
        study.update(dims=[8, 128, 1024], systems=256,
                     beta={"start": 0.25, "stop": 9.0, "num": 36})
    ds = meanfield.phase_diagram(cfg)
    n, threshold = int(ds.attrs["n"]), float(ds.attrs["threshold"])
    beta, t = ds["beta"].values.astype(float), ds["time"].values.astype(float)
    t_star = ds["equiangular_time"].values.astype(float)
    dims = [int(d) for d in ds["dim"].values]
    crossing = {d: half_crossing(t, ds["pair_probability"].values[i])
                for i, d in enumerate(dims)}
    gap = {}
    for d in dims:
        both = np.isfinite(crossing[d]) & (t_star <= t[-1])
        gap[d] = float(np.max(np.abs(crossing[d][both] - t_star[both]) / t_star[both]))
        print(f"d = {d:4d}{' (< n)' if d < n else ''}: 1/2-crossing against the "
              f"equiangular time over {int(both.sum())} betas in [{beta[0]:g}, "
              f"{beta[-1]:g}]: max relative gap {gap[d]:.3f}")

    fine = np.linspace(beta[0], beta[-1], 200)
    curve = np.array([equiangular_time(b, n, threshold) for b in fine])
    with style():
        fig = Figure(figsize=(3.0 * len(dims) + 3.6, 3.9), layout="constrained")
        FigureCanvasAgg(fig)
        grid = fig.add_gridspec(1, len(dims) + 1, width_ratios=[1.0] * len(dims) + [1.15])
        axes = [fig.add_subplot(grid[0, j]) for j in range(len(dims))]
        for j, ax in enumerate(axes):
            mesh = probability_panel(ds, ax, j)
            ax.set_ylabel("time t" if j == 0 else "")
        cb = fig.colorbar(mesh, ax=axes, shrink=0.9, pad=0.01)
        cb.set_label("pair probability")
        ax = fig.add_subplot(grid[0, -1])
        shown = curve <= t[-1]
        ax.plot(fine[shown], curve[shown], color="k", lw=1.4,
                label="equiangular time t*(β)")
        for k, d in enumerate(dims):
            ax.plot(beta, crossing[d], "o" if d >= n else "s", ms=3.5, mfc="none",
                    color=f"C{k}", label=f"d = {d}: P = 1/2 (gap ≤ {gap[d]:.0%})")
        ax.set_xlabel("β")
        ax.set_ylabel("time t")
        # (a crossing near the last saved time sat on the frame's top edge)
        ax.set_ylim(0.0, 1.05 * t[-1])
        ax.set_title("where half the pairs have clustered", fontsize=8)
        ax.legend(loc="upper left", fontsize=6.5)  # (the curve rises to the right)
        for letter, panel in zip("abcdefgh", axes + [ax]):  # (a), (b), ... on the left
            panel.set_title(f"({letter}) {panel.get_title()}", loc="left")
            panel.set_title("")
        fig.suptitle(f"SA, n = {n} uniform tokens, {int(ds.attrs['systems'])} systems per "
                     f"β: P(⟨xᵢ, xⱼ⟩ ≥ {threshold:g}) over (β, t); white: the "
                     "equiangular time (dashed where d < n), black: P = 1/2", fontsize=9)
        fig.savefig(args.out, dpi=150)
    return {"dims": dims, "beta": beta, "equiangular_time": t_star, "crossing": crossing,
            "gap": gap, "n": n}


if __name__ == "__main__":
    main()
