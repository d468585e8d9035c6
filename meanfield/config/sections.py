"""The core sections of a config and the tasks that take them (defaults in brackets)::

    [model]           beta [1.0] in [-1e8, 1e8] (checkers.MAX_BETA; < 0 on the circle
                      only: negative_beta), kappa ["inf"] > 0 or
                      "inf", normalized [true]
    [domain]          geometry ["circle" | "sphere" | "zonal" | "euclidean"], dim: the
                      particles' R^d (circle: 2; sphere: 3 [default], or any d > 3 for
                      particle runs; zonal: densities on S^{d-1} that depend on the angle
                      to the first axis, any d >= 2 [3], or for the bifurcation study a
                      list or a range {start, stop, num} of them (a study across d);
                      euclidean: tokens in R^d, any d >= 1 [2], particle runs only with
                      architecture "pure")
    [discretization]  method ["spectral" | "finite-volume"], resolution [256] >= 8
                      (circle: points; sphere spectral: band limit L <= 2047; sphere
                      finite volumes: cells, one of 10 4^k + 2; "auto": spectral, to
                      accuracy [1e-8] of max rho), negativity_tolerance [1e-6], cfl
                      [0.8], threads ["auto"]
    [initial]         kind ["perturbed"] and the parameters of that kind
                      (``meanfield.config.initial``)
    [time]            t_final [5.0] > 0, dt ["auto"] > 0, save_every [t_final/100],
                      tolerance [1e-8] (PDE: the error of every saved state relative
                      to max rho; tokens: error per step of the adaptive stepper)
    [particles]       n [1000; a token file: its rows] >= 2, seed [0] (initial tokens and
                      noise), architecture ["post-ln" | "pre-ln" | "hardmax" | "pure" (no
                      normalization, tokens in R^d; the default for geometry "euclidean",
                      which needs it)], sum_method ["auto" | "direct" | "fourier" (circle)
                      | "harmonic" (sphere, d = 3)], accuracy [1e-10] of the fast
                      interaction sums, ensemble [8] runs (compare), cluster_threshold
                      [1e-2] (chordal distance), attention_rank [false], rank_tolerance
                      [1e-6], bins ["auto"], rescaled [false] (pure, one head: the run
                      integrates z = e^(-tV) x, refused where e^(tV) cannot be formed at
                      time.t_final), mask ["none" | "causal" (post-ln, pure)],
                      save_attention [false] (post-ln, pure: attention (time, particle,
                      key)); the normalization family: architecture "peri-ln" (tokens in
                      R^d, x' = A/|A|), "ngpt" (on the sphere, ngpt_alpha [1] > 0),
                      "mix-ln" (Post-LN until mix_switch [1] > 0, Pre-LN after);
                      integrator ["ode" | "layers" (the discrete layers of step
                      layer_step, docs/weights.md)], layer_step [none] (tau > 0, layers);
                      attention ["softmax" | "sinkhorn" (doubly stochastic; post-ln,
                      pure)], sinkhorn_tolerance [1e-12], cluster_method ["linkage" |
                      "rank"] (``meanfield.config.attention``), diagnostics [all of the
                      geometry's] (``meanfield.config.particle_diagnostics``)
    [weights]         query, key, value [each "identity"]: "identity", a number c (c I),
                      a list of d rows, {kind = "gaussian", scale, seed}, {kind =
                      "symmetric", eigenvalues, seed} or {file = "M.npy"}; or heads =
                      [{query, key, value}, ...] (several heads); or weights that change
                      with depth, layers = [{query, key, value}, ...] or redraw = {every,
                      kind, scale | eigenvalues, seed, matrices}. Other than the identity:
                      architectures "post-ln" and "pure"; the PDE takes V = c I only
                      (``meanfield.config.weights``)
    [feedforward]     activation ["relu" | "tanh"], weight ["identity"] (a matrix as in
                      [weights]): the velocity W sigma(attention term); post-ln and pure,
                      not rescaled. Absent or empty: no layer
    [output]          path [none], checkpoint_every [60.0] seconds of wall time
    [parallel]        workers [1] (1: serial), scheduler [none] (address of a running
                      dask scheduler)

Tasks: evolve (model, domain, discretization, initial, time, output, weights),
particles (+ particles, feedforward), compare (+ particles, parallel). The PDE tasks
(evolve, compare and the PDE studies) refuse geometry "euclidean" and weights other than
V = c I, Q = K = I (``check_pde_task``, run by ``registry.validate``).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from meanfield.config import checkers as ck
from meanfield.config.auto_resolution import RESOLUTION, check_auto_task
from meanfield.config import discretizations
from meanfield.config import particle_diagnostics
from meanfield.config.initial import (
    INITIAL_KINDS,
    PARTICLE_ONLY_KINDS,
    validate_initial_section,
)
from meanfield.config.attention import ATTENTIONS, CLUSTER_METHODS, finish_attention
from meanfield.config.layers import INTEGRATORS, finish_integrator
from meanfield.config.layers import finish_weights as finish_layered_weights
from meanfield.config.negative_beta import check_negative_geometry, signed_beta
from meanfield.config.weights import (
    FAST_SUMS,
    WEIGHTED_ARCHITECTURES,
    finish_feedforward,
    is_identity,
    pde_value_scale,
    validate_feedforward_section,
    validate_weights_section,
)
from meanfield.errors import ConfigError

GEOMETRIES = ("circle", "sphere", "zonal", "euclidean")
# "euclidean": tokens in R^d (particle runs only); "zonal": densities on S^{d-1}, any d >= 2,
# that depend only on the angle to one axis (the PDE in every dimension)
PDE_GEOMETRIES = ("circle", "sphere", "zonal")
# the built-in methods (discretizations.BUILTIN_PAIRS; a registered entry may add one)
METHODS = tuple(dict.fromkeys(m for _, m in discretizations.BUILTIN_PAIRS))
METHODS_BY_GEOMETRY = {"circle": METHODS, "sphere": METHODS, "zonal": METHODS,
                       "euclidean": ()}
MAX_ZONAL_LMAX = 8191  # band limit of the spectral zonal solver (dense transforms)
MAX_ZONAL_DIM = 100_000  # d of S^{d-1} for the zonal PDE
# Finite volumes on the sphere use icosahedral Voronoi meshes of 10 4^k + 2 cells.
SPHERE_MESH_CELLS = tuple(10 * 4**k + 2 for k in range(1, 8))
ARCHITECTURES = ("post-ln", "pre-ln", "hardmax", "pure", "peri-ln", "ngpt", "mix-ln")
# the normalization family whose tokens move in R^d (their lengths: the datasets' radius)
RADIAL_ARCHITECTURES = ("pre-ln", "peri-ln", "mix-ln")
MASKS = ("none", "causal")  # meanfield.model.weighted_attention.MASKS
SUM_METHODS = ("auto", "direct", "fourier", "harmonic")
MAX_SPECTRAL_LMAX = 2047  # band limit of the spectral sphere solver
MAX_SEED = 2**63 - 1
DEFAULT_N = 1000  # particles.n when absent and no token file gives the rows
MAX_USA_BETA = 700.0  # the USA velocity grows like e^beta: beyond, it overflows


@dataclass(frozen=True)
class Section:
    """One config section.

    Attributes:
        name: the TOML table name.
        keys: key -> (checker, default); a default of None means "absent".
        validator: ``(given, cfg, name) -> clean table``: checks the whole table instead of
            ``keys`` (``cfg`` holds the sections validated before it).
        finish: ``(cfg) -> None``: derived defaults and checks across keys and sections,
            run once this section is clean (``cfg`` holds it and the sections before it).
    """

    name: str
    keys: dict[str, tuple[ck.Checker, Any]] = field(default_factory=dict)
    validator: Callable[[dict, dict, str], dict] | None = None
    finish: Callable[[dict], None] | None = None


def _at_least(minimum: float, strict: bool = False, maximum: float | None = None
              ) -> ck.Checker:
    return ck.number_in(minimum, strict, maximum)


def _count(minimum: int) -> ck.Checker:
    return ck.integer_in(minimum)



def _finish_model(cfg: dict) -> None:
    m = cfg["model"]
    if not m["normalized"] and m["beta"] > MAX_USA_BETA:
        raise ConfigError(f"model.beta = {m['beta']!r}: the unnormalized (USA) velocity grows "
                          "like e^beta and overflows beyond beta = 700; use normalized = true",
                          "model.beta")


def _dim(key: str, value: Any) -> int | list[int]:
    """An integer >= 1, or a list or range of integers >= 2 (the zonal dimensions of a
    bifurcation study across d: ``_finish_domain`` keeps them for that geometry only)."""
    if isinstance(value, (list, tuple, dict)):
        dims = ck.list_or_range(key, value, minimum=2, integers=True)
        if len(set(dims)) != len(dims):
            raise ConfigError(f"{key} = {ck.describe(value)} names a dimension twice", key)
        return sorted(dims)
    return ck.integer_in(1)(key, value)


def _finish_dims(domain: dict) -> None:
    """A list of dimensions: zonal only, each within what the zonal PDE takes."""
    dims = domain["dim"]
    if domain["geometry"] != "zonal":
        raise ConfigError(f"domain.dim = {dims!r}: a list of dimensions is for the zonal "
                          "geometry (geometry = \"zonal\", the bifurcation study across d); "
                          f"the {domain['geometry']} takes one integer", "domain.dim")
    if dims[-1] > MAX_ZONAL_DIM:
        raise ConfigError(f"domain.dim = {dims!r}: the zonal PDE takes 2 <= dim <= "
                          f"{MAX_ZONAL_DIM}", "domain.dim")


def check_one_dim(cfg: dict, task: str | None = None) -> None:
    """A task that runs one dimension refuses a list of them (only the bifurcation study
    takes one, on the zonal geometry)."""
    dim = cfg.get("domain", {}).get("dim")
    if isinstance(dim, list):
        what = f"'meanfield {task.replace('_', '-')}'" if task else "this task"
        raise ConfigError(f"domain.dim = {dim!r}: a list of dimensions is taken by the "
                          f"bifurcation study only (meanfield bifurcation, geometry = "
                          f"\"zonal\"); {what} takes one integer", "domain.dim")


def _finish_domain(cfg: dict) -> None:
    """Fill in ``domain.dim`` (2 on the circle and in R^d, 3 on the sphere) and check it."""
    domain = cfg["domain"]
    check_negative_geometry(cfg)  # (before the sections whose defaults use beta)
    geometry, dim = domain["geometry"], domain["dim"]
    if isinstance(dim, list):
        _finish_dims(domain)
        return
    if geometry == "euclidean":  # tokens in R^d: any d >= 1 (the dim checker's minimum)
        if dim is None:
            domain["dim"] = 2
        return
    if dim is not None and dim < 2:  # (S^{d-1} in R^d: d >= 2)
        raise ConfigError(f"domain.dim = {dim!r} must be an integer >= 2 on the {geometry} "
                          "(any dim >= 1 is for tokens in R^d: geometry = \"euclidean\")",
                          "domain.dim")
    if geometry == "zonal":
        if dim is None:
            domain["dim"] = 3
        elif dim > MAX_ZONAL_DIM:
            raise ConfigError(f"domain.dim = {dim!r}: the zonal PDE takes 2 <= dim <= "
                              f"{MAX_ZONAL_DIM}", "domain.dim")
        return
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


def _method(key: str, value: Any) -> str:
    """One of the registered discretization methods ('spectral', 'finite-volume')."""
    return ck.choice(discretizations.methods())(key, value)


def _finish_discretization(cfg: dict) -> None:
    geometry, method = cfg["domain"]["geometry"], cfg["discretization"]["method"]
    if geometry not in PDE_GEOMETRIES:  # no grid in R^d (a PDE task refuses it: check_pde)
        return
    if method not in discretizations.methods(geometry):
        raise ConfigError(f"discretization.method = {method!r} is not available on the "
                          f"{geometry} yet; available: "
                          + ", ".join(repr(m) for m in discretizations.methods(geometry)),
                          "discretization.method")
    res = cfg["discretization"]["resolution"]
    if res == "auto":
        if method != "spectral":
            raise ConfigError(f"discretization.resolution = \"auto\" is for the spectral "
                              f"methods (the {method} grid is fixed); give a number",
                              "discretization.resolution")
        return
    if geometry == "sphere" and method == "spectral" and res > MAX_SPECTRAL_LMAX:
        raise ConfigError(f"discretization.resolution = {res} is the band limit of the "
                          f"spectral sphere solver and must be <= {MAX_SPECTRAL_LMAX}",
                          "discretization.resolution")
    if geometry == "zonal" and method == "spectral" and res > MAX_ZONAL_LMAX:
        raise ConfigError(f"discretization.resolution = {res} is the band limit of the "
                          f"spectral zonal solver and must be <= {MAX_ZONAL_LMAX}",
                          "discretization.resolution")
    if geometry == "sphere" and method == "finite-volume" and res not in SPHERE_MESH_CELLS:
        raise ConfigError(f"discretization.resolution = {res} is the number of cells of the "
                          "icosahedral finite-volume mesh; accepted: "
                          + ", ".join(str(c) for c in SPHERE_MESH_CELLS),
                          "discretization.resolution")


def _finish_time(cfg: dict) -> None:
    t = cfg["time"]
    if t["save_every"] is None:
        t["save_every"] = t["t_final"] / 100
    if t["save_every"] > t["t_final"]:
        raise ConfigError(f"time.save_every = {t['save_every']!r} must be <= time.t_final "
                          f"= {t['t_final']!r}", "time.save_every")
    if t["dt"] != "auto" and t["dt"] > t["save_every"]:
        raise ConfigError(f"time.dt = {t['dt']!r} must be <= time.save_every = "
                          f"{t['save_every']!r}", "time.dt")


def check_pde_task(cfg: dict, task: str | None = None) -> None:
    """The checks of a task that runs the PDE, at validation: S^1 or S^2, V = c I; one
    dimension unless the task is the bifurcation study."""
    if task != "bifurcation":
        check_one_dim(cfg, task)
    check_sphere_geometry(cfg, task)
    pde_value_scale(cfg)
    check_auto_task(cfg, task)


def check_weighted_tokens(cfg: dict, task: str | None = None) -> None:
    """Tokens with weights other than the identity are normalized self-attention (softmax
    rows): USA is refused for the tasks that run tokens (the PDE takes USA with V = c I)."""
    check_one_dim(cfg, task)
    if not is_identity(cfg) and not cfg["model"]["normalized"]:
        raise ConfigError("model.normalized = false with [weights] other than the identity: "
                          "tokens with general weights are normalized self-attention "
                          "(softmax rows); use normalized = true (the PDE, meanfield evolve, "
                          "takes USA with value = c)", "model.normalized")


def check_compare_task(cfg: dict, task: str | None = None) -> None:
    """compare runs the PDE and tokens: both tasks' checks."""
    check_pde_task(cfg, task)
    check_weighted_tokens(cfg, task)


