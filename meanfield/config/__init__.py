"""Configuration: one nested dict (or TOML file) per task, validated before any work.

Sections and keys (defaults in brackets)::

    [model]           beta [1.0] >= 0, kappa ["inf"] > 0 or "inf", normalized [true]
    [domain]          geometry ["circle" | "sphere"], dim: the particles' R^d (circle: 2;
                      sphere: 3 [default], or any d > 3 for particle runs)
    [discretization]  method ["spectral" | "finite-volume"], resolution [256] >= 8
                      (circle: points; sphere spectral: band limit L <= 2047; sphere
                      finite volumes: cells, one of 10 4^k + 2),
                      negativity_tolerance [1e-6], cfl [0.8], threads ["auto"]
    [initial]         kind ["perturbed"] and the parameters of that kind (see
                      ``meanfield.initial`` and ``meanfield.initial.sphere``); kind
                      "mixture" takes [[initial.components]]
    [time]            t_final [10.0] > 0, dt ["auto"] > 0, save_every [t_final/100],
                      tolerance [1e-8] (error per step of the adaptive stepper)
    [particles]       n [1000; a token file: its rows] >= 2, seed [0] (initial tokens and
                      noise), architecture ["post-ln" | "pre-ln" | "hardmax"], sum_method
                      ["auto" | "direct" | "fourier" (circle) | "harmonic" (sphere, d = 3)],
                      accuracy [1e-10] of the fast interaction sums, ensemble [8] runs
                      (compare), cluster_threshold [1e-2] (chordal distance),
                      attention_rank [false], rank_tolerance [1e-6], bins ["auto"]
    [output]          path [none], checkpoint_every [60.0] seconds of wall time

``validate`` returns a new dict with every section present and every default filled in;
``ConfigError`` names the key, the value and what is accepted.
"""
from __future__ import annotations

import copy
import difflib
import json
import math
import tomllib
from pathlib import Path
from typing import Any, Callable

from meanfield.errors import ConfigError

GEOMETRIES = ("circle", "sphere")
METHODS = ("spectral", "finite-volume")
METHODS_BY_GEOMETRY = {"circle": METHODS, "sphere": METHODS}
# Finite volumes on the sphere use icosahedral Voronoi meshes of 10 4^k + 2 cells.
SPHERE_MESH_CELLS = tuple(10 * 4**k + 2 for k in range(1, 8))
INITIAL_KINDS = ("uniform", "perturbed", "von_mises", "mixture", "samples", "equiangular",
                 "tokens")
# Kinds that define tokens rather than a density: particle runs only.
PARTICLE_ONLY_KINDS = ("equiangular", "tokens")
# Kinds defined on S^{d-1} for every d (the others only on S^1 and S^2).
ANY_DIM_KINDS = ("uniform", "von_mises", "mixture", "equiangular", "tokens")
ARCHITECTURES = ("post-ln", "pre-ln", "hardmax")
SUM_METHODS = ("auto", "direct", "fourier", "harmonic")

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
# A von Mises-Fisher centre must be a unit vector to this tolerance (it is not normalised).
UNIT_TOLERANCE = 1e-9
# Keys renamed so that one word names one concept: old dotted key -> new dotted key.
# A config using an old name is refused with the new one (validate, --set).
RENAMED_KEYS = {
    "particles.model": "particles.architecture",
    "particles.method": "particles.sum_method",
    "initial.normalize": "initial.unit_rows",
}


def renamed_key_error(key: str) -> ConfigError | None:
    """The ConfigError for a key of ``RENAMED_KEYS`` (None for any other key)."""
    if key not in RENAMED_KEYS:
        return None
    return ConfigError(f"{key} was renamed to {RENAMED_KEYS[key]}", key)


def _suggest(name: str, valid: list[str] | tuple[str, ...]) -> str:
    close = difflib.get_close_matches(name, list(valid), n=1, cutoff=0.5)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return f"valid: {', '.join(repr(v) for v in valid)}{hint}"


def unknown_name(key: str, name: Any, valid, what: str = "value") -> ConfigError:
    """ConfigError for a name that is not one of ``valid`` (with the nearest suggestion)."""
    return ConfigError(f"{key} = {name!r} is not a known {what}; {_suggest(str(name), valid)}", key)


