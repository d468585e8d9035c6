"""Long-context limits of one attention layer
==========================================

Long-context limits of one attention layer ([Rig25, Theorem 7], after [CLPR26];
``meanfield.studies.tokens.long_context``).

n equiangular input tokens with pairwise cosine rho pass through one self-attention layer
with beta_n = gamma log n. As n grows the output cosine tends to a limit that depends
only on gamma (1 - rho): 1 below the threshold gamma = 1/(1 - rho) (the tokens collapse),
4 rho/(1 + 3 rho) at it, and rho above it (the layer leaves the angles alone). With
rho = 0.5 the threshold is gamma = 2 and the three limits are 1, 0.8 and 0.5. The closed
form in n is carried to n = 1e15 and checked on explicit tokens (n up to ``direct_max``);
the distance to the limit decays like K n^(-e) with the predicted e.

Run ``python examples/long_context.py`` (20 s; ``--quick``: explicit tokens to n = 64 and a
coarser n grid); writes ``long_context.png`` (``--out``) and prints, per gamma, the
output cosine at the largest n against the limit, the fitted exponent against the
predicted one and the largest gap between explicit tokens and the closed form.
"""
from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

import numpy as np

import meanfield

CONFIG = Path(__file__).resolve().parent / "long_context.toml"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="long_context.png")
    args = parser.parse_args(argv)
    with CONFIG.open("rb") as f:
        cfg = tomllib.load(f)  # rho = 0.5, gamma = 1, 2, 3, n from 2 to 1e15
    if args.quick:
        cfg["long_context"].update(direct_max=64,
                                   n={"start": 2, "stop": 1e15, "num": 29, "scale": "log"})
    ds = meanfield.long_context(cfg)
    rho = float(ds.attrs["rho"])
    final = ds["cosine"].values[:, -1]
    direct_error = float(np.nanmax(ds["direct_error"].values))
    n_max = int(ds["n"].values[-1])
    print(f"rho = {rho:g}: threshold gamma = 1/(1 - rho) = {1 / (1 - rho):g}; "
          f"limits 1, 4 rho/(1 + 3 rho) = {4 * rho / (1 + 3 * rho):g}, rho = {rho:g}")
    for i, gamma in enumerate(ds["gamma"].values):
        print(f"gamma = {gamma:g} ({ds['regime'].values[i]}): cosine at n = {n_max:.0e} "
              f"= {final[i]:.8f}, limit {float(ds['limit'][i]):g}, |gap| "
              f"{abs(final[i] - float(ds['limit'][i])):.1e}; fitted exponent "
              f"{float(ds['fitted_exponent'][i]):.4f} (predicted "
              f"{float(ds['predicted_exponent'][i]):g})")
    print(f"explicit tokens (n <= {int(ds.attrs['direct_max'])}) against the closed form: "
          f"max |difference| = {direct_error:.1e}")

    # the package's figure of the study (`meanfield plot` draws the same)
    meanfield.plot(ds)["summary"].savefig(args.out, dpi=150)
    return {"gamma": ds["gamma"].values, "rho": rho, "n_max": n_max,
            "final_cosine": final, "limit": ds["limit"].values,
            "fitted_exponent": ds["fitted_exponent"].values,
            "predicted_exponent": ds["predicted_exponent"].values,
            "direct_error": direct_error, "regime": ds["regime"].values}


if __name__ == "__main__":
    main()
