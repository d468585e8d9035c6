"""compare on the run engine: Ctrl-C keeps the PDE and the members done, resume goes on
bit for bit; a failing member is named with its seed while the others are kept."""
from __future__ import annotations

import numpy as np
import pytest

from meanfield.cli import main
from meanfield.io import read_netcdf
from meanfield.runs.engine import TaskFailed
from meanfield.runs.schedule import checkpoint_path
from meanfield.studies.transport import compare as compare_module

CFG = {"model": {"beta": 1.0, "kappa": 10.0},
       "initial": {"kind": "von_mises", "concentration": 2.0},
       "discretization": {"resolution": 64},
       "time": {"t_final": 0.5, "save_every": 0.25, "dt": 0.01},
       "particles": {"n": 200, "ensemble": 3}}

# what a comparison holds that must not change when it is interrupted and resumed
COMPARED = ("density", "l1_distance", "l1_distance_member", "l1_noise_floor",
            "particle_density", "pde_bin_density", "particle_order_parameter",
            "particle_energy", "position", "order_parameter", "energy")


def assert_same(a, b) -> None:
    for name in COMPARED:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)
    assert a.attrs["ensemble"] == b.attrs["ensemble"]


@pytest.fixture(scope="module")
def full():
    return compare_module.compare(CFG)


def patched_particles(monkeypatch, fail):
    """Make the members' runs call ``fail(seed, call)`` first (it may raise)."""
    real, calls = compare_module.particles, {"n": 0}

    def particles(config, **kwargs):
        calls["n"] += 1
        fail(config["particles"]["seed"], calls["n"])
        return real(config, **kwargs)

    monkeypatch.setattr(compare_module, "particles", particles)


def test_interrupt_after_the_pde_and_one_member_then_resume(tmp_path, monkeypatch, full):
    out = tmp_path / "c.nc"

    def ctrl_c(seed, call):
        if call == 2:
            raise KeyboardInterrupt

    patched_particles(monkeypatch, ctrl_c)
    part = compare_module.compare(CFG, out=out)
    monkeypatch.undo()
    assert part.attrs["status"] == -1 and "resume" in part.attrs["message"]
    assert "the PDE and 1 of 3" in part.attrs["message"]
    assert not out.exists() and checkpoint_path(out).exists()
    # the partial result compares the one member done
    assert part.sizes["run"] == 1
    np.testing.assert_array_equal(part.l1_distance_member.values[:, 0],
                                  full.l1_distance_member.values[:, 0])
    # resume: the PDE and member 0 are read back, members 1 and 2 run
    calls = []
    patched_particles(monkeypatch, lambda seed, call: calls.append(seed))
    resumed = compare_module.compare(CFG, out=out, resume=True)
    assert calls == [1, 2]
    assert resumed.attrs["status"] == 0 and not checkpoint_path(out).exists()
    assert_same(resumed, full)
    assert_same(read_netcdf(out), full)


def test_failing_member_is_named_and_the_others_are_kept(tmp_path, monkeypatch, full):
    out = tmp_path / "c.nc"

    def boom(seed, call):
        if seed == 1:
            raise ValueError("boom")

    patched_particles(monkeypatch, boom)
    with pytest.raises(TaskFailed) as err:
        compare_module.compare(CFG, out=out)
    message = str(err.value)
    assert "ensemble member 1 (particles.seed = 1) failed: ValueError: boom" in message
    assert "resume" in message
    kept = read_netcdf(checkpoint_path(out))
    assert list(kept["member"].values) == [0, 2]  # the others are kept
    monkeypatch.undo()
    calls = []
    patched_particles(monkeypatch, lambda seed, call: calls.append(seed))
    resumed = compare_module.compare(CFG, out=out, resume=True)
    assert calls == [1]  # only the failed member runs again
    assert_same(resumed, full)


def test_cli_compare_resume(tmp_path, monkeypatch, capsys):
    toml = tmp_path / "c.toml"
    toml.write_text('[model]\nbeta = 1.0\n[particles]\nn = 50\nensemble = 2\n'
                    '[discretization]\nresolution = 32\n'
                    '[time]\nt_final = 0.5\nsave_every = 0.25\n')

    def ctrl_c(seed, call):
        if call == 1:
            raise KeyboardInterrupt

    patched_particles(monkeypatch, ctrl_c)
    assert main(["compare", str(toml), "--no-progress"]) == 130
    assert "resume" in capsys.readouterr().err
    monkeypatch.undo()
    assert main(["compare", str(toml), "--no-progress", "--resume"]) == 0
    assert "noise floor" in capsys.readouterr().out
    assert read_netcdf(tmp_path / "c.nc").attrs["kind"] == "compare"


def test_interrupt_in_the_pde_then_resume(tmp_path, monkeypatch, full):
    out = tmp_path / "c.nc"

    def ctrl_c(config, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(compare_module, "evolve", ctrl_c)
    part = compare_module.compare(CFG, out=out)
    monkeypatch.undo()
    assert part.attrs["status"] == -1 and "after the start" in part.attrs["message"]
    assert checkpoint_path(out).exists() and "density" not in part
    assert_same(compare_module.compare(CFG, out=out, resume=True), full)
