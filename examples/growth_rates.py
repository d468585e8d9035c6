"""Growth rates of the uniform density
===================================

Linear stability of the uniform density: growth rates measured from PDE runs against
sigma_k = k^2 (a_k - 1/kappa) (docs/conventions.md), over beta, for SA and USA.

Run ``python examples/growth_rates.py`` (``--quick``: three betas, the largest rates among them); writes
``growth_rates.png``.
"""
from __future__ import annotations

import argparse

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import meanfield
from meanfield.model.kernels import growth_rate
from meanfield.plotting import style


def measured_rate(beta: float, kappa: float, normalized: bool, k: int) -> float:
    # a window of at most 8 e-foldings of the expected rate keeps the mode linear (USA
    # k = 2 at beta = 6 grows like e^{30 t}: over t = 1 the density went negative)
    t_final = min(1.0, 8.0 / max(1.0, abs(growth_rate(k, beta, kappa, normalized))))
    ds = meanfield.evolve({
        "model": {"beta": beta, "kappa": kappa, "normalized": normalized},
        "discretization": {"method": "spectral", "resolution": 64},
        "initial": {"kind": "perturbed", "mode": k, "amplitude": 1e-7},
        "time": {"t_final": t_final, "save_every": t_final / 10, "tolerance": 1e-11},
    })
    w, th = ds.weights.values, ds.theta.values
    amp = np.abs((ds.density.values * w) @ np.exp(-1j * k * th))
    return float(np.polyfit(ds.time.values, np.log(amp), 1)[0])


def main(argv=None) -> float:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="growth_rates.png")
    parser.add_argument("--kappa", type=float, default=4.0)
    args = parser.parse_args(argv)
    betas = np.array([0.0, 3.0, 6.0]) if args.quick else np.linspace(0.0, 6.0, 13)
    fine = np.linspace(0.0, 6.0, 300)
    with style():  # the package's figure style
        # one panel per model, each on its own linear scale: the USA rates grow like
        # e^beta (USA k = 2 left a shared frame at beta = 4.7) while the SA rates stay
        # within 1 of zero (a symmetric-log axis bent the curves where it changes scale)
        fig = Figure(figsize=(8.0, 3.4), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(1, 2)
        worst = 0.0
        for ax, (normalized, name, color) in zip(axes, [(True, "SA", "C0"),
                                                        (False, "USA", "C3")]):
            for k, marker in [(1, "o"), (2, "s")]:
                sigma = np.array([growth_rate(k, b, args.kappa, normalized) for b in fine])
                line = "-" if k == 1 else "--"
                ax.plot(fine, sigma, color=color, lw=1, ls=line)
                got = np.array([measured_rate(b, args.kappa, normalized, k) for b in betas])
                exact = np.array([growth_rate(k, b, args.kappa, normalized) for b in betas])
                worst = max(worst, float(np.max(np.abs(got - exact) / np.abs(exact))))
                ax.plot(betas, got, marker, color=color, mfc="none", ms=5)
                # one entry per mode shows its line (theory) and its marker (PDE)
                ax.plot([], [], color=color, lw=1, ls=line, marker=marker, mfc="none",
                        ms=5, label=f"k = {k}")
            ax.axhline(0, color="0.6", lw=0.8)
            ax.set_xlabel(r"$\beta$")
            ax.set_ylabel(r"growth rate $\sigma_k$")
            ax.set_title(f"({'ab'[int(not normalized)]}) {name}", loc="left")
            ax.legend(loc="upper left" if not normalized else "lower right")
        fig.suptitle(rf"Growth rates of the uniform state, $\kappa = {args.kappa:g}$: "
                     "theory (lines), PDE (markers)")
        fig.savefig(args.out, dpi=150)
    print(f"max relative error of the measured growth rates: {worst:.1e}")
    return worst


if __name__ == "__main__":
    main()
