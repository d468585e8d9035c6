"""A polytope times a subspace: a paranormal value matrix
======================================================

Rescaled tokens approach (dK u {0}) x G ([GLPR23, Figure 8 and Theorem 5.1]; docs/weights.md).

n = 40 tokens in R^3, Q = K = I, V = diag(1, 1, -1/2): V is paranormal, V = 1 on
F = span(e_1, e_2) and -1/2 on G = span(e_3) (spectral radius 1/2 < 1). Pure
self-attention, integrated as the rescaled tokens z = e^(-tV) x. The F parts move by
convex combinations, d/dt z_F,i = sum_j P_ij (z_F,j - z_F,i), so their convex hull shrinks
to a polytope K in F; Theorem 5.1: every token approaches (dK u {0}) x G, the boundary
of K (or the origin) in F, anything along G. The G parts diverge (like e^(t/2): each
token is pushed away from its leader along e_3). ``meanfield.metrics.paranormal``
measures each token's distance to that set, with K the hull of the tokens' F parts at
that time (as [GLPR23, Figure 8] draws it); once P is Boolean it decays like e^(-t) (each token
follows its leader at the rate lambda = 1 of V on F).

Run ``python examples/weights_paranormal.py`` (``--quick``: fewer saved times); writes
``weights_paranormal.png`` (``--out``) and prints the distance at t = 15, its fitted rate
and the vertices of K.
"""
from __future__ import annotations

import argparse

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from meanfield.metrics.paranormal import (
    paranormal_split, polytope_vertices, theorem51_distance)
from meanfield.model.particles import simulate
from meanfield.model.weighted_attention import Head
from meanfield.model.weighted_particles import RescaledParticles
from meanfield.plotting import style

VALUE = np.diag([1.0, 1.0, -0.5])  # Figure 8's
T_FINAL = 15.0
MERGE = 1e-3  # tokens of K's vertices closer than this at t_final are one vertex
FIT_FROM = 7.5  # P is Boolean to round-off by then (the distance decays at rate 1)
TOLERANCE = 1e-10  # error per step of the adaptive RK4 (step doubling)


def paranormal_run(n: int, seed: int, saves: int) -> dict:
    """The rescaled tokens of Figure 8 and their distance to (dK u {0}) x G over time."""
    head = Head(np.eye(3), np.eye(3), VALUE)
    split = paranormal_split(VALUE)
    z0 = np.random.default_rng(seed).standard_normal((n, 3))
    run = simulate(RescaledParticles(head), z0, np.linspace(0.0, T_FINAL, saves + 1)[1:],
                   dt=None, tolerance=TOLERANCE)
    times, z = run.times, run.positions
    distance = np.array([theorem51_distance(zk, VALUE, split=split).max() for zk in z])
    window = times >= FIT_FROM
    rate = -np.polyfit(times[window], np.log(distance[window]), 1)[0]
    return {"times": times, "z": z, "distance": distance, "rate": float(rate),
            "final_distance": float(distance[-1]), "split": split,
            "vertices": polytope_vertices(z[-1], VALUE, MERGE, split=split)}


def _hull_edges(points: np.ndarray, vertices: np.ndarray) -> np.ndarray:
    """The vertices of a planar hull in order, closed (for drawing)."""
    p = points[vertices]
    centre = p.mean(axis=0)
    order = np.argsort(np.arctan2(p[:, 1] - centre[1], p[:, 0] - centre[0]))
    return np.vstack([p[order], p[order[:1]]])


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="weights_paranormal.png")
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    run = paranormal_run(args.n, args.seed, 30 if args.quick else 150)
    z, t = run["z"], run["times"]
    print(f"Q = K = I, V = diag(1, 1, -1/2), n = {args.n}, t = {T_FINAL:g}: every token "
          f"within {run['final_distance']:.2e} of (dK u {{0}}) x G; fitted rate "
          f"{run['rate']:.4f} (lambda = 1 on F); K has {run['vertices'].size} vertices"
          f"; |z_3| up to {np.abs(z[-1][:, 2]).max():.3g} (diverging along G)")

    with style():
        fig = Figure(figsize=(11.0, 4.0), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(1, 3)
        ax = axes[0]
        for i in range(z.shape[1]):
            ax.plot(z[:, i, 0], z[:, i, 1], lw=0.5, color="0.6", zorder=1)
        ax.scatter(z[0, :, 0], z[0, :, 1], s=10, facecolor="white", edgecolor="0.4",
                   label="t = 0", zorder=2)
        ax.scatter(z[-1, :, 0], z[-1, :, 1], s=18, color="C0",
                   label=f"t = {T_FINAL:g}", zorder=3)
        edges = _hull_edges(z[-1][:, :2], run["vertices"])
        ax.plot(edges[:, 0], edges[:, 1], color="C3", lw=1.2, label="∂K", zorder=2)
        ax.set_xlabel("z₁")
        ax.set_ylabel("z₂")
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_title("F = span(e₁, e₂): to the boundary of K")
        ax.legend(loc="best", fontsize=8)
        ax = axes[1]
        ax.plot(t, z[:, :, 2], lw=0.6, color="C2")
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_xlabel("time t")
        ax.set_ylabel("z₃ (eigenvalue −1/2)")
        ax.set_title("G = span(e₃): free, diverging")
        ax = axes[2]
        ax.semilogy(t[1:], run["distance"][1:], lw=1.2,
                    label=f"measured (fit: {run['rate']:.3f})")
        ax.semilogy(t, run["final_distance"] * np.exp(-(t - t[-1])), "k--", lw=0.8,
                    label="e^(−t)")
        ax.set_xlabel("time t")
        ax.set_ylabel("maxᵢ dist(zᵢ, (∂K ∪ {0}) × G)")
        ax.set_title("distance to the limit set")
        ax.legend()
        fig.suptitle(f"Q = K = I, V = diag(1, 1, −1/2), n = {args.n} rescaled tokens in "
                     "R³: a polytope in F times the subspace G (Theorem 5.1, Figure 8)")
        fig.savefig(args.out, dpi=150)
    return run


if __name__ == "__main__":
    main()
