"""The registry of discretizations and what every method shares, whatever the geometry.

A discretization is one class per (geometry, method), a subclass of ``Discretization``
that names its pair in the class attributes ``geometry`` and ``method``: defining it
registers it (``__init_subclass__``), and ``Discretization.from_config(cfg)`` builds the
one a config asks for (``docs/adding_a_discretization.md``).

An instance holds its grid and model and serves two clients:

- the run (``meanfield.runs.evolve``): ``initial_density`` from the ``[initial]`` table,
  ``to_state``/``to_density`` between grid values and the stepped state (spectral
  coefficients, or the cell values themselves), ``first_step``, ``stepper()`` (an object
  with ``attempt``), and ``check`` after every accepted step;
- the model as a parameterised residual ``F(u; beta, kappa)`` in its state space:
  ``residual(u) = linear * u + nonlinear(u)`` (``linear`` the diagonal linear part the
  exponential integrators take exactly, ``None`` when there is none), ``max_step(u)``
  the step bound (``inf`` when the scheme has none), ``jvp(u, v)`` the derivative of
  ``residual`` at ``u`` along ``v``, and ``set_parameters(beta, kappa, value)``, which
  changes the parameters in place and keeps grids, transforms and plans. ``value`` is the
  c of the value matrix ``V = c I`` (``[weights] value``): it multiplies the velocity
  field (``c < 0``: repulsive; 1, the default, is the model without weights).
"""
from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from meanfield import config as cfgmod
from meanfield.config import discretizations as config_discretizations
from meanfield.discretizations.adaptive import AdaptiveSpectral, ResolutionLimit, with_resolution
from meanfield.errors import ConfigError, SolverError
from solvers.steppers import ETDRK4, SSPRK3, StepDoubling

# The modules that define the built-in discretizations (imported on first look-up).
BUILTIN_MODULES = ("meanfield.discretizations.circle", "meanfield.discretizations.sphere",
                   "meanfield.discretizations.zonal")
# Relative step of the centred difference behind finite-volume Jacobian-vector products:
# the cube root of the machine epsilon balances truncation (step^2) and round-off.
JVP_STEP = float(np.finfo(float).eps) ** (1 / 3)


def _load_builtin() -> None:
    for name in BUILTIN_MODULES:
        importlib.import_module(name)


