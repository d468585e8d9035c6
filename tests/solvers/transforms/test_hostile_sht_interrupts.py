"""Issue 31, "every compiled loop that can run for more than a second interruptible": the
numba backend's Legendre sums (``sht.LegendreTransforms``; seconds a transform at L =
2047) run in rounds of at most ``ROUND_WORK`` recurrence steps, a Ctrl-C taken between
rounds. Each order's sums are its own, so the rounds change no bit."""
from __future__ import annotations

import signal

import numpy as np
import pytest

from solvers.grids.sphere import SphereGrid
from solvers.transforms import sht


@pytest.fixture(scope="module")
def alm():
    lmax = 47
    rng = np.random.default_rng(3)
    a = rng.standard_normal(sht.alm_size(lmax)) + 1j * rng.standard_normal(sht.alm_size(lmax))
    a[: lmax + 1] = a[: lmax + 1].real  # m = 0: real
    return a


@pytest.mark.parametrize("threads", [1, 2])
def test_rounds_change_no_bit(monkeypatch, alm, threads):
    grid = SphereGrid(47, threads=threads, backend="numpy")
    whole_field = grid.synthesis(alm)
    whole_alm = grid.analysis(whole_field)
    rounds = []
    real = sht.LegendreTransforms._round
    monkeypatch.setattr(sht.LegendreTransforms, "_round",
                        lambda self, *a: rounds.append(1) or real(self, *a))
    monkeypatch.setattr(sht, "ROUND_WORK", 500)  # many rounds
    field = grid.synthesis(alm)
    assert len(rounds) > 10
    np.testing.assert_array_equal(field, whole_field)
    np.testing.assert_array_equal(grid.analysis(field), whole_alm)


def test_a_sigint_stops_the_transform_between_rounds(monkeypatch, alm):
    grid = SphereGrid(47, threads=1, backend="numpy")
    grid.synthesis(alm)  # (tables made, kernels compiled)
    rounds = []
    real = sht.LegendreTransforms._round

    def spy(self, *args):
        rounds.append(1)
        if len(rounds) == 1:
            signal.raise_signal(signal.SIGINT)  # noted, raised after this round
        return real(self, *args)

    monkeypatch.setattr(sht.LegendreTransforms, "_round", spy)
    monkeypatch.setattr(sht, "ROUND_WORK", 500)
    with pytest.raises(KeyboardInterrupt):
        grid.synthesis(alm)
    assert len(rounds) == 1  # the first round finished, no other began
