"""Exact Wasserstein distances on the circle S^1 = [0, 2 pi) with the geodesic cost
d(a, b) = min(|a - b|, 2 pi - |a - b|), between any two of: weighted empirical measures
and PDE densities (``CircleMeasure``, in ``circle_measures``).

The formulation ([DSS10]; [RDG11]; [HKM22]): with
F^{-1}, G^{-1} the quantile functions extended by G^{-1}(t + 1) = G^{-1}(t) + 2 pi,

    W_p^p(mu, nu) = min_alpha C(alpha),  C(alpha) = int_0^1 |F^{-1}(t) - G^{-1}(t + alpha)|^p dt,

C convex in the mass shift alpha (minimisers in [-1, 1]). A rotation phi of nu adds phi
to G^{-1}, so "modulo rotation" minimises over (alpha, phi).

How each pair is solved (cost and accuracy):

- atoms / atoms (``circle_atoms``): C is piecewise linear (breakpoints alpha = U_i -
  V_j + k where a cumulative weight of one crosses one of the other), convex. C and its
  right slope at alpha in one compiled merge of the levels, O(n + m), held as exp(M) x
  (value, slope) so that no power of a distance overflows or underflows at any p; the
  minimising breakpoint is bracketed by regula falsi on the slope, then found among the
  few breakpoints left, and C is evaluated there with the breakpoints that tie to
  round-off merged (levels correctly rounded): exact at every finite p >= 1 (checked
  against ``ot.emd2`` at p = 1.5, 2, 3, 4, 8, and against the closed form of a rigid
  shift up to p = 1e4, where plain floating point gave W_16 = 164 x the shift and NaN
  from p = 400). W1 is also computed directly as min_a int |F - G - a| (a weighted
  median of F - G).
- atoms / density, p = 1, 2: y_i = G^{-1}(U_i + alpha) by Newton on the panel series; the
  mass of nu between y_{i-1} and y_i is sent to x_i and its cost int |x_i - theta|^p dG
  is exact from the panel moments int u^j dF_loc (j <= 2, Chebyshev antiderivatives,
  panel-local so there is no cancellation); C' = sum_i c(x_i - y_i) - c(x_i - y_{i-1}),
  C'' = sum_i (dy_i/dalpha) [c'(x_i - y_i) - c'(x_{i-1} - y_i)], dy_i/dalpha =
  1 / rho(y_i). All three in one compiled pass (``make_sweep_kernel``), O(n + P): the
  five panel series (F_loc, F_loc', F_loc'', both antiderivatives) on one Chebyshev
  recurrence, each quantile's Newton started from its own solve at the last shift
  (moved by dalpha / rho) or, the first time, by a second-order step from the previous
  level, so about one series evaluation a point. Above ``COARSE_ABOVE`` atoms the shift
  is located on a coarse copy (``COARSE_GROUPS`` group means), then Newton on C' (p = 2;
  secant steps for p = 1, whose C'' is a sum of jumps) certified like the cutting
  planes below (|C'(a)| |b - a| <= 8 eps C(a) for a bracket [a, b] of the minimiser):
  2 passes at n = 1e6, p = 2. Below, cutting planes and secant steps on the same pass.
  The reference evaluation (``_atoms_panels_cost``: quantiles and moments from scratch)
  is kept for the tests.
- everything else (density / density, any p; atoms / density, p != 2): C(alpha) by
  Gauss-Legendre (``GL_NODES`` nodes) on every piece of (0, 1] between the breakpoints of
  both measures (panel masses, cumulative weights), split again where F^{-1} - G^{-1}
  changes sign when p is not an even integer; both quantiles are analytic on a piece
  (inverses of the panel polynomials), so the rule converges geometrically: doubling the
  nodes changes W_p^p by < 1e-15 relative for integer p and ~1e-13 for p = 1.5 (|z|^p is
  not smooth at the split) on von Mises densities (test ``test_quadrature_converged``).
  C' from the same rule (-int c'(D) / rho(G^{-1}) dt) when min rho >=
  ``SLOPE_DENSITY_RATIO`` max rho, both as exp(M) x (value, slope) with the powers taken
  of |D| / max |D| (``circle_quadrature.gl_scaled``: no overflow or underflow at any p;
  plain powers gave W_64 = 12 h for a density and its rotation by h, and inf at p =
  1000), minimised by regula falsi on the slope until the better end is certified to 4
  eps by its tangent; otherwise (empty or nearly empty cells, where 1/rho(G^{-1})
  cannot be integrated) bounded Brent on log C (xatol 1e-12; C is convex). Checked at p
  = 3, 4, 8 against refinements of piecewise-constant densities into atoms (second-order
  convergence to our value, Richardson-extrapolated agreement 4e-10). Known limit: for
  a spectral density whose quantile jumps across a gap of nearly empty panels (a von
  Mises of concentration ~30 on 512 points), the value of C near the kink of the
  minimiser is off by ~1e-4 (W_2 of two such densities a rotation of 2 apart: 2 -
  8e-5); at concentrations 100 and 300 it is exact to 1e-9.

Modulo rotation: atoms / atoms and p = 2 exactly: with the rotation chosen optimally
(the mean of F^{-1} - G^{-1}, which is affine in alpha), C(alpha) minus the squared mean is
concave on each linear piece of C, so the minimum is at a breakpoint; all n m breakpoints
in [0, 1) are enumerated, C at each from its slope jumps (the Monge differences), O(n m
log(n m)) time, O(n m) memory: use it for n m up to ~1e7. With a density and p = 2 the
same reduction, min over alpha of C(alpha) - mean(alpha)^2, with alpha on a grid of
``ROTATION_GRID`` points then bounded Brent around the best three (~0.4-1.6 s for two
512-point densities; it was ~20 s as a search over rotations, and missed the narrow
basin of two concentrated clusters). Other cases: phi on a grid of ``ROTATION_GRID``
points plus the alignments of the circular means, then bounded Brent around each (not
certified global; documented as such).

Measured (benchmarks/bench_circle_transport.py, 2 shared cores, one run, POT 0.9.7
``wasserstein_circle`` on the same input; W2, p = 2; timings vary ~20% between runs):
    empirical vs empirical, n = m (the compiled merge of ``circle_atoms``, 2026-11-26):
        1e3: 0.005 s (POT 0.017 s), 1e4: 0.014 s (0.066), 1e5: 0.17 s (0.84), 1e6:
        1.46 s (8.37); |W2 - POT| <= 2.4e-11 (POT's cumulative weights drift by ~n eps,
        ours are correctly rounded). Before it (cutting planes on a lexsort merge): 1e6
        1.97 s against POT's 4.33 s in another run.
    1e6 tokens vs a density on 256 nodes (the angles unsorted, as POT gets them; the
        sort is in the time): spectral 0.36 s, finite volume 0.15 s; POT with the density
        as 1e4 / 1e5 weighted atoms 0.69 / 1.16 s (POT/ours 1.9 / 3.3 spectral, 3.9 / 7.6
        finite volume; POT's 1e4-atom stand-in is off by 6e-8 in W2, 1e5 by 6e-10);
        uniform: ours 0.16 s vs POT's closed form 0.05 s. Before the one-pass sweep
        (cutting planes on quantiles and moments recomputed from scratch, 4 full
        evaluations of ~0.37 s, and a stable argsort) the spectral case took 2.06 s in the
        same run (5.8x; W1 2.6 s -> 0.90 s), |diff W2| = 2e-15.
"""
from __future__ import annotations

