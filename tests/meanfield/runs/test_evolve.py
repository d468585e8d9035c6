"""Outputs, netCDF, atomic writes, overwrite protection, checkpoints, resume, Ctrl-C, CLI."""
from __future__ import annotations

import json
import math
import sys

import numpy as np
import pytest

import meanfield
from meanfield import ConfigError, evolve
from meanfield.cli import main
from meanfield.io import read_netcdf

output_module = sys.modules["meanfield.runs.output"]

CFG = {"model": {"beta": 1.0, "kappa": 3.0, "normalized": False},
       "discretization": {"resolution": 32},
       "initial": {"kind": "von_mises", "center": 1.0, "concentration": 1.0},
       "time": {"t_final": 2.0, "save_every": 0.25}}


def test_dataset_contract():
    ds = evolve(CFG)
    assert set(ds.data_vars) >= {"density", "weights", "mass", "energy", "free_energy",
                                 "order_parameter", "mean_direction"}
    assert ds.density.dims == ("time", "theta")
    assert ds.mean_direction.dims == ("time", "component")
    np.testing.assert_allclose(ds.time, np.arange(9) * 0.25, atol=1e-15)
    th = ds.theta.values
    assert th[0] == 0 and th[-1] < 2 * np.pi
    assert ds.theta.attrs["units"] == "rad" and ds.density.attrs["units"] == "1/rad"
    np.testing.assert_allclose((ds.density * ds.weights).sum("theta"), 1.0, rtol=1e-13)
    cfg = json.loads(ds.attrs["config"])
    assert cfg["model"]["beta"] == 1.0 and cfg["initial"]["kind"] == "von_mises"
    assert ds.attrs["version"] == meanfield.__version__ and ds.attrs["kind"] == "evolve"
    # order parameter and mean direction agree with a direct quadrature of int x dmu
    w = ds.weights.values
    m = np.stack([(ds.density.values * w) @ np.cos(th), (ds.density.values * w) @ np.sin(th)], -1)
    np.testing.assert_allclose(ds.order_parameter, np.hypot(*m.T), rtol=1e-12)
    np.testing.assert_allclose(ds.mean_direction, m / np.hypot(*m.T)[:, None], atol=1e-12)
    # no noise: no free energy
    ds2 = evolve({**CFG, "model": {"beta": 1.0}, "time": {"t_final": 0.5}})
    assert "free_energy" not in ds2 and math.isinf(ds2.attrs["kappa"])


def test_energy_matches_direct_double_integral():
    """E_beta(rho) - E_beta(uniform) against a brute-force quadrature of the definition."""
    ds = evolve({**CFG, "time": {"t_final": 0.5, "save_every": 0.5}})
    rho, th, w = ds.density.values[-1], ds.theta.values, ds.weights.values
    beta = 1.0
    kernel = np.exp(beta * np.cos(th[:, None] - th[None, :]))
    e = (rho * w) @ kernel @ (rho * w) / (2 * beta)
    e_uniform = np.i0(beta) / (2 * beta)  # (1/2beta) * I_0(beta) for the uniform density
    assert ds.energy.values[-1] == pytest.approx(e - e_uniform, rel=1e-12)
    entropy = np.sum(w * rho * np.log(rho))
    assert ds.free_energy.values[-1] == pytest.approx(entropy / 3.0 - (e - e_uniform),
                                                      rel=1e-12)


def test_netcdf_roundtrip_and_no_overwrite(tmp_path):
    out = tmp_path / "run.nc"
    ds = evolve(CFG, out=out)
    back = read_netcdf(out)
    np.testing.assert_array_equal(back.density.values, ds.density.values)
    assert back.attrs["config"] == ds.attrs["config"]
    with pytest.raises(ConfigError, match="exists.*overwrite"):
        evolve(CFG, out=out)
    evolve(CFG, out=out, overwrite=True)
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*tmp"))


@pytest.mark.parametrize("method", ["spectral", "finite-volume"])
def test_interrupt_keeps_frames_and_resume_is_bit_identical(tmp_path, monkeypatch, method):
    cfg = {**CFG, "discretization": {"method": method, "resolution": 32}}
    full = evolve(cfg)
    out = tmp_path / "run.nc"
    calls = {"n": 0}
    real_diagnostics = meanfield.model.circle.CircleModel.diagnostics

    def interrupting(self, rho):
        calls["n"] += 1
        if calls["n"] == 5:  # Ctrl-C while saving the 5th frame
            raise KeyboardInterrupt
        return real_diagnostics(self, rho)

    monkeypatch.setattr(meanfield.model.circle.CircleModel, "diagnostics", interrupting)
    part = evolve(cfg, out=out)
    monkeypatch.setattr(meanfield.model.circle.CircleModel, "diagnostics", real_diagnostics)
    assert part.attrs["status"] == -1 and "resume" in part.attrs["message"]
    assert not out.exists()
    ckpt = output_module.checkpoint_path(out)
    assert ckpt.exists()
    kept = read_netcdf(ckpt)
    assert kept.attrs["checkpoint_frames"] == 4 and part.sizes["time"] == 4
    resumed = evolve(cfg, out=out, resume=True)
    assert resumed.attrs["status"] == 0 and not ckpt.exists()
    np.testing.assert_array_equal(resumed.density.values, full.density.values)
    np.testing.assert_array_equal(resumed.energy.values, full.energy.values)


