"""The contraction study's dataset (docs/datasets.md) from its members' distances: the fit
windows, which rate each window measures, and the problems that make ``status`` 1
(``meanfield.studies.transport.contraction`` describes the variables; docs/contraction.md the rates).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import xarray as xr

from meanfield.studies.dataset import assemble, model_name
from meanfield.studies.transport.contraction_rates import fit_rate, window_regime

FIT_NAMES = ("fitted_rate", "fitted_rate_low", "fitted_rate_high", "fit_start", "fit_stop")


def _window_curve(cfg: dict, plan: dict, source: str, value: dict, name: str) -> np.ndarray:
    """The curve ``name`` of a member where the fit may look (NaN elsewhere): tokens
    without noise only once every token is within ``fit_below`` of the limit point; the
    pair without noise only once the distance to the limit point is small too."""
    below = cfg["contraction"]["fit_below"]
    curve = np.asarray(value[name], dtype=float)
    if plan["noisy"]:
        return curve
    if source == "particles":
        curve = np.where(np.asarray(value["max_distance"]) <= below, curve, np.nan)
    if name == "pair_distance":
        curve = np.where(np.asarray(value["distance"]) <= below, curve, np.nan)
    return curve


def _limit(cfg: dict, beta: float, value: dict, fitted: bool) -> str | None:
    """The words of a grid PDE source stopped at its resolution limit (None: not stopped):
    when, what was kept, and what would carry it further."""
    stopped = value.get("stopped", math.nan)
    if not math.isfinite(stopped):
        return None
    needed = value.get("needed_resolution", math.nan)
    raise_to = (f"discretization.resolution = {needed:.0f}" if math.isfinite(needed)
                else "a finer discretization.resolution")
    head = (f"beta = {beta:g}, pde: the grid ({cfg['discretization']['resolution']}) met "
            f"its resolution limit after t = {stopped:g} (the density went negative beyond "
            "the undershoot the accuracy allows: the cluster outgrew the grid)")
    if math.isfinite(value.get("continued", math.nan)):
        return (f"{head}; continued along the characteristics from there (as contraction."
                "pde = \"characteristics\")" + ("" if fitted else "; no rate fitted"))
    return (f"{head}; the source stops there, "
            + ("the rate fitted from the saves before" if fitted else "no rate fitted")
            + f"; to go on give {raise_to}")


def _problem(cfg: dict, plan: dict, beta: float, source: str, value: dict, regime: str,
             fit: tuple, share: np.ndarray) -> str | None:
    """What a member's fit could not measure, in words (None when it measured a rate);
    a source stopped at its resolution limit says so, fit or not (``_limit``)."""
    limit = _limit(cfg, beta, value, math.isfinite(fit[0]))
    if limit is not None:
        return limit
    c = cfg["contraction"]
    times = np.asarray(plan["times"], dtype=float)
    where = f"beta = {beta:g}, {source}"
    if regime == "crossover":
        s = share[(times >= fit[3]) & (times <= fit[4])]
        return (f"{where}: the fit window t = {fit[3]:g}..{fit[4]:g} holds the crossover "
                "from the local rate to the mean-field rate (the far side's share of "
                f"W_2^2 grows from {np.nanmin(s):.2g} to {np.nanmax(s):.2g}); the fitted "
                "rate measures neither: fit one regime, the local one above the "
                "crossover (raise contraction.fit_above) or the mean-field one below it "
                "(lower contraction.fit_below, run longer)")
    if regime != "none" or plan["noisy"]:
        return None
    if source == "particles":
        top = float(np.asarray(value["max_distance"])[-1])
        if top > c["fit_below"]:
            return (f"{where}: the run ended before every token was within "
                    f"contraction.fit_below = {c['fit_below']:g} rad of the limit point "
                    f"(the farthest at {top:.3g} rad at t = {times[-1]:g}), so W_2 never "
                    "reached its linear regime: no rate fitted; run longer (time.t_final)")
        return (f"{where}: fewer than 3 saves with every token within "
                f"contraction.fit_below = {c['fit_below']:g} rad and W_2 above the floor: "
                "no rate fitted; save more often (time.save_every) or run longer")
    d = np.asarray(value["distance"], dtype=float)
    if np.isfinite(d[-1]):  # the run went on to t_final
        return (f"{where}: fewer than 3 saves with W_2 in [floor, fit_below] by t = "
                f"{times[-1]:g} (W_2 = {d[-1]:.3g} there): no rate fitted; run longer "
                "(time.t_final) or save more often (time.save_every)")
    return (f"{where}: fewer than 3 saves with W_2 in [floor, fit_below] before the "
            "cluster's core narrowed below what the grid resolves: no rate fitted; raise "
            "discretization.resolution, or on S^1 give contraction.pde = "
            "\"characteristics\"")


def _fits(cfg: dict, plan: dict, done: list) -> tuple[dict, dict, np.ndarray, list, list]:
    """The curves, the fits, the regimes and the problems of the members done."""
    c = cfg["contraction"]
    times = np.asarray(plan["times"], dtype=float)
    betas, sources = list(c["beta"]), list(c["sources"])
    names = ("distance",) + (("pair_distance",) if c["other"] is not None else ())
    shape = (len(betas), times.size, len(sources))
    curves = {name: np.full(shape, np.nan) for name in (*names, "far_share", "max_distance")}
    stopped = np.full((len(betas), len(sources)), np.nan)
    fits = {name: np.full((len(betas), len(sources), 5), np.nan) for name in names}
    regimes = np.full((len(betas), len(sources)), "none", dtype=object)
    measured, problems = [], []
    for i, value in enumerate(done):
        if not isinstance(value, dict):
            continue
        beta, source = plan["members"][i]
        b, s = betas.index(beta), sources.index(source)
        for name in curves:
            if name in value:
                curves[name][b, :, s] = value[name]
        stopped[b, s] = value.get("stopped", math.nan)
        for name in names:
            floor = value["floor" if name == "distance" else "pair_floor"]
            fits[name][b, s] = fit_rate(times, _window_curve(cfg, plan, source, value, name),
                                        max(floor, c["fit_above"]), c["fit_below"])
        fit = fits["distance"][b, s]
        if source == "pde" and not plan["noisy"]:
            regimes[b, s] = window_regime(times, curves["far_share"][b, :, s], fit[3], fit[4])
        else:
            regimes[b, s] = "local" if math.isfinite(fit[0]) else "none"
        problem = _problem(cfg, plan, beta, source, value, regimes[b, s], fit,
                           curves["far_share"][b, :, s])
        if problem:
            problems.append(problem)
        if math.isfinite(value["predicted"]):
            measured.append((b, value["predicted"]))
    curves["stopped"] = stopped
    return curves, fits, regimes, measured, problems


def _sphere_name(cfg: dict) -> str:
    """S¹, S², or S^{d-1} of a zonal config (superscript digits)."""
    geometry = cfg["domain"]["geometry"]
    if geometry != "zonal":
        return "S¹" if geometry == "circle" else "S²"
    return "S" + str(cfg["domain"]["dim"] - 1).translate(str.maketrans("0123456789",
                                                                       "⁰¹²³⁴⁵⁶⁷⁸⁹"))


def study_dataset(cfg: dict, plan: dict, done: list, info: dict) -> xr.Dataset:
    """The contraction dataset of the members done (NaN for the others); the problems in
    the attr ``problems`` ("" when none)."""
    c, m = cfg["contraction"], cfg["model"]
    times = np.asarray(plan["times"], dtype=float)
    betas, sources = list(c["beta"]), list(c["sources"])
    curves, fits, regimes, measured, problems = _fits(cfg, plan, done)
    local = np.asarray(plan["rates"], dtype=float)
    mean_field = np.asarray(plan["mean_field"], dtype=float)
    for b, rate in measured:  # with noise, measured at a non-uniform stationary state
        if np.isnan(local[b]):
            local[b] = mean_field[b] = rate
    predicted = np.where(regimes == "local", local[:, None],
                         np.where(regimes == "mean-field", mean_field[:, None], np.nan))
    if plan["noisy"]:  # one rate, whatever the window
        predicted = np.repeat(local[:, None], len(sources), axis=1)
    target = "stationary" if plan["noisy"] else "dirac"
    data: dict[str, Any] = {}
    long = {"distance": ("W_2(mu_t, delta_{x_inf})" if target == "dirac"
                         else "W_2(mu_t, mu_inf)"),
            "pair_distance": "W_2 between the solutions from the two starts"
                             + (" (modulo rotation)" if target == "dirac" else "")}
    dims3, dims2 = ("beta", "time", "source"), ("beta", "source")
    for name in fits:
        prefix = "" if name == "distance" else "pair_"
        data[name] = (dims3, curves[name], {"units": "rad", "long_name": long[name]})
        what = f"decay rate of {name}: -slope of log {name} against t"
        texts = (what, what + ", 95 % low", what + ", 95 % high",
                 "first time of the fitted window", "last time of the fitted window")
        for k, (suffix, text) in enumerate(zip(FIT_NAMES, texts)):
            units = "1" if suffix.startswith("fit_") and "rate" not in suffix else "1/time"
            data[prefix + suffix] = (dims2, fits[name][:, :, k],
                                     {"units": units, "long_name": text})
    if not plan["noisy"]:
        data["far_share"] = (dims3, curves["far_share"], {"units": "1", "long_name":
                             "share of W_2^2 carried by the mass farther than pi/2 from "
                             "x_inf (densities)"})
        data["max_distance"] = (dims3, curves["max_distance"], {"units": "rad", "long_name":
                                "largest distance of a token to x_inf"})
    if "pde" in sources and c["pde"] == "grid":
        data["stopped_at"] = (dims2, curves["stopped"], {"units": "1", "long_name":
                              "the last save a PDE source kept before its resolution "
                              "limit stopped it (NaN: not stopped)"})
    data["fit_regime"] = (dims2, regimes.astype(str), {"long_name":
                          "the rate the fit window measures: local, mean-field, crossover "
                          "(neither) or none (no window)"})
    data["predicted_rate"] = (dims2, predicted, {"units": "1/time", "long_name":
                              "the rate of the fit window's regime (fit_regime): local_rate "
                              "or mean_field_rate"})
    data["local_rate"] = ("beta", local, {"units": "1/time", "long_name": (
        "lambda_att: 1 (SA) or e^beta (USA), the rate near the cluster" if target == "dirac"
        else "|sigma| of the slowest mode of the stationary state (closed form when "
        "uniform, else -Re of the leading eigenvalue of F' there)")})
    data["mean_field_rate"] = ("beta", mean_field, {"units": "1/time", "long_name": (
        "min(lambda_att, (d - 1) lambda_rep / 2): a density with mass near the antipode"
        if target == "dirac" else "the local rate (the noise fills the far side)")})
    coords = {"beta": ("beta", np.asarray(betas, dtype=float)),
              "time": ("time", times, {"units": "1"}),
              "source": ("source", np.asarray(sources, dtype=str))}
    ds = assemble(data, coords, {
        "title": f"contraction of {model_name(m['normalized'])} on "
                 f"{_sphere_name(cfg)}, κ = "
                 f"{'∞' if math.isinf(m['kappa']) else format(m['kappa'], 'g')}: W₂ to the "
                 + ("limit point" if target == "dirac" else "stationary state"),
        "geometry": cfg["domain"]["geometry"], "model": model_name(m["normalized"]),
        "kappa": m["kappa"], "target": target, "fit_below": c["fit_below"],
        "fit_above": c["fit_above"], "dt": plan["dt"], "dim": plan["dim"],
        "pde": c["pde"], "problems": "; ".join(problems)}, info)
    if "particles" in sources:
        ds.attrs["n"] = cfg["particles"]["n"]
    return ds
