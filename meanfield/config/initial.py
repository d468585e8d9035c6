"""The ``[initial]`` section: its kind and that kind's parameters (defaults below), on the
circle, the sphere S^2 and, for the kinds of ``ANY_DIM_KINDS``, S^{d-1}.

Tokens in R^d (``domain.geometry = "euclidean"``, particle runs) take the kinds of
``EUCLIDEAN_KINDS``: ``gaussian`` [the default] (``mean`` [zeros], a list of d numbers;
``covariance`` [1.0], a number s > 0 for s I or a list of d rows, symmetric positive
definite), ``tokens`` (``path``: the rows of the file as given, not normalised),
``uniform`` (uniform on the unit sphere S^{d-1} of R^d) and ``equiangular`` (unit
vectors, n <= d). The densities defined on the sphere only (``perturbed``, ``von_mises``,
``samples``, ``mixture``) are refused with the list of these kinds.
"""
from __future__ import annotations

from typing import Any

from meanfield.config import checkers as ck
from meanfield.config.renamed import renamed_key_error
from meanfield.errors import ConfigError

INITIAL_KINDS = ("uniform", "perturbed", "von_mises", "mixture", "samples", "equiangular",
                 "tokens", "gaussian")
# Kinds that define tokens rather than a density on the sphere: particle runs only.
PARTICLE_ONLY_KINDS = ("equiangular", "tokens", "gaussian")
# Kinds of tokens in R^d (geometry "euclidean"); the first is the default.
EUCLIDEAN_KINDS = ("gaussian", "tokens", "uniform", "equiangular")
# Symmetry of a typed covariance: |C - C^T| <= this times max |C| (decimals typed twice
# round the same way, so a symmetric matrix passes exactly; a slip does not).
SYMMETRY_TOLERANCE = 1e-12
# Kinds defined on S^{d-1} for every d (the others only on S^1 and S^2).
ANY_DIM_KINDS = ("uniform", "von_mises", "mixture", "equiangular", "tokens")
# A von Mises-Fisher centre is used as given (the density assumes |center| = 1), so it
# must be a unit vector to round-off of typed decimals: a stricter test than the
# token arrays' (meanfield.model.tokens.TOKEN_UNIT_TOLERANCE), which are renormalised.
CENTER_UNIT_TOLERANCE = 1e-9

# Parameters each initial kind accepts on each geometry, with defaults (None: required).
INITIAL_PARAMS: dict[str, dict[str, dict[str, Any]]] = {
    "circle": {
        "uniform": {},
        "perturbed": {"mode": 1, "amplitude": 0.1, "phase": 0.0},
        "von_mises": {"center": 0.0, "concentration": 1.0},
        "samples": {"path": None, "bandwidth": "auto"},
        "mixture": {"components": None},
        "equiangular": {"rho": 0.0},
        "tokens": {"path": None, "unit_rows": True},
    },
    "sphere": {
        "uniform": {},
        "perturbed": {"degree": 1, "order": 0, "amplitude": 0.1},
        "von_mises": {"center": [0.0, 0.0, 1.0], "concentration": 1.0},
        "samples": {"path": None, "bandwidth": "auto"},
        "mixture": {"components": None},
        "equiangular": {"rho": 0.0},
        "tokens": {"path": None, "unit_rows": True},
    },
    # zonal densities on S^{d-1} (functions of t = cos theta; meanfield.initial.zonal)
    "zonal": {
        "uniform": {},
        "perturbed": {"degree": 1, "amplitude": 0.1},
        "von_mises": {"concentration": 1.0},
        "samples": {"path": None, "bandwidth": "auto"},
        "mixture": {"components": None},
    },
    "euclidean": {
        "gaussian": {"mean": (), "covariance": 1.0},  # (): zeros of dim (filled in)
        "tokens": {"path": None},
        "uniform": {},
        "equiangular": {"rho": 0.0},
    },
}


