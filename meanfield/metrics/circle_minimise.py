"""Certified minimisers of a convex function of the mass shift alpha given its value
and slope (and curvature): the shift cost C(alpha) of ``circle_transport``.
``newton_shift``: Newton on C' from a close start, safeguarded by the bracket of the
slopes' signs; ``minimise_with_slope``: cutting planes and secant steps in a bracket.
Both stop when the value is certified within 8 eps of the minimum by a tangent lower
bound (convexity), or the bracket is at round-off.
"""
from __future__ import annotations

import numpy as np

from meanfield.metrics.circle_atoms import EPS


def newton_shift(fun, alpha: float, estimate: float, maxiter: int = 40,
                  secant: bool = False):
    """Minimum of the convex C from a close start ``alpha``: Newton on C' (``fun(a)`` =
    (C, C', C'')), safeguarded by the bracket of the slopes' signs (bisection when a step
    leaves it). Certified as ``minimise_with_slope``: C(a) - min C <= |C'(a)| |b - a|
    for a bracket [a, b] of the minimiser, required below 8 eps C(a). Once Newton's step
    is well inside delta = 2 eps C / |C'|, the point at delta on the other side is
    evaluated (its slope must change sign), which closes the bracket.
    ``secant``: the slope of C' from the last two points instead of C'' (p = 1, where
    C'' is a sum of jumps and C' only piecewise smooth).
    Returns (value, argmin), or None when not certified in ``maxiter`` passes (the bracket
    is then in ``newton_shift.bracket``)."""
    lo = hi = None  # (a, C, C') with C' < 0, > 0
    best = prev = None
    a = alpha
    for _ in range(maxiter):
        c, s, d2 = fun(a)
        if best is None or c < best[0]:
            best = (c, a)
        if s == 0:
            return c, a
        if s < 0 and (lo is None or a > lo[0]):
            lo = (a, c, s)
        elif s > 0 and (hi is None or a < hi[0]):
            hi = (a, c, s)
        if lo is not None and hi is not None:
            width = hi[0] - lo[0]
            for pt in (lo, hi):  # the certificate of each end of the bracket
                if abs(pt[2]) * width <= 8 * EPS * abs(pt[1]):
                    return pt[1], pt[0]
            if width <= 4 * EPS * (1 + abs(lo[0])):
                return best
        if secant and prev is not None and s != prev[1]:
            d2 = (s - prev[1]) / (a - prev[0])  # C' is only piecewise smooth (p = 1)
        prev = (a, s)
        step = -s / d2 if d2 > 0 and np.isfinite(d2) else np.nan
        delta = 2 * EPS * max(estimate, c) / abs(s)
        if np.isfinite(step) and 2 * abs(step) <= delta:
            nxt = a + np.sign(step) * delta  # close the bracket on the other side
        elif np.isfinite(step):
            nxt = a + step
        else:
            nxt = a - np.sign(s) * 1e-6
        if lo is not None and hi is not None and not lo[0] < nxt < hi[0]:
            nxt = 0.5 * (lo[0] + hi[0])
        elif lo is not None and nxt <= lo[0] or hi is not None and nxt >= hi[0]:
            nxt = a - np.sign(s) * 2 * abs(nxt - a)
        a = nxt
    newton_shift.bracket = (lo[0] if lo else -1.0, hi[0] if hi else 1.0)
    return None



def minimise_with_slope(fun, lo: float = -1.0, hi: float = 1.0, maxiter: int = 200,
                         smooth: bool = False):
    """Minimum of a convex function given (value, subgradient) by cutting planes and
    secant steps in a bracket; returns (value, argmin). Certified: stops when the best
    value is within 8 eps of the tangent lower bound, or the bracket is at round-off.
    ``smooth``: secant steps through the last two points (superlinear on a C^1 function,
    ~6-10 evaluations) instead of alternating with cutting planes (which finish a
    piecewise-linear function exactly)."""
    flo, slo = fun(lo)
    step = hi - lo
    while slo >= 0:  # the bracket grows (doubling) until the slopes enclose 0
        if slo == 0:
            return flo, lo
        hi, fhi, shi = lo, flo, slo
        lo -= step
        step *= 2
        flo, slo = fun(lo)
    fhi, shi = fun(hi) if hi > lo else (fhi, shi)
    while shi < 0:
        lo, flo, slo = hi, fhi, shi
        hi += step
        step *= 2
        fhi, shi = fun(hi)
    best, arg = (flo, lo) if flo <= fhi else (fhi, hi)
    width = hi - lo
    last = [(lo, slo), (hi, shi)]
    for it in range(maxiter):
        xk = (fhi - flo + slo * lo - shi * hi) / (slo - shi)
        lower = flo + slo * (xk - lo)
        if best - lower <= 8 * EPS * abs(best) or hi - lo <= 4 * EPS * (1 + abs(lo)):
            break
        (x1, s1), (x2, s2) = last
        secant = x2 - s2 * (x2 - x1) / (s2 - s1) if s2 != s1 else np.nan
        if it % 3 == 2 and hi - lo > 0.5 * width:
            x = 0.5 * (lo + hi)  # no step has halved the bracket in three: bisect
        elif smooth and lo < secant < hi:
            x = secant
        elif it % 2:
            x = lo - slo * (hi - lo) / (shi - slo)  # secant on the slope
        else:
            x = xk  # cutting plane: exact once one kink is left
        if it % 3 == 2:
            width = hi - lo
        x = min(max(x, lo + 0.25 * EPS * (hi - lo)), hi - 0.25 * EPS * (hi - lo))
        if not lo < x < hi:
            break
        f, s = fun(x)
        last = [last[1], (x, s)]
        if f < best:
            best, arg = f, x
        if s == 0:
            break
        if s < 0:
            lo, flo, slo = x, f, s
        else:
            hi, fhi, shi = x, f, s
    return best, arg
