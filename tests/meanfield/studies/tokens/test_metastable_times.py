"""``metastable_times``: the tight time T_1 on clusters that contract exactly, the
tokens' merge located inside a bracket against the exact two-token time, and the
relative gap of a duration to a bracket."""
from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield.model.ensemble import simulate_ensemble
from meanfield.model.particles import AttentionParticles
from meanfield.studies.tokens import metastable_times as mt
from meanfield.studies.tokens.metastability_theory import cluster_labels, pairing_times


def _two_pairs(t: float, delta0: float, phi: float) -> np.ndarray:
    """Two clusters of two tokens at 0 and phi, each token at chord delta0 e^{-t} from
    its cluster's mean (angles c +- a with 2 sin(a/2) = delta0 e^{-t})."""
    a = 2 * math.asin(delta0 * math.exp(-t) / 2)
    angles = [-a, a, phi - a, phi + a]
    return np.array([[math.cos(u), math.sin(u)] for u in angles])


def test_tight_time_of_exactly_contracting_clusters():
    """log spread = log delta0 - t is linear in t, so the interpolated crossing of
    e^{-beta(1 - cos phi)} is exact: T_1 = log delta0 + beta(1 - cos phi) (1e-12), with
    the exponent returned; NaN when the clusters are not tight by ``until``."""
    delta0, phi, beta = 0.2, 0.7, 20.0
    times = np.linspace(0.0, 12.0, 13)
    states = np.stack([_two_pairs(t, delta0, phi) for t in times])
    labels = np.array([0, 0, 1, 1])
    t1, exponent = mt.tight_time(states, times, labels, beta, times.size - 1)
    assert exponent == pytest.approx(beta * (1 - math.cos(phi)), rel=1e-12)
    assert t1 == pytest.approx(math.log(delta0) + exponent, rel=1e-12)
    assert all(map(math.isnan, mt.tight_time(states, times, labels, beta, 3)))
    # tight at the first state: T_1 is its time
    assert mt.tight_time(states[8:], times[8:], labels, beta, 4)[0] == times[8]


def test_merge_bracket_holds_the_exact_two_token_time():
    """Two SA tokens on S^1 at angle 1.2, beta = 6: they come within chord 1e-2 at the
    exact two-cluster time (quadrature); from a coarse bracket around it the located one
    is 32 times narrower and still holds it."""
    beta, phi0, thr = 6.0, 1.2, 1e-2
    exact = pairing_times(beta, phi0, 0.5, 0.5, thr)[1]
    model = AttentionParticles(beta, True)

    def simulate(x, sub):
        return simulate_ensemble(model, x, sub, tolerance=1e-10).states

    lo, hi = 0.93 * exact, 1.05 * exact
    x_lo = simulate(np.array([[[1.0, 0.0], [math.cos(phi0), math.sin(phi0)]]]),
                    [lo])[-1, 0]
    a, b = mt.merge_bracket(simulate, x_lo, lo, hi, 1,
                            lambda y: int(cluster_labels(y, thr).max()) + 1)
    assert b - a == pytest.approx((hi - lo) / mt.REFINE)
    assert a < exact <= b


def test_relative_gap_is_the_worst_case_over_the_bracket():
    assert mt.relative_gap(10.0, 9.0, 11.0) == pytest.approx(max(1 / 9, 1 / 11))
    assert mt.relative_gap(12.0, 9.0, 11.0) == pytest.approx(3 / 9)
    assert mt.relative_gap(1.0, 0.0, 1.0) == math.inf