def validate_initial_section(given: dict, cfg: dict, key: str = "initial") -> dict:
    """The registry's validator of ``[initial]`` (reads ``cfg["domain"]``)."""
    domain = cfg["domain"]
    dim = domain["dim"]
    if isinstance(dim, list):  # (the zonal dimensions of a bifurcation study across d:
        dim = dim[0]  # the zonal kinds' checks do not depend on d)
    return validate_initial(given, domain["geometry"], dim, key)


def validate_initial(raw: dict, geometry: str, dim: int, key: str = "initial",
                     allow_mixture: bool = True) -> dict:
    """A clean ``[initial]`` table (or mixture component, ``allow_mixture=False``).

    Args:
        raw: the table as given.
        geometry: "circle" or "sphere".
        dim: the dimension d of S^{d-1}.
        key: the dotted key of the table, named in errors.
        allow_mixture: False for a mixture component (no mixture, no token kinds; takes
            a ``weight``).

    Returns:
        The kind and all its parameters, defaults filled in.
    """
    if not isinstance(raw, dict):
        raise ConfigError(f"{key} must be a table, got {ck.describe(raw)}", key)
    kinds = INITIAL_KINDS if allow_mixture else tuple(
        k for k in INITIAL_KINDS if k not in ("mixture", *PARTICLE_ONLY_KINDS))
    kinds = (tuple(k for k in EUCLIDEAN_KINDS if k in kinds) if geometry == "euclidean"
             else tuple(k for k in kinds if k in INITIAL_PARAMS[geometry]))
    if geometry not in ("euclidean", "zonal") and dim > 3:
        kinds = tuple(k for k in kinds if k in ANY_DIM_KINDS)
    default = ("gaussian" if geometry == "euclidean" else
               "perturbed" if dim <= 3 or geometry == "zonal" else "uniform")
    kind = raw.get("kind", default)
    if not isinstance(kind, str) or kind not in kinds:  # (an array answers == elementwise)
        where = (" for tokens in R^d (domain.geometry = \"euclidean\")"
                 if geometry == "euclidean" else
                 " for zonal densities" if geometry == "zonal" else
                 f" in dimension {dim}" if dim > 3 else ("" if allow_mixture else
                                                         " as a mixture component"))
        raise ck.unknown_name(f"{key}.kind", kind, kinds, f"initial kind{where}")
    params = INITIAL_PARAMS[geometry][kind]
    allowed = {"kind", *params} | ({"weight"} if not allow_mixture else set())
    for name in raw:
        if name == "center" and geometry == "zonal":
            raise ConfigError(f"{key}.center: a zonal density is symmetric about the fixed "
                              "axis e = (1, 0, ..., 0), so it takes no center; a density "
                              "about another axis is not zonal (tokens on S^{d-1} take "
                              "geometry = \"sphere\")", f"{key}.center")
        if name not in allowed:
            raise renamed_key_error(f"{key}.{name}") or ConfigError(
                f"{key}.{name} is not a parameter of initial kind '{kind}'; "
                f"{ck.suggest(name, sorted(allowed))}", f"{key}.{name}")
    out: dict[str, Any] = {"kind": kind}
    for name, default in params.items():
        if name not in raw and default is None:
            raise ConfigError(f"{key}.{name} is required for initial kind '{kind}'",
                              f"{key}.{name}")
        out[name] = raw.get(name, default)
    _check_params(out, geometry, dim, key)
    if not allow_mixture:
        out["weight"] = ck.finite_number(f"{key}.weight", raw.get("weight", 1.0),
                                         minimum=0.0, strict=True)
    return out


