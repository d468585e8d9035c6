"""Validation of the circle solvers against exact results
======================================================

Validation report of the circle solvers against the exact results of docs/conventions.md.

Prints, for the spectral (64 points) and finite-volume (512 cells) methods: the relative
error of the growth rates of modes 1 and 2 about the uniform density (SA and USA, five
(beta, kappa) pairs), the error of the noisy-Kuramoto order parameter at kappa = 4, the
spectral error against resolution and the finite-volume observed orders, and the mass
drift. Run ``python examples/circle_validation.py`` (about a minute).
"""
from __future__ import annotations

import math

import numpy as np

import meanfield
from meanfield.demo import kuramoto_order_parameter
from meanfield.model.kernels import growth_rate

PAIRS = [(0.0, 1.5), (0.5, 3.0), (1.0, 4.0), (3.0, 2.0), (2.0, math.inf)]


def mode(ds, k):
    return (ds.density.values * ds.weights.values) @ np.exp(-1j * k * ds.theta.values)


def growth_errors(method, n):
    worst = 0.0
    for beta, kappa in PAIRS:
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


def main() -> None:
    print("growth rates, max relative error over 20 cases (SA/USA, k = 1, 2):")
    print(f"    spectral, 64 points       {growth_errors('spectral', 64):.1e}   (required 1e-4)")
    print(f"    finite volume, 512 cells  {growth_errors('finite-volume', 512):.1e}"
          "   (required 1e-2)")
    e_s, ds_s = kuramoto_error("spectral", 64, 40.0)
    e_f, ds_f = kuramoto_error("finite-volume", 512, 15.0)
    print("noisy Kuramoto kappa = 4, |r - 0.8314620...|:")
    print(f"    spectral {e_s:.1e} (required 1e-6)   finite volume {e_f:.1e} (required 1e-3)")
    for name, ds in [("spectral", ds_s), ("finite volume", ds_f)]:
        drift = np.abs(ds.mass.values / ds.mass.values[0] - 1).max()
        print(f"    mass drift ({name}, {ds.attrs['steps']} steps): {drift:.1e}")

    coeffs = np.fft.rfft(ref := smooth("spectral", 256, 6.0)) / ref.size
    print("spectral error vs resolution (SA, beta = 8, kappa = 50, t = 6), max norm:")
    for n in (52, 58, 64, 72, 80):
        err = np.abs(smooth("spectral", n, 6.0) - series(coeffs, 2 * np.pi * np.arange(n) / n))
        print(f"    n = {n:3d}  {err.max():.1e}")
    coeffs = np.fft.rfft(ref := smooth("spectral", 256, 2.0)) / ref.size
    print("finite volume vs spectral reference (t = 2), L1 error of cell averages:")
    prev = None
    for n in (64, 128, 256, 512):
        dx = 2 * np.pi / n
        err = np.sum(np.abs(smooth("finite-volume", n, 2.0)
                            - series(coeffs, dx * np.arange(n), dx))) * dx
        order = "" if prev is None else f"  order {math.log2(prev / err):.2f}"
        print(f"    n = {n:4d}  {err:.2e}{order}")
        prev = err


if __name__ == "__main__":
    main()
