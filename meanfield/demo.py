"""``meanfield demo``: the showcase on the circle, written to a results folder.

Five runs, each saved as netCDF with its figures:

1. ``clustering``: SA, beta = 9, no noise, from a mixture of three von Mises bumps;
   finite volumes (the clusters sharpen towards point masses, which finite volumes keep
   positive).
2. ``kuramoto_subcritical``: noisy Kuramoto (beta = 0) at kappa = 1.5 < kappa_c = 2: the
   order parameter decays to 0 and the density to uniform.
3. ``kuramoto_supercritical``: kappa = 4 > 2: the order parameter grows to the root of
   r = I_1(kappa r)/I_0(kappa r), 0.8314620...
4. ``sphere_clustering``: SA on S^2, beta = 4, weak noise (kappa = 30), from three von
   Mises-Fisher bumps: they merge into one cluster (spherical harmonics, band limit 32).

5. ``particles_vs_pde``: ``meanfield compare`` of SA on S^1 (beta = 4, kappa = 25) from two
   von Mises bumps: the PDE against 4 x 1000 tokens sampled from the same density, their
   histogram over the density and the L1 distance beside its sampling floor.

and ``order_parameter.png``: the order parameters over time with the predicted limits.
``meanfield demo`` prints one line per figure saying what it shows
(``WHAT_FIGURES_SHOW``).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy import optimize, special

from meanfield.errors import ConfigError, ResultExistsError
from meanfield.io import check_writable, write_atomic
from meanfield.runs.evolve import evolve
from meanfield.runs.schedule import checkpoint_path

RUNS = {
    "clustering": {
        "model": {"beta": 9.0, "normalized": True},
        "discretization": {"method": "finite-volume", "resolution": 512},
        "initial": {"kind": "mixture", "components": [
            {"kind": "von_mises", "center": 0.0, "concentration": 4.0, "weight": 1.0},
            {"kind": "von_mises", "center": 2.3, "concentration": 6.0, "weight": 0.7},
            {"kind": "von_mises", "center": 4.2, "concentration": 3.0, "weight": 0.8}]},
        "time": {"t_final": 12.0, "save_every": 0.1},
    },
    "kuramoto_subcritical": {
        "model": {"beta": 0.0, "kappa": 1.5},
        "discretization": {"method": "spectral", "resolution": 64},
        "initial": {"kind": "von_mises", "center": 1.0, "concentration": 2.0},
        "time": {"t_final": 20.0, "save_every": 0.1},
    },
    "kuramoto_supercritical": {
        "model": {"beta": 0.0, "kappa": 4.0},
        "discretization": {"method": "spectral", "resolution": 64},
        "initial": {"kind": "perturbed", "mode": 1, "amplitude": 0.05},
        "time": {"t_final": 40.0, "save_every": 0.2},
    },
    "sphere_clustering": {
        "domain": {"geometry": "sphere"},
        "model": {"beta": 4.0, "kappa": 30.0, "normalized": True},
        "discretization": {"method": "spectral", "resolution": 32},
        "initial": {"kind": "mixture", "components": [
            {"kind": "von_mises", "center": [1.0, 0.0, 0.0], "concentration": 5.0},
            {"kind": "von_mises", "center": [0.0, 0.6, 0.8], "concentration": 5.0},
            {"kind": "von_mises", "center": [0.0, -0.8, -0.6], "concentration": 5.0,
             "weight": 0.7}]},
        "time": {"t_final": 12.0, "save_every": 0.25},
    },
}


COMPARE = {
    "model": {"beta": 4.0, "kappa": 25.0},
    "discretization": {"method": "spectral", "resolution": 128},
    "initial": {"kind": "mixture", "components": [
        {"kind": "von_mises", "center": 0.5, "concentration": 3.0},
        {"kind": "von_mises", "center": 3.0, "concentration": 5.0, "weight": 0.6}]},
    "time": {"t_final": 8.0, "save_every": 0.2, "dt": 0.01},
    "particles": {"n": 1000, "ensemble": 4},
}


def kuramoto_order_parameter(kappa: float) -> float:
    """The stable root of ``r = I_1(kappa r)/I_0(kappa r)`` (0 for kappa <= 2)."""
    if kappa <= 2:
        return 0.0
    f = lambda r: r - special.ive(1, kappa * r) / special.ive(0, kappa * r)
    return optimize.brentq(f, 1e-6, 1.0, xtol=1e-15, rtol=1e-15)


def _check_out_dir(out_dir: Path, targets, overwrite: bool) -> None:
    """Before computing anything: a folder the results can go to, saying what to do if not.

    A second ``meanfield demo`` finds the first one's results: one message for the
    folder (replace them, or write elsewhere), not one per file.
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"--out {str(out_dir)!r} is a file; the demo writes a folder of "
                          "results: give a folder name (made if missing)", "--out")
    # (an interrupted run's checkpoint too: the runs of the demo do not resume)
    existing = [q.name for p in targets for q in (p, checkpoint_path(p)) if q.exists()]
    if existing and not overwrite:
        raise ResultExistsError(
            f"{str(out_dir)!r} already holds demo results ({', '.join(existing)}); run "
            f"'meanfield demo --overwrite' to replace them, or 'meanfield demo --out "
            "OTHER_FOLDER' to keep them (Python: overwrite=True or another out_dir)", "--out")
    for path in targets:
        check_writable(path, overwrite=True, key="--out")


