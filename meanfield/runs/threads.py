"""One thread policy: how many threads a run may use, decided here and passed down.

Runs side by side on one machine share its cores: ``workers`` runs at once may each use
``cores // workers`` threads (workers x threads <= cores). ``ThreadPolicy`` holds that
count and gives each consumer its share:

- numba's parallel kernels (the direct interaction sums' ``prange``):
  ``numba.set_num_threads`` inside ``ThreadPolicy.applied()`` (numba's setting is per
  calling thread, so a dask worker thread sets its own);
- the FFTs and spherical harmonic transforms of the PDE (``solvers.transforms``, through
  the grids' ``threads`` argument): ``pde_threads(cfg)``; below the machine's cores the
  solvers' own choice by size (one thread for small transforms) is capped by the policy;
- the fast interaction sums (``solvers.particles.fast``, ``threads`` argument):
  ``fast_sum_threads()``;
- BLAS (the direct sums' "blas" backend, SVDs): dask's nanny starts every worker with
  ``OMP/MKL/OPENBLAS_NUM_THREADS = 1``, so on a cluster BLAS runs one thread per worker,
  and alone it takes the library's default; studies whose dense linear algebra is of
  small matrices (bifurcations: LU and eigenvalues of a few hundred unknowns) run it on
  one thread (``one_blas_thread``, threadpoolctl): there OpenBLAS's spinning threads
  made an LU 10-90x slower beside another job, for no gain when idle.

The policy of the calling thread is ``current()``: the one entered with ``applied()``, else
the one ``install``-ed for the process (dask workers, by ``meanfield.runs.executor``),
else one run on all the cores of this machine (the solvers' defaults, as before).
Results do not depend on the thread count (the solvers' chunks and reductions are fixed
by the problem size, never by the threads).
"""
from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass

_local = threading.local()
_installed: ThreadPolicy | None = None


def machine_cores() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class ThreadPolicy:
    """Threads for one run.

    Attributes:
        threads: the most threads the run may use (>= 1).
        cores: the cores of the machine it runs on.
    """

    threads: int
    cores: int

    @classmethod
    def for_workers(cls, workers: int = 1, cores: int | None = None) -> ThreadPolicy:
        """The share of one of ``workers`` runs on a machine of ``cores`` cores."""
        cores = machine_cores() if cores is None else int(cores)
        return cls(max(1, cores // max(1, int(workers))), cores)

    @property
    def whole_machine(self) -> bool:
        """Whether the run may use every core (the solvers' own defaults then apply)."""
        return self.threads >= self.cores

    def pde_threads(self, cfg: dict) -> int | None:
        """Threads of the PDE's transforms for a validated config (None: the solvers choose
        by size, as they do alone on the machine)."""
        configured = cfg["discretization"]["threads"]
        if configured != "auto":
            return min(int(configured), self.threads)
        if self.whole_machine:
            return None
        from solvers.transforms import fft, sht
        resolution = cfg["discretization"]["resolution"]
        by_size = (sht.default_threads(resolution) if cfg["domain"]["geometry"] == "sphere"
                   else fft.default_threads(resolution))
        return min(by_size, self.threads)

    def fast_sum_threads(self) -> int:
        """Threads of the fast interaction sums."""
        return self.threads

    def numba_threads(self) -> int:
        import numba
        return max(1, min(self.threads, numba.config.NUMBA_NUM_THREADS))

    @contextlib.contextmanager
    def applied(self) -> Iterator[ThreadPolicy]:
        """Make this the calling thread's policy (and numba's thread count) for a while."""
        import numba
        before, before_numba = getattr(_local, "policy", None), numba.get_num_threads()
        _local.policy = self
        numba.set_num_threads(self.numba_threads())
        try:
            yield self
        finally:
            numba.set_num_threads(before_numba)
            _local.policy = before


def current() -> ThreadPolicy:
    """The calling thread's policy (see the module docstring)."""
    policy = getattr(_local, "policy", None)
    if policy is not None:
        return policy
    return _installed if _installed is not None else ThreadPolicy.for_workers(1)


def install(policy: ThreadPolicy | None) -> None:
    """Make ``policy`` this process's default (dask worker processes)."""
    global _installed
    _installed = policy


_controller: tuple[int, object] | None = None  # (len(sys.modules) when made, controller)


def one_blas_thread():
    """A context in which BLAS (OpenBLAS, MKL) runs on one thread (threadpoolctl).

    The libraries are scanned once and again only after a module was imported since
    (one that may have loaded a BLAS, as scipy.linalg does its own): threadpoolctl's scan
    of the loaded libraries took 2 ms of each small weighted run (issue 32)."""
    import sys

    from threadpoolctl import ThreadpoolController

    global _controller
    if _controller is None or _controller[0] != len(sys.modules):
        _controller = (len(sys.modules), ThreadpoolController())
    return _controller[1].limit(limits=1, user_api="blas")