def test_resume_refuses_other_config(tmp_path, monkeypatch):
    out = tmp_path / "run.nc"
    # periodic checkpoints (checkpoint_every tiny), then a crash while writing the result
    cfg = {**CFG, "output": {"checkpoint_every": 1e-9}}
    orig = output_module.write_netcdf

    def fail_final(ds, path, overwrite=False):
        if str(path) == str(out):
            raise KeyboardInterrupt
        return orig(ds, path, overwrite)

    monkeypatch.setattr(output_module, "write_netcdf", fail_final)
    with pytest.raises(KeyboardInterrupt):
        evolve(cfg, out=out)
    monkeypatch.setattr(output_module, "write_netcdf", orig)
    assert output_module.checkpoint_path(out).exists()
    other = {**cfg, "model": {"beta": 2.0, "kappa": 3.0, "normalized": False}}
    with pytest.raises(ConfigError, match="another config"):
        evolve(other, out=out, resume=True)


def test_fixed_dt_divides_save_interval_and_matches_adaptive():
    fixed = evolve({**CFG, "time": {"t_final": 2.0, "save_every": 0.25, "dt": 0.01}})
    adaptive = evolve({**CFG, "time": {"t_final": 2.0, "save_every": 0.25,
                                       "tolerance": 1e-12}})
    np.testing.assert_allclose(fixed.density, adaptive.density, atol=1e-9)


def test_cli_evolve_set_out_and_plot(tmp_path, capsys):
    cfg = tmp_path / "run.toml"
    cfg.write_text('[model]\nbeta = 1.0\nkappa = 3.0\n[discretization]\nresolution = 32\n'
                   '[time]\nt_final = 1.0\nsave_every = 0.1\n')
    out = tmp_path / "res.nc"
    assert main(["evolve", str(cfg), "--set", "model.beta=0.5", "--out", str(out),
                 "--no-progress"]) == 0
    ds = read_netcdf(out)
    assert ds.attrs["beta"] == 0.5
    assert main(["evolve", str(cfg), "--out", str(out), "--no-progress"]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["evolve", str(cfg), "--out", str(out), "--overwrite", "--no-progress"]) == 0
    figs = tmp_path / "figs"
    assert main(["plot", str(out), "--out", str(figs)]) == 0
    assert list(figs.glob("*.png"))


def test_samples_file_kde(tmp_path):
    rng = np.random.default_rng(7)
    center, conc = 1.0, 4.0
    angles = rng.vonmises(center, conc, size=20000)
    path = tmp_path / "angles.txt"
    np.savetxt(path, angles)
    ds = evolve({"initial": {"kind": "samples", "path": str(path)},
                 "discretization": {"resolution": 512},
                 "time": {"t_final": 0.01, "save_every": 0.01}})
    rho = ds.density.values[0]
    th = ds.theta.values
    exact = np.exp(conc * np.cos(th - center)) / (2 * np.pi * np.i0(conc))
    # KDE error with n = 20000 and Taylor's bandwidth: a few per cent of the peak
    assert np.abs(rho - exact).max() < 0.05 * exact.max()
    vectors = tmp_path / "vec.npy"
    np.save(vectors, 3.0 * np.stack([np.cos(angles), np.sin(angles)], 1))
    ds2 = evolve({"initial": {"kind": "samples", "path": str(vectors)},
                  "discretization": {"resolution": 512},
                  "time": {"t_final": 0.01, "save_every": 0.01}})
    np.testing.assert_allclose(ds2.density.values[0], rho, atol=1e-10)


def test_progress_bar_reports_simulated_time(capsys):
    evolve({**CFG, "time": {"t_final": 0.5, "save_every": 0.25}}, progress=True)
    err = capsys.readouterr().err
    assert "t = 0.5/0.5" in err


@pytest.mark.parametrize("method,resolution", [("spectral", 24), ("finite-volume", 162)])
def test_sphere_interrupt_and_bit_identical_resume(tmp_path, monkeypatch, method,
                                                   resolution):
    import meanfield.model.sphere as sphere_module

    cfg = {"domain": {"geometry": "sphere"}, "model": {"beta": 1.0, "kappa": 5.0},
           "discretization": {"method": method, "resolution": resolution},
           "initial": {"kind": "von_mises", "center": [0.0, 0.6, 0.8], "concentration": 2.0},
           "time": {"t_final": 0.5, "save_every": 0.1}}
    full = evolve(cfg)
    out = tmp_path / "run.nc"
    real = sphere_module.summarize
    calls = {"n": 0}

    def interrupting(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(sphere_module, "summarize", interrupting)
    part = evolve(cfg, out=out)
    monkeypatch.setattr(sphere_module, "summarize", real)
    assert part.attrs["status"] == -1 and part.sizes["time"] == 3
    resumed = evolve(cfg, out=out, resume=True)
    np.testing.assert_array_equal(resumed.density.values, full.density.values)
    assert read_netcdf(out).density.dims == full.density.dims
