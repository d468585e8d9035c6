"""Spectral states of S^1, S^2 and zonal densities of S^{d-1} as the stationary-state
solvers see them: the real components that change the density (``RealView``), the lowest
mode a state carries, the rotations that act on it and the phase conditions that fix its
orientation (``align``).

Spectral states are the complex coefficients of a real density: Fourier coefficients
``c_k`` on S^1, the packed ``m >= 0`` spherical-harmonic coefficients ``a_lm`` on S^2; on
the zonal geometry (``domain.geometry = "zonal"``) the real coefficients ``c_l`` of the
orthonormal Gegenbauer polynomials ``Q_l(<x, e>)``. The zonal states are an invariant
subspace of the PDE on S^{d-1} on which no rotation acts (those about e leave them alone,
the others leave the subspace): they need no phase condition, and the only symmetry left
is the reflection ``t -> -t`` (``c_l -> (-1)^l c_l``), which ``align`` uses.
``F`` commutes with rotations, so a stationary state comes with its whole orbit; the
bordered system of ``meanfield.studies.bifurcation.stationary`` fixes one member of it by
the phase conditions that ``phase_positions`` names (module docstring there), bordered with
the ``rotation_generators`` of the guess.
"""
from __future__ import annotations

import functools
import math
import weakref

import numpy as np

from meanfield.errors import ConfigError

# A mode (degree) whose coefficients stay below this fraction of the mean coefficient is
# absent: a state with none above it is uniform (no phase condition).
UNIFORM_RTOL = 1e-8
SMALLEST_MOMENT_WEIGHT = 1e-150  # (moment_weights)


# --- the real components of a spectral state ---------------------------------------------
_VIEWS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # disc -> {layout: parts}


class RealView:
    """A spectral state as a vector of the real components that change the density.

    Spectral states are complex coefficients of a real density; some real components do
    not reach the density (the imaginary part of the mean, the sphere's ``Im a_l0``, the
    circle's Nyquist mode, which ``to_state`` keeps at zero). They are found once by a
    round trip ``to_state(to_density(.))`` of a random vector: a component is kept when
    it comes back unchanged (``meanfield.discretizations.spectrum._real_operator`` finds
    the same set with one transform per component; it could use this).

    With ``axisymmetric`` (sphere only) the view keeps only the order-0 components
    ``a_l0``: the states axisymmetric about z, an invariant subspace of ``F`` (which
    commutes with the rotations about z). A branch of axisymmetric states is followed
    there exactly, in ``L + 1`` unknowns instead of ``(L + 1)^2``, with no phase
    condition (rotations about z leave it alone; the others leave the subspace).

    Args:
        disc: a spectral discretization (``to_state``/``to_density``).
        template: a state of the right shape and dtype.
        axisymmetric: keep only the order-0 components (sphere).

    Attributes:
        size: number of kept real components.
        constant: index (in the kept vector) of the mean (mass) component.
        unit_mass: mass of the density of a unit value of that component.
    """

    def __init__(self, disc, template: np.ndarray, axisymmetric: bool = False):
        u = np.asarray(template)
        self.shape, self.complex = u.shape, np.iscomplexobj(u)
        self.axisymmetric = bool(axisymmetric)
        # (the components depend only on the discretization and the state's layout:
        # found once per discretization, a round trip of transforms each time otherwise)
        key = (self.shape, self.complex, self.axisymmetric)
        known = _VIEWS.setdefault(disc, {})
        if key not in known:
            self._find_components(disc)
            known[key] = (self.used, self.size, self.constant, self.unit_mass)
        self.used, self.size, self.constant, self.unit_mass = known[key]

    def _find_components(self, disc) -> None:
        n = int(np.prod(self.shape))
        full = 2 * n if self.complex else n
        probe = np.random.default_rng(12345).standard_normal(full)
        back = self._full_real(disc.to_state(disc.to_density(self._full_state(probe))))
        self.used = np.abs(back - probe) <= 1e-8 * np.abs(probe).max()
        if self.axisymmetric:
            if disc.geometry != "sphere":
                raise ValueError("an axisymmetric view is for the sphere")
            order = np.asarray(disc.grid.m).ravel()
            self.used &= np.concatenate([order, order]) == 0
        self.size = int(self.used.sum())
        # The constant density maps to one component: the mean.
        ones = self._full_real(disc.to_state(np.ones(disc.grid.shape)))[self.used]
        big = np.flatnonzero(np.abs(ones) > 1e-8 * np.abs(ones).max())
        if big.size != 1:
            raise ValueError("the constant density does not map to one state component")
        self.constant = int(big[0])
        unit = np.zeros(self.size)
        unit[self.constant] = 1.0
        self.unit_mass = float(disc.grid.integrate(disc.to_density(self.to_state(unit))))

    def _full_state(self, x: np.ndarray) -> np.ndarray:
        n = int(np.prod(self.shape))
        u = x[:n] + 1j * x[n:] if self.complex else x.copy()
        return u.reshape(self.shape)

    def _full_real(self, u: np.ndarray) -> np.ndarray:
        w = np.asarray(u).ravel()
        return np.concatenate([w.real, w.imag]) if self.complex else w.real.copy()

    def to_real(self, u: np.ndarray) -> np.ndarray:
        """The kept real components of the state ``u``."""
        return self._full_real(u)[self.used]

    def to_state(self, x: np.ndarray) -> np.ndarray:
        """The state whose kept components are ``x`` (the others zero)."""
        full = np.zeros(self.used.size)
        full[self.used] = x
        return self._full_state(full)

    def index(self, position: int, imaginary: bool = False) -> int:
        """Index in the kept vector of the real (imaginary) part of ``u.flat[position]``."""
        full = position + (int(np.prod(self.shape)) if imaginary else 0)
        if not self.used[full]:
            raise ValueError(f"component {position} ({'imag' if imaginary else 'real'}) "
                             "does not change the density")
        return int(np.count_nonzero(self.used[:full]))

    def mass(self, x: np.ndarray) -> float:
        return self.unit_mass * float(x[self.constant])


