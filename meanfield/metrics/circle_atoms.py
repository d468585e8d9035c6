"""Exact W_p between two weighted sets of angles on the circle, for every finite p >= 1
(the atoms / atoms case of ``circle_transport``; its module docstring has the
formulation): W_p^p = min_alpha C(alpha), C(alpha) = int_0^1 |F^{-1}(t) - G^{-1}(t +
alpha)|^p dt, convex and piecewise linear in the mass shift alpha.

Why this is not a plain minimisation of C in floating point. W_p^p spans a huge range:
between x and x + s (s small) the minimum is s^p, while C one breakpoint away is of the
order of (the gap between atoms)^p, and a piece of the plan that should have zero length
comes out of the round-off of the cumulative weights with a length ~1e-16. Its cost
1e-16 d^p swamps s^p as soon as (d / s)^p > 1e16: measured before this module, W_4
between 100 angles and the same shifted by 1e-5 was 2.1e-5, W_16 with 1000 angles and a
shift 1e-3 was 0.164, and p >= 400 gave NaN (d^p overflowed); even W_2 was 41 x the
shift at s = 1e-11. Three things make the result exact:

- the levels (cumulative weights) are correctly rounded (``CircleMeasure.from_points``:
  i / n for equal weights, a compensated sum otherwise), so equal cumulative masses on
  the two sides are equal floats to within one or two units in the last place;
- the minimiser uses only the sign structure of C: cutting planes on (C, C') held as
  ``exp(M) * (value, slope)`` with M the largest p log|d| of the evaluation (no overflow or
  underflow at any p), bisection as a safeguard, until the bracket of the minimising
  breakpoint is 2 eps wide (alpha lives in [-1, 1]);
- C is evaluated at the end of that bracket with the pieces of length below ``SNAP`` =
  8 eps (mass below the round-off of the levels: the bracket width plus the rounding of
  the levels) given no cost: they are the pieces that vanish at the breakpoint, and
  W_p = exp(M / p) (sum_j l_j exp(p log|d_j| - M))^{1/p}.

So a plan piece lighter than 8 eps ~ 1.8e-15 of the total mass is treated as a tie, at any
p: the price of reading cumulative weights given in floating point as exact ties where
they are equal to round-off (a rigid shift, equal weights on both sides). Checked against
``ot.emd2`` on the circle's cost matrix at p = 1.5, 2, 3, 4, 8 (random weighted instances)
and against the closed form of a rigid shift (the identity matching) up to p = 1000
(``tests/meanfield/metrics/test_circle_exact_p.py``).

Cost: ~10-40 evaluations of C, each O((n + m) log(n + m)) (a merge of the levels).
"""
from __future__ import annotations

import functools

import numpy as np

from meanfield.metrics.circle_measures import TWO_PI, CircleMeasure
from solvers.signals import DeferredSignals

EPS = np.finfo(float).eps
SNAP = 8 * EPS  # plan pieces lighter than this are ties (see the module docstring)
SWEEP_CALL = 1 << 21  # breakpoints of one compiled call of the sweep (sweep_calls)
MAXITER = 400


