"""``meanfield plot`` on results the package wrote (issue 31, item 10): runs with several
heads and ``save_attention`` (the attention rank per head, dims (time, head), was refused
as "expected ('time',)") and an interrupted R^d run with one frame (d = 3: matplotlib's
3D paths failed on no segment)."""
from __future__ import annotations

import numpy as np
import pytest

import meanfield
from meanfield.cli import main
from meanfield.io import read_netcdf, write_netcdf
from meanfield.plotting import diagnostics
from meanfield.runs.particles import ParticlesTask

HEADS = {"particles": {"n": 8, "save_attention": True},
         "time": {"t_final": 0.2, "save_every": 0.1, "dt": 0.05},
         "weights": {"heads": [{"query": "identity", "key": "identity", "value": "identity"},
                               {"query": "identity", "key": "identity", "value": -0.5}]}}
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("geometry", ["circle", "sphere"])
def test_plot_of_a_run_with_several_heads_and_saved_attention(tmp_path, geometry, capsys):
    out = tmp_path / "heads.nc"
    meanfield.particles({**HEADS, "domain": {"geometry": geometry}}, out=out).close()
    ds = read_netcdf(out)
    assert ds["attention_rank"].dims == ("time", "head") and ds.sizes["head"] == 2
    assert main(["plot", str(out), "--out", str(tmp_path / "fig")]) == 0
    figures = sorted((tmp_path / "fig").glob("*.png"))
    assert figures and all(f.read_bytes()[:8] == PNG for f in figures)
    # the attention-rank panel draws each head's saved ranks (the step lines' data)
    ax = diagnostics(ds)[-1]
    drawn = [np.asarray(line.get_ydata(), float) for line in ax.get_lines()]
    assert len(drawn) == 2
    for h, y in enumerate(drawn):
        np.testing.assert_array_equal(y, ds["attention_rank"].values[:, h])


@pytest.mark.parametrize("dim", [3])
def test_plot_of_an_interrupted_euclidean_run_with_one_frame(tmp_path, monkeypatch, dim):
    def interrupt(self, state, point, on_step):
        raise KeyboardInterrupt

    monkeypatch.setattr(ParticlesTask, "advance", interrupt)  # Ctrl-C in the first step
    ds = meanfield.particles({"domain": {"geometry": "euclidean", "dim": dim},
                              "particles": {"n": 6},
                              "time": {"t_final": 1.0, "save_every": 0.1, "dt": 0.05}})
    assert ds.attrs["status"] == -1 and ds.sizes["time"] == 1
    path = write_netcdf(ds.load(), tmp_path / "cut.nc")
    assert main(["plot", str(path), "--out", str(tmp_path / "fig")]) == 0
    figures = sorted((tmp_path / "fig").glob("*.png"))
    assert len(figures) >= 2 and all(f.read_bytes()[:8] == PNG for f in figures)
