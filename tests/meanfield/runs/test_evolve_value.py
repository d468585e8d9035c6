"""``meanfield.evolve`` with ``[weights] value = c`` (V = c I, issue 20): c = 1 is the run
without weights bit for bit, the run with c to t is the c = 1 run (kappa' = c kappa) to
c t, the dataset says c (attr ``value``) and its free energy is ``kappa^-1 int rho log rho
- c E``; any other weights are refused before any work (Python and CLI)."""
from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from meanfield import evolve
from meanfield.cli import main
from meanfield.errors import ConfigError

CIRCLE = {"model": {"beta": 1.0, "kappa": 5.0},
          "discretization": {"resolution": 64},
          "initial": {"kind": "von_mises", "center": 0.5, "concentration": 3.0},
          "time": {"t_final": 0.4, "save_every": 0.1, "tolerance": 1e-12}}
SPHERE = {"domain": {"geometry": "sphere"}, "model": {"beta": 1.0, "kappa": 5.0},
          "discretization": {"resolution": 24},
          "initial": {"kind": "von_mises", "center": [0.0, 0.0, 1.0], "concentration": 1.0},
          "time": {"t_final": 0.4, "save_every": 0.1, "tolerance": 1e-12}}


@pytest.mark.parametrize("base", [CIRCLE, SPHERE], ids=["circle", "sphere"])
@pytest.mark.parametrize("method", ["spectral", "finite-volume"])
def test_value_one_equals_no_weights(base, method):
    resolution = base["discretization"]["resolution"]
    if method == "finite-volume":
        resolution = 128 if base is CIRCLE else 642
    cfg = {**base, "discretization": {"method": method, "resolution": resolution}}
    plain = evolve(cfg)
    weighted = evolve({**cfg, "weights": {"value": 1.0}})
    np.testing.assert_array_equal(weighted.density.values, plain.density.values)
    np.testing.assert_array_equal(weighted.free_energy.values, plain.free_energy.values)
    assert weighted.attrs["value"] == plain.attrs["value"] == 1.0


@pytest.mark.parametrize("base", [CIRCLE, SPHERE], ids=["circle", "sphere"])
def test_value_rescales_time_through_evolve(base):
    """c = 2.5, kappa = 5 to t = 0.4 against c = 1, kappa = 12.5 to t = 1.0."""
    c = 2.5
    scaled = evolve({**base, "weights": {"value": c}})
    plain = evolve({**base, "model": {**base["model"], "kappa": 5.0 * c},
                    "time": {**base["time"], "t_final": 0.4 * c, "save_every": 0.1 * c}})
    assert scaled.attrs["value"] == c and "V = 2.5 I" in scaled.attrs["title"]
    np.testing.assert_allclose(scaled.density.values, plain.density.values, rtol=0,
                               atol=1e-8 * float(plain.density.max()))
    # the energy is E_beta (the same), the free energy weighs it by c
    np.testing.assert_allclose(scaled.energy.values, plain.energy.values, rtol=1e-7)
    entropy = (scaled.free_energy + c * scaled.energy) * 5.0
    plain_entropy = (plain.free_energy + plain.energy) * 12.5
    np.testing.assert_allclose(entropy.values, plain_entropy.values, rtol=1e-7)


def test_repulsive_free_energy_decreases_through_evolve():
    ds = evolve({**CIRCLE, "weights": {"value": -1.0},
                 "time": {"t_final": 2.0, "save_every": 0.1, "tolerance": 1e-12}})
    free = ds.free_energy.values
    assert np.diff(free).max() <= 1e-13 * np.abs(free).max()
    assert ds.order_parameter.values[-1] < 0.5 * ds.order_parameter.values[0]


BAD = [({"query": 2.0}, "weights.query"),
       ({"key": {"kind": "gaussian", "scale": 1.0, "seed": 0}}, "weights.key"),
       ({"value": [[1.0, 0.0], [0.0, 2.0]]}, "weights.value"),
       ({"heads": [{"value": 1.0}, {"value": 2.0}]}, "weights.heads")]


@pytest.mark.parametrize("weights,key", BAD)
def test_other_weights_are_refused(weights, key):
    with pytest.raises(ConfigError) as err:
        evolve({**CIRCLE, "weights": weights})
    assert err.value.key == key
    assert "V = c I" in str(err.value)


def test_feedforward_is_refused():
    with pytest.raises(ConfigError) as err:
        evolve({**CIRCLE, "feedforward": {"activation": "relu", "weight": "identity"}})
    assert "V = c I" in str(err.value)


def test_cli_refuses_other_weights_in_one_line(tmp_path, capsys):
    path = tmp_path / "w.toml"
    path.write_text("[discretization]\nresolution = 32\n[time]\nt_final = 0.1\n"
                    "save_every = 0.05\n[weights]\nquery = 2.0\n")
    assert main(["evolve", str(path), "--out", str(tmp_path / "r.nc"),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "weights.query" in err and "V = c I" in err
    assert not (tmp_path / "r.nc").exists()
    # and a value is taken
    path.write_text("[discretization]\nresolution = 32\n[time]\nt_final = 0.1\n"
                    "save_every = 0.05\n[weights]\nvalue = -0.5\n")
    assert main(["evolve", str(path), "--out", str(tmp_path / "r.nc"),
                 "--no-progress"]) == 0
    with xr.open_dataset(tmp_path / "r.nc") as ds:
        assert ds.attrs["value"] == -0.5
