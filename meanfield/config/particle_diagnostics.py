"""``particles.diagnostics``: the per-frame diagnostics a particle run computes and writes
(``meanfield.runs.particle_dataset``), a list of names by geometry; absent: all of them.

On spheres (circle, sphere, zonal): ``order_parameter`` (``|mean_i x_i|``),
``mean_direction``, ``energy`` (``E_beta(mu^n) - E_beta(uniform)``: one interaction sum,
the cost of one velocity), ``clusters`` (``particles.cluster_method`` at
``particles.cluster_threshold``) and, zonal only, ``axis_order_parameter``. In R^d
(``domain.geometry = "euclidean"``): ``mean_position``, ``spread``, ``max_norm`` and
``clusters``. An empty list keeps the tokens only. The attention rank, the saved attention
and Sinkhorn's diagnostics have their own keys (``attention_rank``, ``save_attention``,
``attention``). The default is every diagnostic of the geometry: measured per frame (one
thread, docs/datasets.md) they cost at most about one velocity evaluation at n = 32
(0.005-0.09 ms), and at n = 4096 the energy costs one velocity (2.4 ms on S^2 by the
harmonic sum, 165 ms on S^15) and the cluster count 35 ms on S^2, 151 ms on S^15, 71 ms in
R^2: the price of a step or less with step doubling (11 velocities a step), so a run's
time is its steps' unless it saves more often than it steps.
"""
from __future__ import annotations

from typing import Any

from meanfield.config import checkers as ck
from meanfield.errors import ConfigError

SPHERE_DIAGNOSTICS = ("order_parameter", "mean_direction", "energy", "clusters",
                      "axis_order_parameter")
EUCLIDEAN_DIAGNOSTICS = ("mean_position", "spread", "max_norm", "clusters")
ALL_DIAGNOSTICS = tuple(dict.fromkeys(SPHERE_DIAGNOSTICS + EUCLIDEAN_DIAGNOSTICS))


def geometry_diagnostics(geometry: str) -> tuple[str, ...]:
    """The diagnostics a particle run of ``geometry`` can compute (its default)."""
    if geometry == "euclidean":
        return EUCLIDEAN_DIAGNOSTICS
    if geometry == "zonal":
        return SPHERE_DIAGNOSTICS
    return SPHERE_DIAGNOSTICS[:-1]


def _names(key: str, value: Any) -> list[str]:
    """A list of distinct diagnostic names (empty: none), in the order of
    ``ALL_DIAGNOSTICS``."""
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{key} = {ck.describe(value)} must be a list of diagnostic "
                          "names (empty: the tokens only) from "
                          + ", ".join(repr(s) for s in ALL_DIAGNOSTICS), key)
    names = [ck.choice(ALL_DIAGNOSTICS)(f"{key}[{i}]", v) for i, v in enumerate(value)]
    if len(set(names)) != len(names):
        raise ConfigError(f"{key} = {ck.describe(value)} names a diagnostic twice", key)
    return [s for s in ALL_DIAGNOSTICS if s in names]


names = ck.accepting("a list of distinct names (empty: the tokens only); on spheres "
                     + ", ".join(repr(s) for s in SPHERE_DIAGNOSTICS[:-1])
                     + " and, zonal, 'axis_order_parameter'; in R^d "
                     + ", ".join(repr(s) for s in EUCLIDEAN_DIAGNOSTICS)
                     + "; absent: all of the geometry's", _names)


def finish_diagnostics(cfg: dict, geometry: str) -> None:
    """Absent: every diagnostic of ``geometry``; given: each must be one of them (one
    line naming the key, the name and the geometry's names)."""
    p = cfg["particles"]
    valid = geometry_diagnostics(geometry)
    if p.get("diagnostics") is None:
        p["diagnostics"] = list(valid)
        return
    for name in p["diagnostics"]:
        if name not in valid:
            raise ConfigError(f"particles.diagnostics names {name!r}, not a diagnostic of "
                              f"tokens with domain.geometry = {geometry!r}; give some of "
                              + ", ".join(repr(s) for s in valid), "particles.diagnostics")
    p["diagnostics"] = [s for s in valid if s in p["diagnostics"]]  # (the geometry's order)
