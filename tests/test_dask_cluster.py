"""Scans on a dask cluster started from the command line (docs/dask.md).

A ``dask scheduler`` and ``dask worker --nworkers 2 --nthreads 1`` run as processes of
their own (found through ``--scheduler-file``, as on a shared file system); the
``meanfield phase-diagram`` command run on them gives the serial run's dataset exactly,
because every system of the scan draws its tokens from its own seed, whatever worker runs
it. What goes wrong ends in one line: an unreachable scheduler and a scheduler without
workers (status 2, before any work), a worker that dies with its task (that member named,
the others kept), and a cluster lost in the middle of a run (the members not done fail
with one reason, said once; dask alone would wait for workers for ever).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import xarray as xr

from meanfield.cli import main
from meanfield.runs import executor as executor_module
from meanfield.runs.engine import TaskFailed
from meanfield.runs.executor import Executor, TaskResult
from meanfield.studies.members import MemberStudy

# two dims (d = 4 < n: the tokens themselves; d = 16 >= n: the Gram matrices), two betas,
# 8 systems per beta: 16 (system, beta) pairs per dim, 8 in a member, so 4 members
SCAN = """\
[particles]
n = 8
seed = 0

[phase_diagram]
dims = [4, 16]
beta = [1.0, 4.0]
times = [0.0, 2.0, 5.0, 10.0]
systems = 8
batch = 8
engine = "numpy"
"""
MEMBERS = 4


def dask_command() -> str:
    found = shutil.which("dask", path=os.path.dirname(sys.executable)) or shutil.which("dask")
    if found is None:
        pytest.skip("the dask command is not installed")
    return found


def free_port() -> int:
    """A port nobody listens on now (bound, read, released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def processes(tmp_path):
    """Starts commands in sessions of their own; kills each whole process group at the
    end, however the test ends (the worker command's worker processes included)."""
    started: list[subprocess.Popen] = []

    def start(args: list[str], name: str) -> subprocess.Popen:
        log = open(tmp_path / f"{name}.log", "wb")
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=tmp_path)
        log.close()
        started.append(proc)
        return proc

    yield start
    for proc in reversed(started):
        with _gone():
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in started:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with _gone():
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        with _gone():  # children left behind by a parent that exited
            os.killpg(proc.pid, signal.SIGKILL)


class _gone:
    """Ignore ProcessLookupError: the group has exited already."""

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        return kind is ProcessLookupError


def run_cli(*args: str) -> int:
    return main(["phase-diagram", *args, "--no-progress"])


def finished_members(address: str) -> int:
    """The tasks of the executor that the scheduler saw finish."""
    from distributed import Client

    with Client(address, timeout=30, set_as_default=False) as client:
        log = client.run_on_scheduler(
            lambda dask_scheduler: [(t.key, t.finish) for t in dask_scheduler.transition_log])
    return sum(1 for key, finish in log if str(key).startswith("run_task") and
               finish == "memory")


