"""The ``[initial]`` section: its kind and that kind's parameters (defaults below), on the
circle, the sphere S^2 and, for the kinds of ``ANY_DIM_KINDS``, S^{d-1}."""
from __future__ import annotations

from typing import Any

from meanfield.config import checkers as ck
from meanfield.config.renamed import renamed_key_error
from meanfield.errors import ConfigError

INITIAL_KINDS = ("uniform", "perturbed", "von_mises", "mixture", "samples", "equiangular",
                 "tokens")
# Kinds that define tokens rather than a density: particle runs only.
PARTICLE_ONLY_KINDS = ("equiangular", "tokens")
# Kinds defined on S^{d-1} for every d (the others only on S^1 and S^2).
ANY_DIM_KINDS = ("uniform", "von_mises", "mixture", "equiangular", "tokens")
# A von Mises-Fisher centre is used as given (the density assumes |center| = 1), so it
# must be a unit vector to round-off of typed decimals: a stricter test than the
# token arrays' (meanfield.initial.tokens.TOKEN_UNIT_TOLERANCE), which are renormalised.
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
}


def validate_initial_section(given: dict, cfg: dict, key: str = "initial") -> dict:
    """The registry's validator of ``[initial]`` (reads ``cfg["domain"]``)."""
    domain = cfg["domain"]
    return validate_initial(given, domain["geometry"], domain["dim"], key)


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
    if dim > 3:
        kinds = tuple(k for k in kinds if k in ANY_DIM_KINDS)
    kind = raw.get("kind", "perturbed" if dim <= 3 else "uniform")
    if not isinstance(kind, str) or kind not in kinds:  # (an array answers == elementwise)
        where = f" in dimension {dim}" if dim > 3 else ("" if allow_mixture else
                                                         " as a mixture component")
        raise ck.unknown_name(f"{key}.kind", kind, kinds, f"initial kind{where}")
    params = INITIAL_PARAMS[geometry][kind]
    allowed = {"kind", *params} | ({"weight"} if not allow_mixture else set())
    for name in raw:
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
        else:
            out["degree"] = ck.integer(k("degree"), out["degree"], minimum=1)
            out["order"] = ck.integer(k("order"), out["order"], minimum=-out["degree"])
            if abs(out["order"]) > out["degree"]:
                raise ConfigError(f"{k('order')} = {out['order']!r} must satisfy |order| <= "
                                  f"degree = {out['degree']}", k("order"))
        out["amplitude"] = ck.finite_number(k("amplitude"), out["amplitude"], minimum=-1.0,
                                            maximum=1.0)
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
        else:
            out["unit_rows"] = ck.boolean(k("unit_rows"), out["unit_rows"])
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