@functools.cache
def make_sweep_kernel():
    """Compile ``sweep(U, tg, x, y, iy0, k, phi, p, scale, snap, find_max, steps,
    state)``: ``steps`` more breakpoints of one pass over the merged breakpoints (the
    order of ``atoms_pieces``), without storing them; ``state`` = [i, j, last t, last g,
    max |z|, value, slope], zeros at the start, is read and written back, so passes in
    several calls add in the order of one (``sweep_calls``). ``find_max``: the state
    gathers max |z| over the live pieces; else sum l (|z| / scale)^p and sum coef (|z| /
    scale)^p. ``snap > 0``: a breakpoint closer than snap to the last one kept is merged
    into it (its piece has no length and no cost), and only the pieces kept are live;
    else live means length > 0 or coef != 0."""
    import numba

    @numba.njit(cache=True, error_model="numpy", boundscheck=False)
    def sweep(U, tg, x, y, iy0, k, phi, p, scale, snap, find_max, steps, state):
        n, m = U.size, tg.size
        two_pi = 2 * np.pi
        i, j = int(state[0]), int(state[1])
        prev_t, prev_g = state[2], int(state[3])
        zmax, value, slope = state[4], state[5], state[6]
        for _ in range(steps):
            if i < m and (j >= n or tg[i] <= U[j]):
                cur, g = tg[i], 1
            else:
                cur, g = U[j], 0
            iy = iy0 + i
            lap = iy // m
            iy -= lap * m
            z = abs(x[j] - (y[iy] + (lap + k) * two_pi + phi))
            length = cur - prev_t
            coef = prev_g - g
            if snap > 0:
                # A breakpoint within snap of the last kept one is merged into it (a
                # tie): the lengths still telescope to 1.
                live = length >= snap
                if live:
                    prev_t = cur
            else:
                live = length > 0 or coef != 0
                prev_t = cur
            if live:
                if find_max:
                    zmax = max(zmax, z)
                else:
                    r = z / scale
                    c = r * r if p == 2.0 else r**p
                    value += length * c
                    if snap == 0:
                        slope += coef * c
            if g:
                i += 1
            else:
                j += 1
            prev_g = g
        state[0], state[1], state[2], state[3] = i, j, prev_t, prev_g
        state[4], state[5], state[6] = zmax, value, slope

    return sweep


def sweep_calls(args: tuple, scale: float, snap: float, find_max: bool
                ) -> tuple[float, float, float]:
    """One pass of ``make_sweep_kernel``'s sweep over the ``n + m`` breakpoints of
    ``args`` (``U, tg, x, y, iy0, k, phi, p``) in compiled calls of ``SWEEP_CALL``
    breakpoints (0.1-0.2 s a call at the measured ~50-160 ns a breakpoint; one call was
    1.7 s at n = 1e7), a Ctrl-C raised between them (``solvers.signals``): returns (max
    |z|, 0, 0) with ``find_max``, else (scale, value, slope)."""
    sweep, state = make_sweep_kernel(), np.zeros(7)
    total = args[0].size + args[1].size
    if total <= SWEEP_CALL:
        sweep(*args, scale, snap, find_max, total, state)
    else:
        with DeferredSignals() as signals:
            for done in range(0, total, SWEEP_CALL):
                sweep(*args, scale, snap, find_max, min(SWEEP_CALL, total - done), state)
                signals.check()
    return (state[4], 0.0, 0.0) if find_max else (scale, state[5], state[6])


def _rolled_levels(mu: CircleMeasure, nu: CircleMeasure, alpha: float):
    """(k, the type-0 breakpoints (G's levels minus beta, rolled into (0, 1], sorted),
    the index in nu of the atom before the first of them)."""
    V = nu.levels
    m = V.size
    k, beta = split_shift(alpha)
    tg = np.concatenate([[0.0], V[:-1]]) - beta
    r = int(np.searchsorted(tg, 0.0, side="right"))  # tg <= 0 wraps to the end
    # The wrapped ones follow the others (up to a rounding of the + 1, undone here).
    tg = np.maximum.accumulate(np.concatenate([tg[r:], tg[:r] + 1.0]))
    return k, tg, r - 1


def split_shift(alpha: float):
    """alpha = k + beta with k an integer and 0 <= beta < 1 (alpha - floor(alpha) rounds
    to 1 for alpha = -1e-17)."""
    k = np.floor(alpha)
    beta = alpha - k
    if beta >= 1.0:
        k, beta = k + 1, 0.0
    return k, beta


