"""Wall time of the convergence study (meanfield.studies.transport.convergence) and where it goes.

    python benchmarks/bench_convergence.py            # S^1, n = 1e2 .. 1e6, 8 replicas
    python benchmarks/bench_convergence.py --quick    # S^1, n = 1e2 .. 1e4
    python benchmarks/bench_convergence.py --sphere   # S^2, n = 1e2 .. 1e5 (p = 2)
    python benchmarks/bench_convergence.py --sphere --n-max 1e4
    python benchmarks/bench_convergence.py --workers 2                  # issue 10's S^1
    python benchmarks/bench_convergence.py --sphere --reference 1 --workers 2  # and S^2

Measured (2-core machine, otherwise idle, 2026-11-23): S^1 n = 1e2..1e6 x 8
replicas with 2 dask workers: 469 s for the study (7 min 52 s with the warm-up run);
S^2 n = 1e2..1e5 x 8 replicas, reference 1, 2 workers: 406 s (6 min 49 s). Serial S^2,
one replica: a member at n = 1e5 takes 121 s, 97 % of it the metrics (four exact
assignments of 1e5 tokens, ~20-26 s each, and the reference atoms).

S^1: beta = 1, SA, no noise, von Mises (concentration 0.5) initial, spectral resolution
256, save times 0, 1, 2, dt = 0.05 (as ``test_acceptance_circle_rates``), ``--p`` (2 by
default: the issue's W2; the acceptance test uses 1). S^2: beta = 1, SA, von Mises-Fisher
(concentration 1), resolution 33, t = 0, 1, dt = 0.1, p = 2, W2 against 2n equal-mass
atoms by the exact assignment (as ``test_acceptance_sphere_rates``).

The study runs as it is (serial executor, in this process); its time is split by
wrapping, for the run only, the functions it calls (no change to the study's code):

- PDE: ``coupling.pde_table`` (the table of PDE states, once);
- particles: the X path, ``RetractedRK4.step`` on the particle velocity in
  ``coupling.coupled_paths``;
- coupling: the Y path driven by the PDE's field, ``coupling._rk4_in_time``;
- metrics: ``meanfield.metrics.wasserstein.wasserstein`` (S^1; also the W1 at t = 0 when
  p != 1), ``convergence.reference_w2`` (S^2: quantisation and assignment),
  ``coupling.coupling_distance`` and ``convergence.frame_dataset``;
- other: the rest (per member: building the solver and model, the initial samples; the
  dataset and the fits).

Per n the members' split is summed over the replicas. Each member is run when the
executor asks for it, so a member's seconds are the wrapped seconds between two
``run_member`` calls. Benchmarks are not tests: nothing is asserted.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import math
import os
import time
from collections import defaultdict

import numpy as np

from meanfield.studies.transport import convergence as conv
from meanfield.studies.transport import coupling as cp

# the module (meanfield.metrics re-exports its function under the same name)
wmod = importlib.import_module("meanfield.metrics.wasserstein")
PARTS = ("particles", "PDE", "coupling", "metrics")


class Clock:
    """Seconds per part, per member (``current``: the member's n, or None)."""

    def __init__(self):
        self.current = None
        self.seconds = defaultdict(lambda: defaultdict(float))
        self.members = defaultdict(float)
        self.depth = 0

    def wrap(self, part, fun):
        def timed(*args, **kwargs):
            if self.depth:  # nested (the W1 inside a metric): counted once
                return fun(*args, **kwargs)
            self.depth += 1
            start = time.perf_counter()
            try:
                return fun(*args, **kwargs)
            finally:
                self.seconds[self.current][part] += time.perf_counter() - start
                self.depth -= 1
        return timed


@contextlib.contextmanager
def timing(clock: Clock):
    """Wrap the study's callees for the duration (restored after)."""
    saved = []

    def patch(obj, name, new):
        saved.append((obj, name, getattr(obj, name)))
        setattr(obj, name, new)

    class TimedRK4(cp.RetractedRK4):
        def step(self, *a, **k):
            return clock.wrap("particles", super().step)(*a, **k)

    real_member = conv.run_member

    def member(cfg, plan, table, params):
        clock.current = params["n"]
        start = time.perf_counter()
        try:
            return real_member(cfg, plan, table, params)
        finally:
            clock.members[params["n"]] += time.perf_counter() - start
            clock.current = None

    patch(cp, "pde_table", clock.wrap("PDE", cp.pde_table))
    patch(cp, "RetractedRK4", TimedRK4)
    patch(cp, "_rk4_in_time", clock.wrap("coupling", cp._rk4_in_time))
    patch(cp, "coupling_distance", clock.wrap("metrics", cp.coupling_distance))
    patch(wmod, "wasserstein", clock.wrap("metrics", wmod.wasserstein))
    patch(conv, "reference_w2", clock.wrap("metrics", conv.reference_w2))
    patch(conv, "frame_dataset", clock.wrap("metrics", conv.frame_dataset))
    patch(conv, "run_member", member)
    try:
        yield clock
    finally:
        for obj, name, value in reversed(saved):
            setattr(obj, name, value)


def config(args) -> dict:
    if args.sphere:
        ns = [10**k for k in range(2, round(math.log10(args.n_max)) + 1)]
        return {"model": {"beta": 1.0, "normalized": True},
                "initial": {"kind": "von_mises", "concentration": 1.0},
                "domain": {"geometry": "sphere"}, "discretization": {"resolution": 33},
                "time": {"t_final": 1.0, "save_every": 1.0, "dt": 0.1},
                "convergence": {"n": ns, "replicas": args.replicas, "p": 2,
                                "reference": args.reference},
                "parallel": {"workers": args.workers}}
    ns = [10**k for k in range(2, round(math.log10(args.n_max)) + 1)]
    return {"model": {"beta": 1.0, "normalized": True},
            "initial": {"kind": "von_mises", "concentration": 0.5},
            "discretization": {"resolution": 256},
            "time": {"t_final": 2.0, "save_every": 1.0, "dt": 0.05, "tolerance": 1e-10},
            "convergence": {"n": ns, "replicas": args.replicas, "p": args.p},
            "parallel": {"workers": args.workers}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="n up to 1e4")
    ap.add_argument("--sphere", action="store_true", help="the S^2 study (p = 2)")
    ap.add_argument("--n-max", type=float, default=None,
                    help="largest n (default 1e6 on S^1, 1e5 on S^2; 1e4 with --quick)")
    ap.add_argument("--replicas", type=int, default=8)
    ap.add_argument("--p", type=float, default=2.0, help="S^1 only (S^2: 2)")
    ap.add_argument("--reference", type=int, default=2,
                    help="S^2: atoms per token of the reference (default 2)")
    ap.add_argument("--workers", type=int, default=1,
                    help="dask workers (default 1: serial, the time split is measured; "
                         "with more the members run in worker processes and only the "
                         "wall time and the PDE are measured)")
    args = ap.parse_args()
    if args.n_max is None:
        args.n_max = 1e4 if args.quick else (1e5 if args.sphere else 1e6)
    cfg = config(args)
    load = os.getloadavg()[0]
    print(f"{'S^2' if args.sphere else 'S^1'} convergence study: n = "
          f"{cfg['convergence']['n']}, {args.replicas} replicas, p = "
          f"{cfg['convergence']['p']:g}; {os.cpu_count()} cores, load average {load:.2f} at "
          "the start (other jobs on the machine slow this down)")
    # Warm the numba caches and imports on a tiny run (not timed).
    small = {**cfg, "convergence": {**cfg["convergence"], "n": [10, 20], "replicas": 1},
             "parallel": {"workers": 1}}
    conv.convergence(small)
    clock = Clock()
    start = time.perf_counter()
    with timing(clock):
        ds = conv.convergence(cfg)
    wall = time.perf_counter() - start
    print(f"status {ds.attrs.get('status')}, wall {wall:.1f} s "
          f"(load average now {os.getloadavg()[0]:.2f})\n")
    if args.workers > 1:  # the members ran in other processes: no split
        print(f"{args.workers} workers: wall time only; fitted slope of the distance per "
              f"time: {np.round(ds['slope'].values, 3).tolist()}")
        return
    print(f"{'n':>9} {'members s':>10} " + " ".join(f"{p:>10}" for p in PARTS)
          + f" {'other':>8}")
    pde = clock.seconds[None]["PDE"]
    print(f"{'(PDE)':>9} {'':>10} {'':>10} {pde:10.2f}")
    totals = defaultdict(float)
    for n in cfg["convergence"]["n"]:
        s = clock.seconds[n]
        other = clock.members[n] - sum(s.values())
        print(f"{n:>9} {clock.members[n]:10.2f} " + " ".join(f"{s[p]:10.2f}" for p in PARTS)
              + f" {other:8.2f}")
        for p in PARTS:
            totals[p] += s[p]
    totals["PDE"] += pde
    rest = wall - sum(totals.values())
    print(f"{'total':>9} {wall:10.2f} " + " ".join(f"{totals[p]:10.2f}" for p in PARTS)
          + f" {rest:8.2f}")
    print("shares: " + ", ".join(f"{p} {100 * totals[p] / wall:.0f} %" for p in PARTS)
          + f", other {100 * rest / wall:.0f} %")
    ns = cfg["convergence"]["n"]
    if len(ns) >= 2:  # the members' cost per decade, extrapolated one decade on
        a, b = clock.members[ns[-2]], clock.members[ns[-1]]
        k = math.log(b / a) / math.log(ns[-1] / ns[-2])
        print(f"members' time ~ n^{k:.2f} between n = {ns[-2]} and {ns[-1]}: n = "
              f"{10 * ns[-1]} would take about {b * 10**k:.0f} s ({b * 10**k / 60:.1f} min)")
    slope = ds["slope"].values
    print(f"fitted slope of the distance per time: {np.round(slope, 3).tolist()}")


if __name__ == "__main__":
    main()
