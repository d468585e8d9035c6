"""The phase diagram (issue 12, item 3): the full d = 1024 diagram, d = 32 against
d = 4096, the papers' approach on a subset, and the tolerance check, in one run.

    nice -n 19 python benchmarks/bench_phase_diagram.py             # everything
    nice -n 19 python benchmarks/bench_phase_diagram.py --fraction 0.1   # 5 of 50 beta
    nice -n 19 python benchmarks/bench_phase_diagram.py --workers 2      # dask
    python benchmarks/bench_phase_diagram.py --engine torch --systems 512 --skip-rest

``--precision single`` runs items 1 and 2 with ``[phase_diagram] precision = "single"`` (the
Gram field's inner work in float32, the state and the step control float64; the default
"double" is the study's default). ``--engine`` picks ``[phase_diagram] engine`` for items 1
and 2: "numba" (default, the
compiled engine), "numpy" (the batched array-API scheme), "torch" or "cupy" (the same
scheme on that library, on the GPU where there is one: the device is printed). On a GPU
the batch is the unit of work: give a large ``--batch`` ((system, beta) pairs per
member, default 4096) so that each field evaluation fills the device; ``--systems``
(default 2048) per beta, the time extrapolated linearly to 2048; ``--skip-rest`` skips
items 3 and 4 (CPU-only reference numbers).

Timed (SA, n = 32, threshold 0.999, t <= 30 on 121 saves, tolerance 1e-5):

1. the default d = 1024 diagram, 50 beta in [0.1, 9] x 2048 systems (or ``--fraction``
   of the betas, evenly spread, the time extrapolated linearly: the cost per beta is
   not uniform, the spread keeps the mix), through ``meanfield.phase_diagram`` with
   ``[parallel] workers`` (default 1: the compiled engine's threads, one per core, in
   this process, so that its CPU time is measured too: on a shared machine the wall
   time carries the other jobs' load, CPU time / 2 is the wall time on 2 idle cores);
2. d = 32 against d = 4096 on the same subset (10 beta x 256 systems, serial): the Gram
   matrices are n x n whatever d, so a field evaluation costs the same; the runs differ
   by their dynamics (the initial cosines are O(d^{-1/2})), so the time per field
   evaluation is the ratio that measures the cost of d, and the total time is printed
   too (CPU times: the load of other jobs falls on wall times);
3. the papers' approach in plain numpy: full (B, n, d) tokens, explicit Euler with
   dt = 0.1 (``x <- normalize(x + dt P^perp softmax(beta X X^T) X)``, O(n^2 d) per
   system and step), on 64 systems at one beta for t <= 30 (300 steps), extrapolated
   linearly to the 50 x 2048 systems of the diagram;
4. the tolerance: the d = 1024 and d = 8 diagrams on a subset at tolerance 1e-5 and
   1e-6: the largest change of the probability against the half-width of its 95 %
   interval.

The machine is shared: timings vary with the load (``uptime`` is printed); compare the
ratios within one run.
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import time

import numpy as np

from meanfield.model.ensemble import uniform_ensemble
from meanfield.studies import array_engines as ae
from meanfield.studies.tokens import phase_kernels as pk
from meanfield.studies.tokens.phase_diagram import phase_diagram
from solvers.particles.direct import normalize_rows, tangent_projection

N, THR = 32, 0.999
BETAS = np.linspace(0.1, 9.0, 50)
TIMES = np.linspace(0.0, 30.0, 121)


def config(dims, betas, systems, workers=1, tolerance=1e-5, engine="numba", batch=4096,
           precision="double"):
    return {"particles": {"n": N, "seed": 0}, "parallel": {"workers": workers},
            "phase_diagram": {"dims": list(dims), "beta": [float(b) for b in betas],
                              "systems": systems, "tolerance": tolerance,
                              "engine": engine, "batch": batch, "precision": precision}}


def papers_step(x, beta, dt=0.1):
    g = beta * (x @ x.swapaxes(1, 2))
    g -= g.max(axis=-1, keepdims=True)
    np.exp(g, out=g)
    g /= g.sum(axis=-1, keepdims=True)
    return normalize_rows(x + dt * tangent_projection(x, g @ x))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fraction", type=float, default=1.0, help="of the 50 beta (item 1)")
    ap.add_argument("--workers", type=int, default=1,
                    help="1: the numba threads of this process (CPU time measured)")
    ap.add_argument("--skip-full", action="store_true")
    ap.add_argument("--engine", choices=ae.ENGINES, default="numba",
                    help="items 1 and 2: numba (compiled), numpy, torch, cupy")
    ap.add_argument("--systems", type=int, default=2048, help="per beta in item 1")
    ap.add_argument("--batch", type=int, default=4096,
                    help="(system, beta) pairs per member (large on a GPU)")
    ap.add_argument("--skip-rest", action="store_true", help="skip items 3 and 4")
    ap.add_argument("--precision", choices=("double", "single"), default="double",
                    help="items 1 and 2: [phase_diagram] precision (single: the Gram "
                         "field's inner work in float32)")
    args = ap.parse_args()
    eng = args.engine
    print(f"load: {os.getloadavg()}; cores: {os.cpu_count()}; engine {eng} on "
          f"{ae.device_name(eng)}; precision {args.precision}")
    # compile (cached) / warm the device before timing
    for d in (64, 8):
        pk.pair_fractions(n=N, d=d, beta=np.ones(2), systems=np.arange(2),
                          times=TIMES[:5], threshold=THR, normalized=True, seed=0,
                          tolerance=1e-5, engine=eng, precision=args.precision)

    full = None
    if not args.skip_full:
        k = max(1, round(50 * args.fraction))
        betas = BETAS[np.unique(np.linspace(0, 49, k).round().astype(int))]
        t0, c0 = time.perf_counter(), time.process_time()
        ds = phase_diagram(config([1024], betas, args.systems, args.workers,
                                  engine=eng, batch=args.batch, precision=args.precision))
        el, cpu = time.perf_counter() - t0, time.process_time() - c0
        scale = 50 / betas.size * 2048 / args.systems
        full = el * scale
        print(f"\n1. d = 1024 diagram, {betas.size} beta x {args.systems} systems, "
              f"engine {eng}, workers = {args.workers}: wall {el:.1f} s"
              + (f" -> 50 beta x 2048: {full:.1f} s (extrapolated)" if scale > 1 else "")
              + f"; {ds.attrs['evaluations_per_system']:.0f} field evaluations per system, "
              f"{ds.attrs['systems_frozen']} of {betas.size * 2048} systems frozen")
        if args.workers == 1 and eng != "numba":
            print(f"   CPU time of this process {cpu * scale:.1f} s for 50 beta x 2048")
        elif args.workers == 1:  # the numba threads run in this process: its CPU time
            print(f"   CPU time {cpu * scale:.1f} s for 50 beta: {cpu * scale / 2:.1f} s of "
                  "wall on 2 idle cores (the wall time above carries the machine's load)")

    sub_b, sub_s = BETAS[::5], 256
    res = {}
    for d in (32, 4096):
        t0, c0 = time.perf_counter(), time.process_time()
        ds = phase_diagram(config([d], sub_b, sub_s, engine=eng, batch=args.batch,
                                  precision=args.precision))
        el, cpu = time.perf_counter() - t0, time.process_time() - c0
        ev = ds.attrs["evaluations_per_system"] * sub_b.size * sub_s
        res[d] = (el, cpu, cpu / ev)
        print(f"\n2. d = {d}: {sub_b.size} beta x {sub_s} systems: wall {el:.2f} s, CPU "
              f"{cpu:.2f} s, {1e6 * cpu / ev:.2f} us CPU per field evaluation per system")
    print(f"   ratio d = 4096 / d = 32: wall {res[4096][0] / res[32][0]:.3f}, CPU "
          f"{res[4096][1] / res[32][1]:.3f}, CPU per field evaluation "
          f"{res[4096][2] / res[32][2]:.3f}")

    if args.skip_rest:
        return
    x = uniform_ensemble(64, N, 1024, seed=1)
    t0 = time.perf_counter()
    for _ in range(300):
        x = papers_step(x, 4.0)
    papers = (time.perf_counter() - t0) * 50 * 2048 / 64
    print(f"\n3. papers' approach (numpy, full tokens, Euler dt = 0.1), 64 systems d = 1024 "
          f"t <= 30, extrapolated to 50 x 2048: {papers:.0f} s")
    if full is not None:
        print(f"   ratio papers / ours (d = 1024 diagram): {papers / full:.1f}")

    for d in (1024, 8):
        p = {}
        for tol in (1e-5, 1e-6):
            p[tol] = phase_diagram(config([d], BETAS[::7], 512, tolerance=tol))
        diff = np.abs(p[1e-5].pair_probability - p[1e-6].pair_probability).values
        half = (p[1e-6].pair_probability_high - p[1e-6].pair_probability_low).values / 2
        print(f"\n4. d = {d}, 512 systems, tolerance 1e-5 vs 1e-6: max |dp| = "
              f"{diff.max():.4f}; 95 % half-width at p = 0.5: {half.max():.4f}; max of "
              f"|dp| / half-width {np.nanmax(diff / np.where(half > 0, half, np.nan)):.3f}")


if __name__ == "__main__":
    main()
