"""Issue 31, "every compiled loop that can run for more than a second interruptible":
the direct sums defer a signal on their own (``solvers.signals.DeferredSignals``) when
they take more than one compiled call, so a particle run's velocity at large n stops
between calls, after the call running completed, never inside it; nested deferrals share
the outer one. The signal is a real SIGINT raised while a compiled call runs (from a spy
around the kernel); before, Python's handler raised ``KeyboardInterrupt`` inside the
call (in a numba callback: a ``SystemError`` or a swallowed interrupt)."""
from __future__ import annotations

import signal

import numpy as np
import pytest

from meanfield.model.particles import AttentionParticles, HardmaxParticles, TokenStepper
from solvers.particles import direct
from solvers.signals import DeferredSignals

N = 2000


def _interrupted_spy(monkeypatch, index: int) -> tuple[list, list]:
    """``direct.exp_kernels()[index]`` wrapped: the first call raises SIGINT and then runs
    the compiled kernel; returns (calls started, calls completed)."""
    kernels = list(direct.exp_kernels())
    started, completed, inner = [], [], kernels[index]

    def spy(*args):
        started.append(args[0].shape[0])
        if len(started) == 1:
            signal.raise_signal(signal.SIGINT)
        inner(*args)
        completed.append(args[0].shape[0])

    kernels[index] = spy
    monkeypatch.setattr(direct, "_kernels", tuple(kernels))
    monkeypatch.setattr(direct, "CALL_TERMS", 64 * N * 4)  # 64 rows a call (d = 3)
    return started, completed


@pytest.fixture
def tokens():
    x = np.random.default_rng(11).standard_normal((N, 3))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_a_velocity_stops_after_the_call_running(monkeypatch, tokens):
    started, completed = _interrupted_spy(monkeypatch, 0)
    handler = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        AttentionParticles(2.0, method="direct", backend="numba").velocity(tokens)
    assert started == [64] and completed == [64]  # the call ran to its end, no other
    assert signal.getsignal(signal.SIGINT) is handler  # restored


def test_hardmax_stops_after_the_call_running(monkeypatch, tokens):
    started, completed = _interrupted_spy(monkeypatch, 2)
    with pytest.raises(KeyboardInterrupt):
        HardmaxParticles(backend="numba").velocity(tokens)
    assert started == [64] and completed == [64]


def test_the_particle_stepper_stops_after_the_call_running(monkeypatch, tokens):
    started, completed = _interrupted_spy(monkeypatch, 0)
    stepper = TokenStepper(AttentionParticles(2.0, method="direct", backend="numba"), dt=0.1)
    with pytest.raises(KeyboardInterrupt):
        stepper.advance(tokens, 0.0, 0.1)
    assert started == [64] and completed == [64]


def test_a_nested_deferral_raises_the_outer_signal():
    reached = []
    with pytest.raises(KeyboardInterrupt):
        with DeferredSignals():
            signal.raise_signal(signal.SIGINT)  # noted by the outer one
            with DeferredSignals() as inner:
                inner.check()
                reached.append(True)
    assert reached == []  # raised by the inner check, not when the outer one closed
