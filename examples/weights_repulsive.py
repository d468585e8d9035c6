"""Repulsive self-attention on the sphere
======================================

Repulsive self-attention on the sphere (V = -I): tokens spread to the sharp
configurations that minimise the interaction energy (docs/weights.md).

Post-LN tokens with Q = K = I and V = -I follow dx_i/dt = -P^perp_{x_i} sum_j P_ij x_j,
P_ij ∝ e^{beta <x_i, x_j>}: the descent, with positive weights, of the interaction
energy E_beta = (1/2beta)(1/n^2) sum_ij e^{beta <x_i, x_j>}, so the energy never
increases. Its minimisers among n-point sets are the sharp configurations ([CK07];
[GLPR25, §9.1, Theorem 9.2]): n = 4 on S^2 the
regular tetrahedron (every pair cosine -1/3), n = 6 the octahedron (cosines 0 and -1),
n points on S^1 the regular polygon (gaps 2 pi / n).

Without normalization (pure self-attention in R^d, Q = K = I, V = -I) the tokens x
themselves collapse to the origin ([GLPR23, Table 1, Theorem C.5]). Once
they are small, P_ij ≈ (1 + <x_i, x_j> - <x_i, mean>)/n and the mean decays like e^{-t},
so dx_i/dt ≈ -S x_i with S = (1/n) sum_j x_j x_j^T; then dS/dt = -2 S^2, S(t) ~ I/(2t):
``max_i |x_i|`` falls like t^{-1/2} and 2t S(t) tends to I.

Run ``python examples/weights_repulsive.py`` (``--quick``: one seed per case, fewer saved
times); writes ``weights_repulsive.png`` (``--out``) and prints each case's distance to its
polytope and the largest energy increase between saves, and for the collapse the fitted
exponent of ``max_i |x_i|`` and the eigenvalues of 2t S(t).
"""
from __future__ import annotations

import argparse

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from meanfield.metrics.limit_geometry import origin_distance
from meanfield.model.particles import interaction_energy, simulate
from meanfield.model.weighted_attention import Head
from meanfield.model.weighted_particles import WeightedParticles
from meanfield.plotting import style
from meanfield.plotting.weights.panels import TokenSeries, origin_plot
from solvers.particles.direct import normalize_rows

BETA = 2.0
T_FINAL = {4: 100.0, 6: 100.0, 5: 120.0, 7: 120.0}
COLLAPSE_T = 200.0


def sharp_configuration(n: int, d: int) -> np.ndarray:
    """The exact minimiser: regular polygon on S^1, tetrahedron or octahedron on S^2."""
    if d == 2:
        a = 2 * np.pi * np.arange(n) / n
        return np.column_stack([np.cos(a), np.sin(a)])
    if n == 4:
        return np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]]) / np.sqrt(3)
    return np.vstack([np.eye(3), -np.eye(3)])


def polytope_error(x: np.ndarray) -> float:
    """How far the tokens are from their sharp configuration, from the pair cosines (S^2)
    or the sorted angular gaps (S^1): 0 exactly on it, whatever its rotation."""
    n, d = x.shape
    if d == 2:
        angles = np.sort(np.arctan2(x[:, 1], x[:, 0]))
        gaps = np.diff(np.r_[angles, angles[0] + 2 * np.pi])
        return float(np.max(np.abs(gaps - 2 * np.pi / n)))
    cos = (x @ x.T)[~np.eye(n, dtype=bool)]
    if n == 4:
        return float(np.max(np.abs(cos + 1 / 3)))
    # octahedron: every token has one antipode (-1) and four neighbours at 90 degrees (0)
    err = np.max(np.minimum(np.abs(cos), np.abs(cos + 1)))
    antipodal = np.sum(np.abs(cos + 1) < 0.5)
    return float(err) if antipodal == n else np.inf


def repulsive_run(n: int, d: int, seed: int, saves: int) -> dict:
    x0 = normalize_rows(np.random.default_rng(seed).standard_normal((n, d)))
    model = WeightedParticles(Head.identity(d, value=-1.0), beta=BETA)
    times = np.linspace(0.0, T_FINAL[n], saves + 1)[1:]
    run = simulate(model, x0, times, dt=None, tolerance=1e-12)
    energy = np.array([interaction_energy(x, BETA) for x in run.positions])
    floor = interaction_energy(sharp_configuration(n, d), BETA)
    return {"times": run.times, "positions": run.positions, "energy": energy,
            "gap": energy - floor, "error": polytope_error(run.positions[-1]),
            "increase": float(np.max(np.diff(energy)))}


def collapse_run(n: int, seed: int, saves: int) -> dict:
    """Pure self-attention in R^2 with V = -I: the tokens x (not rescaled) collapse."""
    x0 = np.random.default_rng(seed).standard_normal((n, 2))
    model = WeightedParticles(Head.identity(2, value=-1.0), on_sphere=False)
    run = simulate(model, x0, np.geomspace(0.1, COLLAPSE_T, saves), dt=None,
                   tolerance=1e-10)
    radius = origin_distance(run.positions)
    window = run.times >= COLLAPSE_T / 10  # the small-token regime, S ~ I/(2t)
    exponent = np.polyfit(np.log(run.times[window]), np.log(radius[window]), 1)[0]
    x = run.positions[-1]
    return {"times": run.times, "positions": run.positions, "radius": radius,
            "exponent": float(exponent),
            "final_radius": float(radius[-1]),
            "scaled_covariance": np.linalg.eigvalsh(2 * COLLAPSE_T * x.T @ x / n)}


