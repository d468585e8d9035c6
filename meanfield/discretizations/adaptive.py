"""What the spectral discretizations share for a run to the accuracy asked
(``SpectralDiscretization`` takes it in as a mixin): the global error control of
``time.tolerance``, ``resolution = "auto"`` and the negativity guard tied to both.

- Error control: ``global_stepper(span)`` is step doubling with the error per unit step
  (``solvers.steppers.dense``) measured as the largest difference of the densities at
  the grid nodes, relative to the largest density (``relative_error``): ``time.tolerance``
  is then the error of a saved state relative to max rho, in the max norm.
- ``resolution = "auto"``: ``auto_resolution(cfg)`` is the resolution of the first state
  (the modes that carry the initial density to ``accuracy / 4`` of its maximum, from its
  spectrum on a fine probe grid, and at least the kernel's ``needed_resolution``); the run
  watches ``tail(state)`` (``meanfield.discretizations.resolution``) and, past the
  accuracy, continues on ``rebuilt(resolution_needed(state))`` from ``prolong``'s
  coefficients (zero-padded: the same function, exactly).
- The guard: ``allowed_undershoot`` is the largest of ``negativity_tolerance``,
  ``time.tolerance`` (adaptive steps) and ``accuracy`` ("auto"): an undershoot within the
  error asked for is that error, not a failure. ``unresolved_message`` says which
  resolution (from the measured tail) or which tolerance would pass.

An entry gives ``mode_amplitudes(state)``, ``modes_of(resolution)``,
``resolution_for(modes)``, ``max_resolution(cfg)``, ``prolong(state, resolution)``,
``output_values(state, grid)`` and ``probe_spectrum(cfg, resolution, threads)``.
"""
from __future__ import annotations

import copy
from typing import Any

import numpy as np

from meanfield.discretizations import resolution as spectrum
from meanfield.errors import ConfigError, SolverError
from solvers.steppers.dense import GlobalStepDoubling

# the tail at which an "auto" run moves to a finer grid, as a fraction of the accuracy: the
# step that crossed it is taken again from the finer grid, so no error beyond the accuracy
# enters the solution
REFINE_AT = 1.0
# the tail the finer grid is chosen for, as a fraction of the accuracy (room to grow)
REFINE_TO = 0.05


class ResolutionLimit(SolverError):
    """A spectral run needs a finer grid than it may have (the largest resolution, or a
    fixed one): the solution outgrew its grid. ``resolution``: the one that would pass
    (None: beyond the largest)."""

    def __init__(self, message: str, resolution: int | None = None):
        super().__init__(message)
        self.resolution = resolution


def with_resolution(cfg: dict, resolution: int) -> dict:
    """A copy of a validated config with ``discretization.resolution`` set."""
    out = copy.deepcopy(cfg)
    out["discretization"]["resolution"] = int(resolution)
    return out


class DegreeResolution:
    """What an "auto" run needs of a solver whose ``resolution`` is a band limit L (the
    degrees 0..L: the sphere's and the zonal geometry's): ``L + 1`` modes, a degree's
    amplitude from ``_amplitudes(grid, state)``, at least ``MIN_DEGREE``."""

    MIN_DEGREE = 4
    model: Any

    def mode_amplitudes(self, state: np.ndarray) -> np.ndarray:
        return self._amplitudes(self.model.grid, state)

    @staticmethod
    def modes_of(resolution: int) -> int:
        return resolution + 1  # (degrees 0..L)

    @classmethod
    def resolution_for(cls, modes: int) -> int:
        return max(cls.MIN_DEGREE, int(modes) - 1)


