"""The residual F(u; beta, kappa) swept over parameters in place, against fixed parameters.

    python benchmarks/bench_residual.py [--evaluations 100] [--repeat 11]

For the spectral circle (n = 256) and sphere (L = 63), SA and USA: the time of
``evaluations`` residuals, each after ``set_parameters`` with a new kappa (then a new
beta), over the time of as many residuals at one fixed parameter (the middle of the
sweep), best of ``repeat``; the ratio is the cost of changing the parameters. Also the
relative error of the analytic Jacobian-vector product against a centred difference.
"""
from __future__ import annotations

import argparse
import gc
import math
import time

import numpy as np

from meanfield import config as cfgmod
from meanfield.discretizations.base import Discretization

CASES = [("circle", 256), ("sphere", 63)]
KAPPAS = (4.0, 12.0)
BETAS = (1.5, 2.5)


def build(geometry: str, resolution: int, normalized: bool, beta: float = 2.0,
          kappa: float = 8.0) -> tuple[Discretization, np.ndarray]:
    """A spectral discretization and the state of a two-cluster density."""
    centers = ([0.5, 3.0] if geometry == "circle"
               else [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    cfg = cfgmod.validate({
        "domain": {"geometry": geometry},
        "model": {"beta": beta, "kappa": kappa, "normalized": normalized},
        "discretization": {"method": "spectral", "resolution": resolution},
        "initial": {"kind": "mixture", "components": [
            {"kind": "von_mises", "center": c, "concentration": 3.0} for c in centers]}})
    disc = Discretization.from_config(cfg)
    return disc, disc.to_state(disc.initial_density(cfg["initial"]))


def sweep_ratio(disc: Discretization, u: np.ndarray, name: str, values: np.ndarray,
                repeat: int, passes: int = 5) -> float:
    """Best time of (set_parameters + residual) over the sweep / best time at one value.

    Each sample runs ``passes`` passes over ``values`` (timer noise shrinks with the
    sample's length); the two are timed alternately (a load spike on the machine then
    hits both) with the garbage collector paused, ``repeat`` times after a warm-up."""
    values = [float(x) for x in values]
    if name == "beta":
        def change(x: float) -> None:
            disc.set_parameters(beta=x)
    else:
        def change(x: float) -> None:
            disc.set_parameters(kappa=x)

    def swept() -> None:
        for _ in range(passes):
            for x in values:
                change(x)
                disc.residual(u)

    def fixed() -> None:
        change(float(np.median(values)))
        for _ in range(passes):
            for _ in values:
                disc.residual(u)

    best = {"swept": math.inf, "fixed": math.inf}
    swept()  # warm-up: product grids of every degree the sweep meets, plans
    fixed()
    gc.disable()
    try:
        for _ in range(repeat):
            for fn in (swept, fixed):
                start = time.perf_counter()
                fn()
                best[fn.__name__] = min(best[fn.__name__], time.perf_counter() - start)
    finally:
        gc.enable()
    return best["swept"] / best["fixed"]


def jvp_error(disc: Discretization, u: np.ndarray, seed: int = 0) -> float:
    """``|J v - (F(u + e v) - F(u - e v)) / 2e| / |J v|`` for a smooth random ``v``."""
    rng = np.random.default_rng(seed)
    v = disc.to_state(disc.to_density(u) * (1 + 0.3 * rng.standard_normal())
                      + 0.05 * np.cos(np.arange(disc.to_density(u).size)).reshape(
                          disc.to_density(u).shape))
    e = 1e-5 * np.abs(u).max() / np.abs(v).max()
    fd = (disc.residual(u + e * v) - disc.residual(u - e * v)) / (2 * e)
    exact = disc.jvp(u, v)
    return float(np.abs(exact - fd).max() / np.abs(exact).max())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--evaluations", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args(argv)
    for geometry, resolution in CASES:
        for normalized in (True, False):
            disc, u = build(geometry, resolution, normalized)
            kappa = sweep_ratio(disc, u, "kappa", np.linspace(*KAPPAS, args.evaluations),
                                args.repeat)
            beta = sweep_ratio(disc, u, "beta", np.linspace(*BETAS, args.evaluations),
                               args.repeat)
            print(f"{geometry:6s} {'n' if geometry == 'circle' else 'L'} = {resolution:3d} "
                  f"{'SA ' if normalized else 'USA'}: {args.evaluations} residuals over "
                  f"kappa in {KAPPAS}: {kappa:5.3f} x fixed; over beta in {BETAS}: "
                  f"{beta:5.3f} x fixed; JVP vs centred difference {jvp_error(disc, u):.1e}")


if __name__ == "__main__":
    main()
