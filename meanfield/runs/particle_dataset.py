"""The particle dataset: the diagnostics of each frame of tokens and the
``xarray.Dataset`` of a particle run (``meanfield.runs.particles``, whose module docstring
lists the variables and attributes).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import xarray as xr

from meanfield.config.particle_diagnostics import EUCLIDEAN_DIAGNOSTICS, geometry_diagnostics
from meanfield.config.sections import RADIAL_ARCHITECTURES
from meanfield.config.depth_weights import depth_key
from meanfield.config.weights import head_specs, is_identity, is_weighted, scalar_of
from meanfield.metrics import attention as am
from meanfield.metrics import clusters as cl
from meanfield.metrics.cluster_rank import count_clusters
from meanfield.metrics.small_frames import euclidean_frame, sphere_frame
from meanfield.model import kernels
from meanfield.model import particles as pm

def attention_heads(cfg: dict) -> int:
    """The heads whose n x n attention matrices a particle run forms (0: a model of the
    kernel sums, ``meanfield.model.particles``)."""
    return len(head_specs(cfg)) if is_weighted(cfg) else 0


def frame_bytes(cfg: dict, n: int, d: int) -> float:
    """Bytes of one saved frame of ``n`` tokens in R^d: the tokens and their per-token
    values, and with ``particles.save_attention`` the attention matrices (heads x n^2
    doubles) and their two diagnostics (the budget of memory and disk,
    ``meanfield.runs.budget``)."""
    size = n * (d + 1) * 8.0
    if cfg["particles"].get("save_attention"):
        size += attention_heads(cfg) * (n * n + 2) * 8.0
    return size


def diagnostics(x: np.ndarray, cfg: dict, plan: dict,
                attention: np.ndarray | None = None) -> dict:
    """Diagnostics of one frame of tokens (rows of ``x``).

    On a sphere (directions are taken): the empirical measure's as
    ``meanfield.metrics.diagnostics.summarize`` computes the PDE's (weights 1/n), plus
    clusters and the attention rank; in R^d: ``euclidean_diagnostics``; of those, the
    ones ``particles.diagnostics`` asks (absent: all). ``attention``: the
    model's attention matrices ``(heads, n, n)`` of this frame (weighted models), kept
    with ``particles.save_attention`` with their Boolean distance, and ranked.
    """
    p = cfg["particles"]
    geometry = cfg["domain"]["geometry"]
    asked = p.get("diagnostics")  # (config.particle_diagnostics; absent: all)
    asked = geometry_diagnostics(geometry) if asked is None else asked
    if geometry == "euclidean":
        out = euclidean_diagnostics(x, p["cluster_threshold"], p["cluster_method"], asked)
    else:
        th = pm.directions(x)
        n = th.shape[0]
        out = {}
        small = small_frame(th, plan, asked) if SMALL_ASKED.intersection(asked) else None
        if "order_parameter" in asked or "mean_direction" in asked:
            # summarize's (meanfield.metrics.diagnostics) with weights 1/n, without its
            # mass and entropy: the same products, so the same numbers (tensordot's own
            # (1, n) x (n, d) product, without its 10 us of reshaping a frame)
            m = small[0] if small else np.dot(np.full((1, n), 1.0 / n), th)[0]
            r = float(np.linalg.norm(m))
            if "order_parameter" in asked:
                out["order_parameter"] = r
            if "mean_direction" in asked:
                out["mean_direction"] = m / r if r > 0 else np.full(th.shape[-1], np.nan)
        if "energy" in asked:
            energy = math.nan  # E_beta diverges with beta; undefined for other kernels
            if small and small[2] > -math.inf:
                energy = kernels.energy_from_pair_sum(small[1], small[2], th.shape[1],
                                                      plan["beta"])
            elif not math.isinf(plan["beta"]) and plan.get("energy", True):
                energy = pm.interaction_energy(th, plan["beta"], method=plan["sum_method"],
                                               accuracy=p["accuracy"],
                                               threads=plan.get("threads"))
            out["energy"] = energy
        if "axis_order_parameter" in asked:  # (zonal) the PDE's order parameter along e
            out["axis_order_parameter"] = float(np.mean(th[:, 0]))
        if "clusters" in asked:
            out["clusters"] = count_clusters(th, p["cluster_threshold"],
                                             p["cluster_method"])
        if p["attention_rank"] and attention is None:
            out["attention_rank"] = cl.attention_rank(th, plan["beta"],
                                                      cfg["model"]["normalized"],
                                                      p["rank_tolerance"])
    if attention is not None:
        if p["save_attention"]:
            out["attention"] = attention
            out["boolean_distance"] = am.boolean_distance(attention)
        out["attention_rank"] = am.numerical_rank(attention, p["rank_tolerance"])
    return out


SMALL_ASKED = {"order_parameter", "mean_direction", "energy"}  # (small_frame's)


def small_frame(th: np.ndarray, plan: dict, asked: Any) -> tuple | None:
    """``meanfield.metrics.small_frames.sphere_frame`` of a few tokens (``n^2 d <=
    SMALL_FRAME``) with the direct sums; None where the general paths apply (and for
    tokens not finite). Its pair sum only where the energy is defined (``top = -inf``
    else)."""
    n, d = th.shape
    if n * n * d > cl.SMALL_FRAME or plan["sum_method"] != "direct":
        return None
    beta = plan["beta"]
    energy = "energy" in asked and plan.get("energy", True) and 0 < beta < math.inf
    return sphere_frame(th, beta if energy else 0.0, energy)


def euclidean_diagnostics(x: np.ndarray, threshold: float, method: str = "linkage",
                          asked: Any = EUCLIDEAN_DIAGNOSTICS) -> dict:
    """Tokens in R^d: ``mean_position`` (``mean_i x_i``), ``spread``
    (``sqrt(mean_i |x_i - mean|^2)``), ``max_norm`` (``max_i |x_i|``) and ``clusters``
    (single linkage at Euclidean distance ``threshold``, or with ``method = "rank"`` the
    rank of the 0/1 matrix of close pairs); those of ``asked``."""
    out: dict[str, Any] = {}
    n, d = x.shape
    small = euclidean_frame(x) if n * n * d <= cl.SMALL_FRAME else None  # (a few tokens)
    if small is not None:
        out.update(mean_position=small[0], spread=small[1], max_norm=small[2])
    elif "mean_position" in asked or "spread" in asked:
        mean = x.mean(axis=0)
        dev = x - mean
        out["mean_position"] = mean
        out["spread"] = math.sqrt(np.einsum("ij,ij->", dev, dev) / x.shape[0])
    if "max_norm" in asked and small is None:
        out["max_norm"] = float(np.max(np.sqrt(np.einsum("ij,ij->i", x, x))))
    if "clusters" in asked:
        out["clusters"] = count_clusters(x, threshold, method, euclidean=True)
    return {k: v for k, v in out.items() if k in asked}


def component_names(dim: int) -> list[str]:
    return ["x", "y", "z"][:dim] if dim <= 3 else [f"x{i + 1}" for i in range(dim)]


LONG_NAMES = {
    "position": "token direction x_i / |x_i| (unit vector in R^d)",
    "radius": "token length |x_i| (Pre-LN, Peri-LN, Mix-LN: tokens move in R^d)",
    "angle": "token angle on the circle, in [0, 2 pi)",
    "order_parameter": "|mean_i x_i|",
    "axis_order_parameter": "mean_i <x_i, e>: the order parameter along the zonal axis e",
    "mean_direction": "mean_i x_i / |mean_i x_i|",
    "energy": "interaction energy E_beta(mu^n) - E_beta(uniform)",
    "clusters": "single-linkage clusters: tokens linked at chordal distance < threshold",
    "attention_rank": "numerical rank of the attention matrix",
    "mean_position": "mean_i of the tokens (the centroid)",
    "spread": "sqrt(mean_i |x_i - mean|^2)",
    "max_norm": "max_i |x_i|",
    "attention": "attention matrix P_ij (row i: the attention token i gives token j)",
    "boolean_distance": "distance to the nearest Boolean matrix, max_i (1 - max_j P_ij)",
    "sinkhorn_potential": "G = sum_i log u_i of the Sinkhorn scaling P = diag(u) e^L diag(u)",
    "speed_squared_sum": "sum_i |dx_i/dt|^2 (Sinkhorn: dG/dt = -beta times this when V = "
                         "Q^T K)",
    "sinkhorn_error": "max(|P 1 - 1|, |P^T 1 - 1|): the Sinkhorn matrix's marginal error",
}
POSITION_HOLDS = {"x": "token position x_i in R^d (pure self-attention, not normalised)",
                  "z": "rescaled token z_i = e^(-tV) x_i in R^d (not normalised)",
                  "z_layers": "rescaled layer token z_i = R^(-k) x_i, R = I + tau V, in R^d "
                              "(not normalised)"}
ATTENTION_VARS = ("attention", "boolean_distance", "attention_rank")
SINKHORN_VARS = ("sinkhorn_potential", "speed_squared_sum", "sinkhorn_error")


def to_dataset(cfg: dict, plan: dict, times: list[float], frames: list[np.ndarray],
               diags: list[dict], attrs: dict | None = None) -> xr.Dataset:
    """The particle dataset (see the module docstring)."""
    x = np.stack(frames)
    p, m = cfg["particles"], cfg["model"]
    euclidean = cfg["domain"]["geometry"] == "euclidean"
    dims3 = ("time", "particle", "component")
    data: dict[str, Any] = {}
    if euclidean:
        data["position"] = (dims3, x)
        if diags and "mean_position" in diags[0]:
            data["mean_position"] = (("time", "component"),
                                     np.array([d["mean_position"] for d in diags]))
        names = ("spread", "max_norm", "clusters")
    else:
        norms = np.sqrt(np.einsum("tij,tij->ti", x, x))
        data["position"] = (dims3, x / norms[..., None])
        if p["architecture"] in RADIAL_ARCHITECTURES:
            data["radius"] = (("time", "particle"), norms)
        if plan["dim"] == 2:
            data["angle"] = (("time", "particle"),
                             np.mod(np.arctan2(x[..., 1], x[..., 0]), 2 * np.pi))
        if diags and "mean_direction" in diags[0]:
            data["mean_direction"] = (("time", "component"),
                                      np.array([d["mean_direction"] for d in diags]))
        names = ("order_parameter", "energy", "clusters")
        if not plan.get("energy", True):
            names = ("order_parameter", "clusters")
        if cfg["domain"]["geometry"] == "zonal":
            names += ("axis_order_parameter",)
    for name in names + ("attention_rank",) + SINKHORN_VARS:  # (weighted rank: per head)
        if diags and name in diags[0] and np.ndim(diags[0][name]) == 0:
            data[name] = (("time",), np.array([d[name] for d in diags]))
    data.update(_attention_vars(diags, plan["heads"]))
    coords = {"time": np.array(times, dtype=float), "particle": np.arange(plan["n"]),
              "component": component_names(plan["dim"])}
    if "attention" in data:
        coords["key"] = np.arange(plan["n"])
    ds = xr.Dataset(data, coords=coords)
    units = {"time": "1 (time in units of the model)", "angle": "rad"}
    for name in ds.data_vars:
        ds[name].attrs["units"] = units.get(name, "1")
        ds[name].attrs["long_name"] = LONG_NAMES[name]
    ds["time"].attrs["units"] = units["time"]
    holds = ("z_layers" if p.get("integrator") == "layers" else "z") if p["rescaled"] \
        else "x"
    if euclidean:
        ds["position"].attrs["long_name"] = POSITION_HOLDS[holds]
    if "clusters" in ds:  # (particles.diagnostics may leave it out)
        ds["clusters"].attrs.update(_cluster_attrs(p, euclidean))
    if "attention_rank" in ds:
        ds["attention_rank"].attrs["tolerance"] = p["rank_tolerance"]
    model, title = _model_title(cfg, plan)
    if p["attention"] == "sinkhorn":  # (the doubly stochastic scaling of the same kernel)
        if model.startswith("SA"):  # (SA: softmax rows) "Sinkhorn with weights", ...
            # (Q = K = V = I: plain "Sinkhorn", as the softmax rule reads "SA")
            new = "Sinkhorn" if is_identity(cfg) and not cfg.get("feedforward") else \
                "Sinkhorn" + model[2:]
            model, title = new, title.replace(model, new)
        else:
            model, title = f"{model}, Sinkhorn attention", f"{title}, Sinkhorn attention"
    ds.attrs.update({
        "title": title, "kind": "particles", "geometry": cfg["domain"]["geometry"],
        "dim": plan["dim"], "model": model, "architecture": p["architecture"],
        "beta": plan["beta"], "kappa": m["kappa"], "n": plan["n"], "seed": p["seed"],
        "sum_method": plan["sum_method"], "sum_order": plan["sum_order"],
        "accuracy": p["accuracy"], "rescaled": int(p["rescaled"]), "mask": p["mask"],
        "heads": plan["heads"], "attention": p["attention"],
        "position_holds": holds if euclidean else "x / |x| (unit vectors)",
    })
    if cfg["domain"]["geometry"] == "zonal":
        ds.attrs["axis"] = "e = (1, 0, ..., 0): the zonal density's axis"
    ds.attrs.update(attrs or {})
    return ds


def _cluster_attrs(p: dict, euclidean: bool) -> dict:
    """The attrs of ``clusters``: its long name, ``threshold`` and ``method``."""
    threshold = p["cluster_threshold"]
    if p["cluster_method"] == "rank":  # [GLPR25, §6.3]'s count (metrics.cluster_rank)
        name = f"rank of 1[|x_i - x_j| < threshold = {threshold:g}]"
    else:
        name = ("single-linkage clusters: tokens linked at Euclidean distance < threshold"
                if euclidean else LONG_NAMES["clusters"]) + f" = {threshold:g}"
    return {"long_name": name, "threshold": threshold, "method": p["cluster_method"]}


def _attention_vars(diags: list[dict], heads: int) -> dict:
    """The saved attention and its diagnostics: one head without a ``head`` dim, several
    with one (before ``particle``)."""
    data: dict[str, Any] = {}
    if not diags:
        return data
    lead = ("time",) if heads == 1 else ("time", "head")
    for name in ATTENTION_VARS:
        if name not in diags[0] or np.ndim(diags[0][name]) == 0:
            continue  # (absent, or the rank of the sphere's SA path: a scalar)
        values = np.array([d[name] for d in diags])
        if heads == 1:
            values = values[:, 0]
        data[name] = (lead + (("particle", "key") if name == "attention" else ()), values)
    return data


def _model_title(cfg: dict, plan: dict) -> tuple[str, str]:
    """The ``model`` attribute and the dataset's title."""
    p, m = cfg["particles"], cfg["model"]
    n, dim, beta = plan["n"], plan["dim"], plan["beta"]
    extras = ([f"{plan['heads']} heads"] if plan["heads"] > 1 else []) + \
        ([f"feed-forward {cfg['feedforward']['activation']}"] if cfg.get("feedforward")
         else []) + ([f"{p['mask']} mask"] if p["mask"] != "none" else [])
    depth = depth_key(cfg.get("weights"))  # (config.depth_weights; layers: config.layers)
    extras += ([f"weights changing with depth ({depth})"] if depth else []) + \
        ([f"layers tau = {p['layer_step']:g}"] if p.get("integrator") == "layers" else [])
    more = "".join(", " + e for e in extras)
    if p["architecture"] == "pure":
        model = "pure rescaled" if p["rescaled"] else "pure"
        flow = ", rescaled z = e^(-tV) x" if p["rescaled"] else ""
        if p["rescaled"] and p.get("integrator") == "layers":
            flow = ", rescaled z = R^(-k) x, R = I + tau V"
        return model, (f"{n} tokens, pure self-attention in R^{dim}{flow}, beta = "
                       f"{beta:g}{more}")
    if plan.get("weighted"):
        model = "SA with weights"
        specs = head_specs(cfg)
        if len(specs) == 1 and not depth and all(
                scalar_of(specs[0][k], dim, f"weights.{k}") == 1.0 for k in ("query", "key")):
            c = scalar_of(specs[0]["value"], dim, "weights.value")
            if c is not None and c != 1.0:  # say V = c I (c < 0: repulsive) in the title
                scaled = {1.0: "I", -1.0: "-I"}.get(c, f"{c:g}I")  # -I, not -1 I
                model = f"SA with V = {scaled}" + (" (repulsive)" if c < 0 else "")
    else:
        model = {"post-ln": "SA" if m["normalized"] else "USA",
                 "pre-ln": f"Pre-LN {'SA' if m['normalized'] else 'USA'}",
                 "mix-ln": f"Mix-LN {'SA' if m['normalized'] else 'USA'} (switch at t = "
                           f"{p['mix_switch']:g})",
                 "peri-ln": "Peri-LN", "ngpt": f"nGPT (alpha = {p['ngpt_alpha']:g})",
                 "hardmax": "hardmax"}[p["architecture"]]
    return model, (f"{n} tokens, {model} on S^{dim - 1}, beta = {beta:g}, kappa = "
                   f"{m['kappa']:g}{more}")