# --- geometry: modes, phase conditions, rotation generators -----------------------------
GEOMETRIES = ("circle", "sphere", "zonal")


def check_geometry(geometry: str, dim: int | None = None) -> None:
    """ValueError unless ``geometry`` is one of ``GEOMETRIES`` (with an integer ``dim``
    >= 2 for the zonal geometry: the d of S^{d-1})."""
    if geometry not in GEOMETRIES:
        raise ValueError(f"geometry must be one of {GEOMETRIES}, got {geometry!r}")
    if geometry == "zonal" and (isinstance(dim, bool) or not isinstance(dim, (int, np.integer))
                                or dim < 2):
        raise ValueError(f"the zonal geometry needs dim, an integer >= 2 (d of S^{{d-1}}), "
                         f"got {dim!r}")


def check_spectral(disc) -> None:
    if getattr(disc, "method", None) != "spectral" or disc.geometry not in GEOMETRIES:
        raise ConfigError(
            "stationary states need discretization.method = 'spectral' on the circle, "
            f"the sphere or the zonal geometry, not {getattr(disc, 'method', None)!r} on "
            f"{getattr(disc, 'geometry', None)!r}", "discretization.method")


def degrees(disc) -> np.ndarray:
    """The Fourier mode (circle) or degree (sphere, zonal) of each state coefficient."""
    return disc.grid.k if disc.geometry == "circle" else disc.grid.l


def zonal_peak(dim: int, degree: int) -> float:
    """``Q_l(1)``: the orthonormal Gegenbauer polynomial of S^{dim-1} at the pole (the
    square root of the dimension of the degree-l harmonics; ``Q_1(1) = sqrt(d)``), so
    that ``P_l = Q_l / Q_l(1)`` has ``P_l(1) = 1 = max |P_l|``."""
    from solvers.transforms.gegenbauer import table

    return float(table(int(degree), int(dim), np.ones(1))[int(degree), 0])


def moment_weights(dim: int, lmax: int) -> np.ndarray:
    """``1/Q_l(1)`` for l = 0..lmax (``_moment_weights``; cached, read-only)."""
    return _moment_weights(int(dim), int(lmax))


@functools.lru_cache(maxsize=64)
def _moment_weights(dim: int, lmax: int) -> np.ndarray:
    """``1/Q_l(1)`` for l = 0..lmax: ``c_l / Q_l(1) = int P_l dsigma`` turns the
    Gegenbauer coefficients of a zonal density into its moments (in [-1, 1] for a
    probability). From ``log Q_l(1)^2 = log N_l``, ``N_l = (2l + d - 2)/(l + d - 2) C(l +
    d - 2, l)`` the dimension of the degree-l harmonics of S^{d-1} (``N_l = 2`` for l >= 1
    at d = 2), bounded below by ``SMALLEST_MOMENT_WEIGHT`` (``Q_l(1)`` overflows for
    degrees in the hundreds at d in the thousands)."""
    from scipy.special import gammaln

    l = np.arange(1, lmax + 1, dtype=float)
    if dim == 2:
        log_n = np.full(lmax, math.log(2.0))
    else:
        log_n = (np.log((2 * l + dim - 2) / (l + dim - 2)) + gammaln(l + dim - 1)
                 - gammaln(l + 1) - gammaln(dim - 1))
    out = np.maximum(np.concatenate([[1.0], np.exp(-0.5 * log_n)]), SMALLEST_MOMENT_WEIGHT)
    out.flags.writeable = False
    return out


def lowest_mode(disc, u: np.ndarray) -> int:
    """The lowest mode ``k >= 1`` (degree ``l >= 1``) whose coefficients exceed
    ``UNIFORM_RTOL`` of the mean coefficient; 0 when there is none (a uniform state)."""
    degree = degrees(disc)
    mag = np.abs(u)
    if disc.geometry == "circle" and disc.grid.n % 2 == 0:
        mag = mag.copy()
        mag[-1] = 0.0  # (the Nyquist mode is not part of the state)
    present = (degree >= 1) & (mag > UNIFORM_RTOL * abs(u.flat[0]))
    return int(degree[present].min()) if present.any() else 0


