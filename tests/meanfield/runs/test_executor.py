"""The executor: the same ensemble serially, on a LocalCluster and on a cluster started
apart (dask scheduler and workers as subprocesses on 127.0.0.1), bit for bit; a task
that raises is reported with its parameters while the others are kept; an unreachable
scheduler is one ConfigError within the timeout; the thread policy."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from meanfield import ConfigError
from meanfield.runs import executor as executor_module
from meanfield.runs import threads
from meanfield.runs.executor import Executor
from meanfield.studies.transport.compare import compare

ENSEMBLE = {"model": {"beta": 1.0, "kappa": 10.0},
            "initial": {"kind": "von_mises", "concentration": 2.0},
            "discretization": {"resolution": 64},
            "time": {"t_final": 0.2, "save_every": 0.1, "dt": 0.01},
            "particles": {"n": 200, "ensemble": 3}}


def with_parallel(**parallel) -> dict:
    return {**ENSEMBLE, "parallel": parallel}


def assert_same(a, b) -> None:
    for name in ("l1_distance", "l1_distance_member", "particle_order_parameter",
                 "particle_energy", "position", "density"):
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)


@pytest.fixture(scope="module")
def serial():
    return compare(ENSEMBLE)


def free_port() -> int:
    """A port nobody listens on now (bound, read, released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def draw(params: dict) -> list[float]:
    """A task of its own seed only; seed 1 fails."""
    if params["seed"] == 1:
        raise ValueError("seed 1 is bad")
    return np.random.default_rng(params["seed"]).standard_normal(3).tolist()


def check_failure_reported(results) -> None:
    assert [r.ok for r in results] == [True, False, True]
    assert results[1].describe() == "task 1 (seed = 1) failed: ValueError: seed 1 is bad"
    assert results[1].params == {"seed": 1} and "seed 1 is bad" in results[1].traceback
    for r in (results[0], results[2]):
        assert r.value == np.random.default_rng(r.params["seed"]).standard_normal(3).tolist()


def test_serial_task_that_raises_is_reported_and_others_kept():
    check_failure_reported(Executor(1).map(draw, [{"seed": s} for s in range(3)]))


def test_local_cluster_is_bit_identical_and_reports_failures(serial):
    with Executor(2) as ex:
        check_failure_reported(ex.map(draw, [{"seed": s} for s in range(3)]))
        # each worker: one dask thread, the policy's share of the cores
        shares = ex.connect().run(lambda: threads.current().threads)
        assert sorted(shares.values()) == [threads.ThreadPolicy.for_workers(2).threads] * 2
    assert_same(compare(with_parallel(workers=2)), serial)


@pytest.fixture
def external_cluster():
    """A scheduler and two workers started apart from the package, on loopback only."""
    dask = shutil.which("dask", path=os.path.dirname(sys.executable)) or shutil.which("dask")
    if dask is None:
        pytest.skip("the dask command is not installed")
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--no-dashboard"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)]
    try:
        for _ in range(2):
            procs.append(subprocess.Popen(
                [dask, "worker", address, "--nthreads", "1", "--host", "127.0.0.1",
                 "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from distributed import Client
        with Client(address, timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()


def test_external_cluster_is_bit_identical(serial, external_cluster):
    assert_same(compare(with_parallel(scheduler=external_cluster)), serial)


def test_unreachable_scheduler_is_one_config_error_within_the_timeout(monkeypatch):
    address = f"tcp://127.0.0.1:{free_port()}"  # nobody listens there
    monkeypatch.setattr(executor_module, "CONNECT_TIMEOUT", 2.0)
    start = time.monotonic()
    with pytest.raises(ConfigError) as err:
        compare(with_parallel(scheduler=address))
    assert time.monotonic() - start < 2.0 + 3.0  # before any work: the timeout and a margin
    assert err.value.key == "parallel.scheduler"
    message = str(err.value)
    assert address in message and "within 2 s" in message and "\n" not in message


def test_a_server_that_is_not_a_scheduler_is_one_config_error(monkeypatch):
    """Something listens there and answers bytes that are no dask handshake (read as a
    frame length of exabytes, a MemoryError inside distributed): one ConfigError."""
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def answer():
        try:
            conn, _ = srv.accept()
            conn.sendall(b"\xff" * 64)
            time.sleep(1.0)
            conn.close()
        except OSError:
            pass

    threading.Thread(target=answer, daemon=True).start()
    monkeypatch.setattr(executor_module, "CONNECT_TIMEOUT", 2.0)
    try:
        with pytest.raises(ConfigError) as err:
            compare(with_parallel(scheduler=f"tcp://127.0.0.1:{srv.getsockname()[1]}"))
    finally:
        srv.close()
    assert err.value.key == "parallel.scheduler" and "\n" not in str(err.value)
    # nothing of the failed client is left for dask to use (xarray's write locks did)
    import dask
    from distributed.client import _get_global_client

    assert dask.config.get("scheduler", None) != "dask.distributed"
    assert _get_global_client() is None


@pytest.mark.parametrize("parallel, key", [({"workers": 0}, "parallel.workers"),
                                           ({"workers": 1.5}, "parallel.workers"),
                                           ({"scheduler": 8786}, "parallel.scheduler"),
                                           ({"nodes": 2}, "parallel.nodes")])
def test_parallel_section_is_validated(parallel, key):
    with pytest.raises(ConfigError) as err:
        compare(with_parallel(**parallel))
    assert err.value.key == key


def test_thread_policy_shares_the_cores():
    for cores in (1, 2, 3, 16):
        for workers in (1, 2, 3, 4):
            policy = threads.ThreadPolicy.for_workers(workers, cores)
            assert policy.threads >= 1
            assert workers * policy.threads <= max(cores, workers)
    alone = threads.ThreadPolicy.for_workers(1, 16)
    assert alone.whole_machine and alone.pde_threads(ENSEMBLE_CFG) is None
    shared = threads.ThreadPolicy.for_workers(4, 16)
    assert shared.fast_sum_threads() == 4
    # below the machine the solvers' choice by size is capped: small transforms 1 thread
    assert shared.pde_threads(ENSEMBLE_CFG) == 1
    with shared.applied():
        import numba
        assert threads.current() is shared
        assert numba.get_num_threads() == min(4, numba.config.NUMBA_NUM_THREADS)
    assert threads.current() is not shared


ENSEMBLE_CFG = {"discretization": {"threads": "auto", "resolution": 32},
                "domain": {"geometry": "circle"}}
