"""One executor for everything that runs many independent tasks (ensembles, scans).

``Executor`` runs ``fn(params)`` for a list of parameter dicts:

- serially in this process (``[parallel] workers = 1``, no scheduler: the default);
- on a ``dask.distributed.LocalCluster`` of ``workers`` processes on this machine
  (``workers > 1``), each with one dask thread and the thread policy's share of the cores
  (``meanfield.runs.threads``: workers x threads <= cores);
- on an existing dask cluster (``[parallel] scheduler = "tcp://host:port"``), each worker
  given the share of its machine's cores among the workers on that machine. An
  unreachable scheduler is a ``ConfigError`` naming ``parallel.scheduler`` after
  ``timeout`` seconds (``CONNECT_TIMEOUT``, 10 s).

Results are ``TaskResult`` objects in task order, whatever the order the tasks finish in;
the same tasks give the same results serially and in parallel, because each task
carries everything it depends on, its seed included, and nothing depends on the thread
count. A task that raises does not stop the others: its result holds the error and its
parameters (``TaskResult.describe``). Ctrl-C cancels what is still running and raises
``KeyboardInterrupt`` to the caller, which has seen the results before it.

dask is imported only when a cluster is used.
"""
from __future__ import annotations

import logging
import traceback as _traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Self

from meanfield.errors import ConfigError
from meanfield.runs import threads as thread_policy

CONNECT_TIMEOUT = 10.0  # seconds to reach a scheduler before giving up


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


def run_task(fn: Callable[[dict], Any], index: int, params: dict) -> TaskResult:
    """Run one task under the calling thread's thread policy; errors become results."""
    with thread_policy.current().applied():
        try:
            return TaskResult(index, params, fn(params))
        except Exception as exc:  # noqa: BLE001 - reported with its parameters, others go on
            return TaskResult(index, params, error=f"{type(exc).__name__}: {exc}",
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
        try:
            for index, (future, p) in enumerate(zip(futures, params)):
                try:
                    yield future.result()
                except Exception as exc:  # noqa: BLE001 - a worker died, or fn was not sent
                    yield TaskResult(index, p, error=f"{type(exc).__name__}: {exc}")
        finally:
            client.cancel([f for f in futures if not f.done()])

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
            self._client = Client(self._cluster)
        else:
            import dask

            previous = dask.config.get("scheduler", None)
            try:
                self._client = Client(self.scheduler, timeout=self.timeout)
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
        # tasks at once per machine: the dask threads of its workers
        hosts: dict[str, int] = {}
        for address, info in self._client.scheduler_info()["workers"].items():
            hosts[_host(address)] = hosts.get(_host(address), 0) + int(info["nthreads"])
        self._client.run(_install_share, hosts)
        return self._client

    def close(self) -> None:
        """Leave the cluster (and shut down one this executor started)."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
