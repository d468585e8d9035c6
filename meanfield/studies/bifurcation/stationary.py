"""Stationary states of the noisy Fokker-Planck equation and their linear stability
(spectral discretizations of S^1, S^2 and zonal densities of S^{d-1}).

A stationary state solves ``F(u) = 0`` for the parameterised residual of the
discretization (``disc.residual``, docs/architecture.md) at its ``(beta, kappa)`` (and its
``value`` c of ``V = c I``, which multiplies the velocity: ``rho ∝ exp(c kappa Psi)``).
``F`` conserves mass and commutes with rotations, so its zeros come in families (any
mass, any orientation) and ``F'`` is singular there. ``stationary_state`` therefore solves
the bordered system, matrix-free by Newton-Krylov (``solvers.nonlinear.newton``):

    F(u) + sum_i mu_i b_i = 0,      g(u) = 0,

with ``g = (mass(u) - 1, phase conditions)`` and one border direction ``b_i`` per
condition: the constant mode for the mass (``F`` has no constant component, so its row is
``mu_0 = 0``), the rotation generators of the guess for the phase conditions. The
bordered Jacobian is regular when the borders are not in the range of ``F'`` and the
conditions cut the symmetry orbits transversally; at a true stationary state the
``mu_i`` vanish, which is checked (a solution with ``mu != 0`` is not stationary).

Phase conditions (only for a state that is not uniform):

- S^1: with ``k*`` the lowest mode ``k >= 1`` that the guess carries, ``Im c_{k*} = 0``
  (the guess is first rotated so that ``c_{k*}`` is real and positive), bordered with
  the rotation generator ``d/dtheta`` of the guess, ``i k c_k``. For the usual states
  (one cluster) ``k* = 1``: the first Fourier coefficient is real and positive, the mean
  direction is ``theta = 0``. States with the symmetry of mode ``k`` (``c_j = 0`` unless
  ``k | j``, the branches shed at mode ``k``) have ``c_1 = 0`` on their whole orbit, so
  ``Im c_1 = 0`` would fix nothing: ``k*`` takes their lowest mode instead.
- S^2: states axisymmetric about the z axis. With ``l*`` the lowest degree ``l >= 1``
  that the guess carries, ``a_{l*,1} = 0`` (its real and imaginary parts: two
  conditions), bordered with the generators of the rotations about the x and y axes
  (applied to the guess). A rotation about x or y moves ``a_{l,0}`` into ``a_{l,+-1}``
  (``L_+- Y_l0 = sqrt(l(l+1)) Y_{l,+-1}``), so the conditions cut the orbit; rotations
  about z leave an axisymmetric state alone. A guess with a dipole (``l* = 1``) is first
  rotated so that its mean direction is +z; a guess without one must be axisymmetric
  about z already (as ``branch_seed``'s zonal seeds are). A state that is not
  axisymmetric keeps a zero mode of the z rotation: ``stability`` reports one more zero
  mode than the two expected.

- Zonal (S^{d-1}, the real Gegenbauer coefficients): no phase condition. No rotation
  acts within the zonal states (``spectral_state``), so the bordered system is the mass
  condition alone and is regular at a zonal state that is not degenerate; a guess whose
  lowest degree is odd is reflected (``t -> -t``) so that its coefficient is positive.

Uniform states (no mode ``k >= 1`` / degree ``l >= 1`` above
``spectral_state.UNIFORM_RTOL`` of the mean) take the mass condition only.

What is accepted: Newton's tolerance met, the multipliers ``mu`` negligible, and a
density that is not negative (below ``-negativity_tolerance`` times its maximum): a seed
far too large can lead Newton to a root of ``F`` that is no probability density. Newton
goes to the nearest root, which may be the uniform state: ``StationaryResult.mode``
says which kind of state was found. ``zero_flux_defect`` checks a state independently.

Preconditioner: the diagonal diffusion ``disc.linear`` (``Delta / kappa``) inverted on
the modes where it is not zero (identity on the constant mode and on the ``mu``): at
moderate ``kappa`` the diffusion dominates the high modes of ``F'``, so GMRES sees a
low-rank perturbation of the identity.

Linear stability (``stability``), the closed-form seeds of the branches shed by the
uniform state (critical kappa, critical modes, ``branch_seed``) and the exact states at
beta = 0 are in ``meanfield.studies.bifurcation.stationary_linear``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from meanfield.errors import ConfigError
from meanfield.studies.bifurcation.spectral_state import (
    RealView,
    align,
    as_state,
    check_spectral,
    lowest_mode,
    moment_weights,
    phase_positions,
    rotation_generators,
    zonal_peak,
)

# The zonal residual's round-off floor (residual_floor): measured at the state moved by
# this many ulps; BorderedSystem takes components within FLOOR_MARGIN of it as zero.
FLOOR_ULPS = 4.0
FLOOR_MARGIN = 8.0
# |mu_i| ||b_i|| above this multiple of the tolerance: the bordered system was solved by
# a state that is not stationary (the borders took up a residual).
MU_FACTOR = 100.0


# --- diagnostics ----------------------------------------------------------------------
def order_parameter(disc, u: np.ndarray) -> float:
    """``r = |int x dmu|`` of the probability measure of the state (mass normalised),
    from the degree-1 coefficients: S^1 ``2 pi |c_1| / mass``; S^2 ``sqrt(4 pi / 3)
    |a_1|`` over the mass, ``|a_1|^2 = a_10^2 + 2 |a_11|^2`` (orthonormal harmonics);
    zonal ``|c_1| / (sqrt(d) c_0)`` (``Q_1 = sqrt(d) t``, ``<t^2> = 1/d``)."""
    u = np.asarray(u)
    if disc.geometry == "circle":  # (int e^{i theta} rho = 2 pi conj(c_1), mass 2 pi c_0)
        return float(abs(u[1]) / u[0].real)
    if disc.geometry == "zonal":
        return mode_amplitude(disc, u, 1)
    grid = disc.grid
    a10, a11 = u[grid.index(1, 0)].real, u[grid.index(1, 1)]
    mass = math.sqrt(4 * math.pi) * u[0].real
    return float(math.sqrt(4 * math.pi / 3) * math.sqrt(a10**2 + 2 * abs(a11) ** 2) / mass)


def mode_amplitude(disc, u: np.ndarray, mode: int) -> float:
    """The amplitude of Fourier mode / degree ``mode`` of the probability measure of the
    state (mass normalised), invariant under rotations: S^1 ``|int e^{i k theta} dmu|
    = |c_k| / c_0``; S^2 ``sqrt(4 pi / (2 l + 1)) |a_l| / mass`` with ``|a_l|^2 = a_l0^2
    + 2 sum_{m >= 1} |a_lm|^2`` (orthonormal harmonics; for an axisymmetric state
    ``|int P_l(cos theta) dmu|``); zonal ``|int P_l(t) dmu| = |c_l| / (Q_l(1) c_0)``,
    ``P_l = Q_l / Q_l(1)`` the Gegenbauer polynomial with ``P_l(1) = 1``. Mode 1 is the
    order parameter ``r``; it is the quantity that measures the branch of a mode whose
    ``r`` is identically 0 (k >= 2 on S^1).

    Args:
        disc: the spectral discretization.
        u: the state's coefficients.
        mode: k (S^1) or l (S^2, zonal), >= 0 (0 gives 1).
    """
    u = np.asarray(u)
    if disc.geometry == "circle":
        return float(abs(u[mode]) / u[0].real)
    if disc.geometry == "zonal":
        return float(abs(u[mode]) / (zonal_peak(disc.grid.dim, mode) * u[0]))
    grid = disc.grid
    power = u[grid.index(mode, 0)].real ** 2 + 2 * sum(
        abs(u[grid.index(mode, m)]) ** 2 for m in range(1, mode + 1))
    mass = math.sqrt(4 * math.pi) * u[0].real
    return float(math.sqrt(4 * math.pi / (2 * mode + 1) * power) / mass)


def zero_flux_defect(disc, u: np.ndarray) -> float:
    """``max |rho v - kappa^-1 grad rho| / max(|kappa^-1 grad rho|, rho / kappa)`` on the
    grid: how far the probability flux is from zero (NaN without noise).

    ``F(u) = 0`` says only that the flux is divergence-free. With a gradient velocity
    ``v = grad Psi`` and ``rho > 0`` that forces the flux to vanish (integrate
    ``div(rho grad(Psi - log rho / kappa)) = 0`` against ``Psi - log rho / kappa``), so
    ``rho ∝ exp(kappa Psi)``; the pointwise defect is an independent check of a computed
    state, and of its resolution (the truncated series of a concentrated state miss it).
    The velocity is ``disc.velocity_at`` (the model's exact series; the sphere's needs
    ducc0).
    """
    kappa = disc.parameters[1]
    if not math.isfinite(kappa):
        return math.nan
    u = np.asarray(u)
    grid = disc.grid
    points = grid.points.reshape(-1, grid.points.shape[-1])
    if disc.geometry == "circle":
        rho = disc.to_density(u).ravel()
        tangent = np.stack([-np.sin(grid.theta), np.cos(grid.theta)], axis=-1)
        grad = disc.to_density(1j * grid.k * u)[:, None] * tangent
    elif disc.geometry == "zonal":
        # (the first component of the flux, at unit vectors whose first component is the
        # node's t: the gradient of rho(t) is rho'(t) (e - t x), first component rho'(t)
        # (1 - t^2). Only the reliable nodes: at the others, in high d, the pointwise
        # values are round-off of the coefficients)
        keep = np.asarray(getattr(grid, "reliable", np.ones(grid.shape, bool)))
        t = grid.t[keep]
        points = np.stack([t, np.sqrt(np.maximum(1 - t**2, 0.0))], axis=-1)
        rho = disc.to_density(u)[keep]
        grad = (grid.derivative(u)[keep] * (1 - t**2))[:, None]
        diffusive = grad / kappa
        scale = max(float(np.max(np.abs(diffusive))), float(np.max(np.abs(rho))) / kappa)
        flux = rho[:, None] * disc.velocity_at(u, points)[:, :1] - diffusive
        return float(np.max(np.abs(flux)) / scale)
    else:
        from solvers.transforms.pointwise import sphere_synthesis_at

        rho, grad = sphere_synthesis_at(u, grid.lmax, points, gradient=True)
    diffusive = grad / kappa
    # (relative to the diffusive flux, or to max rho / kappa where that vanishes: a
    # uniform state's defect is then round-off, not 0/0)
    scale = max(float(np.max(np.abs(diffusive))), float(np.max(np.abs(rho))) / kappa)
    flux = rho[:, None] * disc.velocity_at(u, points) - diffusive
    return float(np.max(np.abs(flux)) / scale)


def residual_floor(disc, u: np.ndarray, f: np.ndarray | None = None) -> float:
    """Zonal: the round-off floor of ``F(u)`` in the moments' rows (``F_l / Q_l(1)``,
    the time derivatives of the moments ``<P_l>``): the largest change of those rows when
    ``u`` moves by ``FLOOR_ULPS`` ulps (a fixed sign pattern).

    The coefficients of a clustered state grow with d like ``Q_l(1)`` (d = 64: 10^6 at
    l = 29 for r = 0.69) and the transforms of ``F`` lose ``eps max_l |c_l|`` to
    cancellation: at d = 64 the floor reaches Newton's default tolerance (5e-10 at r =
    0.69, beta = 2) and grows fast with concentration (2e-6 at r = 0.82). ``F`` is
    ``disc.residual(u)`` when given.
    """
    real = np.asarray(u, dtype=float)
    rows = moment_weights(disc.grid.dim, real.size - 1)
    f = np.asarray(disc.residual(real) if f is None else f)
    jitter = np.random.default_rng(271828).choice([-1.0, 1.0], real.size)
    other = np.asarray(disc.residual(real * (1.0 + FLOOR_ULPS * np.finfo(float).eps
                                              * jitter)))
    return float(np.max(np.abs(rows * (f - other))))


def spectral_tail(disc, u: np.ndarray) -> float:
    """Zonal: the largest moment ``|<P_l>| = |c_l| / (Q_l(1) c_0)`` over the top quarter
    of the degrees (l > 3L/4): how far the state is from resolved (moments are at most
    1)."""
    real = np.asarray(u, dtype=float)
    top = real.size - 1
    moments = np.abs(real) * moment_weights(disc.grid.dim, top) / abs(real[0])
    return float(np.max(moments[3 * top // 4 + 1:]))


def free_energy(disc, u: np.ndarray) -> float:
    """``kappa^-1 int rho log rho - c (E_beta(rho) - E_beta(uniform))`` (``c`` the model's
    ``value``, ``V = c I``): the run diagnostics' free energy (``model.diagnostics``, the
    same numbers an evolve dataset holds); NaN without noise."""
    d = disc.model.diagnostics(disc.to_density(np.asarray(u)))
    return float(d.get("free_energy", math.nan))


# --- Newton on the bordered system -----------------------------------------------------
class BorderedSystem:
    """The bordered system ``[F(x) + B mu; g(x)] = 0`` of the module docstring on the
    real components ``z = (x, mu)`` (``x``: ``view``'s kept components of the state).

    ``stationary_state`` solves it at fixed parameters; ``meanfield.studies.bifurcation.study``
    continues it in kappa or beta (``disc.set_parameters`` between calls: ``residual``,
    ``jvp`` and ``precondition`` read the discretization's current parameters).

    Args:
        disc: the spectral discretization.
        view: the ``RealView`` of its states.
        reference: a state whose rotation generators are the phase borders (the guess;
            at a pitchfork, where the state itself is uniform and its generators vanish,
            the critical mode).
        mode: the lowest mode (degree) of the phase conditions; 0: the mass only.

    On the zonal geometry the rows of ``F`` are those of the moments, ``F_l / Q_l(1)``
    (``rows``; ``residual``, ``jvp``, ``jacobian`` and ``precondition`` alike): the rows
    of ``F`` itself grow with d like the coefficients (``Q_l(1)^2`` is 2079 for l = 2 at
    d = 64), so that a tolerance on them would mean another thing in every d; and the
    components of ``F`` within its round-off floor (``residual_floor``) count as zero.

    Attributes:
        border: the border directions, ``(view.size, p)`` (mass first).
        fixed: the components the phase conditions set to zero.
        p: the number of conditions (and multipliers).
        size: ``view.size + p``.
        rows: the row scales of the state rows (1, or the zonal moment weights).
    """

    def __init__(self, disc, view: RealView, reference: np.ndarray, mode: int):
        self.disc, self.view, self.mode = disc, view, int(mode)
        borders = [np.eye(view.size)[view.constant]]
        self.fixed: list[int] = []
        if mode:
            borders += [view.to_real(b) for b in rotation_generators(disc, reference)]
            self.fixed = [view.index(q, imag) for q, imag in phase_positions(disc, mode)]
        self.border = np.column_stack(borders)  # (size, p)
        self.p = self.border.shape[1]
        self.size = view.size + self.p
        self.rows = (moment_weights(disc.grid.dim, view.size - 1)
                     if disc.geometry == "zonal" else np.ones(view.size))
        self._inverse_at: tuple[float, np.ndarray] | None = None
        self._units: np.ndarray | None = None

    def state(self, z: np.ndarray) -> np.ndarray:
        """The state of the unknown ``z = (x, mu)``."""
        return self.view.to_state(z[: self.view.size])

    def conditions(self, x: np.ndarray) -> np.ndarray:
        return np.concatenate([[self.view.mass(x) - 1.0], x[self.fixed]])

    def residual(self, z: np.ndarray) -> np.ndarray:
        view = self.view
        x, mu = z[: view.size], z[view.size:]
        u = view.to_state(x)
        f = view.to_real(self.disc.residual(u))
        if self.disc.geometry == "zonal":
            # (F with the components within its round-off floor set to 0: a state at
            # its floor is as stationary as the arithmetic can tell; residual_floor)
            floor = FLOOR_MARGIN * residual_floor(self.disc, u, f)
            f = np.where(np.abs(self.rows * f) <= floor, 0.0, f)
        f = self.rows * (f + self.border @ mu)
        return np.concatenate([f, self.conditions(x)])

    def jvp(self, z: np.ndarray, dz: np.ndarray) -> np.ndarray:
        view = self.view
        dx, dmu = dz[: view.size], dz[view.size:]
        f = view.to_real(self.disc.jvp(self.state(z), view.to_state(dx))) + self.border @ dmu
        return np.concatenate([self.rows * f, [view.unit_mass * dx[view.constant]],
                               dx[self.fixed]])

    def jacobian(self, z: np.ndarray) -> np.ndarray:
        """The bordered Jacobian at ``z``, dense ``(size, size)``: the columns of
        ``jvp`` (``disc.jvp_many`` on the unit states of the real components, made
        once) with the border blocks filled in directly."""
        view = self.view
        if self._units is None:
            self._units = np.stack([view.to_state(e) for e in np.eye(view.size)])
        columns = np.asarray(self.disc.jvp_many(self.state(z), self._units))
        columns = columns.reshape(view.size, -1)
        if view.complex:
            columns = np.concatenate([columns.real, columns.imag], axis=1)
        out = np.zeros((self.size, self.size))
        out[: view.size, : view.size] = columns.real[:, view.used].T
        out[: view.size, view.size:] = self.border
        out[: view.size] *= self.rows[:, None]
        out[view.size, view.constant] = view.unit_mass
        out[view.size + 1 + np.arange(len(self.fixed)), self.fixed] = 1.0
        return out

    def state_jacobian(self, jacobian: np.ndarray) -> np.ndarray:
        """``F'`` itself (the state rows and columns, the moment rows scaled back) from
        a ``jacobian`` of this system: what ``stationary_linear.stability`` takes."""
        size = self.view.size
        return jacobian[:size, :size] / self.rows[:, None]

    def precondition(self, v: np.ndarray) -> np.ndarray:
        """The inverse diffusion where it is not zero (module docstring), at the current
        kappa (rebuilt when it changes), in the rows of ``residual``."""
        kappa = self.disc.parameters[1]
        if self._inverse_at is None or self._inverse_at[0] != kappa:
            view = self.view
            diag = view.to_real(np.broadcast_to(self.disc.linear, view.shape) * (1 + 1j)
                                if view.complex else self.disc.linear).real
            inverse = np.ones(self.size)
            nonzero = np.abs(diag) > 0
            inverse[: view.size][nonzero] = 1.0 / diag[nonzero]
            inverse[: view.size] /= self.rows
            self._inverse_at = (kappa, inverse)
        return self._inverse_at[1] * v

@dataclass
class StationaryResult:
    """What ``stationary_state`` found.

    Attributes:
        state: the state (coefficients; ``disc.to_density`` gives the density), aligned
            as the phase conditions say.
        converged: Newton met the tolerance and the border multipliers vanish.
        residual_norm: ``||F(state)||`` (2-norm over the real components; on the zonal
            geometry over the moments' rows, ``BorderedSystem``).
        iterations: Newton iterations.
        message: what happened (on failure, how far the guess was: ``||F(guess)||``).
        order_parameter: ``r = |int x dmu|``.
        free_energy: ``kappa^-1 int rho log rho - E`` (NaN without noise).
        multipliers: the border multipliers ``mu`` (mass first, then the phases).
        mode: the lowest mode (degree) that the state carries (``lowest_mode``): 0 for
            a uniform state, 1 for one cluster, k for a state of k-fold symmetry.
        history: the Newton residual norms.
        flux_defect: ``zero_flux_defect`` of the state (NaN when it cannot be computed):
            an independent check of stationarity and resolution.
    """

    state: np.ndarray
    converged: bool
    residual_norm: float
    iterations: int
    message: str
    order_parameter: float
    free_energy: float
    multipliers: np.ndarray = field(default_factory=lambda: np.zeros(0))
    mode: int = 0
    history: list = field(default_factory=list)
    flux_defect: float = math.nan


def stationary_state(disc, guess, *, tol: float = 1e-10, phase: bool = True,
                     max_iter: int = 30) -> StationaryResult:
    """A stationary state near ``guess`` by Newton-Krylov on the bordered system.

    Args:
        disc: a spectral circle or sphere discretization at the wanted ``(beta, kappa)``
            (``disc.set_parameters``).
        guess: a state (coefficients) or grid values; its mass is not used (the result
            has mass 1).
        tol: tolerance on the 2-norm of the bordered residual (> 0).
        phase: add the phase conditions to a non-uniform guess (module docstring);
            without them Newton works on the singular system (for experiments).
        max_iter: Newton iterations at most.

    Returns:
        A ``StationaryResult``; ``converged`` is False (and the message says why, with
        ``||F(guess)||``) when Newton fails or lands on a bordered solution whose
        multipliers do not vanish.

    Raises:
        ValueError: ``tol <= 0`` or a guess of the wrong shape (before any work).
        ConfigError: not a spectral circle, sphere or zonal discretization.
    """
    from solvers.nonlinear.newton import newton_krylov

    if isinstance(tol, bool) or not (isinstance(tol, (int, float)) and math.isfinite(tol)
                                    and tol > 0):
        raise ValueError(f"tol must be a positive number, got {tol!r}")
    check_spectral(disc)
    view, x0, mode = _start(disc, guess, phase)
    system = BorderedSystem(disc, view, view.to_state(x0), mode)
    z0 = np.concatenate([x0, np.zeros(system.p)])
    start = float(np.linalg.norm(system.rows * view.to_real(disc.residual(view.to_state(x0)))))
    out = newton_krylov(system.residual, z0, jvp=system.jvp,
                        precondition=system.precondition, tol=tol, max_iter=max_iter)
    x, mu = out.x[: view.size], out.x[view.size:]
    u = view.to_state(x)
    if mode and np.isfinite(x).all():
        # The phase conditions hold to the tolerance; the exact rotation onto them (an
        # equivariance: ||F|| unchanged) leaves the orientation exact.
        u = np.asarray(align(disc, u), dtype=u.dtype)
    f_norm = float(np.linalg.norm(system.rows * view.to_real(disc.residual(u))))
    scaled_mu = np.abs(mu) * np.linalg.norm(system.border, axis=0)
    converged, message = _verdict(disc, u, out, f_norm, scaled_mu, mu, start, tol)
    finite = bool(np.isfinite(x).all())
    return StationaryResult(
        state=u, converged=converged, residual_norm=f_norm, iterations=out.iterations,
        message=message, order_parameter=order_parameter(disc, u) if finite else math.nan,
        free_energy=free_energy(disc, u) if finite else math.nan, multipliers=mu,
        mode=lowest_mode(disc, u) if finite else mode, history=list(out.history),
        flux_defect=_flux_defect(disc, u) if finite else math.nan)


def _start(disc, guess, phase: bool) -> tuple[RealView, np.ndarray, int]:
    """The view, the real components (mass 1) and the phase mode of the guess."""
    u0 = as_state(disc, guess)
    view = RealView(disc, u0)
    mode = lowest_mode(disc, u0) if phase else 0
    if mode:
        u0 = align(disc, u0)
    x0 = view.to_real(u0)
    x0[view.constant] /= view.mass(x0)  # (any positive mass: rescaled to 1)
    if view.mass(x0) <= 0 or not np.isfinite(x0).all():
        raise ValueError("the guess has no positive mass")
    return view, x0, mode


def _verdict(disc, u: np.ndarray, out, f_norm: float, scaled_mu: np.ndarray,
             mu: np.ndarray, start: float, tol: float) -> tuple[bool, str]:
    """Whether Newton's answer ``out`` is accepted (module docstring), and the message."""
    converged = bool(out.converged)
    rho = disc.to_density(u)
    low, high = float(np.min(rho)), float(np.max(rho))
    negative = low < -getattr(disc, "negativity_tolerance", 0.0) * high
    if converged and negative:
        converged = False
        message = (f"Newton converged to a root of F whose density is negative (min "
                   f"{low:.3g}, max {high:.3g}): not a probability density (a spurious "
                   "root, or the state is not resolved: raise the resolution); "
                   f"||F(guess)|| = {start:.3g}")
    elif converged and np.any(scaled_mu > MU_FACTOR * tol):
        converged = False
        message = (f"the bordered system is solved but its multipliers do not vanish "
                   f"(|mu| ||b|| = {scaled_mu.max():.3g}): the state is not stationary "
                   f"(||F|| = {f_norm:.3g}); ||F(guess)|| = {start:.3g}")
    elif converged:
        message = (f"converged in {out.iterations} Newton iterations: ||F|| = "
                   f"{f_norm:.3g} (guess {start:.3g}), |mu| = {np.abs(mu).max():.2g}")
    else:
        message = (f"no convergence: {out.message}; ||F|| = {f_norm:.3g} after "
                   f"{out.iterations} iterations, ||F(guess)|| = {start:.3g}")
    return converged, message


def _flux_defect(disc, u: np.ndarray) -> float:
    """``zero_flux_defect`` of a finite state, NaN where it cannot be computed."""
    try:
        return zero_flux_defect(disc, u)
    except (ImportError, ConfigError):  # (no ducc0: no velocity off the sphere's grid)
        return math.nan
