"""Theorem 5.1 of [GLPR23]: the paranormal split and the distance to (dK u {0}) x G."""
from __future__ import annotations

import numpy as np
import pytest

from meanfield.metrics.paranormal import (
    is_good_triple_with_multiplicity,
    paranormal_split,
    polytope_vertices,
    theorem51_distance,
)
from meanfield.model.particles import simulate
from meanfield.model.weighted_attention import Head
from meanfield.model.weighted_particles import RescaledParticles


def _oblique_value() -> tuple[np.ndarray, np.ndarray]:
    """A non-normal paranormal V = S diag(2, 2, 1, -1) S^-1: F = span(s_1, s_2),
    G = span(s_3, s_4), not orthogonal to F."""
    s = np.array([[1.0, 0.0, 0.5, 0.3], [0.0, 1.0, 0.4, -0.2], [0.0, 0.0, 1.0, 0.6],
                  [0.0, 0.0, 0.0, 1.0]])
    return s @ np.diag([2.0, 2.0, 1.0, -1.0]) @ np.linalg.inv(s), s


def test_split_of_an_oblique_paranormal_value_matrix():
    v, s = _oblique_value()
    split = paranormal_split(v)
    assert split.eigenvalue == pytest.approx(2.0, rel=1e-12)
    assert split.radius_g == pytest.approx(1.0, rel=1e-12)
    # F = span(s_1, s_2) and G = span(s_3, s_4), as subspaces (projectors agree)
    for basis, cols in ((split.f_basis, s[:, :2]), (split.g_basis, s[:, 2:])):
        q, _ = np.linalg.qr(cols)
        np.testing.assert_allclose(basis @ basis.T, q @ q.T, atol=1e-12)
    np.testing.assert_allclose(v @ split.f_basis, 2 * split.f_basis, atol=1e-12)
    np.testing.assert_allclose(split.to_complement.T @ split.g_basis, 0, atol=1e-12)


@pytest.mark.parametrize("value, why", [
    (np.array([[1.0, 1.0], [0.0, 1.0]]), "independent eigenvectors"),  # a Jordan block
    (np.diag([1.0, -1.0]), "modulus below"),                            # |-1| = 1
    (np.array([[0.0, -1.0], [1.0, 0.0]]), "real, positive"),            # +-i
    (np.diag([-2.0, 1.0]), "real, positive"),
])
def test_split_refuses_what_is_not_paranormal(value, why):
    with pytest.raises(ValueError, match=why):
        paranormal_split(value)
    assert not is_good_triple_with_multiplicity(np.eye(2), np.eye(2), value)


def test_good_triple_with_multiplicity_needs_a_positive_definite_query_key():
    v = np.diag([1.0, 1.0, -0.5])
    assert is_good_triple_with_multiplicity(np.eye(3), np.eye(3), v)
    assert not is_good_triple_with_multiplicity(np.eye(3), -np.eye(3), v)


def test_distance_by_hand_for_an_oblique_g():
    """F = R^2 x {0}, G = span((1, 0, 1)) (not orthogonal to F), K the unit square
    [0, 1]^2 in F. The complement of G is spanned by e_2 and (1, 0, -1)/sqrt(2); a point
    z = k + g has the distance of its projection there. Each case by hand."""
    s = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    v = s @ np.diag([1.0, 1.0, 0.5]) @ np.linalg.inv(s)
    square = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    g = np.array([1.0, 0.0, 1.0])
    # P maps the F point (a, b, 0) to (a/sqrt(2), b) in the basis (u, e_2): K becomes
    # [0, 1/sqrt(2)] x [0, 1], and adding any multiple of g changes nothing
    points = np.array([[0.5, 0.4, 0.0] + 7 * g,    # inside: slack 0.5/sqrt(2) < 0.4
                       [1.0, 0.3, 0.0] - 3 * g,    # on the edge a = 1: 0
                       [0.02, 0.01, 0.0] + 2 * g,  # slack 0.01 (edge b = 0), |Pz| 0.017
                       [2.0, 0.5, 0.0]])           # outside: (2 - 1)/sqrt(2) along u
    d = theorem51_distance(points, v, polytope=square)
    expected = [0.5 / np.sqrt(2), 0.0, 0.01, 1.0 / np.sqrt(2)]
    np.testing.assert_allclose(d, expected, atol=1e-7)


def test_theorem_51_every_token_ends_near_the_limit_set():
    """Acceptance (issue 27, item 5): [GLPR23, Figure 8], V = diag(1, 1, -1/2),
    Q = K = I, n = 40 tokens from N(0, I) (seed 0), rescaled to t = 15.

    Here F = span(e_1, e_2) (V = 1 there), G = span(e_3) (V = -1/2, spectral radius 1/2 <
    1), and K is the convex hull in F of the tokens' first two coordinates at t = 15 (the
    F parts move by convex combinations, so their hull shrinks to K). Every token must be
    within 1e-3 of (dK u {0}) x G: measured 1.1e-6. Once P is Boolean each token follows
    its leader at the rate lambda = 1 of V on F, so the distance decays like e^(-t):
    fitted 1.0000 on t in [7.5, 15] (asserted within 2%). Along G the tokens diverge (up
    to |z_3| ~ 3e3, like e^(t/2))."""
    v = np.diag([1.0, 1.0, -0.5])
    z0 = np.random.default_rng(0).standard_normal((40, 3))
    run = simulate(RescaledParticles(Head(np.eye(3), np.eye(3), v)), z0,
                   np.linspace(0.0, 15.0, 31)[1:], dt=None, tolerance=1e-10)
    distance = np.array([theorem51_distance(z, v).max() for z in run.positions])
    assert distance[-1] < 1e-3
    late = run.times >= 7.5
    rate = -np.polyfit(run.times[late], np.log(distance[late]), 1)[0]
    assert abs(rate - 1.0) < 0.02
    assert np.abs(run.positions[-1][:, 2]).max() > 100  # G: free and diverging
    # K has a few vertices (far fewer than 40 tokens), each a cluster of tokens
    assert 3 <= polytope_vertices(run.positions[-1], v, tolerance=1e-3).size <= 8
