"""Probability measures on the circle S^1 = [0, 2 pi) in the two forms the exact transport
solver (``circle_transport``) needs: their CDF and their quantile function, both to
round-off.

Two kinds behind one class, ``CircleMeasure``:

- atoms (weighted empirical measures, ``from_points``): sorted angles and cumulative
  weights; CDF and quantile by ``searchsorted``, O(log n) a point.
- panels (densities, ``from_density``): the circle cut into panels ``[e_k, e_{k+1}]``;
  on each the CDF is a Chebyshev series in the local variable u in [-1, 1]
  (theta = center + radius * u), zero at the left edge. Spectral: the panels are the
  grid intervals ``[theta_j, theta_{j+1}]`` and the series (degree ``SPECTRAL_DEGREE``) is
  the interpolant of the EXACT Fourier antiderivative of the trigonometric interpolant
  (one FFT per Chebyshev point, since a fixed offset in every panel is a shifted
  equispaced grid). A trigonometric polynomial of degree n/2 on a panel of width
  2 pi / n has K h / 2 = pi / 2, so the degree-18 Chebyshev interpolant errs by about
  (pi/2)^19 / (19! 2^18) ~ 1e-18 relative to the coefficients: round-off (checked
  against direct Fourier sums in the tests, max error ~ 1e-16). Finite volumes: the
  panels are the cells ``[theta_j - h/2, theta_j + h/2)`` (the first cut in two at 0),
  the series are linear (piecewise-constant density), exact.
  The CDF costs O(N) a point (N the degree); the quantile is a safeguarded Newton
  iteration on the panel's series (bisection whenever Newton leaves the bracket), to
  |du| <= 4e-16, typically 3-4 steps: ~ 0.1 us a point compiled.

The numba kernels are built on first use by ``make_panel_kernels`` (cached on disk).
"""
from __future__ import annotations

import functools

import numpy as np

from solvers.signals import DeferredSignals

TWO_PI = 2 * np.pi
# points of one compiled call of the panel kernels (quantiles measured 56 ns a point on
# finite-volume panels, 260-460 ns spectral, ~1 us under load: <= ~0.5 s; the quadrature
# of atoms against a density at p != 2 asks for n x 16 x 2 at once: ~10 s at n = 1e6)
KERNEL_CALL = 1 << 19
SPECTRAL_DEGREE = 18  # Chebyshev degree of the spectral CDF on one grid interval
MASS_RTOL = 1e-8  # relative mass defect of a density renormalised silently
# Node values below -NEGATIVE_RTOL * max are an error: the PDE solvers' own default
# negativity tolerance (discretization.negativity_tolerance), since a spectral density
# that collapses toward a cluster has truncation lobes of ~1e-11 of its max far from it.
NEGATIVE_RTOL = 1e-6


