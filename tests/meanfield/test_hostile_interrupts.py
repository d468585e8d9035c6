"""Issue 31, "every compiled loop that can run for more than a second interruptible".

A compiled (numba) call cannot be interrupted: Ctrl-C waits for it to return. The audit of
every kernel (``grep -rn "njit\\|prange" meanfield solvers``), with its worst single call
at the sizes the config checks allow (memory: ``runs.budget``; work: ``runs.limits``,
``metrics.components``), measured on 2 shared cores under load ~7 where a time is given:

kernel (module)                          one call                   worst call   state
---------------------------------------  -------------------------  -----------  ---------
tiled, tiled_serial, hardmax             rows x n x (d + 1) <=      0.23 s n=1e5 chunked
  (solvers/particles/direct)             CALL_TERMS = 2^27          d=2; 0.11 s  (was one
                                                                    n=2e4 d=32   call: ~1e3 s
                                                                                 at n=1e6 R^2)
rows_exp (direct, BLAS backend)          one Gram block, 2^21       ~10 ms       bounded
kernel (studies/transport/               rows x n x (2d + 1) <=     ~0.4 s       chunked (was
  gaussian_convergence)                  2^27                                    10.8 s/call
                                                                                 at n = 1e5)
evaluate (solvers/particles/arcs)        EVALUATE_ROWS = 65536 rows 0.2 s (2.8   chunked
                                         x ~3 us                    us a row)
anterpolate (arcs)                       ANTERPOLATE_KEYS = 2^19    ~0.1 s (was  chunked,
                                         keys of each chunk a call  1.9-2.7 s at same bits
                                                                    n = 4e7)
angles, sphere_loc, assemble (chunks)    one key chunk (chunk_      < 0.1 s      bounded
                                         slices)
_prim (metrics/clusters)                 n^2 d <= DENSE_WORK = 1e8  ~0.3 s       bounded
                                         (S^2: 2^24)
component blocks (metrics/components)    BLOCK rows, BLOCK_PAIRS    < 1 s        chunked,
                                                                                 signals
run_block, gram_system (phase_numba,     a chunk of systems         < 1 s        chunked,
  phase_gram)                                                                    signals
auction (metrics/sphere_assignment)      AUCTION_WORK = 2^25        0.12-0.21 s  chunked,
                                         candidate looks a call     (was 0.6-4 s same bits
                                                                    at n = 1e4-  (state in
                                                                    3e4)         arrays)
invert (metrics/sphere_quantize)         LONGITUDE_ROWS = 2^16 rows ~0.25 s      chunked
violations (sphere_assignment)           O(n x cubes)               < 0.1 s      bounded
synthesis, analysis (solvers/transforms/ ROUND_WORK = 2^28          0.13 s (was  chunked,
  sht_kernels, the numba backend)        recurrence steps a round   1.0 s, one   same bits
                                         (orders split on threads)  call, at     (test_hostile
                                                                    L = 2047)    _sht_interrupts)
ducc0's SHT (the default backend, C++)   one transform              0.53 s at    bounded
                                                                    L = 2047 (the
                                                                    config's largest)
table (solvers/transforms/legendre)      once per plan, O(L rings)  < 1 s        bounded
tendency (solvers/operators/             O(cells)                   ~0.1 s at    bounded
  finite_volume, zonal_finite_volume)                               2e7 cells
usa, sa, multipliers, flux, divergence,  O(grid) per call           < 0.1 s      bounded
  rows (model/circle*, zonal_flux)
cdf, quantile (metrics/circle_measures)  KERNEL_CALL = 2^19 points  <= ~0.5 s    chunked,
                                         (W_p, p != 2, atoms vs     (was ~10 s   same bits
                                         density: n x 32 at once)   at n = 1e6)
sweep (metrics/circle_atoms,             SWEEP_CALL = 2^21 / 2^20   0.26 / 0.49  chunked,
  circle_panels)                         points a call              s (was 1.7 / same bits
                                                                    3.1 s at n =
                                                                    1e7)
moments, cost (circle_panels)            O(atoms + panels), the     -            tests only
                                         reference evaluation

The tests: a stand-in signals object whose ``check`` raises (as ``DeferredSignals.check``
does for a noted Ctrl-C) stops each chunked driver after its first compiled call, and a
real SIGINT noted by ``DeferredSignals`` does the same; chunking changes no bit.

A chunked driver given no ``check`` opens a ``DeferredSignals`` of its own
(``solvers.signals``, nested ones share the outer) when it makes more than one call: a
particle run's velocity, the auction, the circle's W_p stop after the call running.
Their tests: ``tests/solvers/particles/test_hostile_deferred_sums.py``,
``test_hostile_arc_interrupts.py``, ``tests/meanfield/metrics/
test_hostile_auction_interrupts.py``, ``test_hostile_circle_interrupts.py``.
"""
from __future__ import annotations

import signal

import numpy as np
import pytest

from meanfield.runs.signals import DeferredSignals
from meanfield.studies.transport import gaussian_convergence as gc
from solvers.particles import arcs, direct