# --- scalar checkers: each returns the cleaned value or raises ConfigError -----------------
def _number(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{key} = {value!r} must be a number", key)
    return float(value)


def finite_number(key: str, value: Any, *, minimum: float | None = None,
                  strict: bool = False, maximum: float | None = None) -> float:
    """A finite float, optionally bounded below (``strict``: exclusive) and above."""
    x = _number(key, value)
    if not math.isfinite(x):
        raise ConfigError(f"{key} = {value!r} must be a finite number", key)
    if minimum is not None and (x <= minimum if strict else x < minimum):
        rel = ">" if strict else ">="
        raise ConfigError(f"{key} = {value!r} must be {rel} {minimum:g}", key)
    if maximum is not None and x > maximum:
        raise ConfigError(f"{key} = {value!r} must be <= {maximum:g}", key)
    return x


def integer(key: str, value: Any, *, minimum: int | None = None) -> int:
    """An int (a float with an integer value is not accepted: resolutions are counts)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{key} = {value!r} must be an integer"
                          + (f" >= {minimum}" if minimum is not None else ""), key)
    if minimum is not None and value < minimum:
        raise ConfigError(f"{key} = {value!r} must be an integer >= {minimum}", key)
    return value


def _kappa(key: str, value: Any) -> float:
    if isinstance(value, str):
        if value.strip().lower() in ("inf", "infinity"):
            return math.inf
        raise ConfigError(f"{key} = {value!r} must be a number > 0 or \"inf\" (no noise)", key)
    x = _number(key, value)
    if math.isnan(x) or x <= 0:
        raise ConfigError(f"{key} = {value!r} must be a number > 0 or \"inf\" (no noise)", key)
    return x


def _auto_or_positive(key: str, value: Any) -> float | str:
    if value == "auto":
        return "auto"
    if isinstance(value, str):
        raise ConfigError(f"{key} = {value!r} must be \"auto\" or a number > 0", key)
    return finite_number(key, value, minimum=0.0, strict=True)


def _auto_or_count(key: str, value: Any) -> int | str:
    if value == "auto":
        return "auto"
    if isinstance(value, str):
        raise ConfigError(f"{key} = {value!r} must be \"auto\" or an integer >= 2", key)
    return integer(key, value, minimum=2)


def _bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key} = {value!r} must be true or false", key)
    return value


def _choice(valid: tuple[str, ...]) -> Callable[[str, Any], str]:
    def check(key: str, value: Any) -> str:
        if value not in valid:
            raise unknown_name(key, value, valid)
        return value
    return check


def _geometry(key: str, value: Any) -> str:
    return _choice(GEOMETRIES)(key, value)


def _unit_vector(key: str, value: Any, dim: int = 3) -> list[float]:
    what = "unit 3-vector [x, y, z]" if dim == 3 else f"unit {dim}-vector"
    if (not isinstance(value, (list, tuple)) or len(value) != dim
            or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value)):
        raise ConfigError(f"{key} = {value!r} must be a {what}", key)
    vec = [float(v) for v in value]
    if not all(math.isfinite(v) for v in vec):
        raise ConfigError(f"{key} = {value!r} must be a finite {what}", key)
    norm = math.sqrt(sum(v * v for v in vec))
    if abs(norm - 1) > UNIT_TOLERANCE:
        raise ConfigError(f"{key} = {value!r} has length {norm:.12g}, not 1: give a "
                          f"{what} (it is not normalised for you)", key)
    return vec


def _threads(key: str, value: Any) -> int | str:
    if value == "auto":
        return "auto"
    return integer(key, value, minimum=1)


def _path(key: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, (str, Path)) or str(value) == "":
        raise ConfigError(f"{key} = {value!r} must be a file path (a non-empty string)", key)
    return str(value)


# section -> key -> (checker, default).  A default of None means "absent".
SCHEMA: dict[str, dict[str, tuple[Callable, Any]]] = {
    "model": {
        "beta": (lambda k, v: finite_number(k, v, minimum=0.0), 1.0),
        "kappa": (_kappa, math.inf),
        "normalized": (_bool, True),
    },
    "domain": {
        "geometry": (_geometry, "circle"),
        "dim": (lambda k, v: integer(k, v, minimum=2), None),
    },
    "discretization": {
        "method": (_choice(METHODS), "spectral"),
        "resolution": (lambda k, v: integer(k, v, minimum=8), 256),
        "negativity_tolerance": (lambda k, v: finite_number(k, v, minimum=0.0), 1e-6),
        "cfl": (lambda k, v: finite_number(k, v, minimum=0.0, strict=True, maximum=1.0), 0.8),
        "threads": (_threads, "auto"),
    },
    "initial": {},  # validated per kind, see _validate_initial
    "time": {
        "t_final": (lambda k, v: finite_number(k, v, minimum=0.0, strict=True), 10.0),
        "dt": (_auto_or_positive, "auto"),
        "save_every": (lambda k, v: finite_number(k, v, minimum=0.0, strict=True), None),
        "tolerance": (lambda k, v: finite_number(k, v, minimum=0.0, strict=True,
                                                 maximum=1e-1), 1e-8),
    },
    "particles": {
        "n": (lambda k, v: integer(k, v, minimum=2), None),
        "seed": (lambda k, v: integer(k, v, minimum=0), 0),
        "architecture": (_choice(ARCHITECTURES), "post-ln"),
        "sum_method": (_choice(SUM_METHODS), "auto"),
        "accuracy": (lambda k, v: finite_number(k, v, minimum=1e-14, maximum=1e-2), 1e-10),
        "ensemble": (lambda k, v: integer(k, v, minimum=1), 8),
        "cluster_threshold": (lambda k, v: finite_number(k, v, minimum=0.0, strict=True,
                                                         maximum=2.0), 1e-2),
        "attention_rank": (_bool, False),
        "rank_tolerance": (lambda k, v: finite_number(k, v, minimum=0.0, strict=True,
                                                      maximum=1.0), 1e-6),
        "bins": (_auto_or_count, "auto"),
    },
    "output": {
        "path": (_path, None),
        "checkpoint_every": (lambda k, v: finite_number(k, v, minimum=0.0, strict=True), 60.0),
    },
}


def _validate_initial(raw: dict, geometry: str, dim: int, key: str = "initial",
                      allow_mixture: bool = True) -> dict:
    if not isinstance(raw, dict):
        raise ConfigError(f"{key} must be a table, got {raw!r}", key)
    kinds = INITIAL_KINDS if allow_mixture else tuple(
        k for k in INITIAL_KINDS if k not in ("mixture", *PARTICLE_ONLY_KINDS))
    if dim > 3:
        kinds = tuple(k for k in kinds if k in ANY_DIM_KINDS)
    kind = raw.get("kind", "perturbed" if dim <= 3 else "uniform")
    if kind not in kinds:
        where = f" in dimension {dim}" if dim > 3 else ("" if allow_mixture else
                                                         " as a mixture component")
        raise unknown_name(f"{key}.kind", kind, kinds, f"initial kind{where}")
    params = INITIAL_PARAMS[geometry][kind]
    allowed = {"kind", *params} | ({"weight"} if not allow_mixture else set())
    for name in raw:
        if name not in allowed:
            renamed = renamed_key_error(f"initial.{name}")
            if renamed is not None:
                raise renamed
            raise ConfigError(f"{key}.{name} is not a parameter of initial kind '{kind}'; "
                              f"{_suggest(name, sorted(allowed))}", f"{key}.{name}")
    out: dict[str, Any] = {"kind": kind}
    for name, default in params.items():
        if name not in raw and default is None:
            raise ConfigError(f"{key}.{name} is required for initial kind '{kind}'",
                              f"{key}.{name}")
        out[name] = raw.get(name, default)
    k = lambda name: f"{key}.{name}"  # noqa: E731
    if kind == "perturbed":
        if geometry == "circle":
            out["mode"] = integer(k("mode"), out["mode"], minimum=1)
            out["phase"] = finite_number(k("phase"), out["phase"])
        else:
            out["degree"] = integer(k("degree"), out["degree"], minimum=1)
            out["order"] = integer(k("order"), out["order"], minimum=-out["degree"])
            if abs(out["order"]) > out["degree"]:
                raise ConfigError(f"{k('order')} = {out['order']!r} must satisfy |order| <= "
                                  f"degree = {out['degree']}", k("order"))
        out["amplitude"] = finite_number(k("amplitude"), out["amplitude"], minimum=-1.0,
                                         maximum=1.0)
    elif kind == "von_mises":
        out["center"] = (finite_number(k("center"), out["center"]) if geometry == "circle"
                         else _unit_vector(k("center"), out["center"], dim))
        out["concentration"] = finite_number(k("concentration"), out["concentration"],
                                             minimum=0.0, maximum=1e8)
    elif kind in ("samples", "tokens"):
        out["path"] = _path(k("path"), out["path"])
        if kind == "samples":
            out["bandwidth"] = _auto_or_positive(k("bandwidth"), out["bandwidth"])
        else:
            out["unit_rows"] = _bool(k("unit_rows"), out["unit_rows"])
    elif kind == "equiangular":
        out["rho"] = finite_number(k("rho"), out["rho"], minimum=-1.0)
        if out["rho"] >= 1:
            raise ConfigError(f"{k('rho')} = {out['rho']!r} must be < 1 (equiangular "
                              "tokens with <x_i, x_j> = rho)", k("rho"))
    elif kind == "mixture":
        comps = out["components"]
        if not isinstance(comps, list) or not comps:
            raise ConfigError(f"{k('components')} must be a non-empty list of tables "
                              "([[initial.components]] in TOML)", k("components"))
        out["components"] = [_validate_initial(c, geometry, dim, f"{k('components')}[{i}]",
                                               allow_mixture=False)
                             for i, c in enumerate(comps)]
    if not allow_mixture:
        out["weight"] = finite_number(k("weight"), raw.get("weight", 1.0), minimum=0.0,
                                      strict=True)
    return out


def validate(config: dict | None) -> dict:
    """Check a config and fill in defaults.

    Args:
        config: nested dict ``{section: {key: value}}``; missing sections and keys take
            their defaults. The input is not modified.

    Returns:
        A new dict with all sections and keys.

    Raises:
        ConfigError: naming the key, the value and what is accepted.
    """
    config = {} if config is None else config
    if not isinstance(config, dict):
        raise ConfigError(f"a config must be a dict of sections, got {type(config).__name__}")
    out: dict[str, dict] = {}
    for section in config:
        if section not in SCHEMA:
            raise ConfigError(f"unknown section [{section}]; {_suggest(section, list(SCHEMA))}",
                              section)
        if not isinstance(config[section], dict):
            raise ConfigError(f"[{section}] must be a table of keys, got {config[section]!r}",
                              section)
    for section, keys in SCHEMA.items():
        given = copy.deepcopy(config.get(section, {}))
        if section == "initial":
            out[section] = _validate_initial(given, out["domain"]["geometry"],
                                             out["domain"]["dim"])
            continue
        for name in given:
            if name not in keys:
                renamed = renamed_key_error(f"{section}.{name}")
                if renamed is not None:
                    raise renamed
                raise ConfigError(f"unknown key {section}.{name}; {_suggest(name, list(keys))}",
                                  f"{section}.{name}")
        clean = {}
        for name, (check, default) in keys.items():
            if given.get(name) is not None:  # None: absent (validate is idempotent)
                clean[name] = check(f"{section}.{name}", given[name])
            else:
                clean[name] = default
        out[section] = clean
        if section == "domain":
            _check_dim(clean)
    _cross_checks(out)
    return out


def _check_dim(domain: dict) -> None:
    """Fill in ``domain.dim`` (2 on the circle, 3 on the sphere) and check it."""
    geometry, dim = domain["geometry"], domain["dim"]
    if geometry == "circle":
        if dim not in (None, 2):
            raise ConfigError(f"domain.dim = {dim!r}: the circle S^1 lives in R^2, so dim "
                              "must be 2; use geometry = \"sphere\" for S^{d-1}, d >= 3",
                              "domain.dim")
        domain["dim"] = 2
    elif dim is None:
        domain["dim"] = 3
    elif dim < 3:
        raise ConfigError(f"domain.dim = {dim!r}: the sphere S^{{d-1}} needs d >= 3 (d = 2 is "
                          "geometry = \"circle\")", "domain.dim")


def check_pde_dim(cfg: dict) -> None:
    """The PDE solvers work on S^1 and S^2 only, with initial densities (not token sets)."""
    if cfg["domain"]["dim"] > 3:
        raise ConfigError(f"domain.dim = {cfg['domain']['dim']}: the PDE solvers are for S^1 "
                          "(dim 2) and S^2 (dim 3); higher dimensions are for particle runs "
                          "(meanfield particles)", "domain.dim")
    kind = cfg["initial"]["kind"]
    if kind in PARTICLE_ONLY_KINDS:
        raise ConfigError(f"initial.kind = {kind!r} defines tokens, not a density: it is for "
                          "particle runs (meanfield particles); the PDE accepts "
                          + ", ".join(repr(k) for k in INITIAL_KINDS
                                      if k not in PARTICLE_ONLY_KINDS), "initial.kind")


def _cross_checks(cfg: dict) -> None:
    geometry, method = cfg["domain"]["geometry"], cfg["discretization"]["method"]
    if method not in METHODS_BY_GEOMETRY[geometry]:
        raise ConfigError(f"discretization.method = {method!r} is not available on the "
                          f"{geometry} yet; available: "
                          + ", ".join(repr(m) for m in METHODS_BY_GEOMETRY[geometry]),
                          "discretization.method")
    res = cfg["discretization"]["resolution"]
    if geometry == "sphere" and method == "spectral" and res > 2047:
        raise ConfigError(f"discretization.resolution = {res} is the band limit of the "
                          "spectral sphere solver and must be <= 2047",
                          "discretization.resolution")
    if geometry == "sphere" and method == "finite-volume" and res not in SPHERE_MESH_CELLS:
        raise ConfigError(f"discretization.resolution = {res} is the number of cells of the "
                          "icosahedral finite-volume mesh; accepted: "
                          + ", ".join(str(c) for c in SPHERE_MESH_CELLS),
                          "discretization.resolution")
    t = cfg["time"]
    if t["save_every"] is None:
        t["save_every"] = t["t_final"] / 100
    if t["save_every"] > t["t_final"]:
        raise ConfigError(f"time.save_every = {t['save_every']!r} must be <= time.t_final "
                          f"= {t['t_final']!r}", "time.save_every")
    if t["dt"] != "auto" and t["dt"] > t["save_every"]:
        raise ConfigError(f"time.dt = {t['dt']!r} must be <= time.save_every = "
                          f"{t['save_every']!r}", "time.dt")
    m = cfg["model"]
    if not m["normalized"] and m["beta"] > 700:
        raise ConfigError(f"model.beta = {m['beta']!r}: the unnormalized (USA) velocity grows "
                          "like e^beta and overflows beyond beta = 700; use normalized = true",
                          "model.beta")


def parse_value(text: str) -> Any:
    """Parse the value of a ``--set key=value`` override as TOML, else as a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_overrides(config: dict, overrides: list[str]) -> dict:
    """Apply ``section.key=value`` overrides (as given to ``--set``) to a raw config."""
    config = copy.deepcopy(config)
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"--set {item!r} must look like section.key=value", "--set")
        dotted, text = item.split("=", 1)
        parts = dotted.strip().split(".")
        if len(parts) != 2 or not all(parts):
            raise ConfigError(f"--set {item!r}: the key must be section.key, e.g. model.beta",
                              "--set")
        section, name = parts
        renamed = renamed_key_error(f"{section}.{name}")
        if renamed is not None:
            raise renamed
        if section not in SCHEMA:
            raise ConfigError(f"--set: unknown section [{section}]; "
                              f"{_suggest(section, list(SCHEMA))}", section)
        config.setdefault(section, {})[name] = parse_value(text.strip())
    return config


