"""The branch a mode sheds at a pitchfork of the uniform state, as the one-parameter
problem that pseudo-arclength continuation follows (``solvers.nonlinear.continuation``).

The unknowns are those of the bordered stationary system of
``meanfield.studies.bifurcation.stationary.BorderedSystem`` (the state's real components
and the border multipliers), its phase conditions those of the critical mode, and they
are scaled by the area of the domain (the mean coefficient is 1), so that the arclength
weighs state and parameter alike. On S^2 the branch of a zonal seed stays axisymmetric
and is followed in that invariant subspace (``RealView(axisymmetric=True)``: ``L + 1``
unknowns, the mass condition only); on the zonal geometry of S^{d-1} the state is that
subspace already (``L + 1`` real unknowns, the mass condition only).

Zonal scaling. The Gegenbauer coefficients of a clustered state grow with d (``c_l =
Q_l(1) <P_l>_rho``, ``Q_l(1)^2`` the dimension of the degree-l harmonics: 2079 for l = 2
at d = 64) and its kappa with it (``kappa_c -> d`` as beta -> 0). So on the zonal
geometry the unknowns are the moments ``<P_l>_rho = c_l / (Q_l(1) c_0)`` (in [-1, 1],
as the circle's ``c_k / c_0``; the residual's rows are those of the moments' time
derivatives, ``BorderedSystem``), and a continuation in kappa is made in ``kappa /
(d/2)``
(``lam_scale = d/2``; d = 2 gives the circle's): the branch in these variables has a
limit as d grows (at beta = 0, ``r = sqrt(1 - d/kappa)``), so ``ds``, ``ds_max`` and
``points`` mean the same in every d. Everything this class takes and returns is in the
continuation's variables; ``parameter_value`` gives the kappa (beta) of a ``lam``.

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
        weights: the unknowns' scales (unknowns = weights * bordered unknowns): the area
            of the domain, times ``1/Q_l(1)`` on the zonal geometry (module docstring).
        lam_scale: the continuation's parameter is the parameter over this (``d/2`` for
            kappa on the zonal geometry, else 1).
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
        zonal = disc.geometry == "zonal"
        self.view = ss.RealView(disc, uniform, axisymmetric=self.axisymmetric)
        # (no phase condition in the zonal subspaces: no rotation acts there)
        self.system = st.BorderedSystem(disc, self.view, self.phi,
                                        0 if self.axisymmetric or zonal else mode)
        scale = 1.0 / float(self.view.to_real(uniform)[self.view.constant])
        self.weights = np.full(self.system.size, scale)
        if zonal:
            self.weights[: self.view.size] *= self.system.rows
        self.lam_scale = disc.grid.dim / 2 if zonal and parameter == "kappa" else 1.0
        self.uniform = np.concatenate([self.view.to_real(uniform), np.zeros(self.system.p)])
        self._formed: dict = {}

    def start(self) -> np.ndarray:
        """The uniform state as the continuation's (scaled) unknowns."""
        return self.uniform * self.weights

    def direction(self, sign: int) -> np.ndarray:
        """The critical mode with sign ``sign`` as the continuation's (scaled) unknowns."""
        unscaled = np.concatenate([sign * self.view.to_real(self.phi),
                                   np.zeros(self.system.p)])
        return unscaled * self.weights

    def parameter_value(self, lam: float) -> float:
        """The kappa (beta) of the continuation's parameter ``lam``."""
        return float(lam) * self.lam_scale

    def _set(self, lam: float) -> None:
        set_parameter(self.disc, self.parameter, self.parameter_value(lam))

    def invalid(self, lam: float) -> bool:
        """A parameter value outside the physical range (kappa <= 0, beta < 0, not
        finite)."""
        if self.parameter == "kappa":
            return lam <= 0 or not math.isfinite(lam)
        return lam < 0 or not math.isfinite(lam)

    def state(self, y: np.ndarray) -> np.ndarray:
        """The state of the scaled unknowns ``y``."""
        return self.system.state(y / self.weights)

    def residual(self, y: np.ndarray, lam: float) -> np.ndarray:
        if self.invalid(lam):  # (a predictor beyond the physical range: Newton halves
            return np.full(y.size, np.nan)  # the step)
        self._set(lam)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            # (a far predictor can make K*rho negative: SA's log gives NaN, and Newton
            # halves the step on a non-finite residual)
            return self.system.residual(y / self.weights)

    def jvp_x(self, y: np.ndarray, lam: float, v: np.ndarray) -> np.ndarray:
        self._set(lam)
        return self.system.jvp(y / self.weights, v / self.weights)

    def dF_dkappa(self, y: np.ndarray, lam: float) -> np.ndarray:
        """``dF/dlam``: F = (Delta / kappa) u + N(u), so ``-(linear / kappa) u`` (N has
        no kappa) times ``dkappa/dlam = lam_scale``."""
        self._set(lam)
        u = self.state(y)
        kappa = self.parameter_value(lam)
        f = self.view.to_real(-self.disc.linear * u / kappa) * self.lam_scale
        return np.concatenate([self.system.rows * f, np.zeros(self.system.p)])

    def precondition(self, r: np.ndarray) -> np.ndarray:
        return self.weights * self.system.precondition(r)

    def bordered_jacobian(self, y: np.ndarray, lam: float) -> np.ndarray:
        """The bordered Jacobian at (y, lam) in the unscaled unknowns (``BorderedSystem.
        jacobian``), kept for the eigenvalues of the same point (the continuation forms
        it at each point for the tangent)."""
        key = (lam, y.tobytes())
        if self._formed.get("key") != key:
            self._set(lam)
            self._formed["key"], self._formed["matrix"] = key, self.system.jacobian(
                y / self.weights)
        return self._formed["matrix"]

    def jacobian(self, y: np.ndarray, lam: float) -> np.ndarray:
        """The Jacobian in the scaled unknowns."""
        return self.bordered_jacobian(y, lam) / self.weights[None, :]

