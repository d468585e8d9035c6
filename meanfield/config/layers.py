"""The checks of discrete layers and of weights that change with depth (docs/weights.md
section 7): ``[particles] integrator = "layers"`` with ``layer_step`` (tau), and
``[weights] layers`` / ``redraw`` (``meanfield.config.depth_weights``) against the rest of
a config.

- ``finish_integrator`` (the end of the ``[particles]`` finish): ``layer_step`` is given
  exactly with ``integrator = "layers"``; layers run without noise, without ``time.dt``
  (the step is tau), and save on layers: ``time.save_every`` and ``time.t_final`` are
  multiples of tau.
- ``finish_weights`` (the ``[weights]`` finish): the constant weights' checks
  (``weights.finish_weights``), or those of weights that change with depth: a weighted
  architecture; ``rescaled`` only where V is the same at every depth; with layers, the
  switches of the weights on layers. Layers of the rescaled form need R = I + tau V
  invertible ([GLPR23, Remark 4]).
- ``check_task`` (``registry.validate``, before a task's own checks): both are for
  ``meanfield particles`` only.
"""
from __future__ import annotations

import math

import numpy as np

from meanfield.config import depth_weights as depth
from meanfield.config import weights as wmod
from meanfield.config.memory import check_formed
from meanfield.errors import ConfigError

INTEGRATORS = ("ode", "layers")
# a save time is on a layer when t / tau is within this (relative) of an integer
ON_LAYER = 1e-9
# R = I + tau V is refused as singular beyond this condition number (its inverse enters
# every layer of the rescaled form)
MAX_R_CONDITION = 1e12


def _multiple(value: float, tau: float) -> bool:
    """Whether ``value`` is a whole number >= 1 of steps ``tau`` (to ``ON_LAYER``)."""
    ratio = value / tau
    return ratio >= 1 - ON_LAYER and abs(ratio - round(ratio)) <= ON_LAYER * max(1.0, ratio)


def finish_integrator(cfg: dict) -> None:
    """``integrator`` and ``layer_step`` against the noise and the save times."""
    p = cfg["particles"]
    tau = p["layer_step"]
    if p["integrator"] == "ode":
        if tau is not None:
            raise ConfigError(f"particles.layer_step = {tau!r} is the step of "
                              "particles.integrator = \"layers\"; set integrator = "
                              "\"layers\" or leave layer_step out", "particles.layer_step")
        return
    if tau is None:
        raise ConfigError("particles.layer_step is required with particles.integrator = "
                          "\"layers\": the step tau of one layer, x^[k+1] = x^[k] + tau "
                          "v(x^[k]) (tau = 1: the transformer's own layers)",
                          "particles.layer_step")
    kappa = cfg.get("model", {}).get("kappa", math.inf)
    if not math.isinf(kappa):
        raise ConfigError(f"particles.integrator = \"layers\" with model.kappa = {kappa!r}: "
                          "the layers are the deterministic transformer; noise runs with "
                          "integrator = \"ode\" (Euler-Maruyama) or use kappa = \"inf\"",
                          "particles.integrator")
    if "time" not in cfg:
        return
    t = cfg["time"]
    switch = p.get("mix_switch")  # (Mix-LN's phases switch on a layer too)
    if p["architecture"] == "mix-ln" and switch < t["t_final"] and not _multiple(switch, tau):
        raise ConfigError(f"particles.mix_switch = {switch!r} is not a multiple of "
                          f"particles.layer_step = {tau!r}: Mix-LN switches from Post-LN "
                          "to Pre-LN on a layer", "particles.mix_switch")
    if t["dt"] != "auto":
        raise ConfigError(f"time.dt = {t['dt']!r} with particles.integrator = \"layers\": "
                          f"the step is particles.layer_step = {tau!r}; leave time.dt "
                          "out (\"auto\")", "time.dt")
    if tau > t["save_every"] * (1 + ON_LAYER):
        raise ConfigError(f"particles.layer_step = {tau!r} is longer than time.save_every "
                          f"= {t['save_every']!r}: saves land on layers; use layer_step "
                          "<= save_every", "particles.layer_step")
    for key in ("save_every", "t_final"):
        if not _multiple(t[key], tau):
            raise ConfigError(f"time.{key} = {t[key]!r} is not a multiple of "
                              f"particles.layer_step = {tau!r}: saves land on layers; give "
                              f"time.{key} = k tau for a whole k", f"time.{key}")