class AdaptiveSpectral:
    """The mixin (module docstring); the attributes are set by ``from_config``."""

    auto = False  # resolution = "auto"
    accuracy = 1e-8
    config: dict | None = None  # the validated config, at this instance's resolution
    build_threads: int | None = None
    tolerance: float
    negativity_tolerance: float
    adaptive: bool
    resolution: int
    scheme: Any

    # --- error control ----------------------------------------------------------------
    def relative_error(self, diff: np.ndarray, u: np.ndarray, half: np.ndarray) -> float:
        """``max |rho(diff)|`` over the nodes, relative to the larger maximum of the
        densities of ``u`` and ``half``."""
        scale = max(float(np.max(np.abs(self._pointwise(u)))),
                    float(np.max(np.abs(self._pointwise(half)))))
        return float(np.max(np.abs(self._pointwise(diff)))) / scale

    def global_stepper(self, span: float) -> GlobalStepDoubling:
        """Step doubling whose errors add up to ``time.tolerance`` over ``span``."""
        return GlobalStepDoubling(self.scheme, self.tolerance, span, self.relative_error)

    # --- the resolution ---------------------------------------------------------------
    @classmethod
    def auto_resolution(cls, cfg: dict, threads: int | None = None) -> int:
        """The first resolution of an "auto" run (module docstring): the initial density
        to ``accuracy / 4`` and the kernel's needs, on a grid whose initial check passes."""
        disc, beta = cfg["discretization"], cfg["model"]["beta"]
        top = cls.max_resolution(cfg)
        probe = min(top, cls.resolution_for(512))
        amplitudes, scale = cls.probe_spectrum(cfg, probe, threads)
        modes = spectrum.initial_modes(amplitudes, scale, disc["accuracy"] / 4)
        kernel = cls.modes_of(cls.needed_resolution(beta, cfg["domain"]["dim"]))
        res = cls.resolution_for(max(modes, kernel, 8))
        while True:  # the initial density's own check (coefficients above 2/3 of the band)
            try:
                cls.probe_spectrum(cfg, res, threads)
                return res
            except ConfigError:
                if res >= top:
                    raise
                res = min(top, cls.resolution_for(cls.modes_of(res) * 5 // 4 + 1))

    def tail(self, state: np.ndarray) -> float:
        """The top eighth of the spectrum relative to the largest density."""
        return spectrum.tail(self.mode_amplitudes(state), self._scale(state))

    def resolution_needed(self, state: np.ndarray, target: float) -> int:
        """The resolution at which this state's tail falls to ``target`` (extrapolated
        from its decay; at least the next one up)."""
        modes = spectrum.modes_for(self.mode_amplitudes(state), self._scale(state), target)
        return max(self.resolution_for(modes), self.resolution_for(
            self.modes_of(self.resolution) + 1))

    def rebuilt(self, resolution: int):
        """The same discretization at another resolution (grid, model and scheme new)."""
        cfg = with_resolution(self.config, resolution)
        new = type(self).build(cfg, "auto" if self.adaptive else self.scheme.dt,
                               self.build_threads)
        new.configure(cfg, self.build_threads, self.auto)
        return new

    def configure(self, cfg: dict, threads: int | None, auto: bool) -> None:
        """Keep what ``rebuilt`` and the guard need (``from_config`` calls it)."""
        self.config, self.build_threads, self.auto = cfg, threads, auto
        self.accuracy = cfg["discretization"].get("accuracy", self.accuracy)

    def _scale(self, state: np.ndarray) -> float:
        return float(np.max(np.abs(self._pointwise(state))))

    # --- the guard --------------------------------------------------------------------
    @property
    def allowed_undershoot(self) -> float:
        """The undershoot, relative to max rho, the accuracy asked for allows."""
        allowed = self.negativity_tolerance
        if self.adaptive:
            allowed = max(allowed, self.tolerance)
        if self.auto:
            allowed = max(allowed, self.accuracy)
        return allowed

    def unresolved_message(self, state: np.ndarray, t: float, low: float,
                           high: float) -> tuple[str, int | None]:
        """The one line a refused run prints, and the resolution that would pass (None
        when the spectrum is resolved: the undershoot is the time stepping's)."""
        allowed = self.allowed_undershoot
        under = -low / high
        head = (f"the spectral density went negative at t = {t:.6g} (min {low:.3g}, max "
                f"{high:.3g}: an undershoot of {under:.2g} of the max, more than the "
                f"{allowed:g} allowed by discretization.negativity_tolerance = "
                f"{self.negativity_tolerance:g}"
                + (f" and time.tolerance = {self.tolerance:g}" if self.adaptive else "")
                + ")")
        tail = self.tail(state)
        if tail > allowed / 10 or not self.adaptive:
            needed = min(self.resolution_needed(state, allowed * REFINE_TO),
                         self.max_resolution(self.config))
            return (f"{head}: the solution is not resolved (its spectrum's tail is "
                    f"{tail:.2g} of the max); raise discretization.resolution to {needed} "
                    f"(from the measured tail: it would pass) or use \"auto\", or allow it "
                    f"with "
                    f"discretization.negativity_tolerance = {2 * under:.1g}, or "
                    f"{self.other_method}"), needed
        return (f"{head}: the spectrum is resolved (tail {tail:.2g}), the time steps are "
                f"not: time.tolerance = {self.tolerance * allowed / under / 4:.1g} would "
                f"pass, or allow it with discretization.negativity_tolerance = "
                f"{2 * under:.1g}"), None
