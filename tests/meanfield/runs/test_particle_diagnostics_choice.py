"""``particles.diagnostics`` (issue 32, item 2): a particle run computes and writes only the
diagnostics asked; those it writes are the default run's, value for value (the same
computation, fewer of them); ``meanfield plot`` draws a result without some or all of
them; compare's members keep what compare needs whatever the config asks."""
from __future__ import annotations

import numpy as np
import pytest

import meanfield
from meanfield.cli import main
from meanfield.io import read_netcdf
from meanfield.studies.transport.compare import run_member
from meanfield import config as cfgmod

PNG = b"\x89PNG\r\n\x1a\n"
TIME = {"t_final": 0.4, "save_every": 0.1}
CASES = {
    "circle": {"domain": {"geometry": "circle"}},
    "sphere": {"domain": {"geometry": "sphere", "dim": 3}},
    "euclidean": {"domain": {"geometry": "euclidean", "dim": 2},
                  "initial": {"kind": "gaussian"}},
}


def _run(case: str, asked=None, **kw):
    particles = {"n": 12, "seed": 3} | ({} if asked is None else {"diagnostics": asked})
    return meanfield.particles({**CASES[case], "particles": particles, "time": TIME}, **kw)


@pytest.mark.parametrize("case", ["circle", "euclidean"])
def test_only_the_asked_diagnostics_are_written_with_the_default_runs_values(case):
    full = _run(case)
    default = cfgmod.validate({**CASES[case], "particles": {"n": 12}})
    names = default["particles"]["diagnostics"]
    assert set(names) <= set(full.data_vars)  # the default: every one of the geometry's
    for k in range(len(names) + 1):
        asked = names[k:k + 1] if k < len(names) else []
        ds = _run(case, asked)
        written = set(ds.data_vars) - {"position", "radius", "angle"}
        assert written == set(asked)
        np.testing.assert_array_equal(ds["position"].values, full["position"].values)
        for name in asked:  # bit for bit: the same computation
            np.testing.assert_array_equal(ds[name].values, full[name].values)
        assert ds.attrs["config"] and "diagnostics" in ds.attrs["config"]


@pytest.mark.parametrize("case,asked", [("sphere", ["order_parameter"]), ("euclidean", [])])
def test_plot_of_a_result_without_energy_or_clusters(tmp_path, case, asked):
    out = tmp_path / "run.nc"
    _run(case, asked, out=out).close()
    ds = read_netcdf(out)
    assert "energy" not in ds and "clusters" not in ds
    assert main(["plot", str(out), "--out", str(tmp_path / "fig")]) == 0
    figures = sorted((tmp_path / "fig").glob("*.png"))
    assert figures and all(f.read_bytes()[:8] == PNG for f in figures)


def test_compare_members_keep_what_compare_needs():
    cfg = cfgmod.validate({"domain": {"geometry": "circle"}, "particles": {
        "n": 10, "diagnostics": ["clusters"]}, "time": TIME}, "compare")
    kept = run_member(cfg, False, {"particles.seed": 1})
    assert {"order_parameter", "energy", "position"} <= set(kept.data_vars)