def load(path: str | Path, overrides: list[str] | None = None) -> dict:
    """Read a TOML config, apply overrides and validate it."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"config file {str(path)!r} does not exist", "config") from None
    except OSError as exc:
        raise ConfigError(f"config file {str(path)!r} cannot be read: {exc}", "config") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: TOML syntax error: {exc}", "config") from None
    raw = apply_overrides(raw, overrides or [])
    cfg = validate(raw)
    # Relative sample paths are relative to the config file, as a user writing it expects.
    _resolve_sample_paths(cfg["initial"], path.parent)
    return cfg


def _resolve_sample_paths(initial: dict, base: Path) -> None:
    if initial["kind"] in ("samples", "tokens") and not Path(initial["path"]).is_absolute():
        initial["path"] = str(base / initial["path"])
    for comp in initial.get("components") or []:
        _resolve_sample_paths(comp, base)


def to_json(cfg: dict) -> str:
    """The config as a JSON string (``inf`` written as the string "inf") for attributes."""
    def enc(x):
        if isinstance(x, float) and math.isinf(x):
            return "inf"
        if isinstance(x, dict):
            return {k: enc(v) for k, v in x.items()}
        if isinstance(x, list):
            return [enc(v) for v in x]
        return x
    return json.dumps(enc(cfg), sort_keys=True)


def from_json(text: str) -> dict:
    """Inverse of ``to_json``: a validated config. Keys of ``RENAMED_KEYS`` in a config
    saved before the rename are read under their new names (results stay readable)."""
    raw = json.loads(text)
    for old, new in RENAMED_KEYS.items():
        (section, name), (_, new_name) = old.split("."), new.split(".")
        table = raw.get(section)
        if isinstance(table, dict) and name in table:
            table.setdefault(new_name, table.pop(name))
    return validate({s: {k: v for k, v in keys.items() if v is not None}
                     if isinstance(keys, dict) else keys for s, keys in raw.items()})


def same_run(saved_json: str, cfg: dict) -> bool:
    """Whether a config saved by ``to_json`` describes the same run as ``cfg`` (the
    ``[output]`` section aside): the test before resuming from a checkpoint."""
    saved, mine = from_json(saved_json), from_json(to_json(cfg))
    for c in (saved, mine):
        c.pop("output", None)
    return saved == mine
