"""Sinkhorn attention against softmax attention
============================================

Doubly stochastic (Sinkhorn) attention beside softmax attention on S^2: the cluster count
over time, by single linkage and by the rank of the matrix of close pairs, and the
potential G that Sinkhorn attention descends.

Sinkhorn attention ([SABP22]) replaces the softmax rows of P_ij ∝ e^{beta <x_i, x_j>} by
the doubly stochastic scaling P = diag(u) K diag(u), u_i (K u)_i = 1. On the sphere with
Q = K = V = I the tokens follow the gradient descent of G = sum_i log u_i, with
``dG/dt = -beta sum_i |dx_i/dt|^2`` (docs/conventions.md derives it); whether they cluster
is left open by [GLPR25, Remark 3.5]. Here both rules start from the same uniform tokens
(``particles.attention = "softmax"`` and ``"sinkhorn"`` of one config); the clusters are
counted by ``particles.cluster_method = "linkage"`` (connected components of the tokens
closer than a chord of 0.01) and ``"rank"`` (the rank of that 0/1 matrix, the count of
the authors' code, [GLPR25, §6.3]). Measured (full run, n = 128, beta = 9 to t = 300,
seed 0): both rules gather the tokens on the same time scale (t ~ 4-13); softmax
attention then holds 4 clusters to t = 300, while Sinkhorn attention forms 7 whose
merges go on one at a time (near t = 15, 28, 85 and 250; 3 left at t = 300), each a
step down of G: a staircase of metastable states like softmax attention's at larger
beta. While the tokens gather the rank exceeds the single-linkage count (chains of
tokens; rank >= components always), and the two agree once the clusters are tight.
G(t) - G(0) matches the integral to 1e-3 (saves 0.5 apart through the merges; 1e-4 in
the quick run, saves 0.25 apart).

Run ``python examples/sinkhorn_attention.py`` (``--quick``: 24 tokens, beta = 4, to t =
20); writes ``sinkhorn_attention.png`` (``--out``) and prints the final cluster counts,
the largest increase of G between saves and the relative error of
``G(t) - G(0) = -beta int_0^t sum_i |dx_i/dt|^2`` (Simpson's rule on the saves).
"""
from __future__ import annotations

import argparse

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from scipy.integrate import simpson

import meanfield
from meanfield.metrics.cluster_rank import count_clusters
from meanfield.plotting import style

THRESHOLD = 1e-2  # chordal distance of particles.cluster_threshold (the default)


def config(attention: str, quick: bool) -> dict:
    """The particle run of one attention rule."""
    t_final = 20.0 if quick else 300.0
    return {"domain": {"geometry": "sphere"}, "model": {"beta": 4.0 if quick else 9.0},
            "initial": {"kind": "uniform"},
            "time": {"t_final": t_final, "save_every": t_final / (80 if quick else 600),
                     "tolerance": 1e-9},
            # save_attention: both rules run the dense attention model (the same code but
            # for the normalization of P; at small n faster than the kernel sums), and
            # P of every frame is kept (ds.attention)
            "particles": {"n": 24 if quick else 128, "seed": 0, "attention": attention,
                          "save_attention": True}}


def counts(ds) -> dict:
    """Cluster counts of every saved frame by both methods."""
    x = ds.position.values
    return {m: np.array([count_clusters(f, THRESHOLD, m) for f in x])
            for m in ("linkage", "rank")}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="sinkhorn_attention.png")
    args = parser.parse_args(argv)
    runs = {a: meanfield.particles(config(a, args.quick)) for a in ("softmax", "sinkhorn")}
    found = {a: counts(ds) for a, ds in runs.items()}
    ds = runs["sinkhorn"]
    beta, t = float(ds.attrs["beta"]), ds.time.values
    g, speed = ds.sinkhorn_potential.values, ds.speed_squared_sum.values
    dissipated = -beta * np.array([simpson(speed[:k + 1], x=t[:k + 1])
                                   for k in range(1, t.size)])
    identity = float(np.max(np.abs((g[1:] - g[0]) - dissipated)) / abs(g[-1] - g[0]))
    out = {"counts": found, "time": t, "potential": g, "increase": float(np.diff(g).max()),
           "identity_error": identity, "marginal_error": float(ds.sinkhorn_error.max())}
    for a, c in found.items():
        print(f"{a:8s} n = {ds.attrs['n']}, beta = {beta:g}: clusters at t = {t[-1]:g}: "
              f"{c['linkage'][-1]} (linkage), {c['rank'][-1]} (rank); rank >= linkage "
              f"at every save: {bool(np.all(c['rank'] >= c['linkage']))}")
    print(f"Sinkhorn: largest increase of G between saves {out['increase']:.1e}; "
          f"G(t) - G(0) = -beta int sum |x'|^2 to {identity:.1e} (relative); doubly "
          f"stochastic to {out['marginal_error']:.1e}")

    with style():
        fig = Figure(figsize=(10.0, 4.0), layout="constrained")
        FigureCanvasAgg(fig)
        ax, right = fig.subplots(1, 2)
        for a, colour in (("softmax", "C0"), ("sinkhorn", "C3")):
            for m, line in (("linkage", "-"), ("rank", "--")):
                ax.step(t[1:], found[a][m][1:], where="post", color=colour, ls=line,
                        label=f"{a}, {m}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("time t")
        ax.set_ylabel("clusters")
        ax.set_title(f"n = {ds.attrs['n']} on $S^2$, $\\beta = {beta:g}$: cluster count "
                     "(chord < 0.01)", fontsize=10)
        ax.legend(frameon=False, fontsize=8)
        right.plot(t, g - g[0], color="C3", label="$G(t) - G(0)$")
        right.plot(t[1:], dissipated, color="k", ls=":",
                   label=r"$-\beta\int_0^t \sum_i |\dot x_i|^2$ (Simpson)")
        right.set_xlabel("time t")
        right.set_ylabel(r"$G(t) - G(0)$, $G = \sum_i \log u_i$")
        right.set_title("Sinkhorn attention descends G", fontsize=10)
        right.legend(frameon=False, fontsize=8)
        fig.savefig(args.out, dpi=150)
    return out


if __name__ == "__main__":
    main()
