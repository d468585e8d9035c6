"""The sections of the token studies (docs/datasets.md) and the tasks that take them:
systems of tokens integrated in batches, no PDE grid.

    [phase_diagram] dims [[2, 8, 32, 128, 1024]] (token dimensions d >= 2), beta
                    [{start = 0.1, stop = 9.0, num = 50}] (a list or {start, stop, num},
                    >= 0, increasing), times [{start = 0.0, stop = 30.0, num = 121}]
                    (>= 0, increasing), systems [2048] per beta, threshold [0.999] in
                    (-1, 1), tolerance [1e-5] (error per Dormand-Prince step), engine
                    ["numba" | "numpy" (the batched reference) | "torch" | "cupy" (the
                    batched scheme on that library, on its GPU if any; installed by
                    the user)], batch [4096] ((system,
                    beta) pairs in one member), freeze [true] (stop a system once every
                    pair is past the threshold with the margin that keeps it there),
                    precision ["double" | "single" (the Gram field's inner work in
                    float32; state, stages and step control float64)]. n
                    from particles.n (default 32 here), seed from particles.seed.

Tasks: phase_diagram (model, output, particles, parallel, phase_diagram: its tokens need
no domain or grid), normalization, long_context and metastability (below). They join the
other studies' in ``meanfield.config.studies`` (``STUDY_SECTIONS``, ``STUDY_TASKS``).
"""
from __future__ import annotations

import json
import math

from meanfield.config import checkers as ck
from meanfield.config.sections import Section
from meanfield.errors import ConfigError

ENGINES = ("numba", "numpy", "torch", "cupy")
PRECISIONS = ("double", "single")  # the Gram field's inner work (phase_gram_single)


def _increasing_grid(key: str, value, minimum: float) -> list[float]:
    """A non-empty, strictly increasing list (or range) of numbers >= ``minimum``."""
    values = ck.list_or_range(key, value, minimum=minimum)
    for i in range(1, len(values)):
        if values[i] <= values[i - 1]:
            raise ConfigError(f"{key} = {ck.describe(value)} must be strictly increasing "
                              f"(entry {i}: {values[i]!r} after {values[i - 1]!r})", key)
    return values


def _dims(key: str, value) -> list[int]:
    """Distinct integers d >= 2 (a list or a range {start, stop, num}), sorted."""
    dims = ck.list_or_range(key, value, integers=True)
    for i, d in enumerate(dims):
        if d < 2:
            raise ConfigError(f"{key}[{i}] = {d!r}: tokens live on S^(d-1) with d >= 2", key)
    if len(set(dims)) != len(dims):
        raise ConfigError(f"{key} = {ck.describe(value)} names a dimension twice", key)
    return sorted(dims)


def _threshold(key: str, value) -> float:
    """A finite number in (-1, 1) (a cosine)."""
    x = ck.finite_number(key, value)
    if not -1.0 < x < 1.0:
        raise ConfigError(f"{key} = {ck.describe(value)} must lie in (-1, 1) (a cosine "
                          "<x_i, x_j>; 1 is reached only in infinite time)", key)
    return x


def _finish_phase_diagram(cfg: dict) -> None:
    """The defaults given as ranges become lists (as a range given by the user does)."""
    p = cfg["phase_diagram"]
    for key in ("beta", "times"):
        if isinstance(p[key], dict):
            p[key] = _increasing_grid(f"phase_diagram.{key}", p[key], 0.0)


TOKEN_STUDY_SECTIONS: tuple[Section, ...] = (
    Section("phase_diagram", {
        "dims": (_dims, [2, 8, 32, 128, 1024]),
        "beta": (ck.accepting(f"{ck.INCREASING_TEXT} >= 0 and <= {ck.shown_number(ck.MAX_BETA)}, or {ck.RANGE_TEXT}",
                              lambda k, v: ck.betas(_increasing_grid(k, v, 0.0), k)),
                 {"start": 0.1, "stop": 9.0, "num": 50}),
        "times": (ck.accepting(f"{ck.INCREASING_TEXT} >= 0, or {ck.RANGE_TEXT}",
                               lambda k, v: _increasing_grid(k, v, 0.0)),
                  {"start": 0.0, "stop": 30.0, "num": 121}),
        "systems": (ck.integer_in(1, 10**7), 2048),
        "threshold": (_threshold, 0.999),
        "tolerance": (ck.number_in(0.0, True, 1e-2), 1e-5),
        "engine": (ck.choice(ENGINES), "numba"),
        "batch": (ck.integer_in(1, 10**6), 4096),
        "freeze": (ck.boolean, True),
        "precision": (ck.choice(PRECISIONS), "double"),
    }, finish=_finish_phase_diagram),
)
TOKEN_STUDY_TASKS: dict[str, tuple[str, ...]] = {
    "phase_diagram": ("model", "output", "particles", "parallel", "weights", "phase_diagram"),
}


