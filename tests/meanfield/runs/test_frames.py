"""Frames streamed to disk (issue 9, ``meanfield.runs.frames``): with an output, evolve and
particles write their frames as part files as they go, the result assembled from them is
the in-memory run's to the bit (variables, coords, attrs, dtypes); a kill between a part
and its checkpoint, a kill -9 of a real process, and missing or broken parts; the
memory of a streamed run (a subprocess: peak RSS well below its frames)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import xarray as xr

import meanfield
from meanfield import ConfigError
from meanfield.io import read_netcdf, write_netcdf
from meanfield.runs import frames as frames_module
from meanfield.runs import output as output_module
from meanfield.runs.frames import FrameStore, frames_path
from meanfield.runs.schedule import checkpoint_path

TIME = {"t_final": 1.0, "save_every": 0.05}  # 21 frames
CIRCLE = {"model": {"beta": 1.0, "kappa": 3.0},
          "initial": {"kind": "von_mises", "center": 1.0, "concentration": 1.0},
          "time": TIME}
SPHERE = {"domain": {"geometry": "sphere"}, "model": {"beta": 1.0, "kappa": 5.0},
          "initial": {"kind": "von_mises", "center": [0.0, 0.6, 0.8], "concentration": 2.0},
          "time": {**TIME, "tolerance": 1e-8}}
CASES = {
    "circle-spectral": (meanfield.evolve, {**CIRCLE, "discretization": {
        "method": "spectral", "resolution": 32}}),
    "circle-finite-volume": (meanfield.evolve, {**CIRCLE, "discretization": {
        "method": "finite-volume", "resolution": 32}}),
    "sphere-spectral": (meanfield.evolve, {**SPHERE, "discretization": {
        "method": "spectral", "resolution": 24}}),
    "sphere-finite-volume": (meanfield.evolve, {**SPHERE, "discretization": {
        "method": "finite-volume", "resolution": 162}}),
    "particles": (meanfield.particles, {"model": {"beta": 1.0, "kappa": 10.0},
                                        "initial": {"kind": "von_mises", "concentration": 1.0},
                                        "time": {**TIME, "dt": 0.01},
                                        "particles": {"n": 40}}),
    "particles-pre-ln": (meanfield.particles, {
        "model": {"beta": 1.0}, "initial": {"kind": "von_mises", "concentration": 1.0},
        "time": {**TIME, "dt": 0.01}, "particles": {"n": 30, "architecture": "pre-ln"}}),
    "particles-hardmax-rank": (meanfield.particles, {  # energy NaN, integer ranks
        "model": {"beta": 1.0}, "initial": {"kind": "von_mises", "concentration": 1.0},
        "time": {**TIME, "dt": 0.01},
        "particles": {"n": 30, "architecture": "hardmax", "attention_rank": True}}),
}


@pytest.fixture
def small_parts(monkeypatch):
    """Parts of a few frames (so every run here writes several) and the parts count of
    each finished streamed run in ``written``."""
    monkeypatch.setattr(frames_module, "PART_BYTES", 1500)
    written = []
    real = FrameStore.remove

    def remove(self):
        written.append(len(self.parts))
        real(self)

    monkeypatch.setattr(FrameStore, "remove", remove)
    return written


def plain(ds: xr.Dataset) -> xr.Dataset:
    """Without the attrs that differ between two runs of one config (wall time)."""
    ds = ds.copy()
    ds.attrs.pop("wall_time_s")
    return ds


@pytest.mark.parametrize("name", list(CASES))
def test_streamed_result_is_the_in_memory_one(tmp_path, small_parts, name):
    run, cfg = CASES[name]
    memory = run(cfg)
    out = tmp_path / "run.nc"
    streamed = run(cfg, out=out)
    assert small_parts[-1] >= 3  # several parts were written and assembled
    assert not frames_path(out).exists() and not checkpoint_path(out).exists()
    # no handle left on the deleted parts: HDF5 would read a new file that reuses a
    # part's inode through it (a segfault in a later test once)
    from xarray.backends.file_manager import FILE_CACHE

    parts = str(frames_path(out).resolve())
    assert not [key for key, handle in FILE_CACHE.items()
                if str(getattr(handle, "filepath", lambda: "")()).startswith(parts)]
    written = read_netcdf(out)
    write_netcdf(memory, tmp_path / "memory.nc")  # what the in-memory path would write
    before = read_netcdf(tmp_path / "memory.nc")
    for ds in (streamed, written):
        xr.testing.assert_identical(plain(ds), plain(memory))
    xr.testing.assert_identical(plain(written), plain(before))
    assert list(written.data_vars) == list(memory.data_vars)
    for var in memory.variables:
        assert written[var].dtype == before[var].dtype, var
        assert streamed[var].dtype == memory[var].dtype, var
    first = next(iter(memory.data_vars))  # the frames (density, position) read back
    np.testing.assert_array_equal(streamed.load()[first].values, memory[first].values)


class Killed(BaseException):
    """A kill: nothing in the engine catches it (no checkpoint, no cleanup)."""


@pytest.mark.parametrize("name", ["circle-spectral", "particles"])
def test_kill_between_a_part_and_its_checkpoint_then_resume(tmp_path, small_parts,
                                                            monkeypatch, name):
    run, cfg = CASES[name]
    full = run(cfg)
    cfg = {**cfg, "output": {"checkpoint_every": 1e-9}}  # a checkpoint after each frame
    out = tmp_path / "run.nc"
    real = output_module.Output.write_checkpoint

    def dies_after_a_new_part(self, ds):
        before = checkpoint_path(out)
        if before.exists():
            covered = read_netcdf(before).attrs["checkpoint_frames"]
            if covered >= 5 and (frames_path(out) / f"part-{covered:06d}.nc").exists():
                raise Killed  # the part after the checkpoint is on disk, its own is not
        real(self, ds)

    with monkeypatch.context() as mp:
        mp.setattr(output_module.Output, "write_checkpoint", dies_after_a_new_part)
        with pytest.raises(Killed):
            run(cfg, out=out)
    kept = read_netcdf(checkpoint_path(out)).attrs["checkpoint_frames"]
    parts = sorted(p.name for p in frames_path(out).iterdir())
    assert f"part-{kept:06d}.nc" in parts  # written after the checkpoint: to be dropped
    (frames_path(out) / ".part-000099.x.tmp.nc").write_bytes(b"half")  # a cut write
    resumed = run(cfg, out=out, resume=True)
    assert resumed.attrs["status"] == 0 and not frames_path(out).exists()
    xr.testing.assert_equal(resumed, full)  # bit for bit


def interrupted(tmp_path, monkeypatch):
    """A streamed evolve run stopped by Ctrl-C after 8 frames: (cfg, out, its dataset)."""
    run, cfg = CASES["circle-spectral"]
    out = tmp_path / "run.nc"
    real = meanfield.model.circle.CircleModel.diagnostics
    calls = {"n": 0}

    def interrupting(self, rho):
        calls["n"] += 1
        if calls["n"] == 9:
            raise KeyboardInterrupt
        return real(self, rho)

    with monkeypatch.context() as mp:
        mp.setattr(meanfield.model.circle.CircleModel, "diagnostics", interrupting)
        part = run(cfg, out=out)
    return cfg, out, part


def test_interrupted_streamed_run_returns_all_frames_so_far(tmp_path, small_parts,
                                                           monkeypatch):
    cfg, out, part = interrupted(tmp_path, monkeypatch)
    assert part.attrs["status"] == -1 and part.sizes["time"] == 8
    assert len(list(frames_path(out).glob("part-*.nc"))) >= 2
    full = meanfield.evolve(cfg)
    np.testing.assert_array_equal(part.density.values, full.density.values[:8])
    resumed = meanfield.evolve(cfg, out=out, resume=True)  # the parts held open by part
    np.testing.assert_array_equal(resumed.density.values, full.density.values)


@pytest.mark.parametrize("damage", ["missing", "garbage", "folder"])
def test_missing_or_broken_parts_are_one_clear_error(tmp_path, small_parts, monkeypatch,
                                                     damage):
    cfg, out, part = interrupted(tmp_path, monkeypatch)
    part.close()
    first = frames_path(out) / "part-000000.nc"
    if damage == "missing":
        first.unlink()
    elif damage == "garbage":
        first.write_bytes(b"garbage" * 50)
    else:
        for path in frames_path(out).iterdir():
            path.unlink()
        frames_path(out).rmdir()
    with pytest.raises(ConfigError, match="--overwrite") as err:
        meanfield.evolve(cfg, out=out, resume=True)
    assert err.value.key == "resume"
    assert ("cannot be read" if damage == "garbage" else "incomplete") in str(err.value)
    again = meanfield.evolve(cfg, out=out, overwrite=True)  # what the message says to do
    assert again.attrs["status"] == 0 and not frames_path(out).exists()


def test_checkpoint_with_frames_inside_is_refused(tmp_path, small_parts, monkeypatch):
    cfg, out, part = interrupted(tmp_path, monkeypatch)
    part.close()
    ckpt = read_netcdf(checkpoint_path(out))
    del ckpt.attrs["checkpoint_frames"]  # as an older meanfield wrote them
    ckpt.to_netcdf(checkpoint_path(out))
    with pytest.raises(ConfigError, match="older meanfield") as err:
        meanfield.evolve(cfg, out=out, resume=True)
    assert err.value.key == "resume"


# ---------------------------------------------------------------------------------------
# Real processes.

KILLED_RUN = """
import sys, time
import meanfield
from meanfield.runs import frames
from meanfield.runs.evolve import EvolveTask
frames.PART_BYTES = 1500
real = EvolveTask.frame
def slow(self, state):  # a long run: time for the kill to come in the middle
    time.sleep(0.02)
    return real(self, state)
