"""Circle solvers against plain-numpy implementations of the same schemes, in one run.

    python benchmarks/bench_circle.py            # spectral n = 1024, finite volume n = 4096
    python benchmarks/bench_circle.py --quick    # smaller and shorter

Prints steps per second of each and the ratio (package / numpy). The numpy baselines are
the same discretisations written the direct way (numpy.fft, array expressions, no numba,
no cached plans); both sides take the same steps, and the final densities are compared
so that the ratio is between equal computations.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from meanfield.discretizations.circle import FiniteVolumeCircle, SpectralCircle
from meanfield.initial.circle import initial_values
from meanfield.model.circle import CircleModel
from meanfield.model.kernels import kernel_multiplier, potential_multiplier
from solvers.grids.circle import CircleGrid, padded_size
from solvers.steppers import ETDRK4

INITIAL = {"kind": "mixture", "components": [
    {"kind": "von_mises", "center": 0.0, "concentration": 6.0, "weight": 1.0},
    {"kind": "von_mises", "center": 2.5, "concentration": 6.0, "weight": 0.8}]}


# --- plain numpy baselines ---------------------------------------------------------------
def numpy_spectral_tendency(n: int, beta: float):
    """-d/dtheta(rho v) for SA with numpy.fft and the 3/2 rule (the package's scheme)."""
    m = padded_size(n)
    k = np.arange(n // 2 + 1)
    g, s = potential_multiplier(n // 2, beta), kernel_multiplier(n // 2, beta)
    g[-1] = s[-1] = 0.0
    ik = 1j * k
    ik[-1] = 0.0

    def pad(c):
        return np.concatenate([c, np.zeros(m // 2 + 1 - c.size, complex)])

    def tendency(c):
        v = np.fft.irfft(pad(ik * g * c), m, norm="forward") / \
            np.fft.irfft(pad(s * c), m, norm="forward")
        flux = np.fft.irfft(pad(c), m, norm="forward") * v
        return np.fft.rfft(flux, norm="forward")[: n // 2 + 1] * (-ik)

    return tendency


def numpy_fv_rhs(n: int, beta: float, cfl: float):
    """CCH fluxes (SA, no noise) with numpy arrays: the package's finite-volume scheme."""
    dx = 2 * np.pi / n
    g, s = potential_multiplier(n // 2, beta), kernel_multiplier(n // 2, beta)
    g[-1] = s[-1] = 0.0

    def rhs(rho):
        c = np.fft.rfft(rho, norm="forward")
        phi = np.fft.irfft(g * c, n, norm="forward")
        kern = np.fft.irfft(s * c, n, norm="forward")
        ratio = (np.roll(phi, -1) - phi) / kern
        y = beta * ratio
        dpsi = ratio * np.where(np.abs(y) < 1e-8, 1 - y / 2,
                                np.log1p(y) / np.where(y == 0, 1, y))
        dm, dp = rho - np.roll(rho, 1), np.roll(rho, -1) - rho
        cen = 0.5 * (dm + dp)
        slope = np.where((dm > 0) & (dp > 0), np.minimum(np.minimum(2 * dm, cen), 2 * dp),
                         np.where((dm < 0) & (dp < 0),
                                  np.maximum(np.maximum(2 * dm, cen), 2 * dp), 0.0))
        east, west = rho + 0.5 * slope, rho - 0.5 * slope
        u = dpsi / dx
        flux = np.maximum(u, 0) * east + np.minimum(u, 0) * np.roll(west, -1)
        a = np.max(np.abs(u))
        return -(flux - np.roll(flux, 1)) / dx, cfl * dx / (2 * a)

    return rhs


def ssprk3(rhs, u, t_final):
    t, steps = 0.0, 0
    while t < t_final:
        k1, h = rhs(u)
        h = min(h, t_final - t)
        u1 = u + h * k1
        u2 = 0.75 * u + 0.25 * (u1 + h * rhs(u1)[0])
        u = u + (2.0 / 3.0) * ((u2 - u) + h * rhs(u2)[0])
        t += h
        steps += 1
    return u, steps


# --- timings -------------------------------------------------------------------------------
def bench_spectral(n: int, t_final: float, dt: float, beta: float, kappa: float) -> None:
    # With noise: without it the clusters collapse below any grid and the spectral
    # solution (rightly) stops; the benchmark times steps, not that error.
    grid = CircleGrid(n)
    model = CircleModel(grid, beta, kappa, True)
    solver = SpectralCircle(model, dt, 1e-8, 1e-6)
    rho0 = initial_values(INITIAL, grid)
    steps = int(round(t_final / dt))

    def run(scheme):
        c = solver.to_state(rho0)
        start = time.perf_counter()
        for _ in range(steps):
            c = scheme.step(c, dt)
        return c, time.perf_counter() - start

    run(solver.scheme)  # warm-up: plans, caches
    c_pkg, t_pkg = run(solver.scheme)
    baseline = ETDRK4(solver.scheme.linear, numpy_spectral_tendency(n, beta))
    c_np, t_np = run(baseline)
    diff = np.abs(np.fft.irfft(c_pkg, n) - np.fft.irfft(c_np, n)).max() * n
    report(f"spectral  n={n:5d} SA beta={beta:g} kappa={kappa:g} t=0..{t_final:g} "
           f"({steps} ETDRK4 steps)",
           steps, t_pkg, t_np, diff)


def bench_fv(n: int, t_final: float, beta: float, cfl: float = 0.8) -> None:
    grid = CircleGrid(n)
    model = CircleModel(grid, beta, np.inf, True)
    solver = FiniteVolumeCircle(model, "auto", cfl)
    rho0 = initial_values(INITIAL, grid, averages=True)
    solver.rhs(rho0)  # warm-up: numba compile
    start = time.perf_counter()
    u_pkg, steps = ssprk3(lambda u: (solver.rhs(u), solver.rhs.max_step(u)), rho0.copy(),
                          t_final)
    t_pkg = time.perf_counter() - start
    start = time.perf_counter()
    u_np, steps_np = ssprk3(numpy_fv_rhs(n, beta, cfl), rho0.copy(), t_final)
    t_np = time.perf_counter() - start
    report(f"finite-volume n={n:5d} SA beta={beta:g} t=0..{t_final:g} ({steps} SSP-RK3 "
           f"steps)", steps, t_pkg, t_np * steps / steps_np, np.abs(u_pkg - u_np).max())


def report(label: str, steps: int, t_pkg: float, t_np: float, diff: float) -> None:
    print(label)
    print(f"    meanfield  {steps / t_pkg:10.1f} steps/s  ({t_pkg:.2f} s)")
    print(f"    numpy      {steps / t_np:10.1f} steps/s  ({t_np:.2f} s)")
    print(f"    speed-up   {t_np / t_pkg:10.2f} x      (max |difference| {diff:.1e})")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        bench_spectral(256, 1.0, 1e-3, 5.0, 10.0)
        bench_fv(1024, 1.0, 5.0)
    else:
        bench_spectral(1024, 10.0, 1e-3, 5.0, 10.0)
        bench_fv(4096, 10.0, 5.0)


if __name__ == "__main__":
    main()
