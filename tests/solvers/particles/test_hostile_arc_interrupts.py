"""Issue 31, "every compiled loop that can run for more than a second interruptible": the
arcs' anterpolation (one compiled call of all keys: 1.9-2.7 s at n = 4e7 keys on S^1,
about the largest n the memory budget admits) runs ``ANTERPOLATE_KEYS`` keys of each
chunk per call, ranges that are multiples of the lanes, so every moment gets its adds in
the order of one call: the same bits. A SIGINT during a call is noted and raised after
it (``DeferredSignals``, opened by ``arc_kernel_sums`` when it makes several calls)."""
from __future__ import annotations

import signal

import numpy as np
import pytest

from solvers.particles import arcs


@pytest.fixture(scope="module")
def points():
    theta = np.random.default_rng(5).uniform(0, 2 * np.pi, 300_001)  # 5 key chunks
    y = np.c_[np.cos(theta), np.sin(theta)]
    return y[:500].copy(), y


def test_the_anterpolation_in_many_calls_has_the_same_bits(monkeypatch, points):
    q, y = points
    plan = arcs.arc_plan(9.0, 1e-10)
    monkeypatch.setattr(arcs, "ANTERPOLATE_KEYS", 1 << 40)  # one call
    whole = arcs.arc_kernel_sums(q, y, plan)
    monkeypatch.setattr(arcs, "ANTERPOLATE_KEYS", 4 * 37)  # 406 calls, odd ends
    chunked = arcs.arc_kernel_sums(q, y, plan)
    assert all(np.array_equal(a, b) for a, b in zip(whole, chunked))


def test_a_sigint_during_the_anterpolation_stops_after_that_call(monkeypatch, points):
    q, y = points
    anterpolate, evaluate = arcs.make_arc_kernels()
    started, completed = [], []

    def spy(*args):
        started.append(1)
        if len(started) == 1:
            signal.raise_signal(signal.SIGINT)
        anterpolate(*args)
        completed.append(1)

    monkeypatch.setattr(arcs, "make_arc_kernels", lambda: (spy, evaluate))
    monkeypatch.setattr(arcs, "ANTERPOLATE_KEYS", 4 * 1024)
    handler = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        arcs.arc_kernel_sums(q, y, arcs.arc_plan(9.0, 1e-10))
    assert started == completed == [1]
    assert signal.getsignal(signal.SIGINT) is handler