@functools.cache
def make_panel_kernels():
    """Compile the panel kernels: ``(cheb, cdf, quantile)``.

    - ``cheb(c, u)``: value and u-derivative of the Chebyshev series ``c`` at ``u``.
    - ``cdf(theta, edges, masses, coef, centers, radii, out)``.
    - ``quantile(t, masses, coef, centers, radii, panel, u, out, state)``: for each
      level t in [0, 1] the panel index, the local coordinate and the angle; ``state``
      (the previous level's panel, u, tau and slope: a warm start) is read and written
      back, so calls over consecutive slices give the bits of one call.
    """
    import numba

    # The helper is reached by the kernels as a module global, not a closure cell: numba
    # keys its disk cache on pickled closure cells, which change from run to run.
    global _cheb

    @numba.njit(cache=True, error_model="numpy", boundscheck=False)
    def _cheb(c, u):
        # Forward recurrences for T_m and T_m' (stable on [-1, 1] at these degrees).
        f = c[0]
        fp = 0.0
        t0, t1, d0, d1 = 1.0, u, 0.0, 1.0
        for m in range(1, c.size):
            f += c[m] * t1
            fp += c[m] * d1
            t2 = 2.0 * u * t1 - t0
            d2 = 2.0 * t1 + 2.0 * u * d1 - d0
            t0, t1, d0, d1 = t1, t2, d1, d2
        return f, fp

    @numba.njit(cache=True, error_model="numpy", boundscheck=False)
    def cdf(theta, edges, masses, coef, centers, radii, out):
        npan = coef.shape[0]
        for i in range(theta.size):
            k = min(max(np.searchsorted(edges, theta[i], side="right") - 1, 0), npan - 1)
            u = min(max((theta[i] - centers[k]) / radii[k], -1.0), 1.0)
            out[i] = masses[k] + _cheb(coef[k], u)[0]

    @numba.njit(cache=True, error_model="numpy", boundscheck=False)
    def quantile(t, masses, coef, centers, radii, panel, uout, out, state):
        npan = coef.shape[0]
        kprev, uprev, tprev, fprev = int(state[0]), state[1], state[2], state[3]
        for i in range(t.size):
            # masses[k] < t <= masses[k + 1]: empty panels are skipped.
            k = min(max(np.searchsorted(masses, t[i]) - 1, 0), npan - 1)
            tau = t[i] - masses[k]
            width = masses[k + 1] - masses[k]
            lo, hi = -1.0, 1.0
            if k == kprev and fprev > 0:
                # Sorted queries: a Newton step from the previous solution in the same
                # panel (half the iterations when many levels share a panel).
                u = min(max(uprev + (tau - tprev) / fprev, -1.0), 1.0)
            else:
                u = min(max(-1.0 + 2.0 * tau / width, -1.0), 1.0) if width > 0 else -1.0
            fp = 0.0
            for _ in range(100):
                f, fp = _cheb(coef[k], u)
                g = f - tau
                if g > 0:
                    hi = u
                elif g < 0:
                    lo = u
                else:
                    break
                un = u - g / fp if fp > 0 else 0.5 * (lo + hi)
                newton = fp > 0 and lo < un < hi
                if not newton:
                    un = 0.5 * (lo + hi)  # safeguard: Newton left the bracket
                # Newton is quadratic: after a step below 1e-10 the error is ~ 1e-20
                # times the curvature ratio, so no confirming evaluation is spent.
                if (newton and abs(un - u) <= 1e-10) or hi - lo <= 4e-16:
                    u = un
                    break
                u = un
            kprev, uprev, tprev, fprev = k, u, tau, fp
            panel[i] = k
            uout[i] = u
            out[i] = centers[k] + radii[k] * u
        state[0], state[1], state[2], state[3] = kprev, uprev, tprev, fprev

    return _cheb, cdf, quantile


def _in_calls(call, size: int) -> None:
    """``call(i0, i1)`` over slices of at most ``KERNEL_CALL`` points; with more than
    one, a Ctrl-C or SIGTERM during a compiled call is noted and raised after it
    (``solvers.signals.DeferredSignals``)."""
    if size <= KERNEL_CALL:
        call(0, size)
        return
    with DeferredSignals() as signals:
        for i0 in range(0, size, KERNEL_CALL):
            call(i0, min(size, i0 + KERNEL_CALL))
            signals.check()


def _compensated_cumsum(w: np.ndarray) -> np.ndarray:
    """Cumulative sums of ``w`` to about one rounding each (Neumaier's compensated sum,
    in blocks of numpy operations: O(n), exact-rounding up to O(n eps^2))."""
    s = np.cumsum(w)
    # The rounding error of each partial sum s_i = fl(s_{i-1} + w_i), exactly (TwoSum),
    # accumulated and added back once.
    prev = np.concatenate([[0.0], s[:-1]])
    bp = s - prev
    err = (prev - (s - bp)) + (w - bp)
    return s + np.cumsum(err)


