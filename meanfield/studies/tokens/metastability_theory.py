"""The theory and the readings of the metastability study (``metastability``): the most
unstable mode of the uniform state, the interaction energy and its rate (monotone for SA
and USA), the single-linkage clusters, the first plateau of the staircase, the two-cluster
pairing times of the last merge (hardmax limit and exact ODE), and the power-law fit in
beta. The module docstring of ``metastability`` derives them."""
from __future__ import annotations

import math

import numpy as np
from scipy import integrate as sint
from scipy.sparse import csgraph, csr_matrix

from meanfield.model import kernels


def most_unstable_mode(beta: float, geometry: str = "circle", normalized: bool = True
                       ) -> tuple[int, float]:
    """``(k*, sigma_{k*})``: the mode (S^1) or degree (S^2) of largest growth rate at the
    uniform state without noise (docs/conventions.md), searched over ``1..K`` with ``K``
    well past ``sqrt(2 beta)``."""
    top = int(8 * math.sqrt(2 * max(beta, 1.0))) + 16
    k = np.arange(1, top + 1)
    rate = (kernels.growth_rate if geometry == "circle" else kernels.sphere_growth_rate)(
        k, float(beta), math.inf, normalized)
    i = int(np.argmax(rate))
    return int(k[i]), float(rate[i])


def energy_rate(x: np.ndarray, beta: float, normalized: bool = True) -> float:
    """``dS/dt`` of ``S = (1/n^2) sum_ij e^{beta(<x_i, x_j> - 1)}`` along the flow
    (module docstring): ``(2 beta e^{-beta}/n^2) sum_i w_i |v_i|^2`` with ``w_i = Z_i``
    (SA) or ``n`` (USA); ``>= 0``. Dense, O(n^2 d)."""
    x = np.asarray(x, dtype=float)
    n = x.shape[0]
    k = np.exp(beta * (x @ x.T - 1.0))
    a = k @ x
    z = k.sum(axis=1)
    tangent = a - np.einsum("ij,ij->i", a, x)[:, None] * x  # e^{-beta} Z_i v_i (SA)
    v2 = np.einsum("ij,ij->i", tangent, tangent)
    if normalized:  # Z_i |v_i|^2 e^{-beta} = |tangent|^2 / z
        return float(2 * beta * np.sum(v2 / z) / n**2)
    return float(2 * beta * math.exp(beta) * np.sum(v2) / n**3)  # v_i = e^beta t_i/n


def scaled_energy(x: np.ndarray, beta: float) -> np.ndarray:
    """``S`` of tokens ``(..., n, d)`` (leading dims kept)."""
    g = np.matmul(x, np.swapaxes(x, -1, -2))
    return np.exp(beta * (np.minimum(g, 1.0) - 1.0)).mean(axis=(-1, -2))


def cluster_labels(x: np.ndarray, threshold: float) -> np.ndarray:
    """Single-linkage labels ``0..k-1`` of unit vectors ``(n, d)`` at chordal distance
    ``threshold`` (the components of ``meanfield.metrics.cluster_count``). S^1: the sorted
    angles cut at gaps of chord ``>= threshold``; else the components of the dense graph
    (O(n^2) memory)."""
    x = np.asarray(x, dtype=float)
    n = x.shape[0]
    if x.shape[1] == 2:
        theta = np.arctan2(x[:, 1], x[:, 0])
        order = np.argsort(theta)
        gaps = np.diff(np.concatenate([theta[order], [theta[order[0]] + 2 * np.pi]]))
        cut = 2 * np.sin(np.minimum(gaps, np.pi) / 2) >= threshold  # after sorted j
        if not cut.any():
            return np.zeros(n, dtype=np.int64)
        run = np.concatenate([[0], np.cumsum(cut[:-1])])
        if not cut[-1]:  # the last run wraps around into the first
            run[run == run[-1]] = 0
        labels = np.empty(n, dtype=np.int64)
        labels[order] = np.unique(run, return_inverse=True)[1]
        return labels
    d2 = np.maximum(2.0 - 2.0 * (x @ x.T), 0.0)
    _, labels = csgraph.connected_components(csr_matrix(d2 < threshold * threshold),
                                             directed=False)
    return labels.astype(np.int64)


def pairing_times(beta: float, gap: float, m1: float, m2: float, threshold: float,
                  normalized: bool = True) -> tuple[float, float]:
    """``(T_hardmax, T_two_cluster)``: the time two collapsed clusters (token fractions
    ``m1``, ``m2``, angle ``gap``) take to come within chord ``threshold`` (module
    docstring). USA: both are the exact two-cluster time."""
    end = 2 * math.asin(min(threshold / 2, 1.0))
    if gap <= end:
        return 0.0, 0.0
    rho = m2 / m1
    if normalized:
        r = rho + 1 / rho

        def hardmax(phi):
            return math.exp(beta * (1 - math.cos(phi))) / (r * math.sin(phi))

        def exact(phi):
            eps = math.exp(-beta * (1 - math.cos(phi)))
            return 1 / (math.sin(phi) * eps * (rho / (1 + rho * eps)
                                               + 1 / (rho * (1 + eps / rho))))
    else:
        def hardmax(phi):
            return math.exp(-beta * math.cos(phi)) / ((m1 + m2) * math.sin(phi))
        exact = hardmax
    out = []
    for f in (hardmax, exact):
        # the integrand peaks at phi_0 with width ~1/(beta sin phi_0): help quad there
        width = 1 / max(beta * math.sin(gap), 1e-12)
        points = [p for p in (gap - 3 * width, gap - 30 * width) if end < p < gap]
        val, _ = sint.quad(f, end, gap, points=points or None, limit=400, epsabs=0,
                           epsrel=1e-10)
        out.append(float(val))
    return out[0], out[1]


def pairing_tau(gap: float, m1: float, m2: float, threshold: float,
                normalized: bool = True) -> float:
    """The hardmax pairing time in the rescaled clock (``d tau = e^{-beta(1 - <x_1,
    x_2>)} dt``, USA ``e^beta`` times that): ``tau = ln(tan(phi_0/2)/tan(phi_e/2)) / r``
    from ``d phi/d tau = -r sin phi`` (module docstring), independent of beta."""
    end = 2 * math.asin(min(threshold / 2, 1.0))
    if gap <= end:
        return 0.0
    r = (m2 / m1 + m1 / m2) if normalized else (m1 + m2)
    return math.log(math.tan(gap / 2) / math.tan(end / 2)) / r


def first_plateau(times: np.ndarray, counts: np.ndarray, collapsed: np.ndarray,
                  ratio: float) -> tuple[float, float]:
    """``(count, t)`` of the first plateau (module docstring); NaNs if none is seen (the
    window ``[t, ratio t]`` must end within the saves)."""
    for i, t in enumerate(times):
        if t * ratio > times[-1]:
            break
        if not collapsed[i]:
            continue
        window = counts[i:np.searchsorted(times, t * ratio, side="right")]
        if np.all(window == counts[i]):
            return float(counts[i]), float(t)
    return math.nan, math.nan


def fit_exponent(beta: np.ndarray, values: np.ndarray) -> float:
    """Least-squares slope of ``log values`` on ``log beta`` (finite positive values;
    NaN with fewer than two)."""
    ok = np.isfinite(values) & (values > 0)
    if ok.sum() < 2:
        return math.nan
    return float(np.polyfit(np.log(beta[ok]), np.log(values[ok]), 1)[0])