def _check_params(out: dict, geometry: str, dim: int, key: str) -> None:
    """Check (in place) the parameters of ``out["kind"]``."""
    kind = out["kind"]
    k = lambda name: f"{key}.{name}"
    if kind == "perturbed":
        if geometry == "circle":
            out["mode"] = ck.integer(k("mode"), out["mode"], minimum=1)
            out["phase"] = ck.finite_number(k("phase"), out["phase"])
        elif geometry == "zonal":
            out["degree"] = ck.integer(k("degree"), out["degree"], minimum=1)
        else:
            out["degree"] = ck.integer(k("degree"), out["degree"], minimum=1)
            out["order"] = ck.integer(k("order"), out["order"], minimum=-out["degree"])
            if abs(out["order"]) > out["degree"]:
                raise ConfigError(f"{k('order')} = {out['order']!r} must satisfy |order| <= "
                                  f"degree = {out['degree']}", k("order"))
        out["amplitude"] = ck.finite_number(k("amplitude"), out["amplitude"], minimum=-1.0,
                                            maximum=1.0)
    elif kind == "von_mises" and geometry == "zonal":
        out["concentration"] = ck.finite_number(k("concentration"), out["concentration"],
                                                minimum=0.0, maximum=1e8)
    elif kind == "von_mises":
        out["center"] = (ck.finite_number(k("center"), out["center"]) if geometry == "circle"
                         else ck.unit_vector(k("center"), out["center"], dim,
                                             CENTER_UNIT_TOLERANCE))
        out["concentration"] = ck.finite_number(k("concentration"), out["concentration"],
                                                minimum=0.0, maximum=1e8)
    elif kind in ("samples", "tokens"):
        out["path"] = ck.path(k("path"), out["path"])
        if kind == "samples":
            out["bandwidth"] = ck.auto_or_positive(k("bandwidth"), out["bandwidth"])
        elif "unit_rows" in out:  # (tokens in R^d are taken as given)
            out["unit_rows"] = ck.boolean(k("unit_rows"), out["unit_rows"])
    elif kind == "gaussian":
        out["mean"] = ([0.0] * dim if out["mean"] == ()
                       else ck.finite_vector(k("mean"), out["mean"], dim))
        out["covariance"] = _covariance(k("covariance"), out["covariance"], dim)
    elif kind == "equiangular":
        out["rho"] = ck.finite_number(k("rho"), out["rho"], minimum=-1.0)
        if out["rho"] >= 1:
            raise ConfigError(f"{k('rho')} = {out['rho']!r} must be < 1 (equiangular "
                              "tokens with <x_i, x_j> = rho)", k("rho"))
    elif kind == "mixture":
        comps = out["components"]
        if not isinstance(comps, list) or not comps:
            raise ConfigError(f"{k('components')} must be a non-empty list of tables "
                              "([[initial.components]] in TOML)", k("components"))
        out["components"] = [validate_initial(c, geometry, dim, f"{k('components')}[{i}]",
                                              allow_mixture=False)
                             for i, c in enumerate(comps)]


def _covariance(key: str, value: Any, dim: int) -> float | list[list[float]]:
    """A covariance: a number s > 0 (s I) or ``dim`` rows of a symmetric positive
    definite matrix (checked by a Cholesky factorisation)."""
    import numpy as np

    if ck.is_number(value):
        return ck.finite_number(key, value, minimum=0.0, strict=True)
    if (not isinstance(value, (list, tuple)) or len(value) != dim
            or not all(isinstance(r, (list, tuple)) for r in value)):
        raise ConfigError(f"{key} = {ck.describe(value)} must be a number s > 0 (s I) or a "
                          f"list of {dim} rows of {dim} numbers (domain.dim = {dim})", key)
    rows = [ck.finite_vector(f"{key}[{i}]", r, dim) for i, r in enumerate(value)]
    c = np.array(rows)
    if np.max(np.abs(c - c.T)) > SYMMETRY_TOLERANCE * np.max(np.abs(c)):
        i, j = np.unravel_index(np.argmax(np.abs(c - c.T)), c.shape)
        raise ConfigError(f"{key} = {ck.describe(value)} is not symmetric: entry [{i}][{j}] "
                          f"= {c[i, j]!r} but [{j}][{i}] = {c[j, i]!r}", key)
    try:
        np.linalg.cholesky(c)
    except np.linalg.LinAlgError:
        low = float(np.linalg.eigvalsh(c)[0])
        raise ConfigError(f"{key} = {ck.describe(value)} is not positive definite (smallest "
                          f"eigenvalue {low:.6g}); a covariance must be symmetric positive "
                          "definite", key) from None
    return rows