def start_cluster(processes, tmp_path, workers: int) -> tuple[str, subprocess.Popen]:
    """``dask scheduler`` and ``dask worker --nworkers WORKERS --nthreads 1`` started
    apart, to be found through ``--scheduler-file``: that file and the scheduler's
    process (``cluster_address`` waits for them)."""
    dask = dask_command()
    scheduler_file = str(tmp_path / "scheduler.json")
    scheduler = processes([dask, "scheduler", "--scheduler-file", scheduler_file, "--host",
                           "127.0.0.1", "--port", "0", "--no-dashboard"], "scheduler")
    processes([dask, "worker", "--scheduler-file", scheduler_file, "--nworkers",
               str(workers), "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
              "workers")
    return scheduler_file, scheduler


def cluster_address(scheduler_file: str, workers: int) -> str:
    """The scheduler's address, once the file is there and the workers are in."""
    from distributed import Client

    deadline = time.monotonic() + 60
    while not os.path.exists(scheduler_file) and time.monotonic() < deadline:
        time.sleep(0.2)
    with Client(scheduler_file=scheduler_file, timeout=30, set_as_default=False) as client:
        client.wait_for_workers(workers, timeout=60)
        address = client.scheduler.address
    assert address == json.loads(open(scheduler_file).read())["address"]
    return address


def test_scan_on_a_command_line_cluster_equals_the_serial_run(tmp_path, processes):
    scheduler_file, _ = start_cluster(processes, tmp_path, 2)
    config = tmp_path / "scan.toml"
    config.write_text(SCAN)
    # the serial run first (the cluster starts meanwhile: its processes are its own)
    assert run_cli(str(config), "--out", str(tmp_path / "serial.nc")) == 0
    address = cluster_address(scheduler_file, 2)
    assert run_cli(str(config), "--out", str(tmp_path / "cluster.nc"),
                   "--set", f"parallel.scheduler={address}") == 0
    assert finished_members(address) == MEMBERS  # the members ran on the cluster

    with xr.open_dataset(tmp_path / "serial.nc") as serial, \
            xr.open_dataset(tmp_path / "cluster.nc") as cluster:
        p = serial["pair_probability"].values
        assert np.any((p > 0) & (p < 1))  # numbers that a wrong seed would change
        xr.testing.assert_identical(serial.drop_attrs(), cluster.drop_attrs())
        differ = {k for k in serial.attrs if str(serial.attrs[k]) != str(cluster.attrs[k])}
        assert differ <= {"wall_time_s", "config"}
        assert json.loads(cluster.attrs["config"])["parallel"]["scheduler"] == address
    assert not list(tmp_path.glob("*.checkpoint.nc")) and not list(tmp_path.glob("*.lock"))


def test_unreachable_scheduler_is_one_line_and_status_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(executor_module, "CONNECT_TIMEOUT", 2.0)
    config = tmp_path / "scan.toml"
    config.write_text(SCAN)
    address = f"tcp://127.0.0.1:{free_port()}"  # nobody listens there
    start = time.monotonic()
    assert run_cli(str(config), "--out", str(tmp_path / "out.nc"),
                   "--set", f"parallel.scheduler={address}") == 2
    assert time.monotonic() - start < 2.0 + 5.0  # the timeout and a margin, no work
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"meanfield: error: parallel.scheduler = '{address}': no dask "
                             "scheduler answered within 2 s")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scan.toml"]  # nothing written


def local_cluster(workers: int):
    from distributed import LocalCluster

    return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                        dashboard_address=None, silence_logs=50)


def test_a_scheduler_without_workers_is_one_line_and_status_2(tmp_path, monkeypatch,
                                                               capsys):
    """dask would hold the tasks until a worker comes, for ever."""
    monkeypatch.setattr(executor_module, "WORKER_WAIT", 2.0)
    config = tmp_path / "scan.toml"
    config.write_text(SCAN)
    with local_cluster(0) as cluster:
        address = cluster.scheduler_address
        start = time.monotonic()
        assert run_cli(str(config), "--out", str(tmp_path / "out.nc"),
                       "--set", f"parallel.scheduler={address}") == 2
        assert time.monotonic() - start < 2.0 + 5.0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"meanfield: error: parallel.scheduler = '{address}': the dask scheduler "
                   f"there has no worker after 2 s; start workers (dask worker {address}, "
                   "or dask worker --scheduler-file FILE)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scan.toml"]


def nap(params: dict) -> float:
    """A task that sleeps (a member still running when the cluster goes)."""
    time.sleep(params["sleep"])
    return params["sleep"]


def die(params: dict) -> int:
    """A task that kills the worker running it (a segfault, the OOM killer)."""
    if params["die"]:
        time.sleep(1.0)  # (the task before it reported done: not a suspect, below)
        os._exit(1)
    return params["value"]


