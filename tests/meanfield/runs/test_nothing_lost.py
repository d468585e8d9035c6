"""Nothing lost, found by a hostile user (issue 19, item 4): a second run does not replace
a result finished while it started (the checks are made again under the lock, by every
entry point), a run without --resume does not throw a checkpoint away, and a folder that
cannot be written any more at the end of a run keeps the result elsewhere and says where
in one line."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import meanfield
from meanfield.cli import main
from meanfield.errors import OutputError, ResultExistsError
from meanfield.io import read_netcdf
from meanfield.runs import output as output_module
from meanfield.runs.output import Output, lock_path
from meanfield.runs.schedule import checkpoint_path
from meanfield.studies.tokens import metastability as ms
from meanfield.studies.tokens import phase_diagram as pd

EVOLVE = {"model": {"beta": 1.0, "kappa": 4.0}, "discretization": {"resolution": 32},
          "time": {"t_final": 0.4, "save_every": 0.1}}
PHASE = {"particles": {"n": 6}, "phase_diagram": {
    "dims": [2, 8], "beta": {"start": 0.5, "stop": 4.0, "num": 3},
    "times": {"start": 0.0, "stop": 4.0, "num": 5}, "systems": 4, "batch": 6}}
META = {"particles": {"n": 16, "seed": 3},
        "metastability": {"beta": [6.0, 12.0], "systems": 3, "chunk": 2,
                          "times": {"start": 0.5, "stop": 60.0, "num": 12,
                                    "scale": "log"}}}
SMALL_PDE = {"model": {"beta": 1.0, "kappa": 10.0}, "discretization": {"resolution": 32},
             "time": {"t_final": 0.2, "save_every": 0.1, "dt": 0.01},
             "particles": {"n": 20, "ensemble": 2}}

# every entry point that writes a result, with a config it accepts (the refusal comes
# before any work: the configs need not be small)
ENTRY_POINTS = {
    "evolve": EVOLVE,
    "particles": {**EVOLVE, "particles": {"n": 20},
                  "time": {"t_final": 0.4, "save_every": 0.1, "dt": 0.01}},
    "compare": SMALL_PDE,
    "convergence": {"model": {"beta": 1.0}, "discretization": {"resolution": 64},
                    "time": {"t_final": 1.0, "save_every": 0.5, "dt": 0.1},
                    "convergence": {"n": [100, 400], "replicas": 2}},
    "contraction": {"model": {"normalized": True}, "discretization": {"resolution": 128},
                    "initial": {"kind": "von_mises", "concentration": 30.0},
                    "time": {"t_final": 1.0, "save_every": 0.5},
                    "particles": {"n": 20, "seed": 3}, "contraction": {"beta": [1.0]}},
    "bifurcation": {"model": {"beta": 0.0}, "discretization": {"resolution": 32}},
    "phase_diagram": PHASE,
    "normalization": {},
    "long_context": {},
    "metastability": META,
}


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_every_entry_point_checks_the_output_again_under_the_lock(tmp_path, monkeypatch,
                                                                  name):
    """Another run finishes the result between this run's first check and its lock (a
    dask start-up, seconds): this run refuses under the lock, the result is kept."""
    out = tmp_path / "r.nc"
    real_lock = Output.lock

    def finished_meanwhile(self):
        if self.path == out and not out.exists():
            out.write_bytes(b"the other run's result")
        real_lock(self)

    monkeypatch.setattr(Output, "lock", finished_meanwhile)
    with pytest.raises(ResultExistsError, match="exists") as err:
        getattr(meanfield, name)(ENTRY_POINTS[name], out=out)
    assert err.value.key == "output.path"
    assert out.read_bytes() == b"the other run's result"
    assert not lock_path(out).exists() and not checkpoint_path(out).exists()


def test_bifurcation_scan_and_map_check_again_under_the_lock(tmp_path, monkeypatch):
    real_lock = Output.lock

    def finished_meanwhile(self):
        if not self.path.exists():
            self.path.write_bytes(b"other")
        real_lock(self)

    monkeypatch.setattr(Output, "lock", finished_meanwhile)
    for mode in ("scan", "map"):
        out = tmp_path / f"{mode}.nc"
        with pytest.raises(ResultExistsError):
            meanfield.bifurcation({"discretization": {"resolution": 64},
                                   "bifurcation": {"mode": mode}}, out=out)
        assert out.read_bytes() == b"other"


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "meanfield", *args]


LC = """[long_context]
n = [64, 128, 256]
"""


def test_two_runs_on_one_output_one_writes_the_other_refuses(tmp_path):
    """The issue's case: the same long-context command twice, the second 0.3 s later with
    other values: exactly one writes, the other refuses in one line (status 2), and the
    file holds the first's result."""
    toml = tmp_path / "lc.toml"
    toml.write_text(LC)
    out = tmp_path / "o" / "r.nc"
    first = subprocess.Popen(cli("long-context", str(toml), "--out", str(out),
                                 "--no-progress"), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    second = subprocess.Popen(cli("long-context", str(toml), "--out", str(out),
                                  "--no-progress", "--set", "long_context.rho=0.25"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, err1 = first.communicate(timeout=240)
        _, err2 = second.communicate(timeout=240)
    finally:
        first.kill()
        second.kill()
    assert first.returncode == 0, err1
    assert second.returncode == 2, err2
    lines = err2.strip().splitlines()
    assert len(lines) == 1 and ("another run" in lines[0] or "exists" in lines[0]), err2
    written = read_netcdf(out)
    assert '"rho": 0.25' not in written.attrs["config"]
    assert not lock_path(out).exists()


# ---------------------------------------------------------------------------------------
# A checkpoint is not thrown away by a run without --resume.

def _interrupt_metastability(monkeypatch, out, after: int):
    real, calls = ms.run_member, []

    def interrupt(cfg, plan, params):
        calls.append(1)
        if len(calls) > after:
            raise KeyboardInterrupt
        return real(cfg, plan, params)

    monkeypatch.setattr(ms, "run_member", interrupt)
    part = ms.metastability(META, out=out)
    monkeypatch.setattr(ms, "run_member", real)
    assert part.attrs["status"] == -1 and checkpoint_path(out).exists()
    return part


def test_a_run_without_resume_keeps_the_checkpoint(tmp_path, monkeypatch, capsys):
    out = tmp_path / "m.nc"
    _interrupt_metastability(monkeypatch, out, after=1)
    kept = checkpoint_path(out).read_bytes()
    with pytest.raises(ResultExistsError) as err:
        ms.metastability(META, out=out)
    assert "--resume" in str(err.value) and "--overwrite" in str(err.value)
    assert err.value.key == "output.path" and checkpoint_path(out).read_bytes() == kept
    toml = tmp_path / "m.toml"
    toml.write_text('[particles]\nn = 16\nseed = 3\n[metastability]\nbeta = [6.0, 12.0]\n'
                    'systems = 3\nchunk = 2\ntimes = {start = 0.5, stop = 60.0, num = 12,'
                    ' scale = "log"}\n')
    assert main(["metastability", str(toml), "--out", str(out), "--no-progress"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "--resume" in lines[0] and "--overwrite" in lines[0]
    assert checkpoint_path(out).read_bytes() == kept and not out.exists()
    # --resume continues it (tested bit for bit in test_metastability); --overwrite
    # starts again and the result is the same as a run never interrupted
    whole = ms.metastability(META)
    again = ms.metastability(META, out=out, overwrite=True)
    np.testing.assert_array_equal(again.first_plateau_clusters.values,
                                  whole.first_plateau_clusters.values)
    assert not checkpoint_path(out).exists()


def test_overwrite_discards_the_old_checkpoint_at_the_start(tmp_path, monkeypatch):
    """Started again with --overwrite and interrupted before its own first checkpoint
    (kill -9): the earlier run's checkpoint must not be left to resume from."""
    out = tmp_path / "m.nc"
    _interrupt_metastability(monkeypatch, out, after=1)

    def killed(*args):
        assert not checkpoint_path(out).exists()  # gone before the first member
        raise SystemExit(9)

    monkeypatch.setattr(ms, "run_member", killed)
    with pytest.raises(SystemExit):
        ms.metastability(META, out=out, overwrite=True)
    assert not checkpoint_path(out).exists()


def test_evolve_without_resume_keeps_its_checkpoint(tmp_path, monkeypatch):
    """The same for a task that streams its frames (the checkpoint of evolve)."""
    from meanfield.runs import evolve as evolve_module

    out = tmp_path / "e.nc"
    real, calls = evolve_module.EvolveTask.advance, []

    def interrupt(self, *args):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, *args)

    monkeypatch.setattr(evolve_module.EvolveTask, "advance", interrupt)
    assert meanfield.evolve(EVOLVE, out=out).attrs["status"] == -1
    monkeypatch.setattr(evolve_module.EvolveTask, "advance", real)
    with pytest.raises(ResultExistsError, match="--resume"):
        meanfield.evolve(EVOLVE, out=out)
    done = meanfield.evolve(EVOLVE, out=out, resume=True)
    np.testing.assert_array_equal(done.density.values,
                                  meanfield.evolve(EVOLVE).density.values)


# ---------------------------------------------------------------------------------------
# The folder cannot be written any more at the end of the run.

def _break_folder(folder):
    """What the run finds when its folder can no longer be written: as root, permissions
    stop nothing, so the folder is moved away and a file takes its place (every write,
    probe and unlink there then fails, as with a read-only folder)."""
    shutil.move(folder, folder.with_name(folder.name + "-moved"))
    folder.write_text("not a folder any more")


@pytest.mark.parametrize("checkpoint_every", [60.0, 1e-3])
def test_an_unwritable_folder_at_the_end_keeps_the_result_elsewhere(
        tmp_path, monkeypatch, checkpoint_every):
    """The study's folder breaks after its first member: the later checkpoints cannot be
    written (a warning, the run goes on), the result cannot be written, it is kept in
    the temporary directory and OutputError says where; no second error from the
    lock."""
    folder = tmp_path / "o"
    out = folder / "p.nc"
    real, calls = pd.run_member, []

    def breaks_after_first(cfg, plan, params):
        calls.append(1)
        if len(calls) == 2:
            _break_folder(folder)
        return real(cfg, plan, params)

    monkeypatch.setattr(pd, "run_member", breaks_after_first)
    cfg = {**PHASE, "output": {"checkpoint_every": checkpoint_every}}
    said = (pytest.warns(RuntimeWarning, match="the run goes on") if checkpoint_every < 1
            else contextlib.nullcontext())
    with pytest.raises(OutputError, match="kept in") as err, said:
        pd.phase_diagram(cfg, out=out)
    kept = str(err.value).rsplit("kept in ", 1)[1].strip("'")
    try:
        ds = read_netcdf(kept)
        expected = pd.phase_diagram(PHASE)
        np.testing.assert_array_equal(ds.pair_probability.values,
                                      expected.pair_probability.values)
        assert ds.attrs["status"] == 0
    finally:
        os.unlink(kept)
        with contextlib.suppress(OSError):  # (the fallback folder it was kept in)
            os.rmdir(os.path.dirname(kept))


def test_unwritable_folder_on_the_command_line_is_one_line(tmp_path, monkeypatch, capsys):
    """The CLI: one line saying where the result is, status 1 (the write probe of
    check_writable raised a ConfigError that skipped the fallback, then unlinking the
    lock raised a second error)."""
    folder = tmp_path / "o"
    out = folder / "e.nc"
    toml = tmp_path / "e.toml"
    toml.write_text("[model]\nbeta = 1.0\nkappa = 4.0\n[discretization]\nresolution = 32\n"
                    "[time]\nt_final = 0.4\nsave_every = 0.1\n")
    real = output_module.Output.write_result

    def breaks_first(self, ds):
        _break_folder(folder)
        return real(self, ds)

    monkeypatch.setattr(output_module.Output, "write_result", breaks_first)
    assert main(["evolve", str(toml), "--out", str(out), "--no-progress"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "kept in" in lines[0], lines
    kept = lines[0].rsplit("kept in ", 1)[1].strip("'")
    try:
        np.testing.assert_array_equal(read_netcdf(kept).density.values,
                                      meanfield.evolve(EVOLVE).density.values)
    finally:
        os.unlink(kept)


def test_interrupted_with_an_unwritable_folder_keeps_the_frames_elsewhere(tmp_path,
                                                                         monkeypatch):
    folder = tmp_path / "o"
    out = folder / "p.nc"
    real, calls = pd.run_member, []

    def breaks_then_interrupted(cfg, plan, params):
        calls.append(1)
        if len(calls) == 2:
            _break_folder(folder)
            raise KeyboardInterrupt
        return real(cfg, plan, params)

    monkeypatch.setattr(pd, "run_member", breaks_then_interrupted)
    with pytest.warns(RuntimeWarning, match="cannot be written"):
        part = pd.phase_diagram(PHASE, out=out)
    assert part.attrs["status"] == -1 and "kept in" in part.attrs["message"]
    assert int(part.systems_done.sum()) == 6
    # (issue 31 item 5: the folder was moved and replaced, so the run went on in a
    # fallback folder; its checkpoint is kept there and resumes)
    kept = Path(part.attrs["message"].rsplit("kept in ", 1)[1].strip("'"))
    try:
        assert read_netcdf(kept).attrs["status"] == -1
        monkeypatch.setattr(pd, "run_member", real)
        again = pd.phase_diagram(PHASE, out=kept.parent / out.name, resume=True)
        np.testing.assert_array_equal(again.pair_probability.values,
                                      pd.phase_diagram(PHASE).pair_probability.values)
    finally:
        shutil.rmtree(kept.parent)


def test_demo_refuses_an_interrupted_runs_checkpoint_naming_overwrite(tmp_path,
                                                                      monkeypatch):
    """The demo takes no --resume: a checkpoint left by an interrupted demo is reported
    as its results are (replace them with --overwrite), before any work."""
    from meanfield import demo

    monkeypatch.setattr(demo, "evolve", lambda *a, **k: pytest.fail("work started"))
    first = next(iter(demo.RUNS))
    checkpoint_path(tmp_path / f"{first}.nc").write_bytes(b"interrupted")
    with pytest.raises(ResultExistsError, match="--overwrite") as err:
        demo.run_demo(tmp_path, progress=False)
    assert f"{first}.nc.checkpoint.nc" in str(err.value)


def test_a_read_only_folder_mid_run_keeps_a_streamed_result_elsewhere(tmp_path,
                                                                       monkeypatch):
    """evolve writes its frames to part files as it goes: once the folder is read-only
    (simulated: as root a chmod stops nothing) the parts and checkpoints that cannot be
    written are a warning, the frames stay in memory, and the result (the parts written
    before and the frames since) is kept in the temporary directory."""
    import tempfile

    from meanfield.runs import evolve as evolve_module
    from meanfield.runs import frames as frames_module

    monkeypatch.setattr(frames_module, "PART_BYTES", 1500)  # a part every few frames
    folder = tmp_path / "o"
    out = folder / "e.nc"
    cfg = {**EVOLVE, "time": {"t_final": 2.0, "save_every": 0.1},
           "output": {"checkpoint_every": 1e-3}}
    real_mkstemp, real_unlink = tempfile.mkstemp, os.unlink
    read_only = []

    def mkstemp(*args, dir=None, **kwargs):
        if read_only and dir is not None and str(dir).startswith(str(folder)):
            raise PermissionError(13, "Permission denied", str(dir))
        return real_mkstemp(*args, dir=dir, **kwargs)

    def unlink(path, *args, **kwargs):
        if read_only and str(path).startswith(str(folder)):
            raise PermissionError(13, "Permission denied", str(path))
        return real_unlink(path, *args, **kwargs)

    real_advance, calls = evolve_module.EvolveTask.advance, []

    def advance(self, *args):
        calls.append(1)
        if len(calls) == 8:
            read_only.append(True)
        return real_advance(self, *args)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(os, "unlink", unlink)
    monkeypatch.setattr(evolve_module.EvolveTask, "advance", advance)
    with pytest.warns(RuntimeWarning, match="cannot be written"), \
            pytest.raises(OutputError, match="kept in") as err:
        meanfield.evolve(cfg, out=out)
    read_only.clear()
    kept = str(err.value).rsplit("kept in ", 1)[1].strip("'")
    try:
        monkeypatch.setattr(evolve_module.EvolveTask, "advance", real_advance)
        expected = meanfield.evolve(cfg)
        ds = read_netcdf(kept)
        assert ds.sizes["time"] == 21
        np.testing.assert_array_equal(ds.density.values, expected.density.values)
    finally:
        os.unlink(kept)


def _break_after_release(monkeypatch, folder):
    """Nothing may be written once the lock is released (another run may hold it by
    then): the folder breaks right after the release."""
    real_release = Output.release

    def release(self):
        held = self._locked
        real_release(self)
        if held:
            _break_folder(folder)

    monkeypatch.setattr(Output, "release", release)


def test_the_bifurcation_scan_is_written_once_under_the_lock(tmp_path, monkeypatch):
    """The scan's summary is its message on disk, written with the result (it was
    written again after the lock was released)."""
    folder = tmp_path / "o"
    _break_after_release(monkeypatch, folder)
    cfg = {"domain": {"geometry": "circle"}, "discretization": {"resolution": 64},
           "model": {"beta": 0.0, "kappa": 2.0},
           "bifurcation": {"mode": "scan", "parameter": "kappa", "start": 1.5,
                           "stop": 3.0, "scan_num": 2, "scan_starts": ["clustered"]}}
    ds = meanfield.bifurcation(cfg, out=folder / "s.nc")
    written = read_netcdf(tmp_path / "o-moved" / "s.nc")
    assert ds.attrs["status"] == written.attrs["status"] == 0
    assert written.attrs["message"] == ds.attrs["message"]
    assert written.attrs["message"].startswith("6 states")


def test_a_bifurcation_with_problems_is_written_once_under_the_lock(tmp_path,
                                                                   monkeypatch):
    """Status 1 and the problems are in the file written under the lock (the file was
    rewritten with them after the lock was released)."""
    import dataclasses

    from solvers.nonlinear import bordered

    def failing(real):
        def corrector(*args, **kwargs):
            return dataclasses.replace(real(*args, **kwargs), converged=False,
                                       message="the corrector was made to fail (test)")
        return corrector

    for name in ("newton_krylov", "chord_newton"):
        monkeypatch.setattr(bordered, name, failing(getattr(bordered, name)))
    folder = tmp_path / "o"
    _break_after_release(monkeypatch, folder)
    cfg = {"model": {"beta": 0.0}, "discretization": {"resolution": 32},
           "bifurcation": {"start": 1.5, "stop": 4.0, "modes": 1, "stride": 2}}
    ds = meanfield.bifurcation(cfg, out=folder / "b.nc")
    written = read_netcdf(tmp_path / "o-moved" / "b.nc")
    assert ds.attrs["status"] == written.attrs["status"] == 1
    assert written.attrs["message"] == ds.attrs["message"]
    assert "finished with problems" in written.attrs["message"]
