"""The metastable times, the reduced merging model, the first plateau's predicted places
and the KDE modes of the metastability study (issue 28, items 2 and 3).

**Metastable times** [Rig25, §5.1], [GKPR24]: tokens gather into clusters during
``[0, T_1]`` and the clusters persist on ``[T_1, T_2]`` before the first merge. Per
system, ``T_1`` is the first plateau's save (``first_plateau_time``) and ``T_2`` the
first save after it with fewer clusters (``first_plateau_end``; ``first_plateau_end_low``
the save before it: the merge lies in ``(low, T_2]``). ``fit_slope`` fits ``T_1 = a + b
beta`` and ``log T_2 = a + b beta`` by least squares over every (beta, system) with a
value; the interval is the bootstrap percentile interval of the slope, systems resampled
with replacement within each beta (``metastability.bootstrap`` resamples,
``metastability.confidence``), beside the regression's standard error.

**The reduced merging model** [GKPR24], [Rig25, §5.2]: at the first plateau each cluster is
replaced by one point ``c_a`` (its tokens' normalised mean) of weight ``m_a`` (its token
fraction); the points move by the attention between clusters, SA ``c_a' = P_{c_a}^perp
sum_b m_b e^{beta <c_a, c_b>} c_b / sum_b m_b e^{beta <c_a, c_b>}`` (USA without the
denominator): the tokens' own equation for collapsed clusters (coincident tokens stay
coincident), so the model is exact while the clusters stay collapsed. Two points closer
than ``particles.cluster_threshold`` (chordal) merge into ``normalize(m_a c_a + m_b c_b)``
of weight ``m_a + m_b``: the count the tokens' single linkage makes at the same distance.
Integrated by DOP853 (rtol 1e-10) with the contact as a terminal event. Compared with the
tokens: for each count ``c`` below the plateau's, the duration ``t - T_1`` until the count
first falls to ``c`` (the model's event against the tokens' bracket of saves);
``reduced_merge_error`` is the largest relative distance of the model's durations from
the tokens' brackets (0 inside).

**Predicted places** (S^1) [BPA25]: the uniform state's most unstable mode ``k*``
(``argmax_k sigma_k``) grows from the initial tokens' Fourier coefficient ``sum_j
e^{i k* theta_j} = |.| e^{i psi}``, a density ``cos(k* theta - psi)`` whose ``k*`` maxima
``(psi + 2 pi m)/k*`` are the predicted clusters. Matched optimally to the first
plateau's clusters (Hungarian assignment on the circular distance, ``min(k*, count)``
pairs), ``plateau_position_error`` is the mean matched distance and
``plateau_position_null`` the same statistic for the predicted pattern turned by a
uniform random angle (its mean over 32 equally spaced turns in ``[0, 2 pi/k*)``): a
ratio well below 1 says that the phases predict the places.

**KDE modes** [Rig25, §5.3]: ``kde_modes`` of the initial tokens (``meanfield.metrics.
kde_modes``), against beta beside the first plateau's count and ``sqrt(beta) log beta``.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import integrate as sint
from scipy.optimize import linear_sum_assignment

from meanfield.metrics.kde import kde_modes
from meanfield.studies.tokens import metastable_times

SERIES = ("reduced_clusters", "reduced_energy_scaled")
SCALARS = ("plateau_end", "plateau_end_low", "reduced_first_merge", "reduced_merge_error",
           "reduced_merge_relative", "reduced_merges_compared", "position_error",
           "position_null", "kde_modes", "tight_time", "tight_exponent")
NULL_TURNS = 32


# --- the start in caps ([GKPR24]'s well-separated start) -------------------------------

def cap_start(x: np.ndarray, caps: list[float], radius: float) -> np.ndarray:
    """Tokens ``(..., n, d)`` uniform on S^{d-1} moved into ``len(caps)`` caps of angular
    radius ``radius`` centred on the great circle of the first two axes at the angles
    ``caps`` (token ``i`` into cap ``i mod k``: token fractions within 1/n of equal). S^1:
    the angle ``caps[a] + radius (2u - 1)``, ``u`` the token's angle over 2 pi (uniform
    in the arc); S^2: the cap's polar angle from ``cos psi = 1 - (1 - cos r)(1 - z)/2``
    with ``z`` the token's third coordinate (uniform in [-1, 1]), its azimuth kept
    (uniform in the cap). System ``s`` keeps its draw, so its start is the same at every
    beta."""
    n, d = x.shape[-2], x.shape[-1]
    a = np.asarray(caps, float)[np.arange(n) % len(caps)]
    if d == 2:
        u = (np.arctan2(x[..., 1], x[..., 0]) + np.pi) / (2 * np.pi)
        theta = a + radius * (2 * u - 1)
        return np.stack([np.cos(theta), np.sin(theta)], axis=-1)
    cos = 1 - (1 - math.cos(radius)) * (1 - x[..., 2]) / 2
    sin = np.sqrt(np.maximum(1 - cos * cos, 0.0))
    phi = np.arctan2(x[..., 1], x[..., 0])
    centre = np.stack([np.cos(a), np.sin(a), np.zeros_like(a)], axis=-1)
    e1 = np.stack([-np.sin(a), np.cos(a), np.zeros_like(a)], axis=-1)
    e2 = np.zeros_like(centre)
    e2[..., 2] = 1.0
    return (cos[..., None] * centre + sin[..., None] * (np.cos(phi)[..., None] * e1
                                                      + np.sin(phi)[..., None] * e2))


# --- the reduced model ------------------------------------------------------------------

def _velocity(c: np.ndarray, m: np.ndarray, beta: float, normalized: bool) -> np.ndarray:
    g = np.minimum(c @ c.T, 1.0)
    w = m[None, :] * np.exp(beta * (g - 1.0))  # e^{-beta} times the weights
    a = w @ c
    a = a / w.sum(axis=1)[:, None] if normalized else a * math.exp(beta)
    return a - np.einsum("ad,ad->a", a, c)[:, None] * c


def _closest(c: np.ndarray) -> tuple[float, int, int]:
    d = np.linalg.norm(c[:, None] - c[None], axis=-1)
    d[np.diag_indices_from(d)] = np.inf
    i, j = np.unravel_index(np.argmin(d), d.shape)
    return float(d[i, j]), int(i), int(j)


def reduced_merging(centres: np.ndarray, masses: np.ndarray, beta: float, start: float,
                    times: np.ndarray, threshold: float, normalized: bool = True
                    ) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """The reduced model from ``start`` (module docstring).

    Returns:
        ``(counts, S, merges)``: the count and ``S = sum_ab m_a m_b e^{beta(<c_a, c_b> -
        1)}`` at each of ``times`` (NaN before ``start``), and the time of each merge.
    """
    c = np.asarray(centres, float) / np.linalg.norm(centres, axis=1)[:, None]
    m = np.asarray(masses, float)
    counts, energy = np.full(times.size, np.nan), np.full(times.size, np.nan)
    merges: list[float] = []
    t, last = float(start), float(times[-1])

    def record(lo: float, hi: float, c: np.ndarray, sol=None) -> None:
        idx = np.nonzero((times >= lo) & (times <= hi))[0]
        for i in idx:
            y = c if sol is None else sol(times[i]).reshape(c.shape)
            y = y / np.linalg.norm(y, axis=1)[:, None]
            counts[i] = c.shape[0]
            energy[i] = float(m @ np.exp(beta * (np.minimum(y @ y.T, 1.0) - 1.0)) @ m)

    pending = False  # an event fired: its pair is in contact (to the root's tolerance)
    while True:
        while c.shape[0] > 1:
            gap, i, j = _closest(c)
            if not (gap < threshold or pending):
                break
            pending = False
            z = m[i] * c[i] + m[j] * c[j]
            keep = [k for k in range(c.shape[0]) if k not in (i, j)]
            c = np.vstack([c[keep], z / np.linalg.norm(z)])
            m = np.append(m[keep], m[i] + m[j])
            merges.append(t)
        if c.shape[0] == 1 or t >= last:
            record(t, last, c)
            break
        shape = c.shape

        def rhs(_, y, shape=shape):
            # evaluated at the normalised points: the radial direction is neutral (with
            # P^perp_c a(c) at |c| != 1 it decays at rate ~2, which would hold an
            # explicit step near 3 over the exponentially long plateaus)
            y = y.reshape(shape)
            y = y / np.linalg.norm(y, axis=1)[:, None]
            return _velocity(y, m, beta, normalized).ravel()

        def contact(_, y, shape=shape):
            y = y.reshape(shape)
            return _closest(y / np.linalg.norm(y, axis=1)[:, None])[0] - threshold
        contact.terminal, contact.direction = True, -1
        sol = sint.solve_ivp(rhs, (t, last), c.ravel(), method="DOP853", rtol=1e-10,
                             atol=1e-12, events=contact, dense_output=True)
        end = float(sol.t[-1])
        record(t, end, c, sol.sol)
        c = sol.y[:, -1].reshape(shape)
        c /= np.linalg.norm(c, axis=1)[:, None]
        t = end
        if sol.status != 1:  # reached the last save
            break
        pending = True
    return counts, energy, merges


# --- one system --------------------------------------------------------------------------

def _centres(x: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    k = int(labels.max()) + 1
    c = np.zeros((k, x.shape[1]))
    np.add.at(c, labels, x)
    return c / np.linalg.norm(c, axis=1)[:, None], np.bincount(labels) / x.shape[0]


def _circular(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(np.angle(np.exp(1j * (a[:, None] - b[None, :]))))


def predicted_places(x0: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` maxima of ``cos(k theta - psi)``, ``psi = arg sum_j e^{i k theta_j}``."""
    theta = np.arctan2(x0[:, 1], x0[:, 0])
    psi = float(np.angle(np.exp(1j * k * theta).sum()))
    return (psi + 2 * np.pi * np.arange(k)) / k


