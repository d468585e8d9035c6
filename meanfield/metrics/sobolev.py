"""The homogeneous negative Sobolev norm ||mu - nu||_{H^-1} on S^1 and S^2: a cheap proxy
for W2, from Fourier / spherical-harmonic coefficients.

Definition (surface measure sigma, no weight): for a signed measure f of zero mass,

    ||f||_{H^-1} = sup { int phi df : int |grad phi|^2 dsigma <= 1 } = ||grad u||_{L^2},
    -Delta u = f,

so in the eigenbasis of the Laplacian:

- S^1, f = sum_k c_k e^{ik theta} with ``c_k = (1/2 pi) int e^{-ik theta} df``:
  ``||f||^2 = 2 pi sum_{k != 0} |c_k|^2 / k^2 = 4 pi sum_{k >= 1} |c_k|^2 / k^2``;
- S^2, orthonormal Y_lm (``solvers.transforms.sht``), ``f_lm = int conj(Y_lm) df``:
  ``||f||^2 = sum_{l >= 1} sum_{|m| <= l} |f_lm|^2 / (l (l + 1))``.

Inequalities tying it to W2 (both checked by the tests on random smooth densities):

1. Upper bound ([Loe06]; [Pey18]; [San15, Chapter 5, pp. 209-211] on convex domains):
   if mu, nu have
   densities rho_mu, rho_nu <= M w.r.t. sigma, then
   ``||mu - nu||_{H^-1} <= sqrt(M) W2(mu, nu)``. It needs the L^inf bound to hold along
   the W2 geodesic, true on manifolds of nonnegative Ricci curvature (S^1 flat, S^2
   positive) by the displacement convexity of int rho^q.
2. Lower bound (Benamou-Brenier along the linear interpolation (1-t) mu + t nu, whose
   density is >= (1-t) a_mu + t a_nu): if rho_mu >= a_mu and rho_nu >= a_nu, then
   ``W2(mu, nu) <= 2 / (sqrt(a_mu) + sqrt(a_nu)) ||mu - nu||_{H^-1}`` on any compact
   manifold. [Pey18, Thm. 1] has the one-sided form ``W2 <= 2 ||mu - nu||_{H^-1(mu)}``
   (weighted by mu), hence ``W2 <= 2 a_mu^{-1/2} ||mu - nu||_{H^-1}`` when only mu's
   density is bounded below.
Neither holds for empirical measures (no density): there the norm is a smoothed
quantity, and on S^2 it diverges like ((1/pi) log L) per pair of distinct atoms as the band
limit L grows (the Green function is logarithmic), so a band limit is required.

Truncation: coefficients up to a band limit K (circle) / L (sphere). On S^1 the dropped
part of ||f||^2 is at most ``4 / (pi K)`` for a difference of probability measures
(``|c_k| <= 1/pi``), and much less for smooth densities; on S^2 it is at most
``||f_{>L}||_{L^2}^2 / (L (L + 1))`` for densities.

Cost: atoms, direct sums O(n K) (circle) or O(n L^2) (sphere, Legendre recurrences);
spectral grid densities, one FFT / spherical-harmonic analysis; circle finite volumes,
one FFT (exact coefficients of the piecewise-constant density); sphere cells, atoms at
the centres (midpoint rule, O(h^2) per coefficient for smooth densities).
"""
from __future__ import annotations

import numpy as np

from meanfield.metrics.measures import Measure, as_measure, check_pair

CHUNK = 1 << 16  # points per block of the direct sums (bounds the work arrays)


def circle_coefficients(m: Measure, band_limit: int) -> np.ndarray:
    """``c_k = (1/2 pi) int e^{-ik theta} dmu`` for k = 1..K of the normalised measure."""
    k = np.arange(1, band_limit + 1)
    if m.density is None:
        w = m.weights / m.weights.sum()
        c = np.zeros(band_limit, dtype=complex)
        for s in range(0, w.size, CHUNK):
            th, ws = m.angles[s:s + CHUNK], w[s:s + CHUNK]
            for k0 in range(0, band_limit, 512):  # (points, orders) blocks
                kk = k[k0:k0 + 512]
                c[k0:k0 + 512] += ws @ np.exp(-1j * np.outer(th, kk))
        return c / (2 * np.pi)
    rho = m.density / m.mass
    n = rho.size
    # (1/n) sum_j rho_j e^{-2 pi i j k / n} (periodic in k) = (1/2 pi) sum_j h rho_j
    # e^{-ik theta_j}: the trapezoid rule of c_k, exact for the interpolant's orders < n/2
    dft = np.fft.fft(rho) / n
    c = dft[k % n]
    if m.method == "spectral":
        # the trigonometric interpolant: orders below n/2, the Nyquist cosine split in two
        c = np.where(k < n / 2, c, np.where(k == n / 2, c / 2, 0.0))
    else:
        # piecewise constant on cells of width h = 2 pi / n: (1/2 pi) int_cell e^{-ik t}
        # = (h / 2 pi) e^{-ik theta_j} sinc(k h / 2)
        c = c * np.sinc(k / n)  # np.sinc(x) = sin(pi x)/(pi x), k h / 2 = pi k / n
    return c


