"""The normalization family through ``meanfield particles`` (issue 27 item 1, acceptance 1
and 6): orthogonal tokens run as a config equal the equiangular ODE; the dataset keeps the
radii where the tokens live in R^d; every new key refuses bad values before any work, in
one line on the command line."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import meanfield
from meanfield.cli import main
from meanfield.errors import ConfigError
from meanfield.model import normalizations as nz
from meanfield.model import particles as pm

ORTHOGONAL = {"domain": {"geometry": "sphere", "dim": 8}, "model": {"beta": 1.0},
              "initial": {"kind": "equiangular", "rho": 0.0},
              "time": {"t_final": 4.0, "save_every": 0.5, "tolerance": 1e-12},
              "particles": {"n": 8, "sum_method": "direct"}}


def _config(arch: str, **particles) -> dict:
    return {**ORTHOGONAL, "particles": {**ORTHOGONAL["particles"], "architecture": arch,
                                        **particles}}


@pytest.mark.parametrize("arch,extra", [("peri-ln", {}), ("ngpt", {"ngpt_alpha": 0.5}),
                                        ("mix-ln", {"mix_switch": 1.5})])
def test_runs_follow_the_equiangular_ode(arch, extra):
    """d = n = 8, beta = 1, rho_0 = 0: the run's directions and radii against the model's
    (rho, r) ODE (DOP853 at 1e-13, Mix-LN in two pieces) to 1e-8."""
    ds = meanfield.particles(_config(arch, **extra))
    x = ds.position.values
    rho = np.einsum("tid,tjd->tij", x, x)[:, 0, 1]
    model = nz.build_normalization_model(arch, 1.0, ngpt_alpha=extra.get("ngpt_alpha", 1.0),
                                         mix_switch=extra.get("mix_switch", 1.0))
    t = ds.time.values
    y0, cuts = ([0.0] if model.on_sphere else [0.0, 1.0]), [0.0, 4.0]
    if arch == "mix-ln":
        cuts = [0.0, 1.5, 4.0]
    ref = np.empty((len(y0), t.size))
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        sol = solve_ivp(model.equiangular_rhs(8), (lo, hi), y0, method="DOP853",
                        rtol=1e-13, atol=1e-15, dense_output=True)
        inside = (t >= lo) & (t <= hi)
        ref[:, inside], y0 = sol.sol(t[inside]), list(sol.y[:, -1])
    np.testing.assert_allclose(rho, ref[0], atol=1e-8)
    assert ("radius" in ds) == (arch != "ngpt")
    if "radius" in ds:
        np.testing.assert_allclose(ds.radius.values.mean(axis=1), ref[1], rtol=1e-8)
    assert ds.attrs["architecture"] == arch
    assert ds.attrs["model"] == {"peri-ln": "Peri-LN", "ngpt": "nGPT (alpha = 0.5)",
                                 "mix-ln": "Mix-LN SA (switch at t = 1.5)"}[arch]


def test_ngpt_runs_with_noise():
    """nGPT lives on the sphere: with noise (geodesic Euler-Maruyama) its tokens stay unit
    vectors and the same seed gives the same run."""
    cfg = {"domain": {"geometry": "sphere"}, "model": {"beta": 1.0, "kappa": 10.0},
           "time": {"t_final": 0.5, "save_every": 0.25, "dt": 0.01},
           "particles": {"n": 30, "architecture": "ngpt", "ngpt_alpha": 2.0}}
    ds = meanfield.particles(cfg)
    np.testing.assert_allclose(np.linalg.norm(ds.position.values, axis=-1), 1.0, atol=1e-14)
    np.testing.assert_array_equal(meanfield.particles(cfg).position.values,
                                  ds.position.values)


BAD = [
    ({"architecture": "peri"}, "particles.architecture", "'peri-ln'"),
    ({"architecture": "ngpt", "ngpt_alpha": 0.0}, "particles.ngpt_alpha", "> 0"),
    ({"architecture": "ngpt", "ngpt_alpha": -1.0}, "particles.ngpt_alpha", "> 0"),
    ({"architecture": "ngpt", "ngpt_alpha": float("inf")}, "particles.ngpt_alpha", "finite"),
    ({"architecture": "ngpt", "ngpt_alpha": "big"}, "particles.ngpt_alpha", "number"),
    ({"architecture": "ngpt", "ngpt_alpha": 1e7}, "particles.ngpt_alpha", "<= 1e+06"),
    ({"architecture": "mix-ln", "mix_switch": 0.0}, "particles.mix_switch", "> 0"),
    ({"architecture": "mix-ln", "mix_switch": float("nan")}, "particles.mix_switch",
     "finite"),
    ({"architecture": "mix-ln", "mix_switch": True}, "particles.mix_switch", "number"),
]


@pytest.mark.parametrize("particles, key, words", BAD + [
    ({"architecture": "peri-ln", "kappa": 2.0}, "model.kappa", "peri-ln"),
    ({"architecture": "mix-ln", "kappa": 2.0}, "model.kappa", "mix-ln")])
def test_bad_input_names_the_key_before_any_work(particles, key, words, monkeypatch):
    def no_work(*a, **k):
        raise AssertionError("stepping started")

    monkeypatch.setattr(pm.TokenStepper, "advance", no_work)
    particles = dict(particles)
    kappa = particles.pop("kappa", None)
    cfg = _config(particles.pop("architecture"), **particles)
    if kappa is not None:
        cfg = {**cfg, "model": {"beta": 1.0, "kappa": kappa}, "time": {"dt": 0.01}}
    with pytest.raises(ConfigError) as err:
        meanfield.particles(cfg)
    assert err.value.key == key and words in str(err.value), str(err.value)


@pytest.mark.parametrize("setting, key", [
    ('particles.architecture="peri"', "particles.architecture"),
    ("particles.ngpt_alpha=0", "particles.ngpt_alpha"),
    ("particles.mix_switch=-2", "particles.mix_switch"),
    ('normalization.architectures=["ngpt", "ngpt"]', "normalization.architectures")])
def test_cli_one_line(setting, key, tmp_path, capsys):
    toml = tmp_path / "p.toml"
    toml.write_text("[particles]\nn = 8\n")
    command = "normalization" if setting.startswith("normalization") else "particles"
    assert main([command, str(toml), "--set", setting, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and key in err, err


def test_cli_runs_mix_ln(tmp_path, capsys):
    toml = tmp_path / "m.toml"
    toml.write_text('[domain]\ngeometry = "sphere"\ndim = 5\n[initial]\nkind = "uniform"\n'
                    '[particles]\nn = 12\narchitecture = "mix-ln"\nmix_switch = 0.5\n'
                    "[time]\nt_final = 1.0\nsave_every = 0.25\n")
    assert main(["particles", str(toml), "--no-progress"]) == 0
    ds = meanfield.io.read_netcdf(tmp_path / "m.nc")
    r = ds.radius.values
    assert np.all(np.abs(r[ds.time.values <= 0.5] - 1.0) < 1e-12) and np.all(r[-1] > 1.0)
    assert "Pre-LN SA from t = 0.5" in ds.attrs["integrator"]
