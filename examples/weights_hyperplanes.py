"""Rescaled tokens on at most three parallel hyperplanes
=====================================================

Rescaled tokens cluster on at most three parallel hyperplanes ([GLPR23, Figure 6
and Theorem 4.1]; docs/weights.md).

n = 40 tokens in R^2, Q = K = I, V a random symmetric matrix with eigenvalues
{1.35, -0.07} (a good triple: the top eigenvalue is real, positive and simple, and
<Q phi_1, K phi_1> = 1 > 0). Pure self-attention, integrated as the rescaled tokens
z = e^{-tV} x: dz_i/dt = sum_j P_ij(t) V (z_j - z_i), P taken at x = e^{tV} z (never
formed). Theorem 4.1: the coordinate c_i = <z_i, phi_1> of every token tends to one of at
most three values, so the tokens end on at most three lines perpendicular to phi_1
(typically two; the third, through the origin, needs a non-generic start). The
coordinate obeys dc_i/dt = lambda_1 sum_j P_ij (c_j - c_i) exactly, so once P is Boolean
the spread about each value decays like e^{-lambda_1 t}; along phi_2 (eigenvalue -0.07)
the tokens drift apart slowly.

Run ``python examples/weights_hyperplanes.py`` (``--quick``: fewer saved times); writes
``weights_hyperplanes.png`` (``--out``) and prints the values, their count and the rate.
"""
from __future__ import annotations

import argparse

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from meanfield.config.weights import weight_matrix
from meanfield.metrics.limit_geometry import (
    hyperplane_values, leading_coordinates, leading_eigenvector)
from meanfield.model.particles import simulate
from meanfield.model.weighted_attention import Head
from meanfield.model.weighted_particles import RescaledParticles
from meanfield.plotting import style
from meanfield.plotting.weights.panels import hyperplane_plot, token_paths

EIGENVALUES = [1.35, -0.07]  # Figure 6's
T_FINAL = 10.0
FIT_FROM = 5.0  # P is Boolean to round-off by then
TOLERANCE = 1e-10  # error per step of the adaptive RK4 (step doubling)
MERGE = 1e-2  # coordinates within this at t_final are one value


def hyperplane_run(n: int, seed: int, saves: int) -> dict:
    d = 2
    value = weight_matrix({"kind": "symmetric", "eigenvalues": EIGENVALUES, "seed": seed},
                          d, "weights.value")
    head = Head(np.eye(d), np.eye(d), value)
    lam, phi, _ = leading_eigenvector(value)
    z0 = np.random.default_rng(seed).standard_normal((n, d))
    run = simulate(RescaledParticles(head), z0,
                   np.linspace(0.0, T_FINAL, saves + 1)[1:], dt=None,
                   tolerance=TOLERANCE)
    times, z = run.times, run.positions
    c = leading_coordinates(z, value)  # (time, token)
    values = hyperplane_values(z[-1], value, MERGE)
    nearest = np.argmin(np.abs(c[-1][:, None] - values[None, :]), axis=1)
    # each token's distance (along phi_1) to its final value's group mean, over time
    spread = np.zeros(len(times))
    for k in range(values.size):
        members = c[:, nearest == k]
        spread = np.maximum(spread, np.abs(members - members.mean(axis=1,
                                                                  keepdims=True)).max(1))
    window = (times >= FIT_FROM) & (spread > 1e-9)
    rate = -np.polyfit(times[window], np.log(spread[window]), 1)[0]
    return {"times": times, "z": z, "coordinate": c, "values": values, "phi": phi,
            "lambda": lam, "value_matrix": value, "spread": spread,
            "final_spread": float(spread[-1]), "rate": float(rate), "group": nearest}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="weights_hyperplanes.png")
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    run = hyperplane_run(args.n, args.seed, 50 if args.quick else 200)
    phi = run["phi"]
    print(f"Q = K = I, V symmetric with eigenvalues {EIGENVALUES}, phi_1 = "
          f"({phi[0]:.3f}, {phi[1]:.3f}), n = {args.n}, t = {T_FINAL:g}: "
          f"{run['values'].size} hyperplanes <z, phi_1> = "
          f"{', '.join(f'{v:.4f}' for v in run['values'])}; every token within "
          f"{run['final_spread']:.1e} of its hyperplane; fitted rate {run['rate']:.4f} "
          f"(lambda_1 = {run['lambda']:g})")

    t = run["times"]
    with style():  # the package's figure style, for its panels and ours
        fig = Figure(figsize=(10.0, 4.2), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(1, 3, width_ratios=[1.1, 1.0, 1.0])
        token_paths(run["z"], axes[0], times=t, value_matrix=run["value_matrix"],
                    tolerance=MERGE)
        ax = axes[0]
        ax.annotate("", xy=1.5 * phi, xytext=(0, 0), zorder=10,
                    arrowprops={"arrowstyle": "-|>", "color": "C3", "lw": 2.2})
        ax.text(*(1.5 * phi + np.array([0.15, -0.35])), "φ₁", color="C3", fontsize=11,
                zorder=10)
        ax.set_title("token paths and the limit lines\n⟨z, φ₁⟩ = value (dashed)")
        hyperplane_plot(run["z"], axes[1], times=t, value_matrix=run["value_matrix"],
                        tolerance=MERGE)
        axes[1].set_title(f"{axes[1].get_title()}\n(at most 3: Theorem 4.1)")
        ax = axes[2]
        ax.semilogy(t, run["spread"], lw=1.2, label=f"measured (fit: {run['rate']:.3f})")
        ax.semilogy(t, run["spread"][-1] * np.exp(-run["lambda"] * (t - t[-1])), "k--",
                    lw=0.8, label=rf"$e^{{-\lambda_1 t}}$, λ₁ = {run['lambda']:g}")
        ax.set_xlabel("time t")
        ax.set_ylabel("maxᵢ distance of ⟨zᵢ, φ₁⟩ to its value")
        ax.set_title("spread about the hyperplanes,\nat rate λ₁")
        ax.legend()
        fig.suptitle(f"Q = K = I, V symmetric with eigenvalues {EIGENVALUES[0]:g}, "
                     f"{EIGENVALUES[1]:g}, n = {args.n} rescaled tokens in R²: clustering "
                     "along φ₁ (Figure 6)")
        fig.savefig(args.out, dpi=150)
    return run


if __name__ == "__main__":
    main()
