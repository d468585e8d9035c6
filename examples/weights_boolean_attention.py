"""The attention matrix becomes Boolean
====================================

The attention matrix becomes Boolean ([GLPR23, Figure 3 and
Theorem 2.1]; docs/weights.md).

n = 40 tokens on the line (d = 1) with Q = K = V = 1 under pure self-attention
dx_i/dt = sum_j P_ij x_j, P_ij ∝ e^{x_i x_j}. The tokens run off to +-infinity
(x ~ e^t), so the example integrates the rescaled tokens z = e^{-t} x
(dz_i/dt = sum_j P_ij (z_j - z_i), the same P) and never forms x. Theorem 2.1: P(t)
tends to a Boolean matrix P* whose non-zero columns are the smallest and the largest
token (each positive token attends to the largest, each negative one to the smallest):
rank 2, two leaders. The approach is doubly exponential:
1 - P_i,leader ~ exp(-x_i (x_leader - x_j)) with x_i ~ e^t and the gaps settled, so
log(-log distance) grows like t (slope 1 = V).

Run ``python examples/weights_boolean_attention.py`` (``--quick``: fewer saved times);
writes ``weights_boolean_attention.png`` (``--out``) and prints the Boolean distance, the
fitted slope, the leaders and the rank.
"""
from __future__ import annotations

import argparse

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from meanfield.metrics.attention import (
    boolean_distance, leaders, nearest_boolean, numerical_rank)
from meanfield.model.particles import simulate
from meanfield.model.weighted_attention import Head
from meanfield.model.weighted_particles import RescaledParticles
from meanfield.plotting import style
from meanfield.plotting.weights.panels import attention_snapshots, boolean_distance_plot

T_FINAL = 6.0
FIT_FROM = 3.0  # the gaps x_leader - x_j have settled (the fit window [3, 6])
SNAPSHOTS = (0.0, 0.3, 0.6, 1.5)


def boolean_run(n: int, seed: int, saves: int) -> dict:
    # sorted tokens: the leaders are tokens 0 and n - 1
    z0 = np.sort(np.random.default_rng(seed).standard_normal(n))
    model = RescaledParticles(Head.identity(1))
    save = np.unique(np.round(np.r_[np.linspace(0.0, T_FINAL, saves + 1), SNAPSHOTS], 12))
    # renormalize=False: tokens in R^1 are taken as given (simulate's token check, made
    # for unit vectors, asks d >= 2)
    run = simulate(model, z0[:, None], save[1:], dt=None, tolerance=1e-12,
                   renormalize=False)
    times, z = run.times, run.positions[:, :, 0]  # (time, token)
    p = np.stack([model.attention(zk[:, None], t)[0] for zk, t in zip(z, times)])
    dist = boolean_distance(p)
    window = times >= FIT_FROM
    y = np.log(-np.log(dist[window]))
    slope, intercept = np.polyfit(times[window], y, 1)
    resid = y - (slope * times[window] + intercept)
    r2 = 1.0 - np.sum(resid**2) / np.sum((y - y.mean()) ** 2)
    # P* of Theorem 2.1 at the final tokens: the largest token's column for the positive
    # ones, the smallest's for the negative ones
    target = np.eye(n)[np.where(z[-1] > 0, n - 1, 0)]
    return {"times": times, "z": z, "attention": p, "distance": dist, "slope": slope,
            "intercept": intercept, "r2": r2, "leaders": leaders(p[-1]),
            "rank": numerical_rank(p[-1]),
            "matches_theorem": bool(np.array_equal(nearest_boolean(p[-1]), target)),
            "order_kept": bool(np.all(np.diff(z[-1]) > 0))}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="weights_boolean_attention.png")
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args(argv)
    run = boolean_run(args.n, args.seed, 30 if args.quick else 120)
    t, dist = run["times"], run["distance"]
    print(f"d = 1, n = {args.n}, Q = K = V = 1: Boolean distance {dist[0]:.3f} at t = 0, "
          f"{dist[-1]:.1e} at t = {T_FINAL:g}; log(-log distance) on t in [{FIT_FROM:g}, "
          f"{T_FINAL:g}]: slope {run['slope']:.4f} (predicted 1), R^2 {run['r2']:.6f}; "
          f"leaders {run['leaders'].tolist()} (the smallest and the largest token: 0 and "
          f"{args.n - 1}), rank {run['rank']}; nearest Boolean = P* of Theorem 2.1: "
          f"{run['matches_theorem']}")

    with style():  # the package's figure style, for its panels and ours
        fig = Figure(figsize=(9.0, 5.6), layout="constrained")
        FigureCanvasAgg(fig)
        top, bottom = fig.subfigures(2, 1, height_ratios=[1.0, 1.15])
        tokens = run["z"][:, :, None]  # (time, token, component)
        attention_snapshots(tokens, times=t, attention=run["attention"], at=SNAPSHOTS,
                            fig=top)
        left, right = bottom.subplots(1, 2)
        boolean_distance_plot(tokens, left, times=t, attention=run["attention"])
        window = t >= FIT_FROM
        right.plot(t[1:], np.log(-np.log(dist[1:])), lw=1.2, label="measured")
        right.plot(t[window], run["slope"] * t[window] + run["intercept"], "k--", lw=1.0,
                   label=f"fit on [{FIT_FROM:g}, {T_FINAL:g}]: slope {run['slope']:.3f}")
        right.set_xlabel("time t")
        right.set_ylabel(r"$\log(-\log \delta)$")
        right.set_title("doubly exponential: slope 1 (= V) predicted")
        right.legend(frameon=False)
        bottom.suptitle(f"Theorem 2.1: n = {args.n} tokens in d = 1, Q = K = V = 1; "
                        f"leaders {run['leaders'].tolist()} (the smallest and the largest "
                        "token)")
        fig.savefig(args.out, dpi=150)
    return run


if __name__ == "__main__":
    main()
