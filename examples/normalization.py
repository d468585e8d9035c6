"""Post-LN against Pre-LN
======================

Post-LN against Pre-LN: how fast the directions of the tokens cluster (the
normalization study of the transformer papers; ``meanfield.studies.tokens.normalization``).

n = 32 i.i.d. uniform tokens in d = 1024 run by self-attention (beta = 1) with the
normalization after the attention (Post-LN: the tokens stay on the sphere) and before it
(Pre-LN: the tokens are normalized inside the attention and their norms grow), each
system both ways from the same start. The mean pairwise cosine rho(t) of the directions
tends to 1 in both, but at different speeds: Post-LN exponentially, 1 - rho ~ e^{-2t};
Pre-LN only algebraically, 1 - rho ~ t^{-2} (the norms grow like t, which slows the
angles down). The equiangular ODEs give the dashed predictions.

Run ``python examples/normalization.py`` (``--quick``: 4 systems, 61 saved times instead
of 256 and 281); writes ``normalization.png`` (``--out``) and prints the fitted rate of
Post-LN (predicted 2) and the fitted power of Pre-LN (predicted -2) with their windows,
then those of the other rules the study runs beside them (Peri-LN and Mix-LN: power -2;
nGPT: rate 2 alpha).
Measured (full run, a minute on two cores): rate 1.9999 on t in [5.3, 17.2], power
-2.0037 on t in [152, 1e4].
"""
from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

import meanfield

CONFIG = Path(__file__).resolve().parent / "normalization.toml"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="normalization.png")
    args = parser.parse_args(argv)
    with CONFIG.open("rb") as f:
        cfg = tomllib.load(f)  # beta = 1, n = 32, d = 1024, t in [0.05, 1e4]
    if args.quick:
        cfg["normalization"].update(systems=4, chunk=4, times={
            "start": 0.05, "stop": 1e4, "num": 61, "scale": "log"})
    ds = meanfield.normalization(cfg)
    out = {name: float(ds[name]) for name in (
        "fitted_rate", "rate_fit_start", "rate_fit_stop", "predicted_rate",
        "fitted_power", "power_fit_start", "power_fit_stop")}
    out["systems"] = int(cfg["normalization"]["systems"])
    print(f"Post-LN: 1 - rho ~ e^(-r t), fitted r = {out['fitted_rate']:.4f} on t in "
          f"[{out['rate_fit_start']:.3g}, {out['rate_fit_stop']:.3g}] (predicted "
          f"{out['predicted_rate']:g})")
    print(f"Pre-LN: 1 - rho ~ t^p, fitted p = {out['fitted_power']:.4f} on t in "
          f"[{out['power_fit_start']:.3g}, {out['power_fit_stop']:.3g}] (predicted -2)")
    for arch in ("peri-ln", "ngpt", "mix-ln"):  # the other rules (docs/conventions.md)
        s = ds.sel(architecture=arch)
        out[arch] = float(s.fitted)
        print(f"{arch}: 1 - rho law '{str(s.law.values)}', fitted {float(s.fitted):.4f} on "
              f"t in [{float(s.fit_start):.3g}, {float(s.fit_stop):.3g}] (predicted "
              f"{float(s.predicted):g})")

    # the package's figure of the study (`meanfield plot` draws the same)
    meanfield.plot(ds)["summary"].savefig(args.out, dpi=150)
    return out


if __name__ == "__main__":
    main()