import functools

import numpy as np
from scipy.optimize import minimize_scalar

from meanfield.metrics.arguments import check_p
from meanfield.metrics.circle_atoms import (
    EPS,
    atoms_cost,
    shift_minimum,
    slope_root,
    split_shift,
    w1_atoms,
)
from meanfield.metrics.circle_measures import TWO_PI, CircleMeasure
from meanfield.metrics.circle_quadrature import GL_NODES, gl_cost, gl_scaled
from meanfield.metrics.circle_quadrature import density as _density

__all__ = ["CircleMeasure", "circle_wasserstein", "circle_wasserstein_to_dirac"]

COARSE_ABOVE = 50_000  # atoms vs density: a coarse pre-solve above this many atoms
COARSE_GROUPS = 4096
ROTATION_GRID = 64
EXACT_ROTATION_MAX = 10**7  # n m above which modulo rotation leaves breakpoint enumeration


# The slope of C(alpha) for a density nu is a quadrature of 1 / rho(G^{-1}): trusted when
# min rho >= SLOPE_DENSITY_RATIO max rho (measured on von Mises pairs: exact to 1e-16 down
# to a ratio 1e-9, off by 2e-7 at 3e-14, wrong at 1e-15).
SLOPE_DENSITY_RATIO = 1e-8


# ---- atoms / atoms: meanfield.metrics.circle_atoms ----------------------------------
_split_shift = split_shift
_atoms_cost = atoms_cost
_w1_atoms = w1_atoms
_gl_cost = gl_cost  # (the name the tests use)


