"""The resolution a spectral solution needs, read from its spectrum.

A spectral entry gives ``mode_amplitudes(state)``: for each mode (circle: |k|; sphere and
zonal: the degree l) a bound of what it adds to the max norm of the density (circle
``2|c_k|``; sphere ``sqrt((2l + 1)/4 pi) |a_l.|_2``, the addition theorem; zonal ``|c_l|``
times the largest ``|Q_l|`` at the nodes that carry mass). From them:

- ``tail``: the sum over the top eighth of the modes carried, relative to the largest
  density: what the solution holds where the grid ends. A resolved solution's
  coefficients decay exponentially, so the modes beyond the grid carry about as much as
  the last ones do: this is the measure ``discretization.accuracy`` bounds;
- ``modes_for``: the number of modes at which the tail falls to a target, extrapolated
  from the decay rate of the spectrum's envelope over the upper half of the modes (a
  flat spectrum, nothing to extrapolate: twice the modes);
- ``initial_modes``: the modes that carry an initial density to a target, from its exact
  spectrum (computed at a fine probe resolution).
"""
from __future__ import annotations

import math

import numpy as np

TAIL_FRACTION = 1 / 8  # the top eighth of the modes carried
# a decay rate below this (per mode) is taken as no decay: the spectrum is flat
MIN_RATE = 1e-3


def band(count: int) -> int:
    """How many of the top modes make up the tail (at least 2)."""
    return max(2, math.ceil(count * TAIL_FRACTION))


def tail(amplitudes: np.ndarray, scale: float) -> float:
    """The sum of the top eighth of ``amplitudes`` (modes 0..K), relative to ``scale``
    (the largest density)."""
    a = np.asarray(amplitudes, dtype=float)
    return float(a[-band(a.size):].sum() / scale) if scale > 0 else math.inf


def decay_rate(amplitudes: np.ndarray) -> float:
    """The least-squares decay rate per mode of the envelope ``max_{j >= k} a_j`` over
    the upper half of the modes (0 when it does not decay)."""
    a = np.asarray(amplitudes, dtype=float)
    upper = a[a.size // 2:]
    envelope = np.maximum.accumulate(upper[::-1])[::-1]
    positive = envelope > 0
    if positive.sum() < 3:
        return math.inf if not positive.any() else 0.0
    k = np.arange(upper.size)[positive]
    slope = np.polyfit(k, np.log(envelope[positive]), 1)[0]
    return max(0.0, float(-slope))


def modes_for(amplitudes: np.ndarray, scale: float, target: float,
              growth: float = 4.0) -> int:
    """The number of modes (0..K* carried: K* + 1) at which the tail of this spectrum
    falls to ``target`` (relative to ``scale``), at least one more than now and at most
    ``growth`` times as many."""
    a = np.asarray(amplitudes, dtype=float)
    count = a.size
    now = tail(a, scale)
    if now <= target:
        return count
    rate = decay_rate(a)
    if rate < MIN_RATE:
        return 2 * count
    extra = math.log(now / target) / rate
    wanted = count + math.ceil(1.1 * extra) + 1  # (10 % margin on the fitted rate)
    return int(min(max(wanted, count + 1), growth * count))


def initial_modes(amplitudes: np.ndarray, scale: float, target: float) -> int:
    """The fewest modes (0..K: K + 1) whose dropped ones carry at most ``target`` of
    ``scale``, from an exact spectrum ``amplitudes`` (modes 0..K_probe)."""
    a = np.asarray(amplitudes, dtype=float)
    beyond = np.concatenate([np.cumsum(a[::-1])[::-1][1:], [0.0]])  # sum over k > K
    ok = np.nonzero(beyond <= target * scale)[0]
    return int(ok[0]) + 1 if ok.size else a.size
