"""Exact S^1 Wasserstein distances (meanfield.metrics.circle_transport) against POT's
circle solver (``ot.wasserstein_circle``, POT 0.9.7), timed in the same run.

- empirical vs empirical, n = m = 1e3 .. 1e6 (von Mises samples), p = 2;
- empirical (n = 1e6 tokens) vs a density (n_grid = 256, spectral and finite volume):
  ours on the density itself, POT with the density as 1e4 and 1e5 weighted atoms (the
  masses of equal arcs at their midpoints), and POT's closed form for the uniform
  (``semidiscrete_wasserstein2_unif_circle``) beside ours on the uniform density;
  "before": the atoms / density solve as it was until the one-pass sweep (a coarse
  pre-solve, then cutting planes and secant steps on ``atoms_panels_cost``, quantiles and
  moments from scratch at each shift, and the stable argsort of the tokens), timed in
  the same run.

POT works on [0, 1): its W_p^p is multiplied by (2 pi)^p. Prints times and ratios
(POT / ours: above 1 means ours is faster). Run: python benchmarks/bench_circle_transport.py
[--quick].
"""
from __future__ import annotations

import sys
import time

import numpy as np
import ot

from meanfield.metrics import circle_panels as cp
from meanfield.metrics.circle_measures import CircleMeasure
from meanfield.metrics.circle_minimise import minimise_with_slope
from meanfield.metrics.circle_transport import circle_wasserstein

L = 2 * np.pi


def timed(fun, repeat=2):
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fun()
        best = min(best, time.perf_counter() - t)
    return best, out


def pot_w2(u, v, a=None, b=None):
    return float(np.sqrt(np.ravel(ot.wasserstein_circle(u / L, v / L, a, b, p=2))[0]) * L)


def before(x, dens, p=2):
    """W_p as it was computed before the sweep (see the module docstring)."""
    order = np.argsort(x, kind="stable")
    mu = CircleMeasure.from_points(x[order])
    idx = np.linspace(0, mu.angles.size, cp.COARSE_GROUPS + 1).astype(int)[:-1]
    w = np.add.reduceat(mu.weights, idx)
    coarse = CircleMeasure.from_points(np.add.reduceat(mu.weights * mu.angles, idx) / w, w)
    guess = minimise_with_slope(lambda a: cp.atoms_panels_cost(coarse, dens, a, 0.0, p),
                                smooth=True)[1]
    value = minimise_with_slope(lambda a: cp.atoms_panels_cost(mu, dens, a, 0.0, p),
                                guess - 1e-5, guess + 1e-5, smooth=True)[0]
    return value ** (1 / p)


def main(quick: bool = False):
    rng = np.random.default_rng(0)
    # Warm the numba caches (first use compiles or loads them).
    warm = CircleMeasure.from_density(np.full(8, 1 / L), "spectral")
    circle_wasserstein(CircleMeasure.from_points(rng.uniform(0, L, 10)), warm)
    print("empirical vs empirical, p = 2")
    print(f"{'n':>9} {'ours s':>9} {'POT s':>9} {'POT/ours':>9} {'|diff W2|':>10}")
    sizes = [10**3, 10**4, 10**5] if quick else [10**3, 10**4, 10**5, 10**6]
    for n in sizes:
        x = rng.vonmises(0.0, 2.0, n) % L
        y = rng.vonmises(2.0, 1.0, n) % L
        t_ours, w = timed(lambda x=x, y=y: circle_wasserstein(
            CircleMeasure.from_points(x), CircleMeasure.from_points(y), 2))
        t_pot, wp = timed(lambda x=x, y=y: pot_w2(x, y))
        print(f"{n:>9} {t_ours:9.3f} {t_pot:9.3f} {t_pot / t_ours:9.2f} {abs(w - wp):10.2e}")

    n = 10**5 if quick else 10**6
    print(f"\nempirical (n = {n}) vs a density (256 nodes), p = 2")
    x = rng.vonmises(0.0, 2.0, n) % L
    grid = L * np.arange(256) / 256
    rho = np.exp(2 * np.cos(grid - 0.3))
    rho /= rho.sum() * L / 256
    tokens = CircleMeasure.from_points(x)
    for method in ("spectral", "finite-volume"):
        dens = CircleMeasure.from_density(rho, method)
        # the same input as POT's: the angles, unsorted (the sort is part of the time)
        t_ours, w = timed(lambda d=dens: circle_wasserstein(CircleMeasure.from_points(x),
                                                            d, 2))
        print(f"  ours, {method:13s}: {t_ours:7.3f} s  W2 = {w:.15f}")
        if method == "spectral":
            t_old, w_old = timed(lambda d=dens: before(x, d))
            print(f"  before the sweep:    {t_old:7.3f} s  W2 = {w_old:.15f}  "
                  f"before/now = {t_old / t_ours:5.2f}")
            t1, w1 = timed(lambda d=dens: circle_wasserstein(CircleMeasure.from_points(x),
                                                             d, 1))
            t1_old, w1_old = timed(lambda d=dens: before(x, d, 1))
            print(f"  W1: now {t1:.3f} s, before {t1_old:.3f} s (before/now = "
                  f"{t1_old / t1:.2f}), |diff W1| = {abs(w1 - w1_old):.2e}")
        for m in (10**4, 10**5):
            edges = np.linspace(0, L, m + 1)
            mass = np.diff(dens.cdf(edges))
            mid = 0.5 * (edges[:-1] + edges[1:])
            t_pot, wp = timed(lambda mid=mid, mass=mass: pot_w2(x, mid, None, mass))
            print(f"  POT, {m:>6} weighted atoms: {t_pot:7.3f} s  W2 = {wp:.15f}  "
                  f"POT/ours = {t_pot / t_ours:5.2f}")
    uniform = CircleMeasure.from_density(np.full(256, 1 / L), "finite-volume")
    t_ours, w = timed(lambda: circle_wasserstein(tokens, uniform, 2))
    t_pot, wp = timed(lambda: float(np.sqrt(np.ravel(
        ot.semidiscrete_wasserstein2_unif_circle(x / L))[0]) * L))
    print(f"  uniform: ours {t_ours:.3f} s, POT closed form {t_pot:.3f} s "
          f"(POT/ours = {t_pot / t_ours:.2f}), |diff W2| = {abs(w - wp):.2e}")


if __name__ == "__main__":
    main("--quick" in sys.argv)