# ---- atoms / panels, p = 2 --------------------------------------------------------
@functools.cache
def make_moment_kernel():
    """Compile ``cost(x, k, u, lap, phi, coef, ic0, ic1, full, centers, radii)``: C and
    C' for atoms x against panels, from the quantile locations (k, u, lap) of U_i + alpha.
    """
    import numba

    # Helpers are module globals, not closure cells (numba's disk cache, see
    # circle_measures.make_panel_kernels).
    global _clenshaw

    @numba.njit(cache=True, error_model="numpy", boundscheck=False)
    def _clenshaw(c, u):
        # Value only (half the work of the value-and-derivative recurrence).
        b1 = 0.0
        b2 = 0.0
        for m in range(c.size - 1, 0, -1):
            b1, b2 = 2.0 * u * b1 - b2 + c[m], b1
        return u * b1 - b2 + c[0]

    @numba.njit(cache=True, error_model="numpy", boundscheck=False)
    def moments(c, ic0, ic1, ua, ub):
        pa, pb = _clenshaw(c, ua), _clenshaw(c, ub)
        i0 = _clenshaw(ic0, ub) - _clenshaw(ic0, ua)
        i1 = _clenshaw(ic1, ub) - _clenshaw(ic1, ua)
        return (pb - pa, ub * pb - ua * pa - i0, ub * ub * pb - ua * ua * pa - 2 * i1)

    @numba.njit(cache=True, error_model="numpy", boundscheck=False)
    def combine(pa, i0a, i1a, pb, i0b, i1b, ua, ub):
        return (pb - pa, ub * pb - ua * pa - (i0b - i0a),
                ub * ub * pb - ua * ua * pa - 2 * (i1b - i1a))

    @numba.njit(cache=True, error_model="numpy", boundscheck=False)
    def part(p, d, r, c, ic0, ic1, ua, ub, m0, m1, m2):
        # int_{ua}^{ub} c(d - r u) dF_loc(u): p = 2 from the three moments; p = 1 split
        # where u = d / r (the atom), |d - r u| = r |u_x - u|.
        if p == 2:
            return d * d * m0 - 2 * d * r * m1 + r * r * m2
        ux = d / r
        if ux <= ua:
            return r * (m1 - ux * m0)
        if ux >= ub:
            return r * (ux * m0 - m1)
        l0, l1, _ = moments(c, ic0, ic1, ua, ux)
        return r * ((ux * l0 - l1) + (m1 - l1) - ux * (m0 - l0))

    @numba.njit(cache=True, error_model="numpy", boundscheck=False)
    def cost(p, x, kq, uq, lapq, phi, coef, ic0, ic1, full, centers, radii):
        npan = coef.shape[0]
        two_pi = 2 * np.pi
        total = 0.0
        slope = 0.0
        ck, cu, cp, c0, c1 = -1, 0.0, 0.0, 0.0, 0.0  # the last end point's values
        for i in range(x.size):
            k, ua, lap = kq[i], uq[i], lapq[i]
            kb, ub, lapb = kq[i + 1], uq[i + 1], lapq[i + 1]
            xi = x[i]
            while lap < lapb or (lap == lapb and k < kb):
                d = xi - (centers[k] + lap * two_pi + phi)
                r = radii[k]
                if ua == -1.0:
                    m0, m1, m2 = full[k, 0], full[k, 1], full[k, 2]
                else:
                    if not (k == ck and ua == cu):
                        cp, c0, c1 = _clenshaw(coef[k], ua), _clenshaw(ic0[k], ua), \
                            _clenshaw(ic1[k], ua)
                    # the values at u = 1: the sums of the coefficients
                    pb, i0, i1 = coef[k].sum(), ic0[k].sum(), ic1[k].sum()
                    m0, m1, m2 = combine(cp, c0, c1, pb, i0, i1, ua, 1.0)
                total += part(p, d, r, coef[k], ic0[k], ic1[k], ua, 1.0, m0, m1, m2)
                k += 1
                ua = -1.0
                if k == npan:
                    k = 0
                    lap += 1
            if ub > ua:
                d = xi - (centers[k] + lap * two_pi + phi)
                r = radii[k]
                # The start of this piece is where the last one ended (sorted levels):
                # its values are reused, so each piece costs three series evaluations.
                if not (k == ck and ua == cu):
                    cp, c0, c1 = _clenshaw(coef[k], ua), _clenshaw(ic0[k], ua), \
                        _clenshaw(ic1[k], ua)
                pb, i0, i1 = _clenshaw(coef[k], ub), _clenshaw(ic0[k], ub), \
                    _clenshaw(ic1[k], ub)
                m0, m1, m2 = combine(cp, c0, c1, pb, i0, i1, ua, ub)
                total += part(p, d, r, coef[k], ic0[k], ic1[k], ua, ub, m0, m1, m2)
                ck, cu, cp, c0, c1 = k, ub, pb, i0, i1
            ya = centers[kq[i]] + radii[kq[i]] * uq[i] + lapq[i] * two_pi + phi
            yb = centers[kb] + radii[kb] * ub + lapb * two_pi + phi
            if p == 2:
                slope += (xi - yb) ** 2 - (xi - ya) ** 2
            else:
                slope += abs(xi - yb) - abs(xi - ya)
        return total, slope

    return cost


def _panel_moments(nu: CircleMeasure):
    """Chebyshev antiderivatives of F_loc and u F_loc per panel, and the full-panel
    moments int_{-1}^{1} u^j dF_loc (j = 0, 1, 2); cached on the measure."""
    if getattr(nu, "_moments", None) is None:
        from numpy.polynomial import chebyshev as ch
        ic0 = ch.chebint(nu.coef, lbnd=-1, axis=1)
        c = nu.coef
        xc = np.zeros((c.shape[0], c.shape[1] + 1))  # u F_loc: u T_0 = T_1,
        xc[:, 1] += c[:, 0]  # u T_j = (T_{j+1} + T_{j-1}) / 2
        xc[:, 2:] += 0.5 * c[:, 1:]
        xc[:, :c.shape[1] - 1] += 0.5 * c[:, 1:]
        ic1 = ch.chebint(xc, lbnd=-1, axis=1)
        ones = np.ones(1)
        pb = nu.coef.sum(1)
        full = np.stack([pb, pb - ch.chebval(ones, ic0.T)[:, 0],
                         pb - 2 * ch.chebval(ones, ic1.T)[:, 0]], axis=1)
        nu._moments = (np.ascontiguousarray(ic0), np.ascontiguousarray(ic1), full)
    return nu._moments


def _atoms_panels_cost(mu: CircleMeasure, nu: CircleMeasure, alpha: float, phi: float,
                       p: int = 2):
    s = np.concatenate([[0.0], mu.levels]) + alpha
    lap = np.ceil(s) - 1
    frac = np.clip(s - lap, 0.0, 1.0)
    k, u, _ = nu.panel_quantile(frac)
    ic0, ic1, full = _panel_moments(nu)
    return make_moment_kernel()(p, mu.angles, k, u, lap.astype(np.int64), phi, nu.coef,
                                ic0, ic1, full, nu.centers, nu.radii)


