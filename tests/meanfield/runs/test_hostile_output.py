"""Nothing lost, third pass (issue 31): the output side.

Item 4: only regular files are written or replaced (a FIFO, a socket, a directory, a
device: refused before any work naming --out, with or without --overwrite). Item 5: the
output folder moved or replaced mid-run: the run goes on in a fallback folder and resumes
from there. Item 6: the lock is one flock, without a race. Items 12/13: a full disk is
reported as such, a too long name and a name ending in '/' in one line.
"""
from __future__ import annotations

import errno
import fcntl
import multiprocessing
import os
import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import meanfield
from meanfield.cli import main
from meanfield.errors import ConfigError, OutputError
from meanfield.io import write_atomic, write_netcdf
from meanfield.runs import evolve as evolve_module
from meanfield.runs import frames as frames_module
from meanfield.runs.output import Output, lock_path

EVOLVE = {"model": {"beta": 1.0, "kappa": 4.0}, "discretization": {"resolution": 32},
          "time": {"t_final": 0.4, "save_every": 0.1}}
TOML = ("[model]\nbeta = 1.0\nkappa = 4.0\n[discretization]\nresolution = 32\n"
        "[time]\nt_final = 0.4\nsave_every = 0.1\n")


@pytest.fixture
def toml(tmp_path):
    path = tmp_path / "e.toml"
    path.write_text(TOML)
    return path