# The checks of a whole validated config of a task (``registry.validate`` runs them last).
CORE_TASK_CHECKS: dict[str, Callable[[dict, str], None]] = {
    "evolve": check_pde_task,
    "particles": check_weighted_tokens,
    "compare": check_compare_task,
}


def _finish_particles(cfg: dict) -> None:
    """The architecture against the geometry, the noise and the model; rescaled and mask
    against the architecture (the weights' checks: ``weights.finish_weights``)."""
    p = cfg["particles"]
    # (a task without [domain], e.g. the phase diagram, runs tokens on spheres)
    geometry = cfg["domain"]["geometry"] if "domain" in cfg else "sphere"
    model = cfg.get("model", {"kappa": math.inf, "normalized": True})
    if p["architecture"] is None:
        p["architecture"] = "pure" if geometry == "euclidean" else "post-ln"
    arch = p["architecture"]
    if geometry == "euclidean" and arch != "pure":
        raise ConfigError(f"particles.architecture = {arch!r}: tokens in R^d (domain.geometry "
                          "= \"euclidean\") move by pure self-attention; use architecture "
                          "= \"pure\"", "particles.architecture")
    if arch == "pure" and geometry != "euclidean":
        raise ConfigError(f"particles.architecture = \"pure\" (no normalization) moves "
                          f"tokens in R^d, not on the {geometry}: use domain.geometry = "
                          "\"euclidean\" (any dim >= 1)", "particles.architecture")
    if p["rescaled"] and arch != "pure":
        raise ConfigError(f"particles.rescaled = true is the rescaled pure flow z = e^(-tV) x "
                          f"in R^d; architecture {arch!r} has no rescaling: use architecture "
                          "= \"pure\" or rescaled = false", "particles.rescaled")
    if p["mask"] != "none" and arch not in WEIGHTED_ARCHITECTURES:
        raise ConfigError(f"particles.mask = {p['mask']!r}: architecture {arch!r} takes no "
                          "mask; masks are for "
                          + " and ".join(repr(a) for a in WEIGHTED_ARCHITECTURES),
                          "particles.mask")
    if p["sum_method"] in FAST_SUMS and (arch == "pure" or p["mask"] != "none"):
        what = "pure self-attention" if arch == "pure" else f"mask = {p['mask']!r}"
        raise ConfigError(f"particles.sum_method = {p['sum_method']!r} expands the kernel of "
                          f"unit tokens attending to all tokens; with {what} use 'auto' or "
                          "'direct'", "particles.sum_method")
    if p["save_attention"] and arch not in WEIGHTED_ARCHITECTURES:
        raise ConfigError(f"particles.save_attention = true: architecture {arch!r} has no "
                          "softmax attention matrix to save; it is saved for "
                          + " and ".join(repr(a) for a in WEIGHTED_ARCHITECTURES),
                          "particles.save_attention")
    if arch == "pure" and not math.isinf(model["kappa"]):
        raise ConfigError(f"model.kappa = {model['kappa']!r}: noise is defined for "
                          "tokens on the sphere; pure self-attention in R^d runs without "
                          "noise: use kappa = \"inf\"", "model.kappa")
    if arch == "pure" and not model["normalized"]:
        raise ConfigError("model.normalized = false: pure self-attention is normalized "
                          "(softmax rows, [GLPR23, eq. (2)]); use normalized = true",
                          "model.normalized")
    if p["mask"] != "none" and not model["normalized"]:
        raise ConfigError(f"particles.mask = {p['mask']!r} with model.normalized = false: "
                          "masked attention is normalized (softmax rows over the tokens "
                          "attended to); use normalized = true", "particles.mask")
    finish_integrator(cfg)  # layers: no noise, saves on layers (config.layers)
    finish_attention(cfg)  # Sinkhorn: post-ln or pure, normalized, no mask (config.attention)
    particle_diagnostics.finish_diagnostics(cfg, geometry)  # absent: all of the geometry's


