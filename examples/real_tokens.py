"""Real tokens: a pretrained transformer beside the SA dynamics
============================================================

Real tokens: the pairwise cosines of a pretrained transformer's hidden states, layer by
layer, beside the SA dynamics started from its first-layer tokens.

The tokens are those of ``data/token_states.npz`` (written once by
``data/make_token_states.py``; the model is never needed here): the 132 WordPiece tokens
of the opening of the second paragraph of the Declaration of Independence, as the hidden
states (width d = 384) of all-MiniLM-L6-v2 (6 Post-LN layers) after its embedding layer
and after each layer.

(a) the histograms of the pairwise cosines ``<x_i, x_j> / (|x_i| |x_j|)``, i < j, at each
layer; (b) the same histograms along the SA dynamics (Q = K = V = I, normalised
attention, no noise) on S^{383}, started from the layer-0 tokens (each divided by its
length), for beta = 1; (c) the mean pairwise cosine along the layers and along time for
beta = 1 and 4. With d = 384 >= n = 132 the SA tokens converge to a single cluster from
almost every start (the high-dimensional case d >= n: [GLPR25, Theorem 6.3], [Rig25,
Corollary 4]),
so their cosines all go to 1. The trained model's layers move the mean cosine up from
0.075 (layer 0) to 0.306 (layer 5) and back to 0.256 at its last layer (measured; its
last layer was fine-tuned as a sentence embedder with a contrastive loss, which may
explain the spread there): six trained, different layers are not the clustering flow.

Run ``python examples/real_tokens.py`` (``--quick``: fewer saved times); writes
``real_tokens.png`` (``--out``) and prints the mean cosines.
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import meanfield
from meanfield.plotting import style
from meanfield.runs.threads import one_blas_thread

DATA = Path(__file__).resolve().parent.parent / "data" / "token_states.npz"
BETAS = (1.0, 4.0)
T_FINAL = 6.0
TOLERANCE = 1e-9  # error per step of the adaptive integrator
HIST_TIMES = (0.0, 1.0, 2.0, 3.0, 4.0, 6.0)
BINS = np.linspace(-0.3, 1.0, 66)


def load_states(path: Path = DATA) -> dict:
    """The committed hidden states (layers + 1, n, d) as float64, with their tokens."""
    with np.load(path) as f:
        return {"states": f["states"].astype(np.float64), "tokens": f["tokens"],
                "model": str(f["model"]), "source": str(f["source"])}


def pair_cosines(x: np.ndarray) -> np.ndarray:
    """The n (n - 1) / 2 cosines <x_i, x_j> / (|x_i| |x_j|), i < j, of the rows of x."""
    u = x / np.linalg.norm(x, axis=-1, keepdims=True)
    i, j = np.triu_indices(x.shape[-2], 1)
    # the Gram matrix, not the (pairs, d) rows of each pair: 61 frames of those are 1.6 GB
    return (u @ np.swapaxes(u, -1, -2))[..., i, j]


def sa_run(x0: np.ndarray, beta: float, save_every: float) -> tuple[np.ndarray, np.ndarray]:
    """Times and tokens (frames, n, d) of SA on S^{d-1} started from the rows of x0."""
    n, d = x0.shape
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tokens.npy"
        np.save(path, x0)  # the `tokens` initial kind reads a file; unit_rows divides
        # the (n, d) x (d, n) products on one BLAS thread: threads spinning beside other
        # jobs made this run ~10x slower (13.6 s against 1.2 s, measured on 2 busy cores)
        with one_blas_thread():
            ds = meanfield.particles({
                "domain": {"geometry": "sphere", "dim": d},
                "model": {"beta": beta, "normalized": True},
                "initial": {"kind": "tokens", "path": str(path)},
                "time": {"t_final": T_FINAL, "save_every": save_every,
                         "tolerance": TOLERANCE},
                "particles": {"n": n, "seed": 0}})
        return ds.time.values, ds.position.values


def ridges(ax, samples: list, labels: list, colors, title: str) -> None:
    """Histograms (counts, each scaled to its own peak) stacked bottom to top, with means."""
    for k, (c, label) in enumerate(zip(samples, labels)):
        h, _ = np.histogram(np.clip(c, BINS[0], BINS[-1]), BINS)
        h = 0.9 * h / h.max()
        ax.fill_between(BINS[:-1], k, k + h, step="post", color=colors[k], alpha=0.8,
                        lw=0.6, edgecolor="k")
        ax.axhline(k, color="0.6", lw=0.5)
        ax.text(BINS[0] + 0.02, k + 0.55, f"mean {np.mean(c):.3f}", fontsize=7, color="0.25")
    ax.set_yticks(np.arange(len(labels)) + 0.4, labels)
    ax.tick_params(axis="y", length=0)
    ax.set_xlim(BINS[0], BINS[-1])
    ax.set_ylim(-0.1, len(labels))
    ax.axvline(1.0, color="k", lw=0.6, ls=":")
    ax.set_xlabel("pairwise cosine")
    ax.set_title(title)


def figure(data: dict, layer_cos: np.ndarray, runs: dict, out: str) -> None:
    import matplotlib

    cmap = matplotlib.colormaps["viridis"]
    with style():
        fig = Figure(figsize=(13.5, 4.4))
        FigureCanvasAgg(fig)
        axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1, 1, 1.1]})
        layers = layer_cos.shape[0]
        ridges(axes[0], list(layer_cos), [f"layer {k}" for k in range(layers)],
               [cmap(k / (layers - 1)) for k in range(layers)],
               f"(a) the layers of all-MiniLM-L6-v2\n(n = {data['n']} tokens, d = {data['d']})")
        t, cos = runs[BETAS[0]]
        picks = [int(np.argmin(np.abs(t - s))) for s in HIST_TIMES]
        ridges(axes[1], [cos[k] for k in picks], [f"t = {t[k]:g}" for k in picks],
               [cmap(m / (len(picks) - 1)) for m in range(len(picks))],
               f"(b) SA on S$^{{{data['d'] - 1}}}$ from the layer-0 tokens\n"
               f"(β = {BETAS[0]:g}, Q = K = V = I)")
        ax = axes[2]
        top = ax.twiny()
        top.plot(np.arange(layers), layer_cos.mean(1), "s-", color="C3",
                 label="model layers (top axis)")
        top.set_xlabel("layer of all-MiniLM-L6-v2", color="C3", labelpad=2)
        top.tick_params(axis="x", colors="C3")
        top.set_xlim(-0.3, layers - 0.7)
        for m, (beta, (t, cos)) in enumerate(runs.items()):
            ax.plot(t, cos.mean(1), "-", color=f"C{m}", label=f"SA, β = {beta:g}")
        ax.set_xlabel("time t of the SA dynamics")
        ax.set_ylabel("mean pairwise cosine")
        ax.set_ylim(0, 1.02)
        ax.set_xlim(0, T_FINAL)
        lines = ax.get_legend_handles_labels()
        more = top.get_legend_handles_labels()
        ax.legend(lines[0] + more[0], lines[1] + more[1], loc="center right")
        ax.set_title("(c) mean pairwise cosine", pad=10)
        fig.suptitle("Pairwise cosines of the tokens of the Declaration of Independence "
                     "(1776, 2nd paragraph): a trained transformer and SA")
        fig.tight_layout()
        fig.savefig(out, dpi=150, bbox_inches="tight")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="real_tokens.png")
    args = parser.parse_args(argv)
    data = load_states()
    states = data["states"]
    data["n"], data["d"] = states.shape[1], states.shape[2]
    layer_cos = pair_cosines(states)  # (layers + 1, n (n - 1) / 2)
    save_every = 0.5 if args.quick else 0.1
    runs = {}
    for beta in BETAS:
        t, x = sa_run(states[0], beta, save_every)
        runs[beta] = (t, pair_cosines(x))
    figure(data, layer_cos, runs, args.out)
    layer_mean = layer_cos.mean(1)
    print("mean pairwise cosine by layer: "
          + ", ".join(f"{k}: {c:.3f}" for k, c in enumerate(layer_mean)))
    for beta, (t, cos) in runs.items():
        print(f"SA beta = {beta:g}: mean cosine "
              + ", ".join(f"t = {t[k]:g}: {cos[k].mean():.4f}"
                          for k in range(0, t.size, max(1, t.size // 6))))
    return {"layer_mean": layer_mean,
            "sa_mean": {beta: cos.mean(1) for beta, (t, cos) in runs.items()},
            "sa_min": {beta: cos.min(1) for beta, (t, cos) in runs.items()},
            "times": {beta: t for beta, (t, cos) in runs.items()}}


if __name__ == "__main__":
    main()
