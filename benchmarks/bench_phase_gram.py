"""The phase diagram's hot path at d = 1024 (issue 29, item 5): the packed Gram system
(``phase_gram.gram_system``, the study's path) against the former full-matrix one
(``phase_numba`` mode ``GRAM_FULL``) and against itself with the field's inner work in
float32 (mode ``GRAM_SINGLE``, ``[phase_diagram] precision = "single"``), where the time
goes, and the machine's batched-matmul rate, in one run.

    nice -n 19 python benchmarks/bench_phase_gram.py                # ~2-4 min on 2 cores
    nice -n 19 python benchmarks/bench_phase_gram.py --full         # + 50 beta x 2048, both
    nice -n 19 python benchmarks/bench_phase_gram.py --study        # + the study, timed

The machine is shared with other jobs: every time is CPU time of this process
(``time.process_time``, the numba threads included) and the least of ``--repeats`` runs, old
and new interleaved; the wall time on 2 idle cores is CPU time / 2 (the systems split evenly
over the threads). Printed:

1. a block of the diagram (``--systems`` per beta, every ``--stride``-th of the 50 beta in
   [0.1, 9], t <= 30 on 121 saves, tolerance 1e-5, SA, n = 32), one thread: old, new and
   single CPU time, us per field evaluation and system, the ratios; the paths' fractions
   (max difference of p(beta, t) against the half-width of its 95 % interval at those
   systems), steps and evaluations; new and single at 2 threads and in chunks of 7
   systems: bit for bit the same as at 1 (``--stride 1``: the 50 beta);
2. where the time goes (n = 32, least of many short runs): per field evaluation the parts of
   the three fields; per step the stage sums and the control; the saves (121 saves against
   2); the rejected steps (their share of the evaluations);
3. the machine's batched-matmul rate: numpy ``matmul`` on a (B, 32, 32) stack and numba's
   ``np.dot`` on one 32 x 32 pair, us per product and GFlop/s, against the time per
   evaluation (one such product each);
4. ``--full``: the three paths on the whole diagram (50 beta x 2048 systems, 2 threads,
   once each): CPU time, CPU / 2, and the largest change of p against its 95 % half-width;
5. ``--study``: ``meanfield.phase_diagram`` at d = 1024 over the 50 beta x 2048 systems
   (workers = 1: the numba threads in this process), CPU time and CPU / 2.
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import math
import time

import numba
import numpy as np
from numba import njit

from meanfield.studies.tokens import phase_gram as pg
from meanfield.studies.tokens import phase_gram_single as ps
from meanfield.studies.tokens import phase_kernels as pk
from meanfield.studies.tokens import phase_numba as pn
from meanfield.studies.tokens.phase_diagram import phase_diagram

N, D, THR, TOL = 32, 1024, 0.999, 1e-5
BETAS = np.linspace(0.1, 9.0, 50)
TIMES = np.linspace(0.0, 30.0, 121)
LEVEL = THR + (1 - THR) / 2
H_MAX = max(1.0, TIMES[-1] / 8)


def block(systems: int, stride: int) -> tuple[np.ndarray, np.ndarray]:
    """The initial Gram matrices and beta of (system, beta) pairs, as the study runs them."""
    betas = BETAS[::stride]
    sys_index = np.repeat(np.arange(systems), betas.size)
    x0 = pk.initial_states(N, D, np.arange(systems), 0)[sys_index]
    return np.ascontiguousarray(x0), np.tile(betas, systems)


def run(mode: int, x0, beta, times=TIMES, threads: int | None = None) -> tuple:
    return pn.run_systems(mode, x0, beta, True, times, THR, LEVEL, True, TOL, pk.H0, H_MAX,
                          threads=threads)


def least(fns: dict, repeats: int, clock=time.process_time) -> tuple[dict, dict]:
    """The least time of each callable over ``repeats`` interleaved rounds, and its result."""
    best, out = dict.fromkeys(fns, math.inf), {}
    for _ in range(repeats):
        for name, fn in fns.items():
            c = clock()
            out[name] = fn()
            best[name] = min(best[name], clock() - c)
    return best, out


def p_change(a: np.ndarray, b: np.ndarray, nbeta: int) -> tuple[float, float]:
    """max |p_a - p_b| over (beta, time) (p the mean over the systems) and the largest
    95 % half-width 1.96 sqrt(p(1-p)/S) at those systems (that at p = 1/2)."""
    systems = a.shape[0] // nbeta
    pa = a.reshape(systems, nbeta, -1).mean(0)
    pb = b.reshape(systems, nbeta, -1).mean(0)
    return float(np.abs(pa - pb).max()), 1.96 * math.sqrt(0.25 / systems)


MODES = {"old": pn.GRAM_FULL, "new": pn.GRAM, "single": pn.GRAM_SINGLE}


def item1(args) -> float:
    numba.set_num_threads(1)
    x0, beta = block(args.systems, args.stride)
    run(pn.GRAM, x0[:2], beta[:2]), run(pn.GRAM_FULL, x0[:2], beta[:2])  # compile / load
    best, out = least({k: (lambda m=m: run(m, x0, beta)) for k, m in MODES.items()},
                      args.repeats)
    ev = {k: v[3].sum() for k, v in out.items()}
    print(f"1. {beta.size // args.systems} beta x {args.systems} systems, d = {D}, one thread "
          f"(CPU, least of {args.repeats}):")
    for k in MODES:
        r = out[k]
        print(f"   {k}: {best[k]:.3f} s, {1e6 * best[k] / ev[k]:.2f} us per evaluation and "
              f"system; {ev[k] / beta.size:.1f} evaluations per system, "
              f"{r[1].sum()} steps, {r[2].sum()} rejected")
    per_eval = best["new"] / ev["new"]
    print(f"   ratio old / new: {best['old'] / best['new']:.2f}; new / single (CPU): "
          f"{best['new'] / best['single']:.2f}, per evaluation "
          f"{best['new'] / ev['new'] / (best['single'] / ev['single']):.2f}")
    for a, b in (("old", "new"), ("new", "single")):
        dp, half = p_change(out[a][0], out[b][0], beta.size // args.systems)
        print(f"   fractions: max |p_{a} - p_{b}| = {dp:.2e} (95 % half-width {half:.3f}); "
              f"systems whose fractions differ: {(out[a][0] != out[b][0]).any(1).sum()}; "
              f"steps differ: {(out[a][1] != out[b][1]).sum()}")
    for k in ("new", "single"):
        chunks = [run(MODES[k], x0[a:a + 7], beta[a:a + 7]) for a in range(0, beta.size, 7)]
        chunked = tuple(np.concatenate([c[i] for c in chunks]) for i in range(6))
        same = all(np.array_equal(a, b) for a, b in zip(out[k], chunked))
        if numba.config.NUMBA_NUM_THREADS >= 2:
            numba.set_num_threads(2)
            two = run(MODES[k], x0, beta)
            numba.set_num_threads(1)
            same = same and all(np.array_equal(a, b) for a, b in zip(out[k], two))
        print(f"   {k} at 2 threads and in chunks of 7: bit for bit the same as at 1: {same}")
    return per_eval


def _loops():
    """The compiled loops that time the parts (``reps`` calls in one compiled call)."""
    @njit
    def old_field(reps, g, beta, w, ag, out):
        for _ in range(reps):
            pn._field(pn.GRAM, g, beta, True, w, ag, out)

    @njit
    def libm_exp(reps, g, beta, w):
        n = g.shape[0]
        for _ in range(reps):
            for i in range(n):
                for j in range(i, n):
                    e = math.exp(beta * (g[i, j] - 1.0))
                    w[i, j] = e
                    w[j, i] = e

    @njit
    def new_field(reps, y, beta, work, index, out):
        for _ in range(reps):
            pg._field(y, beta, True, work, index, out)

    @njit
    def single_field(reps, y, beta, work, index, out):
        for _ in range(reps):
            ps.field_single(y, beta, True, work, index, out)

    @njit
    def exp32(reps, x, e, bits):
        for _ in range(reps):
            ps.exp32_into(x, e, bits)

    @njit
    def vec_exp(reps, y, beta, arg, e, bits):
        for _ in range(reps):
            for p in range(y.size):
                arg[p] = beta * (y[p] - 1.0)
            pg.exp_into(arg, e, bits)

    @njit
    def gathers(reps, y, e, gf, w, index):
        for _ in range(reps):
            pg._gather(y, e, gf, w, index)

    @njit
    def dot(reps, a, b, c):
        for _ in range(reps):
            np.dot(a, b, c)

    @njit
    def stage_sums(reps, y, k, tmp):
        for _ in range(reps):
            for s in range(1, 7):
                pg._combine(y, k, pg.A_TAB[s] if s < 6 else pg.B_TAB, s, 0.1, tmp)
            pg._combine(y, k, pg.E_TAB, 7, 0.1, tmp)

    @njit
    def old_stage_sums(reps, y, k, tmp):
        for _ in range(reps):
            for s in range(1, 7):
                pn._combine(y, k, pn._A[s] if s < 6 else pn._B, s, 0.1, tmp)
            pn._combine(y, k, pn._E, 7, 0.1, tmp)

    return locals()


def tiny(fn, *args, reps: int = 200, rounds: int = 300) -> float:
    """us per call: the least of ``rounds`` compiled calls of ``reps`` (wall clock: a
    short call is seldom interrupted, and the least is the quiet one)."""
    fn(2, *args)
    best = math.inf
    for _ in range(rounds):
        c = time.perf_counter()
        fn(reps, *args)
        best = min(best, time.perf_counter() - c)
    return 1e6 * best / reps


def item2(args) -> None:
    numba.set_num_threads(1)
    lp = _loops()
    g = pk.initial_states(N, D, np.arange(1), 0)[0]
    size = N * (N + 1) // 2
    y, weight, index = np.empty(size), np.empty(size), np.empty(N * N, dtype=np.int64)
    pg._pack(g, y, weight, index)
    work = (np.empty((3, N, N)), np.empty(size), np.empty(size),
            np.empty(2 * size, dtype=np.int64), np.empty(N))
    w, ag, out = np.empty((N, N)), np.empty((N, N)), np.empty((N, N))
    rng = np.random.default_rng(0)
    parts = {
        "old field": tiny(lp["old_field"], g, 4.0, w, ag, out),
        "  its exponentials (libm, n(n+1)/2)": tiny(lp["libm_exp"], g, 4.0, w),
        "new field": tiny(lp["new_field"], y, 4.0, work, index, np.empty(size)),
        "  its exponentials (exp_into, n(n+1)/2)": tiny(lp["vec_exp"], y, 4.0, work[1],
                                                        work[2], work[3]),
        "  its two gathers (full G and W)": tiny(lp["gathers"], y, y, w, ag, index),
        "  the product (np.dot, 32 x 32 x 32)": tiny(lp["dot"], w, g, ag),
        "single field": tiny(lp["single_field"], y, 4.0, ps.scratch(N, index), index,
                             np.empty(size)),
        "  its exponentials (exp32_into, n(n+1)/2)": tiny(
            lp["exp32"], (4.0 * (y - 1)).astype(np.float32), np.empty(size, np.float32),
            np.empty(2 * size, np.int32)),
        "  its product (np.dot, float32: sgemm)": tiny(
            lp["dot"], w.astype(np.float32), g.astype(np.float32),
            np.empty((N, N), np.float32)),
        "old stage sums and error, per step": tiny(lp["old_stage_sums"], g,
                                                   rng.random((7, N, N)), w),
        "new stage sums and error, per step": tiny(lp["stage_sums"], y,
                                                   rng.random((7, size)), np.empty(size)),
    }
    print("\n2. where the time goes (us per call, n = 32, least of 300 short runs):")
    for k, v in parts.items():
        print(f"   {k}: {v:.2f}")
    x0, beta = block(max(2, args.systems // 16), args.stride)
    best, out = least({"121 saves": lambda: run(pn.GRAM, x0, beta),
                       "2 saves": lambda: run(pn.GRAM, x0, beta, TIMES[[0, -1]])},
                      max(args.repeats, 5))
    ev = out["121 saves"][3].sum()
    print(f"   saves: 121 against 2 (the same steps: {np.array_equal(out['121 saves'][1], out['2 saves'][1])}): "
          f"{1e6 * (best['121 saves'] - best['2 saves']) / ev:.2f} us per evaluation of "
          f"{1e6 * best['121 saves'] / ev:.2f}")
    r = out["121 saves"]
    print(f"   rejected steps: {r[2].sum()} of {r[1].sum() + r[2].sum()} tried, "
          f"{r[2].sum() / (r[1].sum() + r[2].sum()):.1%} of the evaluations")


def item3(per_eval: float) -> None:
    print("\n3. the machine's batched-matmul rate (n = 32, one thread):")
    rng = np.random.default_rng(1)
    for b in (64, 1024, 4096):
        a, g = rng.random((b, N, N)), rng.random((b, N, N))
        c = np.empty_like(a)
        best, _ = least({"mm": lambda: np.matmul(a, g, out=c)}, 30, time.perf_counter)
        us = 1e6 * best["mm"] / b
        print(f"   numpy matmul, stack of {b}: {us:.2f} us per product, "
              f"{2 * N**3 / us / 1e3:.1f} GFlop/s")
    dot = tiny(_loops()["dot"], rng.random((N, N)), rng.random((N, N)), np.empty((N, N)))
    print(f"   numba np.dot on one pair: {dot:.2f} us per product, "
          f"{2 * N**3 / dot / 1e3:.1f} GFlop/s")
    print(f"   new path: {1e6 * per_eval:.2f} us per evaluation (one product each): "
          f"{1e6 * per_eval / dot:.1f} x the product alone")


def item4(threads: int) -> None:
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    x0, beta = block(2048, 1)
    best, out = least({k: (lambda m=m: run(m, x0, beta)) for k, m in MODES.items()}, 1)
    print(f"\n4. the whole diagram (50 beta x 2048 systems, {numba.get_num_threads()} "
          "threads):")
    for k in MODES:
        print(f"   {k}: CPU {best[k]:.1f} s -> {best[k] / 2:.1f} s of wall on 2 idle cores; "
              f"{out[k][3].mean():.1f} evaluations per system")
    for a, b in (("old", "new"), ("new", "single")):
        dp, half = p_change(out[a][0], out[b][0], BETAS.size)
        print(f"   {a} / {b}: ratio {best[a] / best[b]:.2f}; max |p_{a} - p_{b}| = {dp:.2e} "
              f"against the 95 % half-width {half:.4f} at p = 1/2; systems whose fractions "
              f"differ: {(out[a][0] != out[b][0]).any(1).sum()} of {beta.size}")


def item5(threads: int) -> None:
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    cfg = {"particles": {"n": N, "seed": 0}, "parallel": {"workers": 1},
           "phase_diagram": {"dims": [D], "beta": [float(b) for b in BETAS],
                             "systems": 2048, "tolerance": TOL}}
    t0, c0 = time.perf_counter(), time.process_time()
    ds = phase_diagram(cfg)
    el, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"\n5. meanfield.phase_diagram, d = {D}, 50 beta x 2048 systems, "
          f"{numba.get_num_threads()} threads: CPU {cpu:.1f} s -> "
          f"{cpu / 2:.1f} s of wall on 2 idle cores (wall here {el:.1f} s, load "
          f"{os.getloadavg()[0]:.1f}); {ds.attrs['evaluations_per_system']:.1f} evaluations "
          "per system")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", type=int, default=128, help="per beta in item 1")
    ap.add_argument("--stride", type=int, default=5, help="every stride-th of the 50 beta")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--full", action="store_true", help="item 4 (~2.5 min of CPU)")
    ap.add_argument("--study", action="store_true", help="item 5 (~1 min of CPU)")
    ap.add_argument("--threads", type=int, default=2,
                    help="items 4, 5 (1: a single thread, where one core is busy elsewhere)")
    args = ap.parse_args()
    print(f"load {os.getloadavg()}; cores {os.cpu_count()}; times: CPU of this process, "
          "the least of interleaved runs")
    per_eval = item1(args)
    item2(args)
    item3(per_eval)
    if args.full:
        item4(args.threads)
    if args.study:
        item5(args.threads)


if __name__ == "__main__":
    main()