EvolveTask.frame = slow
meanfield.evolve({cfg!r}, out=sys.argv[1])
"""


def test_kill_9_while_streaming_then_resume_is_the_uninterrupted_run(tmp_path,
                                                                     monkeypatch):
    cfg = {**CASES["circle-spectral"][1], "time": {"t_final": 20.0, "save_every": 0.05},
           "output": {"checkpoint_every": 0.3}}
    out = tmp_path / "run.nc"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_RUN.format(cfg=cfg), str(out)])
    try:
        end = time.monotonic() + 240  # a fresh numba cache compiles first
        while not (checkpoint_path(out).exists()
                   and len(list(frames_path(out).glob("part-*.nc"))) >= 4):
            assert proc.poll() is None and time.monotonic() < end, "no parts appeared"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL and not out.exists()
    monkeypatch.setattr(frames_module, "PART_BYTES", 1500)
    resumed = meanfield.evolve(cfg, out=out, resume=True)  # the stale lock is taken over
    full = meanfield.evolve(cfg)
    assert resumed.attrs["status"] == 0 and resumed.sizes["time"] == 401
    xr.testing.assert_equal(resumed, full)
    assert not frames_path(out).exists() and not checkpoint_path(out).exists()


MEMORY_RUN = """
import resource, sys
import meanfield
def cfg(n, frames):
    return {{"model": {{"beta": 1.0, "kappa": 10.0}},
            "discretization": {{"method": "spectral", "resolution": n}},
            "time": {{"t_final": 0.01 * (frames - 1), "save_every": 0.01, "dt": 0.01}}}}