def finish_weights(cfg: dict) -> None:
    """The ``[weights]`` finish: constant weights (``weights.finish_weights``) or weights
    that change with depth, then the layers' R = I + tau V."""
    key = depth.depth_key(cfg.get("weights"))
    if key is None:
        wmod.finish_weights(cfg)
    elif "particles" in cfg:  # (the PDE tasks refuse them: weights.pde_value_scale)
        _finish_depth(cfg, key)
    p = cfg.get("particles")
    if p is not None and p["integrator"] == "layers" and p["rescaled"]:
        _check_invertible(cfg, p["layer_step"])


def _finish_depth(cfg: dict, key: str) -> None:
    w, p = cfg["weights"], cfg["particles"]
    wmod._check_weighted(cfg, f"weights.{key}", "weights that change with depth")
    t_final = cfg["time"]["t_final"] if "time" in cfg else math.inf
    if p["rescaled"]:
        if key == "redraw" and "value" in w["redraw"]["matrices"]:
            raise ConfigError("weights.redraw.matrices holds 'value' and particles.rescaled "
                              "= true: the rescaling z = e^(-tV) x needs one V at every "
                              "depth; redraw query and key only, or rescaled = false",
                              "weights.redraw.matrices")
        if key == "layers":
            first = w["layers"][0]
            for i, entry in enumerate(w["layers"]):
                if "heads" in entry:
                    raise ConfigError(f"weights.layers[{i}].heads with particles.rescaled "
                                      "= true: the rescaling needs one head", 
                                      f"weights.layers[{i}].heads")
                if entry["value"] != first["value"]:
                    raise ConfigError(f"weights.layers[{i}].value differs from "
                                      "weights.layers[0].value and particles.rescaled = "
                                      "true: the rescaling z = e^(-tV) x needs one V at "
                                      "every depth; use rescaled = false",
                                      f"weights.layers[{i}].value")
        if math.isfinite(t_final):
            wmod._check_rescalable(cfg, t_final)
    if p["integrator"] == "layers" and math.isfinite(t_final):
        tau, unit = p["layer_step"], depth.unit(w)
        if len(depth.switch_times(w, t_final)) and not _multiple(unit, tau):
            where = "weights.redraw.every" if key == "redraw" else "particles.layer_step"
            raise ConfigError(f"{where}: the weights change every {unit:g} units of depth "
                              f"({'redraw.every' if key == 'redraw' else 'one per layers entry'}), "
                              f"not a multiple of particles.layer_step = {tau!r}; the "
                              "weights switch on layers", where)


def _check_invertible(cfg: dict, tau: float) -> None:
    """R = I + tau V of the rescaled layers is invertible (cond <= MAX_R_CONDITION)."""
    check_formed(cfg, "the rescaled layers' R = I + tau V (its condition checked)")
    value = wmod.head_matrices(cfg)[0][2]
    r = np.eye(value.shape[0]) + tau * value
    cond = np.linalg.cond(r)
    if not cond <= MAX_R_CONDITION:  # (also NaN)
        key = "weights.value" if not depth.depth_key(cfg["weights"]) else \
            f"weights.{depth.depth_key(cfg['weights'])}"
        raise ConfigError(f"{key}: R = I + tau V (particles.layer_step = {tau!r}) is singular "
                          f"(condition {cond:.3g}): the rescaled layers z = R^(-k) x need "
                          "R invertible ([GLPR23, Remark 4]); use a smaller layer_step",
                          key)


def check_task(cfg: dict, task: str | None) -> None:
    """Layers and weights that change with depth are for ``meanfield particles`` only."""
    if task in (None, "particles"):
        return
    command = f"meanfield {task.replace('_', '-')}"
    if cfg.get("particles", {}).get("integrator", "ode") != "ode":
        raise ConfigError(f"particles.integrator = \"layers\" is for particle runs "
                          f"(meanfield particles); {command} integrates the ODE: use "
                          "integrator = \"ode\"", "particles.integrator")
    key = depth.depth_key(cfg.get("weights"))
    if key:
        raise ConfigError(f"weights.{key}: weights that change with depth are for particle "
                          f"runs (meanfield particles), not {command}", f"weights.{key}")
