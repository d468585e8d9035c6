"""Two-parameter continuation of the fold of the mode-1 branch in (beta, kappa): the fold
curve of the first-order (subcritical) transition and the tricritical beta where the
transition changes type. Spectral S^1, S^2 (axisymmetric states) and zonal S^{d-1};
written for either model, tested for USA (SA has no subcritical first bifurcation: ``docs/bifurcation.md``).

The stationary states solve the bordered system ``G(z; beta, kappa) = 0`` of
``meanfield.studies.bifurcation.stationary.BorderedSystem`` (``z = (x, mu)``: the state's real
components and the border multipliers of the mass and phase conditions). At fixed beta
the mode-1 branch turns at a fold in kappa, a point where the bordered Jacobian ``G_z``
is singular with a one-dimensional null space. The fold solves the extended
(Moore-Spence) system in the unknowns ``X = (z, phi, kappa)``:

    G(z; beta, kappa) = 0,     G_z(z; beta, kappa) phi = 0,     <l, phi> - 1 = 0,

regular at a quadratic fold (``l`` is the start's null vector, normalised). It is
continued in ``beta`` by ``solvers.nonlinear.continuation.continue_branch``
(pseudo-arclength with a first-order tangent predictor and a Newton-Krylov corrector, so
it passes turning points of the curve). The pieces and their accuracy:

- ``G`` and ``G_z v``: the discretization's residual and exact Jacobian-vector products
  (spectral: exponentially convergent in the resolution for these smooth states).
- ``dG/dkappa = -(linear / kappa) u`` and ``d(G_z phi)/dkappa = -(linear / kappa) phi``:
  exact (the diffusion ``Delta / kappa`` is the only kappa in ``F``).
- ``G_zz[phi, dz]``: a central difference of the exact products,
  ``(G_z(z + h dz) phi - G_z(z - h dz) phi) / 2h`` with ``h = eps^(1/3) max(1, |z|) /
  |dz|``: second order, relative error ``O(h^2) ~ 1e-11``.
- ``dX/dbeta`` of the extended residual: a central difference in beta with ``h_beta =
  1e-5 max(1, beta)`` (second order, ``~1e-10``; one-sided, first order, where
  ``beta + h_beta`` is beyond what the resolution carries: ``disc.set_parameters``
  refuses it).
- The corrector's Jacobian is thus exact up to ``~1e-10``: Newton converges
  quadratically to that level, then linearly at a rate ``~1e-10 cond``. GMRES is right
  preconditioned by the inverse diffusion on the ``z`` and ``phi`` blocks.
- On S^2 ``z`` holds only the zonal coefficients (the invariant subspace of
  axisymmetric states, ``RealView(axisymmetric=True)``, mass condition only), as in
  ``branches.mode_branch``: ``2(L + 2) + 1`` unknowns, so the continuation
  takes the dense chord corrector (L = 15: 2 s for the curve, against 12-25 s in all components).
  On the zonal geometry the state is that subspace already (mass condition only).
- Unknowns: ``z`` is scaled so that the mean coefficient is 1 (as in
  ``branches.mode_branch``), ``phi`` has ``<l, phi> = 1`` with ``|l| = 1``, so the
  arclength weighs state, null vector, kappa and beta alike.

The start (``fold_curve``'s ``fold_state``, ``kappa0`` at ``beta0``) is checked before
any continuation: it must be stationary (``||G|| <= start_tol``) and a fold: Newton on
the extended system at fixed ``beta0`` from it, with ``phi`` the right singular vector of
the smallest singular value of the dense ``G_z`` (built from ``G_z e_j``), must converge
to a kappa within ``fold_rtol`` (relative) of ``kappa0``; otherwise ``ValueError`` says
how far it is. ``locate_fold`` gives such a start: the mode-1 branch from the pitchfork
at ``1/a_1(beta)`` (``switch_branch`` then ``continue_branch`` in kappa, as
``branches.mode_branch`` does), its fold located by the sign change of the
tangent's kappa component (Brent, ``locate_tol`` 1e-12 in arclength).

The tricritical point. As beta decreases to the tricritical ``beta*`` the fold merges
with the pitchfork at the uniform state: its order parameter ``r`` goes to 0 and its
kappa to ``kappa_c = 1/a_1``. With the signed amplitude ``s`` (``r = |s|``) the fold
curve ``beta(s)`` is even in ``s`` (a rotation by pi maps ``s`` to ``-s``), so near
``beta*`` it is ``beta = beta* + c2 s^2 + c4 s^4 + O(s^6)`` (Landau: ``kappa = kappa_c +
kappa_2 r^2 + kappa_4 r^4``, ``kappa_2 ~ (beta* - beta)``, fold at ``r^2 = -kappa_2 /
2 kappa_4``). The continuation stops when ``r`` falls below ``r_min`` (there the
extended system nears its singular point: the fold curve crosses the curve of pitchforks
of the uniform state) or when Newton fails, keeping the curve so far. The estimate of
``beta*`` is the intercept of the least-squares fit of ``beta`` by a polynomial of degree
2 in ``r^2`` over the points with ``r <= r_fit`` (at least 4; degree 1 with 2 or 3):
its error is ``O(r_fit^6)`` (``O(r_fit^4)`` for the linear fit) plus the curve's
tolerance. Measured (USA, tolerance 1e-9, ds 0.05, ds_max 0.2): S^1 (64 points, from
beta = 3.5) error 2e-6, 1.1e-5, 2.0e-4 for r_fit = 0.15, 0.2, 0.3; S^2 (L = 15, from
2.6) -3e-7, 2.9e-6, 3.5e-5. A step may also cross r = 0 (the signed amplitude changes
sign: the mirror image of the curve, which goes back up in beta): the run stops there
too; ``beta(s)`` being even, the points on both sides fit alike. The continuum value is ``meanfield.model.landau.tricritical_beta`` (USA:
``I_2/I_1 = 1/2`` on S^1, ``i_2/i_1 = 1/3`` on S^2); the spectral discretization carries
the multipliers of modes 0, 1, 2 exactly, so the discrete ``beta*`` is the same.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from meanfield.errors import ConfigError
from meanfield.studies.bifurcation import spectral_state as ss
from meanfield.studies.bifurcation import stationary as st
from meanfield.studies.bifurcation import stationary_linear as lin
from meanfield.studies.bifurcation.plan import set_parameter
from meanfield.studies.bifurcation.shed_branch import ShedBranch

_H_BETA = 1e-5  # relative step of the central difference in beta
_CBRT_EPS = float(np.finfo(float).eps) ** (1.0 / 3.0)
SWITCH_H = 0.02  # offset along the critical mode of locate_fold's first point (scaled)


@dataclass
class FoldCurve:
    """The fold curve computed by ``fold_curve``.

    Attributes:
        beta: beta at each point of the curve, shape ``(n,)`` (the start first).
        kappa: the fold's kappa at each point.
        order_parameter: ``r = |int x dmu|`` of the state at the fold.
        amplitude: the signed amplitude (``Re c_1 / c_0`` on S^1, ``a_10`` over the mass
            times ``sqrt(4 pi / 3)`` on S^2): ``r`` with the sign of the phase.
        states: the fold states (coefficients), shape ``(n, *state shape)``.
        tricritical_beta: the estimate of the tricritical beta (module docstring), NaN
            when the curve did not come down to ``r <= r_fit`` with 2 points at least.
        tricritical_fit: what was fitted (degree, points, range of r), or why not.
        status: "completed" (reached ``beta_stop``), "stopped" (the fold's ``r`` fell
            below ``r_min`` or its signed amplitude changed sign: a step through the
            tricritical point; or ``points`` were reached) or "failed" (Newton failed;
            the curve so far is kept).
        message: what happened (where and why on failure).
        newton: the message of the Newton solve of the start (key "start").
    """

    beta: np.ndarray
    kappa: np.ndarray
    order_parameter: np.ndarray
    amplitude: np.ndarray
    states: np.ndarray
    tricritical_beta: float = math.nan
    tricritical_fit: str = ""
    status: str = "completed"
    message: str = ""
    newton: dict = field(default_factory=dict)


def signed_amplitude(disc, u: np.ndarray) -> float:
    """The order parameter with the sign of the phase: ``Re c_1 / c_0`` on S^1, ``sqrt(4
    pi / 3) a_10 / (sqrt(4 pi) a_00)`` on S^2 (states aligned as the phase conditions
    say: the first coefficient real, the dipole on the z axis), ``c_1 / (sqrt(d) c_0)``
    on the zonal geometry (``int t dmu``)."""
    u = np.asarray(u)
    if disc.geometry == "circle":
        return float(u[1].real / u[0].real)
    if disc.geometry == "zonal":
        return float(u[1] / (math.sqrt(disc.grid.dim) * u[0]))
    grid = disc.grid
    return float(math.sqrt(1.0 / 3.0) * u[grid.index(1, 0)].real / u[0].real)


class _FoldSystem:
    """The extended system of the module docstring on ``X = (z * scale, phi * weights,
    kappa / unit)``, with beta the continuation parameter (``weights`` and ``unit`` 1
    except on the zonal geometry: the moments' weights ``1/Q_l(1)`` and d/2, as in
    ``shed_branch``; ``scale`` then carries the weights too). ``ell`` acts on the
    scaled ``phi``."""

    def __init__(self, disc, system: st.BorderedSystem, scale: np.ndarray | float,
                 ell: np.ndarray, weights: np.ndarray | float = 1.0, unit: float = 1.0):
        self.disc, self.system, self.scale, self.ell = disc, system, scale, ell
        self.weights, self.unit = weights, unit
        self.n = system.size

    def set(self, beta: float, kappa: float) -> bool:
        """Set the parameters; False where they are not valid (a far predictor)."""
        if not (math.isfinite(beta) and math.isfinite(kappa) and beta >= 0 and kappa > 0):
            return False
        b, k = self.disc.parameters
        try:
            if b != beta or k != kappa:
                self.disc.set_parameters(beta=float(beta), kappa=float(kappa))
        except ConfigError:  # (beyond what the resolution carries)
            return False
        return True

    def split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        n = self.n
        return x[:n] / self.scale, x[n:2 * n] / self.weights, float(x[2 * n]) * self.unit

    def _dkappa(self, v: np.ndarray, kappa: float) -> np.ndarray:
        """``d(G_z v)/dkappa`` (and ``dG/dkappa`` for ``v = z``): ``-(linear / kappa) v``."""
        sys = self.system
        f = sys.view.to_real(-self.disc.linear * sys.state(v) / kappa)
        return np.concatenate([sys.rows * f, np.zeros(sys.p)])

    def residual(self, x: np.ndarray, beta: float) -> np.ndarray:
        z, phi, kappa = self.split(x)
        if not self.set(beta, kappa):
            return np.full(x.size, np.nan)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            return np.concatenate([self.system.residual(z), self.system.jvp(z, phi),
                                   [self.ell @ (phi * self.weights) - 1.0]])

    def jvp(self, x: np.ndarray, beta: float, v: np.ndarray) -> np.ndarray:
        z, phi, kappa = self.split(x)
        dz, dphi, dk = self.split(v)
        self.set(beta, kappa)
        sys = self.system
        jz = sys.jvp(z, dz) + dk * self._dkappa(z, kappa)
        norm = float(np.linalg.norm(dz))
        second = np.zeros(self.n)
        if norm > 0:
            h = _CBRT_EPS * max(1.0, float(np.linalg.norm(z))) / norm
            second = (sys.jvp(z + h * dz, phi) - sys.jvp(z - h * dz, phi)) / (2 * h)
        jphi = second + dk * self._dkappa(phi, kappa) + sys.jvp(z, dphi)
        return np.concatenate([jz, jphi, [self.ell @ (dphi * self.weights)]])

    def dbeta(self, x: np.ndarray, beta: float) -> np.ndarray:
        h = _H_BETA * max(1.0, abs(beta))
        up, down = self.residual(x, beta + h), self.residual(x, beta - h)
        ok_up, ok_down = bool(np.isfinite(up).all()), bool(np.isfinite(down).all())
        if ok_up and ok_down:
            return (up - down) / (2 * h)
        mid = self.residual(x, beta)
        if ok_up:
            return (up - mid) / h
        if ok_down:
            return (mid - down) / h
        return np.full(x.size, np.nan)

    def precondition(self, r: np.ndarray) -> np.ndarray:
        n, sys = self.n, self.system
        return np.concatenate([self.scale * sys.precondition(r[:n]),
                               self.weights * sys.precondition(r[n:2 * n]), r[2 * n:]])


def _dense_jacobian(system: st.BorderedSystem, z: np.ndarray) -> np.ndarray:
    eye = np.eye(system.size)
    return np.column_stack([system.jvp(z, e) for e in eye])


def _start(disc, beta0: float, fold_state, kappa0: float) -> tuple[Any, np.ndarray, float]:
    """The bordered system, unknown and scale of the start (aligned, mass 1)."""
    ss.check_spectral(disc)
    for name, value in (("beta0", beta0), ("kappa0", kappa0)):
        if isinstance(value, bool) or not (isinstance(value, (int, float, np.floating))
                                           and math.isfinite(value)):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    disc.set_parameters(beta=float(beta0), kappa=float(kappa0))
    u0 = ss.as_state(disc, fold_state)
    mode = ss.lowest_mode(disc, u0)
    if mode != 1:
        raise ValueError(f"the start is not a state of the mode-1 branch: its lowest mode "
                         f"is {mode} (0: uniform)")
    u0 = ss.align(disc, u0)
    # S^2: the axisymmetric subspace (as branches.mode_branch), no phase condition; the
    # zonal geometry is that subspace already
    axisymmetric = disc.geometry == "sphere"
    view = ss.RealView(disc, u0, axisymmetric=axisymmetric)
    x0 = view.to_real(u0)
    x0[view.constant] /= view.mass(x0)
    system = st.BorderedSystem(disc, view, view.to_state(x0),
                               0 if axisymmetric or disc.geometry == "zonal" else mode)
    scale = 1.0 / float(x0[view.constant])
    return system, np.concatenate([x0, np.zeros(system.p)]), scale


def fold_curve(disc, beta0: float, fold_state, kappa0: float, *, beta_stop: float,
               ds: float = 0.02, ds_max: float = 0.1, points: int = 200,
               tol: float = 1e-9, r_min: float = 0.03, r_fit: float = 0.2,
               start_tol: float = 1e-6, fold_rtol: float = 1e-6) -> FoldCurve:
    """Continue the fold of the mode-1 branch from ``(beta0, kappa0)`` to ``beta_stop``.

    Args:
        disc: a spectral circle, sphere or zonal discretization that carries the betas
            of the range (its parameters are changed).
        beta0: beta of the start.
        fold_state: the state (coefficients or grid values) at the fold (``locate_fold``).
        kappa0: the fold's kappa at ``beta0``.
        beta_stop: the other end of the range in beta (usually below ``beta0``).
        ds, ds_max: first and largest arclength step (``ds_min = 1e-4 ds``).
        points: the most points on the curve, the start included.
        tol: Newton tolerance on the 2-norm of the extended residual.
        r_min: stop when the fold's order parameter falls below this (status
            "stopped").
        r_fit: the tricritical fit uses the points with ``r <= r_fit``.
        start_tol: the start must have ``||G|| <= start_tol``.
        fold_rtol: the fold found from the start must lie within this (relative) of
            ``kappa0``.

    Returns:
        A ``FoldCurve``; a Newton failure keeps the curve so far (status "failed", the
        message says where and why).

    Raises:
        ValueError: a start that is not a mode-1 stationary state or not a fold (the
            message says how far: ``||G||``, or the fold's kappa found from it), bad
            numbers.
        ConfigError: not a spectral circle/sphere/zonal discretization, a beta beyond its
            resolution.
    """
    from solvers.nonlinear.continuation import continue_branch

    if not (0 < ds <= ds_max and points >= 1 and tol > 0 and 0 <= r_min < r_fit):
        raise ValueError("fold_curve: need 0 < ds <= ds_max, points >= 1, tol > 0, "
                         "0 <= r_min < r_fit")
    system, z0, scale = _start(disc, beta0, fold_state, kappa0)
    fs, first = _fold_at_start(disc, system, z0, scale, float(beta0), kappa0, tol=tol,
                               start_tol=start_tol, fold_rtol=fold_rtol)
    rows = _CurveRows(disc, fs, r_min)
    state_shape = system.state(z0).shape
    lo, hi = sorted((float(beta0), float(beta_stop)))
    branch = continue_branch(
        fs.residual, first.x, float(beta0), jvp_x=fs.jvp, dF_dlam=fs.dbeta, ds=ds,
        ds_min=ds * 1e-4, ds_max=ds_max, direction=-1 if beta_stop < beta0 else 1,
        lam_bounds=(lo, hi), max_points=points, tol=tol, precondition=fs.precondition,
        callback=rows.callback)
    r = np.array(rows.rows["r"], dtype=float)
    beta = np.array(rows.rows["beta"], dtype=float)
    s = np.array(rows.rows["s"], dtype=float)
    estimate, fit = tricritical_estimate(beta, r, r_fit)
    return FoldCurve(beta=beta, kappa=np.array(rows.rows["kappa"], dtype=float),
                     order_parameter=r, amplitude=s,
                     states=(np.stack(rows.rows["state"]) if rows.rows["state"]
                             else np.zeros((0, *state_shape), complex)),
                     tricritical_beta=estimate, tricritical_fit=fit, status=branch.status,
                     message=_curve_message(branch, beta, r, s, r_min),
                     newton={"start": first.message})


def _fold_at_start(disc, system: st.BorderedSystem, z0: np.ndarray, scale: float,
                   beta0: float, kappa0: float, *, tol: float, start_tol: float,
                   fold_rtol: float) -> tuple[_FoldSystem, Any]:
    """The start checked (module docstring): stationary, and a fold, the fold system's
    Newton at ``beta0`` converging within ``fold_rtol`` of ``kappa0``. Returns the fold
    system and that Newton's result (``ValueError`` saying how far otherwise)."""
    from solvers.nonlinear.newton import newton_krylov

    residual0 = float(np.linalg.norm(system.residual(z0)))
    if not residual0 <= start_tol:
        raise ValueError(f"the start is not a stationary state at beta = {beta0:g}, "
                         f"kappa = {kappa0:.10g}: ||G|| = {residual0:.3g} > start_tol = "
                         f"{start_tol:g}")
    weights, unit = 1.0, 1.0
    if disc.geometry == "zonal":  # (the moments and kappa/(d/2), as shed_branch)
        weights = np.concatenate([system.rows, np.ones(system.p)])
        unit = disc.grid.dim / 2
    # the null vector: the right singular vector of the smallest singular value, of G_z
    # in the scaled unknowns (zonal: in the coefficients themselves the columns of the
    # high degrees are ~1/Q_l(1) and several singular values sit at round-off)
    _, sigma, vt = np.linalg.svd(_dense_jacobian(system, z0) / weights)
    phi0 = vt[-1] / np.linalg.norm(vt[-1])  # (scaled: ell @ phi0 = 1)
    fs = _FoldSystem(disc, system, scale * weights, phi0, weights, unit)
    x0 = np.concatenate([z0 * scale * weights, phi0, [float(kappa0) / unit]])
    first = newton_krylov(lambda x: fs.residual(x, beta0), x0,
                          jvp=lambda x, v: fs.jvp(x, beta0, v),
                          precondition=fs.precondition, tol=tol, max_iter=40)
    ratio = sigma[-1] / sigma[-2]
    if not first.converged:
        raise ValueError(f"the start is not a fold at beta = {beta0:g}, kappa = "
                         f"{kappa0:.10g}: Newton on the fold system from it failed "
                         f"({first.message}); smallest singular values of G_z "
                         f"{sigma[-1]:.3g}, {sigma[-2]:.3g} (ratio {ratio:.3g})")
    kappa_found = float(first.x[-1]) * unit
    rel = abs(kappa_found - kappa0) / abs(kappa0)
    if not rel <= fold_rtol:
        raise ValueError(f"the start is not a fold: kappa0 = {kappa0:.10g} is {rel:.3g} "
                         f"relative from the fold found from it at kappa = "
                         f"{kappa_found:.10g} (beta = {beta0:g}; fold_rtol = "
                         f"{fold_rtol:g}; smallest singular values of G_z {sigma[-1]:.3g}"
                         f", {sigma[-2]:.3g})")
    return fs, first


class _CurveRows:
    """The points of the fold curve as the continuation accepts them (``callback``),
    stopping it where the fold's ``r`` falls below ``r_min`` or its signed amplitude
    changes sign."""

    def __init__(self, disc, fs: _FoldSystem, r_min: float):
        self.disc, self.fs, self.r_min = disc, fs, r_min
        self.rows: dict[str, list] = {"beta": [], "kappa": [], "r": [], "s": [],
                                      "state": []}

    def callback(self, index: int, x: np.ndarray, beta: float) -> bool:
        rows = self.rows
        z, _, kappa = self.fs.split(x)
        u = self.fs.system.state(z)
        rows["beta"].append(beta)
        rows["kappa"].append(kappa)
        rows["r"].append(st.order_parameter(self.disc, u))
        rows["s"].append(signed_amplitude(self.disc, u))
        rows["state"].append(u)
        # (a sign change of the amplitude: a step went through r = 0, past the
        # tricritical point, onto the mirror image of the curve)
        return rows["r"][-1] < self.r_min or rows["s"][-1] * rows["s"][0] < 0


def _curve_message(branch, beta: np.ndarray, r: np.ndarray, s: np.ndarray,
                   r_min: float) -> str:
    """What happened to the curve (``FoldCurve.message``)."""
    status = branch.status
    if status == "stopped" and r.size and r[-1] < r_min:
        return (f"the fold's order parameter fell below r_min = {r_min:g} at beta = "
                f"{beta[-1]:.10g} (r = {r[-1]:.3g}): near the tricritical point")
    if status == "stopped" and s.size and s[-1] * s[0] < 0:
        return (f"the fold's amplitude changed sign at beta = {beta[-1]:.10g} (r = "
                f"{r[-1]:.3g}): a step went through the tricritical point")
    if status == "failed":
        return (f"Newton failed on the fold curve after {beta.size} points (last beta "
                f"= {beta[-1]:.10g}, r = {r[-1]:.3g}): {branch.message}"
                if beta.size else f"Newton failed at the start: {branch.message}")
    return branch.message


def tricritical_estimate(beta: np.ndarray, r: np.ndarray, r_fit: float = 0.2
                         ) -> tuple[float, str]:
    """The intercept at ``r = 0`` of the least-squares fit of ``beta`` by a polynomial in
    ``r^2`` (degree 2 with 4 points or more with ``r <= r_fit``, degree 1 with 2 or 3;
    module docstring), and what was fitted; NaN and the reason with fewer points."""
    beta, r = np.asarray(beta, dtype=float), np.asarray(r, dtype=float)
    keep = np.isfinite(beta) & np.isfinite(r) & (r <= r_fit)
    n = int(keep.sum())
    if n < 2:
        low = float(np.nanmin(r)) if r.size else math.nan
        return math.nan, (f"no estimate: {n} point(s) of the fold curve with r <= "
                          f"{r_fit:g} (smallest r {low:.3g}), 2 needed")
    degree = 2 if n >= 4 else 1
    coef = np.polynomial.polynomial.polyfit(r[keep] ** 2, beta[keep], degree)
    return float(coef[0]), (f"beta = polynomial of degree {degree} in r^2, least squares "
                            f"over {n} points with r in [{r[keep].min():.3g}, "
                            f"{r[keep].max():.3g}]; intercept at r = 0")


def locate_fold(disc, beta: float, *, kappa_min: float | None = None, ds: float = 0.02,
                ds_max: float = 0.1, points: int = 400, tol: float = 1e-10
                ) -> tuple[float, np.ndarray, str]:
    """The fold of the mode-1 branch at ``beta`` by one-parameter continuation in kappa.

    The branch leaves the pitchfork at ``kappa_c = 1/a_1(beta)`` along the critical mode
    (``switch_branch``) and is followed by ``continue_branch`` on the bordered system
    (exact ``dG/dkappa``) until kappa turns back up after decreasing; the fold is located
    on the branch (module docstring).

    Args:
        disc: a spectral circle or sphere discretization carrying ``beta``.
        beta: where (subcritical: above the tricritical beta).
        kappa_min: the lower end of the kappa range (default ``kappa_c / 4``).
        ds, ds_max, points, tol: the continuation's steps, points and Newton tolerance.

    Returns:
        ``(kappa_fold, state, message)``; ``kappa_fold`` NaN (and the state None) when
        no fold was found (supercritical, or Newton failed: the message says).
    """
    from solvers.nonlinear.continuation import switch_branch

    ss.check_spectral(disc)
    geometry, normalized = disc.geometry, disc.model.normalized
    value = getattr(disc.model, "value", 1.0)
    kappa_c = lin.critical_kappa(geometry, float(beta), normalized, 1, value,
                                 lin.disc_dim(disc))
    if not math.isfinite(kappa_c):
        return math.nan, None, (f"no fold at beta = {beta:g}: no pitchfork (value = "
                                f"{value:g}, V = c I with c <= 0: the uniform state is "
                                "stable for every kappa)")
    disc.set_parameters(beta=float(beta), kappa=kappa_c)
    problem = ShedBranch(disc, "kappa", 1)
    seen: list[float] = []

    def callback(index: int, y: np.ndarray, kappa: float) -> bool:
        seen.append(kappa)  # stop when kappa turns back up after a decrease
        return len(seen) >= 3 and seen[-1] > seen[-2] and min(seen) < seen[0]

    low = kappa_c / 4 if kappa_min is None else float(kappa_min)
    unit = problem.lam_scale  # (the continuation's parameter is kappa / unit)
    branch = switch_branch(problem.residual, problem.start(), kappa_c / unit,
                           problem.direction(1), h=SWITCH_H, jvp_x=problem.jvp_x,
                           dF_dlam=problem.dF_dkappa, tol=tol, ds=ds, ds_min=ds * 1e-4,
                           ds_max=ds_max, lam_bounds=(low / unit, 2 * kappa_c / unit),
                           max_points=points, precondition=problem.precondition,
                           callback=callback)
    folds = [s for s in branch.special if s.kind == "fold" and s.located]
    if not folds:
        return math.nan, None, (f"no fold on the mode-1 branch at beta = {beta:g}: "
                                f"{branch.status}, {branch.message}")
    kappa = problem.parameter_value(folds[0].lam)
    set_parameter(disc, "kappa", kappa)
    return kappa, problem.state(folds[0].x), f"fold at kappa = {kappa:.12g}"
