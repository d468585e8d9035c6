"""The diagnostics every density result carries, computed one way for every method.

Given the quadrature weights (grid weights or cell areas), the density values, the unit
vectors of the points and the interaction energy, returns mass, energy, entropy
``int rho log rho`` (0 log 0 = 0), free energy ``entropy / kappa - value * energy`` (with
noise only; ``value`` is the c of the value matrix ``V = c I``, 1 by default), order
parameter ``r = |int x dmu|`` and mean direction ``int x dmu / r`` (NaN when r = 0).
"""
from __future__ import annotations

import numpy as np


def summarize(weights: np.ndarray, rho: np.ndarray, points: np.ndarray, energy: float,
              noise: float, value: float = 1.0) -> dict:
    """Diagnostics of one density (``points`` has a trailing axis of components)."""
    mass_density = weights * rho
    positive = rho > 0
    entropy = float(np.sum((mass_density * np.log(np.where(positive, rho, 1.0)))[positive]))
    m = np.tensordot(mass_density, points, axes=mass_density.ndim)
    r = float(np.linalg.norm(m))
    out = {"mass": float(np.sum(mass_density)), "energy": energy, "order_parameter": r,
           "mean_direction": m / r if r > 0 else np.full(points.shape[-1], np.nan),
           "entropy": entropy}
    if noise > 0:
        out["free_energy"] = noise * entropy - value * energy
    return out
