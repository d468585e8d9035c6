"""``long_context(config)``: one attention layer on equiangular inputs with ``beta_n = gamma
log n`` ([Rig25, Theorem 7], after [CLPR26]), as the context length n grows.

Inputs: ``n`` unit vectors with ``<x_i, x_j> = rho`` (``i != j``), ``rho`` in (0, 1). The
layer: ``A_ij = e^{beta_n <x_i, x_j>} / sum_k e^{beta_n <x_i, x_k>}``, ``ATT(x_i) = sum_j
A_ij x_j = r_i theta_i``; the output cosine is ``<theta_i, theta_j>``, ``i != j``.

**Closed form.** By symmetry ``A_ii = a``, ``A_ij = b`` (``i != j``) with ``a + (n - 1) b = 1``:
with ``lambda = gamma (1 - rho) log n`` (so ``n^{gamma (1 - rho)} = e^lambda``),
``a = 1/(1 + (n - 1) e^{-lambda})`` and ``b = e^{-lambda} a``. Then ``ATT_i = (a - b) x_i
+ b S`` with ``S = sum_j x_j``, ``<x_i, S> = s = 1 + (n - 1) rho``, ``|S|^2 = n s``:

    <ATT_i, ATT_j> = (a - b)^2 rho + 2 (a - b) b s + b^2 n s,
    |ATT_i|^2      = (a - b)^2     + 2 (a - b) b s + b^2 n s,

so with ``q = b/(a - b) = 1/(e^lambda - 1)`` (``1/expm1(lambda)``: the softmax denominator
drops out)

    1 - <theta_i, theta_j> = (1 - rho) / (1 + s q (2 + n q)),

exact for every n >= 2 and evaluated in that form (``1 - cos`` directly, no cancellation;
``q`` from ``expm1``): stable for any n up to the 1e18 the config accepts (the largest
term, ``s n q^2 ~ rho n^{2(1 - gamma(1 - rho))}``, stays below 1e36).

**Limits and rates** (``alpha = gamma (1 - rho)``, ``gamma_c = 1/(1 - rho)``):

- ``alpha < 1``: ``q ~ n^{-alpha}``, ``s q (2 + n q) ~ rho n^{2(1 - alpha)} -> inf``: the cosine
  tends to 1, with ``1 - cos ~ ((1 - rho)/rho) n^{-2(1 - alpha)}`` (relative corrections
  ``O(n^{-(1 - alpha)})``). (The exponent is ``2(1 - alpha)``, not ``1 - alpha``: both
  ``q s`` and ``n q`` grow like ``n^{1 - alpha}``.)
- ``alpha = 1``: ``q = 1/(n - 1)`` exactly, ``s q = rho + delta``, ``n q = 1 + delta``
  with ``delta = 1/(n - 1)``: ``1 - cos = (1 - rho)/(1 + 3 rho + (3 + rho) delta +
  delta^2)``, the limit ``4 rho/(1 + 3 rho)``, approached from above as ``cos - limit ~
  (1 - rho)(3 + rho)/((1 + 3 rho)^2 n)``.
- ``alpha > 1``: ``s q ~ rho n^{1 - alpha} -> 0``, ``n q -> 0``: the cosine tends to
  ``rho``, ``cos - rho ~ 2 rho (1 - rho) n^{-(alpha - 1)}``.

So ``|cos - limit| ~ K n^{-e}`` with ``e = 2(1 - alpha)``, 1, ``alpha - 1``: slow near
the critical gamma on either side (``alpha = 1.1``: ``e = 0.1``), which is why the closed
form is carried to huge n.

**Direct check.** For the n of the grid up to ``direct_max``, explicit equiangular tokens
(``meanfield.initial.tokens.equiangular_tokens`` in R^n, turned by a random rotation of
seed ``long_context.seed``) go through the layer as written (the Gram matrix, the
row-wise softmax of ``beta_n G``, ``A X``, normalised rows): ``direct_gap`` is the mean
``1 - cos`` over all pairs (as ``sum_i |theta_i - mean|^2/(n - 1)``, no cancellation),
``direct_spread`` the largest deviation of a pair's cosine from the mean (0 for an exactly
equiangular output: round-off).

Members: one per gamma, through the executor (``[parallel]``); each is seconds at most
(``direct_max`` <= 4096), so no checkpoint beyond the members done.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from meanfield import config as cfgmod
from meanfield.initial.tokens import equiangular_tokens
from meanfield.runs.executor import Executor
from meanfield.studies.dataset import assemble, gather
from meanfield.studies.members import MemberList, run_study

CRITICAL_TOLERANCE = 1e-9  # |gamma (1 - rho) - 1| below this: the critical case
FIT_DECADES = 2.0  # the exponent is fitted over the last this many decades of n
REGIMES = ("subcritical", "critical", "supercritical")


# ---------------------------------------------------------------------------------------
# Theory.

def regime(rho: float, gamma: float) -> str:
    """"subcritical", "critical" or "supercritical": ``gamma (1 - rho)`` below, at
    (within ``CRITICAL_TOLERANCE``) or above 1."""
    alpha = gamma * (1.0 - rho)
    if abs(alpha - 1.0) <= CRITICAL_TOLERANCE:
        return "critical"
    return "subcritical" if alpha < 1.0 else "supercritical"


def limit(rho: float, gamma: float) -> float:
    """The limit of the output cosine ([Rig25, Theorem 7]): 1, ``4 rho/(1 + 3 rho)``,
    ``rho``."""
    return {"subcritical": 1.0, "critical": 4 * rho / (1 + 3 * rho),
            "supercritical": rho}[regime(rho, gamma)]


def approach(rho: float, gamma: float) -> tuple[float, float]:
    """``(K, e)`` with ``|cos - limit| ~ K n^{-e}`` (module docstring)."""
    alpha = gamma * (1.0 - rho)
    kind = regime(rho, gamma)
    if kind == "subcritical":
        return (1.0 - rho) / rho, 2.0 * (1.0 - alpha)
    if kind == "critical":
        return (1.0 - rho) * (3.0 + rho) / (1.0 + 3.0 * rho) ** 2, 1.0
    return 2.0 * rho * (1.0 - rho), alpha - 1.0


def closed_form(n, rho: float, gamma: float) -> dict[str, np.ndarray]:
    """The layer's outputs on equiangular inputs for each n (module docstring).

    Returns:
        ``gap`` (``1 - cos``), ``cosine``, ``distance`` (``|cos - limit|``, without
        cancellation: ``gap`` below the critical gamma, ``(1 - rho) T/(1 + T)`` above,
        ``T = s q (2 + n q)``, and at it ``(1 - rho)(T - 3 rho)/((1 + T)(1 + 3 rho))``
        with ``T - 3 rho = 3 delta + omega (rho + delta)``, ``omega = delta + k (4 +
        2 delta) + k^2 (1 + delta)``, ``k = (n - 1) q - 1 = -n expm1((alpha - 1) log n)/
        expm1(lambda)``, ``delta = 1/(n - 1)``), ``diagonal`` (``a = A_ii``),
        ``off_diagonal`` (``b = A_ij``), arrays over ``n``.
    """
    n = np.asarray(n, dtype=float)
    alpha = gamma * (1.0 - rho)
    lam = alpha * np.log(n)
    with np.errstate(over="ignore"):
        em1 = np.expm1(lam)
        q = 1.0 / em1  # (expm1 overflowing to inf: q = 0, exact to round-off)
        e = np.exp(-lam)
    s = 1.0 + (n - 1.0) * rho
    t = s * q * (2.0 + n * q)
    gap = (1.0 - rho) / (1.0 + t)
    kind = regime(rho, gamma)
    if kind == "subcritical":
        distance = gap
    elif kind == "supercritical":
        distance = (1.0 - rho) * t / (1.0 + t)
    else:
        delta = 1.0 / (n - 1.0)
        k = -n * np.expm1((alpha - 1.0) * np.log(n)) / em1
        omega = delta + k * (4.0 + 2.0 * delta) + k * k * (1.0 + delta)
        excess = 3.0 * delta + omega * (rho + delta)
        distance = np.abs((1.0 - rho) * excess / ((1.0 + t) * (1.0 + 3.0 * rho)))
    a = 1.0 / (1.0 + (n - 1.0) * e)
    return {"gap": gap, "cosine": 1.0 - gap, "distance": distance, "diagonal": a,
            "off_diagonal": e * a}


def direct(n: int, rho: float, gamma: float, seed: int = 0) -> dict[str, float]:
    """The layer applied to explicit equiangular tokens (module docstring): ``gap`` (mean
    ``1 - cos`` over pairs), ``cosine`` (mean over pairs), ``spread`` (max deviation of
    a pair's cosine from the mean), ``diagonal``/``off_diagonal`` (means of ``A``)."""
    x = equiangular_tokens(int(n), int(n), rho, seed)
    beta = gamma * math.log(n)
    w = beta * (x @ x.T)
    w -= w.max(axis=1, keepdims=True)
    np.exp(w, out=w)
    w /= w.sum(axis=1, keepdims=True)
    att = w @ x
    th = att / np.linalg.norm(att, axis=1, keepdims=True)
    dev = th - th.mean(axis=0)
    gap = float(np.einsum("ij,ij->", dev, dev) / (n - 1))
    cos = th @ th.T
    off = ~np.eye(int(n), dtype=bool)
    mean = float(cos[off].mean())
    return {"gap": gap, "cosine": mean, "spread": float(np.max(np.abs(cos[off] - mean))),
            "diagonal": float(np.mean(np.diag(w))), "off_diagonal": float(w[off].mean())}


def fit_exponent(n: np.ndarray, distance: np.ndarray, decades: float = FIT_DECADES
                 ) -> float:
    """``-slope`` of ``log distance`` against ``log n`` over the last ``decades`` of the
    grid (positive finite distances only); NaN with fewer than 3 points."""
    n = np.asarray(n, dtype=float)
    d = np.asarray(distance, dtype=float)
    ok = np.isfinite(d) & (d > 0) & (n >= n[-1] / 10.0**decades)
    if ok.sum() < 3:
        return math.nan
    return float(-np.polyfit(np.log(n[ok]), np.log(d[ok]), 1)[0])


# ---------------------------------------------------------------------------------------
# One member: one gamma over the n grid.

def run_member(cfg: dict, params: dict) -> dict:
    """The closed form over ``long_context.n`` and the direct computation up to
    ``direct_max`` for ``params["gamma"]``."""
    c = cfg["long_context"]
    rho, gamma = c["rho"], params["gamma"]
    ns = np.asarray(c["n"], dtype=np.int64)
    out = {k: v for k, v in closed_form(ns, rho, gamma).items()}
    for name in ("gap", "cosine", "spread", "diagonal", "off_diagonal"):
        out[f"direct_{name}"] = np.full(ns.size, np.nan)
    for i, n in enumerate(ns):
        if n <= c["direct_max"]:
            for name, value in direct(int(n), rho, gamma, c["seed"]).items():
                out[f"direct_{name}"][i] = value
    return out


class LongContextTask(MemberList):
    """Points: the start, then one member per gamma."""

    kind = "long_context"
    noun = "gamma"

    def __init__(self, cfg: dict, executor: Executor, progress: bool):
        super().__init__(cfg, executor, progress,
                         [{"gamma": g} for g in cfg["long_context"]["gamma"]],
                         functools.partial(run_member, cfg))

    def describe(self, params: dict) -> str:
        return f"member gamma = {params['gamma']:g}"

    def dataset(self, frames: list, info: dict) -> xr.Dataset:
        return study_dataset(self.cfg, frames[1:], info)

    def checkpoint(self, state: Any, frames: list) -> xr.Dataset:
        done = [f for f in self.kept(frames)[1:] if isinstance(f, dict)]
        if not done:
            return xr.Dataset()
        return xr.Dataset({f"member_{k}": (("member", "n"), np.stack([f[k] for f in done]))
                           for k in done[0]})

    def restore(self, ckpt: xr.Dataset) -> tuple[Any, list]:
        frames: list = [None]
        names = [k[len("member_"):] for k in ckpt.data_vars if k.startswith("member_")]
        if names:
            for i in range(ckpt.sizes["member"]):
                frames.append({k: ckpt[f"member_{k}"].values[i] for k in names})
        return frames[-1], frames


# ---------------------------------------------------------------------------------------
# The dataset.

def study_dataset(cfg: dict, done: list, info: dict) -> xr.Dataset:
    """The long-context dataset of the members done (NaN for the others)."""
    c = cfg["long_context"]
    rho, gammas = c["rho"], list(c["gamma"])
    ns = np.asarray(c["n"], dtype=np.int64)
    names = ("gap", "cosine", "distance", "diagonal", "off_diagonal", "direct_gap",
             "direct_cosine",
             "direct_spread", "direct_diagonal", "direct_off_diagonal")
    curves = gather(done, names, (len(gammas), ns.size), lambda i: i)
    limits = np.array([limit(rho, g) for g in gammas])
    distance = curves["distance"]
    consts = np.array([approach(rho, g) for g in gammas])
    fitted = np.array([fit_exponent(ns, distance[i]) for i in range(len(gammas))])
    tol = c["tolerance"]
    within = np.full(len(gammas), -1, dtype=np.int64)
    for i in range(len(gammas)):
        bad = np.flatnonzero(~(distance[i] <= tol))
        if bad.size == 0:
            within[i] = ns[0]
        elif bad[-1] + 1 < ns.size:
            within[i] = ns[bad[-1] + 1]
    direct_error = np.abs(curves["direct_cosine"] - curves["cosine"])
    g = ("gamma", "n")
    data = {
        "cosine": (g, curves["cosine"], {"units": "1", "long_name":
                                         "output cosine <theta_i, theta_j> (closed form)"}),
        "gap": (g, curves["gap"], {"units": "1", "long_name": "1 - output cosine (closed "
                                                              "form)"}),
        "diagonal": (g, curves["diagonal"], {"units": "1", "long_name": "A_ii"}),
        "off_diagonal": (g, curves["off_diagonal"], {"units": "1", "long_name":
                                                     "A_ij, i != j"}),
        "direct_cosine": (g, curves["direct_cosine"], {"units": "1", "long_name":
                          "output cosine of explicit tokens, mean over pairs"}),
        "direct_gap": (g, curves["direct_gap"], {"units": "1", "long_name":
                       "1 - output cosine of explicit tokens, mean over pairs"}),
        "direct_spread": (g, curves["direct_spread"], {"units": "1", "long_name":
                          "largest deviation of a pair's output cosine from the mean"}),
        "direct_error": (g, direct_error, {"units": "1", "long_name":
                         "|direct_cosine - cosine|"}),
        "direct_diagonal": (g, curves["direct_diagonal"], {"units": "1"}),
        "direct_off_diagonal": (g, curves["direct_off_diagonal"], {"units": "1"}),
        "distance": (g, distance, {"units": "1", "long_name": "|cosine - limit|"}),
        "limit": ("gamma", limits, {"units": "1", "long_name":
                                    "[Rig25, Theorem 7]: 1, 4 rho/(1 + 3 rho) or rho"}),
        "regime": ("gamma", np.array([regime(rho, x) for x in gammas]),
                   {"long_name": "gamma (1 - rho) below, at or above 1"}),
        "predicted_exponent": ("gamma", consts[:, 1], {"units": "1", "long_name":
                               "e of |cosine - limit| ~ K n^-e"}),
        "predicted_constant": ("gamma", consts[:, 0], {"units": "1", "long_name":
                               "K of |cosine - limit| ~ K n^-e"}),
        "fitted_exponent": ("gamma", fitted, {"units": "1", "long_name":
                            f"-slope of log distance against log n, last {FIT_DECADES:g} "
                            "decades"}),
        "n_within": ("gamma", within, {"units": "1", "long_name":
                     f"smallest n of the grid from which on distance <= {tol:g} (-1: "
                     "never)"}),
    }
    coords = {"gamma": ("gamma", np.asarray(gammas, dtype=float)),
              "n": ("n", ns, {"units": "1"})}
    return assemble(data, coords, {
        "title": f"long context: one attention layer, equiangular inputs rho = {rho:g}, "
                 "beta_n = gamma log n",
        "rho": rho, "critical_gamma": 1.0 / (1.0 - rho), "tolerance": tol,
        "direct_max": c["direct_max"], "n_max": int(ns[-1])}, info)


def long_context(config: dict | None = None, *, out: str | Path | None = None,
                 overwrite: bool = False, resume: bool = False,
                 progress: bool = False) -> xr.Dataset:
    """The long-context study of one config (module docstring).

    Args:
        config: the config; ``[long_context]`` rho, gamma, n, direct_max, seed,
            tolerance.
        out: where to write the netCDF result (default ``output.path``).
        overwrite: replace an existing result.
        resume: continue from ``<out>.checkpoint.nc``.
        progress: a bar over the gammas.

    Returns:
        The study dataset (``status`` -1 when interrupted).

    Raises:
        ConfigError: bad input, before any work.
    """
    cfg = cfgmod.validate(config)
    return run_study(cfg, lambda executor: LongContextTask(cfg, executor, progress), out,
                     overwrite=overwrite, resume=resume, progress=progress)
