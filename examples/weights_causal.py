"""A causal mask on the sphere
===========================

A causal mask on the sphere: every token converges to the first one (docs/weights.md).

Post-LN tokens with Q = K = V = I and a causal mask (P_ij = 0 for j > i: token i attends
to tokens 1..i) follow dx_i/dt = P^perp_{x_i} sum_{j <= i} P_ij x_j. The first token
attends only to itself, so its velocity P^perp_{x_1} x_1 is 0: it does not move. Each
later token is pulled toward the ones before it, and all of them reach x_1.

Near the cluster every logit is beta, so P_ij -> 1/i, and in tangent coordinates
y_i = x_i - x_1 the linearised flow is dy_i/dt = (1/i) sum_{j <= i} y_j - y_i: lower
triangular with rates 1 - 1/i. The slowest is token 2's, 1/2: token 2 sees only tokens 1
and 2, so ``|x_2 - x_1|`` decays like e^{-t/2} exactly (up to terms of second order in the
distance), at any beta; every later token inherits that rate through the coupling.

Run ``python examples/weights_causal.py`` (``--quick``: a shorter run); writes
``weights_causal.png`` (``--out``) and prints how far the first token moved, the final
distance to it and the fitted rate.
"""
from __future__ import annotations

import argparse

import numpy as np
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from meanfield.model.particles import simulate
from meanfield.model.weighted_attention import Head
from meanfield.model.weighted_particles import WeightedParticles
from meanfield.plotting import style
from solvers.particles.direct import normalize_rows

PREDICTED_RATE = 0.5  # 1 - 1/i at i = 2, the slowest mode of the linearised flow


def causal_run(n: int, beta: float, t_final: float, saves: int, seed: int) -> dict:
    x0 = normalize_rows(np.random.default_rng(seed).standard_normal((n, 3)))
    model = WeightedParticles(Head.identity(3), beta=beta, mask="causal")
    times = np.linspace(0.0, t_final, saves + 1)[1:]
    run = simulate(model, x0, times, dt=None, tolerance=1e-12)
    x = run.positions
    distance = np.linalg.norm(x - x[:, :1], axis=2)  # (time, token) to the first token
    worst, second = distance.max(axis=1), distance[:, 1]
    # the fit window: close enough to x_1 for the linearisation (the second-order terms
    # are ~|y|^2), above the round-off of the positions (~1e-12)
    window = (second < 1e-2) & (second > 1e-10)
    if np.count_nonzero(window) < 5:
        raise RuntimeError(f"token 2 is not yet within 1e-2 of the first one at "
                           f"t = {t_final:g}: run longer")
    rate = -np.polyfit(run.times[window], np.log(second[window]), 1)[0]
    return {"times": run.times, "positions": x, "distance": distance,
            "first_moved": float(np.max(np.linalg.norm(x[:, 0] - x[0, 0], axis=1))),
            "final_distance": float(worst[-1]), "rate": float(rate)}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="weights_causal.png")
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--beta", type=float, default=1.0)
    args = parser.parse_args(argv)
    t_final = 30.0 if args.quick else 50.0
    run = causal_run(args.n, args.beta, t_final, 60 if args.quick else 200, seed=1)
    print(f"causal mask on S^2, n = {args.n}, beta = {args.beta:g}, t = {t_final:g}: the "
          f"first token moved {run['first_moved']:.1e}; max_i |x_i - x_1| = "
          f"{run['final_distance']:.1e}; fitted rate of |x_2 - x_1|: {run['rate']:.5f} "
          f"(linearisation: "
          f"{PREDICTED_RATE})")

    with style():  # the package's figure style
        fig = Figure(figsize=(9.5, 4.0), layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot(1, 2, 1, projection="3d", computed_zorder=False)
        u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 37), np.linspace(0, np.pi, 19))
        ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v),
                          color="0.85", lw=0.4)
        x = run["positions"]
        # one colour per token index, from a colour bar (any n): tokens 2..n
        colour = colormaps["viridis"](np.linspace(0.0, 0.9, max(x.shape[1] - 1, 1)))
        for i in range(1, x.shape[1]):
            ax.plot(*x[:, i].T, color=colour[i - 1], lw=1.0)
            ax.scatter(*x[0, i], color=colour[i - 1], s=10,
                       label="start of token i (t = 0)" if i == 1 else None)
        ax.scatter(*x[0, 0], color="k", s=140, marker="*", depthshade=False, zorder=10,
                   label="token 1 (fixed)")
        ax.set_box_aspect((1, 1, 1))
        ax.set_xlabel("$x_1$", labelpad=-8)
        ax.set_ylabel("$x_2$", labelpad=-8)
        ax.set_zlabel("$x_3$", labelpad=-8)
        ax.tick_params(labelsize=6, pad=-2)
        for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
            axis.set_ticks([-1, 0, 1])
        ax.legend(frameon=False, loc="upper left")
        ax.set_title(f"Causal mask, Q = K = V = I, β = {args.beta:g}: trajectories")
        ax = fig.add_subplot(1, 2, 2)
        t, dist = run["times"], run["distance"]
        for i in range(1, dist.shape[1]):
            keep = dist[:, i] > 0
            ax.semilogy(t[keep], dist[keep, i], color=colour[i - 1], lw=1.0,
                        label="token i (colour bar)" if i == 1 else None)
        ref = dist[-1, 1] * np.exp(-PREDICTED_RATE * (t - t[-1]))
        ax.semilogy(t, ref, "k--", lw=1.0, label=r"$e^{-t/2}$ (linearisation)")
        ax.set_ylim(max(1e-13, 0.1 * dist[-1, 1:].min()), 3.0)
        ax.set_xlabel("time t")
        ax.set_ylabel(r"distance to the first token $|x_i - x_1|$")
        ax.set_title(f"n = {args.n}: every token reaches token 1 (token 2's fitted rate "
                     f"{run['rate']:.3f})", fontsize=9)
        ax.legend(frameon=False, fontsize=8)
        n = x.shape[1]
        steps = BoundaryNorm(np.arange(1.5, n + 1), n - 1)  # one band per token 2..n
        bar = fig.colorbar(ScalarMappable(steps, ListedColormap(colour)), ax=ax, pad=0.02,
                           ticks=range(2, n + 1))
        bar.set_label("token i (both panels)")
        fig.savefig(args.out, dpi=150)
    return run


if __name__ == "__main__":
    main()
