"""The noiseless mean-field equation on S^1 along its characteristics (docs/contraction.md).

Without noise the continuity equation ``d_t rho + d_theta(rho v[rho]) = 0`` moves mass
along the characteristics ``theta' = v[mu_t](theta)`` and nothing else: a measure is its
labels (initial angles) with their masses, carried by the flow. An Eulerian grid loses
the far side: the mass near the point antipodal to the cluster leaves it like
``e^{-lambda_rep t}`` and the cluster narrows like ``e^{-lambda_att t}``, and once the
W_2 distance is carried by the far side (the mean-field regime) the core of the cluster is
far narrower than the distance itself.

Labels. The initial angle is ``theta_0 = c + 2 arctan(sinh xi)``, xi on a uniform grid of
``[-reach, reach]``, c the centre: ``xi = 0`` is c and ``xi -> +-inf`` its antipode. The
label xi carries the mass ``rho_0(theta_0) 2 / cosh(xi) dxi`` (the trapezoid rule in xi).
At beta = 0 the characteristics are ``tan((theta - c)/2) = e^{-R(t)} tan((theta_0 - c)/2)``
(``R = int r``, r the order parameter), i.e. ``sinh xi_t = e^{-R} sinh xi``: far from c the
flow is the translation ``xi -> xi - R``; near c it contracts. Every integrand is analytic
in a strip ``|Im xi| < pi/2`` (for the densities of ``[initial]`` that are analytic), so the
trapezoid rule errs by about ``e^{-pi^2/dxi}`` (``dxi = 0.2``: 1e-21), and the labels
beyond ``reach`` hold the mass ``~ 4 rho_0(c + pi) e^{-reach}``, which the far side keeps
for a time ``reach / lambda_rep``; ``reach = lambda t_final + TAIL`` keeps it below
``e^{-TAIL}`` of the distance over the whole run.

Two solutions:

- ``beta_zero_solution``: beta = 0 for a density symmetric about c (whose mean direction
  then stays c): the characteristics are the closed form above, and ``R`` solves the
  scalar equation ``R' = r(R)``, ``r(R) = int cos(theta_R(theta_0) - c) rho_0 d theta_0``
  (the order parameter of the mapped density): the reference of the tests.
- ``label_solution``: any beta, SA or USA: the labels' angles integrated as one system of
  ordinary differential equations (Dormand-Prince 8(5,3), ``rtol = 1e-10``), the field by
  the trapezoid rule over the labels; the centre c is moved until its antipode is the
  point the far side leaves (the repeller; exact at the start for a symmetric density).

``label_member`` is the contraction study's PDE member on these labels
(``contraction.pde = "characteristics"``), ``check_labels`` its check before any work.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
from scipy.integrate import solve_ivp

from meanfield.errors import ConfigError
from meanfield.initial.circle import density_function

TAIL = 36.0  # labels beyond reach: their share of W_2^2 stays below e^{-TAIL}
LABEL_SPACING = 0.2  # dxi: the trapezoid rule's error is about e^{-pi^2 / dxi}
RTOL, ATOL = 1e-10, 1e-13  # the label system's tolerances (angles in rad)
PASSES = 4  # label solutions recentred on the repeller at most this many times
FAR_REACH = 30.0  # lambda_rep t_final at most this: the repeller's round-off (~1e-16) is
# the offset of the labels at xi ~ 36, whose mass is what W_2 is made of at lambda_rep t ~ xi
MAX_LABELS = 4097  # beta > 0: the field costs labels^2 per evaluation (4097: 134 MB a copy)
SYMMETRY_TOLERANCE = 1e-12


def labels(density: Callable[[np.ndarray], np.ndarray], center: float, reach: float,
           spacing: float = LABEL_SPACING) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(xi, theta_0, mass)``: the labels on ``[-reach, reach]`` (module docstring), their
    initial angles and their masses (summing to 1)."""
    xi = np.linspace(-reach, reach, label_count(reach, spacing))
    theta0 = center + 2 * np.arctan(np.sinh(xi))
    mass = density(theta0) * 2 / np.cosh(xi)
    return xi, theta0, mass / mass.sum()


def antipode_offsets(xi: np.ndarray) -> np.ndarray:
    """The labels' initial angles measured from the antipode of the centre, ``theta_0 - c
    - pi`` wrapped: ``-sign(xi) 2 arctan(1/|sinh xi|)`` (pi at xi = 0), exact in floating
    point down to the smallest offsets (``c + pi + offset`` would round the far side's
    labels, whose offsets reach ``4 e^{-reach}``, onto the repeller)."""
    with np.errstate(divide="ignore"):
        offset = 2 * np.arctan(1 / np.abs(np.sinh(xi)))
    return np.where(xi > 0, -offset, offset)


def reach_for(t_final: float, rate: float) -> float:
    """The label range that keeps the far side's labels over ``t_final`` (``rate``: the
    fastest rate at which the far side is left, ``lambda_rep`` or more)."""
    return max(rate, 1.0) * t_final + TAIL


