"""Nothing lost, nothing replaced by accident (issue 9, first part): resume without a
checkpoint, unwritable outputs, a write that fails at the end, the lock on the output,
unreadable checkpoints, SIGTERM, out-of-range seeds, plot --out onto a file."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import xarray as xr

import meanfield
from meanfield import ConfigError, evolve
from meanfield.cli import main
from meanfield.errors import OutputError
from meanfield.io import read_netcdf
from meanfield.runs import evolve as evolve_module
from meanfield.runs.output import lock_path
from meanfield.runs.schedule import checkpoint_path

CFG = {"model": {"beta": 1.0, "kappa": 4.0},
       "discretization": {"resolution": 32},
       "initial": {"kind": "von_mises", "concentration": 1.0},
       "time": {"t_final": 0.4, "save_every": 0.1}}


@pytest.fixture
def no_stepping(monkeypatch):
    """Fail the test if a run starts stepping (errors must come before any work)."""
    def refuse(*args, **kwargs):
        raise AssertionError("the run started stepping")
    monkeypatch.setattr(evolve_module.EvolveTask, "advance", refuse)


def test_resume_without_checkpoint_never_replaces_a_finished_result(tmp_path):
    out = tmp_path / "fin.nc"
    evolve(CFG, out=out)
    before = out.read_bytes()
    other = {**CFG, "model": {"beta": 0.0, "kappa": 4.0}}
    with pytest.raises(ConfigError, match="finished result") as err:
        evolve(other, out=out, resume=True)
    assert err.value.key == "output.path" and out.read_bytes() == before
    # the CLI: one line, status 2, the file untouched
    toml = tmp_path / "run.toml"
    toml.write_text("[model]\nbeta = 1.0\nkappa = 4.0\n[discretization]\nresolution = 32\n"
                    "[time]\nt_final = 0.4\nsave_every = 0.1\n")
    assert main(["evolve", str(toml), "--out", str(out), "--resume",
                 "--set", "model.beta=0", "--no-progress"]) == 2
    assert out.read_bytes() == before


def test_unwritable_output_is_refused_before_any_work(tmp_path, no_stepping, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError, match="cannot be written") as err:
        evolve(CFG, out=blocker / "run.nc")
    assert err.value.key == "output.path"
    toml = tmp_path / "run.toml"
    toml.write_text("[discretization]\nresolution = 32\n")
    assert main(["evolve", str(toml), "--out", str(blocker / "run.nc")]) == 2
    err_lines = capsys.readouterr().err.strip().splitlines()
    assert len(err_lines) == 1 and "cannot be written" in err_lines[0]


def test_a_write_that_fails_at_the_end_keeps_the_result_elsewhere(tmp_path, monkeypatch):
    from meanfield.runs import output as output_module

    out = tmp_path / "run.nc"
    real = output_module.write_netcdf

    def full_disk(ds, path, overwrite=False):
        if str(path) == str(out):
            raise OSError(28, "No space left on device")
        return real(ds, path, overwrite)

    monkeypatch.setattr(output_module, "write_netcdf", full_disk)
    with pytest.raises(OutputError, match="kept in") as err:
        evolve(CFG, out=out)
    kept = str(err.value).split("kept in ")[1].strip("'")
    try:
        np.testing.assert_array_equal(read_netcdf(kept).density.values,
                                      evolve(CFG).density.values)
    finally:
        os.unlink(kept)
    assert not out.exists() and not lock_path(out).exists()


def test_a_live_lock_refuses_and_a_stale_one_is_taken_over(tmp_path, no_stepping):
    out = tmp_path / "run.nc"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from meanfield.runs."
                               f"output import Output; Output({str(out)!r}, False, False)"
                               ".lock(); print(flush=True); time.sleep(30)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        holder.stdout.readline()  # (it holds the lock: the flock of a live run)
        with pytest.raises(ConfigError, match="another run") as err:
            evolve(CFG, out=out)
        assert err.value.key == "output.path" and lock_path(out).exists()
    finally:
        holder.kill()
        holder.wait()


def test_a_stale_lock_is_taken_over_and_released(tmp_path):
    out = tmp_path / "run.nc"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    lock_path(out).write_text(f"{gone.pid} {os.uname().nodename}\n")
    evolve(CFG, out=out)
    assert out.exists() and not lock_path(out).exists()


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "meanfield", *args]


LONG = ("[model]\nbeta = 1.0\nkappa = 4.0\n[discretization]\nresolution = 512\n"
        "[time]\nt_final = 400.0\nsave_every = 1.0\ndt = 0.002\n"
        "[output]\ncheckpoint_every = 0.5\n")


def wait_for(path, seconds: float = 240.0) -> None:
    end = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < end, f"{path} did not appear"
        time.sleep(0.1)


def test_two_runs_on_one_output_and_sigterm_keeps_a_checkpoint(tmp_path):
    """A second run on the same --out refuses in one line while the first runs; SIGTERM
    stops the first like Ctrl-C (status 130, checkpoint kept, lock released), and
    --resume then continues it."""
    toml = tmp_path / "long.toml"
    toml.write_text(LONG)
    out = tmp_path / "run.nc"
    first = subprocess.Popen(cli("evolve", str(toml), "--out", str(out), "--no-progress"),
                             stderr=subprocess.PIPE, text=True)
    try:
        wait_for(checkpoint_path(out))
        second = subprocess.run(cli("evolve", str(toml), "--out", str(out), "--no-progress"),
                                capture_output=True, text=True, timeout=240)
        assert second.returncode == 2
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and "another run" in lines[0], second.stderr
        first.send_signal(signal.SIGTERM)
        _, err = first.communicate(timeout=240)
    finally:
        first.kill()
    assert first.returncode == 130, err
    assert "with --resume (resume=True) to continue" in err and not lock_path(out).exists()
    ckpt = read_netcdf(checkpoint_path(out))
    assert ckpt.attrs["kind"] == "evolve" and ckpt.attrs["checkpoint_frames"] >= 2


@pytest.mark.parametrize("content", [b"", b"CDF\x01\x00\x00", b"garbage" * 50])
def test_unreadable_checkpoint_is_one_clear_error(tmp_path, no_stepping, content):
    out = tmp_path / "run.nc"
    checkpoint_path(out).write_bytes(content)
    with pytest.raises(ConfigError, match="cannot be read") as err:
        evolve(CFG, out=out, resume=True)
    assert err.value.key == "resume" and "delete it" in str(err.value)


def test_foreign_checkpoint_is_refused(tmp_path, no_stepping):
    out = tmp_path / "run.nc"
    xr.Dataset({"x": ("t", np.arange(3.0))}).to_netcdf(checkpoint_path(out))
    with pytest.raises(ConfigError, match="not a checkpoint of meanfield evolve") as err:
        evolve(CFG, out=out, resume=True)
    assert err.value.key == "resume"


def test_seed_out_of_range_is_refused_up_front():
    with pytest.raises(ConfigError) as err:
        meanfield.particles({"particles": {"n": 10, "seed": 10**23}})
    assert err.value.key == "particles.seed" and str(2**63 - 1) in str(err.value)
    with pytest.raises(ConfigError) as err:
        meanfield.compare({"particles": {"n": 10, "seed": 2**63 - 2, "ensemble": 4}})
    assert err.value.key == "particles.seed"


def test_plot_out_onto_a_file_is_one_line(tmp_path, capsys):
    result = tmp_path / "run.nc"
    evolve(CFG, out=result)
    existing = tmp_path / "figures.png"
    existing.write_text("x")
    assert main(["plot", str(result), "--out", str(existing)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a file" in err[0]