@functools.cache
def make_sweep_kernel():
    """Compile ``sweep(...)``: C(alpha), C'(alpha) and C''(alpha) for atoms x against
    panels in one pass over the n + 1 quantile points y_j = G^{-1}(U_j + alpha), p = 1
    or 2 (see ``_PanelSweep``)."""
    import numba

    # Module globals, not closure cells (numba's disk cache, as make_moment_kernel).
    global _sweep_eval, _sweep_piece

    @numba.njit(cache=True, error_model="numpy", boundscheck=False)
    def _sweep_eval(A, k, u):
        # F_loc, F_loc', F_loc'', int F_loc, int u F_loc at u: five series on one T_m
        # recurrence (the derivatives' own Chebyshev coefficients), their coefficients
        # interleaved (A[k, m, :]) so that the five sums run side by side.
        t0, t1 = 1.0, u
        f, fp, fpp, i0, i1 = A[k, 0, 0], A[k, 0, 1], A[k, 0, 2], A[k, 0, 3], A[k, 0, 4]
        u2 = 2.0 * u
        for m in range(1, A.shape[1]):
            f += A[k, m, 0] * t1
            fp += A[k, m, 1] * t1
            fpp += A[k, m, 2] * t1
            i0 += A[k, m, 3] * t1
            i1 += A[k, m, 4] * t1
            t0, t1 = t1, u2 * t1 - t0
        return f, fp, fpp, i0, i1

    @numba.njit(cache=True, error_model="numpy", boundscheck=False)
    def _sweep_piece(p, d, r, A, k, ua, ub, pa, i0a, i1a, pb, i0b, i1b):
        # int_{ua}^{ub} |d - r u|^p dF_loc(u) from the end values of F_loc and its two
        # antiderivatives (panel-local moments: no cancellation).
        m0 = pb - pa
        m1 = ub * pb - ua * pa - (i0b - i0a)
        m2 = ub * ub * pb - ua * ua * pa - 2 * (i1b - i1a)
        if p == 2:
            return d * d * m0 - 2 * d * r * m1 + r * r * m2
        ux = d / r
        if ux <= ua:
            return r * (m1 - ux * m0)
        if ux >= ub:
            return r * (ux * m0 - m1)
        px, _, _, i0x, _ = _sweep_eval(A, k, ux)
        l0 = px - pa
        l1 = ux * px - ua * pa - (i0x - i0a)
        return r * ((ux * l0 - l1) + (m1 - l1) - ux * (m0 - l0))

    @numba.njit(cache=True, error_model="numpy", boundscheck=False)
    def sweep(p, x, levels, alpha, phi, masses, A, ends, full, centers, radii,
              kq, uq, fq, warm, dalpha):
        n = x.size
        npan = A.shape[0]
        two_pi = 2 * np.pi
        total = 0.0
        slope = 0.0
        curv = 0.0
        # the last evaluation: panel, point, F_loc and its two derivatives there
        kprev, uprev, tprev, fprev, gprev = -1, 0.0, 0.0, 0.0, 0.0
        # the previous point's panel, local coordinate, lap, angle and end values
        ka, ua, lapa, ya, pa, i0a, i1a = 0, 0.0, 0, 0.0, 0.0, 0.0, 0.0
        for j in range(n + 1):
            s = alpha + (levels[j - 1] if j > 0 else 0.0)
            lap = int(np.ceil(s)) - 1
            t = min(max(s - lap, 0.0), 1.0)
            # the panel: masses[k] < t <= masses[k + 1] (empty panels skipped)
            k = kq[j] if warm else kprev
            if not (k >= 0 and masses[k] < t <= masses[k + 1]):
                k = min(max(np.searchsorted(masses, t) - 1, 0), npan - 1)
            tau = t - masses[k]
            width = masses[k + 1] - masses[k]
            if warm and k == kq[j] and fq[j] > 0:
                # the last solve of the same level, moved by the shift (Newton's step)
                u = min(max(uq[j] + dalpha / fq[j], -1.0), 1.0)
            elif k == kprev and fprev > 0:
                # the inverse's second-order Taylor step from the last evaluation
                du = (tau - tprev) / fprev
                u = min(max(uprev + du - 0.5 * gprev * du * du / fprev, -1.0), 1.0)
            else:
                u = min(max(-1.0 + 2.0 * tau / width, -1.0), 1.0) if width > 0 else -1.0
            lo, hi = -1.0, 1.0
            f, fp, fpp, i0, i1 = 0.0, 0.0, 0.0, 0.0, 0.0
            for _ in range(100):
                f, fp, fpp, i0, i1 = _sweep_eval(A, k, u)
                kprev, uprev, tprev, fprev, gprev = k, u, f, fp, fpp
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
                    un = 0.5 * (lo + hi)
                # Newton's error after the step: |F''| du^2 / (2 F'), small enough
                # here below 1e-10 or below 1e-17
                dn = un - u
                if (newton and (abs(dn) <= 1e-10 or (abs(dn) <= 1e-6 and abs(fpp) * dn
                                                     * dn <= 2e-17 * fp))) \
                        or hi - lo <= 4e-16:
                    # Newton is quadratic: the last step's end values by Taylor
                    du = un - u
                    i0 += f * du + 0.5 * fp * du * du
                    i1 += u * f * du + 0.5 * (f + u * fp) * du * du
                    f += fp * du
                    u = un
                    break
                u = un
            kq[j], uq[j], fq[j] = k, u, fp
            r = radii[k]
            y = centers[k] + r * u + lap * two_pi + phi
            if j > 0:
                xi = x[j - 1]
                # C' = sum_i c(x_i - y_{i+1}) - c(x_i - y_i)
                if p == 2:
                    slope += (xi - y) ** 2 - (xi - ya) ** 2
                else:
                    slope += abs(xi - y) - abs(xi - ya)
                # the cost of the mass of nu between y_{j-1} and y_j sent to x_{j-1}
                kk, uu, ll = ka, ua, lapa
                qa, q0, q1 = pa, i0a, i1a
                while ll < lap or (ll == lap and kk < k):
                    d = xi - (centers[kk] + ll * two_pi + phi)
                    if uu == -1.0:
                        m0, m1, m2 = full[kk, 0], full[kk, 1], full[kk, 2]
                        if p == 2:
                            total += d * d * m0 - 2 * d * radii[kk] * m1 + \
                                radii[kk] ** 2 * m2
                        else:
                            total += _sweep_piece(p, d, radii[kk], A, kk, -1.0,
                                                  1.0, 0.0, 0.0, 0.0, ends[kk, 0],
                                                  ends[kk, 1], ends[kk, 2])
                    else:
                        total += _sweep_piece(p, d, radii[kk], A, kk, uu, 1.0,
                                              qa, q0, q1, ends[kk, 0], ends[kk, 1],
                                              ends[kk, 2])
                    kk += 1
                    uu, qa, q0, q1 = -1.0, 0.0, 0.0, 0.0
                    if kk == npan:
                        kk = 0
                        ll += 1
                if u > uu:
                    d = xi - (centers[k] + lap * two_pi + phi)
                    total += _sweep_piece(p, d, r, A, k, uu, u, qa, q0, q1,
                                          f, i0, i1)
            # C'' = sum_j (dy_j / dalpha) [c'(x_j - y_j) - c'(x_{j-1} - y_j)], the
            # derivative of y_j being radius / F_loc' (x_{-1} = x_{n-1} - 2 pi)
            if j < n:
                xl = x[j - 1] if j > 0 else x[n - 1] - two_pi
                dy = r / fp if fp > 0 else np.inf
                if p == 2:
                    curv += 2 * dy * (x[j] - xl)
                else:
                    sj = 1.0 if x[j] > y else (-1.0 if x[j] < y else 0.0)
                    sl = 1.0 if xl > y else (-1.0 if xl < y else 0.0)
                    if sj != sl:
                        curv += dy * (sj - sl)
            ka, ua, lapa, ya, pa, i0a, i1a = k, u, lap, y, f, i0, i1
        return total, slope, curv

    return sweep