def atoms_pieces(mu: CircleMeasure, nu: CircleMeasure, alpha: float, phi: float):
    """The pieces of the monotone plan at mass shift ``alpha`` (nu rotated by phi).

    The breakpoints in t in (0, 1] of t -> G^{-1}(t + alpha) (type 0) and of F^{-1}
    (type 1, ending with U_n = 1) are merged; ties put type 0 first, which is the order
    just after alpha, so the slope read off the pieces is the right derivative.

    Returns:
        ``(z, length, coef)``: on each piece the difference of the quantiles (F^{-1} -
        G^{-1}, not reduced mod 2 pi), its length in t, and its coefficient in C'(alpha)
        (C = sum length * c(z), C'_+ = sum coef * c(z)), plus ``(t, typ, ix, iy, lap)``
        as the fourth item (the merged breakpoints, whether each is one of F^{-1}'s,
        the atom indices).
    """
    U, V = mu.levels, nu.levels
    n, m = U.size, V.size
    k, beta = split_shift(alpha)
    tg = np.concatenate([[0.0], V[:-1]]) - beta
    r = int(np.searchsorted(tg, 0.0, side="right"))  # tg <= 0 wraps to the end
    tg = np.concatenate([tg[r:], tg[:r] + 1.0])
    t = np.empty(n + m)
    is_f = np.zeros(n + m, np.int64)
    if r == 0 or r == m or tg[m - r - 1] <= tg[m - r]:
        # Merge of two sorted lists, ties type 0 first (the order just after alpha).
        ia = np.arange(m) + np.searchsorted(U, tg, side="left")
        ib = np.arange(n) + np.searchsorted(tg, U, side="right")
        t[ia], t[ib], is_f[ib] = tg, U, 1
    else:  # the wrap rounded out of order: sort
        tt = np.concatenate([tg, U])
        typ = np.concatenate([np.zeros(m, np.int8), np.ones(n, np.int8)])
        order = np.lexsort((typ, tt))
        t, is_f = tt[order], typ[order].astype(np.int64)
    ix = np.cumsum(is_f) - is_f  # F^{-1} breakpoints strictly before: the atom index
    iy = np.searchsorted(V, beta, side="right") + np.cumsum(1 - is_f) - (1 - is_f)
    lap, iy = np.divmod(iy, m)
    z = mu.angles[ix] - (nu.angles[iy] + (lap + k) * TWO_PI + phi)
    length = np.diff(t, prepend=0.0)
    g = 1 - is_f  # moving breakpoints: a piece ending at one shrinks, the next grows
    coef = np.concatenate([[0], g[:-1]]) - g
    return z, length, coef, (t, is_f, ix, iy, lap)


def atoms_cost(mu: CircleMeasure, nu: CircleMeasure, alpha: float, phi: float,
               p: float):
    """C(alpha) and its right derivative in plain floating point (moderate p and
    distances: the p = 2 rotation enumeration)."""
    z, length, coef, _ = atoms_pieces(mu, nu, alpha, phi)
    c = z * z if p == 2 else np.abs(z) ** p
    return float(np.dot(length, c)), float(np.dot(coef, c))


def w1_atoms(mu: CircleMeasure, nu: CircleMeasure) -> float:
    """W1 = min_a int_0^{2 pi} |F - G - a| ([RDG11]): a = weighted median of F - G.
    O((n + m) log(n + m)), exact to round-off."""
    z = np.concatenate([mu.angles, nu.angles])
    order = np.argsort(z, kind="stable")
    z = z[order]
    dm = np.concatenate([mu.weights, -nu.weights])[order]
    d = np.cumsum(dm)  # F - G just after each merged atom
    length = np.diff(np.concatenate([z, [TWO_PI + z[0]]]))  # the last arc wraps to z_0
    d[-1] = 0.0  # after all atoms F - G = 1 - 1 (the wrapping arc, where it is also 0)
    o = np.argsort(d, kind="stable")
    cum = np.cumsum(length[o])
    med = d[o][np.searchsorted(cum, 0.5 * cum[-1])]
    return float(np.dot(length, np.abs(d - med)))