def _sphere_panel(ax, run: dict, title: str, legend: bool = False) -> None:
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 37), np.linspace(0, np.pi, 19))
    ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v),
                      color="0.85", lw=0.4)
    path, x = run["positions"], run["positions"][-1]
    for i in range(x.shape[0]):
        ax.plot(*path[:, i].T, color=f"C{i}", lw=1.0, label="paths" if i == 0 else None)
        ax.scatter(*path[0, i], color=f"C{i}", s=10, marker="o", alpha=0.5,
                   label="t = 0" if i == 0 else None)
    ax.scatter(*x.T, color="k", s=22, depthshade=False,
               label=f"t = {run['times'][-1]:g}")
    cos = x @ x.T
    edges = [(i, j) for i in range(len(x)) for j in range(i + 1, len(x))
             if cos[i, j] > -0.9]  # the polytope's edges: pairs that are not antipodal
    for k, (i, j) in enumerate(edges):
        ax.plot(*np.stack([x[i], x[j]]).T, color="k", lw=0.8, ls="--",
                label="edges of the polytope" if k == 0 else None)
    if legend:
        ax.legend(loc="upper left", bbox_to_anchor=(-0.12, 1.04), fontsize=6.5,
                  frameon=False, handlelength=1.5)
    ax.set_box_aspect((1, 1, 1))
    ax.set_xlabel("$x_1$", labelpad=-8)
    ax.set_ylabel("$x_2$", labelpad=-8)
    ax.set_zlabel("$x_3$", labelpad=-8)
    ax.tick_params(labelsize=6, pad=-2)
    for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
        axis.set_ticks([-1, 0, 1])
    ax.set_title(title)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="weights_repulsive.png")
    args = parser.parse_args(argv)
    seeds = [0] if args.quick else [0, 1, 2, 3]
    saves = 50 if args.quick else 200
    cases = [(4, 3, "tetrahedron"), (6, 3, "octahedron"), (5, 2, "pentagon"),
             (7, 2, "heptagon")]
    runs, results = {}, {}
    for n, d, name in cases:
        found = [repulsive_run(n, d, seed, saves) for seed in seeds]
        runs[name] = found[0]
        results[name] = {"error": max(r["error"] for r in found),
                         "increase": max(r["increase"] for r in found),
                         "gap": min(float(r["gap"][-1]) for r in found),
                         "gap_min": min(float(r["gap"].min()) for r in found)}
        print(f"{name:11s} n = {n}, S^{d - 1}, beta = {BETA:g}, t = {T_FINAL[n]:g}, "
              f"{len(seeds)} seed(s): distance to the polytope {results[name]['error']:.1e}"
              f", E - E(polytope) = {results[name]['gap']:.1e}, largest energy increase "
              f"between saves {results[name]['increase']:.1e}")
    collapse = collapse_run(40, 0, 40 if args.quick else 120)
    results["collapse"] = collapse
    eig = ", ".join(f"{e:.4f}" for e in collapse["scaled_covariance"])
    print(f"collapse    n = 40 in R^2, pure, V = -I: max |x_i| = "
          f"{collapse['final_radius']:.3f} at t = {COLLAPSE_T:g}, fitted exponent "
          f"{collapse['exponent']:.4f} on [{COLLAPSE_T / 10:g}, {COLLAPSE_T:g}] (predicted "
          f"-1/2); eigenvalues of 2t S(t): {eig} (predicted 1)")

    with style():  # the package's figure style
        fig = Figure(figsize=(10.0, 7.0), layout="constrained")
        FigureCanvasAgg(fig)
        grid = fig.add_gridspec(2, 3)
        _sphere_panel(fig.add_subplot(grid[0, 0], projection="3d"), runs["tetrahedron"],
                      "n = 4 on $S^2$: regular tetrahedron", legend=True)
        _sphere_panel(fig.add_subplot(grid[0, 1], projection="3d"), runs["octahedron"],
                      "n = 6 on $S^2$: octahedron")
        ax = fig.add_subplot(grid[0, 2])
        run = runs["heptagon"]
        angles = np.unwrap(np.arctan2(run["positions"][..., 1], run["positions"][..., 0]),
                           axis=0)
        early = run["times"] <= 30.0  # the spreading is over by then
        ax.plot(run["times"][early], np.degrees(angles[early]), lw=1.0)
        ax.set_yticks(np.degrees(angles[-1]))  # the final angles: 360/7 apart
        ax.yaxis.set_major_formatter("{x:.0f}")
        ax.grid(axis="y", color="0.9")
        ax.set_xlabel("time t")
        ax.set_ylabel("token angle (degrees)")
        ax.set_title("n = 7 on $S^1$: equally spaced\n(ticks: the final angles, "
                     "360°/7 apart)")
        ax = fig.add_subplot(grid[1, :2])
        for name in ("tetrahedron", "octahedron", "pentagon", "heptagon"):
            run = runs[name]
            gap = run["gap"]
            keep = gap > 1e-15  # below: round-off of the energies (~1e-16)
            ax.semilogy(run["times"][keep], gap[keep], label=name)
        ax.set_xlabel("time t")
        ax.set_ylabel(r"$E_\beta(\mu^n_t) - E_\beta(\mathrm{polytope})$")
        ax.set_title(rf"Energy above the sharp configuration's (V = -I, Q = K = I, "
                     rf"$\beta = {BETA:g}$): it never increases", fontsize=10)
        ax.legend(frameon=False)
        ax = fig.add_subplot(grid[1, 2])
        # the tokens x themselves (a plain array would be read as rescaled tokens z)
        origin_plot(TokenSeries(collapse["times"], collapse["positions"], None, None,
                                rescaled=False), ax)
        ax.set_title(f"pure, V = −I in $R^2$: collapse to 0 (Thm C.5)\nn = 40: exponent "
                     f"{collapse['exponent']:.3f} (predicted −1/2)", fontsize=9)
        fig.savefig(args.out, dpi=150)
    return results


if __name__ == "__main__":
    main()