class RaisingSignals:
    """A stand-in ``DeferredSignals`` with a Ctrl-C noted: its check raises."""

    def __init__(self):
        self.checks = 0

    def check(self):
        self.checks += 1
        raise KeyboardInterrupt


def _counting(monkeypatch, index: int) -> list:
    """Count the calls of ``direct.exp_kernels()[index]`` (0: tiled, 2: hardmax)."""
    kernels = list(direct.exp_kernels())
    calls, inner = [], kernels[index]

    def spy(*args):
        calls.append(args[0].shape[0])
        return inner(*args)

    kernels[index] = spy
    monkeypatch.setattr(direct, "_kernels", tuple(kernels))
    return calls


@pytest.fixture
def tokens():
    return np.random.default_rng(7).standard_normal((2000, 3))


def test_direct_sums_stop_between_compiled_calls(monkeypatch, tokens):
    full = direct.exp_kernel_sums(tokens, tokens, 2.0, backend="numba")
    monkeypatch.setattr(direct, "CALL_TERMS", 64 * 2000 * 4)  # 64 rows a call: 32 calls
    calls = _counting(monkeypatch, 0)
    chunked = direct.exp_kernel_sums(tokens, tokens, 2.0, backend="numba")
    assert calls == [64] * 31 + [2000 - 31 * 64]
    assert all(np.array_equal(a, b) for a, b in zip(full, chunked))  # the same bits
    calls.clear()
    signals = RaisingSignals()
    with pytest.raises(KeyboardInterrupt):
        direct.exp_kernel_sums(tokens, tokens, 2.0, backend="numba", check=signals.check)
    assert calls == [64] and signals.checks == 1  # stopped after the first call


def test_hardmax_stops_between_compiled_calls(monkeypatch, tokens):
    full = direct.hardmax_means(tokens, backend="numba")
    monkeypatch.setattr(direct, "CALL_TERMS", 64 * 2000 * 4)
    calls = _counting(monkeypatch, 2)
    assert np.array_equal(direct.hardmax_means(tokens, backend="numba"), full)
    assert len(calls) == 32
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        direct.hardmax_means(tokens, backend="numba", check=RaisingSignals().check)
    assert calls == [64]


def test_the_blas_backend_checks_between_blocks(monkeypatch, tokens):
    monkeypatch.setattr(direct, "BLAS_BLOCK_ELEMENTS", 100 * 2000)  # 100 rows a block
    signals = RaisingSignals()
    with pytest.raises(KeyboardInterrupt):
        direct.exp_kernel_sums(tokens, tokens, 2.0, backend="blas", check=signals.check)
    assert signals.checks == 1


def test_the_gaussian_study_attention_stops_between_calls(monkeypatch, tokens):
    w = tokens[:, :2].copy()
    full = gc.attention_average(tokens, tokens, w)
    monkeypatch.setattr(direct, "CALL_TERMS", 64 * 2000 * 6)  # (d + e + 1 = 6 terms)
    calls, inner = [], gc._numba_kernel()
    monkeypatch.setitem(gc._KERNELS, "attention",
                        lambda q, *a: (calls.append(q.shape[0]), inner(q, *a)))
    assert np.array_equal(gc.attention_average(tokens, tokens, w), full)
    assert len(calls) == 32
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        gc.attention_average(tokens, tokens, w, check=RaisingSignals().check)
    assert calls == [64]


def test_a_real_sigint_noted_during_the_sums_is_raised_after_one_call(monkeypatch, tokens):
    monkeypatch.setattr(direct, "CALL_TERMS", 64 * 2000 * 4)
    calls = _counting(monkeypatch, 0)
    with pytest.raises(KeyboardInterrupt):
        with DeferredSignals() as signals:
            signal.raise_signal(signal.SIGINT)  # noted, not raised
            direct.exp_kernel_sums(tokens, tokens, 2.0, backend="numba",
                                   check=signals.check)
    assert calls == [64]


def test_arc_evaluation_is_chunked_with_the_same_bits(monkeypatch):
    theta = np.random.default_rng(3).uniform(0, 2 * np.pi, 3000)
    y = np.c_[np.cos(theta), np.sin(theta)]
    plan = arcs.arc_plan(9.0, 1e-10)
    full = arcs.arc_kernel_sums(y, y, plan)
    monkeypatch.setattr(arcs, "EVALUATE_ROWS", 256)
    chunked = arcs.arc_kernel_sums(y, y, plan)
    assert all(np.array_equal(a, b) for a, b in zip(full, chunked))


def test_every_chunk_fits_the_call_budget():
    # rows x n x (d + 1) <= CALL_TERMS unless one block of ROWS rows is already more
    for n in (10, 1000, 10**5, 10**6, 10**7):
        for d in (2, 3, 16, 32, 512):
            rows = direct.call_rows(n, d)
            assert rows % direct.ROWS == 0
            assert rows * n * (d + 1) <= direct.CALL_TERMS or rows == direct.ROWS