def sphere_coefficients(m: Measure, lmax: int) -> np.ndarray:
    """Packed ``a_lm`` (``solvers.transforms.sht`` layout) of the normalised measure up to
    ``lmax``: ``int conj(Y_lm) dmu``; a Gauss-Legendre frame by its analysis, atoms and
    cells by direct sums."""
    from solvers.transforms.sht import alm_index, alm_size

    if m.frame is not None and m.frame["density"].dims[-2:] == ("lat", "lon"):
        grid = _gauss_grid(m.frame)
        rho = np.asarray(m.frame["density"].values, dtype=float).reshape(grid.shape)
        alm = grid.analysis(rho / m.mass, min(lmax, grid.lmax))
        out = np.zeros(alm_size(lmax), dtype=complex)
        ll, mm = grid.degrees(min(lmax, grid.lmax))
        out[alm_index(ll, mm, lmax)] = alm
        return out
    from solvers.transforms.legendre import legendre_table

    x, w = m.points, m.weights / m.weights.sum()
    out = np.zeros(alm_size(lmax), dtype=complex)
    for s in range(0, w.size, CHUNK):
        xs, ws = x[s:s + CHUNK], w[s:s + CHUNK]
        z = np.clip(xs[:, 2], -1.0, 1.0)
        phi = np.arctan2(xs[:, 1], xs[:, 0])
        for mo in range(lmax + 1):
            lam = legendre_table(lmax, mo, z)  # (lmax + 1 - m, n): lambda_lm(z_i)
            i0 = alm_index(mo, mo, lmax)
            out[i0:i0 + lmax + 1 - mo] += lam @ (ws * np.exp(-1j * mo * phi))
    return out


def _gauss_grid(ds):
    """The ``SphereGrid`` of a Gauss-Legendre frame, checked against its coordinates."""
    from solvers.grids.sphere import SphereGrid

    nlat, nlon = ds.sizes["lat"], ds.sizes["lon"]
    grid = SphereGrid(nlat - 1, nlat, nlon)
    if not (np.allclose(ds["lat"].values, grid.lat, atol=1e-12)
            and np.allclose(ds["lon"].values, grid.lon, atol=1e-12)):
        raise ValueError("the sphere density is not on a Gauss-Legendre grid (lat, lon "
                         "differ from SphereGrid's): its grid does not match")
    return grid


def _default_band_limit(m: Measure) -> int | None:
    if m.geometry == "circle" and m.density is not None:
        n = m.density.size
        return n // 2 if m.method == "spectral" else 2 * n
    if m.frame is not None and m.frame["density"].dims[-2:] == ("lat", "lon"):
        return m.frame.sizes["lat"] - 1
    return None


def hminus1(mu, nu, *, geometry: str | None = None, band_limit: int | None = None) -> float:
    """``||mu - nu||_{H^-1}`` (homogeneous, unweighted; see the module docstring).

    Args:
        mu, nu: measures as for ``meanfield.metrics.wasserstein`` (points, (points,
            weights), an evolve dataset frame); masses must agree and are normalised.
        geometry: ``"circle"``, ``"sphere"`` (S^2 only) or ``None`` (inferred).
        band_limit: largest order K (circle) or degree L (sphere) kept. Required when a
            measure is atoms or finite-volume cells on the sphere (the norm of atoms is a
            truncated quantity). Default for grid densities: the grid's own (spectral:
            its band limit, exact for the trigonometric / spherical-harmonic
            interpolant; circle finite volumes: 2n, where |c_k| <= C/k beyond n so the
            dropped part of ||f||^2 decays like K^{-3}).

    Returns:
        The norm. For densities near the uniform one it behaves like
        ``sqrt(rho) W2`` (both inequalities of the module docstring tighten).

    Raises:
        ValueError: bad input (as the front), a missing band limit, a non-S^2 sphere.
    """
    m1, m2 = as_measure(mu, "mu"), as_measure(nu, "nu")
    geo = check_pair(m1, m2, geometry, "auto", False)
    if band_limit is None:
        limits = [b for b in (_default_band_limit(m1), _default_band_limit(m2))
                  if b is not None]
        needs = [m for m in (m1, m2) if _default_band_limit(m) is None]
        if needs:
            raise ValueError("band_limit is required for empirical measures (atoms) and "
                             "sphere cells: the H^-1 norm of atoms is a truncated quantity")
        band_limit = max(limits)
    band_limit = int(band_limit)
    if band_limit < 1:
        raise ValueError(f"band_limit must be >= 1, got {band_limit}")
    if geo == "circle":
        c = circle_coefficients(m1, band_limit) - circle_coefficients(m2, band_limit)
        k = np.arange(1, band_limit + 1)
        return float(np.sqrt(4 * np.pi * np.sum(np.abs(c) ** 2 / k**2)))
    for m in (m1, m2):
        if m.points is not None and m.points.shape[1] != 3:
            raise ValueError("the H^-1 norm on spheres is implemented for S^2 (d = 3)")
    return sphere_hminus1(sphere_coefficients(m1, band_limit)
                          - sphere_coefficients(m2, band_limit), band_limit)


def sphere_hminus1(alm: np.ndarray, lmax: int) -> float:
    """``(sum_{l >= 1} sum_m |f_lm|^2 / (l (l + 1)))^{1/2}`` of a real field on S^2 from
    its packed coefficients (``solvers.transforms.sht`` layout, degree ``lmax``; the
    degree 0 is dropped)."""
    from solvers.transforms.sht import alm_degrees

    ll, mm = alm_degrees(lmax)
    keep = ll >= 1
    mult = np.where(mm > 0, 2.0, 1.0)  # +-m of a real measure
    return float(np.sqrt(np.sum(mult[keep] * np.abs(alm[keep]) ** 2
                                / (ll[keep] * (ll[keep] + 1.0)))))
