"""The kernel multipliers and truncation orders of the fast interaction sums
(meanfield.model.kernels) against the exact kernel: the truncation rules meet the accuracy
and are minimal; the issue's rules are conservative."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from meanfield.model import kernels as kn


# ---------------------------------------------------------------------------------------
# Truncation rules against the exact kernel (no transforms involved).

def circle_truncation_error(beta, order):
    """max over angles of |e^{beta (cos phi - 1)} - sum_{|k|<=K} I_k e^{-beta} e^{ik phi}|."""
    phi = np.linspace(0, np.pi, 2001)
    k = np.arange(1, order + 1)
    series = special.ive(0, beta) + 2 * np.cos(np.outer(phi, k)) @ special.ive(k, beta)
    return np.abs(series - np.exp(beta * (np.cos(phi) - 1))).max()


def sphere_truncation_error(beta, order):
    """max over t of the kernel, radial and tangent parts' truncation errors (units e^beta):
    e^{b(t-1)} = sum (2l+1) i_l P_l(t), t e^{b(t-1)} = sum (2l+1) i_l' P_l(t),
    sqrt(1-t^2) e^{b(t-1)} = sqrt(1-t^2) sum (2l+1) (i_l/b) P_l'(t)."""
    t = np.linspace(-1, 1, 2001)
    k, dk, g = (f / (4 * np.pi) for f in kn.sphere_multipliers(order, beta))
    p_prev, p = np.ones_like(t), t.copy()
    dp_prev, dp = np.zeros_like(t), np.ones_like(t)
    kern, rad, tan = k[0] * p_prev, dk[0] * p_prev, np.zeros_like(t)
    for ell in range(1, order + 1):
        w = 2 * ell + 1
        kern += w * k[ell] * p
        rad += w * dk[ell] * p
        tan += w * g[ell] * dp
        p_prev, p = p, (w * t * p - ell * p_prev) / (ell + 1)
        dp_prev, dp = dp, dp_prev + w * p_prev  # P'_{l+1} = P'_{l-1} + (2l+1) P_l
    e = np.exp(beta * (t - 1))
    return max(np.abs(kern - e).max(), np.abs(rad - t * e).max(),
               np.abs((tan - e) * np.sqrt(1 - t * t)).max())


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("beta", [0.5, 5.0, 20.0, 100.0])
def test_truncation_orders_meet_the_accuracy_and_are_minimal(d, beta):
    error = circle_truncation_error if d == 2 else sphere_truncation_error
    previous = None
    for accuracy in (1e-6, 1e-10, 1e-13):
        order = kn.fast_order(d, beta, accuracy)
        err = error(beta, order)
        assert err <= accuracy / 2 + 1e-15
        # The bound is what decides: one order less breaks it.
        assert kn.fast_tails(d, beta)[order - 1] > accuracy / 2 or order == d - 2
        if previous is not None:
            assert order >= previous
        previous = order
    # Convergence: the error falls as the order grows.
    errs = [error(beta, o) for o in range(max(1, previous - 12), previous + 1, 3)]
    assert all(b < a for a, b in zip(errs, errs[1:]) if a > 1e-14)


def test_issue_rules_are_conservative():
    for beta in (0.1, 1.0, 5.0, 20.0, 100.0, 1000.0):
        k_issue = int(beta + 10 * math.sqrt(beta) + 20)
        l_issue = int(beta + 25)
        assert kn.fast_tails(2, beta)[k_issue] <= 1e-14
        assert kn.fast_tails(3, beta)[l_issue] <= 1e-13
        assert kn.fast_order(2, beta, 2e-14) < k_issue
        assert kn.fast_order(3, beta, 2e-13) <= l_issue
