"""One executor for everything that runs many independent tasks (ensembles, scans).

``Executor`` runs ``fn(params)`` for a list of parameter dicts:

- serially in this process (``[parallel] workers = 1``, no scheduler: the default);
- on a ``dask.distributed.LocalCluster`` of ``workers`` processes on this machine
  (``workers > 1``), each with one dask thread and the thread policy's share of the cores
  (``meanfield.runs.threads``: workers x threads <= cores);
- on an existing dask cluster (``[parallel] scheduler = "tcp://host:port"``), each worker
  given the share of its machine's cores among the workers on that machine. An
  unreachable scheduler is a ``ConfigError`` naming ``parallel.scheduler`` after
  ``timeout`` seconds (``CONNECT_TIMEOUT``, 10 s), and so is one that has no worker
  ``WORKER_WAIT`` seconds (30 s) after it answered.

The client is never dask's default client: xarray would then take its netCDF write locks
from the scheduler (every checkpoint a round trip to it, and none written once it is
gone), and the results are written by this process alone. A cluster lost in the middle
of a run (the scheduler's connection gone, or no worker for ``WORKER_WAIT`` seconds while
results are awaited: dask would wait for workers forever) fails the tasks not yet done
with one line saying so; the results before them are kept by the caller.

Results are ``TaskResult`` objects in task order, whatever the order the tasks finish in;
the same tasks give the same results serially and in parallel, because each task
carries everything it depends on, its seed included, and nothing depends on the thread
count. A task that raises does not stop the others: its result holds the error and its
parameters (``TaskResult.describe``). Ctrl-C cancels what is still running and raises
``KeyboardInterrupt`` to the caller, which has seen the results before it.

dask is imported only when a cluster is used.
"""
from __future__ import annotations

import contextlib
import logging
import time
import traceback as _traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Self

from meanfield.errors import ConfigError
from meanfield.runs import threads as thread_policy

CONNECT_TIMEOUT = 10.0  # seconds to reach a scheduler before giving up
# seconds a cluster may have no worker (starting, restarting after a crash) before the
# run stops: a worker process starts in a few seconds, also on a loaded machine
WORKER_WAIT = 30.0
POLL = 1.0  # seconds between looks at the cluster while a result is awaited


class ClusterLost(Exception):
    """The cluster can run no more tasks (its scheduler is gone, or it has had no worker
    for ``WORKER_WAIT`` seconds)."""


@dataclass
class TaskResult:
    """The outcome of one task.

    Attributes:
        index: the task's place in the list given to ``map``.
        params: its parameters.
        value: what ``fn`` returned (None if it failed).
        error: ``"ExceptionType: message"`` if it raised, else None.
        traceback: the traceback's text if it raised.
    """

    index: int
    params: dict
    value: Any = None
    error: str | None = None
    traceback: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def describe(self) -> str:
        """One line: which task failed, with which parameters, and why."""
        params = ", ".join(f"{k} = {v!r}" for k, v in self.params.items())
        return f"task {self.index} ({params}) failed: {self.error}"


def one_line(exc: BaseException) -> str:
    """``"ExceptionType: message"`` on one line (dask's messages span several)."""
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def run_task(fn: Callable[[dict], Any], index: int, params: dict) -> TaskResult:
    """Run one task under the calling thread's thread policy; errors become results."""
    with thread_policy.current().applied():
        try:
            return TaskResult(index, params, fn(params))
        except Exception as exc:  # noqa: BLE001 - reported with its parameters, others go on
            return TaskResult(index, params, error=one_line(exc),
                              traceback=_traceback.format_exc())


def _install_share(workers_per_host: dict[str, int], dask_worker=None) -> int:
    """On a dask worker (``Client.run`` passes it as ``dask_worker``): install the thread
    policy of its share of its machine."""
    host = _host(dask_worker.address)
    policy = thread_policy.ThreadPolicy.for_workers(workers_per_host.get(host, 1))
    thread_policy.install(policy)
    return policy.threads