class _PanelSweep:
    """C(alpha), C'(alpha), C''(alpha) of atoms ``mu`` against panels ``nu`` (rotated by
    phi), p = 1 or 2, by ``make_sweep_kernel``: one pass over the n + 1 levels, each
    quantile a safeguarded Newton solve on the panel series started from the solve of
    the same level at the last shift (one series evaluation a point when the shift moved
    little) or, the first time, from the previous level's. The per-panel data and the
    n + 1 solves are kept between calls."""

    def __init__(self, mu: CircleMeasure, nu: CircleMeasure, phi: float, p: int):
        from numpy.polynomial import chebyshev as ch

        ic0, ic1, full = _panel_moments(nu)
        m = ic1.shape[1]

        def pad(c):
            out = np.zeros((c.shape[0], m))
            out[:, :c.shape[1]] = c
            return out

        a, b, c = pad(nu.coef), pad(ic0), pad(ic1)
        dda = pad(ch.chebder(nu.coef, 2, axis=1)) if nu.coef.shape[1] > 2 else \
            np.zeros_like(a)
        # interleaved: F_loc, F_loc', F_loc'', int F_loc, int u F_loc
        self.A = np.ascontiguousarray(np.stack([a, pad(ch.chebder(nu.coef, axis=1)), dda,
                                                b, c], axis=2))
        self.ends = np.ascontiguousarray(np.stack([a.sum(1), b.sum(1), c.sum(1)], axis=1))
        self.full = np.ascontiguousarray(full)
        self.mu, self.nu, self.phi, self.p = mu, nu, float(phi), int(p)
        size = mu.angles.size + 1
        self.k = np.full(size, -1, dtype=np.int64)
        self.u = np.zeros(size)
        self.f = np.zeros(size)
        self.last = None
        self.calls = 0

    def __call__(self, alpha: float):
        """(C, C', C'') at alpha."""
        alpha = float(alpha)
        warm = self.last is not None and abs(alpha - self.last) < 1e-3
        dalpha = alpha - self.last if warm else 0.0
        self.calls += 1
        out = make_sweep_kernel()(self.p, self.mu.angles, self.mu.levels, alpha, self.phi,
                                  self.nu.masses, self.A,
                                  self.ends, self.full, self.nu.centers, self.nu.radii,
                                  self.k, self.u, self.f, warm, dalpha)
        self.last = alpha
        return out


def _newton_shift(fun, alpha: float, estimate: float, maxiter: int = 40,
                  secant: bool = False):
    """Minimum of the convex C from a close start ``alpha``: Newton on C' (``fun(a)`` =
    (C, C', C'')), safeguarded by the bracket of the slopes' signs (bisection when a step
    leaves it). Certified as ``_minimise_with_slope``: C(a) - min C <= |C'(a)| |b - a|
    for a bracket [a, b] of the minimiser, required below 8 eps C(a). Once Newton's step
    is well inside delta = 2 eps C / |C'|, the point at delta on the other side is
    evaluated (its slope must change sign), which closes the bracket.
    ``secant``: the slope of C' from the last two points instead of C'' (p = 1, where
    C'' is a sum of jumps and C' only piecewise smooth).
    Returns (value, argmin), or None when not certified in ``maxiter`` passes (the bracket
    is then in ``_newton_shift.bracket``)."""
    lo = hi = None  # (a, C, C') with C' < 0, > 0
    best = prev = None
    a = alpha
    for _ in range(maxiter):
        c, s, d2 = fun(a)
        if best is None or c < best[0]:
            best = (c, a)
        if s == 0:
            return c, a
        if s < 0 and (lo is None or a > lo[0]):
            lo = (a, c, s)
        elif s > 0 and (hi is None or a < hi[0]):
            hi = (a, c, s)
        if lo is not None and hi is not None:
            width = hi[0] - lo[0]
            for pt in (lo, hi):  # the certificate of each end of the bracket
                if abs(pt[2]) * width <= 8 * EPS * abs(pt[1]):
                    return pt[1], pt[0]
            if width <= 4 * EPS * (1 + abs(lo[0])):
                return best
        if secant and prev is not None and s != prev[1]:
            d2 = (s - prev[1]) / (a - prev[0])  # C' is only piecewise smooth (p = 1)
        prev = (a, s)
        step = -s / d2 if d2 > 0 and np.isfinite(d2) else np.nan
        delta = 2 * EPS * max(estimate, c) / abs(s)
        if np.isfinite(step) and 2 * abs(step) <= delta:
            nxt = a + np.sign(step) * delta  # close the bracket on the other side
        elif np.isfinite(step):
            nxt = a + step
        else:
            nxt = a - np.sign(s) * 1e-6
        if lo is not None and hi is not None and not lo[0] < nxt < hi[0]:
            nxt = 0.5 * (lo[0] + hi[0])
        elif lo is not None and nxt <= lo[0] or hi is not None and nxt >= hi[0]:
            nxt = a - np.sign(s) * 2 * abs(nxt - a)
        a = nxt
    _newton_shift.bracket = (lo[0] if lo else -1.0, hi[0] if hi else 1.0)
    return None


