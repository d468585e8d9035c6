"""Open hemispheres (issue 28, item 5): the linear program against Wendel's probability
[GLPR25, Theorem 6.7], against the gap rule on the circle (an independent method), on
configurations whose answer is known (the octahedron, one open cap, a great circle), and
the cone collapse of [GLPR25, Lemma 6.4] at the rates of the linearisation at one cluster;
the share in the phase diagram's dataset."""
from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield.errors import ConfigError
from meanfield.metrics.hemisphere import (
    cone_rate,
    hemisphere_margin,
    hemisphere_share,
    in_hemisphere,
    wendel_probability,
)
from meanfield.model.particles import AttentionParticles, simulate


def _uniform(rng, *shape):
    x = rng.standard_normal(shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def test_wendel_formula_values():
    """p(n, d) = 2^{1-n} sum_{k<d} C(n-1, k): 1 for n <= d, 1 - 2^{-d} for n = d + 1, 1/2
    for n = 2d (the binomial's halves), n/2^{n-1} on the circle."""
    assert wendel_probability(3, 3) == 1.0 and wendel_probability(1, 2) == 1.0
    for d in (2, 3, 7):
        assert wendel_probability(d + 1, d) == pytest.approx(1 - 2.0**-d, abs=1e-15)
        assert wendel_probability(2 * d, d) == pytest.approx(0.5, abs=1e-15)
    assert wendel_probability(10, 2) == pytest.approx(10 / 2**9, abs=1e-15)
    assert wendel_probability(10, 3) == pytest.approx(46 / 512, abs=1e-15)


def test_wendel_share_of_ten_uniform_points_on_the_sphere():
    """Acceptance 5: of 1500 starts of n = 10 i.i.d. uniform points on S^2 (seed 28),
    the share inside an open hemisphere is Wendel's 46/512 = 0.0898 within three standard
    errors sqrt(p(1 - p)/1500) = 3 x 0.0074 (measured 0.0900: 0.02 standard errors)."""
    systems = 1500
    inside = hemisphere_share(_uniform(np.random.default_rng(28), systems, 10, 3))
    p = wendel_probability(10, 3)
    assert abs(inside.mean() - p) <= 3 * math.sqrt(p * (1 - p) / systems)


def test_octahedron_is_in_no_open_hemisphere_and_one_cap_is():
    """The vertices +-e_k: every w has <w, x> <= 0 at one of them (margin 0). Six points
    of the open cap <x, a> > 0.05 about a random axis a: inside, with a witness w whose
    margin is positive. Six points on a great circle: in a closed hemisphere only."""
    octahedron = np.vstack([np.eye(3), -np.eye(3)])
    assert not in_hemisphere(octahedron)
    assert hemisphere_margin(octahedron)[0] == 0.0
    rng = np.random.default_rng(3)
    axis = _uniform(rng, 3)
    cap = []
    while len(cap) < 6:
        x = _uniform(rng, 3)
        if x @ axis > 0.05:
            cap.append(x)
    cap = np.array(cap)
    assert in_hemisphere(cap)
    margin, w = hemisphere_margin(cap)
    assert margin > 0.05 - 1e-12 and np.min(cap @ w) == pytest.approx(margin, abs=1e-14)
    # the cap that is barely open: 6 points at polar angle 89.9 degrees still count
    phi = np.linspace(0, 2 * np.pi, 6, endpoint=False)
    t = math.radians(89.9)
    rim = np.column_stack([math.sin(t) * np.cos(phi), math.sin(t) * np.sin(phi),
                           np.full(6, math.cos(t))])
    assert in_hemisphere(rim)
    equator = rim.copy()
    equator[:, 2] = 0.0
    equator /= np.linalg.norm(equator, axis=1, keepdims=True)
    assert not in_hemisphere(equator)


def test_circle_agrees_with_the_gap_rule():
    """On S^1, points lie in an open half-circle iff the largest gap between consecutive
    angles exceeds pi: the program agrees on 400 random sets of 2..7 points (clustered and
    spread), and the share of n = 5 matches Wendel's 5/16."""
    rng = np.random.default_rng(1)
    for k in range(400):
        n = 2 + k % 6
        theta = rng.uniform(0, 2 * np.pi, n) * (0.6 if k % 3 == 0 else 1.0)
        s = np.sort(theta)
        gap = np.max(np.diff(np.append(s, s[0] + 2 * np.pi)))
        points = np.column_stack([np.cos(theta), np.sin(theta)])
        assert in_hemisphere(points) == (gap > np.pi)


def test_bad_points_are_refused():
    with pytest.raises(ConfigError, match="points"):
        in_hemisphere(np.zeros(3))
    with pytest.raises(ConfigError, match="finite"):
        in_hemisphere(np.array([[1.0, np.nan]]))
    with pytest.raises(ConfigError, match="n, d >= 1"):
        wendel_probability(0, 3)


@pytest.mark.parametrize("normalized", [True, False])
def test_a_start_in_a_hemisphere_collapses_at_the_predicted_rate(normalized):
    """[GLPR25, Lemma 6.4]: six tokens in the cap <x, w> > 0.2 of S^2 (beta = 1) stay in
    the hemisphere about w with min_i <w, x_i(t)> non-decreasing, and collapse to one
    point: 1 - min_ij <x_i, x_j> ~ e^{-2 lambda t}, 2 lambda = 2 (SA) and 2 e (USA),
    fitted where the diameter is between 1e-10 and 1e-4 (half the squared chord, without
    cancellation), to 0.1 % (measured 1.999997 and 5.436547 against 5.436564)."""
    rng = np.random.default_rng(6)
    w = np.array([0.0, 0.0, 1.0])
    x0 = []
    while len(x0) < 6:
        x = _uniform(rng, 3)
        if x @ w > 0.2:
            x0.append(x)
    x0 = np.array(x0)
    margin, witness = hemisphere_margin(x0)
    assert margin > 0
    rate = cone_rate(1.0, normalized)
    times = np.linspace(0.05, 16.0 / rate * 2, 200)
    run = simulate(AttentionParticles(1.0, normalized, backend="blas"), x0, times,
                   dt=None, tolerance=1e-12)
    x = run.positions
    lowest = np.min(x @ witness, axis=1)
    assert np.all(np.diff(lowest) >= -1e-12) and lowest[0] > 0
    diff = x[:, :, None, :] - x[:, None, :, :]
    gap = np.max(np.einsum("tijk,tijk->tij", diff, diff), axis=(1, 2)) / 2
    keep = (gap < 1e-4) & (gap > 1e-10)
    assert keep.sum() > 10
    slope = np.polyfit(run.times[keep], np.log(gap[keep]), 1)[0]
    assert -slope == pytest.approx(rate, rel=1e-3)


def test_the_phase_diagram_records_the_share_of_starts_in_a_hemisphere():
    """The phase diagram's hemisphere_share per dim (each system's start once, over
    members that split the systems) against Wendel: n = 4 on S^1 (1/2) and S^2 (7/8),
    400 starts, within three standard errors; d = 4 >= n: every start (probability 1)."""
    from meanfield.studies.tokens.phase_diagram import phase_diagram

    ds = phase_diagram({"particles": {"n": 4, "seed": 2},
                        "phase_diagram": {"dims": [2, 3, 4], "beta": [1.0, 2.0],
                                          "times": [0.0, 0.2], "systems": 400,
                                          "batch": 300}})
    share = ds["hemisphere_share"].values
    for i, d in enumerate((2, 3, 4)):
        p = wendel_probability(4, d)
        assert ds["wendel_probability"].values[i] == p
        assert abs(share[i] - p) <= 3 * math.sqrt(p * (1 - p) / 400) + 1e-15
    assert share[2] == 1.0


@pytest.mark.parametrize("n,d", [(3, 2), (5, 2), (9, 2), (2, 3), (3, 3), (4, 5), (5, 5)])
def test_the_certificates_agree_with_the_program(n, d):
    """The cheap answers (the mean, linear independence, the circle's gap rule) against
    the linear program itself, on random sets where both answers occur."""
    from meanfield.metrics.hemisphere import TOLERANCE, _program_margin

    rng = np.random.default_rng(n * 10 + d)
    answers = set()
    for _ in range(60):
        x = rng.standard_normal((n, d))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        if d == 2 and rng.random() < 0.5:  # (half-circle sets: both answers on S^1)
            x = x * np.sign(x[:, :1] + 1e-300)
        program = _program_margin(x, TOLERANCE)[0] > 0
        assert in_hemisphere(x) == program
        answers.add(program)
    assert answers == {True, False} or n <= d  # (independent points: always inside)


def test_the_batch_equals_one_program_per_system():
    """``hemisphere_share`` (certificates, then one block program for the rest) against
    ``in_hemisphere`` system by system, on starts where every path is taken."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((120, 9, 3))
    x[:40] = np.abs(x[:40]) * np.sign(rng.standard_normal((40, 1, 3)))  # (one octant)
    x /= np.linalg.norm(x, axis=2, keepdims=True)
    share = hemisphere_share(x)
    assert share.any() and not share.all()
    np.testing.assert_array_equal(share, [in_hemisphere(s) for s in x])