meanfield.evolve(cfg(64, 5), out=sys.argv[1] + ".warm.nc")  # compiled, dask imported
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
ds = meanfield.evolve(cfg({n}, {frames}), out=sys.argv[1])
assert ds.sizes["time"] == {frames}
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


@pytest.mark.slow
def test_a_streamed_run_keeps_its_frames_out_of_memory(tmp_path):
    """Circle spectral n = 32768, 801 frames: 200 MiB of densities. In memory the run
    peaks at ~420 MiB over its warm start (two copies of the frames and more); streamed
    (default ``PART_BYTES`` = 32 MiB) at ~90 MiB (parts, the work arrays). The test asks
    for less than half the frames: frames back in memory would need at least all of
    them."""
    n, count = 32768, 801
    frames_mib = n * count * 8 / 2**20
    code = textwrap.dedent(MEMORY_RUN.format(n=n, frames=count))
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "run.nc")],
                          capture_output=True, text=True, timeout=600, check=True)
    peak_mib = int(done.stdout.split()[-1]) / 1024  # ru_maxrss: KiB on Linux
    assert peak_mib < frames_mib / 2, (peak_mib, frames_mib)


def test_a_streamed_result_that_cannot_be_written_is_kept_and_resumed(tmp_path, small_parts,
                                                                     monkeypatch):
    """A full disk at the end: the result goes to the temporary directory (OutputError
    says where), the checkpoint of the end and the parts stay, and resume writes the
    result without stepping again."""
    run, cfg = CASES["circle-spectral"]
    memory = run(cfg)
    out = tmp_path / "run.nc"
    real = output_module.write_netcdf

    def full_disk(ds, path, overwrite=False):
        if str(path) == str(out):
            raise OSError(28, "No space left on device")
        return real(ds, path, overwrite)

    with monkeypatch.context() as mp:
        mp.setattr(output_module, "write_netcdf", full_disk)
        with pytest.raises(meanfield.errors.OutputError, match="kept in") as err:
            run(cfg, out=out)
    kept = str(err.value).split("kept in ")[1].strip("'")
    try:
        xr.testing.assert_identical(plain(read_netcdf(kept)), plain(memory))
    finally:
        os.unlink(kept)
    assert read_netcdf(checkpoint_path(out)).attrs["checkpoint_frames"] == 21
    steps = []
    monkeypatch.setattr(meanfield.runs.evolve.EvolveTask, "advance",
                        lambda *args: steps.append(1))
    resumed = run(cfg, out=out, resume=True)
    assert steps == [] and resumed.attrs["status"] == 0
    xr.testing.assert_equal(resumed, memory)
    assert not frames_path(out).exists() and not checkpoint_path(out).exists()