def _atoms_panels_shift(mu: CircleMeasure, nu: CircleMeasure, phi: float, p: int):
    """min over alpha of C(alpha) for atoms mu against panels nu rotated by phi (p = 1, 2),
    and the argmin. Above ``COARSE_ABOVE`` atoms the shift is first located on a coarse
    copy of mu (``COARSE_GROUPS`` atoms: consecutive groups at their means; measured
    |alpha_coarse - alpha| ~ 1e-7 at n = 1e6), then Newton on the full problem from it
    (``_newton_shift``: typically 3 passes, each O(n + P)); below, or when Newton is not
    certified, the cutting-plane/secant minimiser on the same passes."""
    fun = _PanelSweep(mu, nu, phi, p)
    lo, hi = -1.0, 1.0
    if mu.angles.size > COARSE_ABOVE:
        idx = np.linspace(0, mu.angles.size, COARSE_GROUPS + 1).astype(int)[:-1]
        w = np.add.reduceat(mu.weights, idx)
        coarse = CircleMeasure.from_points(
            np.add.reduceat(mu.weights * mu.angles, idx) / w, w)
        estimate, guess = _atoms_panels_shift(coarse, nu, phi, p)
        res = _newton_shift(fun, guess, estimate, secant=p == 1)
        if res is not None:
            return res
        lo, hi = _newton_shift.bracket
    return _minimise_with_slope(lambda a: fun(a)[:2], lo, hi, smooth=True)


# ---- minimisers -------------------------------------------------------------------
def _minimise_with_slope(fun, lo: float = -1.0, hi: float = 1.0, maxiter: int = 200,
                         smooth: bool = False):
    """Minimum of a convex function given (value, subgradient) by cutting planes and
    secant steps in a bracket; returns (value, argmin). Certified: stops when the best
    value is within 8 eps of the tangent lower bound, or the bracket is at round-off.
    ``smooth``: secant steps through the last two points (superlinear on a C^1 function,
    ~6-10 evaluations) instead of alternating with cutting planes (which finish a
    piecewise-linear function exactly)."""
    flo, slo = fun(lo)
    step = hi - lo
    while slo >= 0:  # the bracket grows (doubling) until the slopes enclose 0
        if slo == 0:
            return flo, lo
        hi, fhi, shi = lo, flo, slo
        lo -= step
        step *= 2
        flo, slo = fun(lo)
    fhi, shi = fun(hi) if hi > lo else (fhi, shi)
    while shi < 0:
        lo, flo, slo = hi, fhi, shi
        hi += step
        step *= 2
        fhi, shi = fun(hi)
    best, arg = (flo, lo) if flo <= fhi else (fhi, hi)
    width = hi - lo
    last = [(lo, slo), (hi, shi)]
    for it in range(maxiter):
        xk = (fhi - flo + slo * lo - shi * hi) / (slo - shi)
        lower = flo + slo * (xk - lo)
        if best - lower <= 8 * EPS * abs(best) or hi - lo <= 4 * EPS * (1 + abs(lo)):
            break
        (x1, s1), (x2, s2) = last
        secant = x2 - s2 * (x2 - x1) / (s2 - s1) if s2 != s1 else np.nan
        if it % 3 == 2 and hi - lo > 0.5 * width:
            x = 0.5 * (lo + hi)  # no step has halved the bracket in three: bisect
        elif smooth and lo < secant < hi:
            x = secant
        elif it % 2:
            x = lo - slo * (hi - lo) / (shi - slo)  # secant on the slope
        else:
            x = xk  # cutting plane: exact once one kink is left
        if it % 3 == 2:
            width = hi - lo
        x = min(max(x, lo + 0.25 * EPS * (hi - lo)), hi - 0.25 * EPS * (hi - lo))
        if not lo < x < hi:
            break
        f, s = fun(x)
        last = [last[1], (x, s)]
        if f < best:
            best, arg = f, x
        if s == 0:
            break
        if s < 0:
            lo, flo, slo = x, f, s
        else:
            hi, fhi, shi = x, f, s
    return best, arg


