"""The ``[weights]`` and ``[feedforward]`` sections: the attention weights (Q, K, V) of
the token models, several heads, a feed-forward layer, and the matrices they stand for.

A matrix spec (the value of ``query``, ``key``, ``value`` or ``feedforward.weight``) is
one of, in dimension d = ``domain.dim``:

- ``"identity"``: I;
- a number c: c I;
- a list of d rows of d finite numbers: that matrix;
- ``{kind = "gaussian", scale = s, seed = k}``: i.i.d. N(0, s^2/d) entries (scale
  [1.0] >= 0, seed required: the same seed gives the same matrix, so give Q and K
  different seeds for independent draws);
- ``{kind = "symmetric", eigenvalues = [l_1, ..., l_d], seed = k}``: O diag(l) O^T with
  O Haar-distributed on the orthogonal group (QR of a Gaussian matrix with the signs of
  R's diagonal moved into O; Mezzadri, Notices AMS 54 (2007)), symmetrised to round-off;
- ``{file = "M.npy"}``: a d x d array from a ``.npy`` file, whitespace-separated text
  (``.txt`` or any other suffix) or comma-separated ``.csv``; read when the config is
  validated (shape and finiteness checked) and again when the matrix is built, by the
  one reader of input files (``config.input_files``: a relative path in a config file
  is relative to its folder; the result records the file's path and SHA-256).

``[weights]`` takes ``query``, ``key``, ``value`` [each "identity"], or instead
``heads = [{query, key, value}, ...]`` (several heads: the velocity is the sum of the
single-head velocities; a head's missing matrices are the identity), or weights that
change with depth, ``layers = [...]`` or ``redraw = {...}`` (``depth_weights``). Absent:
one identity head, today's models. The clean table keeps the specs (TOML/JSON values, so the
config stored in a result stays readable), not the arrays: ``head_matrices`` and
``weight_matrix`` build those (the model's heads: ``meanfield.model.weighted_attention.
build_heads``).

``[feedforward]`` takes ``activation`` ("relu" | "tanh"; required once the table has a
key) and ``weight`` (a matrix spec, ["identity"]): the velocity becomes W sigma(a_i),
a_i the attention term summed over the heads. An empty or absent table: no layer.

The PDE takes V = c I only, with Q = K = I and no layer (``pde_value_scale``).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from meanfield.config import checkers as ck
from meanfield.config import depth_weights as depth
from meanfield.config.input_files import read_numbers
from meanfield.config.memory import check_formed
from meanfield.config.study_weight_keys import validate_table
from meanfield.errors import ConfigError
from solvers.matrix_exponential import ShiftedExponential

HEAD_KEYS = ("query", "key", "value")
WEIGHT_KINDS = ("gaussian", "symmetric")
KIND_PARAMS = {"gaussian": ("kind", "scale", "seed"),
               "symmetric": ("kind", "eigenvalues", "seed")}
ACTIVATIONS = ("relu", "tanh")  # meanfield.model.weighted_attention.ACTIVATIONS
FEEDFORWARD_KEYS = ("activation", "weight")  # the keys of [feedforward]
# The architectures of the weighted models (meanfield.model.weighted_attention): general
# weights, heads, feed-forward layers and masks; "pre-ln" and "hardmax" take none of them.
WEIGHTED_ARCHITECTURES = ("post-ln", "pure")
# The fast interaction sums expand the kernel e^{beta <x, y>} of Q = K = V = I only.
FAST_SUMS = ("fourier", "harmonic")
MAX_WEIGHT_SEED = 2**63 - 1
PDE_WEIGHTS = ("the PDE takes weights V = c I only (Q = K = I); other weights run as "
               "particles (meanfield particles)")
SPEC_FORMS = ('"identity", a number c (c I), a list of d rows, {kind = "gaussian", scale, '
              'seed}, {kind = "symmetric", eigenvalues, seed} or {file = "M.npy"} (relative '
              'to the config file)')


# ---------------------------------------------------------------------------------------
# One matrix spec.

def clean_spec(spec: Any, d: int, key: str) -> Any:
    """The clean form of one matrix spec (checked, TOML/JSON values only).

    Args:
        spec: the value as given.
        d: the token dimension (``domain.dim``).
        key: the dotted key, named in errors (``weights.value``).

    Returns:
        ``"identity"``, a float, a list of d lists of d floats, or a table.

    Raises:
        ConfigError: naming ``key`` (or ``key.<param>``), the value and what is accepted.
    """
    spec = ck.plain(spec)  # a numpy array as its rows
    if isinstance(spec, str):
        if spec != "identity":
            raise ConfigError(f"{key} = {ck.describe(spec)} is not a matrix; give "
                              f"{SPEC_FORMS}", key)
        return spec
    if ck.is_number(spec):
        return ck.finite_number(key, spec)
    if isinstance(spec, (list, tuple)):
        return _rows(spec, d, key).tolist()
    if isinstance(spec, dict):
        return _clean_table(spec, d, key)
    raise ConfigError(f"{key} = {ck.describe(spec)} is not a matrix; give {SPEC_FORMS}", key)


def _rows(rows: Any, d: int, key: str) -> np.ndarray:
    """A list of d rows of d finite numbers as a float array."""
    shape = f"{d} x {d}"
    if (not isinstance(rows, (list, tuple)) or len(rows) != d
            or not all(isinstance(r, (list, tuple)) and len(r) == d for r in rows)):
        raise ConfigError(f"{key} = {ck.describe(rows)} must be a {shape} matrix (a list of "
                          f"{d} rows of {d} numbers: domain.dim = {d})", key)
    out = np.empty((d, d))
    for i, row in enumerate(rows):
        for j, v in enumerate(row):
            if not ck.is_number(v):
                raise ConfigError(f"{key}[{i}][{j}] = {ck.describe(v)} must be a number", key)
            out[i, j] = ck.number(key, v)
    _finite(out, key, ck.describe(rows))
    return out


def _finite(m: np.ndarray, key: str, shown: str) -> None:
    if not np.all(np.isfinite(m)):
        i, j = np.argwhere(~np.isfinite(m))[0]
        raise ConfigError(f"{key} = {shown}: entry [{i}][{j}] is {m[i, j]!r}; a weight "
                          "matrix must be finite", key)


def _clean_table(spec: dict, d: int, key: str) -> dict:
    if "file" in spec:
        extra = [k for k in spec if k != "file"]
        if extra:
            raise ConfigError(f"{key}.{extra[0]}: a file spec takes only 'file' "
                              "({file = \"M.npy\"})", f"{key}.{extra[0]}")
        path = ck.path(f"{key}.file", spec["file"])
        _load(path, d, f"{key}.file")
        return {"file": path}
    if "kind" not in spec:
        raise ConfigError(f"{key} = {ck.describe(spec)}: a table spec needs 'kind' "
                          f"({', '.join(repr(k) for k in WEIGHT_KINDS)}) or 'file'", key)
    kind = spec["kind"]
    if not isinstance(kind, str) or kind not in WEIGHT_KINDS:
        raise ck.unknown_name(f"{key}.kind", kind, WEIGHT_KINDS, "weight kind")
    for name in spec:
        if name not in KIND_PARAMS[kind]:
            raise ConfigError(f"{key}.{name} is not a parameter of weight kind '{kind}'; "
                              f"{ck.suggest(name, KIND_PARAMS[kind])}", f"{key}.{name}")
    if "seed" not in spec:
        raise ConfigError(f"{key}.seed is required for weight kind '{kind}' (the matrix is "
                          "drawn from it, so a run can be repeated)", f"{key}.seed")
    seed = ck.integer(f"{key}.seed", spec["seed"], minimum=0, maximum=MAX_WEIGHT_SEED)
    if kind == "gaussian":
        scale = ck.finite_number(f"{key}.scale", spec.get("scale", 1.0), minimum=0.0)
        return {"kind": kind, "scale": scale, "seed": seed}
    eig = spec.get("eigenvalues")
    if (not isinstance(eig, (list, tuple)) or len(eig) != d
            or not all(ck.is_number(v) for v in eig)):
        raise ConfigError(f"{key}.eigenvalues = {ck.describe(eig)} must be a list of d = "
                          f"{d} numbers (domain.dim)", f"{key}.eigenvalues")
    values = [ck.finite_number(f"{key}.eigenvalues", v) for v in eig]
    return {"kind": kind, "eigenvalues": values, "seed": seed}


def _load(path: str, d: int, key: str) -> np.ndarray:
    """The d x d matrix of a file (``.npy``, ``.csv``, else whitespace text)."""
    # (the one reader of input files: regular files only, no pickle, complex refused
    # as in Python, nothing of the file quoted)
    m = read_numbers(path, key, entries=key.removesuffix(".file"))
    if m.shape != (d, d):
        raise ConfigError(f"{key} = {path!r} holds an array of shape {m.shape}; a weight "
                          f"matrix in dimension {d} (domain.dim) has shape ({d}, {d})", key)
    _finite(m, key, repr(path))
    return m


def _generator(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed))


def weight_matrix(spec: Any, d: int, key: str) -> np.ndarray:
    """The ``(d, d)`` matrix of one spec (see the module docstring).

    Args:
        spec: a matrix spec, clean or as given (it is checked again).
        d: the token dimension.
        key: the dotted key, named in errors.

    Returns:
        A new float64 ``(d, d)`` array.

    Raises:
        ConfigError: naming ``key``, for any spec ``clean_spec`` refuses.
    """
    spec = clean_spec(spec, d, key)
    if spec == "identity":
        return np.eye(d)
    if isinstance(spec, float):
        return spec * np.eye(d)
    if isinstance(spec, list):
        return np.array(spec, dtype=float)
    if "file" in spec:
        return _load(spec["file"], d, f"{key}.file")
    rng = _generator(spec["seed"])
    if spec["kind"] == "gaussian":
        return rng.standard_normal((d, d)) * (spec["scale"] / math.sqrt(d))
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    q = q * np.where(np.diag(r) < 0, -1.0, 1.0)  # Haar: the signs of diag(R) into Q
    m = (q * np.array(spec["eigenvalues"])) @ q.T
    return 0.5 * (m + m.T)


def scalar_of(spec: Any, d: int, key: str) -> float | None:
    """c when the spec is exactly c I (an identity, a number, equal eigenvalues of a
    symmetric spec, or a matrix/file that is exactly c I), else None."""
    spec = clean_spec(spec, d, key)
    if spec == "identity":
        return 1.0
    if isinstance(spec, float):
        return spec
    if isinstance(spec, dict) and spec.get("kind") == "symmetric":
        eig = spec["eigenvalues"]
        return eig[0] if all(v == eig[0] for v in eig) else None
    if isinstance(spec, dict) and spec.get("kind") == "gaussian":
        return 0.0 if spec["scale"] == 0 else None
    m = weight_matrix(spec, d, key)
    c = float(m[0, 0])
    return c if np.array_equal(m, c * np.eye(d)) else None


# ---------------------------------------------------------------------------------------
# The sections.

def _dim(cfg: dict) -> int:
    if "domain" not in cfg:
        raise ConfigError("[weights] and [feedforward] need [domain] (dim: the matrices "
                          "are dim x dim)", "domain.dim")
    return cfg["domain"]["dim"]


def _head(table: Any, d: int, key: str) -> dict:
    if not isinstance(table, dict):
        raise ConfigError(f"{key} = {ck.describe(table)} must be a table {{query, key, "
                          "value}", key)
    for name in table:
        if name not in HEAD_KEYS:
            raise ConfigError(f"unknown key {key}.{name}; {ck.suggest(name, HEAD_KEYS)}",
                              f"{key}.{name}")
    return {name: clean_spec(table.get(name, "identity"), d, f"{key}.{name}")
            for name in HEAD_KEYS}


def validate_weights_section(given: dict, cfg: dict, name: str = "weights") -> dict:
    """The registry's validator of ``[weights]`` (reads ``cfg["domain"]``).

    Returns:
        ``{"query", "key", "value"}`` (defaults "identity") or ``{"heads": [...]}``,
        specs in their clean form; validating the result again returns it unchanged.
    """
    if "domain" not in cfg:  # the phase diagram and the normalization study (no [domain])
        return validate_table(given, name)
    if given.get("per_system") is False:  # (the ensemble studies' default, written by
        given = {k: v for k, v in given.items() if k != "per_system"}  # config --defaults)
    if "per_system" in given:
        raise ConfigError(f"{name}.per_system draws random weights afresh per system in the "
                          "ensemble studies (meanfield phase-diagram, meanfield "
                          "normalization); this task has one set of weights",
                          f"{name}.per_system")
    d = _dim(cfg)
    if depth.depth_key(given):  # weights that change with depth (config.depth_weights)
        return depth.validate_depth(
            given, d, name, lambda t, k: validate_weights_section(t, cfg, k), clean_spec)
    if "heads" in given:
        mixed = [k for k in HEAD_KEYS if k in given]
        if mixed:
            raise ConfigError(f"{name}.heads and {name}.{mixed[0]} are both given: give "
                              "query, key, value (one head) or heads = [{query, key, "
                              "value}, ...] (several), not both", f"{name}.heads")
        extra = [k for k in given if k != "heads"]
        if extra:
            raise ConfigError(f"unknown key {name}.{extra[0]}; "
                              f"{ck.suggest(extra[0], HEAD_KEYS + ('heads',))}",
                              f"{name}.{extra[0]}")
        heads = given["heads"]
        if not isinstance(heads, (list, tuple)) or not heads:
            raise ConfigError(f"{name}.heads = {ck.describe(heads)} must be a non-empty "
                              "list of tables {query, key, value} ([[weights.heads]] in "
                              "TOML)", f"{name}.heads")
        return {"heads": [_head(h, d, f"{name}.heads[{i}]") for i, h in enumerate(heads)]}
    return _head(given, d, name)


def head_specs(cfg: dict) -> list[dict]:
    """The clean ``{query, key, value}`` specs of each head (one identity head when the
    config has no ``[weights]``)."""
    w = cfg.get("weights") or {}
    if depth.depth_key(w):  # those of the first unit of depth
        return depth.specs_at(w, 0)
    if "heads" in w:
        return w["heads"]
    return [{k: w.get(k, "identity") for k in HEAD_KEYS}]


def _head_key(cfg: dict, i: int, name: str) -> str:
    return (f"weights.heads[{i}].{name}" if "heads" in (cfg.get("weights") or {})
            else f"weights.{name}")


def is_identity(cfg: dict) -> bool:
    """Whether the weights are one head with Q = K = V = I (today's models)."""
    if depth.depth_key(cfg.get("weights")):
        return False  # weights that change with depth run the weighted models
    specs = head_specs(cfg)
    d = cfg["domain"]["dim"]
    return len(specs) == 1 and all(
        scalar_of(specs[0][k], d, _head_key(cfg, 0, k)) == 1.0 for k in HEAD_KEYS)


def is_weighted(cfg: dict) -> bool:
    """Whether a particle run moves a model of ``meanfield.model.weighted_particles``:
    architecture "pure", or "post-ln" with weights other than the identity, a
    feed-forward layer, a causal mask or saved attention."""
    p = cfg["particles"]
    if p["architecture"] == "pure":
        return True
    return p["architecture"] == "post-ln" and (
        not is_identity(cfg) or bool(cfg.get("feedforward")) or p["mask"] != "none"
        or p["save_attention"])


def validate_feedforward_section(given: dict, cfg: dict, name: str = "feedforward"
                                 ) -> dict:
    """The registry's validator of ``[feedforward]``: ``{}`` (no layer) or
    ``{"activation", "weight"}``."""
    if not given:
        return {}
    d = _dim(cfg)
    keys = FEEDFORWARD_KEYS
    for k in given:
        if k not in keys:
            raise ConfigError(f"unknown key {name}.{k}; {ck.suggest(k, keys)}", f"{name}.{k}")
    if "activation" not in given:
        raise ConfigError(f"{name}.activation is required for a feed-forward layer "
                          f"({', '.join(repr(a) for a in ACTIVATIONS)})",
                          f"{name}.activation")
    return {"activation": ck.choice(ACTIVATIONS)(f"{name}.activation", given["activation"]),
            "weight": clean_spec(given.get("weight", "identity"), d, f"{name}.weight")}


def _not_identity_key(cfg: dict) -> str:
    """The key of the first matrix that is not the identity (``weights.heads`` when
    there are several heads)."""
    specs, d = head_specs(cfg), cfg["domain"]["dim"]
    if len(specs) > 1:
        return "weights.heads"
    for k in HEAD_KEYS:
        if scalar_of(specs[0][k], d, _head_key(cfg, 0, k)) != 1.0:
            return _head_key(cfg, 0, k)
    return "weights"


def _check_weighted(cfg: dict, key: str, what: str) -> None:
    """The particle options that a weighted model (``what``, given at ``key``) needs."""
    p = cfg["particles"]
    if p["architecture"] not in WEIGHTED_ARCHITECTURES:
        raise ConfigError(f"{key}: {what} with particles.architecture = "
                          f"{p['architecture']!r}, which has Q = K = V = I and no layer; "
                          "general weights run with architecture "
                          + " or ".join(repr(a) for a in WEIGHTED_ARCHITECTURES), key)
    # (model.normalized = false is refused where tokens run: runs.particles; the PDE takes
    # V = c I with USA too, and evolve validates the [particles] defaults along)
    if p["sum_method"] in FAST_SUMS:
        raise ConfigError(f"particles.sum_method = {p['sum_method']!r} expands the kernel "
                          f"of Q = K = V = I only; with {what} ({key}) use 'auto' or "
                          "'direct'", "particles.sum_method")


def finish_weights(cfg: dict) -> None:
    """``[weights]`` against ``[particles]`` (when the task runs tokens): other than the
    identity only for the weighted architectures; ``rescaled`` needs one head whose
    e^{tV} can be formed at ``time.t_final``."""
    if "particles" not in cfg or "domain" not in cfg:  # (the token studies: study_weights)
        return
    if not is_identity(cfg):
        _check_weighted(cfg, _not_identity_key(cfg), "weights other than the identity")
    if not cfg["particles"]["rescaled"]:
        return
    specs = head_specs(cfg)
    if len(specs) != 1:
        raise ConfigError(f"weights.heads has {len(specs)} heads and particles.rescaled = "
                          "true: the rescaling z = e^(-tV) x needs a single value matrix; "
                          "give one head or rescaled = false", "weights.heads")
    if "time" in cfg:
        _check_rescalable(cfg, cfg["time"]["t_final"])


def _check_rescalable(cfg: dict, t_final: float) -> None:
    """The rescaled logits at ``t_final`` (``meanfield.model.weighted_attention.
    rescaled_logits``: ``E^T Q^T K E``, ``E = e^{t(V - cI)}``, c the spectral abscissa of
    V, by ``solvers.matrix_exponential`` as the rescaled run forms it) are finite."""
    key = _head_key(cfg, 0, "value")
    check_formed(cfg, "particles.rescaled = true (its logits checked at time.t_final)")
    query, key_matrix, value = head_matrices(cfg)[0]
    with np.errstate(over="ignore", invalid="ignore"):
        kernel = query.T @ key_matrix
    if not np.all(np.isfinite(kernel)):  # (Q and K themselves, whatever V and the time)
        qk = f"{_head_key(cfg, 0, 'query')} and {_head_key(cfg, 0, 'key')}"
        raise ConfigError(f"{qk} with particles.rescaled = true: Q^T K overflows the "
                          f"double range (entries up to {np.max(np.abs(query)):.3g} and "
                          f"{np.max(np.abs(key_matrix)):.3g}); scale Q and K down (their "
                          "product sets the logits, as model.beta does)",
                          _head_key(cfg, 0, "query"))
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            e = ShiftedExponential(value)(t_final)
            logits = e.T @ kernel @ e  # the logits of the unit vectors
    except ValueError as exc:
        raise ConfigError(f"{key} with particles.rescaled = true: {exc} (time.t_final = "
                          f"{t_final:g})", key) from None
    if not np.all(np.isfinite(logits)):
        raise ConfigError(f"{key} with particles.rescaled = true: the rescaled logits "
                          f"E^T Q^T K E, E = e^(t(V - cI)), overflow at time.t_final = "
                          f"{t_final:g} (non-normal growth of V beyond the double range); "
                          "integrate to a smaller time", key)


def finish_feedforward(cfg: dict) -> None:
    """``[feedforward]`` against ``[particles]``: only the weighted architectures take a
    layer, and the rescaled flow takes none."""
    if not cfg["feedforward"] or "particles" not in cfg:
        return
    _check_weighted(cfg, "feedforward", "a feed-forward layer")
    if cfg["particles"]["rescaled"]:
        raise ConfigError("feedforward: the rescaled flow (particles.rescaled = true) is "
                          "the attention term alone (eq. (4)); a feed-forward layer runs "
                          "with rescaled = false", "feedforward")


# ---------------------------------------------------------------------------------------
# What the runs build from a validated config.

def head_matrices(cfg: dict) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The ``(query, key, value)`` matrices of each head of a validated config (absent
    ``[weights]``: one identity head of dimension ``domain.dim``); the model makes its
    heads of them (``meanfield.model.weighted_attention.build_heads``)."""
    d = cfg["domain"]["dim"]
    return [tuple(weight_matrix(spec[k], d, _head_key(cfg, i, k)) for k in HEAD_KEYS)
            for i, spec in enumerate(head_specs(cfg))]


def build_feedforward(cfg: dict) -> tuple[np.ndarray, str] | None:
    """``(W, activation)`` of a validated config's ``[feedforward]``, or None (no layer)."""
    ff = cfg.get("feedforward") or {}
    if not ff:
        return None
    return (weight_matrix(ff.get("weight", "identity"), cfg["domain"]["dim"],
                          "feedforward.weight"), ff["activation"])


def pde_value_scale(cfg: dict) -> float:
    """The c of V = c I for the PDE (1.0 without ``[weights]``).

    Raises:
        ConfigError: naming the key, for weights other than one head with Q = K = I and
            V = c I, and for a feed-forward layer.
    """
    if cfg.get("feedforward"):
        raise ConfigError(f"[feedforward] is given: {PDE_WEIGHTS}", "feedforward")
    if "weights" not in cfg or not cfg["weights"]:
        return 1.0
    if depth.depth_key(cfg["weights"]):
        key = f"weights.{depth.depth_key(cfg['weights'])}"
        raise ConfigError(f"{key}: weights that change with depth run as particles "
                          f"(meanfield particles); {PDE_WEIGHTS}", key)
    specs = head_specs(cfg)
    if len(specs) > 1:
        raise ConfigError(f"weights.heads has {len(specs)} heads: {PDE_WEIGHTS}",
                          "weights.heads")
    d = cfg["domain"]["dim"]
    for name in ("query", "key"):
        key = _head_key(cfg, 0, name)
        if scalar_of(specs[0][name], d, key) != 1.0:
            raise ConfigError(f"{key} = {ck.describe(specs[0][name])}: {PDE_WEIGHTS}", key)
    key = _head_key(cfg, 0, "value")
    c = scalar_of(specs[0]["value"], d, key)
    if c is None:
        raise ConfigError(f"{key} = {ck.describe(specs[0]['value'])}: {PDE_WEIGHTS}", key)
    return c
