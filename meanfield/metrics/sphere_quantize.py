"""Equal-mass atoms of a band-limited density on S^2 (``quantize_density``): the
Knothe-Rosenblatt image of the spherical Fibonacci lattice, the reference measure of
``meanfield.metrics.sphere_assignment`` (its module docstring, item 1, says how and what
it costs)."""
from __future__ import annotations

import numpy as np

from solvers.signals import DeferredSignals

GOLDEN = (1.0 + 5.0**0.5) / 2.0
BISECTIONS = 45  # interval halvings: 2^-45 of [-1, 1] or [0, 2 pi] ~ 1e-13


# --- the reference: equal-mass atoms of a band-limited density ------------------------
def _legendre_series_of_marginal(grid, density: np.ndarray) -> np.ndarray:
    """Legendre coefficients b_l (z = sin lat) of g(z) = int rho(z, phi) dphi.

    The ring means of the grid values are g at the Gauss nodes exactly (the trapezoid rule
    in longitude is exact for degree < nlon); g has degree <= L < nlat, so the Gauss
    quadrature b_l = (2l+1)/2 sum_j w_j g(x_j) P_l(x_j) is exact."""
    from numpy.polynomial import legendre as leg

    nodes, w = leg.leggauss(grid.nlat)
    if not np.allclose(nodes, grid.x, atol=1e-12):
        raise ValueError("the grid's latitudes are not the Gauss-Legendre nodes")
    g = 2.0 * np.pi * np.asarray(density, dtype=float).mean(axis=1)
    deg = grid.nlat - 1
    vander = leg.legvander(nodes, deg)  # (nlat, deg + 1)
    return (vander * (w * g)[:, None]).sum(axis=0) * (2 * np.arange(deg + 1) + 1) / 2.0


def _bisect(f, target: np.ndarray, low: float, high: float) -> np.ndarray:
    """x with f(x) = target for a nondecreasing f on [low, high] (vectorised)."""
    lo = np.full(target.shape, low)
    hi = np.full(target.shape, high)
    for _ in range(BISECTIONS):
        mid = 0.5 * (lo + hi)
        below = f(mid) < target
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 0.5 * (lo + hi)


def quantize_density(grid, alm: np.ndarray, m: int, *, threads: int = 1) -> np.ndarray:
    """``m`` equal-mass atoms ``(m, 3)`` of the density with coefficients ``alm`` on the
    Gauss-Legendre ``grid`` (``solvers.grids.SphereGrid``): the Knothe-Rosenblatt image
    of the spherical Fibonacci lattice (module docstring). The density must be (nearly)
    nonnegative; its normalisation does not matter."""
    from numpy.polynomial import legendre as leg

    from solvers.transforms.pointwise import sphere_synthesis_at

    m = int(m)
    if m < 1:
        raise ValueError(f"m must be >= 1, got {m}")
    lmax = grid.lmax
    density = grid.synthesis(alm)
    b = _legendre_series_of_marginal(grid, density)
    cdf = leg.legint(b, lbnd=-1.0)
    total = leg.legval(1.0, cdf)
    if not total > 0:
        raise ValueError("the density has no positive mass")
    u = (np.arange(m) + 0.5) / m
    z = _bisect(lambda t: leg.legval(t, cdf) / total, u, -1.0, 1.0)
    # the conditional CDF in longitude: Fourier coefficients c_k(z_i), k = 0..L, from
    # 2L + 2 equispaced values on each latitude circle (exact for degree <= L)
    nphi = 2 * lmax + 2
    phi = 2 * np.pi * np.arange(nphi) / nphi
    s = np.sqrt(np.maximum(1.0 - z * z, 0.0))
    pts = np.stack([s[:, None] * np.cos(phi)[None], s[:, None] * np.sin(phi)[None],
                    np.broadcast_to(z[:, None], (m, nphi))], axis=-1).reshape(-1, 3)
    values = np.asarray(sphere_synthesis_at(alm, lmax, pts, threads=threads)).real
    c = np.fft.rfft(values.reshape(m, nphi), axis=1)[:, :lmax + 1] / nphi
    v = np.mod(np.arange(m) / GOLDEN, 1.0)
    phi_i = _longitudes(np.ascontiguousarray(c.real), np.ascontiguousarray(c.imag), v)
    x = np.stack([s * np.cos(phi_i), s * np.sin(phi_i), z], axis=-1)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _make_longitude_kernel():
    import numba

    @numba.njit(cache=True)
    def invert(a, b, v):
        # phi_i with H(phi_i | z_i) = v_i, where rho(phi) = a_0 + 2 sum_k (a_k cos k phi -
        # b_k sin k phi) on row i and 2 pi a_0 H(phi) = a_0 phi + 2 sum_k (a_k sin k phi
        # + b_k (cos k phi - 1)) / k: Newton (H' = rho / (2 pi a_0)) kept inside a
        # shrinking bracket, bisection where it would leave it; to 1e-14 in H
        m, kk = a.shape
        out = np.empty(m)
        two_pi = 2.0 * np.pi
        for i in range(m):
            scale = two_pi * max(a[i, 0], 1e-300)
            lo, hi = 0.0, two_pi
            t = two_pi * v[i]
            for _ in range(100):
                c1, s1 = np.cos(t), np.sin(t)
                ck, sk = 1.0, 0.0
                h = a[i, 0] * t
                dh = a[i, 0]
                for k in range(1, kk):
                    ck, sk = ck * c1 - sk * s1, sk * c1 + ck * s1
                    h += 2.0 * (a[i, k] * sk + b[i, k] * (ck - 1.0)) / k
                    dh += 2.0 * (a[i, k] * ck - b[i, k] * sk)
                f = h / scale - v[i]
                if abs(f) < 1e-14 or hi - lo < 1e-14:
                    break
                if f < 0.0:
                    lo = t
                else:
                    hi = t
                step = t - f * scale / dh if dh > 0.0 else -1.0
                t = step if lo < step < hi else 0.5 * (lo + hi)
            out[i] = t
        return out

    return invert


_LONGITUDE = None
# rows of one compiled call of the longitude inversion (measured 2-4 us a row at L = 33
# and 65: ~0.1-0.25 s; 2e5 rows at L = 65 were one call of 0.75 s)
LONGITUDE_ROWS = 1 << 16


def _longitudes(a: np.ndarray, b: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``invert`` of the longitude kernel on ``LONGITUDE_ROWS`` rows a call (a row's
    solve depends on that row only: the same bits), a Ctrl-C raised between calls."""
    invert, m = _longitude_kernel(), v.size
    if m <= LONGITUDE_ROWS:
        return invert(a, b, v)
    out = np.empty(m)
    with DeferredSignals() as signals:
        for i0 in range(0, m, LONGITUDE_ROWS):
            i1 = min(m, i0 + LONGITUDE_ROWS)
            out[i0:i1] = invert(a[i0:i1], b[i0:i1], v[i0:i1])
            signals.check()
    return out


def _longitude_kernel():
    global _LONGITUDE
    if _LONGITUDE is None:
        _LONGITUDE = _make_longitude_kernel()
    return _LONGITUDE