def place_match(predicted: np.ndarray, observed: np.ndarray) -> tuple[float, float]:
    """``(error, null)``: the mean circular distance of the optimal matching, and its
    mean over the predicted pattern turned by ``NULL_TURNS`` equally spaced angles."""
    def matched(p):
        cost = _circular(p, observed)
        r, c = linear_sum_assignment(cost)
        return float(cost[r, c].mean())
    k = predicted.size
    turns = (np.arange(NULL_TURNS) + 0.5) / NULL_TURNS * 2 * np.pi / k
    return matched(predicted), float(np.mean([matched(predicted + u) for u in turns]))


def analyse_system(x0, states, times, labels_of, components, plateau_time, beta,
                   threshold, normalized, mode, options, simulate=None) -> dict:
    """The per-system outputs of this module (``SERIES`` on the saves, ``SCALARS``).

    Args:
        x0: ``(n, d)`` initial tokens; states: ``(T, n, d)`` at the saves.
        labels_of: tokens -> single-linkage labels; components: counts at the saves.
        plateau_time: the first plateau's save (NaN: no plateau); mode: ``k*``.
        options: ``reduced_model``, ``kde_modes`` (bools).
        simulate: the tokens' integrator (``metastable_times.merge_bracket``), to locate
            their merges inside the saves; ``None``: the brackets of saves only.
    """
    out = {k: np.full(times.size, np.nan) for k in SERIES}
    out.update(dict.fromkeys(SCALARS, math.nan))
    if options["kde_modes"]:
        out["kde_modes"] = float(len(kde_modes(x0, beta)))
    if not math.isfinite(plateau_time):
        return out
    p = int(np.searchsorted(times, plateau_time))
    count = components[p]
    later = np.nonzero(components[p:] < count)[0]
    if later.size:
        out["plateau_end"] = float(times[p + later[0]])
        out["plateau_end_low"] = float(times[p + later[0] - 1])
    labels = labels_of(states[p])
    centres, masses = _centres(states[p], labels)
    if count > 1:  # T_1 of [GKPR24]: the plateau's clusters tight (metastable_times)
        until = p + later[0] if later.size else times.size - 1  # the state before T_2
        out["tight_time"], out["tight_exponent"] = metastable_times.tight_time(
            np.concatenate([x0[None], states]), np.concatenate([[0.0], times]), labels,
            beta, until)
    if x0.shape[1] == 2:
        observed = np.arctan2(centres[:, 1], centres[:, 0])
        out["position_error"], out["position_null"] = place_match(
            predicted_places(x0, mode), observed)
    if not options["reduced_model"]:
        return out
    counts, energy, merges = reduced_merging(centres, masses, beta, plateau_time, times,
                                             threshold, normalized)
    out["reduced_clusters"], out["reduced_energy_scaled"] = counts, energy
    if merges:
        out["reduced_first_merge"] = merges[0]
    errors, gaps = [], []
    for level, t in zip(range(int(count) - 1, 0, -1), merges):
        seen = np.nonzero(components[p:] <= level)[0]
        if seen.size == 0:
            break
        q = p + seen[0]
        hi, lo = times[q] - plateau_time, times[q - 1] - plateau_time
        dur = t - plateau_time
        errors.append(0.0 if lo <= dur <= hi else min(abs(dur - lo), abs(dur - hi)) / dur)
        if simulate is not None:
            lo, hi = (b - plateau_time for b in metastable_times.merge_bracket(
                simulate, states[q - 1], times[q - 1], times[q], level,
                lambda y: int(labels_of(y).max()) + 1))
        gaps.append(metastable_times.relative_gap(dur, lo, hi))
    out["reduced_merges_compared"] = float(len(errors))
    if errors:
        out["reduced_merge_error"], out["reduced_merge_relative"] = max(errors), max(gaps)
    return out


