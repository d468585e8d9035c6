"""Critical points of the interaction energy
==========================================

Critical points of E_beta of n tokens ([GLPR25, §7.2, Problem 3];
``meanfield.studies.landscape.critical_points``).

The USA dynamics is the gradient ascent of the interaction energy
E_beta = (1/(2 beta n^2)) sum_ij e^{beta <x_i, x_j>}; its maximum is the synchronised
state. Problem 3 asks whether every other critical point is a strict saddle (a Hessian
with a positive eigenvalue), which would make synchronisation happen from almost every
start. The study searches the critical points of n = 6 tokens on the circle at
beta = 1, 4, 9 from many starts, merges them modulo rotations, reflections and
permutations, and gives each its Hessian spectrum and index (the number of directions in
which E_beta increases). The equally spaced tokens and the two antipodal clusters have
closed-form spectra (a circulant's discrete Fourier sum and a 2 x 2 block form), which
the found points match to round-off; on S^2 (``--sphere``) the same search finds more
points (no two-dimensional constraint).

Run ``python examples/critical_points.py`` (9 s wall, 4 s CPU on 2 shared cores;
``--quick``: 16 starts per family, under 2 s);
writes ``critical_points.png`` (``--out``) and prints, per beta, the points found with
their kind, index and energy, and the largest distance of a closed-form spectrum.
"""
from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

import numpy as np

import meanfield

CONFIG = Path(__file__).resolve().parent / "critical_points.toml"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sphere", action="store_true", help="tokens on S^2")
    parser.add_argument("--out", default="critical_points.png")
    args = parser.parse_args(argv)
    with CONFIG.open("rb") as f:
        cfg = tomllib.load(f)  # n = 6, beta = 1, 4, 9, 64 starts per family
    if args.quick:
        cfg["critical_points"]["starts"] = 16
    if args.sphere:
        cfg["critical_points"]["dim"] = 3
    ds = meanfield.critical_points(cfg)
    for beta in ds["member_beta"].values:
        rows = np.flatnonzero(ds["beta"].values == beta)
        print(f"beta = {beta:g}: {rows.size} critical points")
        for i in rows:
            sizes = ds["cluster_sizes"].values[i]
            print(f"  {str(ds['kind'].values[i]):17s} clusters {sizes[sizes > 0].tolist()}"
                  f"  index {int(ds['index'].values[i])}  energy "
                  f"{float(ds['energy'].values[i]):.6g}")
    closed = ds["closed_form_error"].values
    print(f"closed-form spectra: {np.sum(np.isfinite(closed))} points, largest relative "
          f"error {np.nanmax(closed):.1e}")
    print(ds.attrs["prediction"])

    # the package's figure of the study (`meanfield plot` draws the same)
    meanfield.plot(ds)["summary"].savefig(args.out, dpi=150)
    sync = ds["kind"].values == "synchronised"
    return {"kind": ds["kind"].values, "index": ds["index"].values,
            "beta": ds["beta"].values, "closed_form_error": closed,
            "sync_index": ds["index"].values[sync],
            "other_index": ds["index"].values[~sync],
            "counterexamples": int(ds.attrs["counterexamples_total"])}


if __name__ == "__main__":
    main()
