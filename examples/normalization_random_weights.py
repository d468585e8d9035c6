"""Normalization rules with random weights ([Rig25, Figure 4])
===========================================================

[Rig25, Figure 4] (reproduced there from [KGPR25]): the average cosine similarity
rho(t) of the tokens, with its 90 % band over random systems, "on a Transformer with
random weights, d = 512, beta = sqrt(d), d > n and random initial tokens", Post-LN
against Pre-LN. This example runs that figure with the normalization study
(``meanfield.studies.tokens.normalization``) and ``[weights] per_system = true``:

- d = 512, beta = sqrt(512) = 22.63, n = 32 i.i.d. uniform tokens on S^511 per system;
- every system draws its own Q, K, V, each with i.i.d. N(0, 1/d) entries
  (``{kind = "gaussian", scale = 1}``: the standard initialization; then
  beta <Q x_i, K x_j> = O(1) for unit tokens, which is why the figure takes beta =
  sqrt(d)), from seeds keyed by (seed, system);
- the mean cosine over the systems and the band holding 90 % of them (the 5 % and 95 %
  quantiles), for Post-LN, Pre-LN and the other rules of the study (Peri-LN, nGPT,
  Mix-LN with its switch at t = 1).

The caption gives d, beta and d > n only; n = 32 (that of [Rig25, Figure 3]), the
weight law and the time axis are our choice (docs/weights.md says what was matched).

Run ``python examples/normalization_random_weights.py`` (64 systems, t up to 1000;
``--quick``: Post-LN and Pre-LN, 2 systems, t up to 30, 20 saves); writes ``normalization_random_weights.png``
(``--out``) and prints per rule the mean cosine at t = 5, 20 and the last save, and the
fitted law of 1 - rho (Post-LN: a rate, Pre-LN: a power).
"""
from __future__ import annotations

import argparse
import math

import numpy as np

import meanfield

D, N = 512, 32
CONFIG = {
    "model": {"beta": math.sqrt(D)},
    "particles": {"n": N, "seed": 2025, "mix_switch": 1.0},
    "weights": {"query": {"kind": "gaussian", "scale": 1.0, "seed": 1},
                "key": {"kind": "gaussian", "scale": 1.0, "seed": 2},
                "value": {"kind": "gaussian", "scale": 1.0, "seed": 3},
                "per_system": True},
    "normalization": {"dim": D, "systems": 64, "chunk": 8, "band": 0.9,
                      "tolerance": 1e-8,
                      "times": {"start": 0.1, "stop": 1000.0, "num": 121, "scale": "log"}},
}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="normalization_random_weights.png")
    args = parser.parse_args(argv)
    cfg = {k: dict(v) for k, v in CONFIG.items()}
    if args.quick:  # (the printed pair: Post-LN and Pre-LN)
        cfg["normalization"].update(systems=2, chunk=2, tolerance=1e-6,
                                    architectures=["post-ln", "pre-ln"], times={
                                        "start": 0.1, "stop": 30.0, "num": 20,
                                        "scale": "log"})
    ds = meanfield.normalization(cfg)
    t = ds["time"].values
    out = {"time": t, "systems": int(ds.attrs["systems"])}
    for arch in ds["architecture"].values:
        s = ds.sel(architecture=arch)
        at = {tt: float(np.interp(tt, t, s.cosine.values)) for tt in (5.0, 20.0)}
        # the log-log slope of 1 - rho over the last half decade (the study's power fit
        # assumes r = t + c, the radius of V = I; with a random V its window is empty)
        late = (t >= t[-1] / 3) & (s.gap_mean.values > 0)
        slope = float(np.polyfit(np.log(t[late]), np.log(s.gap_mean.values[late]), 1)[0])
        out[str(arch)] = {"cosine": s.cosine.values, "low": s.cosine_low.values,
                          "high": s.cosine_high.values, "fitted": float(s.fitted),
                          "law": str(s.law.values), "late_slope": slope}
        print(f"{arch:8s} rho(5) = {at[5.0]:.4f}, rho(20) = {at[20.0]:.6f}, rho({t[-1]:g}) "
              f"= {float(s.cosine[-1]):.8f}; 1 - rho law '{str(s.law.values)}', fitted "
              f"{float(s.fitted):.3f} (Q = K = V = I: {float(s.predicted):g}); log-log "
              f"slope on [{t[-1] / 3:.3g}, {t[-1]:g}]: {slope:.3f}")
    meanfield.plot(ds)["summary"].savefig(args.out, dpi=150)
    return out


if __name__ == "__main__":
    main()
