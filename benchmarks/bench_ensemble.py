"""Ensemble engine: one batched step with the span reduction against the papers' approach.

    nice -n 19 python benchmarks/bench_ensemble.py            # B = 2048, n = 32
    nice -n 19 python benchmarks/bench_ensemble.py --quick    # B = 256
    OPENBLAS_NUM_THREADS=2 nice -n 19 python benchmarks/bench_ensemble.py  # 2 BLAS threads

Timed (best of ``--repeat`` rounds, SA, beta = 4, tokens i.i.d. uniform on S^{d-1}):

- reduced: one retracted RK4 step (4 batched field evaluations) of the coefficients
  ``C`` (B, n, n), for d = 32, 1024, 4096: the state is (B, n, n) whatever d, so the step
  costs the same; the coefficients are drawn by ``uniform_span`` (Bartlett, no
  d-dimensional tokens; its time is printed too). Ratios to d = 32 are printed.
- papers: the approach of the literature's code in plain numpy: full (B, n, d) tokens,
  one explicit Euler step ``x <- normalize(x + dt P^perp(softmax(beta X X^T) X))`` with
  dt = 0.1 (one field evaluation, O(n^2 d) per system). d = 1024 and 4096 run on a
  subset of B/8 systems, scaled by 8 (the cost is linear in B; stated in the output).
- per unit time: an RK4 step of dt = 0.1 (reduced) covers the same time as one Euler
  step of dt = 0.1 (papers), so the ratio of step times is the ratio of run times at
  these steps (RK4 at 0.1 is accurate to ~1e-6 per unit time; Euler to ~1e-2).
  The timings vary with the machine's load (shared, 2 cores): compare ratios within
  one run.
- a subset of the phase diagram (one beta, 64 systems, t <= 30: 300 steps; the pair
  probability printed at t = 7, near the equiangular crossing time 6.95) timed both
  ways in d = 1024 (and reduced with adaptive steps), and the full diagram (50 beta x B
  systems) extrapolated linearly from it (the subset's small batch is less efficient
  than a full one: the step timings above are the fairer ratio).
"""
from __future__ import annotations

import os

# One BLAS thread unless the caller says otherwise (set before numpy loads OpenBLAS): on
# the shared 2-core machine, OpenBLAS threads waiting for a core taken by another job
# made single calls 10-50x slower at random (measured: a d = 4096 Euler step 0.64 s with
# one thread, 4.7 s with two). Both approaches run with the same threads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import time

import numpy as np

from meanfield.model import ensemble as E
from meanfield.model.particles import AttentionParticles
from solvers.particles.direct import normalize_rows, tangent_projection
from solvers.steppers.batch import BatchRK4

BETA, N, DT = 4.0, 32, 0.1


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def papers_euler_step(x, beta=BETA, dt=DT):
    """The literature's step: explicit Euler on full tokens, then back to the sphere."""
    g = beta * (x @ x.swapaxes(1, 2))
    g -= g.max(axis=-1, keepdims=True)
    np.exp(g, out=g)
    g /= g.sum(axis=-1, keepdims=True)
    return normalize_rows(x + dt * tangent_projection(x, g @ x))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="B = 256 instead of 2048")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    systems = 256 if args.quick else 2048
    model = AttentionParticles(BETA)
    rk4 = BatchRK4(lambda x: E.batch_velocity(model, x))
    print(f"B = {systems} systems, n = {N} tokens, SA beta = {BETA}; best of {args.repeat}; "
          f"OPENBLAS_NUM_THREADS = {os.environ['OPENBLAS_NUM_THREADS']}")

    dims = (32, 1024, 4096)
    reduced, papers, sample, coeffs, tokens, subs = {}, {}, {}, {}, {}, {}
    for d in dims:
        t0 = time.perf_counter()
        coeffs[d] = E.uniform_span(systems, N, d, seed=0)
        sample[d] = time.perf_counter() - t0
        subs[d] = systems if d <= 32 else systems // 8
        tokens[d] = E.uniform_ensemble(subs[d], N, d, seed=0)
    # Interleaved rounds (every d, both ways, then again): load from other jobs on the
    # machine falls on all alike; the best of the rounds is kept.
    for _ in range(args.repeat):
        for d in dims:
            t = best(lambda c=coeffs[d]: rk4.step(c, DT), 1)
            reduced[d] = min(reduced.get(d, np.inf), t)
            t = best(lambda x=tokens[d]: papers_euler_step(x), 1) * systems / subs[d]
            papers[d] = min(papers.get(d, np.inf), t)
    print("\nreduced (coefficients (B, n, n)), one RK4 step of dt = 0.1:")
    for d in dims:
        print(f"  d = {d:5d}: step {1e3 * reduced[d]:8.2f} ms  (ratio to d = 32: "
              f"{reduced[d] / reduced[32]:.3f}); sampling C0 {1e3 * sample[d]:.1f} ms")
    print("\npapers' approach (full (B, n, d) tokens), one explicit Euler step, dt = 0.1:")
    for d in dims:
        note = "" if subs[d] == systems else \
            f"  (timed on {subs[d]} systems, x {systems // subs[d]})"
        print(f"  d = {d:5d}: step {1e3 * papers[d]:8.2f} ms  (papers / reduced: "
              f"{papers[d] / reduced[d]:.2f}){note}")
    del tokens

    d, steps, sub = 1024, 300, min(64, systems)
    print(f"\na subset of the phase diagram: one beta, {sub} systems, d = {d}, t <= 30 "
          f"({steps} steps of dt = 0.1; adaptive: tolerance 1e-6):")
    x = E.uniform_ensemble(sub, N, d, seed=1)
    t0 = time.perf_counter()
    run = E.simulate_ensemble(model, x, np.arange(1, 31, dtype=float), dt=DT, reduce=True)
    ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    adaptive = E.simulate_ensemble(model, x, np.arange(1, 31, dtype=float),
                                   tolerance=1e-6, reduce=True)
    ours_adaptive = time.perf_counter() - t0
    t0 = time.perf_counter()
    early = None
    for k in range(steps):
        x = papers_euler_step(x)
        if k + 1 == 70:
            early = x @ x.swapaxes(1, 2)
    theirs = time.perf_counter() - t0
    off = ~np.eye(N, dtype=bool)
    pair = [[np.mean(g[:, off] >= 0.999) for g in gs] for gs in
            ((run.gram()[7], adaptive.gram()[7], early),
             (run.gram()[-1], adaptive.gram()[-1], x @ x.swapaxes(1, 2)))]
    print(f"  reduced RK4 dt = 0.1: {ours:.2f} s; reduced adaptive: {ours_adaptive:.2f} s "
          f"({adaptive.steps.mean():.0f} steps per system); papers' Euler (numpy): "
          f"{theirs:.2f} s")
    print(f"  ratio papers / reduced: {theirs / ours:.1f} (fixed), "
          f"{theirs / ours_adaptive:.1f} (adaptive)")
    for t, p in zip((7, 30), pair):
        print(f"  pair probability <x_i, x_j> >= 0.999 at t = {t}: {p[0]:.4f} (RK4), "
              f"{p[1]:.4f} (adaptive), {p[2]:.4f} (Euler)")
    scale = 50 * systems / sub
    print(f"  the full diagram (50 beta x {systems} systems) extrapolated linearly: "
          f"reduced {scale * ours:.0f} s (adaptive {scale * ours_adaptive:.0f} s), papers' "
          f"numpy {scale * theirs:.0f} s")

if __name__ == "__main__":
    main()