def rotation_generators(disc, u: np.ndarray) -> list[np.ndarray]:
    """The infinitesimal rotations of the state ``u`` (states of the same shape).

    S^1: ``d/dtheta``, ``c_k -> i k c_k``. S^2: the rotations about the x and y axes,
    ``i L_x`` and ``i L_y`` with ``L_+- = L_x +- i L_y``, ``L_+- Y_lm = sqrt((l -+ m)(l +- m
    + 1)) Y_{l,m+-1}`` (Condon-Shortley phase, as ``solvers.transforms.sht``), on the
    packed ``m >= 0`` coefficients of a real field (``a_{l,-1} = -conj(a_l1)``). Both are
    real fields: ``i L_x = i (L_+ + L_-)/2``, ``i L_y = (L_+ - L_-)/2``. Zonal: none (no
    rotation keeps a zonal state zonal but those about e, which leave it alone).
    """
    if disc.geometry == "zonal":
        return []
    if disc.geometry == "circle":
        return [1j * disc.grid.k * u]
    grid = disc.grid
    l, m = grid.l, grid.m
    idx = grid.index
    lower = np.zeros_like(u)  # a_{l,m-1}
    upper = np.zeros_like(u)  # a_{l,m+1}
    has_lower = m >= 1
    lower[has_lower] = u[idx(l[has_lower], m[has_lower] - 1)]
    zonal = (m == 0) & (l >= 1)
    lower[zonal] = -np.conj(u[idx(l[zonal], 1)])
    has_upper = m < l
    upper[has_upper] = u[idx(l[has_upper], m[has_upper] + 1)]
    plus = np.sqrt((l - m + 1.0) * (l + m)) * lower
    minus = np.sqrt((l + m + 1.0) * (l - m)) * upper
    return [0.5j * (plus + minus), 0.5 * (plus - minus)]


def phase_positions(disc, mode: int) -> list[tuple[int, bool]]:
    """The components (position, imaginary?) that the phase conditions set to zero
    (none on the zonal geometry)."""
    if disc.geometry == "zonal":
        return []
    if disc.geometry == "circle":
        return [(mode, True)]
    position = int(disc.grid.index(mode, 1))
    return [(position, False), (position, True)]


def align(disc, u: np.ndarray) -> np.ndarray:
    """The state rotated into the phase conditions' orientation (a new array).

    S^1: ``c_{k*}`` real and positive. S^2 with a dipole: the mean direction to +z
    (``ducc0.sht.rotate_alm``, exact for band-limited fields); without one, unchanged.
    Zonal (real coefficients): an odd lowest degree with a negative coefficient is made
    positive by the reflection ``t -> -t`` (``c_l -> (-1)^l c_l``, exact); so a cluster
    sits at ``t = 1``.
    """
    if disc.geometry == "zonal":
        u = np.array(u, dtype=float)
        mode = lowest_mode(disc, u)
        if mode % 2 == 1 and u[mode] < 0:
            u[1::2] = -u[1::2]
        return u
    u = np.array(u, dtype=complex)
    mode = lowest_mode(disc, u)
    if mode == 0:
        return u
    if disc.geometry == "circle":
        phase = np.angle(u[mode]) / mode
        out = u * np.exp(-1j * disc.grid.k * phase)
        out[mode] = abs(u[mode])  # (exactly real: the rounding of the product left ~1e-30)
        return out
    if mode != 1:
        return u
    grid = disc.grid
    a10, a11 = u[grid.index(1, 0)].real, u[grid.index(1, 1)]
    # mean direction ~ (-sqrt2 Re a11, sqrt2 Im a11, a10) (Y_11 = -sqrt(3/8pi)(x + i y))
    d = np.array([-math.sqrt(2) * a11.real, math.sqrt(2) * a11.imag, a10])
    colat, lon = math.acos(np.clip(d[2] / np.linalg.norm(d), -1, 1)), math.atan2(d[1], d[0])
    import ducc0

    # active rotations: first about z by -lon (the direction into the xz plane), then
    # about y by -colat (onto +z).
    return ducc0.sht.rotate_alm(u, grid.lmax, -lon, -colat, 0.0)


def as_state(disc, guess) -> np.ndarray:
    """The guess as a state: coefficients, or grid values (converted)."""
    g = np.asarray(guess)
    template = disc.to_state(np.ones(disc.grid.shape))
    if g.shape == tuple(disc.grid.shape) and g.shape != template.shape:
        if not np.all(np.isfinite(g)) or np.iscomplexobj(g):
            raise ValueError("the guess (grid values) must be finite and real")
        return np.asarray(disc.to_state(np.asarray(g, dtype=float)), dtype=template.dtype)
    if g.shape != template.shape:
        raise ValueError(f"the guess has shape {g.shape}: a state of shape "
                         f"{template.shape} or grid values of shape "
                         f"{tuple(disc.grid.shape)} are needed")
    if not np.all(np.isfinite(g)):
        raise ValueError("the guess is not finite")
    return np.array(g, dtype=template.dtype)
