"""Validation of the circle solvers against exact results
======================================================

Validation report of the circle solvers against the exact results of docs/conventions.md.

Prints, for the spectral (64 points) and finite-volume (512 cells) methods: the relative
error of the growth rates of modes 1 and 2 about the uniform density (SA and USA, five
(beta, kappa) pairs), the error of the noisy-Kuramoto order parameter at kappa = 4, the
spectral error against resolution and the finite-volume observed orders, and the mass
drift. Run ``python examples/circle_validation.py`` (about a minute; ``--quick``, as the
site runs it: two (β, κ) pairs, 256 finite-volume cells instead of 512 and three
resolutions of each refinement, ten seconds).
Writes ``circle_validation.png`` (``--out``): the two refinement studies, (a) the spectral
error against the number of points (exponential decay) and (b) the finite-volume error
against the number of cells with the slope of order 2.
"""
from __future__ import annotations

import argparse
import math

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import meanfield
from meanfield.demo import kuramoto_order_parameter
from meanfield.model.kernels import growth_rate
from meanfield.plotting import style

PAIRS = [(0.0, 1.5), (0.5, 3.0), (1.0, 4.0), (3.0, 2.0), (2.0, math.inf)]


def mode(ds, k):
    return (ds.density.values * ds.weights.values) @ np.exp(-1j * k * ds.theta.values)


def growth_errors(method, n, pairs=PAIRS):
    worst = 0.0
    for beta, kappa in pairs:
        for normalized in (True, False):
            for k in (1, 2):
                ds = meanfield.evolve({
                    "model": {"beta": beta, "kappa": kappa, "normalized": normalized},
                    "discretization": {"method": method, "resolution": n},
                    "initial": {"kind": "perturbed", "mode": k, "amplitude": 1e-6},
                    "time": {"t_final": 1.5, "save_every": 0.1, "tolerance": 1e-11}})
                rate = np.polyfit(ds.time.values, np.log(np.abs(mode(ds, k))), 1)[0]
                sigma = growth_rate(k, beta, kappa, normalized)
                worst = max(worst, abs(rate / sigma - 1))
    return worst


def kuramoto_error(method, n, t_final):
    ds = meanfield.evolve({
        "model": {"beta": 0.0, "kappa": 4.0},
        "discretization": {"method": method, "resolution": n},
        "initial": {"kind": "von_mises", "center": 0.7, "concentration": 2.0},
        "time": {"t_final": t_final, "save_every": t_final / 40, "tolerance": 1e-11}})
    return abs(float(ds.order_parameter[-1]) - kuramoto_order_parameter(4.0)), ds


def smooth(method, n, t_final):
    return meanfield.evolve({
        "model": {"beta": 8.0, "kappa": 50.0, "normalized": True},
        "discretization": {"method": method, "resolution": n},
        "initial": {"kind": "mixture", "components": [
            {"kind": "perturbed", "mode": 1, "amplitude": 0.8},
            {"kind": "perturbed", "mode": 2, "amplitude": 0.5, "phase": 0.4}]},
        "time": {"t_final": t_final, "save_every": t_final, "tolerance": 1e-13},
    }).density.values[-1]


def series(coeffs, theta, dx=None):
    k = np.arange(coeffs.size)
    c = coeffs * np.where(k == 0, 1.0, 2.0)
    if dx is not None:
        c = c * np.sinc(k * dx / (2 * np.pi))
    return np.real(np.exp(1j * np.outer(theta, k)) @ c)


def figure(spectral, finite_volume, path):
    """(a) the spectral error against the points, (b) the finite-volume error against
    the cells, with the slope of order 2 through the first point."""
    with style():
        fig = Figure(figsize=(7.2, 3.0), layout="constrained")
        FigureCanvasAgg(fig)
        ax, bx = fig.subplots(1, 2)
        n, err = np.array(list(spectral)), np.array(list(spectral.values()))
        ax.semilogy(n, err, "o-", color="C0")
        ax.set_xlabel("points n")
        ax.set_ylabel("max error at t = 6")
        ax.set_title("(a) spectral: exponential in n", loc="left")
        n, err = np.array(list(finite_volume)), np.array(list(finite_volume.values()))
        bx.loglog(n, err, "s-", color="C1", label="finite volume")
        bx.loglog(n, err[0] * (n / n[0]) ** -2.0, "k--", lw=1, label="order 2")
        bx.set_xlabel("cells n")
        bx.set_ylabel("L¹ error at t = 2")
        bx.set_title("(b) finite volume: order 2", loc="left")
        bx.legend()
        fig.suptitle("Circle solvers (SA, β = 8, κ = 50) against a spectral reference "
                     "at 256 points", fontsize=9)
        fig.savefig(path, dpi=150)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="circle_validation.png")
    args = parser.parse_args(argv)
    pairs = PAIRS[1:3] if args.quick else PAIRS
    cells = 256 if args.quick else 512  # finite volume: its explicit steps scale as n^2
    print(f"growth rates, max relative error over {4 * len(pairs)} cases (SA/USA, k = 1, 2):")
    print(f"    spectral, 64 points       {growth_errors('spectral', 64, pairs):.1e}"
          "   (required 1e-4)")
    print(f"    finite volume, {cells} cells  {growth_errors('finite-volume', cells, pairs):.1e}"
          "   (required 1e-2)")
    e_s, ds_s = kuramoto_error("spectral", 64, 40.0)
    e_f, ds_f = kuramoto_error("finite-volume", cells, 15.0)
    print("noisy Kuramoto kappa = 4, |r - 0.8314620...|:")
    print(f"    spectral {e_s:.1e} (required 1e-6)   finite volume {e_f:.1e} (required 1e-3)")
    for name, ds in [("spectral", ds_s), ("finite volume", ds_f)]:
        drift = np.abs(ds.mass.values / ds.mass.values[0] - 1).max()
        print(f"    mass drift ({name}, {ds.attrs['steps']} steps): {drift:.1e}")

    coeffs = np.fft.rfft(ref := smooth("spectral", 256, 6.0)) / ref.size
    print("spectral error vs resolution (SA, beta = 8, kappa = 50, t = 6), max norm:")
    spectral = {}
    for n in ((52, 64, 80) if args.quick else (52, 58, 64, 72, 80)):
        err = np.abs(smooth("spectral", n, 6.0) - series(coeffs, 2 * np.pi * np.arange(n) / n))
        spectral[n] = float(err.max())
        print(f"    n = {n:3d}  {err.max():.1e}")
    coeffs = np.fft.rfft(ref := smooth("spectral", 256, 2.0)) / ref.size
    print("finite volume vs spectral reference (t = 2), L1 error of cell averages:")
    prev = None
    finite_volume = {}
    for n in ((64, 128, 256) if args.quick else (64, 128, 256, 512)):
        dx = 2 * np.pi / n
        err = np.sum(np.abs(smooth("finite-volume", n, 2.0)
                            - series(coeffs, dx * np.arange(n), dx))) * dx
        finite_volume[n] = float(err)
        order = "" if prev is None else f"  order {math.log2(prev / err):.2f}"
        print(f"    n = {n:4d}  {err:.2e}{order}")
        prev = err
    figure(spectral, finite_volume, args.out)
    return {"kuramoto_error": (e_s, e_f), "spectral": spectral,
            "finite_volume": finite_volume}


if __name__ == "__main__":
    main()
