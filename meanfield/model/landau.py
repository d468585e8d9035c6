"""Weakly nonlinear (Landau / Lyapunov-Schmidt) theory of the first bifurcation of the
noisy model: is the branch shed by the uniform density at its first instability (mode
k = 1 on S^1, degree l = 1 on S^2) supercritical or subcritical?

The derivation, with every sign, is in ``docs/bifurcation.md``; in short:

A stationary state has zero probability flux (the velocity is a gradient), so

    rho = Z^-1 exp(kappa Phi)          (USA, Phi = (1/beta) K*rho),
    rho = Z^-1 (K*rho)^(kappa/beta)    (SA,  Psi = (1/beta) log K*rho).

For states symmetric about an axis write ``rho = (1 + sum_k rho_k e_k) / |S|`` with
``e_k = 2 cos k theta`` (S^1) or ``(2l + 1) P_l(cos theta)`` (S^2), so that ``rho_k =
<psi_k>_rho`` with ``psi_k = cos k theta`` or ``P_l``; ``r = rho_1`` is the order
parameter ``|int x d mu|``. Both models read ``rho ∝ exp(kappa phi(w))`` with ``w = sum_k
a_k rho_k e_k`` (``a_k`` of docs/conventions.md) and ``phi(w) = w`` (USA) or ``log(1 + beta
w) / beta`` (SA). Expanding the self-consistency ``rho_k = <psi_k e^{kappa phi(w)}> /
<e^{kappa phi(w)}>`` (uniform averages) to third order in r at ``kappa = kappa_c + kappa_2
r^2``, ``kappa_c = 1/a_1``:

    rho_2 = s r^2,   s = m (p + 1/2) / (1 - q),
    kappa_2 = -kappa_c C,
    C = s M12 q (1 + 2p) + M13 (p3 + p + 1/6) - E (p + 1/2),

with ``q = a_2/a_1`` (the second mode's attraction relative to the first), ``p =
phi''(0) a_1 / 2`` and ``p3 = phi'''(0) a_1^2 / 6`` (USA: 0 and 0; SA: ``-t/2`` and
``t^2/3`` with ``t = I_1/I_0`` on S^1, ``i_1/i_0`` on S^2), and the uniform moments

    S^1: M12 = <psi_1 e_1 e_2> = 1,  M13 = <psi_1 e_1^3> = 3,    E = <e_1^2> = 2,  m = <psi_2 e_1^2> = 1;
    S^2: M12 = 2,                    M13 = 27/5,                 E = 3,            m = 6/5.

``kappa_2 > 0``: the branch bends forward (supercritical, continuous transition);
``kappa_2 < 0``: it bends back (subcritical: a fold below ``kappa_c``, first order,
hysteresis). USA on S^1: ``kappa_2 = kappa_c (1 - 2q) / (2 (1 - q))`` with ``q =
I_2(beta)/I_1(beta)``, which changes sign at ``q = 1/2``; on S^2 ``kappa_2 = (3 kappa_c /
5) (1 - 3q) / (1 - q)`` with ``q = i_2/i_1``, sign change at ``q = 1/3``. At beta = 0 (noisy
Kuramoto) ``kappa_2 = 1`` on S^1 (``kappa = 2 + r^2``, from ``r = I_1(kappa r)/I_0(kappa
r)``) and ``9/5`` on S^2 (``kappa = 3 + 9 r^2 / 5``, from ``r = coth(kappa r) - 1/(kappa
r)``).

With the value matrix ``V = c I`` (``value = c > 0``) the velocity is multiplied by c, so
the stationary states are ``rho ∝ exp(c kappa phi(w))``: the expansion above holds in
``c kappa``, hence ``kappa_c`` and ``kappa_2`` are divided by c and the transition type and
the tricritical beta do not change. ``c <= 0`` has no bifurcation from the uniform state
(every mode decays), and is refused.
"""
from __future__ import annotations

import math
from typing import Literal

import numpy as np
from scipy import optimize, special

from meanfield.model.kernels import spherical_ive

GEOMETRIES = ("circle", "sphere")

# The uniform moments (M12, M13, E, m) of the module docstring.
_MOMENTS = {"circle": (1.0, 3.0, 2.0, 1.0), "sphere": (2.0, 27.0 / 5.0, 3.0, 6.0 / 5.0)}

# tricritical_beta scans beta on this grid for a sign change of kappa_2.
_SCAN_BETA = np.concatenate([np.linspace(0.0, 10.0, 201)[1:], np.geomspace(10.0, 500.0,
                                                                           200)[1:]])


def _check(geometry: str, beta: float, value: float = 1.0) -> None:
    if isinstance(value, bool) or not (isinstance(value, (int, float, np.floating))
                                       and math.isfinite(value) and value > 0):
        raise ValueError(f"value (the c of V = c I) must be a finite number > 0, got "
                         f"{value!r}: for c <= 0 every mode of the uniform state decays "
                         "and no branch leaves it")
    if geometry not in GEOMETRIES:
        raise ValueError(f"geometry must be one of {GEOMETRIES}, got {geometry!r}")
    if isinstance(beta, bool) or not (isinstance(beta, (int, float, np.floating))
                                      and math.isfinite(beta) and beta >= 0):
        raise ValueError(f"beta must be a finite number >= 0, got {beta!r}")


