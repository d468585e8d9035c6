"""One step of the zonal spectral solver against one step of the circle's, in one run.

    python benchmarks/bench_zonal_step.py                 # n = 64, 128, 256, 512
    python benchmarks/bench_zonal_step.py --quick         # n = 64, 128, fewer repeats
    python benchmarks/bench_zonal_step.py --sizes 256 --repeat 50 --threads 2

At the same number of unknowns (circle: n grid points, the n real numbers of its n/2 + 1
Fourier coefficients; zonal: the L + 1 = n Gegenbauer coefficients of band limit L) it
times, for SA and USA at beta = 2, kappa = 10, the best of ``--repeat``:

- one right-hand side (``nonlinear(u)``: the transport, the cost of a residual; zonal: a
  synthesis of rho, one of the potential's few degrees, one projection of the flux, all
  on one values table, split by parity from ``PARITY_MIN_DEGREES`` on);
- one ETDRK4 step (4 right-hand sides and the diagonal exponentials), as a run takes it;

and prints zonal/circle ratios (issue 26 asks for at most 3); then where one zonal
right-hand side spends its time (the dense Gegenbauer matrix products, O(L^2) against the
circle's O(n log n) FFTs, or the elementwise work and Python around them); then the
zonal step at d = 3 against d = 512 at the same L (the tables are built once; a step
must not cost more in a higher dimension). Each side runs on ``--threads`` threads (default 1: FFTW's
threads for the circle, BLAS's for the zonal matrix products), so the ratio compares
equal resources. Benchmarks are not tests: nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from meanfield.discretizations.base import Discretization
from meanfield.model.zonal import PARITY_MIN_DEGREES

BETA, KAPPA, DT = 2.0, 10.0, 1e-3


def best_of(fn, repeat: int) -> float:
    """The smallest wall time of ``repeat`` calls of ``fn`` (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def build(geometry: str, resolution: int, normalized: bool, dim: int, threads: int):
    """A spectral discretization and a smooth state of mass 1 (a von Mises bump)."""
    domain = {"geometry": geometry}
    if geometry == "zonal":
        domain["dim"] = dim
    cfg = {"domain": domain,
           "model": {"beta": BETA, "kappa": KAPPA, "normalized": normalized},
           "discretization": {"method": "spectral", "resolution": resolution},
           "initial": {"kind": "von_mises", "concentration": 2.0},
           "time": {"t_final": 1.0, "save_every": 1.0, "dt": DT}}
    from meanfield.config import validate

    cfg = validate(cfg, "evolve")
    disc = Discretization.from_config(cfg, threads=threads)
    state = disc.to_state(disc.initial_density(cfg["initial"]))
    return disc, state


def timings(geometry: str, resolution: int, normalized: bool, dim: int, threads: int,
            repeat: int) -> tuple[float, float]:
    """(one right-hand side, one ETDRK4 step) in seconds."""
    disc, state = build(geometry, resolution, normalized, dim, threads)
    rhs = best_of(lambda: disc.nonlinear(state), repeat)
    step = best_of(lambda: disc.scheme.step(state.copy(), DT), repeat)
    return rhs, step


def breakdown(resolution: int, normalized: bool, repeat: int) -> tuple[float, float]:
    """(one zonal right-hand side, the part of it in the dense matrix products): the
    products timed alone on the model's own tables and shapes (the synthesis of the
    density and of the potential's degrees, the projection of the flux)."""
    disc, c = build("zonal", resolution, normalized, 3, 1)
    model, grid = disc.model, disc.model.products
    rows = model._potential_rows(c)
    flux = np.ones(grid.theta.size)
    parity = c.size > PARITY_MIN_DEGREES  # (the model's choice: tables split by parity)
    even, odd = grid.parity_tables

    def products() -> None:  # the matrix products of ZonalModel.tendency, as it does them
        rows @ grid.synthesis_matrix[: rows.shape[-1]]  # G phi (and SA's phi)
        if parity:
            c[0::2] @ even[: (c.size + 1) // 2], c[1::2] @ odd[: c.size // 2]  # rho
            flux[: even.shape[1]] @ even.T, flux[: even.shape[1]] @ odd.T  # projection
        else:
            c @ grid.synthesis_matrix[: c.size]
            grid.project(flux)

    return best_of(lambda: model.tendency(c), repeat), best_of(products, repeat)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", type=int, nargs="*", default=None)
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dim", type=int, default=3, help="d of the zonal runs")
    args = parser.parse_args(argv)
    sizes = args.sizes or ([64, 128] if args.quick else [64, 128, 256, 512])
    repeat = args.repeat or (5 if args.quick else 30)
    with threadpool_limits(limits=args.threads, user_api="blas"):
        print(f"beta = {BETA:g}, kappa = {KAPPA:g}, {args.threads} thread(s), best of "
              f"{repeat}; zonal d = {args.dim}")
        print(f"{'model':5s} {'n':>5s} | {'circle rhs':>10s} {'zonal rhs':>10s} "
              f"{'ratio':>6s} | {'circle step':>11s} {'zonal step':>10s} {'ratio':>6s}")
        for normalized, name in [(True, "SA"), (False, "USA")]:
            for n in sizes:
                c_rhs, c_step = timings("circle", n, normalized, 2, args.threads, repeat)
                z_rhs, z_step = timings("zonal", n - 1, normalized, args.dim,
                                        args.threads, repeat)
                print(f"{name:5s} {n:5d} | {c_rhs * 1e3:8.3f}ms {z_rhs * 1e3:8.3f}ms "
                      f"{z_rhs / c_rhs:6.2f} | {c_step * 1e3:9.3f}ms {z_step * 1e3:8.3f}ms "
                      f"{z_step / c_step:6.2f}")
        print("one zonal right-hand side (d = 3): its dense matrix products and the rest")
        for normalized, name in [(True, "SA"), (False, "USA")]:
            for n in sizes:
                total, dense = breakdown(n - 1, normalized, repeat)
                print(f"  {name:4s} L = {n - 1:4d}: {total * 1e3:7.3f} ms, matrix products "
                      f"{dense * 1e3:7.3f} ms ({100 * dense / total:3.0f} %), elementwise "
                      f"and Python {max(total - dense, 0) * 1e3:7.3f} ms")
        print("zonal step in d = 512 against d = 3 at the same band limit L:")
        for normalized, name in [(True, "SA"), (False, "USA")]:
            for n in sizes:
                low = timings("zonal", n - 1, normalized, 3, args.threads, repeat)[1]
                high = timings("zonal", n - 1, normalized, 512, args.threads, repeat)[1]
                print(f"  {name:4s} L = {n - 1:4d}: d = 3 {low * 1e3:8.3f} ms, d = 512 "
                      f"{high * 1e3:8.3f} ms, ratio {high / low:5.2f}")


if __name__ == "__main__":
    main()
