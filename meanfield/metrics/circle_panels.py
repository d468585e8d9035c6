"""Atoms against the panels of a density on the circle, p = 1 and 2 (the atoms /
density case of ``circle_transport``, whose module docstring has the method, cost and
accuracy): C(alpha), C'(alpha) and C''(alpha) in one compiled pass over the n + 1
quantile points y_j = G^{-1}(U_j + alpha) (``make_sweep_kernel``, driven by
``PanelSweep``), and the minimum over the shift alpha (``atoms_panels_shift``: a coarse
pre-solve above ``COARSE_ABOVE`` atoms, then Newton, else cutting planes, both from
``circle_minimise``). ``atoms_panels_cost`` is the reference evaluation (quantiles and
moments from scratch, ``make_moment_kernel``), kept for the tests.
"""
from __future__ import annotations

import functools

import numpy as np

from meanfield.metrics.circle_measures import CircleMeasure
from meanfield.metrics.circle_minimise import minimise_with_slope, newton_shift
from solvers.signals import DeferredSignals

COARSE_ABOVE = 50_000  # atoms vs density: a coarse pre-solve above this many atoms
COARSE_GROUPS = 4096
SWEEP_CALL = 1 << 20  # points of one compiled call of the sweep (~100-300 ns a point)


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


def panel_moments(nu: CircleMeasure):
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


def atoms_panels_cost(mu: CircleMeasure, nu: CircleMeasure, alpha: float, phi: float,
                       p: int = 2):
    s = np.concatenate([[0.0], mu.levels]) + alpha
    lap = np.ceil(s) - 1
    frac = np.clip(s - lap, 0.0, 1.0)
    k, u, _ = nu.panel_quantile(frac)
    ic0, ic1, full = panel_moments(nu)
    return make_moment_kernel()(p, mu.angles, k, u, lap.astype(np.int64), phi, nu.coef,
                                ic0, ic1, full, nu.centers, nu.radii)


@functools.cache
def make_sweep_kernel():
    """Compile ``sweep(...)``: C(alpha), C'(alpha) and C''(alpha) for atoms x against
    panels in one pass over the n + 1 quantile points y_j = G^{-1}(U_j + alpha), p = 1
    or 2 (see ``PanelSweep``). The points ``j0 .. j1`` of that pass: ``state`` (the sums
    and what the pass carries from a point to the next, zeros with ``state[3] = -1`` at
    the start) is read and written back, so passes in several calls make the same
    operations in the same order as one (``PanelSweep.__call__``)."""
    import numba

    # Module globals, not closure cells (numba's disk cache, as make_moment_kernel).
    # _sweep_newton and _sweep_curvature are pieces of sweep inlined into it (the same
    # operations in the same order: bitwise the same C, C', C''; measured no slower at n =
    # 1e6); the cost of the mass between two quantile points stays in sweep's body: as a
    # helper, inlined or called, it made the sweep 1.5-3 x slower (measured at n = 1e6).
    global _sweep_eval, _sweep_piece, _sweep_newton, _sweep_curvature

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

    @numba.njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
    def _sweep_newton(A, k, u, tau):
        # F_loc(u) = tau on panel k by Newton from u, safeguarded by bisection on
        # [-1, 1]: the root and F_loc, F_loc', F_loc'', int F_loc, int u F_loc there,
        # then the point and F_loc of the last series evaluation (the next level's
        # Taylor step starts from them).
        lo, hi = -1.0, 1.0
        f, fp, fpp, i0, i1 = 0.0, 0.0, 0.0, 0.0, 0.0
        ue, fe = u, 0.0
        for _ in range(100):
            f, fp, fpp, i0, i1 = _sweep_eval(A, k, u)
            ue, fe = u, f
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
        return u, f, fp, fpp, i0, i1, ue, fe

    @numba.njit(cache=True, error_model="numpy", boundscheck=False, inline="always")
    def _sweep_curvature(curv, p, xj, xl, y, r, fp):
        # curv plus the term of y_j in C'' = sum_j (dy_j / dalpha) [c'(x_j - y_j) -
        # c'(x_{j-1} - y_j)], the derivative of y_j being radius / F_loc'
        dy = r / fp if fp > 0 else np.inf
        if p == 2:
            curv += 2 * dy * (xj - xl)
        else:
            sj = 1.0 if xj > y else (-1.0 if xj < y else 0.0)
            sl = 1.0 if xl > y else (-1.0 if xl < y else 0.0)
            if sj != sl:
                curv += dy * (sj - sl)
        return curv

    @numba.njit(cache=True, error_model="numpy", boundscheck=False)
    def sweep(p, x, levels, alpha, phi, masses, A, ends, full, centers, radii,
              kq, uq, fq, warm, dalpha, j0, j1, state):
        n = x.size
        npan = A.shape[0]
        two_pi = 2 * np.pi
        total, slope, curv = state[0], state[1], state[2]
        # the last evaluation: panel, point, F_loc and its two derivatives there
        kprev, uprev, tprev = int(state[3]), state[4], state[5]
        fprev, gprev = state[6], state[7]
        # the previous point's panel, local coordinate, lap, angle and end values
        ka, ua, lapa, ya = int(state[8]), state[9], int(state[10]), state[11]
        pa, i0a, i1a = state[12], state[13], state[14]
        for j in range(j0, j1):
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
            u, f, fp, fpp, i0, i1, uprev, tprev = _sweep_newton(A, k, u, tau)
            kprev, fprev, gprev = k, fp, fpp
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
            if j < n:  # C'' (x_{-1} = x_{n-1} - 2 pi)
                xl = x[j - 1] if j > 0 else x[n - 1] - two_pi
                curv = _sweep_curvature(curv, p, x[j], xl, y, r, fp)
            ka, ua, lapa, ya, pa, i0a, i1a = k, u, lap, y, f, i0, i1
        state[0], state[1], state[2] = total, slope, curv
        state[3], state[4], state[5], state[6], state[7] = kprev, uprev, tprev, fprev, gprev
        state[8], state[9], state[10], state[11] = ka, ua, lapa, ya
        state[12], state[13], state[14] = pa, i0a, i1a
        return total, slope, curv

    return sweep