def _chebyshev_coefficients(values: np.ndarray) -> np.ndarray:
    """Chebyshev coefficients from values at the Lobatto points cos(pi q / N), rows."""
    from scipy.fft import dct

    n = values.shape[-1] - 1
    c = dct(values, type=1, axis=-1) / n
    c[..., 0] /= 2
    c[..., -1] /= 2
    return c


class CircleMeasure:
    """A probability measure on S^1 = [0, 2 pi), angles in radians.

    Build with ``from_points`` (weighted atoms) or ``from_density`` (an evolve dataset's
    density on its equispaced nodes). ``kind`` is ``"atoms"`` or ``"panels"``.

    Attributes (atoms): ``angles`` (sorted, in [0, 2 pi)), ``weights``, ``levels`` (the
    cumulative weights, ``levels[-1] == 1``). Attributes (panels): ``edges`` (P + 1,
    from 0 to 2 pi), ``masses`` (cumulative mass at the edges), ``coef`` (P, N + 1) the
    local CDF series, ``centers``, ``radii``, ``negative_mass`` (the mass where the
    interpolant dips below zero, 0 for finite volumes), ``mass_defect`` (the relative
    amount by which the input mass differed from 1 before renormalisation).
    """

    def __init__(self, kind: str, **arrays):
        self.kind = kind
        for name, value in arrays.items():
            setattr(self, name, value)

    # ---- constructors ---------------------------------------------------------------
    @classmethod
    def from_points(cls, angles, weights=None) -> CircleMeasure:
        """Weighted empirical measure sum_i w_i delta_{angles_i}.

        Args:
            angles: 1-D angles in radians (any real; reduced mod 2 pi).
            weights: nonnegative weights (default equal), normalised to sum 1; atoms of
                zero weight are dropped.

        Raises:
            ValueError: empty input, NaN/inf angles or weights, negative or all-zero
                weights, shape mismatch.

        Cost O(n log n) (a sort; 0.03 s for 1e6 equal-weight angles).
        """
        x = np.asarray(angles, dtype=float).ravel()
        if x.size == 0:
            raise ValueError("empty measure: no angles given")
        if not np.all(np.isfinite(x)):
            raise ValueError("angles must be finite (found NaN or inf)")
        if weights is None:
            w = np.full(x.size, 1.0 / x.size)
        else:
            w = np.asarray(weights, dtype=float)
            if w.shape != np.shape(angles) and w.ravel().size != x.size:
                raise ValueError(f"weights shape {w.shape} does not match angles "
                                 f"shape {np.shape(angles)}")
            w = w.ravel()
            if not np.all(np.isfinite(w)):
                raise ValueError("weights must be finite (found NaN or inf)")
            if np.any(w < 0):
                raise ValueError("weights must be nonnegative")
            total = w.sum()
            if not total > 0:
                raise ValueError("weights sum to zero: empty measure")
            keep = w > 0
            x, w = x[keep], w[keep] / total
        x = np.mod(x, TWO_PI)
        x[x >= TWO_PI] = 0.0  # mod of a tiny negative angle can round up to 2 pi
        if weights is None:
            x = np.sort(x)  # equal weights: no permutation to carry (4-7x faster)
        else:
            order = np.argsort(x, kind="stable")
            x, w = x[order], w[order]
        # Correctly rounded levels: equal cumulative masses on two sides are then equal
        # floats to an ulp or two, which the exact transport at large p relies on
        # (circle_atoms). A plain cumsum drifts by up to ~n eps.
        if weights is None:
            levels = np.arange(1, x.size + 1) / x.size
        else:
            levels = _compensated_cumsum(w)
            levels /= levels[-1]
            levels[-1] = 1.0
        return cls("atoms", angles=x, weights=w, levels=levels)

    @classmethod
    def from_density(cls, values, method: str) -> CircleMeasure:
        """Measure with density given by values on the nodes theta_j = 2 pi j / n.

        Args:
            values: the n node values of a density w.r.t. d theta (an evolve dataset's
                ``density`` at one time).
            method: ``"spectral"`` (the trigonometric interpolant of the values; its
                exact CDF by the Fourier antiderivative, as Chebyshev series of degree
                18 per grid interval, round-off) or ``"finite-volume"`` (cell averages
                on ``[theta_j - h/2, theta_j + h/2)``: piecewise-constant density,
                piecewise-linear CDF, exact).

        The mass is renormalised to 1; the relative amount it was off by is kept in
        ``mass_defect`` and is not an error below 1e-8 (the solvers conserve mass to
        round-off); above, ValueError. Node values below -1e-6 max|values| (the
        solvers' default negativity tolerance) are a ValueError. The spectral
        interpolant may dip slightly below zero at or between nodes; that (negative)
        mass is kept in ``negative_mass`` and bounds the error of the CDF/quantile there (the quantile solves F = t inside the panel found
        from the monotone envelope of the panel masses).

        Cost: O(N n log n) to build (N + 1 FFTs), O(n N) memory.
        """
        v = np.asarray(values, dtype=float).ravel()
        n = v.size
        if n == 0:
            raise ValueError("empty density: no values")
        if not np.all(np.isfinite(v)):
            raise ValueError("density values must be finite (found NaN or inf)")
        scale = np.abs(v).max()
        if v.min() < -NEGATIVE_RTOL * scale:
            raise ValueError(f"density has negative values beyond round-off: min "
                             f"{v.min():.3e} (max |value| {scale:.3e})")
        h = TWO_PI / n
        mass = v.sum() * h  # exact for both: the interpolant's mean, the cell sum
        if not mass > 0:
            raise ValueError("density has zero mass")
        defect = abs(mass - 1.0)
        if defect > MASS_RTOL:
            raise ValueError(f"density mass {mass!r} differs from 1 by {defect:.3e} "
                             f"(> {MASS_RTOL:g} relative): not a probability density")
        v = v / mass
        if method == "finite-volume":
            edges = np.concatenate([[0.0], h * (np.arange(n) + 0.5), [TWO_PI]])
            rho = np.concatenate([v, v[:1]])  # the last half cell is cell 0's
            radii = np.diff(edges) / 2
            coef = np.stack([rho * radii, rho * radii], axis=1)  # F_loc = rho r (1 + u)
            negative = 0.0
        elif method == "spectral":
            edges = h * np.arange(n + 1)
            radii = np.full(n, h / 2)
            coef, negative = _spectral_panels(v, SPECTRAL_DEGREE)
        else:
            raise ValueError(f"unknown density method {method!r}: use 'spectral' or "
                             "'finite-volume'")
        centers = edges[:-1] + radii
        # Panel masses from the series' value at u = 1, so the quantile's panel search
        # and its local solve agree; the monotone envelope guards a negative panel.
        masses = np.concatenate([[0.0], np.maximum.accumulate(np.cumsum(coef.sum(1)))])
        total = masses[-1]
        return cls("panels", edges=edges, masses=masses / total, coef=coef / total,
                   centers=centers, radii=radii, negative_mass=negative,
                   mass_defect=defect, method=method)

    # ---- evaluation -----------------------------------------------------------------
    def cdf(self, theta) -> np.ndarray:
        """F(theta) = mu([0, theta)) for theta in [0, 2 pi] (clipped); O(log n) a point."""
        th = np.clip(np.asarray(theta, dtype=float), 0.0, TWO_PI)
        if self.kind == "atoms":
            idx = np.searchsorted(self.angles, th, side="left")
            return np.concatenate([[0.0], self.levels])[idx]
        out, flat, kernel = np.empty(th.size), th.ravel(), make_panel_kernels()[1]
        _in_calls(lambda i0, i1: kernel(flat[i0:i1], self.edges, self.masses, self.coef,
                                        self.centers, self.radii, out[i0:i1]), th.size)
        return out.reshape(th.shape)

    def quantile(self, t) -> np.ndarray:
        """Generalised inverse inf{theta: mu([0, theta]) >= t} for t in (0, 1] (clipped;
        at t = 0 the limit from the right). Atoms: O(log n) a point. Panels: a
        safeguarded Newton solve, |d theta| <= 4e-16 * radius.
        """
        tt = np.clip(np.asarray(t, dtype=float), 0.0, 1.0)
        if self.kind == "atoms":
            idx = np.minimum(np.searchsorted(self.levels, tt, side="left"),
                             self.angles.size - 1)
            return self.angles[idx]
        return self.panel_quantile(tt.ravel())[2].reshape(tt.shape)

    def panel_quantile(self, t: np.ndarray):
        """(panel index, local u, angle) of the quantile at levels ``t`` (1-D, panels)."""
        t = np.ascontiguousarray(t, dtype=float)
        panel = np.empty(t.size, dtype=np.int64)
        u = np.empty(t.size)
        out = np.empty(t.size)
        kernel, state = make_panel_kernels()[2], np.array([-1.0, 0.0, 0.0, 0.0])
        _in_calls(lambda i0, i1: kernel(t[i0:i1], self.masses, self.coef, self.centers,
                                        self.radii, panel[i0:i1], u[i0:i1], out[i0:i1],
                                        state), t.size)
        return panel, u, out

    def density_at(self, theta) -> np.ndarray:
        """The density (panels) at angles in [0, 2 pi]; O(N) a point."""
        th = np.clip(np.asarray(theta, dtype=float).ravel(), 0.0, TWO_PI)
        k = np.clip(np.searchsorted(self.edges, th, side="right") - 1, 0,
                    self.coef.shape[0] - 1)
        u = np.clip((th - self.centers[k]) / self.radii[k], -1, 1)
        d = np.polynomial.chebyshev.chebder(self.coef, axis=1)
        vals = np.array([np.polynomial.chebyshev.chebval(ui, d[ki])
                         for ki, ui in zip(k, u)])
        return vals / self.radii[k]


