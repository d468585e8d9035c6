"""One step of the spectral S^2 solver at band limit L, broken down, in transform pairs.

    python benchmarks/bench_sphere_step.py [--lmax 127] [--repeat 20]

Prints the time of an analysis + synthesis pair on the output grid (the unit the issue
counts in) and on the 3/2-rule product grid, then the time of one ETDRK4 step (4
right-hand sides) for USA (products on a grid for degree L + deg(potential)) and SA
(3/2 rule), the time spent in transforms, and the step cost in output-grid pairs.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from meanfield.discretizations.sphere import SpectralSphere
from meanfield.model.sphere import SphereModel
from solvers.grids.sphere import SphereGrid, product_grid


def best_of(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


class CountingGrid:
    """Wraps a SphereGrid to time its transforms."""

    def __init__(self, grid):
        self.grid, self.seconds, self.calls = grid, 0.0, 0

    def __getattr__(self, name):
        return getattr(self.grid, name)

    def synthesis(self, alm):
        start = time.perf_counter()
        out = self.grid.synthesis(alm)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        return out

    def analysis(self, field, lmax=None):
        start = time.perf_counter()
        out = self.grid.analysis(field, lmax)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lmax", type=int, default=127)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    lmax = args.lmax
    grid = SphereGrid(lmax)
    rng = np.random.default_rng(0)
    alm = grid.analysis(1 / (4 * np.pi) + 0.01 * rng.standard_normal(grid.shape))
    field = grid.synthesis(alm)
    pair = best_of(lambda: grid.analysis(grid.synthesis(alm)), args.repeat)
    prod = product_grid(lmax)
    pair_p = best_of(lambda: prod.analysis(prod.synthesis(alm)), args.repeat)
    print(f"L = {lmax}, backend {grid.backend}, threads {grid.threads}")
    print(f"  transform pair, output grid {grid.shape}:  {pair * 1e3:8.3f} ms")
    print(f"  transform pair, product grid {prod.shape}: {pair_p * 1e3:8.3f} ms")
    del field
    for normalized, name in [(False, "USA"), (True, "SA")]:
        model = SphereModel(grid, 2.0, 10.0, normalized)
        solver = SpectralSphere(model, 1e-3, 1e-8, 1e-6)
        state = alm.copy()
        solver.scheme.step(state, 1e-3)  # warm-up (coefficients, plans)
        step = best_of(lambda: solver.scheme.step(state, 1e-3), args.repeat)
        counting = CountingGrid(model.products)
        model.products = counting
        for _ in range(args.repeat):
            solver.scheme.step(state, 1e-3)
        per_step = counting.seconds / args.repeat
        print(f"  {name}: one ETDRK4 step {step * 1e3:8.3f} ms = {step / pair:5.1f} pairs; "
              f"{counting.calls // args.repeat} transforms on a {counting.grid.shape} grid "
              f"taking {per_step * 1e3:.2f} ms (mean)")


if __name__ == "__main__":
    main()
