"""Zonal densities in every dimension: clustering on S⁶³ and the linear theory
==============================================================================

The mean-field PDE on S^{d-1} for densities that depend only on the angle θ to one axis
(``geometry = "zonal"``, docs/zonal.md), in d = 64, a transformer's head dimension, and
the linear theory of the uniform density in every d (docs/conventions.md §3).

1. SA at β = 8 with noise κ = 128 (about twice the threshold κ_c = 64.96 of d = 64) from
   the uniform density plus a small degree-1 mode, by the spectral method (band limit
   128). The first figure is ``meanfield plot``'s summary: (a) the density in θ, which
   in high dimension is largest on the axis, many decades above its value where the
   mass is; (b) the marginal of t = cos θ, where the mass is: at t = 0 within about
   1/√d for the uniform density, then moving to t = r as the cluster forms. The order
   parameter first grows at the linear rate σ_1 (checked), then saturates.
2. Noisy Kuramoto (β = 0) at κ = 128 in d = 64: the stationary order parameter solves
   r = I_{d/2}(κr)/I_{d/2−1}(κr) (checked; the pitchfork is at κ = d).
3. The second figure: the growth rates σ_l = l(l + d − 2)(a_l − 1/κ) against l for
   d = 2, 3, 8, 64, 512 at κ = 1.5 κ_c(d), with rates measured from PDE runs of single
   degrees (crosses), and the critical noise κ_c/d of SA and USA against β, scaled so
   that the dimensions collapse on their large-d limits.

Run ``python examples/zonal_dimensions.py`` (``--quick``: the runs of 1 and 2 shorter);
writes ``zonal_dimensions.png`` (``--out``) and ``zonal_dimensions_theory.png``
beside it, and prints the measured numbers against theory.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from scipy.optimize import brentq
from scipy.special import ive

import meanfield
from meanfield.model.zonal_kernels import (
    zonal_critical_kappa,
    zonal_growth_rate,
    zonal_required_lmax,
)
from meanfield.plotting import figure
from meanfield.plotting.densities.zonal_theory import (
    DIMS,
    growth_rates_by_dim,
    linear_theory_figure,
)
from solvers.transforms.gegenbauer import degree_values

DIM, BETA, KAPPA = 64, 8.0, 128.0
THEORY_BETA, RATIO = 16.0, 1.5  # the theory figure: beta, kappa / kappa_c(d)


def zonal_run(dim: int, beta: float, kappa: float, resolution: int, degree: int,
              amplitude: float, t_final: float, save_every: float,
              tolerance: float = 1e-8):
    """``meanfield.evolve`` of SA on S^{dim-1} from 1 + amplitude P_degree(cos θ)."""
    return meanfield.evolve({
        "domain": {"geometry": "zonal", "dim": dim},
        "model": {"beta": beta, "kappa": kappa, "normalized": True},
        "discretization": {"method": "spectral", "resolution": resolution},
        "initial": {"kind": "perturbed", "degree": degree, "amplitude": amplitude},
        "time": {"t_final": t_final, "save_every": save_every, "tolerance": tolerance}})


def kuramoto_root(dim: int, kappa: float) -> float:
    """The root r > 0 of r = I_{d/2}(κr)/I_{d/2−1}(κr) (κ > d)."""
    return brentq(lambda r: ive(dim / 2, kappa * r) / ive(dim / 2 - 1, kappa * r) - r,
                  1e-9, 1 - 1e-12)


def fitted_rate(ds, degree: int) -> float:
    """The slope of log |∫ P_l(cos θ) dμ| against time (the degree-l amplitude)."""
    p = degree_values(degree, int(ds.attrs["dim"]), ds["cos_polar"].values)
    weighted = np.nan_to_num(ds["density"].values * ds["weights"].values)
    amplitude = np.abs(weighted @ p)
    return float(np.polyfit(ds["time"].values, np.log(amplitude), 1)[0])


def measured_rates(pairs) -> list[dict]:
    """σ_l of PDE runs for (d, l) pairs at β = THEORY_BETA, κ = RATIO κ_c(d)."""
    out = []
    for dim, degree in pairs:
        kappa = RATIO * zonal_critical_kappa(dim, THEORY_BETA, True)
        sigma = float(zonal_growth_rate(degree, dim, THEORY_BETA, kappa, True))
        t_final = min(4.0, 6.0 / abs(sigma))  # a few e-foldings: the mode stays linear
        band_limit = max(32, zonal_required_lmax(dim, THEORY_BETA))  # (51 at d = 512)
        ds = zonal_run(dim, THEORY_BETA, kappa, band_limit, degree, 1e-6, t_final,
                       t_final / 8, tolerance=1e-10)
        out.append({"dim": dim, "degree": degree, "theory": sigma,
                    "measured": fitted_rate(ds, degree)})
    return out


def theory_figure(rates: list[dict], path: Path) -> None:
    """The linear-theory figure with the measured rates as crosses on panel (a)."""
    fig = linear_theory_figure(DIMS, THEORY_BETA, ratio=RATIO)
    ax = fig.axes[0]
    marks = [ax.plot(run["degree"], run["measured"], "x", color="black", ms=6, mew=1.2,
                     zorder=6)[0] for run in rates]
    ax.legend(marks[:1], ["PDE runs"], loc="upper right", handlelength=1.0)
    fig.savefig(path, dpi=150)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="zonal_dimensions.png")
    args = parser.parse_args(argv)
    out = Path(args.out)
    # 1. clustering in d = 64: the summary figure and the linear growth of r
    ds = zonal_run(DIM, BETA, KAPPA, 128, 1, 0.01, 20.0 if args.quick else 30.0, 0.25)
    early = ds["time"].values <= 4.0
    sigma_1 = float(zonal_growth_rate(1, DIM, BETA, KAPPA, True))
    slope = float(np.polyfit(ds["time"].values[early],
                             np.log(ds["order_parameter"].values[early]), 1)[0])
    figure(ds).savefig(out, dpi=150)
    # 2. noisy Kuramoto in d = 64: the stationary order parameter
    kuramoto = meanfield.evolve({
        "domain": {"geometry": "zonal", "dim": DIM}, "model": {"beta": 0.0, "kappa": KAPPA},
        # (the clustered state e^{kappa r t}, kappa r = 91, needs band limit ~100: at 64
        # its negative part reaches 1e-6 of the mass by t = 18 and the run stops)
        "discretization": {"method": "spectral", "resolution": 128},
        "initial": {"kind": "perturbed", "degree": 1, "amplitude": 0.01},
        "time": {"t_final": 45.0 if args.quick else 60.0, "save_every": 5.0}})
    r_pde, r_exact = float(kuramoto["order_parameter"][-1]), kuramoto_root(DIM, KAPPA)
    # 3. the linear theory in every dimension, with measured rates
    rates = measured_rates([(d, l) for d in DIMS for l in (1, 2, 3)])
    theory_figure(rates, out.with_name(out.stem + "_theory.png"))
    worst = max(abs(r["measured"] / r["theory"] - 1) for r in rates)
    mass = float(np.max(np.abs(ds["mass"].values - 1)))
    print(f"d = {DIM}, SA, beta = {BETA:g}, kappa = {KAPPA:g}: kappa_c = "
          f"{zonal_critical_kappa(DIM, BETA, True):.4f}; r(t) grows at {slope:.5f} for "
          f"t <= 4 against sigma_1 = {sigma_1:.5f}; r = "
          f"{float(ds['order_parameter'][-1]):.4f} at t = {float(ds['time'][-1]):g}; "
          f"max |M - 1| = {mass:.1e}")
    print(f"noisy Kuramoto, d = {DIM}, kappa = {KAPPA:g}: r = {r_pde:.10f}, root of "
          f"r = I_32(kappa r)/I_31(kappa r) = {r_exact:.10f}")
    for r in rates:
        print(f"  d = {r['dim']:3d}, l = {r['degree']}: sigma measured {r['measured']:+.6f}, "
              f"theory {r['theory']:+.6f}")
    print(f"largest relative error of the measured rates: {worst:.1e}")
    return {"slope": slope, "sigma_1": sigma_1, "mass_error": mass, "r_pde": r_pde,
            "r_exact": r_exact, "rates": rates, "worst_rate_error": worst,
            "dataset": ds}


if __name__ == "__main__":
    main()
