"""How often Gaussian weights make a good triple
=============================================

The share of good triples among Gaussian (Q, K, V) ([GLPR23, Definition 1 and §4];
docs/weights.md).

A good triple: V's eigenvalue of largest modulus is real, positive and simple
(lambda_1 > abs(lambda_2)), and <Q phi_1, K phi_1> > 0. Theorem 4.1 then puts the rescaled
tokens on at most three parallel hyperplanes. [GLPR23, §4]: "a constant fraction (about 14%)
of matrices from the real Ginibre ensemble in dimension d = 128" satisfy the first
condition (the share vanishes as d grows, very slowly [RS14]). Here Q, K and V have
i.i.d. N(0, 1/d) entries, drawn independently (``meanfield.metrics.codimension.
good_triple_shares``): the share of V whose top eigenvalue is real (either sign), real
and positive (and simple: ties have probability 0), and the share of whole good triples.
By the symmetry V -> -V a real top eigenvalue is positive half the time, and by Q -> -Q
the second condition holds half the time, independently of V: the triple share is half
the V share.

Run ``python examples/weights_good_triples.py`` (``--quick``: d = 128 only, 40 draws);
writes ``weights_good_triples.png`` (``--out``) and prints the shares with their
standard errors.
"""
from __future__ import annotations

import argparse

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from meanfield.metrics.codimension import good_triple_shares
from meanfield.plotting import style

PAPER_SHARE = 0.14  # [GLPR23, §4], real Ginibre, d = 128


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="weights_good_triples.png")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    dims = [128] if args.quick else [2, 4, 8, 16, 32, 64, 128]
    samples = 40 if args.quick else 2000
    shares = {d: good_triple_shares(d, samples, seed=args.seed + d) for d in dims}
    for d, s in shares.items():
        print(f"d = {d:3d}, {samples} draws: top eigenvalue real {s['real']:.3f} "
              f"+- {s['real_error']:.3f}, real and positive {s['value']:.3f} +- "
              f"{s['value_error']:.3f} (paper, d = 128: about {PAPER_SHARE:.2f}), good "
              f"triples {s['triple']:.3f} +- {s['triple_error']:.3f}")

    with style():
        fig = Figure(figsize=(6.0, 4.0), layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.subplots()
        for key, label in (("real", "top eigenvalue of V real"),
                           ("value", "... and positive (Definition 1, first condition)"),
                           ("triple", "good triple (and ⟨Qφ₁, Kφ₁⟩ > 0)")):
            ax.errorbar(dims, [shares[d][key] for d in dims],
                        yerr=[shares[d][f"{key}_error"] for d in dims], marker="o",
                        capsize=3, lw=1.2, label=label)
        ax.axhline(PAPER_SHARE, color="k", ls="--", lw=0.8,
                   label=f"paper: about {PAPER_SHARE:.0%} at d = 128")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("dimension d")
        ax.set_ylabel(f"share of {samples} Gaussian draws")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=8)
        ax.set_title("Good triples among Gaussian (Q, K, V), entries N(0, 1/d)")
        fig.savefig(args.out, dpi=150)
    return shares


if __name__ == "__main__":
    main()
