"""Weakly nonlinear (Landau / Lyapunov-Schmidt) theory of the first bifurcation of the
noisy model: is the branch shed by the uniform density at its first instability (mode
k = 1 on S^1, degree l = 1 on S^2 and on S^{d-1}) supercritical or subcritical?

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
    S^2: M12 = 2,                    M13 = 27/5,                 E = 3,            m = 6/5;
    S^{d-1} ("zonal", ``dim`` = d): M12 = d - 1, M13 = 3 d^2/(d + 2), E = d, m = 2d/(d + 2)

(zonal: ``psi_l = P_l`` the Gegenbauer polynomial with ``P_l(1) = 1``, ``e_l = N_l P_l``
with ``N_l`` the dimension of the degree-l harmonics, ``<t^2> = 1/d``, ``<t^4> =
3/(d(d + 2))``, ``P_2 = (d t^2 - 1)/(d - 1)``, ``N_2 = (d + 2)(d - 1)/2``; d = 2 and 3 give
the rows above), and in dimension d ``t = I_{d/2}/I_{d/2-1}``, ``q = I_{d/2+1}/I_{d/2}``.

``kappa_2 > 0``: the branch bends forward (supercritical, continuous transition);
``kappa_2 < 0``: it bends back (subcritical: a fold below ``kappa_c``, first order,
hysteresis). USA on S^1: ``kappa_2 = kappa_c (1 - 2q) / (2 (1 - q))`` with ``q =
I_2(beta)/I_1(beta)``, which changes sign at ``q = 1/2``; on S^2 ``kappa_2 = (3 kappa_c /
5) (1 - 3q) / (1 - q)`` with ``q = i_2/i_1``, sign change at ``q = 1/3``. At beta = 0 (noisy
Kuramoto) ``kappa_2 = 1`` on S^1 (``kappa = 2 + r^2``, from ``r = I_1(kappa r)/I_0(kappa
r)``) and ``9/5`` on S^2 (``kappa = 3 + 9 r^2 / 5``, from ``r = coth(kappa r) - 1/(kappa
r)``). On S^{d-1}: ``kappa_2 = kappa_c d (1 - d q) / ((d + 2)(1 - q))`` (USA), first order
where ``I_{d/2+1}(beta)/I_{d/2}(beta) > 1/d``; at beta = 0 ``kappa = d + d^2 r^2/(d + 2)``,
from ``r = I_{d/2}(kappa r)/I_{d/2-1}(kappa r)``.

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
from meanfield.model.zonal_kernels import log_bessel_orders, zonal_critical_kappa

GEOMETRIES = ("circle", "sphere", "zonal")

# The uniform moments (M12, M13, E, m) of the module docstring.
_MOMENTS = {"circle": (1.0, 3.0, 2.0, 1.0), "sphere": (2.0, 27.0 / 5.0, 3.0, 6.0 / 5.0)}

# tricritical_beta scans beta on this grid for a sign change of kappa_2.
_SCAN_BETA = np.concatenate([np.linspace(0.0, 10.0, 201)[1:], np.geomspace(10.0, 500.0,
                                                                           200)[1:]])


def zonal_moments(dim: int) -> tuple[float, float, float, float]:
    """The uniform moments ``(M12, M13, E, m)`` on S^{dim-1} (module docstring)."""
    d = float(dim)
    return d - 1.0, 3.0 * d * d / (d + 2.0), d, 2.0 * d / (d + 2.0)


def _moments(geometry: str, dim: int | None) -> tuple[float, float, float, float]:
    return zonal_moments(dim) if geometry == "zonal" else _MOMENTS[geometry]


def _check(geometry: str, beta: float, value: float = 1.0, dim: int | None = None) -> None:
    if isinstance(value, bool) or not (isinstance(value, (int, float, np.floating))
                                       and math.isfinite(value) and value > 0):
        raise ValueError(f"value (the c of V = c I) must be a finite number > 0, got "
                         f"{value!r}: for c <= 0 every mode of the uniform state decays "
                         "and no branch leaves it")
    if geometry not in GEOMETRIES:
        raise ValueError(f"geometry must be one of {GEOMETRIES}, got {geometry!r}")
    if geometry == "zonal" and (isinstance(dim, bool) or not isinstance(dim, (int, np.integer))
                                or dim < 2):
        raise ValueError(f"the zonal geometry needs dim, an integer >= 2, got {dim!r}")
    if isinstance(beta, bool) or not (isinstance(beta, (int, float, np.floating))
                                      and math.isfinite(beta) and beta >= 0):
        raise ValueError(f"beta must be a finite number >= 0, got {beta!r}")


def _bessel_ratios(geometry: str, beta: float, dim: int | None = None
                   ) -> tuple[float, float]:
    """``(t, q) = (I_1/I_0, I_2/I_1)`` on S^1, ``(i_1/i_0, i_2/i_1)`` on S^2 (exponentially
    scaled: no overflow), ``(I_{d/2}/I_{d/2-1}, I_{d/2+1}/I_{d/2})`` on S^{d-1} (Perron's
    continued fraction: no underflow at any d); their limits ``(0, 0)`` at beta = 0."""
    if beta == 0:
        return 0.0, 0.0
    if geometry == "zonal":
        logs = log_bessel_orders(dim / 2 - 1, 3, float(beta))
        return float(math.exp(logs[1] - logs[0])), float(math.exp(logs[2] - logs[1]))
    if geometry == "circle":
        e0, e1, e2 = special.ive([0, 1, 2], beta)
    else:
        e0, e1, e2 = spherical_ive(np.arange(3), beta)
    return float(e1 / e0), float(e2 / e1)


def landau_critical_kappa(geometry: str, beta: float, normalized: bool,
                          value: float = 1.0, dim: int | None = None) -> float:
    """``kappa_c = 1/(c a_1)``: ``beta/I_1(beta)`` (USA) or ``beta I_0/I_1`` (SA) on S^1,
    ``beta/i_1`` or ``beta i_0/i_1`` on S^2, ``meanfield.model.zonal_kernels.
    zonal_critical_kappa`` on S^{d-1}, divided by c; 2/c, 3/c and d/c at beta = 0.

    Args:
        geometry: ``"circle"``, ``"sphere"`` or ``"zonal"``.
        beta: the inverse temperature of the kernel (>= 0).
        normalized: SA (True) or USA (False).
        value: the c > 0 of the value matrix ``V = c I`` (1: no weights).
        dim: the d of S^{d-1} (zonal only).
    """
    _check(geometry, beta, value, dim)
    if geometry == "zonal":
        return zonal_critical_kappa(int(dim), float(beta), normalized, float(value))
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
                 value: float = 1.0, dim: int | None = None) -> dict[str, float]:
    """The pieces of the expansion (module docstring): ``kappa_c``, ``q``, ``p``, ``p3``,
    ``s`` (``rho_2 = s r^2``), ``C`` and ``kappa_2`` (``kappa_c`` and ``kappa_2`` of
    ``V = value I``: those of c = 1 divided by c); ``dim`` the d of a zonal S^{d-1}."""
    _check(geometry, beta, value, dim)
    m12, m13, e, m = _moments(geometry, dim)
    t, q = _bessel_ratios(geometry, beta, dim)
    p, p3 = (-t / 2, t**2 / 3) if normalized else (0.0, 0.0)
    s = m * (p + 0.5) / (1 - q)
    c = s * m12 * q * (1 + 2 * p) + m13 * (p3 + p + 1.0 / 6.0) - e * (p + 0.5)
    kappa_c = landau_critical_kappa(geometry, beta, normalized, value, dim)
    return {"kappa_c": kappa_c, "q": q, "p": p, "p3": p3, "s": s, "C": c,
            "kappa_2": -kappa_c * c}


def landau_coefficient(geometry: str, beta: float, normalized: bool,
                       value: float = 1.0, dim: int | None = None) -> float:
    """``kappa_2`` in ``kappa = kappa_c + kappa_2 r^2 + O(r^4)`` along the branch shed by
    the uniform density at mode 1 (S^1) or degree 1 (S^2, S^{d-1}), ``r = |int x d mu|``.

    Args:
        geometry: ``"circle"``, ``"sphere"`` or ``"zonal"``.
        beta: the inverse temperature of the kernel (>= 0).
        normalized: SA (True) or USA (False).
        value: the c > 0 of the value matrix ``V = c I`` (1: no weights).
        dim: the d of S^{d-1} (zonal only; d = 2 and 3 give the circle and the sphere).

    Returns:
        ``kappa_2``: positive for a supercritical (forward) branch, negative for a
        subcritical one (a fold below ``kappa_c``).

    Raises:
        ValueError: an unknown geometry, a beta that is not a finite number >= 0, a
            value that is not a finite number > 0, or a zonal dim that is not an integer
            >= 2.
    """
    return landau_terms(geometry, beta, normalized, value, dim)["kappa_2"]


def transition_type(geometry: str, beta: float, normalized: bool, dim: int | None = None
                    ) -> Literal["supercritical", "subcritical"]:
    """``"supercritical"`` (``kappa_2 >= 0``: continuous) or ``"subcritical"`` (``kappa_2
    < 0``: first order, a fold and hysteresis) for the first bifurcation.

    Args:
        geometry: ``"circle"``, ``"sphere"`` or ``"zonal"``.
        beta: the inverse temperature of the kernel (>= 0).
        normalized: SA (True) or USA (False).
        dim: the d of S^{d-1} (zonal only).
    """
    return "subcritical" if landau_coefficient(geometry, beta, normalized, dim=dim) < 0 \
        else "supercritical"


def tricritical_beta(geometry: str, normalized: bool, dim: int | None = None
                     ) -> float | None:
    """The smallest beta where ``kappa_2`` changes sign (the tricritical point, where the
    transition turns from continuous to first order), by brentq to 1e-13; None when
    ``kappa_2`` keeps its sign for beta in (0, 500].

    USA: the root of ``I_2/I_1 = 1/2`` on S^1, ``i_2/i_1 = 1/3`` on S^2 and
    ``I_{d/2+1}/I_{d/2} = 1/d`` on S^{d-1}.

    Args:
        geometry: ``"circle"``, ``"sphere"`` or ``"zonal"``.
        normalized: SA (True) or USA (False).
        dim: the d of S^{d-1} (zonal only).
    """
    def k2(b: float) -> float:
        return landau_coefficient(geometry, float(b), normalized, dim=dim)

    values = np.array([k2(b) for b in _SCAN_BETA])
    first = np.sign(k2(0.0))
    change = np.flatnonzero(np.sign(values) != first)
    if change.size == 0:
        return None
    i = int(change[0])
    low = 0.0 if i == 0 else float(_SCAN_BETA[i - 1])
    return float(optimize.brentq(k2, low, float(_SCAN_BETA[i]), xtol=1e-13, rtol=1e-14))
