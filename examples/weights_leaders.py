"""Leaders at the vertices of the limit polytope
=============================================

Leaders: the tokens at the vertices of the limit polytope capture all the attention
([GLPR23, Figure 5, Theorem 3.1 and the paragraph after it on leaders];
docs/weights.md).

n = 40 tokens in R^3, Q = K = V = I, pure self-attention, integrated as the rescaled
tokens z = e^{-t} x (dz_i/dt = sum_j P_ij(t) (z_j - z_i), P taken at x = e^t z, never
formed). The tokens converge to the vertices of a convex polytope K; the tokens sitting at
the vertices are the leaders: the limit P* = lim P(t) is Boolean, its non-zero columns are
the leaders (one per vertex), and rank P* = the number of vertices.

Run ``python examples/weights_leaders.py`` (``--quick``: fewer saved times); writes
``weights_leaders.png`` (``--out``) and prints the vertices, the leaders, the rank and the
Boolean distance of P at the final time.
"""
from __future__ import annotations

import argparse

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from meanfield.metrics.attention import (
    boolean_distance, leader_count, leaders, nearest_boolean, numerical_rank)
from meanfield.metrics.limit_geometry import groups, hull_vertices, vertex_distance
from meanfield.model.particles import simulate
from meanfield.model.weighted_attention import Head
from meanfield.model.weighted_particles import RescaledParticles
from meanfield.plotting import style
from meanfield.plotting.weights.panels import attention_snapshots, token_paths

T_FINAL = 12.0
TOLERANCE = 1e-10  # error per step of the adaptive RK4 (step doubling)
MERGE = 1e-2  # tokens within this of each other at t_final are one cluster


def leaders_run(n: int, seed: int, saves: int) -> dict:
    d = 3
    head = Head.identity(d)
    z0 = np.random.default_rng(seed).standard_normal((n, d))
    run = simulate(RescaledParticles(head), z0,
                   np.linspace(0.0, T_FINAL, saves + 1)[1:], dt=None,
                   tolerance=TOLERANCE)
    times, z = run.times, run.positions
    model = RescaledParticles(head)
    p = np.stack([model.attention(zk, t)[0] for zk, t in zip(z, times)])
    vertices = hull_vertices(z[-1], MERGE)
    lead = leaders(p[-1])
    label = groups(z[-1], MERGE)
    return {"times": times, "z": z, "attention": p, "vertices": vertices,
            "leaders": lead, "labels": label,
            # every cluster at a vertex has exactly one leader, and every leader sits at
            # a vertex: the same clusters
            "leaders_are_vertices": bool(
                np.array_equal(np.sort(label[lead]), np.sort(label[vertices]))),
            "rank": numerical_rank(p[-1]), "ranks": numerical_rank(p),
            "leader_counts": leader_count(p), "distance": boolean_distance(p),
            "vertex_distance": float(vertex_distance(z[-1], vertices).max()),
            # each row of the nearest Boolean matrix points at the leader of its cluster
            "rows_attend_own_leader": bool(np.all(
                label[np.argmax(nearest_boolean(p[-1]), axis=1)] == label))}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="weights_leaders.png")
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args(argv)
    run = leaders_run(args.n, args.seed, 48 if args.quick else 240)
    print(f"Q = K = V = I, d = 3, n = {args.n}, t = {T_FINAL:g}: {run['vertices'].size} "
          f"vertices, every token within {run['vertex_distance']:.1e} of one; leaders "
          f"{run['leaders'].tolist()} (at the vertices: {run['leaders_are_vertices']}); "
          f"rank of P {run['rank']}; Boolean distance {run['distance'][-1]:.1e}; every "
          f"token attends to its own cluster's leader: {run['rows_attend_own_leader']}")

    t = run["times"]
    with style():  # the package's figure style, for its panels and ours
        fig = Figure(figsize=(10.0, 7.2), layout="constrained")
        FigureCanvasAgg(fig)
        top, bottom = fig.subfigures(2, 1, height_ratios=[1.3, 1.0])
        left, right = top.subfigures(1, 2, width_ratios=[1.0, 1.25])
        ax = left.add_subplot(projection="3d")
        token_paths(run["z"], ax, times=t, tolerance=MERGE)
        ax.set_title(f"n = {args.n} rescaled tokens, Q = K = V = I: paths coloured\nby "
                     f"the vertex (leader) they reach (grey: t = 0)")
        ax = right.add_subplot()
        ax.plot(t, run["ranks"], lw=1.2, label="numerical rank of P (tolerance 1e-6)")
        ax.plot(t, run["leader_counts"], lw=1.2, ls="--",
                label="leaders: j with max$_i$ P$_{ij}$ > 1/2")
        ax.axhline(run["vertices"].size, color="0.5", lw=0.8, ls=":",
                   label=f"vertices of the limit polytope: {run['vertices'].size}")
        ax.set_yscale("log")
        count = int(run["vertices"].size)  # a tick at the vertex count (5 moves aside)
        ax.set_yticks(sorted({1, 2, 10, 20, args.n, count}
                             | ({5} if abs(count - 5) > 1 else set())))
        ax.yaxis.set_major_formatter("{x:.0f}")
        ax.set_xlabel("time t")
        ax.set_ylabel("count")
        ax.set_title("rank and leaders of P(t):\nboth end at the number of vertices")
        ax.legend()
        attention_snapshots(run["z"], times=t, attention=run["attention"],
                            at=(0.0, 1.0, 2.0, T_FINAL), fig=bottom)
        fig.savefig(args.out, dpi=150)
    return run


if __name__ == "__main__":
    main()