def _shift_solve(mu: CircleMeasure, nu: CircleMeasure, p: float, phi: float = 0.0):
    """min over alpha of C(alpha)^{1/p} for nu rotated by phi: ``(W_p, argmin)``.

    Atoms / atoms: ``circle_atoms.shift_minimum``. Atoms / density, p = 1, 2: the
    compiled moment sweep. Otherwise Gauss-Legendre (``circle_quadrature.gl_scaled``, the
    powers relative to the largest difference, so any p): ``slope_root`` on the slope,
    stopped when the better end's value is within 4 eps of the lower bound its tangent
    gives over the bracket (or the bracket is at round-off); with (nearly) empty cells,
    where 1/rho(G^{-1}) cannot be integrated (measured: von Mises 30 gave C' = -3.8 for
    a finite-difference -14.3, and a wrong minimum), bounded Brent on log C (C is
    convex, so log C is unimodal).
    """
    if mu.kind == "atoms" and nu.kind == "atoms":
        return shift_minimum(mu, nu, p, phi)
    if nu.kind == "atoms":
        mu, nu, phi = nu, mu, -phi  # W(mu, R_phi nu) = W(nu, R_-phi mu): nu is a density
    if p in (1, 2) and mu.kind == "atoms":
        value, arg = _atoms_panels_shift(mu, nu, phi, int(p))
        return float(max(value, 0.0) ** (1 / p)), arg

    def ev(a):
        return gl_scaled(mu, nu, a, phi, p)

    def log_c(triple):
        return triple[0] + np.log(triple[1]) if triple[1] > 0 else -np.inf

    dens = _density(nu, nu.centers)
    if dens.min() >= SLOPE_DENSITY_RATIO * dens.max() and np.isfinite(ev(0.0)[2]):
        def certified(lo, plo, hi, phi_):
            # At the end b with the smaller C: C(x*) >= C(b) - |C'(b)| (hi - lo) for the
            # minimiser x* in [lo, hi] (convexity), in b's own scale (no underflow).
            _, value, slope = plo if log_c(plo) <= log_c(phi_) else phi_
            return True if abs(slope) * (hi - lo) <= 4 * EPS * value else None

        lo, plo, hi, phi_, found = slope_root(ev, stop=certified, tol=4 * EPS)
        if found is not None and found[0] == "zero":
            return 0.0, float(found[1])
        x, t = (lo, plo) if log_c(plo) <= log_c(phi_) else (hi, phi_)
        return float(np.exp(log_c(t) / p)), float(x)
    res = minimize_scalar(lambda a: log_c(ev(a)), bounds=(-1.0, 1.0), method="bounded",
                          options={"xatol": 1e-12, "maxiter": 500})
    return float(np.exp(res.fun / p)), float(res.x)


def _shift_cost(mu: CircleMeasure, nu: CircleMeasure, p: float, phi: float = 0.0):
    """min over alpha of C(alpha) for nu rotated by phi (W_p^p), and the argmin (W_p^p
    under- or overflows at large p: the solvers work with W_p, ``_shift_solve``)."""
    dist, arg = _shift_solve(mu, nu, p, phi)
    return dist**p, arg


def _shift_distance(mu: CircleMeasure, nu: CircleMeasure, p: float,
                    phi: float = 0.0) -> float:
    """W_p(mu, R_phi nu) (not its p-th power)."""
    return _shift_solve(mu, nu, p, phi)[0]


def _rotation_w2_atoms(mu: CircleMeasure, nu: CircleMeasure) -> float:
    """W_2^2 modulo rotation between atoms, exact: min over the breakpoints alpha in
    [0, 1) of V(alpha) = C(alpha) - mean(alpha)^2 (see the module docstring).

    The right slope of C jumps where the level V_j (between y_j and y_{j+1}) crosses U_i
    (between x_i and x_{i+1}), at alpha = V_j - U_i mod 1, by the Monge difference
    2 (x_{i+1} - x_i)(y_{j+1} - y_j) (the gaps, wrapping across 2 pi); C between
    breakpoints follows from the slopes. That running sum locates the minimiser; C is
    then re-evaluated exactly (``_atoms_cost``) at the 8 best breakpoints, so the value
    returned is exact to round-off. O(n m log(n m)) time, O(n m) memory.
    """
    x, y = mu.angles, nu.angles
    gx = np.diff(np.concatenate([x, [x[0] + TWO_PI]]))
    gy = np.diff(np.concatenate([y, [y[0] + TWO_PI]]))
    alpha = np.mod(nu.levels[None, :] - mu.levels[:, None], 1.0).ravel()
    jump = (2 * gx[:, None] * gy[None, :]).ravel()
    alpha[alpha >= 1.0] = 0.0
    order = np.argsort(alpha, kind="stable")
    alpha, jump = alpha[order], jump[order]
    at0 = alpha <= 0.0  # already in the right slope at 0
    c0, s0 = _atoms_cost(mu, nu, 0.0, 0.0, 2.0)
    slope = s0 + np.cumsum(np.where(at0, 0.0, jump))
    # C at each breakpoint: C(0) plus the slope of each interval times its length.
    c = c0 + np.concatenate([[0.0], np.cumsum(slope[:-1] * np.diff(alpha))])
    mean_f = float(np.dot(mu.weights, x))
    mean_g = float(np.dot(nu.weights, y))

    def v(a, cval):
        return cval - (mean_f - mean_g - a * TWO_PI) ** 2

    cand = alpha[np.argsort(v(alpha, c))[:8]]
    return float(min(v(a, _atoms_cost(mu, nu, a, 0.0, 2.0)[0]) for a in cand))


def _mean_angle(m: CircleMeasure, k: int = 512) -> float:
    """The angle of the circular mean, from ``k`` quantiles (a starting point only)."""
    theta = m.quantile((np.arange(k) + 0.5) / k)
    return float(np.angle(np.mean(np.exp(1j * theta))))


