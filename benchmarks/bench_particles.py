"""Particle interaction sums: fast methods against the direct kernel and plain numpy.

    python benchmarks/bench_particles.py            # n = 1e3 .. 1e6, direct up to ~20 s
    python benchmarks/bench_particles.py --quick    # n = 1e3 .. 1e5, budget ~2 s

One velocity evaluation = the sums ``s, z`` for all n tokens against all n tokens (m = n),
uniform tokens on S^1 and S^2, beta = 5, accuracy 1e-10. Columns:

- velocity: the fast method with ``project=True`` (the tangent part and z: what the
  models evaluate);
- fast: ``solvers.particles.fourier`` on S^1, ``.harmonic`` on S^2 (multipliers from
  ``meanfield.model.kernels``), all cores, the full sums ``s, z``;
- direct: ``solvers.particles.direct.exp_kernel_sums`` (numba);
- numpy direct: blocks of the Gram matrix, ``exp``, two matrix products;
- numpy Fourier (S^1): the moments and evaluations of the fast method as dense
  ``exp(-1j outer(k, theta))`` blocks, no NUFFT.

A slow column is measured while its predicted time (from the pairs or points per second
of the previous size) stays within the budget; beyond, it is extrapolated from that rate
and marked ``~``. The fast results are checked against the direct kernel on 200 rows
(max error of ``e^shift s`` and ``e^shift z`` over ``n e^beta``). Last, direct pair
interactions per second in d = 3 for n = 2000..20000.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import special

from meanfield.model import kernels as kn
from solvers.particles import chunks
from solvers.particles.direct import exp_kernel_sums
from solvers.particles.fourier import fourier_kernel_sums
from solvers.particles.harmonic import harmonic_kernel_sums
from solvers.particles.multipliers import FAST_METHOD

BETA, ACCURACY = 5.0, 1e-10


def best_of(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def uniform(n, d, seed=0):
    x = np.random.default_rng(seed).standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1)[:, None]


# --- plain numpy baselines -----------------------------------------------------------------
def numpy_direct(x, beta, block_elements=1 << 22):
    """Row-shifted sums by Gram blocks and numpy.exp (as exp_kernel_sums returns them)."""
    n = x.shape[0]
    s, z, shift = np.empty_like(x), np.empty(n), np.empty(n)
    rows = max(1, block_elements // n)
    for i0 in range(0, n, rows):
        g = (beta * x[i0:i0 + rows]) @ x.T
        m = g.max(axis=1)
        np.exp(g - m[:, None], out=g)
        z[i0:i0 + rows], s[i0:i0 + rows], shift[i0:i0 + rows] = g.sum(axis=1), g @ x, m
    return s, z, shift


def numpy_fourier(x, beta, accuracy, block_elements=1 << 21):
    """The S^1 Fourier-moment sums with dense complex exponentials instead of NUFFTs."""
    order = kn.fast_order(2, beta, accuracy)
    theta = np.arctan2(x[:, 1], x[:, 0])
    n = theta.size
    cols = max(1, block_elements // (2 * order + 3))
    k = np.arange(-order - 1, order + 2)
    mom = np.zeros(k.size, dtype=complex)
    for j0 in range(0, n, cols):
        mom += np.exp(-1j * np.outer(k, theta[j0:j0 + cols])).sum(axis=1)
    ik = special.ive(k[1:-1], beta)
    cz, cs = ik * mom[1:-1], ik * mom[:-2]
    z, s = np.empty(n), np.empty((n, 2))
    for j0 in range(0, n, cols):
        e = np.exp(1j * np.outer(theta[j0:j0 + cols], k[1:-1]))
        z[j0:j0 + cols] = (e @ cz).real
        v = e @ cs
        s[j0:j0 + cols, 0], s[j0:j0 + cols, 1] = v.real, v.imag
    return s, z, np.full(n, beta)


# --- timings -------------------------------------------------------------------------------
class Column:
    """A method timed while affordable, then extrapolated from its last rate."""

    def __init__(self, name, run, budget, cost):
        self.name, self.run, self.budget, self.cost = name, run, budget, cost
        self.rate = None  # work units per second at the last measured size

    def time(self, x):
        work = self.cost(x.shape[0])
        if self.rate is not None and work / self.rate > self.budget:
            return work / self.rate, True
        if self.rate is None:
            self.run(x)  # warm-up (compilation, plans)
            predicted = 0.0
        else:
            predicted = work / self.rate
        seconds = best_of(lambda: self.run(x), 3 if predicted < 0.5 else 1)
        self.rate = work / seconds
        return seconds, False


def fast_error(x, result):
    """Max error of e^shift s, e^shift z on 200 rows against the direct kernel, over
    n e^beta."""
    rows = np.linspace(0, x.shape[0] - 1, 200).astype(int)
    sd, zd, hd = exp_kernel_sums(x[rows], x, BETA)
    s, z, h = (a[rows] for a in result)
    fd, f = np.exp(hd - BETA), np.exp(h - BETA)
    err = max(np.abs(s * f[:, None] - sd * fd[:, None]).max(), np.abs(z * f - zd * fd).max())
    return err / x.shape[0]


def bench_geometry(d, sizes, budget, threads):
    method = FAST_METHOD[d]
    sums = fourier_kernel_sums if d == 2 else harmonic_kernel_sums
    multipliers = kn.fast_multipliers(d, BETA, ACCURACY)

    def fast_fn(x, threads, project=False):
        return sums(x, x, multipliers, threads, project)

    columns = [Column("direct", lambda x: exp_kernel_sums(x, x, BETA), budget,
                      lambda n: n * n),
               Column("numpy direct", lambda x: numpy_direct(x, BETA), budget,
                      lambda n: n * n)]
    if d == 2:
        columns.append(Column("numpy Fourier", lambda x: numpy_fourier(x, BETA, ACCURACY),
                              budget, lambda n: n))
    order = multipliers.order
    print(f"\nS^{d - 1} (d = {d}), beta = {BETA:g}, accuracy {ACCURACY:g}: method "
          f"{method!r}, order {order}, auto crossover n = "
          f"{kn.crossover_n(d, BETA, ACCURACY)}")
    print(f"{'n':>9} {'velocity':>10} {'fast':>10} " + " ".join(f"{c.name:>15}" for c in columns)
          + "   speed-up of fast     error/(n e^beta)")
    for n in sizes:
        x = uniform(n, d, seed=n)
        result = fast_fn(x, threads)
        t_fast = best_of(lambda: fast_fn(x, threads), 3)
        # what the models call: the tangent part (project=True) and z
        t_velocity = best_of(lambda: fast_fn(x, threads, True), 3)
        cells, ratios = [], []
        for c in columns:
            seconds, extrapolated = c.time(x)
            cells.append(f"{'~' if extrapolated else ' '}{seconds:13.4f} s")
            ratios.append(f"{'~' if extrapolated else ''}{seconds / t_fast:.3g}x")
        print(f"{n:9d} {t_velocity:8.4f} s {t_fast:8.4f} s "
              + " ".join(f"{c:>15}" for c in cells)
              + "   " + " / ".join(ratios) + f"   {fast_error(x, result):.1e}", flush=True)


def bench_pairs(sizes):
    print("\ndirect kernel, d = 3, m = n: pair interactions per second")
    for n in sizes:
        x = uniform(n, 3, seed=1)
        exp_kernel_sums(x, x, BETA)
        seconds = best_of(lambda: exp_kernel_sums(x, x, BETA), 3)
        print(f"    n = {n:6d}: {n * n / seconds:.2e} pairs/s ({seconds:.3f} s)", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads of the fast methods (default: all cores)")
    args = parser.parse_args(argv)
    print(f"cores: {chunks.default_threads()}; fast-method threads: "
          f"{args.threads or chunks.default_threads()}; '~': extrapolated from the measured "
          "rate of the previous size")
    sizes = [10**3, 10**4, 10**5] if args.quick else [10**3, 10**4, 10**5, 10**6]
    budget = 2.0 if args.quick else 20.0
    for d in (2, 3):
        bench_geometry(d, sizes, budget, args.threads)
    bench_pairs([2000, 5000] if args.quick else [2000, 5000, 10000, 20000])


if __name__ == "__main__":
    main()
