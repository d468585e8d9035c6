"""Bad input to the zonal geometry (issue 26): every new key and value (geometry "zonal",
domain.dim, the band limit or cells against beta and the initial data, the zonal initial
kinds and their parameters) raises ConfigError naming the key, before any time step; the
CLI prints one line and exits 2."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from meanfield import ConfigError, evolve
from meanfield.cli import main


def required(dim: int, beta: float) -> int:
    from meanfield.model.zonal_kernels import zonal_required_lmax
    return zonal_required_lmax(dim, beta)


def zonal(dim: int | None = None, **sections) -> dict:
    domain = {"geometry": "zonal", **({} if dim is None else {"dim": dim})}
    return {"domain": domain, **sections}


BAD = [
    ({"domain": {"geometry": "Zonal"}}, "domain.geometry", "did you mean 'zonal'"),
    (zonal(1), "domain.dim", ">= 2 on the zonal"),
    (zonal(0), "domain.dim", ">= 1"),
    (zonal(-3), "domain.dim", ">= 1"),
    (zonal(2.5), "domain.dim", "integer"),
    (zonal("three"), "domain.dim", "integer"),
    (zonal(True), "domain.dim", "integer"),
    (zonal(100_001), "domain.dim", "2 <= dim <= 100000"),
    (zonal([4, 8]), "domain.dim", "bifurcation study only"),
    ({"domain": {"geometry": "zonal", "dimm": 3}}, "domain.dimm", "did you mean 'dim'"),
    # the zonal initial kinds and their parameters (the axis is fixed: no center, no order)
    (zonal(initial={"kind": "von_mises", "center": [1.0, 0.0, 0.0]}), "initial.center",
     "takes no center"),
    (zonal(4, initial={"kind": "von_mises", "center": [1.0, 0.0, 0.0, 0.0]}),
     "initial.center", "takes no center"),
    (zonal(initial={"kind": "perturbed", "order": 0}), "initial.order",
     "valid: 'amplitude', 'degree', 'kind'"),
    (zonal(initial={"kind": "perturbed", "mode": 2}), "initial.mode", "not a parameter"),
    (zonal(initial={"kind": "perturbed", "phase": 1.0}), "initial.phase", "not a parameter"),
    (zonal(initial={"kind": "perturbed", "degree": 0}), "initial.degree", ">= 1"),
    (zonal(initial={"kind": "perturbed", "degree": 2.5}), "initial.degree", "integer"),
    (zonal(initial={"kind": "perturbed", "amplitude": 1.5}), "initial.amplitude", "<= 1"),
    (zonal(initial={"kind": "perturbed", "amplitude": -1.5}), "initial.amplitude", ">= -1"),
    (zonal(initial={"kind": "von_mises", "concentration": -1.0}), "initial.concentration",
     ">= 0"),
    (zonal(initial={"kind": "von_mises", "concentration": 1e9}), "initial.concentration",
     "<= 1e+08"),
    (zonal(initial={"kind": "equiangular"}), "initial.kind", "for zonal densities"),
    (zonal(initial={"kind": "tokens", "path": "x.npy"}), "initial.kind",
     "'uniform', 'perturbed', 'von_mises', 'mixture', 'samples'"),
    (zonal(initial={"kind": "gaussian"}), "initial.kind", "for zonal densities"),
    (zonal(initial={"kind": "samples"}), "initial.path", "required"),
    (zonal(initial={"kind": "samples", "path": "/nonexistent/x.npy"}), "initial.path",
     "no such file"),
    (zonal(initial={"kind": "samples", "path": "/nonexistent/x.npy", "bandwidth": -1.0}),
     "initial.bandwidth", "> 0"),
    (zonal(initial={"kind": "mixture", "components": [
        {"kind": "von_mises", "center": [1.0, 0.0, 0.0]}]}),
     "initial.components[0].center", "takes no center"),
    (zonal(initial={"kind": "mixture", "components": [{"kind": "perturbed", "order": 1}]}),
     "initial.components[0].order", "not a parameter"),
    # resolution: the band limit or the cells against the kernel and the data
    (zonal(discretization={"resolution": 8192}), "discretization.resolution", "<= 8191"),
    (zonal(discretization={"resolution": 7}), "discretization.resolution", ">= 8"),
    (zonal(discretization={"method": "finite-volume", "resolution": 7}),
     "discretization.resolution", ">= 8"),
    # (the band limits the kernel needs: zonal_required_lmax, whose criterion
    # tests/meanfield/model/test_zonal_kernels.py checks against decimal eigenvalues)
    (zonal(model={"beta": 50.0}, discretization={"resolution": 16}),
     "discretization.resolution", f"the kernel needs resolution >= {required(3, 50.0)}"),
    (zonal(64, model={"beta": 200.0}, discretization={"resolution": 16}),
     "discretization.resolution", f"the kernel needs resolution >= {required(64, 200.0)}"),
    (zonal(model={"beta": 5.0}, discretization={"method": "finite-volume", "resolution": 16}),
     "discretization.resolution",
     f"the kernel needs resolution >= {max(16, 2 * required(3, 5.0))}"),
    (zonal(initial={"kind": "von_mises", "concentration": 300.0},
           discretization={"resolution": 16}), "discretization.resolution",
     "not resolved at band limit 16"),
    (zonal(discretization={"method": "spectra"}), "discretization.method",
     "did you mean 'spectral'"),
    (zonal(model={"beta": 800.0, "normalized": False}, discretization={"resolution": 2000}),
     "model.beta", "normalized = true"),
]


@pytest.mark.parametrize("config,key,words", BAD, ids=[f"{b[1]}-{i}" for i, b in
                                                       enumerate(BAD)])
def test_bad_zonal_input_raises_config_error_naming_key(config, key, words, monkeypatch):
    monkeypatch.setattr(sys.modules["meanfield.runs.evolve"], "integrate",
                        lambda *a, **k: pytest.fail("time stepping started"))
    with pytest.raises(ConfigError) as err:
        evolve({**config, "time": {"t_final": 0.1, "save_every": 0.1}})
    assert err.value.key == key
    assert words in str(err.value)


def test_needed_resolution_is_enough():
    """The resolution the error asks for runs (spectral and cells)."""
    lmax = required(3, 50.0)
    for method, needed in (("spectral", lmax), ("finite-volume", 2 * lmax)):
        ds = evolve(zonal(model={"beta": 50.0}, initial={"kind": "uniform"},
                          discretization={"method": method, "resolution": needed},
                          time={"t_final": 0.01, "save_every": 0.01}))
        assert ds.attrs["resolution"] == needed
    with pytest.raises(ConfigError, match=f"resolution >= {2 * lmax}"):
        evolve(zonal(model={"beta": 50.0}, discretization={"method": "finite-volume",
                                                           "resolution": 2 * lmax - 1}))


def test_sample_file_of_the_wrong_dimension(tmp_path):
    path = tmp_path / "points.npy"
    np.save(path, np.ones((5, 3)))
    with pytest.raises(ConfigError, match=r"expected an \(n, 6\) array") as err:
        evolve(zonal(6, initial={"kind": "samples", "path": str(path)}))
    assert err.value.key == "initial.path"


@pytest.mark.parametrize("text,words", [
    ('[domain]\ngeometry = "zonal"\ndim = 1\n', "domain.dim"),
    ('[domain]\ngeometry = "zonal"\n[initial]\nkind = "von_mises"\ncenter = [1, 0, 0]\n',
     "initial.center"),
    ('[domain]\ngeometry = "zonal"\ndim = 8\n[model]\nbeta = 40.0\n'
     '[discretization]\nresolution = 10\n', "discretization.resolution"),
])
def test_cli_prints_one_line_and_exits_2(tmp_path, capsys, text, words):
    path = tmp_path / "c.toml"
    path.write_text(text)
    assert main(["evolve", str(path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert words in err