# --- [normalization] and [long_context] (issue 12, items 5 and 6) ----------------------
#
#   [normalization] dim [512] (d >= 2), systems [256], chunk [64] (systems per task),
#                   times [{start = 0.05, stop = 1e4, num = 281, scale = "log"}] (> 0,
#                   strictly increasing; a list, or a range with scale "linear" | "log"),
#                   tolerance [1e-9] (error per adaptive RK4 step), fit_floor [1e-14] <
#                   fit_ceiling [1e-3] (the band of 1 - rho fitted), offset_ratio [0.01]
#                   (Pre-LN fit from t >= |c|/offset_ratio), band [0.9] (of the systems,
#                   shaded). n from particles.n (32 when absent), seed from particles.seed,
#                   beta and normalized from [model] (kappa must be inf).
#   [long_context]  rho [0.5] in (0, 1), gamma [[0.5, 1, 1.5] / (1 - rho)] (> 0, increasing),
#                   n [{start = 2, stop = 1e15, num = 57, scale = "log"}] (integers >= 2,
#                   <= 1e18, increasing), direct_max [1024] (explicit tokens up to this n;
#                   0: none), seed [0] (their random rotation), tolerance [1e-2].

SCALES = ("linear", "log")


_GRIDS: dict[tuple, list] = {}  # _grid's accepted values (every config validates these
# sections' defaults, ranges of up to 57 numbers checked one by one: 2 ms of each particle
# run's validation, issue 32)


def _grid(key: str, value, *, minimum: float, strict: bool = False,
          integers: bool = False, maximum: float | None = None) -> list:
    """A non-empty strictly increasing list, or a range ``{start, stop, num, scale}``
    (``scale`` "linear": ``numpy.linspace``; "log": ``numpy.geomspace``, start > 0;
    integers: rounded, repeats dropped). A value accepted before is answered from
    ``_GRIDS`` (keyed by its JSON text, which tells 1 from 1.0 and true; a copy)."""
    try:
        memo = (key, json.dumps(value, sort_keys=True, allow_nan=False), minimum, strict,
                integers, maximum)
    except (TypeError, ValueError):
        memo = None
    if memo is not None and memo in _GRIDS:
        return list(_GRIDS[memo])
    values = _checked_grid(key, value, minimum=minimum, strict=strict, integers=integers,
                           maximum=maximum)
    if memo is not None and len(_GRIDS) < 256:
        _GRIDS[memo] = list(values)
    return values


def _checked_grid(key: str, value, *, minimum: float, strict: bool = False,
                  integers: bool = False, maximum: float | None = None) -> list:
    """``_grid`` without its memo."""
    import numpy as np

    if isinstance(value, dict) and "scale" in value:
        scale = ck.choice(SCALES)(f"{key}.scale", value["scale"])
        rest = {k: v for k, v in value.items() if k != "scale"}
        if scale == "log":
            start = ck.finite_number(f"{key}.start", rest.get("start"), minimum=0.0,
                                     strict=True)
            stop = ck.finite_number(f"{key}.stop", rest.get("stop"), minimum=0.0,
                                    strict=True)
            num = ck.integer(f"{key}.num", rest.get("num"), minimum=1,
                             maximum=ck.MAX_RANGE_NUM)
            for name in rest:
                if name not in ck.RANGE_KEYS:
                    raise ConfigError(f"{key}.{name} is not a key of a range; "
                                      f"{ck.suggest(name, ck.RANGE_KEYS + ('scale',))}",
                                      f"{key}.{name}")
            values = [float(v) for v in np.geomspace(start, stop, num)]
            if integers:
                values = sorted({round(v) for v in values})
            value = values
        else:
            value = rest
    values = ck.list_or_range(key, value, minimum=minimum, strict=strict,
                              integers=integers)
    for i in range(1, len(values)):
        if values[i] <= values[i - 1]:
            raise ConfigError(f"{key} = {ck.describe(value)} must be strictly increasing "
                              f"(entry {i}: {values[i]!r} after {values[i - 1]!r})", key)
    if maximum is not None and values[-1] > maximum:
        raise ConfigError(f"{key} = {ck.describe(value)}: values must be <= {maximum:g}",
                          key)
    return values