class Discretization:
    """Base class and registry of the discretizations (module docstring).

    Subclasses set ``geometry`` and ``method`` and implement ``needed_resolution``,
    ``build``, ``initial_density``, the state conversions and the residual interface;
    ``SpectralDiscretization`` and ``FiniteVolumeDiscretization`` implement the parts
    that depend on the method only.
    """

    geometry: ClassVar[str] = ""
    method: ClassVar[str] = ""
    # Whether non-negative initial data stay non-negative (checked by the generic tests).
    preserves_positivity: ClassVar[bool] = False
    _registry: ClassVar[dict[tuple[str, str], type[Discretization]]] = {}
    model: Any

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A class that names its geometry is an entry; one that only names a method (a
        # family such as SpectralDiscretization) or names nothing (a variant of an
        # entry) is not.
        if "geometry" not in vars(cls) or not cls.method:
            return
        key = (cls.geometry, cls.method)
        old = Discretization._registry.get(key)
        if old is not None and (old.__module__, old.__qualname__) != (
                cls.__module__, cls.__qualname__):
            raise ValueError(f"the discretization {key} is already registered by "
                             f"{old.__module__}.{old.__qualname__}; unregister it first")
        Discretization._registry[key] = cls
        config_discretizations.announce(*key)  # the config learns the method from here

    # --- the registry ---------------------------------------------------------------------
    @staticmethod
    def registered() -> list[tuple[str, str]]:
        """The registered (geometry, method) pairs, sorted."""
        _load_builtin()
        return sorted(Discretization._registry)

    @staticmethod
    def from_name(geometry: str, method: str) -> type[Discretization]:
        """The class registered for (geometry, method); ConfigError listing the pairs."""
        _load_builtin()
        cls = Discretization._registry.get((geometry, method))
        if cls is None:
            pairs = ", ".join(f"({g!r}, {m!r})" for g, m in Discretization.registered())
            raise ConfigError(
                f"no discretization for domain.geometry = {geometry!r} with "
                f"discretization.method = {method!r}; registered (geometry, method): "
                f"{pairs}", "discretization.method")
        return cls

    @staticmethod
    def unregister(geometry: str, method: str) -> None:
        """Remove an entry (for experiments and tests; the built-ins come back on reload)."""
        Discretization._registry.pop((geometry, method), None)
        config_discretizations.withdraw(geometry, method)

    @staticmethod
    def from_config(cfg: dict, threads: int | None = None) -> Discretization:
        """Grid, model and solver of a validated config (raises ConfigError on mismatch).

        ``resolution`` is the number of points (cells) on the circle and the band limit
        ``lmax`` on the sphere (Gauss-Legendre grid of lmax + 1 by 2 lmax + 2 points).
        A fixed ``time.dt`` is shortened to divide ``time.save_every``. ``"auto"`` (the
        spectral methods): the first resolution from ``auto_resolution``, raised as the
        run goes (``meanfield.discretizations.adaptive``).
        """
        disc, model_cfg = cfg["discretization"], cfg["model"]
        cls = Discretization.from_name(cfg["domain"]["geometry"], disc["method"])
        if threads is None and disc["threads"] != "auto":
            threads = disc["threads"]
        auto = disc["resolution"] == "auto"
        if auto:
            cfg = with_resolution(cfg, cls.auto_resolution(cfg, threads))
        cls.check_resolution(cfg["discretization"]["resolution"], model_cfg["beta"],
                             cfg["domain"]["dim"])
        t = cfg["time"]
        dt = t["dt"]
        if dt != "auto":
            # A fixed step that divides save_every, so that saves fall on steps.
            dt = t["save_every"] / math.ceil(t["save_every"] / dt * (1 - 1e-12))
        out = cls.build(cfg, dt, threads)
        if isinstance(out, AdaptiveSpectral):
            out.configure(cfg, threads, auto)
        return out

    # --- what an entry defines --------------------------------------------------------
    @classmethod
    def needed_resolution(cls, beta: float, dim: int | None = None) -> int:
        """The smallest ``discretization.resolution`` that carries the kernel at beta (in
        dimension ``dim``, for the entries whose grid depends on it)."""
        raise NotImplementedError

    @classmethod
    def resolves(cls, resolution: int, beta: float, dim: int | None = None) -> bool:
        """Whether ``resolution`` carries the kernel at beta (override with a fast test)."""
        return resolution >= cls.needed_resolution(beta, dim)

    @classmethod
    def check_resolution(cls, resolution: int, beta: float, dim: int | None = None) -> None:
        """ConfigError naming the resolution beta needs, if ``resolution`` is short."""
        if not cls.resolves(resolution, beta, dim):
            raise ConfigError(
                f"discretization.resolution = {resolution} is too small for model.beta = "
                f"{beta:g}: the kernel needs resolution >= "
                f"{cls.needed_resolution(beta, dim)}",
                "discretization.resolution")

    @classmethod
    def build(cls, cfg: dict, dt: float | str, threads: int | None) -> Discretization:
        """The instance for a validated config (resolution already checked)."""
        raise NotImplementedError

    @property
    def grid(self):
        """The grid (or mesh) of the densities."""
        return self.model.grid

    @property
    def resolution(self) -> int:
        """This instance's ``discretization.resolution`` (points, band limit or cells)."""
        raise NotImplementedError

    def initial_density(self, initial: dict) -> np.ndarray:
        """Checked initial grid values of mass 1 from the ``[initial]`` table."""
        raise NotImplementedError

    # --- the parameters ---------------------------------------------------------------
    @property
    def parameters(self) -> tuple[float, float]:
        """``(beta, kappa)``."""
        return self.model.beta, self.model.kappa

    def set_parameters(self, beta: float | None = None, kappa: float | None = None,
                       value: float | None = None) -> None:
        """Change beta, kappa and/or value in place; grids, transforms and plans are
        reused.

        Checked like the config keys ``model.beta`` and ``model.kappa`` (ConfigError),
        including the resolution the new beta needs; ``value`` (the c of ``V = c I``) must
        be a finite number.
        """
        if beta is not None:
            # (a float in range, the usual case, skips the config's checker: a microsecond)
            if isinstance(beta, float) and 0 <= beta < math.inf:
                beta = float(beta)
            else:
                beta = cfgmod.check_key("model.beta", beta)
            if not self.model.normalized and beta > cfgmod.MAX_USA_BETA:
                raise ConfigError(f"model.beta = {beta!r}: the unnormalized (USA) velocity "
                                  f"overflows beyond beta = {cfgmod.MAX_USA_BETA:g}", "model.beta")
            if beta < 0 and self.geometry != "circle":
                raise ConfigError(f"model.beta = {beta!r} < 0: the {self.geometry} PDE takes "
                                  "beta >= 0 (negative beta: the circle only, "
                                  "docs/conventions.md)", "model.beta")
            self._check_beta(beta)
        if kappa is not None:
            kappa = (float(kappa) if isinstance(kappa, float) and kappa > 0
                     else cfgmod.check_key("model.kappa", kappa))
        if value is not None:
            value = check_value(value)
        if value is None:  # (the call every model takes, value or not)
            self.model.set_parameters(beta, kappa)
        else:
            self.model.set_parameters(beta, kappa, value)
        self._parameters_changed(kappa is not None)

    def diagnostics(self, state: np.ndarray, rho: np.ndarray) -> dict:
        """The diagnostics of a saved state (``rho`` its grid values): the model's, from
        the grid values; an entry may read some of them from the state exactly."""
        return self.model.diagnostics(rho)

    # --- the velocity field off the grid ----------------------------------------------
    exact_velocity_at = False  # whether velocity_at is the discrete field itself

    def velocity_at(self, state: np.ndarray, points: np.ndarray) -> np.ndarray:
        """The velocity field ``v[rho](x)`` of the density of ``state`` at arbitrary
        points ``(m, d)`` (their directions), as tangent vectors: what a token at ``x``
        would follow in this PDE solution (the nonlinear process of the Sznitman
        coupling). Entries whose field is known off the grid exactly give it."""
        raise ConfigError(
            f"the {self.geometry} {self.method!r} discretization has no velocity field off "
            "its grid; use discretization.method = 'spectral'", "discretization.method")

    def _check_beta(self, beta: float) -> None:
        """ConfigError if the resolution does not carry the kernel at beta."""
        self.check_resolution(self.resolution, beta)

    def _parameters_changed(self, kappa_changed: bool) -> None:
        """Refresh what the solver derived from the model's parameters."""


class SpectralDiscretization(AdaptiveSpectral, Discretization):
    """ETDRK4 (order 4, the diagonal linear part exact) on spectral coefficients; fixed
    steps or step doubling with ``tolerance``. Entries give ``to_state``/``to_density``
    and ``_linear_part`` (the diffusion's diagonal at the model's kappa).

    Args:
        model: the model (its ``scale`` sets the first step of USA runs).
        tendency: ``nonlinear(u)``, the transport tendency ``-div(rho v[rho])`` of the
            coefficients ``u`` (handed to ETDRK4 as it is: no extra call per stage).
        tendency_jvp: ``(u, v) ->`` its derivative at ``u`` along ``v``.
        dt: fixed step or ``"auto"``.
        tolerance: ``time.tolerance`` (``global_stepper``: the error of a saved state
            relative to max rho; ``stepper``: the error per step).
        negativity_tolerance: the run stops when ``min rho < -allowed * max rho``,
            ``allowed`` the largest of this and the accuracy asked for
            (``allowed_undershoot``).
        resolution_hint: what to raise when unresolved (for the error message).
    """

    method = "spectral"
    # the last resort an unstable run is told of; a study that takes spectral only (the
    # bifurcation scan) sets its own, so that it never advises what it refuses
    other_method = "use method = \"finite-volume\""

    def __init__(self, model, tendency: Callable[[np.ndarray], np.ndarray],
                 tendency_jvp: Callable[[np.ndarray, np.ndarray], np.ndarray],
                 dt: float | str, tolerance: float, negativity_tolerance: float,
                 resolution_hint: str):
        self.model = model
        self.nonlinear = tendency
        self._nonlinear_jvp = tendency_jvp
        self.scheme = ETDRK4(self._linear_part(), tendency,
                             None if dt == "auto" else float(dt))
        self.adaptive = dt == "auto"
        self.tolerance = tolerance
        self.negativity_tolerance = negativity_tolerance
        self.resolution_hint = resolution_hint

    def _linear_part(self) -> np.ndarray:
        raise NotImplementedError

    @property
    def linear(self) -> np.ndarray:
        """The diagonal of the linear part: the diffusion ``Delta / kappa``."""
        return self.scheme.linear

    def residual(self, u: np.ndarray) -> np.ndarray:
        """``F(u) = linear * u + nonlinear(u)``."""
        return self.scheme.linear * u + self.nonlinear(u)

    def max_step(self, u: np.ndarray) -> float:
        """No bound: the diffusion is integrated exactly and steps are error-controlled."""
        return math.inf

    def jvp(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``F'(u) v = linear * v + N'(u) v``, with ``N'`` exact (the entry's
        ``tendency_jvp``): the derivative of the discrete operator to round-off."""
        return self.scheme.linear * v + self._nonlinear_jvp(u, v)

    batched_jvp = False  # whether jvp_many does a stack in one call (not one per state)

    def jvp_many(self, u: np.ndarray, vs: np.ndarray) -> np.ndarray:
        """``F'(u) v`` for each state ``v`` of the stack ``vs`` (shape ``(B, *u.shape)``):
        the columns of a dense Jacobian. One ``jvp`` each here; entries with a batched
        derivative (the circle's) do the whole stack in one call."""
        return np.stack([self.jvp(u, v) for v in vs]) if len(vs) else np.zeros_like(vs)

    exact_velocity_at = True

    def velocity_at(self, state: np.ndarray, points: np.ndarray) -> np.ndarray:
        """The model's velocity series evaluated at ``points`` (``velocity_at`` of the
        circle and sphere models: exact to ~1e-13)."""
        return self.model.velocity_at(state, points)

    def _parameters_changed(self, kappa_changed: bool) -> None:
        if kappa_changed:  # (the linear part is the diffusion: beta leaves it)
            self.scheme.linear = self._linear_part()  # (drops ETDRK4's coefficients)

    # --- stepping -----------------------------------------------------------------------
    def first_step(self, t_final: float) -> float:
        """The fixed step, or a cautious first adaptive step (USA runs on e^-beta)."""
        if not self.adaptive:
            return self.scheme.dt
        return min(1e-3 * t_final, 1e-2 / max(abs(self.model.scale), 1.0))

    def stepper(self):
        return StepDoubling(self.scheme, self.tolerance) if self.adaptive else self.scheme

    def _pointwise(self, state: np.ndarray) -> np.ndarray:
        """The grid values the negativity check looks at (all of them here)."""
        return self.to_density(state)

    def check(self, state: np.ndarray, t: float) -> None:
        """Stop on NaN, or on a density that goes negative by more than the accuracy asked
        for allows (``ResolutionLimit``, naming the resolution or tolerance that would
        pass)."""
        if not np.all(np.isfinite(state)):
            raise SolverError(
                f"the spectral solution became NaN/inf at t = {t:.6g}: raise "
                f"{self.resolution_hint}, lower time.dt (or use dt = \"auto\"), or "
                f"{self.other_method}")
        rho = self._pointwise(state)
        low, high = float(rho.min()), float(rho.max())
        if low < -self.allowed_undershoot * high:
            raise ResolutionLimit(*self.unresolved_message(state, t, low, high))


class FiniteVolumeDiscretization(Discretization):
    """SSP-RK3 (order 3) on cell values under the step bound of a CCH right-hand side.

    Args:
        model: the model.
        rhs: ``rhs(rho) -> drho/dt`` with ``rhs.max_step(rho)`` (``GradientFlowFV`` or
            ``GradientFlowMeshFV``).
        dt: fixed step (refused if above the bound) or ``"auto"``.
    """

    method = "finite-volume"
    preserves_positivity = True  # under the step bound (solvers.operators.finite_volume)
    linear = None  # everything is explicit: residual = nonlinear

    def __init__(self, model, rhs, dt: float | str):
        self.model = model
        self.rhs = rhs
        self.scheme = SSPRK3(rhs, rhs.max_step, None if dt == "auto" else float(dt))

    def residual(self, u: np.ndarray) -> np.ndarray:
        """``F(u)``: the CCH tendency of the cell values (transport and diffusion)."""
        return self.rhs(u)

    def nonlinear(self, u: np.ndarray) -> np.ndarray:
        return self.rhs(u)

    def max_step(self, u: np.ndarray) -> float:
        """The positivity and diffusion bounds times ``discretization.cfl``."""
        return self.rhs.max_step(u)

    def jvp(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``F'(u) v`` by the centred difference ``(F(u + e v) - F(u - e v)) / 2e`` with
        ``e = JVP_STEP |u|_inf / |v|_inf`` (``JVP_STEP = eps^(1/3) = 6e-6``): error
        ``O(e^2)`` where the fluxes are smooth in ``u``; the upwinding and the limiter make
        them only piecewise smooth, so no analytic derivative is offered."""
        scale = float(np.max(np.abs(v)))
        if scale == 0:
            return np.zeros_like(u)
        e = JVP_STEP * max(float(np.max(np.abs(u))), 1.0) / scale
        return (self.rhs(u + e * v) - self.rhs(u - e * v)) / (2 * e)

    def _parameters_changed(self, kappa_changed: bool) -> None:
        self.rhs.diffusion = float(self.model.noise)
        self.rhs.invalidate()

    # --- stepping -----------------------------------------------------------------------
    def to_state(self, rho: np.ndarray) -> np.ndarray:
        return np.array(rho, dtype=float)

    def to_density(self, state: np.ndarray) -> np.ndarray:
        return state.copy()

    def first_step(self, t_final: float) -> float:
        return self.scheme.dt if self.scheme.dt is not None else t_final

    def stepper(self):
        return self.scheme

    def check(self, state: np.ndarray, t: float) -> None:
        if not np.all(np.isfinite(state)):
            raise SolverError(f"the finite-volume solution became NaN/inf at t = {t:.6g}: "
                              "lower discretization.cfl or time.dt")
        if state.min() < 0:
            raise SolverError(f"the finite-volume density went negative at t = {t:.6g} "
                              f"(min {state.min():.3g}): lower discretization.cfl")


def model_arguments(cfg: dict) -> tuple[float, float, bool]:
    """``(beta, kappa, normalized)`` of a validated config."""
    m = cfg["model"]
    return m["beta"], m["kappa"], m["normalized"]


def check_value(value: float) -> float:
    """The c of ``V = c I`` as a float; ConfigError unless it is a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) \
            or not math.isfinite(value):
        raise ConfigError(f"weights.value = {value!r}: the PDE takes a finite number c "
                          "(the value matrix V = c I)", "weights.value")
    return float(value)


def model_value(cfg: dict) -> float:
    """The c of the value matrix ``V = c I`` of a config (1.0 without ``[weights]``);
    ConfigError for weights the PDE cannot take (``config.weights.pde_value_scale``)."""
    from meanfield.config.weights import pde_value_scale
    return float(pde_value_scale(cfg))