def _scheduler(key: str, value: Any) -> str | None:
    """The address of a running dask scheduler, e.g. "tcp://127.0.0.1:8786"."""
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{key} = {ck.describe(value)} must be the address of a dask scheduler "
                          "(a non-empty string, e.g. \"tcp://127.0.0.1:8786\")", key)
    return value


CORE_SECTIONS: tuple[Section, ...] = (
    Section("model", {
        "beta": (signed_beta, 1.0),  # < 0: circle only (negative_beta)
        "kappa": (ck.kappa, math.inf),
        "normalized": (ck.boolean, True),
    }, finish=_finish_model),
    Section("domain", {
        "geometry": (ck.choice(GEOMETRIES), "circle"),
        "dim": (ck.accepting("an integer >= 1, or for the bifurcation study on the zonal "
                             "geometry a list or a range {start, stop, num} "
                             "(numpy.linspace) of dimensions (a study across d)", _dim),
                None),
    }, finish=_finish_domain),
    Section("discretization", {
        "method": (_method, "spectral"),
        "resolution": (RESOLUTION, 256),
        # resolution = "auto": the largest tail of the spectrum, relative to max rho
        "accuracy": (_at_least(1e-14, maximum=1e-1), 1e-8),
        "negativity_tolerance": (_at_least(0.0), 1e-6),
        "cfl": (_at_least(0.0, strict=True, maximum=1.0), 0.8),
        "threads": (ck.threads, "auto"),
    }, finish=_finish_discretization),
    Section("initial", validator=validate_initial_section),
    Section("time", {
        # 5, not 10: without noise (kappa = inf) the default perturbed density collapses
        # toward a point mass, faster and faster; by t = 8 (sphere) or 8.9 (circle) the
        # default resolution no longer carries it and the run stops. At t = 5 the cluster
        # is forming and resolved (peak 2.5 times the uniform density on the circle, 8
        # times on the sphere, even at band limit 64).
        "t_final": (_at_least(0.0, strict=True), 5.0),
        "dt": (ck.auto_or_positive, "auto"),
        "save_every": (_at_least(0.0, strict=True), None),
        "tolerance": (_at_least(0.0, strict=True, maximum=1e-1), 1e-8),
    }, finish=_finish_time),
    Section("particles", {
        "n": (_count(2), None),
        # (the seed is stored in the result's attributes: netCDF holds 64-bit integers)
        "seed": (ck.integer_in(0, MAX_SEED), 0),
        # (absent: "pure" for tokens in R^d, else "post-ln"; filled in by the finish)
        "architecture": (ck.choice(ARCHITECTURES), None),
        "sum_method": (ck.choice(SUM_METHODS), "auto"),
        "accuracy": (_at_least(1e-14, maximum=1e-2), 1e-10),
        "ensemble": (_count(1), 8),
        "cluster_threshold": (_at_least(0.0, strict=True, maximum=2.0), 1e-2),
        "attention_rank": (ck.boolean, False),
        "rank_tolerance": (_at_least(0.0, strict=True, maximum=1.0), 1e-6),
        "bins": (ck.auto_or_count, "auto"),
        "rescaled": (ck.boolean, False),
        "mask": (ck.choice(MASKS), "none"),
        "save_attention": (ck.boolean, False),
        # the normalization family (meanfield.model.normalizations): nGPT's step alpha,
        # Mix-LN's time of the switch from Post-LN to Pre-LN
        "ngpt_alpha": (_at_least(0.0, strict=True, maximum=1e6), 1.0),
        "mix_switch": (_at_least(0.0, strict=True, maximum=1e12), 1.0),
        # discrete layers x^[k+1] = x^[k] + tau v(x^[k]) (meanfield.config.layers)
        "integrator": (ck.choice(INTEGRATORS), "ode"),
        "layer_step": (_at_least(0.0, strict=True), None),
        # Sinkhorn (doubly stochastic) attention and the cluster count (config.attention)
        "attention": (ck.choice(ATTENTIONS), "softmax"),
        "sinkhorn_tolerance": (_at_least(1e-15, maximum=1e-2), 1e-12),
        "cluster_method": (ck.choice(CLUSTER_METHODS), "linkage"),
        # the per-frame diagnostics computed and written (config.particle_diagnostics)
        "diagnostics": (particle_diagnostics.names, None),
    }, finish=_finish_particles),
    Section("weights", validator=validate_weights_section, finish=finish_layered_weights),
    Section("feedforward", validator=validate_feedforward_section, finish=finish_feedforward),
    Section("output", {
        "path": (ck.path, None),
        "checkpoint_every": (_at_least(0.0, strict=True), 60.0),
    }),
    Section("parallel", {
        "workers": (_count(1), 1),
        "scheduler": (_scheduler, None),
    }),
)

