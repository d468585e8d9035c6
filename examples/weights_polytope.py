"""Rescaled tokens cluster at the vertices of a polytope
=====================================================

Rescaled tokens cluster at the vertices of a convex polytope ([GLPR23, Figure 1
and Theorem 3.1]; docs/weights.md).

Pure self-attention with V = I and Q^T K positive definite (here Q = I and K a random
symmetric matrix with positive eigenvalues): the tokens x grow like e^t, so the example
integrates the rescaled tokens z = e^{-t} x, dz_i/dt = sum_j P_ij(t) (z_j - z_i) with P
taken at x = e^t z (never formed). Theorem 3.1: every z_i tends to 0 or to the boundary
of a convex polytope K, and for almost every start to a vertex of K (a leader), with far
fewer vertices than tokens. Once P is Boolean (doubly exponentially fast) each token
follows dz_i/dt = z_leader - z_i, so the distance to the nearest vertex decays like
e^{-t} (rate lambda(V) = 1).

Run ``python examples/weights_polytope.py`` (``--quick``: fewer tokens and saved times);
writes ``weights_polytope.png`` (``--out``) and prints, for d = 2 and d = 3, the largest
distance of a token to the nearest vertex, the number of vertices and the fitted rate.
"""
from __future__ import annotations

import argparse

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from meanfield.config.weights import weight_matrix
from meanfield.metrics.limit_geometry import hull_vertices, vertex_distance
from meanfield.model.particles import simulate
from meanfield.model.weighted_attention import Head
from meanfield.model.weighted_particles import RescaledParticles
from meanfield.plotting import style
from meanfield.plotting.weights.panels import polytope_plot, token_paths

T_FINAL = 12.0
FIT_FROM = 6.0  # P is Boolean to round-off by then: the linear regime of rate 1
TOLERANCE = 1e-10  # error per step of the adaptive RK4 (step doubling)
MERGE = 1e-2  # tokens within this of each other at t_final are one cluster
KEY_EIGENVALUES = {2: [0.8, 1.25], 3: [0.8, 1.0, 1.25]}


def polytope_run(n: int, d: int, seed: int, saves: int) -> dict:
    key = weight_matrix({"kind": "symmetric", "eigenvalues": KEY_EIGENVALUES[d],
                         "seed": seed}, d, "weights.key")
    head = Head(np.eye(d), key, np.eye(d))  # Q^T K = K, positive definite
    z0 = np.random.default_rng(seed).standard_normal((n, d))
    run = simulate(RescaledParticles(head), z0,
                   np.linspace(0.0, T_FINAL, saves + 1)[1:], dt=None,
                   tolerance=TOLERANCE)
    times, z = run.times, run.positions
    vertices = hull_vertices(z[-1], MERGE)
    # each token's distance to the nearest leader (the tokens at the final vertices)
    distance = np.array([vertex_distance(zk, vertices).max() for zk in z])
    window = (times >= FIT_FROM) & (distance > 1e-9)
    rate = -np.polyfit(times[window], np.log(distance[window]), 1)[0]
    return {"times": times, "z": z, "vertices": vertices, "distance": distance,
            "rate": float(rate), "final_distance": float(distance[-1]),
            "count": int(vertices.size), "n": n}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="weights_polytope.png")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    n = 40 if args.quick else 100
    saves = 48 if args.quick else 120
    runs = {d: polytope_run(n, d, args.seed, saves) for d in (2, 3)}
    for d, run in runs.items():
        print(f"V = I, Q = I, K symmetric with eigenvalues {KEY_EIGENVALUES[d]}, d = {d}, "
              f"n = {n}, t = {T_FINAL:g}: {run['count']} vertices; every token within "
              f"{run['final_distance']:.1e} of one; fitted rate {run['rate']:.4f} "
              f"(predicted 1)")

    with style():  # the package's figure style, for its panels and ours
        fig = Figure(figsize=(10.0, 6.6), layout="constrained")
        FigureCanvasAgg(fig)
        grid = fig.add_gridspec(2, 3, height_ratios=[1.2, 1.0])
        panels = [(token_paths, 3, fig.add_subplot(grid[0, 0], projection="3d")),
                  (polytope_plot, 3, fig.add_subplot(grid[0, 1], projection="3d")),
                  (polytope_plot, 2, fig.add_subplot(grid[0, 2]))]
        for draw, d, ax in panels:
            draw(runs[d]["z"], ax, times=runs[d]["times"], tolerance=MERGE)
            ax.set_title(f"d = {d}: {ax.get_title()}")
        ax = fig.add_subplot(grid[1, :])
        for d, run in runs.items():
            ax.semilogy(run["times"], run["distance"], lw=1.2,
                        label=f"d = {d}: {run['count']} vertices, fitted rate "
                              f"{run['rate']:.3f}")
        t = runs[3]["times"]
        ax.semilogy(t, runs[3]["distance"][-1] * np.exp(-(t - t[-1])), "k--", lw=0.8,
                    label=r"$e^{-t}$")
        ax.set_xlabel("time t")
        ax.set_ylabel("maxᵢ distance to the nearest vertex")
        ax.set_title("every rescaled token reaches a vertex (Theorem 3.1), at rate "
                     "λ(V) = 1")
        ax.legend()
        fig.suptitle(f"V = I, QᵀK ≻ 0, n = {n}: the rescaled tokens $z = e^{{-t}}x$ "
                     "cluster at the vertices of a convex polytope (Figure 1)")
        fig.savefig(args.out, dpi=150)
    return runs


if __name__ == "__main__":
    main()
