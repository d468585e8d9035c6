"""README command (1): the console script and the demo."""
from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest

from meanfield.cli import main
from meanfield.io import read_netcdf


def test_console_script_is_installed():
    exe = shutil.which("meanfield")
    if exe is None:  # tests run from a source tree without install: use the module
        cmd = [sys.executable, "-m", "meanfield.cli", "--help"]
    else:
        cmd = [exe, "--help"]
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "evolve" in out.stdout and "demo" in out.stdout


def test_demo_writes_results_and_figures(tmp_path, kuramoto_r, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--no-progress"]) == 0
    # one line per figure, saying what it shows (also with --no-progress: they are results)
    lines = capsys.readouterr().out.splitlines()
    figures = sorted(p.name for p in out.glob("*.png"))
    assert sorted(line.split(": ")[0].removeprefix(f"wrote {out}/") for line in lines
                  if line.startswith("wrote ")) == figures
    shows = dict(line.removeprefix(f"wrote {out}/").split(": ", 1) for line in lines)
    assert "L1 distance" in shows["particles_vs_pde_distance.png"]
    assert "free energy" in shows["kuramoto_subcritical_diagnostics.png"]
    assert "free energy" not in shows["clustering_diagnostics.png"]  # no noise: none
    assert "Mollweide" in shows["sphere_clustering_snapshots.png"]
    for name in ["clustering", "kuramoto_subcritical", "kuramoto_supercritical",
                 "sphere_clustering"]:
        assert (out / f"{name}.nc").exists() and (out / f"{name}_summary.png").exists()
    assert (out / "order_parameter.png").exists()
    sup = read_netcdf(out / "kuramoto_supercritical.nc")
    assert sup.order_parameter.values[-1] == pytest.approx(kuramoto_r(4.0), abs=1e-6)
    sub = read_netcdf(out / "kuramoto_subcritical.nc")
    assert sub.order_parameter.values[-1] < 0.05 * sub.order_parameter.values[0]
    clus = read_netcdf(out / "clustering.nc")
    assert clus.density.values[-1].max() > 20 * clus.density.values[0].max()
    assert np.all(clus.density.values >= 0)
    sph = read_netcdf(out / "sphere_clustering.nc")
    assert sph.order_parameter.values[-1] > 0.9 > sph.order_parameter.values[0]
    assert (out / "sphere_clustering_maps.png").exists()
    cmp = read_netcdf(out / "particles_vs_pde.nc")
    assert cmp.attrs["kind"] == "compare" and (out / "particles_vs_pde_summary.png").exists()
    # 4000 tokens against the PDE: early on the L1 distance is the sampling noise (ratio
    # ~1, fluctuating by ~1/sqrt(32 bins) ~ 18%: 1.6 is > 3 sigma). Later the clusters
    # sharpen and the O(1/sqrt(n)) fluctuations of their positions, amplified by the
    # dynamics (the mean-field error grows like e^{Ct}/sqrt(n)), dominate: measured
    # ratios 2-2.6 by t = 5-8.
    early = (cmp.l1_distance / cmp.l1_noise_floor).sel(time=slice(0, 2.0))
    assert float(early.max()) < 1.6
    # a second run refuses to overwrite, before computing anything, and says what to do
    capsys.readouterr()
    assert main(["demo", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--overwrite" in err and "--out" in err