def _forget_failed_client(previous_scheduler) -> None:
    """Undo what a Client that failed to connect left behind: itself as the default
    client and ``dask.config`` scheduler = "dask.distributed"."""
    import dask
    from distributed.client import _del_global_client, _get_global_client

    client = _get_global_client()
    while client is not None and client.status != "running":
        _del_global_client(client)  # (setting None does nothing in distributed)
        client = _get_global_client()
    if previous_scheduler is None:
        dask.config.config.pop("scheduler", None)
    else:
        dask.config.set(scheduler=previous_scheduler)


@contextlib.contextmanager
def _quiet(lost: bool) -> Iterator[None]:
    """Closing a client whose scheduler is lost: dask logs its reconnection attempt's
    cancellation with a traceback; the run says in one line what happened instead."""
    if not lost:
        yield
        return
    loggers = [logging.getLogger(name) for name in ("distributed", "distributed.client")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _host(address: str) -> str:
    return address.split("://", 1)[-1].rsplit(":", 1)[0]


class Executor:
    """Serial or dask.distributed execution of independent tasks (module docstring).

    Args:
        workers: processes on this machine (1: serial, unless ``scheduler`` is given).
        scheduler: address of an existing dask scheduler (``"tcp://host:port"``).
        timeout: seconds to reach the scheduler.

    Use as a context manager (or call ``close``) to shut a cluster down.
    """

    def __init__(self, workers: int = 1, scheduler: str | None = None, *,
                 timeout: float = CONNECT_TIMEOUT):
        self.workers, self.scheduler, self.timeout = int(workers), scheduler, timeout
        self._client = None
        self._cluster = None

    @classmethod
    def from_config(cls, cfg: dict, timeout: float | None = None) -> Executor:
        """The executor of a validated config's ``[parallel]`` section (``timeout``:
        ``CONNECT_TIMEOUT``)."""
        from meanfield.runs.limits import check_workers

        par = cfg.get("parallel") or {}
        check_workers(par.get("workers", 1), par.get("scheduler"))  # before any process
        return cls(par.get("workers", 1), par.get("scheduler"),
                   timeout=CONNECT_TIMEOUT if timeout is None else timeout)

    @property
    def parallel(self) -> bool:
        return self.scheduler is not None or self.workers > 1

    def map(self, fn: Callable[[dict], Any], params: list[dict]) -> list[TaskResult]:
        """``fn(p)`` for each ``p`` of ``params``: the results in task order."""
        return list(self.imap(fn, params))

    def imap(self, fn: Callable[[dict], Any], params: list[dict]) -> Iterator[TaskResult]:
        """As ``map``, one result at a time in task order (all tasks start at once on a
        cluster; serially each runs when its result is asked for)."""
        if not self.parallel:
            for index, p in enumerate(params):
                yield run_task(fn, index, p)
            return
        client = self.connect()
        futures = [client.submit(run_task, fn, i, p, pure=False)
                   for i, p in enumerate(params)]
        lost = None  # why the cluster can run no more tasks
        try:
            for index, (future, p) in enumerate(zip(futures, params)):
                if lost is None:
                    try:
                        result = self._await(client, future)
                    except ClusterLost as exc:
                        lost = str(exc)
                    except Exception as exc:  # noqa: BLE001 - fn was not sent, KilledWorker
                        result = TaskResult(index, p, error=one_line(exc))
                if lost is not None:
                    result = TaskResult(index, p, error=f"ClusterLost: {lost}")
                yield result
        finally:
            if client.status == "running":
                client.cancel([f for f in futures if not f.done()])

    def _await(self, client, future) -> TaskResult:
        """The result of ``future``, looking at the cluster every ``POLL`` seconds.

        Raises:
            ClusterLost: the scheduler's connection is gone, or no worker has been on
                the cluster for ``WORKER_WAIT`` seconds.
        """
        workerless_since = None
        while True:
            try:
                return future.result(timeout=POLL)
            except TimeoutError:
                pass
            except Exception as exc:
                if future.status == "error":  # the task's own (KilledWorker: it killed
                    raise  # the workers that ran it): the other tasks go on
                raise ClusterLost(self._why_lost(client, exc)) from None
            if client.status != "running":  # (reconnecting: its futures are cancelled)
                raise ClusterLost(self._lost_scheduler())
            try:
                workers = len(client.nthreads())
            except Exception as exc:  # noqa: BLE001 - the scheduler did not answer
                raise ClusterLost(self._why_lost(client, exc)) from None
            if workers:
                workerless_since = None
                continue
            now = time.monotonic()
            workerless_since = workerless_since or now
            if now - workerless_since >= WORKER_WAIT:
                raise ClusterLost(
                    f"{self._where()} has had no worker for {WORKER_WAIT:g} s (they "
                    "stopped or died); start workers (dask worker)")

    def _where(self) -> str:
        return (f"the dask scheduler at {self.scheduler}" if self.scheduler
                else "the local dask cluster")

    def _lost_scheduler(self) -> str:
        return f"the connection to {self._where()} was lost; start it again"

    def _why_lost(self, client, exc: Exception) -> str:
        """Why a result did not come (``exc``, not the task's own error): the scheduler's
        connection, once the client has seen it go (dask cancels the futures first, and
        a cancelled wait raises ``UnboundLocalError`` in ``distributed.utils.sync``),
        else ``exc`` itself."""
        deadline = time.monotonic() + self.timeout
        while client.status == "running" and time.monotonic() < deadline:
            time.sleep(0.1)
        if client.status != "running":
            return self._lost_scheduler()
        return f"{self._where()} gave no result ({one_line(exc)})"

    def connect(self):
        """The dask client (started or joined on first use, or here to fail early), the
        workers' thread policies installed; None when serial."""
        if not self.parallel:
            return None
        if self._client is not None:
            return self._client
        from distributed import Client, LocalCluster

        if self.scheduler is None:
            self._cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1,
                                         processes=True, dashboard_address=None,
                                         silence_logs=logging.ERROR)
            self._client = Client(self._cluster, set_as_default=False)
        else:
            import dask

            previous = dask.config.get("scheduler", None)
            try:
                self._client = Client(self.scheduler, timeout=self.timeout,
                                      set_as_default=False)
            except (OSError, TimeoutError, MemoryError, ValueError, EOFError) as exc:
                # a failed Client stays the process's default and leaves the dask
                # scheduler set to it: anything dask does next (xarray's netCDF write
                # locks) would try to reach it
                _forget_failed_client(previous)
                if isinstance(exc, (OSError, TimeoutError)):
                    raise ConfigError(
                        f"parallel.scheduler = {self.scheduler!r}: no dask scheduler "
                        f"answered within {self.timeout:g} s ({exc}); start one there (dask "
                        "scheduler) or leave parallel.scheduler out",
                        "parallel.scheduler") from None
                # something answered that is not a dask scheduler (its first bytes read
                # as a frame length of exabytes, or as a bad handshake)
                raise ConfigError(
                    f"parallel.scheduler = {self.scheduler!r}: what answered there is not a "
                    f"dask scheduler ({type(exc).__name__}); give the address the "
                    "scheduler prints (tcp://host:8786)", "parallel.scheduler") from None
            except BaseException:
                _forget_failed_client(previous)
                raise
            self._wait_for_a_worker()
        # tasks at once per machine: the dask threads of its workers
        hosts: dict[str, int] = {}
        for address, info in self._client.scheduler_info()["workers"].items():
            hosts[_host(address)] = hosts.get(_host(address), 0) + int(info["nthreads"])
        self._client.run(_install_share, hosts)
        return self._client

    def _wait_for_a_worker(self) -> None:
        """A scheduler that answered but has no worker after ``WORKER_WAIT`` seconds is
        a ``ConfigError`` (dask would hold the tasks until one comes, for ever)."""
        try:
            self._client.wait_for_workers(1, timeout=WORKER_WAIT)
        except (TimeoutError, OSError):
            self.close()
            raise ConfigError(
                f"parallel.scheduler = {self.scheduler!r}: the dask scheduler there has no "
                f"worker after {WORKER_WAIT:g} s; start workers (dask worker "
                f"{self.scheduler}, or dask worker --scheduler-file FILE)",
                "parallel.scheduler") from None

    def close(self) -> None:
        """Leave the cluster (and shut down one this executor started)."""
        if self._client is not None:
            with _quiet(self._client.status != "running"):
                self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