def test_a_worker_that_dies_with_its_task_fails_that_member_only():
    import dask
    import distributed  # noqa: F401 - its config first: dask.config.set would drop it

    # dask runs again a task whose worker died (3 times by default: a member that kills
    # its workers is not run for ever); 0 here, to fail at the first death. Every task
    # running on the worker when it dies counts as a suspect, and so does one it has
    # finished but not yet reported: the one that dies runs last (one worker, one thread,
    # tasks in order) and waits 1 s first
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with local_cluster(1) as cluster, Executor(1, cluster.scheduler_address) as ex:
            results = ex.map(die, [{"die": False, "value": 1}, {"die": False, "value": 2},
                                   {"die": True, "value": 3}])
    assert [r.value for r in results] == [1, 2, None]
    assert results[2].error.startswith("KilledWorker: ")
    assert "\n" not in results[2].error  # (dask's message spans lines)


def test_workers_lost_mid_run_fail_the_rest_with_one_reason(monkeypatch):
    import dask
    from distributed.client import _get_global_client

    monkeypatch.setattr(executor_module, "WORKER_WAIT", 2.0)
    with local_cluster(1) as cluster:
        address = cluster.scheduler_address
        with Executor(1, address) as ex:
            results = ex.imap(nap, [{"sleep": 0.0}, {"sleep": 60.0}, {"sleep": 60.0}])
            assert next(results).value == 0.0
            # not dask's default client: xarray's netCDF writes (the checkpoints) would
            # take their locks from the scheduler, and fail once it is gone
            assert _get_global_client() is None
            assert dask.config.get("scheduler", None) != "dask.distributed"
            cluster.scale(0)  # the worker goes, its task with it
            start = time.monotonic()
            rest = list(results)
            waited = time.monotonic() - start
    assert waited < 2.0 + 10.0  # WORKER_WAIT, the polls and the worker's shutdown
    why = (f"ClusterLost: the dask scheduler at {address} has had no worker for 2 s "
           "(they stopped or died); start workers (dask worker)")
    assert [r.error for r in rest] == [why, why]


def test_a_lost_scheduler_fails_the_rest_with_one_reason(tmp_path, processes):
    scheduler_file, scheduler = start_cluster(processes, tmp_path, 1)
    address = cluster_address(scheduler_file, 1)

    def nap_here(params: dict) -> float:  # sent by value (the workers started apart
        time.sleep(params["sleep"])  # cannot import this test module)
        return params["sleep"]

    with Executor(1, address) as ex:
        results = ex.imap(nap_here, [{"sleep": 0.0}, {"sleep": 60.0}, {"sleep": 60.0}])
        assert next(results).value == 0.0
        os.killpg(scheduler.pid, signal.SIGKILL)  # a crash: no goodbye to the client
        start = time.monotonic()
        rest = list(results)
        waited = time.monotonic() - start
    assert waited < executor_module.CONNECT_TIMEOUT + 5.0
    why = (f"ClusterLost: the connection to the dask scheduler at {address} was lost; "
           "start it again")
    assert [r.error for r in rest] == [why, why]


class _Members(MemberStudy):
    kind = "members"
    first_member = 1

    def describe(self, params: dict) -> str:
        return f"member {params['k']}"


def test_members_failed_for_one_reason_are_said_once():
    """A lost cluster fails every member not done: one clause, not one per member."""
    lost = "ClusterLost: the connection to the dask scheduler at tcp://h:1 was lost"
    frames = [None, {"done": 1}, TaskResult(1, {"k": 1}, error="ValueError: bad"),
              *[TaskResult(k, {"k": k}, error=lost) for k in range(2, 6)]]
    with pytest.raises(TaskFailed) as err:
        _Members({}, Executor(1), False).finish(frames)
    assert str(err.value) == ("member 1 failed: ValueError: bad; 4 members (member 2 .. "
                              f"member 5) failed: {lost}")
