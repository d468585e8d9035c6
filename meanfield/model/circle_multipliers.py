"""The circle's kernel multipliers of a new beta, compiled: what ``CircleModel.set_parameters``
takes instead of scipy's ``ive`` (see ``meanfield.model.kernels``, which holds every other
multiplier and the same formulas: ``s_k = 2 pi ive(k, beta)``, ``g_k = s_k / beta``)."""
from __future__ import annotations

import functools
import math

import numba
import numpy as np


def make_scaled_bessel():
    """Compile ``scaled_bessel(beta, out)``: ``out[k] = e^{-beta} I_k(beta)``, k = 0..len-1.

    Miller's backward recurrence ``I_{k-1} = (2k/beta) I_k + I_{k+1}`` from above the last
    order and the turning point ``k ~ beta`` (where the recurrence is stable for the
    decaying solution ``I_k``), normalised by ``e^{-beta} (I_0 + 2 sum_{k>=1} I_k) = 1``.
    The start: ``top = beta + 30 + 10 sqrt(beta + 1)``, past the turning point, where the
    normalising sum has converged and ``I_top/I_0 < 1e-56`` (checked for 1e-8 <= beta <=
    700): the orders above it are returned as 0 (below round-off in any product), those
    below it to a few ulps (the error of the start decays like ``(I_top/I_k)^2``).
    All orders in O(beta) operations, a few ulps from scipy's ``ive``
    (``tests/meanfield/discretizations/test_residual.py``): the multipliers of a new
    beta in a microsecond, where ``ive`` takes 0.1 microsecond per order. Needs beta > 0.
    """

    @numba.njit(cache=True)
    def scaled_bessel(beta, out):
        kmax = out.shape[0] - 1
        # Past the turning point, I_top / I_0 < 1e-56 for every beta (1e-8 .. 700): such
        # orders are zero to round-off in any product, so they are set to zero and the
        # recurrence starts at top whatever kmax (a third of the steps at n = 256).
        top = int(beta + 30.0 + 10.0 * math.sqrt(beta + 1.0))
        for k in range(top + 1, kmax + 1):
            out[k] = 0.0
        upper = 0.0
        cur = 1.0
        total = 0.0
        for k in range(top, 0, -1):
            if k <= kmax:
                out[k] = cur
            total += 2.0 * cur
            lower = (2.0 * k / beta) * cur + upper
            upper = cur
            cur = lower
            if cur > 1e250:  # rescale what is stored: the orders above k underflow
                cur *= 1e-250
                upper *= 1e-250
                total *= 1e-250
                for j in range(k, min(kmax, top) + 1):
                    out[j] *= 1e-250
        total += cur
        out[0] = cur
        for j in range(min(kmax, top) + 1):
            out[j] /= total

    return scaled_bessel


scaled_bessel_kernel = functools.cache(make_scaled_bessel)


def make_circle_multipliers():
    """Compile ``multipliers(beta, scale, nyquist, tolerance, ive, s, g, ikg) -> ok``:
    ``ive[k] = e^{-beta} I_k(beta)`` by ``make_scaled_bessel``'s recurrence, then ``s = 2 pi
    ive``, ``g = s/beta`` (``g_0 = 0``) and ``ikg = i k g scale`` in place, the Nyquist
    entries zero if ``nyquist``; ``ok`` is ``required_resolution``'s test, ``ive[kmax] <=
    tolerance ive[1]``. One call, where numpy takes a microsecond per operation on 129
    modes and scipy's ive a microsecond per 8 orders. Needs beta > 0 and kmax >= 2."""
    scaled_bessel = scaled_bessel_kernel()

    @numba.njit(cache=True)
    def multipliers(beta, scale, nyquist, tolerance, ive, s, g, ikg):
        scaled_bessel(beta, ive)
        n = ive.shape[0]
        inverse = 1.0 / beta  # (a product per order instead of a division: ulps only)
        for k in range(n):
            sk = 2 * np.pi * ive[k]
            gk = sk * inverse if k > 0 else 0.0
            if nyquist and k == n - 1:
                sk = 0.0
                gk = 0.0
            s[k] = sk
            g[k] = gk
            ikg[k] = complex(0.0, k * gk * scale)
        return ive[n - 1] <= tolerance * ive[1]

    return multipliers


circle_multipliers_kernel = functools.cache(make_circle_multipliers)