def _open_unit(key: str, value) -> float:
    """A finite number in (0, 1)."""
    x = ck.finite_number(key, value)
    if not 0.0 < x < 1.0:
        raise ConfigError(f"{key} = {ck.describe(value)} must lie in (0, 1)", key)
    return x


def _finish_normalization(cfg: dict) -> None:
    c = cfg["normalization"]
    if isinstance(c["times"], dict):
        c["times"] = _grid("normalization.times", c["times"], minimum=0.0, strict=True)
    if c["fit_floor"] >= c["fit_ceiling"]:
        raise ConfigError(f"normalization.fit_floor = {c['fit_floor']:g} must be below "
                          f"normalization.fit_ceiling = {c['fit_ceiling']:g} (the band of "
                          "1 - rho that is fitted)", "normalization.fit_floor")


# the architectures the normalization study runs side by side (meanfield.model.normalizations)
NORMALIZATION_ARCHITECTURES = ("post-ln", "pre-ln", "peri-ln", "ngpt", "mix-ln")


def _architectures(key: str, value) -> list[str]:
    """A non-empty list of distinct names of ``NORMALIZATION_ARCHITECTURES``."""
    if not isinstance(value, (list, tuple)) or not value:
        raise ConfigError(f"{key} = {ck.describe(value)} must be a non-empty list of "
                          "architectures, some of " + ", ".join(
                              repr(a) for a in NORMALIZATION_ARCHITECTURES), key)
    for i, name in enumerate(value):
        if name not in NORMALIZATION_ARCHITECTURES:
            raise ck.unknown_name(f"{key}[{i}]", name, NORMALIZATION_ARCHITECTURES,
                                  "architecture")
        if name in value[:i]:
            raise ConfigError(f"{key} = {ck.describe(value)} names {name!r} twice", key)
    return list(value)


def _finish_long_context(cfg: dict) -> None:
    c = cfg["long_context"]
    if isinstance(c["n"], dict):
        c["n"] = _grid("long_context.n", c["n"], minimum=2, integers=True, maximum=1e18)
    if c["gamma"] is None:
        c["gamma"] = [f / (1.0 - c["rho"]) for f in (0.5, 1.0, 1.5)]


TOKEN_STUDY_SECTIONS += (
    Section("normalization", {
        "dim": (ck.integer_in(2, 10**7), 512),
        "systems": (ck.integer_in(1, 10**7), 256),
        "chunk": (ck.integer_in(1, 10**6), 64),
        "times": (ck.accepting(f"{ck.INCREASING_TEXT} > 0, or {ck.SCALED_RANGE_TEXT}",
                               lambda k, v: _grid(k, v, minimum=0.0, strict=True)),
                  {"start": 0.05, "stop": 1e4, "num": 281, "scale": "log"}),
        "tolerance": (ck.number_in(0.0, True, 1e-2), 1e-9),
        "fit_floor": (ck.positive, 1e-14),
        "fit_ceiling": (ck.positive, 1e-3),
        "offset_ratio": (ck.number_in(0.0, True, 1.0), 0.01),
        "band": (_open_unit, 0.9),
        "architectures": (ck.accepting(
            "a non-empty list of distinct names among " + ", ".join(
                f'"{a}"' for a in NORMALIZATION_ARCHITECTURES), _architectures),
            list(NORMALIZATION_ARCHITECTURES)),
    }, finish=_finish_normalization),
    Section("long_context", {
        "rho": (_open_unit, 0.5),
        "gamma": (ck.accepting(f"{ck.INCREASING_TEXT} > 0, or {ck.SCALED_RANGE_TEXT}",
                               lambda k, v: _grid(k, v, minimum=0.0, strict=True)), None),
        "n": (ck.accepting(f"a strictly increasing list of integers >= 2 and <= 1e18, or "
                           f"{ck.SCALED_RANGE_TEXT}",
                           lambda k, v: _grid(k, v, minimum=2, integers=True, maximum=1e18)),
              {"start": 2, "stop": 1e15, "num": 57, "scale": "log"}),
        "direct_max": (ck.integer_in(0, 4096), 1024),
        "seed": (ck.integer_in(0, 2**63 - 1), 0),
        "tolerance": (ck.positive, 1e-2),
    }, finish=_finish_long_context),
)
TOKEN_STUDY_TASKS.update({
    "normalization": ("model", "output", "particles", "parallel", "weights", "normalization"),
    "long_context": ("output", "parallel", "long_context"),
})