def _bessel_ratios(geometry: str, beta: float) -> tuple[float, float]:
    """``(t, q) = (I_1/I_0, I_2/I_1)`` on S^1, ``(i_1/i_0, i_2/i_1)`` on S^2 (exponentially
    scaled: no overflow); their limits ``(0, 0)`` at beta = 0."""
    if beta == 0:
        return 0.0, 0.0
    if geometry == "circle":
        e0, e1, e2 = special.ive([0, 1, 2], beta)
    else:
        e0, e1, e2 = spherical_ive(np.arange(3), beta)
    return float(e1 / e0), float(e2 / e1)


def landau_critical_kappa(geometry: str, beta: float, normalized: bool,
                          value: float = 1.0) -> float:
    """``kappa_c = 1/(c a_1)``: ``beta/I_1(beta)`` (USA) or ``beta I_0/I_1`` (SA) on S^1,
    ``beta/i_1`` or ``beta i_0/i_1`` on S^2, divided by c; 2/c and 3/c at beta = 0.

    Args:
        geometry: ``"circle"`` or ``"sphere"``.
        beta: the inverse temperature of the kernel (>= 0).
        normalized: SA (True) or USA (False).
        value: the c > 0 of the value matrix ``V = c I`` (1: no weights).
    """
    _check(geometry, beta, value)
    if beta == 0:
        base = 2.0 if geometry == "circle" else 3.0
    else:
        t, _ = _bessel_ratios(geometry, beta)
        if normalized:
            base = beta / t
        else:
            scaled = (special.ive(1, beta) if geometry == "circle"
                      else float(spherical_ive(1, beta)))
            base = float(beta / scaled * math.exp(-beta))  # (underflows to 0 at huge beta)
    return base if value == 1 else base / value


def landau_terms(geometry: str, beta: float, normalized: bool,
                 value: float = 1.0) -> dict[str, float]:
    """The pieces of the expansion (module docstring): ``kappa_c``, ``q``, ``p``, ``p3``,
    ``s`` (``rho_2 = s r^2``), ``C`` and ``kappa_2`` (``kappa_c`` and ``kappa_2`` of
    ``V = value I``: those of c = 1 divided by c)."""
    _check(geometry, beta, value)
    m12, m13, e, m = _MOMENTS[geometry]
    t, q = _bessel_ratios(geometry, beta)
    p, p3 = (-t / 2, t**2 / 3) if normalized else (0.0, 0.0)
    s = m * (p + 0.5) / (1 - q)
    c = s * m12 * q * (1 + 2 * p) + m13 * (p3 + p + 1.0 / 6.0) - e * (p + 0.5)
    kappa_c = landau_critical_kappa(geometry, beta, normalized, value)
    return {"kappa_c": kappa_c, "q": q, "p": p, "p3": p3, "s": s, "C": c,
            "kappa_2": -kappa_c * c}


def landau_coefficient(geometry: str, beta: float, normalized: bool,
                       value: float = 1.0) -> float:
    """``kappa_2`` in ``kappa = kappa_c + kappa_2 r^2 + O(r^4)`` along the branch shed by
    the uniform density at mode 1 (S^1) or degree 1 (S^2), ``r = |int x d mu|``.

    Args:
        geometry: ``"circle"`` or ``"sphere"``.
        beta: the inverse temperature of the kernel (>= 0).
        normalized: SA (True) or USA (False).
        value: the c > 0 of the value matrix ``V = c I`` (1: no weights).

    Returns:
        ``kappa_2``: positive for a supercritical (forward) branch, negative for a
        subcritical one (a fold below ``kappa_c``).

    Raises:
        ValueError: an unknown geometry, a beta that is not a finite number >= 0, or a
            value that is not a finite number > 0.
    """
    return landau_terms(geometry, beta, normalized, value)["kappa_2"]


def transition_type(geometry: str, beta: float, normalized: bool
                    ) -> Literal["supercritical", "subcritical"]:
    """``"supercritical"`` (``kappa_2 >= 0``: continuous) or ``"subcritical"`` (``kappa_2
    < 0``: first order, a fold and hysteresis) for the first bifurcation.

    Args:
        geometry: ``"circle"`` or ``"sphere"``.
        beta: the inverse temperature of the kernel (>= 0).
        normalized: SA (True) or USA (False).
    """
    return "subcritical" if landau_coefficient(geometry, beta, normalized) < 0 \
        else "supercritical"


def tricritical_beta(geometry: str, normalized: bool) -> float | None:
    """The smallest beta where ``kappa_2`` changes sign (the tricritical point, where the
    transition turns from continuous to first order), by brentq to 1e-13; None when
    ``kappa_2`` keeps its sign for beta in (0, 500].

    USA: the root of ``I_2/I_1 = 1/2`` on S^1 and ``i_2/i_1 = 1/3`` on S^2.

    Args:
        geometry: ``"circle"`` or ``"sphere"``.
        normalized: SA (True) or USA (False).
    """
    def k2(b: float) -> float:
        return landau_coefficient(geometry, float(b), normalized)

    values = np.array([k2(b) for b in _SCAN_BETA])
    first = np.sign(k2(0.0))
    change = np.flatnonzero(np.sign(values) != first)
    if change.size == 0:
        return None
    i = int(change[0])
    low = 0.0 if i == 0 else float(_SCAN_BETA[i - 1])
    return float(optimize.brentq(k2, low, float(_SCAN_BETA[i]), xtol=1e-13, rtol=1e-14))