# --- fits over beta -----------------------------------------------------------------------

def fit_slope(beta: np.ndarray, values: np.ndarray, resamples: int, confidence: float,
              seed: int) -> dict:
    """Least-squares slope of ``values`` (beta, system) on beta over the finite entries,
    its standard error and the bootstrap percentile interval (systems resampled within
    each beta). NaNs where fewer than two betas have values."""
    nan = {"slope": math.nan, "stderr": math.nan, "interval": [math.nan, math.nan]}
    ok = np.isfinite(values)
    if np.count_nonzero(ok.any(axis=1)) < 2:
        return nan
    bb = np.broadcast_to(beta[:, None], values.shape)
    x, y = bb[ok], values[ok]
    slope, stderr = _ols(x, y)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 28, 2]))
    draws = []
    for _ in range(resamples):
        xs, ys = [], []
        for i in range(values.shape[0]):
            row = values[i][ok[i]]
            if row.size:
                pick = row[rng.integers(0, row.size, row.size)]
                xs.append(np.full(row.size, beta[i]))
                ys.append(pick)
        draws.append(_ols(np.concatenate(xs), np.concatenate(ys))[0])
    tail = 50 * (1 - confidence)
    lo, hi = np.nanpercentile(draws, [tail, 100 - tail])
    return {"slope": slope, "stderr": stderr, "interval": [float(lo), float(hi)]}