def _spectral_panels(v: np.ndarray, degree: int):
    """Local CDF series of the trigonometric interpolant of ``v`` (mass 1) on each grid
    interval, and the mass where it is negative (from its values at the Lobatto points).
    """
    n = v.size
    h = TWO_PI / n
    c = np.fft.rfft(v) / n  # interpolant = sum_k c_k e^{ik theta}
    if n % 2 == 0:
        c[-1] /= 2  # the Nyquist cosine counted once
    k = np.arange(1, c.size)
    lobatto = np.cos(np.pi * np.arange(degree + 1) / degree)
    offsets = (h / 2) * (1 + lobatto)  # Lobatto points of [theta_j, theta_j + h]
    full = np.zeros(n, dtype=complex)
    values = np.empty((n, degree + 1))
    dens = np.empty((n, degree + 1))
    for q, delta in enumerate(offsets):
        # F(theta_j + delta) - F(theta_j) = c_0 delta + 2 Re sum_k c_k (e^{ik delta}-1)
        # e^{ik theta_j} / (ik); e^{ix} - 1 = 2i sin(x/2) e^{ix/2} keeps small delta exact.
        incr = c[1:] * (2j * np.sin(k * delta / 2) * np.exp(0.5j * k * delta)) / (1j * k)
        full[:] = 0
        full[1:c.size] = incr
        values[:, q] = c[0].real * delta + 2 * np.real(np.fft.ifft(full) * n)
        full[1:c.size] = c[1:] * np.exp(1j * k * delta)
        dens[:, q] = c[0].real + 2 * np.real(np.fft.ifft(full) * n)
    coef = _chebyshev_coefficients(values)
    coef[:, 0] -= np.polynomial.chebyshev.chebval(-1.0, coef.T)  # exactly 0 at u = -1
    negative = float(-np.minimum(dens, 0).mean(axis=1).sum() * h)
    return coef, negative
