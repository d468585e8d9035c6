"""Issue 31, "every compiled loop that can run for more than a second interruptible":
the certified auction of ``sphere_assignment.assignment_w2`` (0.5-2 s at n = 1e4, 4-12 s
at n = 3e4 in one compiled call before) runs in calls of at most ``AUCTION_WORK``
candidate looks, its state kept in arrays, so that a Ctrl-C is raised between calls. It
resumes the same Gauss-Seidel bid sequence: the chunked value is the one-call value bit
for bit (asserted with ==, and against scipy's dense assignment in
``test_sphere_assignment.py``)."""
from __future__ import annotations

import signal

import numpy as np
import pytest

from meanfield.metrics import sphere_assignment as sa


@pytest.fixture(scope="module")
def points():
    rng = np.random.default_rng(2000)
    v = rng.normal(size=(6000, 3))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v[:2000], v[2000:]  # n = 2000 tokens, M = 4000 atoms (k = 2)


def _spy(monkeypatch, interrupt: bool) -> tuple[list, list]:
    """The compiled auction wrapped: (calls started, calls completed); ``interrupt``: the
    first call raises a real SIGINT before it runs the kernel."""
    auction, violations = sa._kernels()
    started, completed = [], []

    def spy(*args):
        started.append(1)
        if interrupt and len(started) == 1:
            signal.raise_signal(signal.SIGINT)
        status = auction(*args)
        completed.append(status)
        return status

    monkeypatch.setattr(sa, "_KERNELS", (spy, violations))
    return started, completed


def test_the_chunked_auction_has_the_bits_of_one_call(monkeypatch, points):
    x, y = points
    monkeypatch.setattr(sa, "AUCTION_WORK", 1 << 62)  # one call a phase run
    started, completed = _spy(monkeypatch, False)
    whole = sa.assignment_w2(x, y, info=(info_whole := {}))
    assert 2 not in completed  # never paused
    monkeypatch.setattr(sa, "AUCTION_WORK", 5000)  # ~100 bids a call
    started.clear(), completed.clear()
    chunked = sa.assignment_w2(x, y, info=(info_chunked := {}))
    assert len(started) > 50 and completed.count(2) == len(started) - info_chunked[
        "rounds"] - 1  # paused in every call but the last of each auction
    assert chunked == whole and info_chunked == info_whole


def test_a_sigint_during_the_auction_stops_it_after_that_call(monkeypatch, points):
    x, y = points
    monkeypatch.setattr(sa, "AUCTION_WORK", 5000)
    started, completed = _spy(monkeypatch, True)
    handler = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        sa.assignment_w2(x, y)
    assert started == [1] and completed == [2]  # the call ran to its pause, no other
    assert signal.getsignal(signal.SIGINT) is handler


def test_a_given_check_runs_between_calls(monkeypatch, points):
    x, y = points
    monkeypatch.setattr(sa, "AUCTION_WORK", 5000)
    started, _ = _spy(monkeypatch, False)

    def check():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sa.assignment_w2(x, y, check=check)
    assert started == [1]


def test_the_longitude_inversion_in_many_calls_has_the_same_bits(monkeypatch):
    # the reference atoms' longitudes (sphere_quantize): a row's Newton solve depends on
    # its row only; 2e5 rows at L = 65 were one compiled call of 0.75 s
    from meanfield.metrics import sphere_quantize as sq

    rng = np.random.default_rng(6)
    a = 0.01 * rng.standard_normal((5000, 12))
    a[:, 0] = 1.0
    b = 0.01 * rng.standard_normal((5000, 12))
    v = rng.uniform(0, 1, 5000)
    whole = sq._longitude_kernel()(a, b, v)
    monkeypatch.setattr(sq, "LONGITUDE_ROWS", 333)
    assert np.array_equal(sq._longitudes(a, b, v), whole)