# What each figure of the demo shows, by (dataset kind, geometry) and page name; the
# page names are those of meanfield.plotting.output. "{t}": the last time of the run.
_DIAGNOSTICS = "the order parameter r(t){noise} over time"
WHAT_FIGURES_SHOW = {
    ("pde", "circle"): {
        "summary": "the density over (angle, time), density curves at five times, and "
                   + _DIAGNOSTICS,
        "spacetime": "the density over angle and time, t = 0..{t}",
        "snapshots": "the density at five times against the uniform density 1/(2 pi)",
        "diagnostics": _DIAGNOSTICS,
    },
    ("pde", "sphere"): {
        "summary": "Mollweide maps of the density at the first and last times, an "
                   "orthographic view of the last, and " + _DIAGNOSTICS,
        "maps": "the density at t = {t} on a Mollweide map and an orthographic view",
        "spacetime": "the largest density over longitude, by latitude and time "
                     "(where the clusters are and how sharp)",
        "snapshots": "Mollweide maps of the density at five times on one colour scale",
        "diagnostics": _DIAGNOSTICS,
    },
    ("compare", "circle"): {
        "summary": "the histogram of the tokens over the PDE density at four times, the "
                   "L1 distance between them beside its sampling floor, and the order "
                   "parameter and energy of both",
        "snapshots": "the histogram of the tokens over the PDE density at six times",
        "distance": "the L1 distance between the token histogram and the PDE density "
                    "over time beside its sampling floor, and the order parameter and "
                    "energy of both",
    },
}
ORDER_PARAMETER_SHOWS = ("the order parameters of the four PDE runs over time, with the "
                         "noisy Kuramoto limits (dotted)")


def what_figure_shows(ds, name: str) -> str:
    """One phrase saying what the demo's figure ``name`` (a page of
    ``meanfield.plotting.output``) of result ``ds`` shows."""
    kind = "compare" if ds.attrs.get("kind") == "compare" else "pde"
    noisy = np.isfinite(float(ds.attrs.get("kappa", np.inf)))
    return WHAT_FIGURES_SHOW[kind, ds.attrs["geometry"]][name].format(
        t=f"{float(ds.time[-1]):g}",
        noise=", the energy and the free energy" if noisy else " and the energy")


def run_demo(out_dir: str | Path = "meanfield-demo", overwrite: bool = False,
             progress: bool = True, report=None) -> list[Path]:
    """Run the showcase; returns the files written.

    Args:
        out_dir: the results folder (made if missing).
        overwrite: replace the results of an earlier demo there.
        progress: progress bars and a line per run.
        report: called with one line per figure written, ``"wrote PATH: what it
            shows"`` (``meanfield demo`` passes ``print``); None: silent.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    out_dir = Path(out_dir)
    targets = {name: out_dir / f"{name}.nc" for name in [*RUNS, "particles_vs_pde"]}
    _check_out_dir(out_dir, targets.values(), overwrite)
    written: list[Path] = []
    results = {}
    for name, cfg in RUNS.items():
        if progress:
            print(f"meanfield demo: {name}")
        ds = evolve(cfg, out=targets[name], overwrite=overwrite, progress=progress)
        results[name] = ds
        written.append(targets[name])
        written += _plot(ds, out_dir, name, report)
    from meanfield.studies.transport.compare import compare
    if progress:
        print("meanfield demo: particles_vs_pde")
    cmp = compare(COMPARE, out=targets["particles_vs_pde"], overwrite=overwrite,
                  progress=progress)
    written.append(targets["particles_vs_pde"])
    written += _plot(cmp, out_dir, "particles_vs_pde", report)

    fig = Figure(figsize=(6.4, 4.0), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for name, ds in results.items():
        ax.plot(ds.time, ds.order_parameter, label=name.replace("_", " "))
        kappa = ds.attrs["kappa"]
        if ds.attrs["beta"] == 0 and np.isfinite(kappa) and ds.attrs["geometry"] == "circle":
            ax.axhline(kuramoto_order_parameter(kappa), ls=":", color="0.4", lw=1)
    ax.set_xlabel("time t")
    ax.set_ylabel(r"order parameter $r = |\int x\, d\mu|$")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(frameon=False)
    ax.set_title("Order parameters (dotted: noisy Kuramoto limits on S¹)")
    written.append(write_atomic(out_dir / "order_parameter.png",
                                lambda tmp: fig.savefig(tmp, format="png", dpi=150)))
    if report is not None:
        report(f"wrote {written[-1]}: {ORDER_PARAMETER_SHOWS}")
    if progress:
        print(f"meanfield demo: wrote {len(written)} files to {out_dir}/")
    return written


def _plot(ds, out_dir: Path, stem: str, report) -> list[Path]:
    """The standard figures of one result, each reported with what it shows."""
    from meanfield.plotting import plot_result

    written = plot_result(ds, out_dir, stem=stem)
    if report is not None:
        for path in written:  # {stem}_{page}.png
            report(f"wrote {path}: {what_figure_shows(ds, path.stem[len(stem) + 1:])}")
    return written