def label_reach(t_final: float, beta: float, normalized: bool) -> float:
    """The label range of ``label_solution``: the far side is left at ``e^{-beta}`` (USA)
    near a cluster, and for SA at up to ~beta while the density is broad."""
    return reach_for(t_final, max(1.0, beta) if normalized else 1.0)


def label_count(reach: float, spacing: float = LABEL_SPACING) -> int:
    """The number of labels on ``[-reach, reach]``."""
    return 2 * math.ceil(reach / spacing) + 1


def wrap(angle: np.ndarray) -> np.ndarray:
    """Angles in ``[-pi, pi)``."""
    return (np.asarray(angle) + np.pi) % (2 * np.pi) - np.pi


def beta_zero_solution(density: Callable[[np.ndarray], np.ndarray], center: float,
                       times: np.ndarray, spacing: float = LABEL_SPACING) -> dict:
    """The noiseless beta = 0 solution on S^1 from a density symmetric about ``center``.

    Args:
        density: the initial density (a function of the angle, unit mass).
        center: its centre of symmetry (the limit point: the mean direction stays there).
        times: the times wanted (increasing, from 0).
        spacing: the label spacing in xi.

    Returns:
        ``R`` (``int_0^t r``), ``order_parameter`` r and ``distance`` ``W_2(mu_t,
        delta_center)`` at ``times``, and ``far_density``, the density at the antipode
        ``rho_0(c + pi) e^{-R}`` (the point repels at rate r).

    Raises:
        ValueError: the density is not symmetric about ``center`` or its mean is zero.
    """
    times = np.asarray(times, dtype=float)
    probe = np.linspace(0.0, np.pi, 257)
    plus, minus = density(center + probe), density(center - probe)
    if np.max(np.abs(plus - minus)) > SYMMETRY_TOLERANCE * np.max(np.abs(plus)):
        raise ValueError("the beta = 0 characteristic solution needs a density symmetric "
                         "about its centre")
    xi, _, mass = labels(density, center, reach_for(float(times[-1]), 1.0), spacing)
    sinh = np.sinh(xi)

    def order(big_r: float) -> float:
        z = math.exp(-big_r) * sinh
        return float(np.dot(mass, (1 - z * z) / (1 + z * z)))  # cos(2 arctan z)

    if order(0.0) <= 0:
        raise ValueError("the density's mean is zero or points away from its centre: "
                         "no cluster forms at the centre")
    sol = solve_ivp(lambda t, y: [order(y[0])], (0.0, float(times[-1])), [0.0],
                    method="DOP853", t_eval=times, rtol=1e-13, atol=1e-14)
    big_r = sol.y[0]
    theta = 2 * np.arctan(np.exp(-big_r)[:, None] * sinh[None, :])
    return {"R": big_r, "order_parameter": np.array([order(v) for v in big_r]),
            "distance": np.sqrt(theta ** 2 @ mass),
            "far_density": density(np.array([center + np.pi]))[0] * np.exp(-big_r)}


def circle_velocity(query: np.ndarray, theta: np.ndarray, mass: np.ndarray, beta: float,
                    normalized: bool) -> np.ndarray:
    """The field of the weighted angles ``(theta, mass)`` at the angles ``query``:
    ``-sum_j m_j e^{beta cos(q - theta_j)} sin(q - theta_j)``, divided by
    ``sum_j m_j e^{beta cos(q - theta_j)}`` for SA (``e^{beta (cos - 1)}`` in the sums: no
    overflow). beta = 0 in O(n) (the field is ``-r sin(q - phase)``), else O(n q)."""
    query = np.asarray(query, dtype=float)
    if beta == 0:
        c, s = mass @ np.cos(theta), mass @ np.sin(theta)
        return -(np.sin(query) * c - np.cos(query) * s)
    diff = query[:, None] - theta[None, :]
    kernel = np.exp(beta * (np.cos(diff) - 1)) * mass[None, :]
    field = -(kernel * np.sin(diff)).sum(axis=1)
    return field / kernel.sum(axis=1) if normalized else math.exp(beta) * field


def _integrate(psi0: np.ndarray, mass: np.ndarray, times: np.ndarray, beta: float,
               normalized: bool):
    sol = solve_ivp(lambda t, y: circle_velocity(y, y, mass, beta, normalized),
                    (0.0, float(times[-1])), psi0, method="DOP853", t_eval=times,
                    rtol=RTOL, atol=ATOL, dense_output=True)
    if sol.status != 0:
        raise RuntimeError(f"the label system stopped: {sol.message}")
    return sol


def _repeller_start(sol, mass: np.ndarray, beta: float, normalized: bool,
                    limit: float) -> float:
    """The initial angle of the point the far side leaves: the characteristic through the
    antipode of the limit point at the last time, followed back to t = 0 (backwards in
    time the repeller attracts, so the start's error shrinks on the way)."""
    t_final = float(sol.t[-1])
    back = solve_ivp(lambda t, y: circle_velocity(y, sol.sol(t), mass, beta, normalized),
                     (t_final, 0.0), [float(wrap(limit + np.pi))], method="DOP853",
                     rtol=RTOL, atol=ATOL)
    return float(back.y[0, -1])


