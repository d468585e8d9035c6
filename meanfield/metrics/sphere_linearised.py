"""W_2 between two close densities on S^2 without grid quantisation: the zonal pair about
any common axis (exact), and the linearised distance (a weighted H^-1 norm) otherwise.

Both work on spectral (Gauss-Legendre) frames, read as the band-limited densities the
grid represents (``SpectralDensity``: the coefficients of the grid's analysis). Neither
moves mass between grid nodes, so neither has the O(h) error of grid atoms, whose W_2
between ``u`` and ``u (1 + a P_1)`` is about ``sqrt(a h)`` instead of ``a / sqrt 6``.

Zonal about any axis n (``zonal_pair``). A density zonal about n is
``rho(x) = sum_l c_l P_l(<x, n>)``; by the addition theorem ``c_l`` is the degree-l part of
rho evaluated at n, ``c_l = sum_m a_lm Y_lm(n)``, and the part of rho NOT zonal about n has
``||rho_l||^2 - 4 pi c_l^2 / (2l + 1)`` of the L^2 norm in degree l. So no rotation of the
grid is needed: the Legendre series about n goes to ``sphere_zonal.ZonalDensity`` and its
exact W_p (the monotone rearrangement of the colatitudes about n). The candidate axes are
the mean directions and the principal axes of the second moments of mu, nu and mu - nu
(a zonal density about n has its mean along n and n as a principal axis), and, when
those show nothing (a difference with no degree 1 or 2), the point where the lowest
degree of mu - nu peaks in absolute value (``_peak_axis``: |P_l| < 1 but at +-1); one is
accepted when the non-zonal parts of both are negligible against the distance
(``ZONAL_SHARE``, measured in H^-1, where W_2 sees them: see ``zonal_pair``).

Linearised (``linearised_w2``). For mu = g + h close to nu = g, the first-order W_2 is
``||h||_{H^-1(w)} = (int w |grad psi|^2)^{1/2}`` with ``-div(w grad psi) = h`` ([Ott01];
[Vil03, §7.6]). With ``w = (mu + nu)/2`` it is second-order accurate:
Benamou-Brenier along the linear interpolation ``rho_t = (1 - t) nu + t mu`` gives
``W_2^2 <= int_0^1 ||h||^2_{H^-1(rho_t)} dt``, the linear path is O(|h|^2) from the
geodesic (so the gap is relative O(eps^2), eps = max|h| / min w: the action is
stationary at the geodesic), and the midpoint rule of that t-integral is relative
O(eps^2) too. The solve is a Galerkin method for psi on the harmonics of degree <= K
(K = 3L/2, L the larger band limit of the two; K = L for the error estimate), exact in
its quadrature (products on a grid of (L + 2K)/2 + 1 latitudes), by preconditioned
conjugate gradients: the operator written with scalar
transforms only, ``div(w grad psi) = (Delta(w psi) + w Delta psi - psi Delta w) / 2``,
the preconditioner ``(-Delta)^{-1/2} w^{-1} (-Delta)^{-1/2}`` (exact for constant w;
iterations to a relative residual of 1e-12, measured at L = 48 for von Mises-Fisher
weights of concentration 0.5, 1, 2, 5: 6, 7, 8-10, 52-100, the last with max w / min w
= e^10).

Error estimate of the linearised value (``LinearisedW2.error``): the same norm with the
end-point weights ``nu`` and ``mu`` gives ``N_0``, ``N_1``; the second differences
along the path, ``|N_0 + N_1 - 2 N_mid| + (N_0 - N_1)^2 / N_mid``, are of the order of
the neglected terms (the first because a symmetric pair such as ``u (1 +- a P_1)`` has
``N_0 = N_1``, the second for the rest), and the estimate is ``ERROR_FACTOR`` times
their sum. Measured against the exact zonal W_2 on 30 pairs about a tilted axis, L = 40
(``u (1 + a P_l)`` against u for l = 1, 2, a = 0.001..0.5; von Mises-Fisher of
concentration k against k (1 + r), k = 0.5, 1, 2, 5, r = 0.01..0.5): the true error was
at most 0.28 of the estimate (ERROR_FACTOR = 1 keeps a factor 3.6 of margin), and
relative to the distance about 0.01 a^2 for ``u (1 + a P_l)`` (1.0e-4 at a = 0.1, 2.6e-3
at a = 0.5), at most 7e-3 for the von Mises-Fisher pairs (k = 5, r = 0.5). The Galerkin
truncation (psi of degree <= 3L/2, whose weighted solution is not band-limited) is added
to the estimate: the change of N_mid from degree L to 3L/2 (spectral convergence: the
error at 3L/2 is far below it; measured below 3e-14 of the distance on those pairs).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# A candidate axis is accepted when the non-zonal parts of both densities, in H^-1, are
# at most this share of ||mu - nu||_{H^-1}: the zonal value is then off by at most about
# this share times sqrt(max rho / min rho) (the H^-1 comparisons of ``sobolev``).
ZONAL_SHARE = 1e-6
# The linearised error estimate: ERROR_FACTOR (N_0 - N_1)^2 / N_mid (module docstring).
ERROR_FACTOR = 1.0
CG_RTOL = 1e-12  # conjugate gradients stop at this relative residual (preconditioned)
CG_MAXITER = 1000


@dataclass(frozen=True)
class SpectralDensity:
    """A probability density on S^2 given by its spherical-harmonic coefficients.

    Attributes:
        alm: packed coefficients (``solvers.transforms.sht`` layout) of degree ``lmax``,
            normalised to mass 1 (``alm[0] = 1 / sqrt(4 pi)``).
        lmax: the band limit.
    """

    alm: np.ndarray
    lmax: int

    @classmethod
    def from_frame(cls, frame, name: str = "frame") -> SpectralDensity:
        """From one spectral Gauss-Legendre sphere frame (the grid's interpolant).

        Raises:
            ValueError: not a spectral ``(lat, lon)`` sphere frame, a grid that is not
                Gauss-Legendre, or no mass.
        """
        from meanfield.metrics.sobolev import _gauss_grid

        attrs = getattr(frame, "attrs", {})
        if attrs.get("geometry") != "sphere" or attrs.get("method") != "spectral" \
                or frame["density"].dims[-2:] != ("lat", "lon"):
            raise ValueError(f"{name} is not a spectral (lat, lon) sphere frame "
                             f"(method={attrs.get('method')!r})")
        grid = _gauss_grid(frame)
        rho = np.asarray(frame["density"].values, dtype=float).reshape(grid.shape)
        alm = grid.analysis(rho)
        mass = alm[0].real * np.sqrt(4 * np.pi)
        if not mass > 0:
            raise ValueError(f"{name} has no mass ({mass:.3g})")
        return cls(alm / mass, grid.lmax)

    def padded(self, lmax: int) -> np.ndarray:
        """The coefficients truncated or zero-padded to degree ``lmax``."""
        from solvers.transforms.sht import resize_alm

        return resize_alm(self.alm, lmax)


def inner(u: np.ndarray, v: np.ndarray, lmax: int) -> float:
    """The L^2 inner product of two real fields from their packed coefficients."""
    from solvers.transforms.sht import alm_degrees

    mult = np.where(alm_degrees(lmax)[1] > 0, 2.0, 1.0)
    return float(np.sum(mult * (u * np.conj(v)).real))


def zonal_coefficients(alm: np.ndarray, lmax: int, axis: np.ndarray
                       ) -> tuple[np.ndarray, float]:
    """``c_l = rho_l(n)``, l = 0..lmax, rho's Legendre series in ``<x, n>`` if it is zonal
    about the unit vector ``n`` (addition theorem), and the H^-1 norm of the rest of rho.

    The rest is ``a_lm - c_l (4 pi / (2l + 1)) conj(Y_lm(n))``, formed coefficient by
    coefficient (not as a difference of powers, which would lose half the digits).
    O(lmax^2).
    """
    from meanfield.metrics.sobolev import sphere_hminus1
    from solvers.transforms.legendre import legendre_table
    from solvers.transforms.sht import alm_degrees, alm_index

    z = float(np.clip(axis[2], -1.0, 1.0))
    phi = float(np.arctan2(axis[1], axis[0]))
    ylm = np.zeros(alm.size, dtype=complex)  # Y_lm(n), packed
    c = np.zeros(lmax + 1)
    for m in range(lmax + 1):
        lam = legendre_table(lmax, m, np.array([z]))[:, 0]  # lambda_lm(z), l = m..lmax
        sl = slice(alm_index(m, m, lmax), alm_index(lmax, m, lmax) + 1)
        ylm[sl] = lam * np.exp(1j * m * phi)
        term = (alm[sl] * ylm[sl]).real
        c[m:] += term if m == 0 else 2 * term
    ll = alm_degrees(lmax)[0]
    rest = alm - c[ll] * (4 * np.pi / (2 * ll + 1)) * np.conj(ylm)
    return c, sphere_hminus1(rest, lmax)


def _candidate_axes(grid, fields) -> list[np.ndarray]:
    """Mean directions and principal axes of the second moments of ``fields``."""
    x = grid.points.reshape(-1, 3)
    w = np.asarray(grid.weights).ravel()
    axes = []
    for f in fields:
        fw = w * f.ravel()
        mean = fw @ x
        if np.linalg.norm(mean) > 1e-14 * np.abs(fw).sum():
            axes.append(mean / np.linalg.norm(mean))
        _, vecs = np.linalg.eigh((x * fw[:, None]).T @ x)
        axes.extend(vecs.T)
    return axes


def _peak_axis(alm: np.ndarray, lmax: int) -> np.ndarray:
    """Where the lowest significant degree l >= 1 of a field peaks in absolute value: its
    axis if that part is zonal (|P_l| < 1 except at +-1). Grid argmax, then Nelder-Mead
    on the two angles (to about 3e-8 rad: the peak is quadratic)."""
    from scipy.optimize import minimize

    from solvers.grids.sphere import SphereGrid
    from solvers.transforms.legendre import legendre_table
    from solvers.transforms.sht import alm_degrees, alm_index, resize_alm

    ll, mm = alm_degrees(lmax)
    power = np.bincount(ll, weights=np.where(mm > 0, 2.0, 1.0) * np.abs(alm) ** 2,
                        minlength=lmax + 1)
    l = int(np.flatnonzero(power[1:] > 1e-6 * power[1:].max())[0]) + 1
    grid = SphereGrid(l, 2 * l + 8, 4 * l + 16)
    values = grid.synthesis(resize_alm(np.where(ll == l, alm, 0.0), l))
    i = int(np.argmax(np.abs(values)))
    coef = np.array([alm[alm_index(l, m, lmax)] for m in range(l + 1)])

    def minus_square(angles):
        colat, lon = angles
        lam = np.array([legendre_table(l, m, np.array([np.cos(colat)]))[-1, 0]
                        for m in range(l + 1)])
        ylm = lam * np.exp(1j * np.arange(l + 1) * lon)
        value = coef[0].real * ylm[0].real + 2 * np.sum((coef[1:] * ylm[1:]).real)
        return -value * value

    start = np.pi / 2 - grid.lat[i // grid.nlon], grid.lon[i % grid.nlon]
    # the peak is quadratic: values 1e-15 apart are 3e-8 rad apart
    tol = 1e-15 * abs(minus_square(start))
    colat, lon = minimize(minus_square, start, method="Nelder-Mead",
                          options={"xatol": 1e-10, "fatol": tol, "maxiter": 2000}).x
    return np.array([np.sin(colat) * np.cos(lon), np.sin(colat) * np.sin(lon),
                     np.cos(colat)])


@dataclass(frozen=True)
class ZonalPair:
    """Two densities zonal about one axis: their Legendre series about it."""

    mu: object  # sphere_zonal.ZonalDensity
    nu: object
    axis: np.ndarray
    non_zonal: float  # H^-1 norm of their non-zonal parts, summed


def zonal_pair(mu: SpectralDensity, nu: SpectralDensity) -> tuple[ZonalPair | None, str]:
    """The pair's Legendre series about a common axis, or ``(None, why not)``.

    The axis is accepted when the non-zonal parts of both (in H^-1) are at most
    ``ZONAL_SHARE`` times ``||mu - nu||_{H^-1}`` (equal measures: any axis).
    """
    from meanfield.metrics.sobolev import sphere_hminus1
    from meanfield.metrics.sphere_zonal import ZonalDensity
    from solvers.grids.sphere import SphereGrid

    lmax = max(mu.lmax, nu.lmax)
    a, b = mu.padded(lmax), nu.padded(lmax)
    diff = sphere_hminus1(a - b, lmax)
    grid = SphereGrid(lmax, lmax + 2)  # the second moments are exact on it
    fields = [grid.synthesis(a), grid.synthesis(b)]
    fields.append(fields[0] - fields[1])
    best = np.inf

    def candidates():
        yield np.array([0.0, 0.0, 1.0])
        yield from _candidate_axes(grid, fields)
        if diff > 0:  # last, as it costs a search: moments that do not show the axis
            yield _peak_axis(a - b, lmax)

    for axis in candidates():
        (ca, ra), (cb, rb) = zonal_coefficients(a, lmax, axis), \
            zonal_coefficients(b, lmax, axis)
        rest = ra + rb
        best = min(best, rest / diff if diff > 0 else rest)
        if rest <= ZONAL_SHARE * diff or (diff == 0 and rest <= ZONAL_SHARE):
            return ZonalPair(ZonalDensity.from_legendre(ca, "mu"),
                             ZonalDensity.from_legendre(cb, "nu"), axis, rest), ""
    return None, (f"the two densities are not zonal about a common axis (their non-zonal "
                  f"parts are at least {best:.3g} of ||mu - nu||_H^-1 about each candidate "
                  f"axis, above ZONAL_SHARE = {ZONAL_SHARE:g})")


class _WeightedLaplacian:
    """``A psi = -div(w grad psi)`` on the harmonics of degree <= K (Galerkin, exact
    quadrature), with its preconditioner; coefficients packed at degree K."""

    def __init__(self, w_alm: np.ndarray, lmax_w: int, k: int):
        from solvers.grids.sphere import SphereGrid
        from solvers.transforms.sht import alm_degrees, resize_alm

        self.k = k
        # products of degree <= lmax_w + k analysed to degree k: Gauss-Legendre exact for
        # degree lmax_w + 2k in latitude, nlon > lmax_w + 2k in longitude
        nlat = (lmax_w + 2 * k) // 2 + 1
        self.grid = SphereGrid(k, nlat, max(lmax_w + 2 * k + 1, 2))
        ll = alm_degrees(k)[0].astype(float)
        self.lap = -ll * (ll + 1)
        big = max(lmax_w, k)
        wb = resize_alm(w_alm, big)
        lb = alm_degrees(big)[0].astype(float)
        fine = SphereGrid(big, nlat, self.grid.nlon)
        self.w = fine.synthesis(wb)
        self.lap_w = fine.synthesis(-lb * (lb + 1) * wb)
        self.inv_sqrt = np.where(ll > 0, 1.0 / np.sqrt(np.maximum(ll * (ll + 1), 1.0)), 0.0)

    @property
    def min_weight(self) -> float:
        return float(self.w.min())

    def apply(self, psi: np.ndarray) -> np.ndarray:
        g = self.grid
        p = g.synthesis(psi)
        lap_p = g.synthesis(self.lap * psi)
        wp = g.analysis(self.w * p, self.k)
        rest = g.analysis(self.w * lap_p - p * self.lap_w, self.k)
        out = -0.5 * (self.lap * wp + rest)
        out[0] = 0.0  # the mean (l = 0) is not part of the problem
        return out

    def precondition(self, r: np.ndarray) -> np.ndarray:
        s = self.inv_sqrt * r
        return self.inv_sqrt * self.grid.analysis(self.grid.synthesis(s) / self.w, self.k)

    def solve(self, h: np.ndarray) -> tuple[np.ndarray, int]:
        """psi with A psi = h (h of zero mean) by preconditioned conjugate gradients."""
        k = self.k
        x = np.zeros_like(h)
        r = h.copy()
        z = self.precondition(r)
        d = z.copy()
        rz = inner(r, z, k)
        stop = CG_RTOL**2 * rz
        for it in range(1, CG_MAXITER + 1):
            ad = self.apply(d)
            step = rz / inner(d, ad, k)
            x += step * d
            r -= step * ad
            z = self.precondition(r)
            rz_new = inner(r, z, k)
            if rz_new <= stop:
                return x, it
            d = z + (rz_new / rz) * d
            rz = rz_new
        raise RuntimeError(f"conjugate gradients did not converge in {CG_MAXITER} "
                           "iterations (the weight varies too much for the linearised W2)")


def weighted_hm1(h: np.ndarray, lmax: int, w_alm: np.ndarray, lmax_w: int,
                 k: int | None = None) -> float:
    """``||h||_{H^-1(w)} = <psi, h>^{1/2}``, ``-div(w grad psi) = h``, psi of degree <= k
    (default ``lmax``); ``h`` packed at degree ``lmax`` with zero mean, ``w > 0``.

    Raises:
        ValueError: w is not positive on the quadrature grid.
    """
    from solvers.transforms.sht import resize_alm

    k = lmax if k is None else int(k)
    op = _WeightedLaplacian(w_alm, lmax_w, k)
    if not op.min_weight > 0:
        raise ValueError(f"the weight of the H^-1 norm is not positive (min "
                         f"{op.min_weight:.3g}): the densities vanish somewhere")
    hk = resize_alm(h, k)
    hk[0] = 0.0
    psi, _ = op.solve(hk)
    return float(np.sqrt(max(inner(psi, hk, k), 0.0)))


@dataclass(frozen=True)
class LinearisedW2:
    """The linearised W_2 and what it rests on (module docstring).

    Attributes:
        value: ``||mu - nu||_{H^-1((mu + nu)/2)}`` (radians), psi of degree <= 3L/2.
        error: the a-posteriori estimate of |value - W_2|.
        ends: the norms with the weights nu and mu (N_0, N_1), psi of degree <= L.
        truncation: |N_mid(3L/2) - N_mid(L)|, part of ``error``.
    """

    value: float
    error: float
    ends: tuple[float, float]
    truncation: float


def linearised_w2(mu: SpectralDensity, nu: SpectralDensity) -> LinearisedW2:
    """The linearised W_2 of two band-limited densities with its error estimate.

    Cost: 4 conjugate-gradient solves (6-10 iterations, up to 100 for a weight varying
    by e^10: module docstring), each iteration 4 transform
    pairs on a grid of about (2L + 1) x (4L + 1) nodes (L = the larger band limit):
    measured 0.03 s at L = 24, 0.1 s at L = 48 (0.7-1.3 s for a von Mises-Fisher of
    concentration 5, whose weight nearly vanishes at the antipode).

    Raises:
        ValueError: a density (or their mean) is not positive on the quadrature grid:
            the linearisation needs w > 0.
    """
    lmax = max(mu.lmax, nu.lmax)
    a, b = mu.padded(lmax), nu.padded(lmax)
    h = a - b
    if not np.any(h[1:]):
        return LinearisedW2(0.0, 0.0, (0.0, 0.0), 0.0)
    mid = 0.5 * (a + b)
    value = weighted_hm1(h, lmax, mid, lmax, k=lmax + (lmax + 1) // 2)
    n_mid = weighted_hm1(h, lmax, mid, lmax)
    n0, n1 = weighted_hm1(h, lmax, b, lmax), weighted_hm1(h, lmax, a, lmax)
    truncation = abs(value - n_mid)
    error = ERROR_FACTOR * (abs(n0 + n1 - 2 * n_mid) + (n0 - n1) ** 2 / n_mid) + truncation
    return LinearisedW2(value, error, (n0, n1), truncation)
