"""What a particle run builds for discrete layers and for weights that change with depth
(``meanfield.runs.particles`` calls these; docs/weights.md section 7).

- ``weighted_model(cfg)``: the weighted model of a validated config: constant weights
  (``WeightedParticles``, ``RescaledParticles``, or with ``integrator = "layers"`` and
  ``rescaled`` the layers of [GLPR23, Remark 4], ``LayerRescaledParticles``), or a
  ``DepthModel`` of those for ``[weights] layers`` / ``redraw``.
- ``make_stepper(model, cfg, plan, noise)``: ``LayerStepper`` for layers; else the
  model's stepper (``TokenStepper``, or the ``stepper_class`` of a model with phases),
  cut at the switches of the weights (``PiecewiseStepper``) when they change with depth.
- ``same_kernel_at_every_depth(cfg)``: Q^T K = I at every depth (the run's ``energy``
  is that of the kernel e^{beta <x, y>}).
"""
from __future__ import annotations

import numpy as np

from meanfield.config import depth_weights as depth
from meanfield.config.weights import build_feedforward
from meanfield.model import particles as pm
from meanfield.model import weighted_attention as wa
from meanfield.model import weighted_particles as wp
from meanfield.model.depth import DepthModel, PiecewiseStepper, depth_heads
from meanfield.model.layers import LayerRescaledParticles, LayerStepper


def weighted_model(cfg: dict):
    """The weighted token model of a validated config (module docstring)."""
    p, beta = cfg["particles"], cfg["model"]["beta"]
    layers = p["integrator"] == "layers"
    feedforward = build_feedforward(cfg)

    def of_heads(heads):
        if p["rescaled"] and layers:
            return LayerRescaledParticles(heads, beta, p["mask"], p["layer_step"])
        if p["rescaled"]:
            return wp.RescaledParticles(heads, beta, p["mask"])
        return wp.WeightedParticles(heads, beta, p["mask"], feedforward,
                                    on_sphere=p["architecture"] == "post-ln")

    table = cfg.get("weights") or {}
    if depth.depth_key(table) is None:
        return of_heads(wa.build_heads(cfg))
    return DepthModel(table, lambda piece: of_heads(depth_heads(cfg, piece)),
                      cfg["time"]["t_final"])


def make_stepper(model, cfg: dict, plan: dict, noise):
    """The stepper of a particle run (module docstring)."""
    p = cfg["particles"]
    if p["integrator"] == "layers":
        return LayerStepper(model, p["layer_step"])
    stepper_class = getattr(model, "stepper_class", pm.TokenStepper)
    # steps not cut by the saves (adaptive, no noise: TokenStepper.free); the phases of
    # Mix-LN and the pieces of depth-dependent weights land on their switches
    free = {"t_end": cfg["time"]["t_final"]} if stepper_class is pm.TokenStepper and \
        not isinstance(model, DepthModel) else {}
    stepper = stepper_class(model, kappa=plan["kappa"], dt=plan["dt"],
                            tolerance=cfg["time"]["tolerance"], noise=noise, **free)
    if isinstance(model, DepthModel):
        return PiecewiseStepper(stepper, model, cfg["time"]["t_final"])
    return stepper


def same_kernel_at_every_depth(cfg: dict) -> bool:
    """Whether Q^T K = I in every head at every depth a run to ``time.t_final`` meets
    (True for constant weights: their heads are checked by the run's plan)."""
    table = cfg.get("weights") or {}
    if depth.depth_key(table) is None:
        return True
    if "redraw" in table and {"query", "key"} & set(table["redraw"]["matrices"]):
        return False  # (random Q or K: not I, and no need to draw every block)
    eye = np.eye(cfg["domain"]["dim"])
    return all(np.array_equal(h.query.T @ h.key, eye)
               for piece in depth.all_pieces(table, cfg["time"]["t_final"])
               for h in depth_heads(cfg, piece))
