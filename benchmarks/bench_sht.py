"""Spherical-harmonic transforms: the package's numpy backend against ducc0 (and shtns when
it can be imported), in one run.

    python benchmarks/bench_sht.py            # L = 63, 127, 255, 511
    python benchmarks/bench_sht.py --quick    # L = 63, 127, 255, fewer repeats

Prints, per degree L, the milliseconds per pair (analysis + synthesis of a random real
field on the Gauss–Legendre grid nlat = L + 1, nlon = 2 nlat), the best of several
repeats, for each library and thread count, and the ratio to the fastest. The round-trip
error is printed too, so that the pairs compared compute the same thing.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from solvers.grids.sphere import SphereGrid
from solvers.transforms import sht


def random_alm(lmax: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    l, m = SphereGrid.degrees(lmax)
    a = rng.standard_normal(l.size) + 1j * rng.standard_normal(l.size)
    a[m == 0] = a[m == 0].real
    return a


def time_pair(synthesis, analysis, alm, repeats: int, budget: float) -> tuple[float, float]:
    """Best time (s) of one analysis + synthesis pair, and the round-trip error."""
    f = synthesis(alm)
    back = analysis(f)                                       # warm-up (plans, compilation)
    err = float(np.max(np.abs(back - alm)) / np.max(np.abs(alm)))
    t0 = time.perf_counter()
    analysis(synthesis(alm))
    once = time.perf_counter() - t0
    inner = max(1, int(budget / max(once, 1e-6) / repeats))
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            analysis(synthesis(alm))
        best = min(best, (time.perf_counter() - t0) / inner)
    return best, err


def shtns_pair(lmax: int, threads: int):
    """(synthesis, analysis) of shtns in the package's layout, or None if unavailable."""
    try:
        import shtns
    except ImportError:
        return None
    sh = shtns.sht(lmax, lmax, norm=shtns.sht_orthonormal)
    sh.set_grid(lmax + 1, 2 * (lmax + 1), shtns.sht_gauss | shtns.SHT_PHI_CONTIGUOUS,
                polar_opt=1e-10, nthreads=threads)
    # shtns packs m-major with l contiguous, like the package; its phase convention may
    # differ, which does not matter for timing round trips. Untested here: shtns could not
    # be installed where this was written.
    return (lambda a: sh.synth(a)), (lambda f: sh.analys(f))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smaller degrees, fewer repeats")
    p.add_argument("--lmax", type=int, nargs="*", help="degrees to time")
    args = p.parse_args(argv)
    degrees = args.lmax or ([63, 127, 255] if args.quick else [63, 127, 255, 511])
    repeats, budget = (3, 0.3) if args.quick else (5, 1.0)
    ncores = os.cpu_count() or 1
    thread_counts = sorted({1, min(ncores, 4)})
    try:
        import shtns  # noqa: F401
        have_shtns = True
    except ImportError:
        have_shtns = False
    print(f"cores: {ncores}; ducc0: {sht.HAVE_DUCC0}; shtns: "
          f"{'yes' if have_shtns else 'not importable (not timed)'}")
    print(f"{'L':>5} {'library':>8} {'thr':>3} {'ms/pair':>9} {'ratio':>6} {'err':>9}")
    for lmax in degrees:
        a = random_alm(lmax)
        rows = []
        for threads in thread_counts:
            backends = ["numpy"] + (["ducc0"] if sht.HAVE_DUCC0 else [])
            for backend in backends:
                g = SphereGrid(lmax, threads=threads, backend=backend)
                t, err = time_pair(g.synthesis, g.analysis, a, repeats, budget)
                rows.append((backend, threads, t, err))
            pair = shtns_pair(lmax, threads) if have_shtns else None
            if pair is not None:
                t, err = time_pair(pair[0], pair[1], a, repeats, budget)
                rows.append(("shtns", threads, t, err))
        fastest = min(r[2] for r in rows)
        for backend, threads, t, err in rows:
            print(f"{lmax:>5} {backend:>8} {threads:>3} {t * 1e3:>9.2f} "
                  f"{t / fastest:>6.2f} {err:>9.1e}")
        ours = min(r[2] for r in rows if r[0] == "numpy")
        others = [r[2] for r in rows if r[0] != "numpy"]
        if others:
            print(f"{lmax:>5} numpy backend / fastest library: {ours / min(others):.2f}")


if __name__ == "__main__":
    main()