class PanelSweep:
    """C(alpha), C'(alpha), C''(alpha) of atoms ``mu`` against panels ``nu`` (rotated by
    phi), p = 1 or 2, by ``make_sweep_kernel``: one pass over the n + 1 levels, each
    quantile a safeguarded Newton solve on the panel series started from the solve of
    the same level at the last shift (one series evaluation a point when the shift moved
    little) or, the first time, from the previous level's. The per-panel data and the
    n + 1 solves are kept between calls."""

    def __init__(self, mu: CircleMeasure, nu: CircleMeasure, phi: float, p: int):
        from numpy.polynomial import chebyshev as ch

        ic0, ic1, full = panel_moments(nu)
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
        sweep, state, points = make_sweep_kernel(), np.zeros(15), self.mu.angles.size + 1
        state[3] = -1.0  # no last evaluation

        def part(j0: int, j1: int):
            return sweep(self.p, self.mu.angles, self.mu.levels, alpha, self.phi,
                         self.nu.masses, self.A, self.ends, self.full, self.nu.centers,
                         self.nu.radii, self.k, self.u, self.f, warm, dalpha, j0, j1, state)

        if points <= SWEEP_CALL:
            out = part(0, points)
        else:  # calls of ~0.1-0.3 s (one pass was 3.1 s at n = 1e7), Ctrl-C between
            with DeferredSignals() as signals:
                for j0 in range(0, points, SWEEP_CALL):
                    out = part(j0, min(points, j0 + SWEEP_CALL))
                    signals.check()
        self.last = alpha
        return out


def atoms_panels_shift(mu: CircleMeasure, nu: CircleMeasure, phi: float, p: int):
    """min over alpha of C(alpha) for atoms mu against panels nu rotated by phi (p = 1, 2),
    and the argmin. Above ``COARSE_ABOVE`` atoms the shift is first located on a coarse
    copy of mu (``COARSE_GROUPS`` atoms: consecutive groups at their means; measured
    |alpha_coarse - alpha| ~ 1e-7 at n = 1e6), then Newton on the full problem from it
    (``newton_shift``: typically 3 passes, each O(n + P)); below, or when Newton is not
    certified, the cutting-plane/secant minimiser on the same passes."""
    fun = PanelSweep(mu, nu, phi, p)
    lo, hi = -1.0, 1.0
    if mu.angles.size > COARSE_ABOVE:
        idx = np.linspace(0, mu.angles.size, COARSE_GROUPS + 1).astype(int)[:-1]
        w = np.add.reduceat(mu.weights, idx)
        coarse = CircleMeasure.from_points(
            np.add.reduceat(mu.weights * mu.angles, idx) / w, w)
        estimate, guess = atoms_panels_shift(coarse, nu, phi, p)
        res = newton_shift(fun, guess, estimate, secant=p == 1)
        if res is not None:
            return res
        lo, hi = newton_shift.bracket
    return minimise_with_slope(lambda a: fun(a)[:2], lo, hi, smooth=True)