def label_solution(density: Callable[[np.ndarray], np.ndarray], times: np.ndarray,
                   beta: float, normalized: bool, spacing: float = LABEL_SPACING) -> dict:
    """The noiseless solution on S^1 carried by its labels (module docstring).

    Args:
        density: the initial density (a function of the angle, unit mass).
        times: the times wanted (increasing, from 0).
        beta: the inverse temperature.
        normalized: SA (true) or USA.
        spacing: the label spacing in xi.

    Returns:
        ``theta`` (times, labels): the labels' angles; ``mass`` (labels); ``limit``: the
        angle of the mean direction at the last time (the cluster's point, x_inf);
        ``center``: the labels' centre (the antipode of the repeller's start).
    """
    times = np.asarray(times, dtype=float)
    probe = np.linspace(-np.pi, np.pi, 4096, endpoint=False)
    center = float(np.angle(np.exp(1j * probe) @ density(probe)))
    reach = label_reach(float(times[-1]), beta, normalized)
    for _ in range(PASSES):
        # the labels move as offsets from the antipode of the centre (the field depends
        # on differences only): the far side keeps its precision (antipode_offsets)
        xi, _, mass = labels(density, center, reach, spacing)
        sol = _integrate(antipode_offsets(xi), mass, times, beta, normalized)
        limit = float(np.angle(mass @ np.exp(1j * sol.y[:, -1])))
        shift = float(wrap(_repeller_start(sol, mass, beta, normalized, limit)))
        if abs(shift) < 1e-12:
            break
        center = float(wrap(center + shift))
    return {"theta": sol.y.T + center + np.pi, "mass": mass,
            "limit": float(wrap(limit + center + np.pi)), "center": center}


def distances_to(theta: np.ndarray, mass: np.ndarray, point: float,
                 far: float = np.pi / 2) -> tuple[np.ndarray, np.ndarray]:
    """``W_2`` of the weighted angles (times, labels) to the Dirac at ``point``, and the
    share of ``W_2^2`` carried by the mass farther than ``far`` from it."""
    d2 = wrap(theta - point) ** 2
    total = d2 @ mass
    beyond = np.where(d2 > far * far, d2, 0.0) @ mass
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(total > 0, beyond / total, 0.0)
    return np.sqrt(total), share


# ---------------------------------------------------------------------------------------
# The contraction study's PDE member carried by its labels.

def check_labels(cfg: dict) -> None:
    """``contraction.pde = "characteristics"``: no second start (W_2 between two labelled
    densities is not a smooth integral over the labels: it sees their atoms, 0.4 rad apart
    at the centre, and errs by ~4 %), and at beta > 0 its field is evaluated over all label
    pairs: refuse a run whose labels would not fit (the count grows with t_final)."""
    c, t_final = cfg["contraction"], cfg["time"]["t_final"]
    normalized = cfg["model"]["normalized"]
    slowest = min(c["beta"]) if not normalized else 0.0  # USA: lambda_rep = e^{-beta}
    if t_final * math.exp(-slowest) > FAR_REACH:
        top = FAR_REACH * math.exp(slowest)
        raise ConfigError(f"time.t_final = {t_final:g}: contraction.pde = \"characteristics\" "
                          f"follows the far side's labels while lambda_rep t <= {FAR_REACH:g} "
                          "(beyond, their offsets from the repeller are below round-off): "
                          f"give time.t_final <= {top:.4g}", "time.t_final")
    if c["other"] is not None:
        raise ConfigError("contraction.other: the distance between two solutions needs "
                          "W_2 between two densities, which the labels of contraction.pde = "
                          "\"characteristics\" do not resolve (only the distance to the "
                          "limit point); give contraction.pde = \"grid\" for the pair",
                          "contraction.other")
    top = max(label_count(label_reach(t_final, b, cfg["model"]["normalized"]))
              for b in c["beta"] if b > 0) if max(c["beta"]) > 0 else 0
    if top > MAX_LABELS:
        raise ConfigError(f"time.t_final = {t_final:g}: contraction.pde = "
                          f"\"characteristics\" would carry {top} labels (their field costs "
                          f"labels^2 a step; at most {MAX_LABELS} at beta > 0): shorten "
                          "time.t_final or lower contraction.beta", "time.t_final")


def label_member(cfg: dict, plan: dict, beta: float) -> dict:
    """The PDE member carried by its labels (``contraction.pde = "characteristics"``):
    ``W_2`` to the Dirac at the limit point (the labels' quadrature of ``int d^2 dmu``) and
    ``far_share``."""
    times = plan["times"]
    sol = label_solution(density_function(cfg["initial"]), times, beta,
                         cfg["model"]["normalized"])
    distance, share = distances_to(sol["theta"], sol["mass"], sol["limit"])
    return {"distance": distance, "far_share": share, "predicted": math.nan,
            "max_distance": np.full(times.size, np.nan),
            "pair_distance": np.full(times.size, np.nan),
            "floor": cfg["contraction"]["fit_above"], "pair_floor": math.nan}
