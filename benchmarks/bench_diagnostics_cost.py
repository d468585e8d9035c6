"""The cost of each per-frame diagnostic of a particle run against one velocity evaluation
(``particles.diagnostics``, issue 32 item 2).

    python benchmarks/bench_diagnostics_cost.py

One thread. For n = 32 and n = 4096 tokens on S^2, S^15 and in R^2 (uniform on the
spheres, Gaussian in R^2), beta = 4: the milliseconds of one frame's diagnostic as
``meanfield.runs.particle_dataset.diagnostics`` computes it (asked alone), and of one
velocity of the SA model with the run's sum method ("auto": the harmonic sum on S^2 at
n = 4096). A step of an adaptive run costs about 11 velocities (step doubling), a fixed
RK4 step 4.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import time

import numpy as np

from meanfield import config as cfgmod
from meanfield.config.particle_diagnostics import geometry_diagnostics
from meanfield.runs import particles as pr
from meanfield.runs.particle_dataset import diagnostics

CASES = (("sphere", 3), ("sphere", 16), ("euclidean", 2))


def best_ms(fn, repeat: int) -> float:
    fn()
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - start) / repeat)
    return 1e3 * best


def main() -> None:
    print(f"{'geometry':<10} {'d':>3} {'n':>5} {'velocity':>9}  diagnostics (ms a frame)")
    for geometry, d in CASES:
        for n in (32, 4096):
            kind = "gaussian" if geometry == "euclidean" else "uniform"
            base = {"domain": {"geometry": geometry, "dim": d}, "model": {"beta": 4.0},
                    "initial": {"kind": kind}, "particles": {"n": n, "seed": 1}}
            cfg = cfgmod.validate(base)
            plan = pr.check_config(cfg)
            task = pr.ParticlesTask(cfg, plan, threads=1)
            x = task.start().x
            repeat = 200 if n == 32 else 3
            field = task.model.velocity
            velocity = best_ms(lambda: field(x, 0.0) if getattr(
                task.model, "time_dependent", False) else field(x), repeat)
            costs = []
            for name in geometry_diagnostics(geometry):
                one = cfgmod.validate({**base, "particles": {**base["particles"],
                                                             "diagnostics": [name]}})
                costs.append(f"{name} {best_ms(lambda: diagnostics(x, one, plan), repeat):.3f}")
            print(f"{geometry:<10} {d:3d} {n:5d} {velocity:9.3f}  " + ", ".join(costs),
                  flush=True)


if __name__ == "__main__":
    main()
