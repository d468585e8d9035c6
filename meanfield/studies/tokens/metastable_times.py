"""The metastable times as [GKPR24] mean them: ``T_1`` when the clusters are tight, and
the tokens' merge times located inside their brackets of saves (issue 28, acceptance 2).

**T_1, the time the clusters become tight** (``tight_time``). [Rig25, §5.1] states that
tokens from k well-separated groups collapse within each group during ``[0, T_1]``,
``T_1 ~ beta``, and stay near a k-cluster configuration on ``[T_1, T_2]``, ``log T_2 ~
beta`` [GKPR24]. The count of clusters at a fixed chord (the first plateau) cannot see
``T_1 ~ beta``: a cap of tokens falls below any fixed chord after a time independent of
beta. What grows with beta is the time until the clusters are tight on the scale of
their mutual attention, where the motion inside a cluster is no faster than the motion
between clusters. With the partition of the first plateau, ``delta(t)`` the largest
chordal distance of a token from its cluster's normalised mean and ``phi(t)`` the
smallest angle between two cluster means, the clusters are *tight* when

    delta(t) <= e^{-beta (1 - cos phi(t))},

the factor by which SA weights a cluster at angle ``phi`` against a token's own one.
``T_1`` is the first time this holds, ``log delta - log e^{...}`` interpolated linearly
in t between the two saves around the crossing (``delta`` decays exponentially).

Prediction. Inside a collapsed cluster SA is ``theta_i' = sum_j w_ij sin(theta_j -
theta_i)`` with nearly equal weights ``w_ij``: ``delta`` decays at rate 1 whatever beta
(USA: at rate ``m e^beta``, m the cluster's token fraction). So for SA ``T_1 = beta(1 -
cos phi) + log delta(0) + O(1)``: along beta the slope of ``T_1`` is that of ``beta (1
- cos phi)`` (``tight_exponent``), 0.122 for caps 0.5 rad apart, and about 0 from uniform
starts, whose first-plateau gaps shrink like ``1/sqrt(beta)``.

**The tokens' merge times** (``merge_bracket``). The saves bracket a merge within a
factor ``t_{q}/t_{q-1}`` of the time, which is not fine enough to compare durations
since ``T_1`` within 10 %. The tokens are integrated again from the save before the
merge over its bracket with ``REFINE`` sub-saves (the same engine and tolerance; the flow
is autonomous): the first sub-save with the lower count gives a bracket ``REFINE``
times narrower. ``relative_gap`` is then the largest relative difference between a
duration of the reduced model and any duration in the tokens' bracket: a bound, not an
estimate.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

REFINE = 32  # sub-saves that locate a merge inside its bracket of saves


def _spread_and_gap(x: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """``(delta, cos phi)``: the largest chord from a token to its cluster's normalised
    mean, and the largest cosine between two means (-1 for a single cluster)."""
    k = int(labels.max()) + 1
    c = np.zeros((k, x.shape[1]))
    np.add.at(c, labels, x)
    c /= np.linalg.norm(c, axis=1)[:, None]
    delta = float(np.max(np.linalg.norm(x - c[labels], axis=1)))
    if k == 1:
        return delta, -1.0
    g = np.minimum(c @ c.T, 1.0)
    np.fill_diagonal(g, -1.0)
    return delta, float(g.max())


def tight_time(states: np.ndarray, times: np.ndarray, labels: np.ndarray, beta: float,
               until: int) -> tuple[float, float]:
    """``(T_1, beta (1 - cos phi))`` at the first time the clusters of ``labels`` are
    tight (module docstring), searched over ``states[:until + 1]``.

    Args:
        states: ``(T, n, d)`` tokens at ``times`` (increasing; ``times[0]`` may be 0).
        labels: the first plateau's cluster of each token (two clusters or more).
        until: the last index searched (the save before the plateau ends).

    Returns:
        NaNs when the clusters are not tight by ``times[until]``; ``T_1 = times[0]`` when
        they are at the first state.
    """
    previous = None
    for q in range(min(until, len(times) - 1) + 1):
        delta, cos = _spread_and_gap(states[q], labels)
        exponent = beta * (1.0 - cos)
        r = math.log(max(delta, 1e-300)) + exponent  # <= 0: tight
        if r <= 0:
            if previous is None:
                return float(times[q]), exponent
            t0, r0 = previous
            return float(t0 + (times[q] - t0) * r0 / (r0 - r)), exponent
        previous = (float(times[q]), r)
    return math.nan, math.nan


def merge_bracket(simulate: Callable, x: np.ndarray, lo: float, hi: float, level: int,
                  count: Callable) -> tuple[float, float]:
    """The bracket ``(lo', hi']`` of the first time the tokens fall to ``level`` clusters
    or fewer, ``REFINE`` times narrower than ``(lo, hi]``.

    Args:
        simulate: ``(x (1, n, d), times > 0) -> states (T + 1, 1, n, d)`` from time 0.
        x: ``(n, d)`` the tokens at time ``lo``, with more than ``level`` clusters.
        count: tokens -> their number of clusters.

    Returns:
        ``(lo, hi)`` unchanged where the integration again does not reach ``level`` by
        ``hi`` (the merge then lies at the bracket's end, within the step's tolerance).
    """
    sub = (hi - lo) * np.arange(1, REFINE + 1) / REFINE
    states = simulate(x[None], sub)[1:, 0]
    for k in range(REFINE):
        if count(states[k]) <= level:
            return lo + (float(sub[k - 1]) if k else 0.0), lo + float(sub[k])
    return lo, hi


def relative_gap(duration: float, lo: float, hi: float) -> float:
    """The largest ``|duration - tau| / tau`` over ``tau`` in ``(lo, hi]`` (``lo > 0``;
    inf otherwise)."""
    if lo <= 0:
        return math.inf
    return max(abs(duration - lo) / lo, abs(duration - hi) / hi)


def predicted_slope(beta: np.ndarray, exponent: np.ndarray, normalized: bool) -> float:
    """The slope along beta of ``beta (1 - cos phi)`` at ``T_1`` (beta, system): ``T_1``'s
    slope predicted for SA (rate-1 contraction); NaN for USA (``T_1`` is not linear in
    beta there: the contraction rate is ``m e^beta``)."""
    ok = np.isfinite(exponent)
    if not normalized or np.unique(np.broadcast_to(beta[:, None], exponent.shape)[ok]
                                   ).size < 2:
        return math.nan
    b = np.broadcast_to(beta[:, None], exponent.shape)[ok]
    return float(np.polyfit(b, exponent[ok], 1)[0])