def _ols(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    if np.unique(x).size < 2:
        return math.nan, math.nan
    a = np.column_stack([np.ones_like(x), x])
    coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    dof = x.size - 2
    if dof <= 0:
        return float(coef[1]), math.nan
    resid = y - a @ coef
    cov = np.linalg.inv(a.T @ a) * float(resid @ resid) / dof
    return float(coef[1]), float(math.sqrt(cov[1, 1]))


def sqrt_log_exponent(beta: np.ndarray) -> float:
    """The least-squares slope of ``log(sqrt(beta) log beta)`` on ``log beta`` over the
    study's beta (> 1): the growth [Rig25, §5.3] predicts, as an exponent on that range."""
    b = beta[beta > 1]
    if b.size < 2:
        return math.nan
    return float(np.polyfit(np.log(b), np.log(np.sqrt(b) * np.log(b)), 1)[0])


# --- the dataset ---------------------------------------------------------------------------

def variables(series: dict, scalars: dict, beta: np.ndarray) -> dict:
    """This module's data variables of the gathered arrays (``(dims, values, attrs)``)."""
    ts, bs = ("beta", "time", "system"), ("beta", "system")

    def var(dims, values, name=None, units="1"):
        return (dims, values, {"units": units, **({"long_name": name} if name else {})})
    seen = np.isfinite(scalars["kde_modes"])
    with np.errstate(invalid="ignore", divide="ignore"):  # NaN where none is counted
        modes_mean = np.where(seen, scalars["kde_modes"], 0.0).sum(axis=1) / seen.sum(axis=1)
    sqrt_log = np.sqrt(beta) * np.log(beta)
    return {
        "reduced_clusters": var(ts, series["reduced_clusters"], "clusters of the reduced "
                                "merging model from the first plateau (NaN before)"),
        "reduced_energy_scaled": var(ts, series["reduced_energy_scaled"], "S of the "
                                     "reduced model's weighted points"),
        "first_plateau_end": var(bs, scalars["plateau_end"], "T_2: first save after the "
                                 "first plateau with fewer clusters", "model time"),
        "first_plateau_end_low": var(bs, scalars["plateau_end_low"], "the save before "
                                     "T_2", "model time"),
        "reduced_first_merge": var(bs, scalars["reduced_first_merge"], "the reduced "
                                   "model's first merge", "model time"),
        "reduced_merge_error": var(bs, scalars["reduced_merge_error"], "largest relative "
                                   "distance of the reduced model's merge durations from "
                                   "the tokens' brackets of saves"),
        "reduced_merge_relative": var(bs, scalars["reduced_merge_relative"], "largest "
                                      "relative difference of the reduced model's merge "
                                      "durations from the tokens', over their bracket "
                                      "located by re-integration"),
        "reduced_merges_compared": var(bs, scalars["reduced_merges_compared"]),
        "tight_time": var(bs, scalars["tight_time"], "T_1 of [GKPR24]: first time the "
                          "first plateau's clusters are tight, spread <= e^{-beta(1 - "
                          "cos phi)}", "model time"),
        "tight_exponent": var(bs, scalars["tight_exponent"], "beta (1 - cos phi) of the "
                              "closest two clusters at tight_time"),
        "plateau_position_error": var(bs, scalars["position_error"], "mean circular "
                                      "distance, predicted (phases of mode k*) to observed "
                                      "clusters, matched optimally", "rad"),
        "plateau_position_null": var(bs, scalars["position_null"], "the same for the "
                                     "predicted pattern turned at random", "rad"),
        "kde_modes": var(bs, scalars["kde_modes"], "modes of the KDE e^{beta<.,.>} * mu_0 "
                         "of the initial tokens"),
        "kde_modes_mean": var("beta", modes_mean),
        "sqrt_beta_log_beta": var("beta", sqrt_log, "the order of E[modes] [Rig25, §5.3]"),
    }


def attributes(beta: np.ndarray, scalars: dict, c: dict, seed: int,
               normalized: bool = True) -> dict:
    """The fitted slopes with intervals, the mode count's exponent beside that of
    ``sqrt(beta) log beta``, and the reduced model's and the places' summaries."""
    args = (c["bootstrap"], c["confidence"], seed)
    t1 = fit_slope(beta, scalars["plateau_time"], *args)
    tight = fit_slope(beta, scalars["tight_time"], *args)
    with np.errstate(divide="ignore", invalid="ignore"):
        t2 = fit_slope(beta, np.log(scalars["plateau_end"]), *args)
        modes = scalars["kde_modes"]
        kde = fit_slope(np.log(beta), np.where(modes > 0, np.log(modes), np.nan), *args)
    out = {"confidence": c["confidence"], "bootstrap": c["bootstrap"],
           "start": "uniform" if not c["start_caps"] else
           f"caps of radius {c['cap_radius']:g} rad at "
           + ", ".join(f"{a:g}" for a in c["start_caps"]) + " rad"}
    for name, fit in (("t1_slope", t1), ("t1_tight_slope", tight), ("log_t2_slope", t2),
                      ("kde_mode_exponent", kde)):
        out.update({name: fit["slope"], f"{name}_stderr": fit["stderr"],
                    f"{name}_interval": fit["interval"]})
    out["t1_tight_predicted_slope"] = metastable_times.predicted_slope(
        beta, scalars["tight_exponent"], normalized)
    out["sqrt_log_exponent"] = sqrt_log_exponent(beta)
    for name in ("reduced_merge_error", "reduced_merge_relative"):
        err = scalars[name]
        out[f"{name}_max"] = float(np.nanmax(err)) if np.isfinite(err).any() else math.nan
    e, null = scalars["position_error"], scalars["position_null"]
    out["position_error_ratio"] = float(np.nanmean(e) / np.nanmean(null)) \
        if np.isfinite(e).any() else math.nan
    return out
