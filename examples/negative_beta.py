"""Negative temperature on the circle: synchronisation and three stable clusters
=============================================================================

Tokens on S^1 at beta < 0 ([Rig25, Remark 2]; docs/conventions.md, "Negative beta").

At beta < 0 a token attends most to the tokens farthest from it, yet on the circle the
tokens still synchronise for every beta > -0.16 (proved in [PRY25], quoted in [Rig25,
Remark 2]). SA tokens from a uniform random start: at beta = -0.1 the order parameter
r goes to 1. At beta = -1, outside the proved range, a random start still synchronises
(slowly), but not every start does: three equal clusters 120 degrees apart are an
equilibrium at every beta, and a linearly stable one exactly when beta < -2/3 (the
linearisation's rates are -w(2 pi/3) times positive factors, w(s) = e^(beta cos s)
(cos s - beta sin^2 s)); a start near them stays there at beta = -1 (r stays near 0)
and leaves to synchronise at beta = -0.5. The last panel is the linear theory about the
uniform density: sigma_k = k^2 I_k(beta)/(beta I_0(beta)) (SA), positive for odd k and
negative for even k once beta < 0 (I_k(-b) = (-1)^k I_k(b)).

Run ``python examples/negative_beta.py`` (``--quick``: fewer tokens, shorter runs);
writes ``negative_beta.png`` (``--out``) and prints 1 - r at the end of each run.
"""
from __future__ import annotations

import argparse

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from meanfield.model.kernels import growth_rate
from meanfield.model.particles import AttentionParticles, order_parameter, simulate
from meanfield.plotting import style

PROVED = -0.16  # [PRY25] via [Rig25, Remark 2]: synchronisation for beta above this
THREE_CLUSTERS = -2.0 / 3.0  # three equal clusters are stable below this


def _circle(theta: np.ndarray) -> np.ndarray:
    return np.stack([np.cos(theta), np.sin(theta)], axis=-1)


def _run(beta: float, theta0: np.ndarray, t_final: float, saves: int) -> dict:
    times = np.linspace(0.0, t_final, saves + 1)[1:]
    run = simulate(AttentionParticles(beta, True, method="direct"), _circle(theta0), times,
                   dt=None, tolerance=1e-9)
    r = np.array([order_parameter(x) for x in run.positions])
    theta = np.arctan2(run.positions[..., 1], run.positions[..., 0])
    theta = np.angle(np.exp(1j * (theta - theta[:, :1])))  # relative to token 0
    return {"beta": beta, "times": run.times, "r": r, "theta": theta,
            "gap": float(1 - r[-1])}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="negative_beta.png")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args(argv)
    n, t_random, t_three = (9, 25.0, 40.0) if args.quick else (32, 60.0, 100.0)
    saves = 40 if args.quick else 200
    rng = np.random.default_rng(args.seed)
    uniform = rng.uniform(0, 2 * np.pi, n)
    per = n // 3
    near_three = np.repeat(2 * np.pi * np.arange(3) / 3, per) + rng.uniform(-0.05, 0.05,
                                                                             3 * per)
    out = {"random": {b: _run(b, uniform, t_random, saves) for b in (-0.1, -1.0)},
           "three": {b: _run(b, near_three, t_three, saves) for b in (-1.0, -0.5)}}
    for kind, runs in out.items():
        for b, run in runs.items():
            print(f"{kind} start, beta = {b:g}: 1 - r = {run['gap']:.3g} at t = "
                  f"{run['times'][-1]:g}")

    with style():
        fig = Figure(figsize=(11.0, 4.0), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(1, 3)
        ax = axes[0]
        for (kind, b), ls in zip([("random", -0.1), ("random", -1.0), ("three", -1.0),
                                  ("three", -0.5)], ["-", "-", "--", "--"]):
            run = out[kind][b]
            ax.semilogy(run["times"], np.maximum(1 - run["r"], 1e-16), ls, lw=1.2,
                        label=f"β = {b:g}, {'random' if kind == 'random' else 'near 3 clusters'}")
        ax.set_xlabel("time t")
        ax.set_ylabel("1 − r (r: order parameter)")
        ax.set_title("synchronisation: 1 − r → 0")
        ax.legend(fontsize=7)
        ax = axes[1]
        for b, colour in ((-1.0, "C2"), (-0.5, "C3")):
            run = out["three"][b]
            theta = run["theta"].copy()
            theta[1:][np.abs(np.diff(theta, axis=0)) > np.pi] = np.nan  # (no line across ±π)
            ax.plot(run["times"], theta, lw=0.6, color=colour)
            ax.plot([], [], color=colour, label=f"β = {b:g}")
        ax.set_xlabel("time t")
        ax.set_ylabel("θᵢ − θ₀, in (−π, π]")
        ax.set_title("near three clusters 120° apart:\nstable at β = −1 (< −2/3) only")
        ax.legend(fontsize=8)
        ax = axes[2]
        betas = np.linspace(-3.0, 1.0, 401)
        for k in (1, 2, 3):
            ax.plot(betas, [float(growth_rate(k, b, np.inf, True)) if b != 0 else
                            (0.5 if k == 1 else 0.0) for b in betas], lw=1.2,
                    label=f"σ_{k}")
        ax.axhline(0, color="k", lw=0.6)
        ax.axvline(PROVED, color="0.5", ls=":", lw=1.0, label="β = −0.16 (proved above)")
        ax.axvline(THREE_CLUSTERS, color="C4", ls="--", lw=1.0,
                   label="β = −2/3 (3 clusters stable below)")
        ax.set_xlabel("β")
        ax.set_ylabel("growth rate about the uniform density")
        ax.set_title("linear theory (SA): σₖ = k² I_k(β)/(β I₀(β))")
        ax.legend(fontsize=7)
        fig.suptitle(f"SA tokens on the circle at negative β (n = {n}): synchronisation at "
                     "β = −0.1, and at β = −1 a stable three-cluster state besides it")
        fig.savefig(args.out, dpi=150)
    return out


if __name__ == "__main__":
    main()
