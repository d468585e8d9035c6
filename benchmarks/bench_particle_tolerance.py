"""The tolerance of adaptive particle runs against the error obtained (issue 32, item 5).

    python benchmarks/bench_particle_tolerance.py

For each case, runs at ``time.tolerance`` 1e-2 .. 1e-10 with saves every 0.1, and a
reference at 1e-12 (the same saves); the error is the largest token distance over all
saves from the reference (relative to the largest token norm: 1 on the sphere). The
steps do not depend on the saves (``TokenStepper.free``); the control is the PDE's
(``solvers.steppers.dense.GlobalStepDoubling``: the error of the whole run held to the
tolerance). One thread. Cases:

- SA on S^15, n = 32, beta = 4, t <= 10, uniform tokens (seed 1);
- rescaled (Q, K): tokens in R^2, n = 20, one random head (Q, K gaussian, V symmetric
  with eigenvalues 1, 0.3), ``particles.rescaled = true``, t <= 10.

Printed: tolerance, error, error / tolerance, steps, evaluations, seconds; and whether
the error falls monotonically with the tolerance.
"""
from __future__ import annotations

import time

import numpy as np

import meanfield
from meanfield.runs import threads as thread_policy

CASES = {
    "SA on S^15, n = 32, beta = 4": {
        "domain": {"geometry": "sphere", "dim": 16}, "model": {"beta": 4.0},
        "initial": {"kind": "uniform"}, "particles": {"n": 32, "seed": 1}},
    "rescaled (Q, K), d = 2, n = 20": {
        "domain": {"geometry": "euclidean", "dim": 2},
        "initial": {"kind": "gaussian", "mean": [0.5, 0.0], "covariance": 1.0},
        "weights": {"query": {"kind": "gaussian", "seed": 1},
                    "key": {"kind": "gaussian", "seed": 2},
                    "value": {"kind": "symmetric", "eigenvalues": [1.0, 0.3], "seed": 3}},
        "particles": {"n": 20, "seed": 1, "rescaled": True}},
}
TOLERANCES = [10.0 ** -k for k in range(2, 11)]


def run(case: dict, tolerance: float):
    cfg = {**case, "time": {"t_final": 10.0, "save_every": 0.1, "tolerance": tolerance}}
    start = time.perf_counter()
    ds = meanfield.particles(cfg)
    return ds, time.perf_counter() - start


def main() -> None:
    with thread_policy.ThreadPolicy(1, thread_policy.machine_cores()).applied():
        for name, case in CASES.items():
            ref, _ = run(case, 1e-12)
            x_ref = ref.position.values
            scale = float(np.max(np.linalg.norm(x_ref, axis=-1)))
            print(f"\n{name} (reference: tolerance 1e-12, {ref.attrs['steps']} steps)")
            print(f"{'tolerance':>10} {'error':>10} {'err/tol':>8} {'steps':>6} {'s':>7}")
            errors = []
            for tol in TOLERANCES:
                ds, secs = run(case, tol)
                err = float(np.max(np.linalg.norm(ds.position.values - x_ref, axis=-1))) / scale
                errors.append(err)
                print(f"{tol:10.0e} {err:10.2e} {err / tol:8.2f} {ds.attrs['steps']:6d} "
                      f"{secs:7.3f}")
            monotone = all(b < a for a, b in zip(errors, errors[1:]))
            print(f"error falls monotonically with the tolerance: {monotone}; "
                  f"largest error / tolerance: {max(e / t for e, t in zip(errors, TOLERANCES)):.2f}")


if __name__ == "__main__":
    main()
