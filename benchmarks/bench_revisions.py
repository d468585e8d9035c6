"""The hot paths of this checkout against an earlier revision, timed in one run.

    python benchmarks/bench_revisions.py                 # against the revision BASE below
    python benchmarks/bench_revisions.py --base HEAD~3 --repeat 7

The earlier revision is checked out into a temporary git worktree; each workload runs
in a fresh subprocess per tree (imports and numba caches warmed by one untimed call), the
two trees alternating, ``repeat`` times; the best time of each is kept and the ratio
this/base printed (> 1: this checkout is slower). The workloads go through the public
entry points only (``meanfield.evolve`` / ``meanfield.particles`` with configs both
revisions accept), so that they time the same computation in both trees; the final
numbers of both are compared so that a ratio is between equal computations.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# The last commit before the architecture issue (issue 8) reshaped the package.
BASE = "3753fd0"
ROOT = Path(__file__).resolve().parent.parent

WORKLOADS = {
    # name: (entry point, config); fixed steps so that both trees take the same ones
    "circle spectral SA n=1024 (200 ETDRK4 steps)": ("evolve", {
        "model": {"beta": 5.0, "kappa": 10.0},
        "discretization": {"method": "spectral", "resolution": 1024},
        "initial": {"kind": "von_mises", "concentration": 4.0},
        "time": {"t_final": 0.2, "dt": 0.001, "save_every": 0.1}}),
    "circle finite volume SA n=2048 kappa=20 (auto steps to t=0.2)": ("evolve", {
        "model": {"beta": 5.0, "kappa": 20.0},
        "discretization": {"method": "finite-volume", "resolution": 2048},
        "initial": {"kind": "von_mises", "concentration": 4.0},
        "time": {"t_final": 0.2, "save_every": 0.1}}),
    "sphere spectral SA L=63 (40 ETDRK4 steps)": ("evolve", {
        "domain": {"geometry": "sphere"}, "model": {"beta": 3.0, "kappa": 10.0},
        "discretization": {"method": "spectral", "resolution": 63},
        "initial": {"kind": "von_mises", "concentration": 4.0},
        "time": {"t_final": 0.2, "dt": 0.005, "save_every": 0.1}}),
    "sphere spectral USA L=63 (40 ETDRK4 steps)": ("evolve", {
        "domain": {"geometry": "sphere"},
        "model": {"beta": 3.0, "kappa": 10.0, "normalized": False},
        "discretization": {"method": "spectral", "resolution": 63},
        "initial": {"kind": "von_mises", "concentration": 4.0},
        "time": {"t_final": 0.2, "dt": 0.005, "save_every": 0.1}}),
    "sphere finite volume SA 10242 cells kappa=20 (auto steps to t=0.05)": ("evolve", {
        "domain": {"geometry": "sphere"}, "model": {"beta": 3.0, "kappa": 20.0},
        "discretization": {"method": "finite-volume", "resolution": 10242},
        "initial": {"kind": "von_mises", "concentration": 4.0},
        "time": {"t_final": 0.05, "save_every": 0.025}}),
    "particles S^1 n=1e5 SA beta=5 (20 RK4 steps, fast sums)": ("particles", {
        "model": {"beta": 5.0}, "initial": {"kind": "uniform"},
        "time": {"t_final": 0.2, "dt": 0.01, "save_every": 0.2},
        "particles": {"n": 100_000, "seed": 1}}),
    "particles S^2 n=2e4 SA beta=5 (20 RK4 steps, fast sums)": ("particles", {
        "domain": {"geometry": "sphere"}, "model": {"beta": 5.0},
        "initial": {"kind": "uniform"},
        "time": {"t_final": 0.2, "dt": 0.01, "save_every": 0.2},
        "particles": {"n": 20_000, "seed": 1}}),
    "particles S^2 n=3000 direct (20 RK4 steps)": ("particles", {
        "domain": {"geometry": "sphere"}, "model": {"beta": 5.0},
        "initial": {"kind": "uniform"},
        "time": {"t_final": 0.2, "dt": 0.01, "save_every": 0.2},
        "particles": {"n": 3000, "seed": 1}}),
}

# Run inside the subprocess: one untimed call, then the timed one; prints JSON.
CHILD = """
import json, sys, time
import numpy as np
import meanfield
entry, config = json.loads(sys.argv[1])
assert meanfield.__file__.startswith(sys.argv[2]), meanfield.__file__  # the right tree
task = getattr(meanfield, entry)
task(config)
start = time.perf_counter()
ds = task(config)
seconds = time.perf_counter() - start
field = ds["density"] if "density" in ds else ds["position"]
print(json.dumps({"seconds": seconds, "checksum": float(np.sum(field.values[-1] ** 2))}))
"""


def run_child(tree: Path, entry: str, config: dict) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps([entry, config]),
                          str(tree)],
                         cwd=tree, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=BASE, help="the earlier revision")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", help="substring of the workloads to run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base_tree = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(base_tree),
                        args.base], cwd=ROOT, check=True)
        try:
            print(f"{'workload':60s} {'base s':>9s} {'this s':>9s} {'this/base':>9s}")
            for name, (entry, config) in WORKLOADS.items():
                if args.only and args.only not in name:
                    continue
                best = {"base": float("inf"), "this": float("inf")}
                sums = {}
                for _ in range(args.repeat):
                    for label, tree in (("base", base_tree), ("this", ROOT)):
                        r = run_child(tree, entry, config)
                        best[label] = min(best[label], r["seconds"])
                        sums[label] = r["checksum"]
                same = abs(sums["this"] - sums["base"]) <= 1e-12 * abs(sums["base"])
                print(f"{name:60s} {best['base']:9.3f} {best['this']:9.3f} "
                      f"{best['this'] / best['base']:9.3f}"
                      + ("" if same else "   (results differ!)"), flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base_tree)],
                           cwd=ROOT, check=False)


if __name__ == "__main__":
    main()