def one_line(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


# ---------------------------------------------------------------------------------------
# Item 4: only regular files are written or replaced.

def _socket(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    return sock


@pytest.mark.parametrize("kind", ["fifo", "socket", "directory"])
@pytest.mark.parametrize("overwrite", [False, True])
def test_a_fifo_socket_or_folder_is_never_replaced(tmp_path, toml, capsys, kind, overwrite):
    target = tmp_path / "target"
    sock = None
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "socket":
        sock = _socket(target)
    else:
        target.mkdir()
    before = os.stat(target)
    try:
        argv = ["evolve", str(toml), "--out", str(target), "--no-progress"]
        assert main(argv + ["--overwrite"] * overwrite) == 2
        line = one_line(capsys)
        assert "--out" in line and str(target) in line
        assert {"fifo": "FIFO", "socket": "socket", "directory": "directory"}[kind] in line
        after = os.stat(target)
        assert (after.st_ino, stat.S_IFMT(after.st_mode)) == (before.st_ino,
                                                             stat.S_IFMT(before.st_mode))
        assert sorted(p.name for p in tmp_path.iterdir()) == ["e.toml", "target"]
    finally:
        if sock is not None:
            sock.close()


def test_dev_null_is_refused_and_left_alone():
    before = os.stat("/dev/null")
    with pytest.raises(ConfigError, match="character device") as err:
        Output("/dev/null", True, False).claim()
    assert "--out" in str(err.value) and err.value.key == "output.path"
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino,
                                                                            before.st_rdev)


def test_a_fifo_made_after_the_check_is_not_replaced(tmp_path):
    """The check before any work, and again just before the rename (a FIFO made in the
    meantime stays a FIFO and the temp file goes)."""
    target = tmp_path / "r.nc"
    with pytest.raises(ConfigError, match="FIFO"):
        write_atomic(target, lambda tmp: os.mkfifo(target))
    assert stat.S_ISFIFO(os.stat(target).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.nc"]


# ---------------------------------------------------------------------------------------
# Items 12/13: a full disk, a too long name, a name ending in '/'.

def test_a_name_too_long_is_one_line(tmp_path, toml, capsys):
    out = tmp_path / ("x" * 300 + ".nc")
    assert main(["evolve", str(toml), "--out", str(out), "--no-progress"]) == 2
    line = one_line(capsys)
    assert "--out" in line and "too long" in line


def test_a_name_too_long_for_the_checkpoint_is_refused_before_any_work(tmp_path):
    """A name the file system takes but its checkpoint's temporary file (28 bytes more)
    would not: refused at once, not a failed checkpoint mid-run."""
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    out = tmp_path / ("x" * (limit - 20) + ".nc")
    with pytest.raises(ConfigError, match="too long"):
        Output(out, False, False).claim()
    Output(tmp_path / ("x" * (limit - 35) + ".nc"), False, False).claim()  # fits


def test_a_trailing_slash_names_a_folder(tmp_path, toml, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["evolve", str(toml), "--out", "newdir/", "--no-progress"]) == 2
    line = one_line(capsys)
    assert "--out" in line and "names a folder" in line and "'newdir/'" in line
    assert not (tmp_path / "newdir").exists()


def _fill_disk(monkeypatch, folder: Path):
    """netCDF-C/HDF5 on a full disk: creating the file fails with EACCES ("Permission
    denied", as measured on a full 256 kB tmpfs), and the file system has no free block."""
    real_to_netcdf, real_statvfs = xr.Dataset.to_netcdf, os.statvfs

    def to_netcdf(self, path=None, *args, **kwargs):
        if str(path).startswith(str(folder)):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_to_netcdf(self, path, *args, **kwargs)

    class Full:
        f_bfree = f_bavail = 0
        f_frsize = 4096

    def statvfs(path):
        return Full() if str(path).startswith(str(folder)) else real_statvfs(path)

    monkeypatch.setattr(xr.Dataset, "to_netcdf", to_netcdf)
    monkeypatch.setattr(os, "statvfs", statvfs)


def test_a_full_disk_is_reported_as_a_full_disk(tmp_path, monkeypatch):
    out = tmp_path / "o" / "r.nc"
    _fill_disk(monkeypatch, tmp_path / "o")
    ds = xr.Dataset({"a": ("x", np.arange(3.0))})
    with pytest.raises(OSError) as err:
        write_netcdf(ds, out)
    assert err.value.errno == errno.ENOSPC and err.value.filename == str(out)
    with pytest.raises(OutputError) as err:
        Output(out, False, False).write_result(ds)
    message = str(err.value)
    assert "No space left on device" in message and str(out) in message
    assert "Permission denied" not in message
    kept = message.rsplit("kept in ", 1)[1].strip("'")
    os.unlink(kept)


# ---------------------------------------------------------------------------------------
# Item 5: the output folder moved or replaced mid-run.

STREAMED = {**EVOLVE, "time": {"t_final": 2.0, "save_every": 0.1},
            "output": {"checkpoint_every": 1e-3}}


def _move_at(monkeypatch, folder: Path, at: int, then=None):
    """Rename ``folder`` (and make a new empty one in its place) before the ``at``-th
    step; ``then`` is raised there afterwards (a KeyboardInterrupt: the run stops)."""
    real, calls = evolve_module.EvolveTask.advance, []

    def advance(self, *args):
        calls.append(1)
        if len(calls) == at:
            folder.rename(folder.with_name(folder.name + "-moved"))
            folder.mkdir()
            if then is not None:
                raise then
        return real(self, *args)

    monkeypatch.setattr(evolve_module.EvolveTask, "advance", advance)
    return real


def test_a_folder_moved_mid_run_keeps_every_frame_elsewhere(tmp_path, monkeypatch):
    """Parts written before the move are copied from the moved folder; the run goes on
    in the fallback folder (one warning names it) and ends with OutputError naming the
    result, which holds every frame (the same as a run without output)."""
    monkeypatch.setattr(frames_module, "PART_BYTES", 1500)  # a part every few frames
    folder = tmp_path / "o"
    _move_at(monkeypatch, folder, at=8)
    with pytest.warns(RuntimeWarning, match="moved or replaced") as said, \
            pytest.raises(OutputError, match="moved or replaced") as err:
        meanfield.evolve(STREAMED, out=folder / "e.nc")
    assert len(said) == 1
    kept = Path(str(err.value).rsplit("kept in ", 1)[1].strip("'"))
    try:
        assert str(kept.parent) in str(said[0].message)
        monkeypatch.undo()
        expected = meanfield.evolve({**STREAMED, "output": {}})
        ds = xr.load_dataset(kept)
        assert ds.sizes["time"] == 21 and ds.attrs["status"] == 0
        np.testing.assert_array_equal(ds.density.values, expected.density.values)
        assert sorted(p.name for p in kept.parent.iterdir()) == ["e.nc"]
        assert not (folder / "e.nc").exists()
    finally:
        shutil.rmtree(kept.parent)


def test_a_folder_moved_then_interrupted_resumes_from_the_fallback(tmp_path, monkeypatch,
                                                                  toml, capsys):
    """Moved, then stopped (Ctrl-C) at the next step: the checkpoint and the parts are in
    the fallback folder, the message says how to go on, and --resume --out there
    finishes the run with the same frames as one uninterrupted run."""
    monkeypatch.setattr(frames_module, "PART_BYTES", 1500)
    folder = tmp_path / "o"
    real = _move_at(monkeypatch, folder, at=8)
    calls = []

    def advance(self, *args):  # the move at step 8, Ctrl-C at step 12
        calls.append(1)
        if len(calls) == 12:
            raise KeyboardInterrupt
        return moved(self, *args)

    moved = evolve_module.EvolveTask.advance
    monkeypatch.setattr(evolve_module.EvolveTask, "advance", advance)
    with pytest.warns(RuntimeWarning, match="moved or replaced"):
        part = meanfield.evolve(STREAMED, out=folder / "e.nc")
    message = part.attrs["message"]
    assert part.attrs["status"] == -1 and "--resume --out" in message
    out = Path(message.split("--resume --out ", 1)[1].split("'")[1])
    try:
        monkeypatch.setattr(evolve_module.EvolveTask, "advance", real)
        done = meanfield.evolve(STREAMED, out=out, resume=True)
        assert done.attrs["status"] == 0 and done.sizes["time"] == 21
        np.testing.assert_array_equal(done.density.values,
                                      meanfield.evolve({**STREAMED, "output": {}})
                                      .density.values)
    finally:
        shutil.rmtree(out.parent)


def test_a_folder_deleted_mid_run_says_so_in_one_line(tmp_path, monkeypatch, toml, capsys):
    """A folder deleted (not moved) takes the parts with it: one line says so (exit 1),
    no traceback."""
    monkeypatch.setattr(frames_module, "PART_BYTES", 1500)
    folder = tmp_path / "o"
    real, calls = evolve_module.EvolveTask.advance, []

    def advance(self, *args):
        calls.append(1)
        if len(calls) == 8:
            shutil.rmtree(folder)
        return real(self, *args)

    monkeypatch.setattr(evolve_module.EvolveTask, "advance", advance)
    toml.write_text(TOML.replace("t_final = 0.4", "t_final = 2.0")
                    + "[output]\ncheckpoint_every = 0.001\n")
    assert main(["evolve", str(toml), "--out", str(folder / "e.nc"), "--no-progress"]) == 1
    line = one_line(capsys)
    assert "moved or replaced" in line and "gone" in line


# ---------------------------------------------------------------------------------------
# Item 6: the lock.

def test_an_empty_lock_file_held_by_a_live_run_is_busy(tmp_path):
    """A run between creating its lock file and writing its pid holds the (empty) file:
    another run refuses; it was taken for a dead writer before."""
    out = tmp_path / "r.nc"
    fd = os.open(lock_path(out), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(ConfigError, match="another run"):
            Output(out, False, False).lock()
        assert os.path.getsize(lock_path(out)) == 0
    finally:
        os.close(fd)
    held = Output(out, False, False)
    held.lock()  # released: free again (the empty file is no obstacle)
    held.release()
    assert not lock_path(out).exists()


def _contend(path: str, barrier, results, trials: int) -> None:
    for trial in range(trials):
        barrier.wait()  # the trial is set up
        out = Output(path, False, False)
        try:
            out.lock()
            results.put((trial, True))
        except ConfigError:
            results.put((trial, False))
        barrier.wait()  # everyone has tried: the holder still holds
        out.release()
        barrier.wait()  # released


def test_many_processes_one_lock_exactly_one_holds(tmp_path):
    """4 processes x 30 trials call ``Output(path).lock()`` at once, half the trials with
    a stale lock file present (a dead pid's, or empty): exactly one holds it each trial.
    (Before: 2 trials in 60 had two holders.)"""
    path, processes, trials = tmp_path / "r.nc", 4, 30
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(processes + 1, timeout=60), ctx.Queue()
    workers = [ctx.Process(target=_contend, args=(str(path), barrier, results, trials))
               for _ in range(processes)]
    for w in workers:
        w.start()
    try:
        for trial in range(trials):
            if trial % 2:
                stale = "" if trial % 4 == 1 else f"{gone.pid} {socket.gethostname()}\n"
                lock_path(path).write_text(stale)
            for _ in range(3):
                barrier.wait()
        held = [0] * trials
        for _ in range(processes * trials):
            trial, ok = results.get(timeout=60)
            held[trial] += ok
    finally:
        for w in workers:
            w.join(timeout=60)
    assert held == [1] * trials
    assert all(w.exitcode == 0 for w in workers)
