"""Mean-field limit and contraction in Wasserstein distance
========================================================

Mean-field limit and contraction on the circle, in Wasserstein distance: how far n
tokens are from the PDE, and how fast a cluster collapses, against the predicted rates.

(a, b) ``meanfield.convergence`` on ``examples/convergence.toml`` (SA, beta = 1, from a
von Mises cluster): n i.i.d. tokens against the PDE solution, W_1 between their empirical
measure and the density at each saved time over several replicas. The error is the
sampling error of n i.i.d. points, so W_1 ~ n^(-1/2): the fitted slope of log W_1 against
log n has -1/2 in its 95 % interval at every time. The dataset splits the error into the
sampling floor (W_1 of the tokens' own law at time t against an i.i.d. sample of it) and
the coupling term (what the interaction adds), and carries Dobrushin's stability bound.

(c, d) ``meanfield.contraction`` on ``examples/contraction.toml``: one concentrated
cluster collapsing under SA; W_2 of the PDE solution and of n = 100 tokens to the point
mass they approach decays like e^(-t) (docs/conventions.md): the rate fitted where the
distance lies between ``fit_above`` and ``fit_below`` against the predicted rate 1.

Run ``python examples/transport_rates.py`` (``--quick``: fewer n and replicas, one beta
for the contraction); writes ``transport_rates.png`` (``--out``) and prints the slopes
with their intervals and the fitted/predicted rates.
"""
from __future__ import annotations

import argparse
import time
import tomllib
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import meanfield
from meanfield.plotting import style
from meanfield.plotting.transport.contraction import distance_vs_time, rates_vs_beta
from meanfield.plotting.transport.convergence import error_vs_n, slope_vs_time

HERE = Path(__file__).resolve().parent


def _example(name: str) -> dict:
    with open(HERE / f"{name}.toml", "rb") as f:
        return tomllib.load(f)


def convergence_run(quick: bool) -> dict:
    """The convergence example, with more n and replicas (or fewer, ``quick``)."""
    config = _example("convergence")
    config["convergence"]["n"] = ([100, 200, 400] if quick
                                  else [100, 200, 400, 800, 1600, 3200])
    config["convergence"]["replicas"] = 4 if quick else 8
    if quick:
        config["time"].update({"t_final": 0.5, "save_every": 0.5})
    ds = meanfield.convergence(config)
    inside = (ds.slope_low <= -0.5) & (ds.slope_high >= -0.5)
    return {"ds": ds, "slope": ds.slope.values, "low": ds.slope_low.values,
            "high": ds.slope_high.values, "time": ds.time.values,
            "contains_half": bool(inside.all())}


def contraction_run(quick: bool) -> dict:
    """The contraction example as written (``quick``: beta = 1 only, to t = 4)."""
    config = _example("contraction")
    if quick:
        config["contraction"]["beta"] = [1.0]
        config["time"]["t_final"] = 4.0
    ds = meanfield.contraction(config)
    ratio = (ds.fitted_rate / ds.predicted_rate).values  # (beta, source)
    return {"ds": ds, "ratio": ratio, "beta": ds.beta.values,
            "sources": [str(s) for s in ds.source.values],
            "fitted": ds.fitted_rate.values, "predicted": ds.predicted_rate.values}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="transport_rates.png")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    conv = convergence_run(args.quick)
    contr = contraction_run(args.quick)
    ns = conv["ds"].n.values
    for t, s, lo, hi in zip(conv["time"], conv["slope"], conv["low"], conv["high"]):
        print(f"convergence, n = {ns.min()}..{ns.max()}, "
              f"{conv['ds'].sizes['replica']} replicas, t = {float(t):g}: slope of "
              f"log W_1 against log n {s:.3f}, 95 % interval [{lo:.3f}, {hi:.3f}] "
              f"({'contains' if lo <= -0.5 <= hi else 'MISSES'} -1/2)")
    for i, b in enumerate(contr["beta"]):
        for k, source in enumerate(contr["sources"]):
            print(f"contraction, beta = {float(b):g}, {source}: fitted rate "
                  f"{contr['fitted'][i, k]:.4f}, predicted {contr['predicted'][i, k]:.4f} "
                  f"(ratio {contr['ratio'][i, k]:.4f})")

    with style():
        fig = Figure(figsize=(10.5, 7.0), layout="constrained")
        FigureCanvasAgg(fig)
        grid = fig.add_gridspec(2, 2)
        ax = fig.add_subplot(grid[0, 0])
        last = conv["ds"].sizes["time"] - 1
        error_vs_n(conv["ds"], ax, last)
        ax.set_title(f"(a) error against n at t = {float(conv['time'][last]):g} "
                     f"(dots: replicas; slope {conv['slope'][last]:.3f}, 95 %: "
                     f"[{conv['low'][last]:.3f}, {conv['high'][last]:.3f}])", fontsize=8.5)
        ax.set_ylabel("Wasserstein distance $W_1$ (rad)")
        # (beside the panel: inside it covered the replicas' dots at n = 100)
        ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax = fig.add_subplot(grid[0, 1])
        slope_vs_time(conv["ds"], ax)
        ax.set_title("(b) fitted slopes against time: the mean-field rate $n^{-1/2}$",
                     fontsize=8.5)
        ax = fig.add_subplot(grid[1, 0])
        distance_vs_time(contr["ds"], ax)
        same = ("" if contr["beta"].size == 1 else
                f"\n(the curves of β = {', '.join(f'{b:g}' for b in contr['beta'])} "
                "coincide: the rate does not depend on β)")
        ax.set_title(f"(c) a collapsing cluster: $W_2$ to its point mass{same}",
                     fontsize=8.5)
        ax = fig.add_subplot(grid[1, 1])
        rates_vs_beta(contr["ds"], ax)
        ax.set_title(f"(d) rates against β: fitted/predicted "
                     f"{np.nanmin(contr['ratio']):.3f} .. {np.nanmax(contr['ratio']):.3f}",
                     fontsize=8.5)  # (the longer title ran off the figure's edge)
        fig.suptitle("SA on the circle: tokens approach the mean field at the sampling "
                     "rate $n^{-1/2}$, and a cluster contracts at the predicted rate",
                     fontsize=10)
        fig.savefig(args.out, dpi=150)
    print(f"convergence and contraction in {time.perf_counter() - start:.1f} s; "
          f"wrote {args.out}")
    return {"convergence": conv, "contraction": contr}


if __name__ == "__main__":
    main()
