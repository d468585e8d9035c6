"""meanfield against the papers' own update rule, at the accuracy asked (issue 32, item 6).

    python benchmarks/bench_against_papers.py            # ~5-10 min on one core
    python benchmarks/bench_against_papers.py --quick    # targets 1e-2 and 1e-4 only

The authors' scripts step the token ODE by explicit Euler at a fixed step (and put the
tokens back on the sphere after each step); meanfield steps adaptive RK4 to
``time.tolerance``. For each case, on identical initial tokens and one thread on both
sides, and for each target error (the largest distance of a token, over every save, from
a reference run at tolerance 1e-12):

- the **Euler port**: the update rule of the papers' scripts (below), at the largest step
  ``save_every / 2^k`` that meets the target (k = 0, 1, ...), timed;
- **meanfield**: ``meanfield.particles`` at the loosest ``time.tolerance`` of a ladder
  (1e-1 down to 1e-12, three a decade: a factor 2.15 as the Euler steps' 2) that meets
  the target, timed (the whole call: config check, run, dataset);

and the ratio Euler time / meanfield time (> 1: meanfield is faster). An Euler run that
would take more than ``--euler-cap`` seconds (default 20: at 1e-6 the port needs 10^7
steps, hours in all) is not run: Euler is of order 1, so its error is taken in
proportion to dt from the last run measured (the printed halving ratios, ~2, show the
law holds there) and its time as that many steps at the measured cost of one; such rows
are marked ``*``. Times are the best
of three after a warm-up run. The reference is checked against scipy's DOP853 at rtol
1e-12 on the same tokens (the printed ``reference vs DOP853``).

The cases (saves every 0.1 to t = 10):

1. SA on S^15, n = 32, beta = 4: ``x <- normalize(x + dt P_x(softmax(beta X X^T) X))``;
2. the rescaled pure model in R^2 (Q = K = V = I, n = 20, [GLPR23]'s figure 1): Euler on
   ``z' = sum_j P_ij(t) V (z_j - z_i)`` with ``P(t)`` the attention of ``x = e^{tV} z``;
3. two heads and a causal mask on S^15 (n = 32, beta = 1, Gaussian Q, K, V of variance
   1/d, seed 7): the sum of the heads' velocities, rows j <= i only.

The ratio is printed for every case and target; no number here is asserted by a test
(timings on a shared machine are noisy). ``--diagnostics none`` times meanfield with
``particles.diagnostics = []`` (the tokens only, what the Euler port computes); by
default it computes every diagnostic of the geometry at each save as well.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"  # one thread on both sides

import argparse
import time

import numpy as np
from scipy.integrate import solve_ivp
from scipy.linalg import expm

import meanfield

T_FINAL, SAVE = 10.0, 0.1
# meanfield's tolerances: 1e-1 down to 1e-12, three a decade (a factor 2.15, as the Euler
# port's steps halve: each side at its loosest setting that meets the target)
LADDER = [10.0 ** (-k / 3) for k in range(3, 37)]


def _softmax_rows(logits: np.ndarray, causal: bool) -> np.ndarray:
    if causal:
        logits = np.where(np.tril(np.ones(logits.shape, bool)), logits, -np.inf)
    logits = logits - logits.max(axis=1, keepdims=True)
    w = np.exp(logits)
    return w / w.sum(axis=1, keepdims=True)


# --- the cases: a meanfield config, and the velocity the Euler port steps ----------------

def _heads(d: int, count: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{k: (rng.standard_normal((d, d)) / np.sqrt(d)).tolist()
             for k in ("query", "key", "value")} for _ in range(count)]


def cases() -> dict:
    times = {"t_final": T_FINAL, "save_every": SAVE}
    heads = _heads(16, 2, 7)

    def sa(x, _t, beta=4.0):
        a = _softmax_rows(beta * x @ x.T, False) @ x
        return a - np.sum(a * x, axis=1, keepdims=True) * x

    def multi(x, _t):
        v = np.zeros_like(x)
        for h in heads:
            q, k, val = (np.asarray(h[s]) for s in ("query", "key", "value"))
            v += _softmax_rows((x @ q.T) @ (x @ k.T).T, True) @ (x @ val.T)
        return v - np.sum(v * x, axis=1, keepdims=True) * x

    def rescaled(z, t):
        x = np.exp(t) * z  # e^{tV} z with V = I
        p = _softmax_rows(x @ x.T, False)
        return p @ z - z

    return {
        "SA on S^15, n = 32, beta = 4": (
            {"domain": {"geometry": "sphere", "dim": 16}, "model": {"beta": 4.0},
             "particles": {"n": 32, "seed": 3}, "initial": {"kind": "uniform"},
             "time": times}, sa, True),
        "rescaled pure, R^2, n = 20": (
            {"domain": {"geometry": "euclidean", "dim": 2}, "model": {"beta": 1.0},
             "particles": {"n": 20, "seed": 3, "architecture": "pure", "rescaled": True},
             "initial": {"kind": "gaussian"}, "time": times}, rescaled, False),
        "two heads + causal on S^15, n = 32, beta = 1": (
            {"domain": {"geometry": "sphere", "dim": 16}, "model": {"beta": 1.0},
             "weights": {"heads": heads},
             "particles": {"n": 32, "seed": 3, "mask": "causal"},
             "initial": {"kind": "uniform"}, "time": times}, multi, True),
    }


# --- the two sides --------------------------------------------------------------------

ASKED: list | None = None  # particles.diagnostics (None: the default, all)


def run_meanfield(cfg: dict, tolerance: float) -> np.ndarray:
    cfg = {**cfg, "time": {**cfg["time"], "tolerance": tolerance}}
    if ASKED is not None:
        cfg["particles"] = {**cfg["particles"], "diagnostics": ASKED}
    ds = meanfield.particles(cfg)
    name = "rescaled_position" if "rescaled_position" in ds else "position"
    return ds[name].values


def run_euler(velocity, x0: np.ndarray, dt: float, sphere: bool) -> np.ndarray:
    per_save = int(round(SAVE / dt))
    saves = int(round(T_FINAL / SAVE))
    x, out, t = x0.copy(), [x0.copy()], 0.0
    for _ in range(saves):
        for _ in range(per_save):
            x = x + dt * velocity(x, t)
            if sphere:
                x /= np.linalg.norm(x, axis=1, keepdims=True)
            t += dt
        out.append(x.copy())
    return np.array(out)


def best_of(fn, repeat: int = 3) -> float:
    fn()  # warm-up (compilation, caches)
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def error(a: np.ndarray, ref: np.ndarray) -> float:
    return float(np.max(np.linalg.norm(a - ref, axis=-1)))


def check_reference(velocity, ref: np.ndarray) -> float:
    """The reference against scipy's DOP853 (rtol 1e-12) from the same tokens, at the
    saves; on the sphere the ODE is tangent, so the norm is kept to the tolerance."""
    shape = ref.shape[1:]
    t_eval = np.arange(ref.shape[0]) * SAVE
    sol = solve_ivp(lambda t, y: velocity(y.reshape(shape), t).ravel(), (0, T_FINAL),
                    ref[0].ravel(), method="DOP853", rtol=1e-12, atol=1e-13,
                    t_eval=t_eval)
    return error(sol.y.T.reshape(ref.shape), ref)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="targets 1e-2 and 1e-4")
    parser.add_argument("--diagnostics", choices=("default", "none"), default="default",
                        help="meanfield's particles.diagnostics: the default (all) or []")
    parser.add_argument("--euler-cap", type=float, default=20.0,
                        help="seconds beyond which an Euler run is extrapolated, not run")
    args = parser.parse_args()
    global ASKED
    ASKED = None if args.diagnostics == "default" else []
    targets = [1e-2, 1e-4] if args.quick else [1e-2, 1e-4, 1e-6]
    print(f"one thread; error = max token distance over the saves (every {SAVE:g} to "
          f"t = {T_FINAL:g}) from a tolerance-1e-12 reference; meanfield's diagnostics: "
          f"{args.diagnostics}\n")
    print(f"{'case':46s} {'target':>7s} {'Euler dt':>10s} {'Euler s':>9s} "
          f"{'tolerance':>9s} {'meanfield s':>11s} {'ratio':>7s}")
    extrapolated = []
    for name, (cfg, velocity, sphere) in cases().items():
        ref = run_meanfield(cfg, 1e-12)
        per_step = euler_step_cost(velocity, ref[0], sphere)
        check = check_reference(velocity, ref)
        errors = {tol: error(run_meanfield(cfg, tol), ref) for tol in LADDER}
        for target in targets:
            tol = next((t for t in LADDER if errors[t] <= target), None)
            dt, euler_err, t_euler, rate = euler_side(velocity, ref, sphere, target, per_step,
                                                      args.euler_cap)
            if euler_err > target or tol is None:
                print(f"{name:46s} {target:7.0e}  not met (Euler {euler_err:.1e} at dt "
                      f"{dt:.1e}; meanfield tolerance {tol})")
                continue
            t_mf = best_of(lambda: run_meanfield(cfg, tol))
            mark = "*" if rate is not None else " "
            print(f"{name:46s} {target:7.0e} {dt:10.2e} {t_euler:8.3f}{mark} {tol:9.1e} "
                  f"{t_mf:11.3f} {t_euler / t_mf:7.2f}")
            if rate is not None:
                extrapolated.append(f"{name}, {target:.0e}: the error halves with the step "
                                    f"(last measured halving: x{rate:.2f})")
        print(f"{'':46s} reference vs DOP853: {check:.1e}")
    if extrapolated:
        print(f"\n* extrapolated: the run would take more than {args.euler_cap:g} s. Euler "
              "is of order 1, so its step is the largest dt = 0.1/2^k at which the last "
              "measured error times dt/dt_last meets the target, and its time that many "
              "steps at the measured cost of a step (the least of 3 runs of 200 steps):")
        for line in extrapolated:
            print("  " + line)


def euler_step_cost(velocity, x0: np.ndarray, sphere: bool) -> float:
    """Seconds of one Euler step (the least of three runs of 200 steps after a warm-up)."""
    dt, best = 1e-3, np.inf
    for _ in range(4):
        x, t = x0.copy(), 0.0
        start = time.perf_counter()
        for _ in range(200):
            x = x + dt * velocity(x, t)
            if sphere:
                x /= np.linalg.norm(x, axis=1, keepdims=True)
            t += dt
        best = min(best, (time.perf_counter() - start) / 200)
    return best


def euler_side(velocity, ref: np.ndarray, sphere: bool, target: float, per_step: float,
               cap: float) -> tuple[float, float, float, float | None]:
    """``(dt, error, seconds, rate)``: the largest Euler step ``SAVE / 2^k`` that meets
    ``target``, its error and time (best of three); where a run would take more than
    ``cap`` seconds, both extrapolated from the last run measured (order 1: the error
    in proportion to dt; the time, the steps at ``per_step``), ``rate`` the last
    measured error ratio of a halving (None: measured)."""
    history = []
    for k in range(17):
        dt = SAVE / 2 ** k
        steps = T_FINAL / dt
        if steps * per_step > cap and history:
            last_dt, last_err = history[-1]
            rate = history[-2][1] / last_err if len(history) > 1 else 2.0
            while last_err * dt / last_dt > target and k < 40:
                k += 1
                dt = SAVE / 2 ** k
            return dt, last_err * dt / last_dt, T_FINAL / dt * per_step, rate
        err = error(run_euler(velocity, ref[0], dt, sphere), ref)
        history.append((dt, err))
        if err <= target:
            return dt, err, best_of(lambda: run_euler(velocity, ref[0], dt, sphere)), None
    return dt, history[-1][1], np.inf, None


if __name__ == "__main__":
    main()