def _scaled(mu: CircleMeasure, nu: CircleMeasure, alpha: float, phi: float, p: float,
            snap: float = 0.0):
    """``(M, value, slope)`` with C(alpha) = exp(M) value and C'_+(alpha) = exp(M) slope
    (M = p log of the largest |z| of a live piece; -inf when C = 0). ``snap > 0``: the
    pieces shorter than ``snap`` left out, and no slope."""
    k, tg, iy0 = _rolled_levels(mu, nu, alpha)
    args = (mu.levels, tg, mu.angles, nu.angles, iy0, float(k), float(phi), float(p))
    zmax = sweep_calls(args, 1.0, float(snap), True)[0]
    if zmax == 0:
        return -np.inf, 0.0, 0.0
    _, value, slope = sweep_calls(args, zmax, float(snap), False)
    return p * np.log(zmax), value, slope


def slope_key(triple) -> float:
    """asinh(C'_+) from a scaled triple: nondecreasing in C'_+ and never overflowing,
    so a root finder interpolating it meets slopes of any magnitude at one scale (tiny
    slopes underflow to 0: their sign is read from the triple)."""
    big, _, slope = triple
    if slope == 0 or big == -np.inf:
        return 0.0
    log_abs = big + np.log(abs(slope))
    if log_abs > 30:  # asinh(y) = log(2 |y|) to round-off here
        return float(np.sign(slope) * (log_abs + np.log(2.0)))
    return float(np.arcsinh(np.sign(slope) * np.exp(log_abs)))


def _breakpoints_between(mu: CircleMeasure, nu: CircleMeasure, lo: float, hi: float,
                         limit: int):
    """The distinct breakpoints alpha = V'_b - U'_a + integer of C in [lo, hi] (widened
    by 4 eps; values within 4 eps are one), sorted, or None when more than ``limit``
    pairs cross there."""
    vp = np.concatenate([[0.0], nu.levels[:-1]])
    up = np.concatenate([[0.0], mu.levels[:-1]])
    shifts = np.arange(np.floor(-hi) - 1, np.ceil(1 - lo) + 1)
    uext = (up[None, :] + shifts[:, None]).ravel()  # sorted: up in [0, 1)
    first = np.searchsorted(uext, vp - hi - 4 * EPS, side="left")
    last = np.searchsorted(uext, vp - lo + 4 * EPS, side="right")
    count = last - first
    if count.sum() > limit:
        return None
    rep = np.repeat(np.arange(vp.size), count)
    idx = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count) \
        + np.repeat(first, count)
    cand = np.sort(vp[rep] - uext[idx])
    if cand.size == 0:
        return cand
    keep = np.concatenate([[True], np.diff(cand) > 4 * EPS])
    return cand[keep]


def snapped_distance(mu: CircleMeasure, nu: CircleMeasure, alpha: float, phi: float,
                     p: float) -> float:
    """C(alpha)^{1/p} with plan pieces shorter than ``SNAP`` given no cost (the pieces
    that vanish at the breakpoint next to alpha), scaled so that no power overflows."""
    big, value, _ = _scaled(mu, nu, alpha, phi, p, snap=SNAP)
    if big == -np.inf:
        return 0.0
    return float(np.exp(big / p) * value ** (1.0 / p))


