"""Per-step cost of SA particles on S^1 as they cluster: the rows far from every cluster.

    python benchmarks/bench_clustering.py                      # n = 1e6, t = 0..10
    python benchmarks/bench_clustering.py --n 1e5 --t-final 5  # quicker

SA, beta = 9, fast Fourier sums at accuracy 1e-10, RK4 with a fixed step. The tokens start
as two tight clusters (von Mises, concentration 400, at 0 and pi, 45 % each) and 10 %
spread uniformly in between: the tokens between the clusters are the rows whose sums
the Fourier method cannot resolve relative to their own size (``Z_i`` down to ``e^{-9}``
of a cluster's), which ``relative_rows`` recomputes. They drain into the clusters over
the run, the last ones (near the unstable midpoints) slowly.

For each step the script prints the wall time of the step, the rows recomputed (per
velocity evaluation, the largest of the step's four) and the time they took. Then, at a
few times of the same trajectory, one velocity evaluation three ways:

- now: ``interaction_sums`` as it is (the recomputed rows by Chebyshev interpolation on
  arcs, ``solvers.particles.arcs``);
- before: the same with the recomputed rows by the direct kernel (what the code did
  before; rows x n). Measured on up to ``--direct-rows`` of the rows and scaled to all
  of them by the row count (its cost is exactly linear in the rows; marked ``~`` when
  scaled);
- the ratio before / now per step (four evaluations a step).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from meanfield.model.particles import AttentionParticles, simulate
from solvers.particles import fast
from solvers.particles.direct import exp_kernel_sums, normalize_rows

BETA, ACCURACY = 9.0, 1e-10


def two_clusters(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    k = int(0.45 * n)
    theta = np.concatenate([rng.vonmises(0.0, 400.0, k), rng.vonmises(np.pi, 400.0, k),
                            rng.uniform(0, 2 * np.pi, n - 2 * k)])
    return np.column_stack([np.cos(theta), np.sin(theta)])


class Recorder:
    """Wraps ``fast.relative_sums``: rows and seconds per call."""

    def __init__(self):
        self.calls: list[tuple[int, float]] = []
        self.inner = fast.relative_sums

    def __call__(self, queries, keys, beta, tolerance, backend="auto"):
        start = time.perf_counter()
        out = self.inner(queries, keys, beta, tolerance, backend)
        self.calls.append((queries.shape[0], time.perf_counter() - start))
        return out


def velocity_time(model, x, repeat=2):
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        model.velocity(x)
        best = min(best, time.perf_counter() - start)
    return best


def before_time(model, x, recorder, max_rows):
    """One velocity evaluation with the recomputed rows by the direct kernel: the
    evaluation as it is, less the time of the arcs, plus the direct kernel's time for
    as many rows (measured on up to ``max_rows`` of them)."""
    recorder.calls.clear()
    start = time.perf_counter()
    model.velocity(x)
    total = time.perf_counter() - start
    rows = sum(r for r, _ in recorder.calls)
    arc_seconds = sum(s for _, s in recorder.calls)
    if rows == 0:
        return total, rows, False
    q = normalize_rows(x[:min(rows, max_rows)])  # any rows: the direct cost is per row
    start = time.perf_counter()
    exp_kernel_sums(q, normalize_rows(x), BETA)
    direct = (time.perf_counter() - start) * rows / q.shape[0]
    return total - arc_seconds + direct, rows, rows > max_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e6)
    parser.add_argument("--t-final", type=float, default=10.0)
    parser.add_argument("--dt", type=float, default=0.1)
    parser.add_argument("--direct-rows", type=int, default=2000)
    args = parser.parse_args()
    n = int(args.n)
    model = AttentionParticles(BETA, method="fourier", accuracy=ACCURACY)
    recorder = Recorder()
    fast.relative_sums = recorder
    x0 = two_clusters(n)
    model.velocity(x0)  # compile
    recorder.calls.clear()
    steps: list[tuple[float, float, int, float]] = []
    last = [time.perf_counter()]

    def on_step(t: float) -> None:
        now = time.perf_counter()
        calls = recorder.calls
        steps.append((t, now - last[0], max((r for r, _ in calls), default=0),
                      sum(s for _, s in calls)))
        recorder.calls = []
        last[0] = time.perf_counter()

    probe_times = [t for t in (0.0, 1.0, 2.0, 5.0, 10.0, 20.0) if t <= args.t_final]
    saves = [t for t in probe_times if t > 0] or [args.t_final]
    if saves[-1] < args.t_final:
        saves.append(args.t_final)
    print(f"n = {n}, SA, beta = {BETA}, fourier at {ACCURACY:g}, RK4 dt = {args.dt}")
    run = simulate(model, x0, saves, dt=args.dt, on_step=on_step)
    print(f"{'t':>6} {'step s':>8} {'rows':>8} {'rows s':>8}")
    every = max(1, len(steps) // 25)
    for t, wall, rows, secs in steps[::every]:
        print(f"{t:6.2f} {wall:8.3f} {rows:8d} {secs:8.3f}")
    walls = np.array([w for _, w, _, _ in steps])
    print(f"steps {len(steps)}: per step median {np.median(walls):.3f} s, max "
          f"{walls.max():.3f} s, total {walls.sum():.1f} s")

    # The same trajectory's states, one evaluation now and before.
    print(f"\n{'t':>6} {'rows':>8} {'now s':>8} {'before s':>10} {'before/now':>10}")
    for t, x in zip(run.times, run.positions):
        if t not in probe_times:
            continue
        now = velocity_time(model, x)
        before, rows, scaled = before_time(model, x, recorder, args.direct_rows)
        mark = "~" if scaled else " "
        print(f"{t:6.2f} {rows:8d} {now:8.3f} {mark}{before:9.2f} {before / now:10.1f}")


if __name__ == "__main__":
    main()
