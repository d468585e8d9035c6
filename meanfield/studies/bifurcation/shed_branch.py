"""The branch a mode sheds at a pitchfork of the uniform state, as the one-parameter
problem that pseudo-arclength continuation follows (``solvers.nonlinear.continuation``).

The unknowns are those of the bordered stationary system of
``meanfield.studies.bifurcation.stationary.BorderedSystem`` (the state's real components
and the border multipliers), its phase conditions those of the critical mode, and they
are scaled by the area of the domain (the mean coefficient is 1), so that the arclength
weighs state and parameter alike. On S^2 the branch of a zonal seed stays axisymmetric
and is followed in that invariant subspace (``RealView(axisymmetric=True)``: ``L + 1``
unknowns, the mass condition only).

What continuation calls: the residual (NaN beyond the physical range of the parameter,
so that Newton halves the step), exact Jacobian-vector products, exact ``dF/dkappa``
(the diffusion ``Delta / kappa`` is the only kappa in ``F``), the diffusion preconditioner
and the dense bordered Jacobian (formed once per point). ``branches.mode_branch`` follows
the branch in kappa or beta; ``fold_curve.locate_fold`` in kappa to its fold.
"""
from __future__ import annotations

import math

import numpy as np

from meanfield.studies.bifurcation import spectral_state as ss
from meanfield.studies.bifurcation import stationary as st
from meanfield.studies.bifurcation import stationary_linear as lin
from meanfield.studies.bifurcation.plan import set_parameter


class ShedBranch:
    """The branch shed at mode (degree) ``mode`` by the uniform state of ``disc``.

    Args:
        disc: a spectral discretization, its parameters at the pitchfork (they are
            changed to each parameter value asked for).
        parameter: the continued parameter, "kappa" or "beta".
        mode: the critical mode (degree).

    Attributes:
        view: the ``RealView`` of the unknowns' state components.
        system: the ``BorderedSystem`` (mass and phase conditions).
        scale: the unknowns' scale (unknowns = scale * bordered unknowns).
        uniform: the bordered unknowns of the uniform state (unscaled).
        phi: the critical mode (a state).
        axisymmetric: the branch is followed in the axisymmetric subspace (S^2).
    """

    def __init__(self, disc, parameter: str, mode: int):
        self.disc, self.parameter = disc, parameter
        uniform = lin._uniform_state(disc)
        self.phi = lin.critical_modes(disc, mode)[0]
        # S^2: the branch of a zonal seed stays axisymmetric, and is followed in that
        # invariant subspace (RealView's docstring): L + 1 unknowns, the mass condition only
        self.axisymmetric = disc.geometry == "sphere"
        self.view = ss.RealView(disc, uniform, axisymmetric=self.axisymmetric)
        self.system = st.BorderedSystem(disc, self.view, self.phi,
                                        0 if self.axisymmetric else mode)
        self.scale = 1.0 / float(self.view.to_real(uniform)[self.view.constant])
        self.uniform = np.concatenate([self.view.to_real(uniform), np.zeros(self.system.p)])
        self._formed: dict = {}

    def direction(self, sign: int) -> np.ndarray:
        """The critical mode with sign ``sign`` as bordered unknowns (unscaled)."""
        return np.concatenate([sign * self.view.to_real(self.phi), np.zeros(self.system.p)])

    def invalid(self, lam: float) -> bool:
        """A parameter value outside the physical range (kappa <= 0, beta < 0, not
        finite)."""
        if self.parameter == "kappa":
            return lam <= 0 or not math.isfinite(lam)
        return lam < 0 or not math.isfinite(lam)

    def state(self, y: np.ndarray) -> np.ndarray:
        """The state of the scaled unknowns ``y``."""
        return self.system.state(y / self.scale)

    def residual(self, y: np.ndarray, lam: float) -> np.ndarray:
        if self.invalid(lam):  # (a predictor beyond the physical range: Newton halves
            return np.full(y.size, np.nan)  # the step)
        set_parameter(self.disc, self.parameter, lam)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            # (a far predictor can make K*rho negative: SA's log gives NaN, and Newton
            # halves the step on a non-finite residual)
            return self.system.residual(y / self.scale)

    def jvp_x(self, y: np.ndarray, lam: float, v: np.ndarray) -> np.ndarray:
        set_parameter(self.disc, self.parameter, lam)
        return self.system.jvp(y / self.scale, v / self.scale)

    def dF_dkappa(self, y: np.ndarray, lam: float) -> np.ndarray:
        """``dF/dkappa``: F = (Delta / kappa) u + N(u), so ``-(linear / kappa) u`` (N has
        no kappa)."""
        set_parameter(self.disc, self.parameter, lam)
        u = self.state(y)
        f = self.view.to_real(-self.disc.linear * u / lam)
        return np.concatenate([f, np.zeros(self.system.p)])

    def precondition(self, r: np.ndarray) -> np.ndarray:
        return self.scale * self.system.precondition(r)

    def bordered_jacobian(self, y: np.ndarray, lam: float) -> np.ndarray:
        """The unscaled bordered Jacobian at (y, lam), kept for the eigenvalues of the
        same point (the continuation forms it at each point for the tangent)."""
        key = (lam, y.tobytes())
        if self._formed.get("key") != key:
            set_parameter(self.disc, self.parameter, lam)
            self._formed["key"], self._formed["matrix"] = key, self.system.jacobian(
                y / self.scale)
        return self._formed["matrix"]

    def jacobian(self, y: np.ndarray, lam: float) -> np.ndarray:
        """The Jacobian in the scaled unknowns."""
        return self.bordered_jacobian(y, lam) / self.scale
