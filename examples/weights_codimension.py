"""Parallel subspaces of codimension k: the codimension conjecture
===============================================================

Rescaled tokens approach at most three parallel subspaces of codimension k ([GLPR23,
Figure 7a and Conjecture 4.2]; docs/weights.md).

n = 40 tokens in R^3, Q = K = I, V a random symmetric matrix with eigenvalues
{1.96, 0.25, -0.22} (Figure 7a's): k = 2 eigenvalues are positive. Written in V's
eigenbasis, the coordinates c_j(z) obey dc_j(z_i)/dt = lambda_j sum_l P_il (c_j(z_l) -
c_j(z_i)) exactly, so once P is Boolean (each token attends to its leader) the spread of
c_j about the leader decays like e^(-lambda_j t) for lambda_j > 0 and grows like
e^(-lambda_j t) for lambda_j < 0. Conjecture 4.2: the k-vectors (c_1, c_2) of the tokens
end at no more than three values (``meanfield.metrics.codimension``): the tokens end on at
most three lines parallel to phi_3. The second coordinate converges slowly (rate 0.25):
by t = 15 its spread has fallen by e^(-3.75) ~ 0.02 only; the count of distinct values
at a tolerance falls with it.

Run ``python examples/weights_codimension.py`` (``--quick``: fewer saved times); writes
``weights_codimension.png`` (``--out``) and prints the values, their count and the fitted
rates of the spreads.
"""
from __future__ import annotations

import argparse

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from meanfield.config.weights import weight_matrix
from meanfield.metrics.codimension import (
    codimension_values, group_spread, positive_coordinate_map)
from meanfield.model.particles import simulate
from meanfield.model.weighted_attention import Head
from meanfield.model.weighted_particles import RescaledParticles
from meanfield.plotting import style

EIGENVALUES = [1.96, 0.25, -0.22]  # Figure 7a's
T_FINAL = 15.0  # later the logits (e^(2 lambda_1 t)) make P switch between equal leaders
FIT_FROM = 7.5  # P is Boolean by then
TOLERANCE = 1e-10  # error per step of the adaptive RK4 (step doubling)
MERGE = 0.5  # k-vectors within this at t_final are one value (the slow coordinate)


def codimension_run(n: int, seed: int, saves: int) -> dict:
    """The tokens of Figure 7a, their positive eigen-coordinates, the groups at t_final
    and each coordinate's spread within the groups over time (with its fitted rate)."""
    d = 3
    value = weight_matrix({"kind": "symmetric", "eigenvalues": EIGENVALUES, "seed": seed},
                          d, "weights.value")
    z0 = np.random.default_rng(seed).standard_normal((n, d))
    run = simulate(RescaledParticles(Head(np.eye(d), np.eye(d), value)), z0,
                   np.linspace(0.0, T_FINAL, saves + 1)[1:], dt=None, tolerance=TOLERANCE)
    times, z = run.times, run.positions
    w, lam = positive_coordinate_map(value)
    c = z @ w.T  # (time, token, k)
    values, labels = codimension_values(z[-1], value, MERGE)
    spread = group_spread(c, labels)  # (time, k)
    late = times >= FIT_FROM
    rates = [-np.polyfit(times[late], np.log(spread[late, j]), 1)[0]
             for j in range(c.shape[-1])]
    # the divergent coordinate (negative eigenvalue): its spread within the groups grows
    all_lam, right = np.linalg.eigh(value)
    negative = z @ right[:, all_lam < 0]
    return {"times": times, "z": z, "coordinates": c, "eigenvalues": np.real(lam),
            "values": values, "labels": labels, "spread": spread,
            "rates": np.array(rates), "negative": negative[..., 0]}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="weights_codimension.png")
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    run = codimension_run(args.n, args.seed, 30 if args.quick else 150)
    t, c, lam = run["times"], run["coordinates"], run["eigenvalues"]
    shown = "; ".join("(" + ", ".join(f"{x:.3f}" for x in v) + ")" for v in run["values"])
    print(f"Q = K = I, V symmetric with eigenvalues {EIGENVALUES}, n = {args.n}, "
          f"t = {T_FINAL:g}: {len(run['values'])} values of (c_1, c_2): {shown}; spreads "
          f"{', '.join(f'{s:.2e}' for s in run['spread'][-1])}, fitted rates "
          f"{', '.join(f'{r:.4f}' for r in run['rates'])} (lambda = "
          f"{', '.join(f'{x:g}' for x in lam)})")

    with style():
        fig = Figure(figsize=(11.0, 4.0), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(1, 3)
        colours = [f"C{(g + 2) % 10}" for g in run["labels"]]  # (C0, C1: the spreads)
        for j, ax in enumerate(axes[:2]):
            for i in range(c.shape[1]):
                ax.plot(t, c[:, i, j], lw=0.6, color=colours[i])
            ax.set_xlabel("time t")
            ax.set_ylabel(f"c{'₁₂'[j]}(zᵢ), along φ{'₁₂'[j]}")
            ax.set_title(f"coordinate along φ{'₁₂'[j]} (λ = {lam[j]:g})")
        ax = axes[2]
        for j in range(c.shape[-1]):
            ax.semilogy(t, run["spread"][:, j], lw=1.2, color=f"C{j}",
                        label=f"c{'₁₂'[j]}: fit {run['rates'][j]:.3f}")
            ax.semilogy(t, run["spread"][-1, j] * np.exp(-lam[j] * (t - t[-1])), "--",
                        lw=0.8, color=f"C{j}", label=f"e^(−{lam[j]:g} t)")
        neg = run["negative"]
        spread_neg = np.zeros(len(t))
        for g in np.unique(run["labels"]):
            part = neg[:, run["labels"] == g]
            spread_neg = np.maximum(spread_neg, np.ptp(part, axis=1))
        ax.semilogy(t, spread_neg, lw=1.0, color="0.4",
                    label=f"c₃ (λ = {EIGENVALUES[2]:g}): diverges")
        ax.set_xlabel("time t")
        ax.set_ylabel("largest spread within a group")
        ax.set_title("spreads at the rates λⱼ")
        ax.legend(fontsize=7)
        fig.suptitle(f"Q = K = I, V symmetric with eigenvalues {EIGENVALUES}, n = "
                     f"{args.n} rescaled tokens in R³:\n{len(run['values'])} values of "
                     "(c₁, c₂), lines of codimension k = 2 (Conjecture 4.2, Figure 7a); "
                     "colours: the groups at t = 15")
        fig.savefig(args.out, dpi=150)
    return run


if __name__ == "__main__":
    main()