# --- [metastability] (issue 12, item 4) -------------------------------------------------
#
#   [metastability] beta [[16, 32, 64, 128, 256]] (> 0, strictly increasing; a list or a
#                   range), systems [8] per beta, chunk [4] (systems per task), times
#                   [{start = 0.1, stop = 1000, num = 101, scale = "log"}] (> 0, strictly
#                   increasing), tolerance [1e-9] (error per adaptive RK4 step),
#                   plateau_ratio [2.0] > 1 (a plateau keeps its count over [t, ratio t]),
#                   collapse_tolerance [0.05] in (0, 1). n from particles.n (256 when
#                   absent), seed and cluster_threshold from [particles], geometry from
#                   [domain] (circle or sphere, dim <= 3), normalized from [model] (kappa
#                   must be inf; model.beta is not used). reduced_model [true] (run the
#                   reduced merging model from each first plateau), kde_modes [true]
#                   (count the KDE modes of the initial tokens), bootstrap [1000] in
#                   [10, 1e5] resamples and confidence [0.95] in (0, 1) for the slopes'
#                   intervals (metastability_merging), start_caps [[]] (angles in rad of
#                   cap centres on a great circle: [GKPR24]'s well-separated start; empty:
#                   uniform), cap_radius [0.05] in (0, 1] (their angular radius).

def _cap_angles(key: str, value) -> list[float]:
    """Angles (rad) of cap centres: a list of finite numbers, distinct mod 2 pi."""
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{key} = {ck.describe(value)}: give a list of angles in "
                          "radians (empty: uniform start)", key)
    angles = [ck.finite_number(f"{key}[{i}]", v) for i, v in enumerate(value)]
    return angles


def _finish_metastability(cfg: dict) -> None:
    c = cfg["metastability"]
    for key in ("beta", "times"):
        if isinstance(c[key], dict):
            c[key] = _grid(f"metastability.{key}", c[key], minimum=0.0, strict=True)
    caps = sorted(a % (2 * math.pi) for a in c["start_caps"])
    gaps = [b - a for a, b in zip(caps, caps[1:])] + [caps[0] + 2 * math.pi - caps[-1]
                                                       for _ in caps[:1]]
    if len(caps) > 1 and min(gaps) <= 2 * c["cap_radius"]:
        raise ConfigError(f"metastability.start_caps = {c['start_caps']!r}: caps of radius "
                          f"metastability.cap_radius = {c['cap_radius']:g} overlap (the "
                          f"closest centres are {min(gaps):.3g} rad apart); give centres "
                          "more than 2 cap_radius apart", "metastability.start_caps")


TOKEN_STUDY_SECTIONS += (
    Section("metastability", {
        "beta": (ck.accepting(f"{ck.INCREASING_TEXT} > 0 and <= {ck.shown_number(ck.MAX_BETA)}, or {ck.SCALED_RANGE_TEXT}",
                              lambda k, v: ck.betas(_grid(k, v, minimum=0.0, strict=True), k)),
                 [16.0, 32.0, 64.0, 128.0, 256.0]),
        "systems": (ck.integer_in(1, 10**6), 8),
        "chunk": (ck.integer_in(1, 10**6), 4),
        "times": (ck.accepting(f"{ck.INCREASING_TEXT} > 0, or {ck.SCALED_RANGE_TEXT}",
                               lambda k, v: _grid(k, v, minimum=0.0, strict=True)),
                  {"start": 0.1, "stop": 1000.0, "num": 101, "scale": "log"}),
        "tolerance": (ck.number_in(0.0, True, 1e-2), 1e-9),
        "plateau_ratio": (ck.number_in(1.0, True, 1e6), 2.0),
        "collapse_tolerance": (_open_unit, 0.05),
        # issue 28: the reduced merging model, the KDE modes, the slopes' intervals
        "reduced_model": (ck.boolean, True),
        "kde_modes": (ck.boolean, True),
        "bootstrap": (ck.integer_in(10, 10**5), 1000),
        "confidence": (_open_unit, 0.95),
        "start_caps": (_cap_angles, []),
        "cap_radius": (ck.number_in(0.0, True, 1.0), 0.05),
    }, finish=_finish_metastability),
)
TOKEN_STUDY_TASKS["metastability"] = ("model", "domain", "output", "particles",
                                      "parallel", "metastability")