def slope_root(ev, lo: float = -1.0, hi: float = 1.0, stop=None,
               tol: float = 2 * EPS):
    """Bracket the minimiser of a convex C of alpha from scaled triples ``ev(alpha) =
    (M, value, slope)`` (C = exp(M) value, C'_+ = exp(M) slope): the bracket is grown
    from [lo, hi] until the slopes change sign, then Illinois (modified regula falsi) on
    ``slope_key``, safeguarded by bisection, until it is ``tol`` wide, C = 0 at a point,
    or ``stop(lo, plo, hi, phi)`` returns something other than None.

    Returns:
        ``(lo, plo, hi, phi, found)``: the bracket (slope < 0 at lo, >= 0 at hi) with
        its triples, and ``found``: ``("zero", x)`` when C(x) = 0, ``("stop", value)``
        with stop's value, or None.
    """
    plo, phi_ = ev(lo), ev(hi)
    step = hi - lo
    for _ in range(64):  # grow the bracket until the slope is negative at lo
        if plo[2] < 0 or plo[0] == -np.inf:
            break
        hi, phi_ = lo, plo
        lo -= step
        step *= 2
        plo = ev(lo)
    for _ in range(64):
        if phi_[2] >= 0 or phi_[0] == -np.inf:
            break
        lo, plo = hi, phi_
        hi += step
        step *= 2
        phi_ = ev(hi)
    for x, px in ((lo, plo), (hi, phi_)):
        if px[0] == -np.inf:
            return lo, plo, hi, phi_, ("zero", x)
    flo, fhi = slope_key(plo), slope_key(phi_)
    width, side = hi - lo, 0
    for it in range(MAXITER):
        if hi - lo <= tol:
            break
        if stop is not None:
            found = stop(lo, plo, hi, phi_)
            if found is not None:
                return lo, plo, hi, phi_, ("stop", found)
        x = (lo * fhi - hi * flo) / (fhi - flo) if fhi != flo else np.nan
        if (it % 3 == 2 and hi - lo > 0.5 * width) or not lo < x < hi:
            x = 0.5 * (lo + hi)  # no step has halved the bracket in three: bisect
        if it % 3 == 2:
            width = hi - lo
        px = ev(x)
        if px[0] == -np.inf:  # C(x) = 0: the minimum
            return lo, plo, hi, phi_, ("zero", x)
        fx = slope_key(px)  # may underflow to 0: the decision reads the sign itself
        if px[2] < 0:
            lo, plo, flo = x, px, fx
            if side == -1:
                fhi *= 0.5
            side = -1
        else:
            hi, phi_, fhi = x, px, fx
            if side == 1:
                flo *= 0.5
            side = 1
    return lo, plo, hi, phi_, None


def shift_minimum(mu: CircleMeasure, nu: CircleMeasure, p: float, phi: float = 0.0):
    """min over alpha of C(alpha)^{1/p} for two atomic measures, nu rotated by phi:
    ``(W_p, argmin)``, exact at every finite p (see the module docstring).

    ``slope_root`` on alpha in [-1, 1] (where the minimisers lie) until few breakpoints
    are left in the bracket; they are listed and the minimising one found among them by
    bisection on their midpoints."""
    n_pairs = mu.levels.size * nu.levels.size
    limit = 8 * (mu.levels.size + nu.levels.size) + 1024

    def stop(lo, _plo, hi, _phi):
        if n_pairs * (hi - lo) <= limit or hi - lo <= 1e-9:
            cand = _breakpoints_between(mu, nu, lo, hi, limit)
            if cand is not None and 0 < cand.size <= 256:
                return cand
        return None

    lo, _, hi, _, found = slope_root(lambda a: _scaled(mu, nu, a, phi, p), stop=stop)
    if found is not None and found[0] == "zero":
        return 0.0, float(found[1])
    if found is not None:
        # The minimiser is the first breakpoint after which the slope is >= 0; slopes
        # read between breakpoints (no tie to round either way).
        cand = found[1]
        i, j = 0, cand.size - 1
        while i < j:
            mid = (i + j) // 2
            if _scaled(mu, nu, 0.5 * (cand[mid] + cand[mid + 1]), phi, p)[2] >= 0:
                j = mid
            else:
                i = mid + 1
        return snapped_distance(mu, nu, cand[i], phi, p), float(cand[i])
    # The minimising breakpoint is in (lo, hi], within 2 eps of both ends.
    d_hi = snapped_distance(mu, nu, hi, phi, p)
    d_lo = snapped_distance(mu, nu, lo, phi, p)
    return (d_hi, hi) if d_hi <= d_lo else (d_lo, lo)