_PDE = ("model", "domain", "discretization", "initial", "time", "output")
CORE_TASKS: dict[str, tuple[str, ...]] = {
    "evolve": _PDE + ("weights",),
    "particles": _PDE + ("particles", "weights", "feedforward"),
    "compare": _PDE + ("particles", "parallel", "weights"),
}


def check_sphere_geometry(cfg: dict, task: str | None = None) -> None:
    """Tokens in R^d (``domain.geometry = "euclidean"``) are for particle runs only."""
    geometry = cfg["domain"]["geometry"]
    if geometry not in PDE_GEOMETRIES:
        what = f"'meanfield {task.replace('_', '-')}'" if task else "the PDE"
        raise ConfigError(f"domain.geometry = {geometry!r} (tokens in R^d) is for particle "
                          f"runs only (meanfield particles); {what} works on S^1, S^2 and "
                          "zonal densities on S^{d-1}: use geometry = \"circle\", "
                          "\"sphere\" or \"zonal\"", "domain.geometry")


def check_token_sphere_geometry(cfg: dict, task: str | None = None) -> None:
    """The token studies on spheres (metastability) take S^1 and S^{d-1} as "circle" and
    "sphere"; a zonal density is a PDE state, not a token system."""
    geometry = cfg["domain"]["geometry"]
    if geometry not in ("circle", "sphere"):
        what = f"'meanfield {task.replace('_', '-')}'" if task else "this study"
        raise ConfigError(f"domain.geometry = {geometry!r}: {what} runs tokens on S^1 and "
                          "S^{d-1}: use geometry = \"circle\" or \"sphere\" (with dim = d)",
                          "domain.geometry")


