"""Ctrl-C and SIGTERM stop a serial phase diagram (issue 19, item 4): the compiled engine
runs in short calls (``phase_numba.run_systems``) with the numbers unchanged, the signal
is taken between them (not turned into a member's ``SystemError``), and the run exits
with status 130, the members done kept for ``--resume``."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import tomllib

import numpy as np
import pytest

from meanfield.io import read_netcdf
from meanfield.runs.schedule import checkpoint_path
from meanfield.studies.tokens import phase_kernels as pk
from meanfield.studies.tokens import phase_numba as pn
from meanfield.studies.tokens.phase_diagram import phase_diagram


def _block(mode: int, n: int, d: int, count: int):
    """A block of ``count`` systems, a different beta each (some freeze, some do not)."""
    x0 = pk.initial_states(n, d, np.arange(count), seed=5)
    beta = np.linspace(0.2, 8.0, count)
    times = np.linspace(0.0, 6.0, 13)
    return (mode, np.ascontiguousarray(x0), beta, True, times, 0.999, 0.9995, True, 1e-5,
            pk.H0, 1.0)


@pytest.mark.parametrize("mode, d", [(pn.GRAM, 8), (pn.TOKENS, 3)])
def test_chunks_change_no_number(monkeypatch, mode, d):
    args = _block(mode, 6, d, 11)
    whole = pn.run_block(*args)
    monkeypatch.setattr(pn, "CHUNK_WORK", 2 * 6**3)  # 2 systems per thread and call
    assert pn.chunk_size(6, 2) == 4
    calls = []
    real = pn.run_block

    def counted(*a):
        calls.append(a[1].shape[0])
        return real(*a)

    monkeypatch.setattr(pn, "run_block", counted)
    chunked = pn.run_systems(*args, threads=2)
    assert calls == [4, 4, 3]
    for a, b in zip(whole, chunked):
        np.testing.assert_array_equal(a, b)  # bit for bit


def test_a_signal_is_raised_between_chunks(monkeypatch):
    """Ctrl-C inside a compiled call is noted, and raised as KeyboardInterrupt before the
    next call (not inside the call, where numba turned it into a SystemError)."""
    args = _block(pn.GRAM, 6, 8, 9)
    monkeypatch.setattr(pn, "CHUNK_WORK", 6**3)
    calls = []
    real = pn.run_block

    def interrupted(*a):
        calls.append(1)
        os.kill(os.getpid(), signal.SIGINT)  # taken while "compiled code" runs
        return real(*a)

    monkeypatch.setattr(pn, "run_block", interrupted)
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        pn.run_systems(*args, threads=1)
    assert len(calls) == 1 and signal.getsignal(signal.SIGINT) is before


TOML = """[phase_diagram]
dims = [1024]
beta = {start = 0.1, stop = 9.0, num = 8}
times = {start = 0.0, stop = 15.0, num = 16}
systems = 384
batch = 1024
[output]
checkpoint_every = 0.001
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_a_serial_phase_diagram_and_resume_finishes_it(tmp_path, signum):
    toml = tmp_path / "pd.toml"
    toml.write_text(TOML)
    out = tmp_path / "pd.nc"
    cmd = [sys.executable, "-m", "meanfield", "phase-diagram", str(toml), "--out", str(out),
           "--no-progress"]
    run = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 240
        while not checkpoint_path(out).exists():  # the first member is done
            assert run.poll() is None and time.monotonic() < end, run.stderr.read()
            time.sleep(0.02)
        time.sleep(0.3)  # well into the next member's compiled calls
        run.send_signal(signum)
        sent = time.monotonic()
        _, err = run.communicate(timeout=240)
        stopped = time.monotonic() - sent
    finally:
        run.kill()
    lines = err.strip().splitlines()
    assert run.returncode == 130, err
    assert len(lines) == 1 and "resume" in lines[0], err
    # 3 members of ~1 s each: it stopped in the second (the compiled calls last ~0.2 s;
    # 1.5-3 s measured, most of it the dataset and the interpreter's exit), where before
    # the member failed with a SystemError, the others ran and it exited with status 1
    assert stopped < 10.0, stopped
    kept = read_netcdf(checkpoint_path(out))
    assert 1 <= kept.sizes["member"] < 3
    resumed = subprocess.run([*cmd, "--resume"], capture_output=True, text=True,
                             timeout=240)
    assert resumed.returncode == 0, resumed.stderr
    ds = read_netcdf(out)
    assert (ds.systems_done.values == 384).all() and ds.attrs["status"] == 0
    if signum == signal.SIGINT:  # the same numbers as a run never interrupted
        whole = phase_diagram(tomllib.loads(TOML))
        np.testing.assert_array_equal(ds.pair_probability.values,
                                      whole.pair_probability.values)
