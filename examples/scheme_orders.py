"""Orders of the schemes, measured
================================

Every scheme of the package refined against a reference, with the observed order next to
the order the code states (docs/schemes.md).

(a) Time: fixed steps ``h`` against an exact solution or a run at a much smaller step.
ETDRK4 on the spectral S^1 and S^2 solvers (order 4; SA, beta = 2, kappa = 10, from a
von Mises density, against 1/256 of the time span), SSP-RK3 on the S^1 finite volumes
(order 3; beta = 2 without noise, against a run at 1/800), RK4 with retraction on
equiangular tokens (order 4; n = d = 4, SA, beta = 1, against the equiangular ODE solved
by DOP853 to 1e-13: an independent reference), and geodesic Euler-Maruyama (strong order
1/2; 256 tokens on S^2, SA, beta = 2, kappa = 1, against the same Brownian path at 1024
steps).

(b) Space, algebraic: the S^1 finite volumes (CCH, order 2) against the cell averages of a
spectral solution at 256 points (SA, beta = 8, kappa = 50, t = 2), in L^1; the full run
adds the S^2 finite volumes on the icosahedral meshes of 642 to 10242 cells against the
spectral solution at band limit 48, the spacing being ``sqrt(4 pi / cells)``.

(c) Space, spectral: the stationary state of noisy Kuramoto (beta = 0), found by
Newton-Krylov at each resolution, against the exact ``exp(kappa r cos theta)``: on S^1
(kappa = 3) with ``r = I_1(kappa r)/I_0(kappa r)``, on S^2 (kappa = 6) with r the root of
the Langevin equation ``r = coth(kappa r) - 1/(kappa r)``. The error falls faster than any
power of the resolution: the algebraic order between two levels keeps growing.

(d) Newton-Krylov with the exact Jacobian-vector products: the residual of each step
against that of the step before, order 2 (quadratic) until round-off.

Run ``python examples/scheme_orders.py`` (about a minute; ``--quick``: fewer levels and
no S^2 finite volumes, about 4 s of CPU); writes
``scheme_orders.png`` (``--out``) and prints each observed order with the stated one.
``--quick`` checks that each observed order is the stated one within the margin listed
in ``MARGINS``.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np
from matplotlib import ticker
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from scipy.integrate import solve_ivp

import meanfield
from meanfield import config
from meanfield.discretizations.base import Discretization
from meanfield.initial import tokens
from meanfield.model import particles
from meanfield.studies.bifurcation import stationary, stationary_linear
from solvers import steppers

# How far an observed order may lie from the stated one (--quick checks it). The fits of
# the time steppers use their three finest levels (the coarsest step is not yet in the
# asymptotic range); Euler-Maruyama's order is a sample mean over 256 tokens (its spread
# between seeds is about +-0.03).
MARGINS = {"time": 0.3, "euler_maruyama": 0.1, "space": 0.2, "newton": 0.3}
# The direct interaction sums by BLAS: for these few tokens the fastest backend (the
# integrators do not depend on it).
BACKEND = "blas"


def fitted_order(sizes, errors, finest: int | None = None) -> float:
    """Least-squares slope of log(error) against log(size) over the ``finest`` smallest
    sizes (all when None)."""
    sizes, errors = np.asarray(sizes, float), np.asarray(errors, float)
    keep = np.argsort(sizes)[:finest] if finest else slice(None)
    return float(np.polyfit(np.log(sizes[keep]), np.log(errors[keep]), 1)[0])


def final_density(geometry: str, method: str, resolution: int, dt, t_final: float,
                  model: dict, initial: dict) -> np.ndarray:
    """The density of an evolve run at ``t_final`` (fixed ``dt`` or ``"auto"``)."""
    return meanfield.evolve({
        "model": model, "domain": {"geometry": geometry},
        "discretization": {"method": method, "resolution": resolution},
        "initial": initial,
        "time": {"t_final": t_final, "save_every": t_final, "dt": dt, "tolerance": 1e-13},
    }).density.values[-1]


# --- (a) time --------------------------------------------------------------------------

def etdrk4(geometry: str, quick: bool) -> dict:
    """ETDRK4 of a spectral solver: max error at t = 2 against 1/256 of the span."""
    t_final, resolution = 2.0, 64 if geometry == "circle" else 24
    model = {"beta": 2.0, "kappa": 10.0}
    initial = {"kind": "von_mises", "concentration": 2.0 if geometry == "circle" else 1.0}
    steps = [4, 8, 16, 32] if quick else [4, 8, 16, 32, 64]
    ref = final_density(geometry, "spectral", resolution, t_final / 256, t_final, model,
                        initial)
    errors = [np.abs(final_density(geometry, "spectral", resolution, t_final / m, t_final,
                                   model, initial) - ref).max() for m in steps]
    return {"h": t_final / np.array(steps), "error": np.array(errors)}


def ssprk3(quick: bool) -> dict:
    """SSP-RK3 of the S^1 finite volumes (64 cells, beta = 2, no noise) against 1/800."""
    model = {"beta": 2.0, "kappa": "inf"}
    initial = {"kind": "von_mises", "concentration": 1.0}
    steps = [25, 50, 100] if quick else [25, 50, 100, 200]
    ref = final_density("circle", "finite-volume", 64, 1 / 800, 1.0, model, initial)
    errors = [np.abs(final_density("circle", "finite-volume", 64, 1 / m, 1.0, model,
                                   initial) - ref).max() for m in steps]
    return {"h": 1 / np.array(steps), "error": np.array(errors)}


def rk4_tokens(quick: bool) -> dict:
    """RK4 with retraction on equiangular tokens against the equiangular ODE (SA)."""
    n, t_final = 4, 3.0
    model = particles.AttentionParticles(1.0, backend=BACKEND)
    x0 = tokens.equiangular_tokens(n, n, 0.0)
    exact = solve_ivp(model.equiangular_rhs(n), (0.0, t_final), [0.0], method="DOP853",
                      rtol=1e-13, atol=1e-15).y[0, -1]
    scheme = steppers.RetractedRK4(model.velocity)
    off = ~np.eye(n, dtype=bool)
    steps = [4, 8, 16, 32] if quick else [4, 8, 16, 32, 64]
    errors, norm_error = [], 0.0
    for m in steps:
        x = x0
        for _ in range(m):
            x = scheme.step(x, t_final / m)
        norm_error = max(norm_error, float(np.abs(np.linalg.norm(x, axis=1) - 1).max()))
        errors.append(np.abs((x @ x.T)[off] - exact).max())
    return {"h": t_final / np.array(steps), "error": np.array(errors),
            "norm_error": norm_error}


def euler_maruyama(quick: bool) -> dict:
    """Geodesic Euler-Maruyama, strong error: mean distance at t = 1 to the path of the
    same Brownian increments at 1024 steps (256 tokens on S^2, seed 7)."""
    n, kappa, t_final, fine = 256, 1.0, 1.0, 1024
    model = particles.AttentionParticles(2.0, backend=BACKEND)
    x0 = tokens.uniform_tokens(n, 3, seed=3)
    scheme = steppers.GeodesicEulerMaruyama(model.velocity, kappa)
    dw = np.random.default_rng(7).standard_normal((fine, n, 3))
    dw *= math.sqrt(t_final / fine)

    def solve(steps: int) -> np.ndarray:
        increments = dw.reshape(steps, fine // steps, n, 3).sum(axis=1)
        x = x0
        for k in range(steps):
            x = scheme.step(x, t_final / steps, increments[k])
        return x

    ref = solve(fine)
    steps = [8, 16, 32, 64] if quick else [8, 16, 32, 64, 128]
    errors = [np.linalg.norm(solve(m) - ref, axis=1).mean() for m in steps]
    return {"h": t_final / np.array(steps), "error": np.array(errors)}


# --- (b) space, algebraic --------------------------------------------------------------

SMOOTH = {"model": {"beta": 8.0, "kappa": 50.0, "normalized": True},
          "initial": {"kind": "mixture", "components": [
              {"kind": "perturbed", "mode": 1, "amplitude": 0.8},
              {"kind": "perturbed", "mode": 2, "amplitude": 0.5, "phase": 0.4}]}}


def fv_circle(quick: bool) -> dict:
    """S^1 finite volumes against the cell averages of the spectral solution (L^1)."""
    t_final = 2.0
    ref = final_density("circle", "spectral", 256, "auto", t_final, **SMOOTH)
    coeffs = np.fft.rfft(ref) / ref.size
    k = np.arange(coeffs.size)
    coeffs = coeffs * np.where(k == 0, 1.0, 2.0)
    sizes = [64, 128, 256] if quick else [64, 128, 256, 512]
    errors = []
    for n in sizes:
        dx = 2 * np.pi / n
        # cell averages of the series: mode k times sinc(k dx / 2 pi)
        averages = np.real(np.exp(1j * np.outer(dx * np.arange(n), k))
                           @ (coeffs * np.sinc(k * dx / (2 * np.pi))))
        rho = final_density("circle", "finite-volume", n, "auto", t_final, **SMOOTH)
        errors.append(np.sum(np.abs(rho - averages)) * dx)
    return {"h": 2 * np.pi / np.array(sizes), "error": np.array(errors)}


def fv_sphere() -> dict:
    """S^2 finite volumes against the spectral solution at the cell centres (L^1)."""
    import ducc0

    from solvers.grids.sphere import SphereGrid

    model = {"beta": 2.0, "kappa": 8.0, "normalized": True}
    initial = {"kind": "mixture", "components": [
        {"kind": "von_mises", "center": [0.0, 0.0, 1.0], "concentration": 3.0},
        {"kind": "von_mises", "center": [0.8, 0.0, 0.6], "concentration": 4.0,
         "weight": 0.6}]}
    alm = SphereGrid(48).analysis(final_density("sphere", "spectral", 48, "auto", 1.0,
                                                model, initial))
    cells, errors = [642, 2562, 10242], []
    for c in cells:
        ds = meanfield.evolve({
            "model": model, "domain": {"geometry": "sphere"},
            "discretization": {"method": "finite-volume", "resolution": c},
            "initial": initial, "time": {"t_final": 1.0, "save_every": 1.0}})
        loc = np.stack([np.pi / 2 - ds.lat.values, ds.lon.values], 1)
        exact = ducc0.sht.experimental.synthesis_general(alm=alm[None], spin=0, lmax=48,
                                                         loc=loc, epsilon=1e-13)[0]
        errors.append(float(np.sum(ds.weights.values
                                   * np.abs(ds.density.values[-1] - exact))))
    return {"h": np.sqrt(4 * np.pi / np.array(cells)), "error": np.array(errors)}


# --- (c, d) space, spectral, and Newton ------------------------------------------------

def stationary_states(geometry: str, kappa: float, resolutions) -> dict:
    """Newton-Krylov stationary states of noisy Kuramoto at each resolution: relative max
    error against the exact density, and the Newton residuals of the finest."""
    errors, history = [], []
    for n in resolutions:
        cfg = config.validate({"domain": {"geometry": geometry},
                               "discretization": {"resolution": int(n)},
                               "model": {"beta": 0.0, "kappa": kappa},
                               "initial": {"kind": "uniform"}})
        disc = Discretization.from_config(cfg)
        points = disc.grid.points
        axis = np.eye(points.shape[-1])[0 if geometry == "circle" else -1]
        result = stationary.stationary_state(disc, np.exp(2.0 * points @ axis), tol=1e-12)
        if not result.converged:
            raise RuntimeError(f"{geometry} at resolution {n}: {result.message}")
        exact = stationary_linear.noisy_stationary_density(geometry, kappa, points)
        errors.append(np.abs(disc.to_density(result.state) - exact).max() / exact.max())
        history = result.history
    return {"n": np.array(resolutions), "error": np.array(errors),
            "history": np.array(history)}


def local_orders(resolutions, errors) -> np.ndarray:
    """``log(e_i / e_{i+1}) / log(n_{i+1} / n_i)``: the algebraic order between two
    resolutions. It grows with n when the error falls faster than any power (spectral
    accuracy); it stays put for an algebraic order."""
    n, e = np.asarray(resolutions, float), np.asarray(errors, float)
    return np.log(e[:-1] / e[1:]) / np.log(n[1:] / n[:-1])


def newton_order(history: np.ndarray) -> float:
    """The order p of ``r_{k+1} ~ C r_k^p`` from the last three residuals above 1e-13
    (above round-off): ``log(r3/r2) / log(r2/r1)``."""
    r = history[history > 1e-13]
    r1, r2, r3 = r[-3:]
    return float(np.log(r3 / r2) / np.log(r2 / r1))


# --- the figure ------------------------------------------------------------------------

def _slope_line(ax, h, error, order: float, color) -> None:
    """A dashed reference line of slope ``order``, a factor 3 below the finest point (so
    that it does not hide the data)."""
    h = np.asarray(h)
    x = np.array([h.min(), h.max()])
    ax.plot(x, error[np.argmin(h)] / 3 * (x / h.min()) ** order, ls="--", lw=0.9,
            color=color)


def _dashed_entry(ax, label: str) -> None:
    """A legend entry for the dashed reference lines (drawn in each curve's colour)."""
    ax.plot([], [], ls="--", lw=0.9, color="0.4", label=label)


def draw(out: str, results: dict) -> None:
    fig = Figure(figsize=(11, 8.4), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, 2)
    ax = axes[0, 0]
    for name, label, order, color, marker in TIME_CURVES:
        res = results[name]
        ax.loglog(res["h"], res["error"], marker=marker, color=color, lw=1.2, ms=5,
                  label=f"{label}: {res['order']:.2f}")
        _slope_line(ax, res["h"], res["error"], order, color)
    _dashed_entry(ax, "stated order (slopes 4, 4, 3, 4, 1/2)")
    ax.set_xlabel("time step h")
    ax.set_ylabel("error at the final time")
    ax.set_title("(a) time: observed orders")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2,
              frameon=False)

    ax = axes[0, 1]
    for name, label, color, marker in SPACE_CURVES:
        if name in results:
            res = results[name]
            ax.loglog(res["h"], res["error"], marker=marker, color=color, lw=1.2, ms=5,
                      label=f"{label}: {res['order']:.2f}")
            _slope_line(ax, res["h"], res["error"], 2.0, color)
    _dashed_entry(ax, "stated order (slope 2)")
    # a few plain ticks (the default labels every minor tick of this short decade)
    ax.xaxis.set_major_locator(ticker.FixedLocator([0.0125, 0.025, 0.05, 0.1, 0.2]))
    ax.xaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    both = "grid spacing (S$^1$: $2\\pi$/cells; S$^2$: $\\sqrt{4\\pi/\\mathrm{cells}}$)"
    ax.set_xlabel(both if "fv_sphere" in results else "grid spacing $2\\pi$/cells")
    ax.set_ylabel("$L^1$ error at the final time")
    ax.set_title("(b) space, finite volumes")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2,
              frameon=False)

    ax = axes[1, 0]
    for name, label, color, marker in SPECTRAL_CURVES:
        if name in results:
            res = results[name]
            lo = res["local_orders"]
            ax.semilogy(res["n"], res["error"], marker=marker, color=color, lw=1.2, ms=5,
                        label=f"{label}: local order {lo[0]:.0f} to {lo[-1]:.0f}")
    ax.set_xlabel("resolution (S$^1$: points; S$^2$: band limit L)")
    ax.set_ylabel("max relative error of the stationary density")
    ax.set_title("(c) space, spectral: faster than any power (exact reference)")
    ax.legend(fontsize=8, loc="upper right", frameon=False)

    ax = axes[1, 1]
    for name, label, color, marker in SPECTRAL_CURVES:
        if name in results:
            r = results[name]["history"]
            r = r[r > 1e-13]
            ax.loglog(r[:-1], r[1:], marker=marker, color=color, lw=1.2, ms=5,
                      label=f"{label}: {results[name]['newton_order']:.2f}")
    lo, hi = 1e-13, 1e3
    x = np.logspace(-7, 2, 10)
    ax.loglog(x, x**2, ls="--", color="0.4", lw=0.9, label="slope 2 (quadratic)")
    ax.loglog(x, x, ls=":", color="0.6", lw=0.9, label="slope 1")
    ax.set_xlim(1e-7, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("Newton residual $\\|F(u_k)\\|$")
    ax.set_ylabel("next residual $\\|F(u_{k+1})\\|$")
    ax.set_title("(d) Newton-Krylov on the stationary states")
    ax.legend(fontsize=8, loc="upper left", frameon=False)
    fig.savefig(out, dpi=150)


# (result name, legend label, stated order, color, marker)
TIME_CURVES = [
    ("etdrk4_circle", "ETDRK4, S$^1$ spectral", 4.0, "C0", "o"),
    ("etdrk4_sphere", "ETDRK4, S$^2$ spectral", 4.0, "C1", "s"),
    ("ssprk3_circle", "SSP-RK3, S$^1$ finite volumes", 3.0, "C2", "^"),
    ("rk4_tokens", "RK4 + retraction, tokens", 4.0, "C3", "D"),
    ("euler_maruyama", "Euler-Maruyama (strong), tokens", 0.5, "C4", "v"),
]
SPACE_CURVES = [("fv_circle", "S$^1$ finite volumes", "C2", "^"),
                ("fv_sphere", "S$^2$ finite volumes", "C5", "p")]
SPECTRAL_CURVES = [("spectral_circle", "S$^1$ spectral (points)", "C0", "o"),
                   ("spectral_sphere", "S$^2$ spectral (band limit)", "C1", "s")]
STATED = {"etdrk4_circle": 4.0, "etdrk4_sphere": 4.0, "ssprk3_circle": 3.0,
          "rk4_tokens": 4.0, "euler_maruyama": 0.5, "fv_circle": 2.0, "fv_sphere": 2.0}
MARGIN_OF = {"etdrk4_circle": "time", "etdrk4_sphere": "time", "ssprk3_circle": "time",
             "rk4_tokens": "time", "euler_maruyama": "euler_maruyama",
             "fv_circle": "space", "fv_sphere": "space"}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="scheme_orders.png")
    args = parser.parse_args(argv)
    quick = args.quick
    start = time.perf_counter()
    results = {"etdrk4_circle": etdrk4("circle", quick),
               "etdrk4_sphere": etdrk4("sphere", quick),
               "ssprk3_circle": ssprk3(quick), "rk4_tokens": rk4_tokens(quick),
               "euler_maruyama": euler_maruyama(quick), "fv_circle": fv_circle(quick)}
    if not quick:
        results["fv_sphere"] = fv_sphere()
    results["spectral_circle"] = stationary_states(
        "circle", 3.0, range(10, 24, 4) if quick else range(10, 26, 2))
    results["spectral_sphere"] = stationary_states(
        "sphere", 6.0, range(8, 24, 4) if quick else range(8, 20, 2))
    checks = {}
    for name, res in results.items():
        if name in STATED:
            # time: the three finest steps; space: all levels (in the asymptotic range)
            res["order"] = fitted_order(res["h"], res["error"],
                                        3 if MARGIN_OF[name] == "time" else None)
            margin = MARGINS[MARGIN_OF[name]]
            checks[name] = (res["order"], STATED[name], margin)
        else:
            res["newton_order"] = newton_order(res["history"])
            checks[f"newton_{name}"] = (res["newton_order"], 2.0, MARGINS["newton"])
            res["local_orders"] = local_orders(res["n"], res["error"])
    draw(args.out, results)
    for name, (got, stated, margin) in checks.items():
        print(f"{name:>24}: observed order {got:5.2f}, stated {stated:g} "
              f"(margin {margin:g})")
    for name in ("spectral_circle", "spectral_sphere"):
        if name in results:
            res = results[name]
            print(f"{name:>24}: errors {', '.join(f'{e:.1e}' for e in res['error'])} "
                  f"at resolutions {', '.join(str(n) for n in res['n'])}; local orders "
                  f"{', '.join(f'{p:.1f}' for p in res['local_orders'])}")
    norm_error = results["rk4_tokens"]["norm_error"]
    print(f"token norms after RK4 + retraction within {norm_error:.1e} of 1; wall time "
          f"{time.perf_counter() - start:.1f} s")
    results["checks"] = checks
    results["all_within"] = all(abs(got - stated) <= margin
                                for got, stated, margin in checks.values())
    # spectral accuracy: the local algebraic orders grow from level to level, and the
    # finest level is below 1e-7 (relative)
    results["spectral"] = all(bool(np.all(np.diff(results[name]["local_orders"]) > 0))
                              and results[name]["error"][-1] < 1e-7
                              for name in ("spectral_circle", "spectral_sphere"))
    return results


if __name__ == "__main__":
    main()