def _rotation_w2_densities(mu: CircleMeasure, nu: CircleMeasure) -> float:
    """W_2^2 modulo rotation with a density among the two: for a shift alpha of the
    levels the best rotation is the mean difference of the quantiles, so the minimum is
    that of V(alpha) = C(alpha) - (int D_alpha)^2 over alpha in [0, 1) (as for atoms).
    V is not convex: ``ROTATION_GRID`` values of alpha, then bounded Brent on the cells
    of the three best. Cost ~ROTATION_GRID + 100 quadratures of C (each O(N) panels)."""
    if nu.kind == "atoms":
        mu, nu = nu, mu

    def v(alpha: float) -> float:
        value, _, mean = gl_cost(mu, nu, alpha, 0.0, 2.0, with_mean=True)
        return value - mean**2

    grid = np.arange(ROTATION_GRID) / ROTATION_GRID
    vals = np.array([v(a) for a in grid])
    h = 1.0 / ROTATION_GRID
    best = vals.min()
    for i in np.argsort(vals)[:3]:
        res = minimize_scalar(v, bounds=(grid[i] - h, grid[i] + h), method="bounded",
                              options={"xatol": 1e-12})
        best = min(best, float(res.fun))
    return best


def _rotation_search(mu: CircleMeasure, nu: CircleMeasure, p: float) -> float:
    """min over phi of W_p(mu, R_phi nu): ``ROTATION_GRID`` values of phi plus the two
    rotations that align the circular means, then bounded Brent around the three best grid
    values and each alignment. Cost (ROTATION_GRID + ~100) exact solves; the function of
    phi is not convex, so the result is the best local minimum found: global whenever the
    grid resolves the basins (spacing 2 pi / 64) or, for two concentrated measures whose
    basin is narrower than that, when the aligned means fall in it (a cluster against a
    cluster)."""
    grid = TWO_PI * np.arange(ROTATION_GRID) / ROTATION_GRID
    vals = np.array([_shift_distance(mu, nu, p, phi) for phi in grid])
    h = TWO_PI / ROTATION_GRID
    best = vals.min()
    delta = _mean_angle(nu) - _mean_angle(mu)
    centres = [grid[i] for i in np.argsort(vals)[:3]] + [delta, -delta]
    for c in centres:
        res = minimize_scalar(lambda f: _shift_distance(mu, nu, p, f),
                              bounds=(c - h, c + h), method="bounded",
                              options={"xatol": 1e-10})
        best = min(best, float(res.fun))
    return best


def circle_wasserstein(mu: CircleMeasure, nu: CircleMeasure, p: float = 2.0, *,
                       modulo_rotation: bool = False) -> float:
    """W_p(mu, nu) on S^1 with the geodesic cost (radians), exact (see the module
    docstring for the method, cost and accuracy of each pair of kinds).

    Args:
        mu, nu: ``CircleMeasure`` (atoms or densities).
        p: a real number in [1, ``arguments.P_MAX``] (1e4).
        modulo_rotation: the minimum over rotations of nu.

    Returns:
        W_p (not its p-th power).

    Raises:
        ConfigError: p not a real number in [1, P_MAX] (a ``ValueError``).
        TypeError: arguments that are not ``CircleMeasure``.
    """
    p = check_p(p)
    for m in (mu, nu):
        if not isinstance(m, CircleMeasure):
            raise TypeError(f"expected a CircleMeasure, got {type(m).__name__}")
    both_atoms = mu.kind == "atoms" and nu.kind == "atoms"
    if modulo_rotation:
        if both_atoms and p == 2 and mu.levels.size * nu.levels.size <= EXACT_ROTATION_MAX:
            value = _rotation_w2_atoms(mu, nu)
        elif p == 2 and not both_atoms:
            value = _rotation_w2_densities(mu, nu)
        else:
            return _rotation_search(mu, nu, p)
    elif both_atoms and p == 1:
        return _w1_atoms(mu, nu)
    else:
        return _shift_distance(mu, nu, p)
    return float(max(value, 0.0) ** (1 / p))


def circle_wasserstein_to_dirac(mu: CircleMeasure, angle: float, p: float = 2.0) -> float:
    """W_p(mu, delta_angle) = (int d(theta, angle)^p dmu)^{1/p}, exact.

    Atoms: the sum, O(n). Densities: Gauss-Legendre with ``GL_NODES`` nodes on each panel
    cut at the angle and its antipode (d is then linear: exact for the polynomial
    panels when p is an integer <= 2 GL_NODES - N - 1; for other p the integrand is
    analytic inside each piece except at the cut, error < 1e-13 measured for p = 1.5),
    O(P).
    """
    p = check_p(p)
    a = float(angle)
    if not np.isfinite(a):
        raise ValueError("angle must be finite")
    a = np.mod(a, TWO_PI)
    if mu.kind == "atoms":
        d = np.abs(mu.angles - a)
        d = np.minimum(d, TWO_PI - d)
        top = d.max()  # powers of d / top: no overflow or underflow at any p
        return float(top * np.dot(mu.weights, (d / top) ** p) ** (1 / p)) if top else 0.0
    cuts = np.unique(np.concatenate([mu.edges, [a, np.mod(a + np.pi, TWO_PI)]]))
    lo, hi = cuts[:-1], cuts[1:]
    x, w = np.polynomial.legendre.leggauss(GL_NODES)
    half = (hi - lo) / 2
    th = (lo + hi)[:, None] / 2 + half[:, None] * x
    d = np.abs(th - a)
    d = np.minimum(d, TWO_PI - d)
    rho = _density(mu, th.ravel()).reshape(th.shape)
    top = d.max()
    return float(top * max(np.sum(half * (((d / top) ** p * rho) @ w)), 0.0) ** (1 / p))
