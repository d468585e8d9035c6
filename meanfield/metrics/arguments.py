"""The arguments of ``meanfield.metrics.wasserstein``, checked before any work: each bad
one is a ``ConfigError`` (a ``ValueError``) naming the argument, the value and what is
accepted.

The order p is accepted in [1, ``P_MAX``] = [1, 1e4], the bound up to which the sphere's
methods are exact (``sphere_transport.check_sphere_p``); every circle method is exact
there too: atoms against atoms to round-off at any p (``circle_atoms``), densities by
Gauss-Legendre with sqrt(p) nodes a piece above p = 256
(``circle_quadrature.node_count``: at p = 1e4 four times the nodes change W_p by
< 2e-16). W_1e4 is within a factor (mass)^(1e-4) of
the bottleneck distance W_inf, which is not offered.
"""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from meanfield.config.checkers import describe
from meanfield.errors import ConfigError

# W_p on the sphere is computed exactly for p <= P_MAX (sphere_transport.check_sphere_p):
# measured, the certified simplex against scipy's assignment solver on 9 problems (n =
# 20..100, random and 0.01 rad apart) to 1e-12 for p = 3..1e4 (up to 15 solves), the zonal
# quadrature against 4096 nodes to 1e-13. Here, the lowest module of the metrics that
# needs it: the circle's and the sphere's solvers both check p against it.
P_MAX = 1e4


def _is_real(value: Any) -> bool:
    # numbers.Real holds int, float and the numpy integer and float scalars, not complex
    # and not np.bool_; a Python bool is an int, refused by name.
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_p(p: Any) -> float:
    """``p`` as a float in [1, ``P_MAX``], or a ``ConfigError`` naming p."""
    if not _is_real(p) or not (math.isfinite(float(p)) and 1 <= float(p) <= P_MAX):
        raise ConfigError(f"p must be a real number with 1 <= p <= {P_MAX:g}, got "
                          f"{describe(p)} (W_p is a distance for p >= 1; it is computed "
                          f"exactly up to {P_MAX:g})", "p")
    return float(p)


def _count(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
            or int(value) < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {describe(value)}",
                          name)
    return int(value)


def check_arguments(*, p: Any, geometry: Any, method: Any, modulo_rotation: Any,
                    reg: Any, n_projections: Any, seed: Any, starts: Any,
                    methods: tuple[str, ...], geometries: tuple[str, ...]) -> dict:
    """Every argument of ``wasserstein`` but the measures, cleaned (Python types);
    ``methods`` and ``geometries``: the names it accepts.

    Raises:
        ConfigError: naming the argument, its value and what is accepted.
    """
    if geometry is not None and (not isinstance(geometry, str) or geometry not in geometries):
        raise ConfigError(f"geometry must be one of {geometries} or None, got "
                          f"{describe(geometry)}", "geometry")
    if not isinstance(method, str) or method not in methods:
        raise ConfigError(f"method must be one of {methods}, got {describe(method)}",
                          "method")
    if not isinstance(modulo_rotation, (bool, np.bool_)):
        raise ConfigError(f"modulo_rotation must be True or False, got "
                          f"{describe(modulo_rotation)}", "modulo_rotation")
    if not _is_real(reg) or not (math.isfinite(float(reg)) and float(reg) > 0):
        raise ConfigError(f"reg must be a finite number > 0 (the Sinkhorn regularisation, "
                          f"rad^p), got {describe(reg)}", "reg")
    return {"p": check_p(p), "geometry": geometry, "method": method,
            "modulo_rotation": bool(modulo_rotation), "reg": float(reg),
            "n_projections": _count("n_projections", n_projections, 1),
            "seed": _count("seed", seed, 0), "starts": _count("starts", starts, 1)}


def real_array(obj: Any, name: str) -> np.ndarray:
    """``obj`` as a float array, refusing what is not real numbers (complex values,
    strings, booleans, ragged or nested objects) with a ``ConfigError`` naming ``name``.
    """
    try:
        arr = np.asarray(obj)
    except (ValueError, TypeError) as exc:  # ragged lists
        raise ConfigError(f"{name} cannot be read as an array of numbers: "
                          f"{describe(str(exc))}", name) from None
    kind = arr.dtype.kind
    if kind == "c":
        raise ConfigError(f"{name} holds complex values ({describe(obj)}): angles, unit "
                          "vectors and weights are real numbers", name)
    if kind not in "iuf":
        what = {"b": "booleans", "U": "strings", "S": "bytes", "O": "objects that are not "
                "numbers (None, nested or ragged sequences, ...)"}.get(kind, arr.dtype.name)
        raise ConfigError(f"{name} must be real numbers, got {what}: {describe(obj)}", name)
    return arr.astype(float)