def check_pde_dim(cfg: dict) -> None:
    """The PDE solvers work on S^1 and S^2 only, with initial densities (not token sets),
    and with the weights V = c I, Q = K = I (``weights.pde_value_scale``)."""
    check_one_dim(cfg)
    check_sphere_geometry(cfg)
    if "weights" in cfg or "feedforward" in cfg:
        pde_value_scale(cfg)
    if cfg["domain"]["dim"] > 3 and cfg["domain"]["geometry"] != "zonal":
        raise ConfigError(f"domain.dim = {cfg['domain']['dim']}: the PDE solvers on the "
                          f"{cfg['domain']['geometry']} are for S^1 (dim 2) and S^2 (dim 3); "
                          "for S^{d-1}, d > 3, use geometry = \"zonal\" (densities that "
                          "depend on the angle to one axis) or particle runs (meanfield "
                          "particles)", "domain.dim")
    kind = cfg["initial"]["kind"]
    if kind in PARTICLE_ONLY_KINDS:
        raise ConfigError(f"initial.kind = {kind!r} defines tokens, not a density: it is for "
                          "particle runs (meanfield particles); the PDE accepts "
                          + ", ".join(repr(k) for k in INITIAL_KINDS
                                      if k not in PARTICLE_ONLY_KINDS), "initial.kind")
