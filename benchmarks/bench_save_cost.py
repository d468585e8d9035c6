"""The fixed cost of a save in a particle run: one save against 100 saves at the same steps.

    python benchmarks/bench_save_cost.py            # best of 3 per cell
    python benchmarks/bench_save_cost.py --repeat 5

n = 32 tokens, d = 16, fixed dt = 0.05, t <= 10 (200 steps), on one thread: one BLAS
thread for the whole benchmark (threadpoolctl, entered once here) and a thread policy of
one thread (numba's sums; ``meanfield.runs.threads``), so that what is measured is the
run's cost, not threads contending with other jobs. Each case runs with ``time.save_every = 10`` (1 save) and ``0.1``
(100 saves); the steps are the same (a save at a multiple of dt cuts no step), so the
difference is what a save costs. Cases:

- SA on S^15 (beta = 4): the plain post-ln model (fast-sum path, no weights);
- SA with a causal mask on S^15: the weighted model (dense attention), the one whose
  small products run on one BLAS thread;
- rescaled (Q, K) in R^16: one random head, ``particles.rescaled = true`` (time-dependent
  field), also a weighted model.

Each case is timed twice in the same process: "per save" is the old path (issue 32), a
``threadpoolctl`` limit entered and left at every save (``ParticlesTask.advance`` of
before), "per run" the current one (the limit entered once per run). Printed: the seconds
of each, the ratio 100 saves / 1 save of each path (goal: <= 1.3 per run), and the time
of the diagnostics of one frame (``particle_dataset.diagnostics``), the rest of a save.
``--diagnostics none`` runs with ``particles.diagnostics = []`` (a save is then the
tokens' copy and the engine's bookkeeping; issue 32 item 2).
"""
from __future__ import annotations

import argparse
import contextlib
import time

import numpy as np
from threadpoolctl import threadpool_limits

import meanfield
from meanfield import config as cfgmod
from meanfield.runs import particles as pr
from meanfield.runs import threads as thread_policy
from meanfield.runs.engine import Engine
from meanfield.runs.particle_dataset import diagnostics

N, D, DT, T_FINAL = 32, 16, 0.05, 10.0

CASES = {
    "SA on S^15": {
        "domain": {"geometry": "sphere", "dim": D}, "model": {"beta": 4.0},
        "initial": {"kind": "uniform"}, "particles": {"n": N, "seed": 1}},
    "SA + causal mask on S^15": {
        "domain": {"geometry": "sphere", "dim": D}, "model": {"beta": 4.0},
        "initial": {"kind": "uniform"}, "particles": {"n": N, "seed": 1, "mask": "causal"}},
    "rescaled (Q, K) in R^16": {
        "domain": {"geometry": "euclidean", "dim": D}, "model": {"beta": 1.0},
        "initial": {"kind": "gaussian", "mean": [0.0] * D, "covariance": 1.0},
        "weights": {"query": {"kind": "gaussian", "seed": 1},
                    "key": {"kind": "gaussian", "seed": 2},
                    "value": {"kind": "symmetric", "eigenvalues": [1.0] + [0.5] * (D - 1),
                              "seed": 3}},
        "particles": {"n": N, "seed": 1, "rescaled": True}},
}


class PerSaveLimits(pr.ParticlesTask):
    """The old path: a threadpoolctl limit entered at every save (every ``advance``)."""

    def held(self):
        return contextlib.nullcontext()

    def advance(self, state, point, on_step):
        if self.plan["weighted"] and self.plan["n"] ** 2 * self.plan["dim"] \
                <= pr.SMALL_ATTENTION:
            with thread_policy.one_blas_thread():
                return super().advance(state, point, on_step)
        return super().advance(state, point, on_step)


ASKED: list | None = None  # particles.diagnostics (None: the default, all)


def config(case: dict, save_every: float) -> dict:
    particles = case["particles"] if ASKED is None else \
        {**case["particles"], "diagnostics": ASKED}
    return {**case, "particles": particles,
            "time": {"t_final": T_FINAL, "save_every": save_every, "dt": DT}}


def run(case: dict, save_every: float, task_class) -> tuple[float, int]:
    cfg = cfgmod.validate(config(case, save_every))
    plan = pr.check_config(cfg)
    task = task_class(cfg, plan)
    start = time.perf_counter()
    ds = Engine(cfg, None).run(task)
    return time.perf_counter() - start, int(ds.attrs["steps"])


def best(case, save_every, task_class, repeat):
    results = [run(case, save_every, task_class) for _ in range(repeat)]
    return min(r[0] for r in results), results[0][1]


def diagnostics_time(case: dict, repeat: int = 200) -> float:
    cfg = cfgmod.validate(config(case, 0.1))
    plan = pr.check_config(cfg)
    task = pr.ParticlesTask(cfg, plan)
    x = task.start().x
    diagnostics(x, cfg, plan)
    start = time.perf_counter()
    for _ in range(repeat):
        diagnostics(x, cfg, plan)
    return (time.perf_counter() - start) / repeat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--diagnostics", choices=("default", "none"), default="default",
                        help="particles.diagnostics: the default (all) or [] (none)")
    args = parser.parse_args()
    global ASKED
    ASKED = None if args.diagnostics == "default" else []
    print(f"meanfield {meanfield.__version__}: n = {N}, d = {D}, dt = {DT}, t <= {T_FINAL:g} "
          f"(200 steps), best of {args.repeat}, diagnostics {args.diagnostics}\n")
    print(f"{'case':<26} {'path':<9} {'1 save':>8} {'100 saves':>10} {'ratio':>6} "
          f"{'steps':>11} {'diagnostics':>12}")
    one_thread = thread_policy.ThreadPolicy(1, thread_policy.machine_cores())
    with threadpool_limits(limits=1, user_api="blas"), one_thread.applied():
        for name, case in CASES.items():
            run(case, 10.0, pr.ParticlesTask)  # warm-up (numba, caches)
            diag = diagnostics_time(case)
            for label, task_class in (("per save", PerSaveLimits),
                                      ("per run", pr.ParticlesTask)):
                one, steps1 = best(case, 10.0, task_class, args.repeat)
                many, steps100 = best(case, 0.1, task_class, args.repeat)
                print(f"{name:<26} {label:<9} {one:8.3f} {many:10.3f} {many / one:6.2f} "
                      f"{steps1:5d}/{steps100:<5d} {1e3 * diag:9.3f} ms")


if __name__ == "__main__":
    main()
