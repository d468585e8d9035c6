"""The normalization study with weights (Q, K, V): each system with its own matrices
(``[weights] per_system = true``, the random kinds drawn from the seeds keyed by (seed,
system)) or all with the same ones; docs/weights.md, "Random weights in the studies".

A member (an architecture, a chunk of systems) runs its systems' full tokens
(``phase_weights.initial_tokens``: i.i.d. uniform on S^{d-1}, system ``s`` from its own
stream) through the batched field of ``phase_weights`` (the systems' weights stacked, the
attention of all systems in batched products) with Dormand-Prince 5(4), one adaptive step
per system (``solvers.steppers.dormand_prince.integrate_batch_dopri``, error ``tolerance``
per step on the entries): Post-LN and nGPT on the sphere (invariant under their fields,
kept to the tolerance), Pre-LN and Peri-LN in R^d, Mix-LN as its Post-LN phase to
``particles.mix_switch`` and its Pre-LN phase from the state there. The gap ``1 - rho`` of
the directions and the mean radius are taken at each save (``gaps_and_radii``), so no
member keeps its states. A system's numbers depend on its seeds and index only, not on
the chunks or the workers.

With Q = K = V = I this is the study's own field (``meanfield.model.normalizations``)
by another integrator; the study runs those without weights.
"""
from __future__ import annotations

import math

import numpy as np

from meanfield.studies.tokens.normalization_theory import gaps_and_radii
from meanfield.studies.tokens.phase_weights import SystemWeights, batch_field, initial_tokens
from solvers.steppers.dormand_prince import integrate_batch_dopri

H0 = 0.01  # first step (then adapted per system)


def phases(architecture: str, switch: float) -> list[tuple[str, float, float]]:
    """``(rule, start, end)`` of each phase: Mix-LN is Post-LN then Pre-LN."""
    if architecture == "mix-ln":
        return [("post-ln", 0.0, switch), ("pre-ln", switch, math.inf)]
    return [(architecture, 0.0, math.inf)]


def run_weighted_member(cfg: dict, plan: dict, params: dict) -> dict:
    """Gaps and mean radii ``(count, 1 + len(times))`` and accepted steps ``(count,)`` of
    systems ``first .. first + count - 1`` of ``params["architecture"]`` with their
    weights (module docstring)."""
    n, d, seed = plan["n"], plan["dim"], cfg["particles"]["seed"]
    first, count = params["first"], params["count"]
    p, tol = cfg["particles"], cfg["normalization"]["tolerance"]
    systems = np.arange(first, first + count)
    x = initial_tokens(n, d, systems, seed)
    weights = SystemWeights.of(cfg, d, systems)
    beta = np.full(count, float(cfg["model"]["beta"]))
    times = np.concatenate([[0.0], plan["times"]])
    gap = np.full((count, times.size), np.nan)
    radius = np.full_like(gap, np.nan)
    gap[:, 0], radius[:, 0] = gaps_and_radii(x)
    steps = np.zeros(count, dtype=np.int64)
    for rule, start, end in phases(params["architecture"], p["mix_switch"]):
        mine = np.nonzero((times > start) & (times <= end))[0]
        stop = [end] if end < times[-1] and end not in times[mine] else []
        saves = np.concatenate([times[mine], stop])
        if saves.size == 0:
            continue
        state = np.empty_like(x)

        def observe(k, index, y, mine=mine, state=state):
            if k < mine.size:
                gap[index, mine[k]], radius[index, mine[k]] = gaps_and_radii(y)
            if k == mine.size + len(stop) - 1:
                state[index] = y  # (the phase's last save: the next phase starts there)
        field = batch_field(rule, beta, weights, np.arange(count), x, p["ngpt_alpha"])
        with np.errstate(over="ignore", invalid="ignore"):
            res = integrate_batch_dopri(field, x, saves, tolerance=tol, observe=observe,
                                        t0=start, h0=min(H0, saves[0] - start))
        steps += res["steps"]
        x = state
    return {"gap": gap, "radius": radius, "steps": steps}


__all__ = ["phases", "run_weighted_member"]
