"""Linear theory of the stationary states of ``meanfield.studies.bifurcation.stationary``: their
stability (and the uniform state's spectrum for many kappa, ``UniformSpectrum``) and the
closed-form seeds of the branches that the uniform state sheds, on S^1, S^2 and the zonal
densities of S^{d-1} (``geometry = "zonal"``, ``dim = d``).

Stability (``stability``): the eigenvalues of ``F'(u)`` on the mass-preserving real
components (the constant component left out: ``F`` maps into mean-zero densities, so
this removes the mass's zero eigenvalue exactly); the rotations' zero eigenvalues are
dropped as in ``meanfield.discretizations.spectrum`` (``|lambda| <= ZERO_RTOL`` times the
spectral radius) and counted against what the symmetry predicts: one on S^1 for a
non-uniform state, two on S^2 for an axisymmetric one (rotations about two axes through
the equator), none for the uniform state. On the zonal geometry the state space holds
only the zonal perturbations (the ``m = 0`` block of S^2, in every d): no rotation zero
mode, and ``stable`` means stable against zonal perturbations.

Seeds. Linear theory about the uniform density (docs/conventions.md): mode ``k`` on S^1
(degree ``l`` on S^2) grows at ``sigma = k^2 (a_k - 1/kappa)`` (``l(l+1) (a_l - 1/kappa)``),
so it turns unstable at ``kappa_c = 1/a_k`` (``1/a_l``). The eigenspace there is the mode
itself: ``cos k theta, sin k theta`` (multiplicity 2, k >= 1) on S^1, the ``2l + 1``
harmonics of degree l on S^2; zonal: ``sigma_l = l (l + d - 2)(a_l - 1/kappa)``
(``meanfield.model.zonal_kernels``) and the one zonal harmonic ``Q_l(<x, e>)``
(multiplicity 1 within the zonal states). A branch of stationary states leaves the uniform state
along it; ``branch_seed`` starts Newton on it with the zonal / cosine representative,
which the phase conditions of ``meanfield.studies.bifurcation.stationary`` expect (mean direction
``theta = 0`` on S^1, axisymmetric about z on S^2).

The exact states at beta = 0 (``rho ∝ exp(kappa r <x, e>)``, ``r = A(kappa r)``: the
pitchforks at ``kappa_c = 1/a_1 = d``) are ``meanfield.studies.bifurcation.noisy_kuramoto``
(imported here too: ``noisy_order_parameter``, ``noisy_stationary_density``, ...).

With the value matrix ``V = c I`` (the discretization's ``value``) the velocity is
multiplied by c: the rates are ``k^2 (c a_k - 1/kappa)``, ``kappa_c = 1/(c a_k)`` (none for
``c <= 0``) and the beta = 0 states solve ``r = A(c kappa r)``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from meanfield.discretizations.spectrum import DENSE_MAX, ZERO_RTOL
from meanfield.model.kernels import growth_rate, sphere_growth_rate
from meanfield.model.zonal_kernels import zonal_growth_rate
from meanfield.studies.bifurcation.noisy_kuramoto import (  # noqa: F401 (re-exported)
    langevin,
    mean_alignment,
    noisy_order_parameter,
    noisy_stationary_density,
)
from meanfield.studies.bifurcation.spectral_state import (
    GEOMETRIES,
    RealView,
    check_geometry,
    check_spectral,
    lowest_mode,
    zonal_peak,
)

# A sphere state whose order m >= 1 coefficients (a circle state whose Im c_k) stay below
# this fraction of the mean is axisymmetric (even), and its stability is computed by
# blocks. What the blocks leave out couples them at this relative size delta; for the
# block-diagonal part the eigenvalues then move only at second order, by about
# (delta ||F'||)^2 / gap (1e-12 for ||F'|| ~ 1e3 and a gap of 1e-1): far below the zero
# modes' threshold ZERO_RTOL. Newton leaves the asymmetry at ~ its tolerance (1e-12..1e-10).
SYMMETRY_RTOL = 1e-8


# --- linear stability ------------------------------------------------------------------
@dataclass
class StabilityResult:
    """The linear stability of a state.

    Attributes:
        eigenvalues: the ``count`` leading eigenvalues (largest real part first), the
            zero modes dropped.
        stable: every remaining eigenvalue has ``Re < 0`` and the zero modes are exactly
            the symmetry's.
        zero_modes: eigenvalues dropped as zero (the mass is left out beforehand).
        symmetry_modes: how many the rotations explain (S^1 non-uniform: 1; S^2
            axisymmetric: 2; uniform: 0).
        leading: real part of the first eigenvalue (``-inf`` if none).
        message: a sentence on the above.
    """

    eigenvalues: np.ndarray
    stable: bool
    zero_modes: int
    symmetry_modes: int
    leading: float
    message: str


def mass_preserving_operator(disc, u: np.ndarray):
    """``F'(u)`` on the real components that change the density, the mean left out.

    Returns:
        ``(matvec, size)``: the operator on ``R^size``. ``F`` has no mean component, so
        this is ``F'`` on the invariant space of mass-preserving perturbations, whose
        spectrum is ``F'``'s with the mass's zero eigenvalue taken out.
    """
    u = np.asarray(u)
    view = RealView(disc, u)
    keep = np.arange(view.size) != view.constant

    def matvec(x: np.ndarray) -> np.ndarray:
        full = np.zeros(view.size)
        full[keep] = x
        return view.to_real(disc.jvp(u, view.to_state(full)))[keep]

    return matvec, int(keep.sum())


def jacobian_eigenvalues(disc, u: np.ndarray, count: int | None = None) -> np.ndarray:
    """Eigenvalues of ``mass_preserving_operator`` sorted by decreasing real part, none
    dropped: every one (dense, ``size <= DENSE_MAX``: ``size`` JVPs and one dense
    eigenvalue problem) or the ``count + 8`` of largest real part (ARPACK)."""
    return _eigenvalues(disc, u, count)[0]


class UniformSpectrum:
    """``F'`` at the uniform state ``u`` on the mass-preserving components (the matrix of
    ``mass_preserving_operator``) at the discretization's current parameters, and its
    eigenvalues as ``jacobian_eigenvalues`` gives them, for many kappa at one beta.

    ``F' = Delta/kappa + N'(u)`` and ``N'`` has no kappa: the columns of ``N'(u)`` are
    formed once per beta (at kappa = inf, where the diffusion is 0) and the diffusion's
    diagonal added at each kappa; column j is then ``N' e_j + (Delta/kappa)_j e_j``, the
    very sums ``disc.jvp`` forms, so the matrix is the same to the last bit as one made
    of products at each kappa (the uniform branch of a zonal d = 64, L = 256 study:
    215 matrices of 256 products each took 31 s). The sphere's eigenvalues stay by blocks
    (``axisymmetric_eigenvalues``), a system above ``DENSE_MAX`` stays with ARPACK.
    """

    def __init__(self, disc, u: np.ndarray):
        self.disc, self.u = disc, np.asarray(u)
        view = RealView(disc, self.u)
        self._keep = np.arange(view.size) != view.constant
        self._view = view
        self._formed: tuple[float, np.ndarray] | None = None

    def jacobian(self) -> np.ndarray:
        """The dense matrix at the current (beta, kappa)."""
        disc, view = self.disc, self._view
        beta, kappa = disc.parameters
        if self._formed is None or self._formed[0] != beta:
            disc.set_parameters(kappa=math.inf)
            try:
                matvec, size = mass_preserving_operator(disc, self.u)
                columns = np.column_stack([matvec(e) for e in np.eye(size)])
            finally:
                disc.set_parameters(kappa=kappa)
            self._formed = (beta, columns)
        linear = np.broadcast_to(disc.linear, view.shape)
        diagonal = view.to_real(linear * (1 + 1j) if view.complex else linear).real
        return self._formed[1] + np.diag(diagonal[self._keep])

    def eigenvalues(self) -> np.ndarray:
        """Every eigenvalue, sorted by decreasing real part (``jacobian_eigenvalues``)."""
        if is_axisymmetric(self.disc, self.u) or int(self._keep.sum()) > DENSE_MAX:
            return jacobian_eigenvalues(self.disc, self.u)
        lam = np.linalg.eigvals(self.jacobian())
        return lam[np.argsort(-lam.real)]


def is_axisymmetric(disc, u: np.ndarray) -> bool:
    """Whether a sphere state has no order ``m >= 1`` above ``SYMMETRY_RTOL`` of its
    mean coefficient (then ``F'`` at it is block-diagonal in ``m``)."""
    if disc.geometry != "sphere":
        return False
    u = np.asarray(u)
    rest = np.abs(u[np.asarray(disc.grid.m) >= 1])
    return bool(rest.size == 0 or rest.max() <= SYMMETRY_RTOL * abs(u.flat[0]))


def is_even(disc, u: np.ndarray) -> bool:
    """Whether a circle state is even about theta = 0 (``Im c_k`` below
    ``SYMMETRY_RTOL`` of the mean): then ``F'`` at it maps the cosine parts to
    cosine parts and the sine parts to sine parts (``F`` commutes with the reflection
    ``theta -> -theta``, ``c_k -> conj(c_k)``)."""
    if disc.geometry != "circle" or not np.iscomplexobj(u):
        return False
    u = np.asarray(u)
    return bool(np.abs(u.imag).max() <= SYMMETRY_RTOL * abs(u.flat[0]))


def axisymmetric_eigenvalues(disc, u: np.ndarray) -> np.ndarray:
    """Every eigenvalue of ``mass_preserving_operator`` at an axisymmetric sphere state,
    by its blocks, sorted by decreasing real part.

    ``F`` commutes with the rotations about z, so at an axisymmetric state ``F'`` maps
    the coefficients of order ``m`` to order ``m``: it is block-diagonal, a block of
    ``L`` real components for ``m = 0`` (the mean left out) and ``2 (L + 1 - m)`` for
    ``m >= 1``. One product ``F' w`` with ``w`` a unit vector in EVERY block at once
    gives a column of each block (the blocks do not mix), so ``2L`` products form all
    the blocks (instead of ``(L + 1)^2 - 1`` for the dense matrix) and the eigenvalue
    problems are small: at L = 31, 62 products and 32 eigenvalue problems of at most
    62 x 62, against 1023 products and one of 1023 x 1023.
    """
    u = np.asarray(u)
    view = RealView(disc, u)
    order = np.asarray(disc.grid.m).ravel()
    kept_order = np.concatenate([order, order])[view.used]
    kept = np.arange(view.size) != view.constant
    blocks = [np.flatnonzero(kept & (kept_order == m)) for m in np.unique(kept_order)]
    blocks = [b for b in blocks if b.size]
    width = max(b.size for b in blocks)
    probes = np.zeros((width, view.size))
    for b in blocks:
        probes[np.arange(b.size), b] = 1.0
    states = np.stack([view.to_state(p) for p in probes])
    out = np.asarray(disc.jvp_many(u, states))
    columns = np.stack([view.to_real(w) for w in out])  # (width, size): row j = F' probe j
    lam = np.concatenate([np.linalg.eigvals(columns[: b.size][:, b].T) for b in blocks])
    return lam[np.argsort(-lam.real)]


def _eigenvalues(disc, u: np.ndarray, count: int | None) -> tuple[np.ndarray, bool]:
    if is_axisymmetric(disc, u):
        return axisymmetric_eigenvalues(disc, u), True
    matvec, size = mass_preserving_operator(disc, u)
    dense = size <= DENSE_MAX
    if dense:
        jac = np.column_stack([matvec(e) for e in np.eye(size)])
        lam = np.linalg.eigvals(jac)
    else:
        from scipy.sparse.linalg import LinearOperator, eigs

        op = LinearOperator((size, size), matvec=matvec, dtype=float)
        k = min((count or 6) + 8, size - 2)
        lam = eigs(op, k=k, which="LR", return_eigenvectors=False)
    return lam[np.argsort(-lam.real)], dense


def stability(disc, state: np.ndarray, count: int = 6,
              jacobian: np.ndarray | None = None) -> StabilityResult:
    """Linear stability of a (stationary) state: leading eigenvalues of ``F'`` with the
    symmetries' zero modes removed and counted.

    The mass is left out exactly (``mass_preserving_operator``); eigenvalues with
    ``|lambda| <= ZERO_RTOL`` times the spectral radius (dense; ARPACK: times the largest
    diffusion rate) are dropped as zero modes, like ``spectrum.leading_eigenvalues``.
    A non-uniform state on S^1 should have exactly one (the rotation), an axisymmetric
    one on S^2 two (rotations about two axes through the equator); more means a
    degenerate (bifurcation) point and ``stable`` is False.

    Args:
        disc: the spectral discretization (at the state's parameters).
        state: its state.
        count: how many leading eigenvalues to return.
        jacobian: ``F'(state)`` on the real components of ``RealView(disc, state)``
            (dense, ``(size, size)``; e.g. the top-left block of
            ``BorderedSystem.jacobian``) when already formed: its eigenvalues are taken
            with the mean's row and column left out, no products made.
    """
    check_spectral(disc)
    u = np.asarray(state)
    if jacobian is not None:
        view = RealView(disc, u)
        keep = np.arange(view.size) != view.constant
        if np.shape(jacobian) != (view.size, view.size):
            raise ValueError(f"jacobian has shape {np.shape(jacobian)}, expected "
                             f"({view.size}, {view.size})")
        jac = np.asarray(jacobian)
        if is_even(disc, u):
            # F' of an even state keeps the cosine (Re c_k) and sine (Im c_k) parts
            # apart: two eigenvalue problems of half the size (a quarter of the work)
            half = np.arange(view.size) < np.count_nonzero(view.used[: u.size])
            blocks = [np.flatnonzero(keep & half), np.flatnonzero(keep & ~half)]
            lam = np.concatenate([np.linalg.eigvals(jac[np.ix_(b, b)]) for b in blocks
                                  if b.size])
        else:
            lam = np.linalg.eigvals(jac[np.ix_(keep, keep)])
        lam, dense = lam[np.argsort(-lam.real)], True
    else:
        lam, dense = _eigenvalues(disc, u, count)
    scale = float(np.max(np.abs(lam))) if dense else float(np.max(np.abs(disc.linear)))
    zero = np.abs(lam) <= ZERO_RTOL * max(scale, 1.0)
    mode = lowest_mode(disc, u)
    expected = symmetry_zero_modes(disc.geometry, mode)
    rest = lam[~zero][:count]
    leading = float(rest[0].real) if rest.size else -math.inf
    zeros = int(zero.sum())
    stable = leading < 0 and zeros == expected
    if zeros != expected:
        message = (f"{zeros} zero eigenvalues where the rotations explain {expected}: a "
                   "degenerate state (bifurcation point) or not the assumed symmetry")
    else:
        message = (f"{'stable' if stable else 'unstable'}: leading eigenvalue "
                   f"{leading:.6g}, {zeros} rotation zero mode(s) dropped")
    return StabilityResult(eigenvalues=rest, stable=bool(stable), zero_modes=zeros,
                           symmetry_modes=expected, leading=leading, message=message)


def symmetry_zero_modes(geometry: str, mode: int) -> int:
    """The zero eigenvalues the rotations give a state whose lowest mode is ``mode``:
    none for the uniform state (mode 0) and on the zonal geometry (no rotation acts
    within the zonal states), one on S^1, two on S^2 (axisymmetric states)."""
    if mode == 0 or geometry == "zonal":
        return 0
    return 1 if geometry == "circle" else 2


# --- seeds of the branches shed by the uniform state --------------------------------------
def area(geometry: str) -> float:
    """The measure of the domain the densities are taken against: 2 pi (S^1), 4 pi
    (S^2), 1 (zonal: the normalized surface measure)."""
    return {"circle": 2 * math.pi, "sphere": 4 * math.pi, "zonal": 1.0}[geometry]


def attraction_coefficient(geometry: str, beta: float, normalized: bool, mode: int = 1,
                           dim: int | None = None) -> float:
    """``a_k`` (S^1, mode k) or ``a_l`` (S^2, zonal S^{d-1}: degree l) of
    docs/conventions.md: the growth rate without noise divided by ``k^2`` (``l(l+1)``,
    ``l(l + d - 2)``), from ``meanfield.model.kernels.growth_rate`` /
    ``sphere_growth_rate`` / ``meanfield.model.zonal_kernels.zonal_growth_rate``
    (``dim`` = d, for the zonal geometry only)."""
    check_geometry(geometry, dim)
    if int(mode) != mode or mode < 1:
        raise ValueError(f"mode must be an integer >= 1, got {mode!r}")
    if geometry == "circle":
        return float(growth_rate(mode, beta, math.inf, normalized)) / mode**2
    if geometry == "zonal":
        rate = zonal_growth_rate(int(mode), int(dim), beta, math.inf, normalized)
        return float(rate) / (mode * (mode + dim - 2))
    return float(sphere_growth_rate(mode, beta, math.inf, normalized)) / (mode * (mode + 1))


def critical_kappa(geometry: str, beta: float, normalized: bool, mode: int = 1,
                   value: float = 1.0, dim: int | None = None) -> float:
    """``kappa_c = 1/(c a_k)`` (S^1) or ``1/(c a_l)`` (S^2, zonal S^{d-1} with ``dim``
    = d): where mode k (degree l) of the uniform state turns unstable as kappa grows;
    ``inf`` where ``c a <= 0`` (beta = 0 and k, l >= 2: those modes never grow; ``c =
    value <= 0``, ``V = c I`` repulsive or no interaction: no mode ever grows)."""
    a = value * attraction_coefficient(geometry, beta, normalized, mode, dim)
    return math.inf if a <= 0 else 1.0 / a


def disc_dim(disc) -> int | None:
    """The d of a zonal discretization (None on S^1 and S^2, whose d is fixed)."""
    return int(disc.grid.dim) if disc.geometry == "zonal" else None


def _uniform_state(disc) -> np.ndarray:
    grid = disc.grid
    u = disc.to_state(np.full(grid.shape, 1.0 / area(disc.geometry)))
    return np.asarray(u, dtype=float if disc.geometry == "zonal" else complex)


def critical_modes(disc, mode: int) -> list[np.ndarray]:
    """A real basis of the uniform state's eigenspace of mode k (degree l), as states
    whose densities have maximum 1 (zonal / cosine first).

    S^1: ``cos k theta``, ``sin k theta`` (2). S^2: ``P_l(cos colat)`` (the zonal
    ``Y_l0`` scaled) and the real harmonics ``Re, Im Y_lm`` for m = 1..l (``2l + 1`` in
    all; only the first has maximum 1, the others unit coefficient). Zonal: ``P_l(t) =
    Q_l(t)/Q_l(1)`` (1: the zonal states hold no other degree-l harmonic).
    """
    check_geometry(disc.geometry, disc_dim(disc))
    template = _uniform_state(disc)
    if disc.geometry == "zonal":
        if not 1 <= mode <= disc.grid.lmax:
            raise ValueError(f"degree must be in 1..{disc.grid.lmax}, got {mode}")
        v = np.zeros_like(template)
        v[mode] = 1.0 / zonal_peak(disc.grid.dim, mode)
        return [v]
    if disc.geometry == "circle":
        if not 1 <= mode < disc.grid.n // 2:
            raise ValueError(f"mode must be in 1..{disc.grid.n // 2 - 1}, got {mode}")
        out = []
        for value in (0.5, -0.5j):  # cos k theta, sin k theta
            v = np.zeros_like(template)
            v[mode] = value
            out.append(v)
        return out
    grid = disc.grid
    if not 1 <= mode <= grid.lmax:
        raise ValueError(f"degree must be in 1..{grid.lmax}, got {mode}")
    zonal = np.zeros_like(template)
    zonal[grid.index(mode, 0)] = math.sqrt(4 * math.pi / (2 * mode + 1))  # P_l, max 1
    out = [zonal]
    for m in range(1, mode + 1):
        for value in (1.0, 1j):
            v = np.zeros_like(template)
            v[grid.index(mode, m)] = value
            out.append(v)
    return out


def default_amplitude(geometry: str, kappa: float, kappa_c: float,
                      dim: int | None = None) -> float:
    """A heuristic seed amplitude: ``d sqrt(1 - kappa_c/kappa)``, at least 0.5 (d = 2 on
    S^1, 3 on S^2, ``dim`` on the zonal geometry).

    It grows like a pitchfork's ``sqrt(kappa - kappa_c)`` and saturates far above it at
    ``d``, the first-harmonic amplitude ``d r`` of a concentrated state (the density
    ``(1 + d r <x, e>)/|S|`` has order parameter r). At beta = 0 it is within 25 % below
    the exact ``d r`` for kappa in [2.5, 8] (S^1) and [4, 6] (S^2); Newton from a seed
    much smaller than the branch's amplitude can fall back onto the uniform state.
    """
    if not math.isfinite(kappa_c) or kappa <= kappa_c:
        return 0.5
    d = {"circle": 2.0, "sphere": 3.0}.get(geometry, float(dim or 3))
    return max(0.5, d * math.sqrt(1 - kappa_c / kappa))


def branch_seed(disc, mode: int = 1, kappa: float | None = None,
                amplitude: float | None = None) -> np.ndarray:
    """Newton's start on the branch shed at mode k (degree l): the uniform density times
    ``1 + amplitude * phi`` with ``phi`` the zonal / cosine critical mode (maximum 1).

    Args:
        disc: a spectral circle, sphere or zonal discretization.
        mode: the mode k (S^1) or degree l (S^2, zonal).
        kappa: sets ``disc``'s kappa first (``disc.set_parameters``), if given.
        amplitude: relative amplitude of the mode (default ``default_amplitude``).

    Returns:
        The state (coefficients) of mass 1.
    """
    if kappa is not None:
        disc.set_parameters(kappa=kappa)
    phi = critical_modes(disc, mode)[0]
    if amplitude is None:
        beta, current = disc.parameters
        kc = critical_kappa(disc.geometry, beta, disc.model.normalized, mode,
                            getattr(disc.model, "value", 1.0), disc_dim(disc))
        amplitude = default_amplitude(disc.geometry, current, kc, disc_dim(disc))
    if not math.isfinite(amplitude):
        raise ValueError(f"amplitude must be finite, got {amplitude!r}")
    uniform = _uniform_state(disc)
    return uniform + amplitude * _density_scale(disc) * phi


def _density_scale(disc) -> float:
    """The uniform density ``1/|S|``: the seed is ``(1 + amplitude phi) / |S|``."""
    return 1 / area(disc.geometry)
