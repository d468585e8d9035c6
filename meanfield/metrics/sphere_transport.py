"""Optimal transport on the sphere S^{d-1} (d = 3: S^2) with the geodesic cost.

Measures are weighted atoms: unit vectors ``x`` ``(n, d)`` with weights ``a`` ``(n,)``
(``None``: uniform). The ground cost is the great-circle distance ``d(x, y)``, computed
stably as ``2 atan2(|x - y|, |x + y|)`` (``geodesic_distance``), raised to the power p.

What is here, and what each number is:

- ``sphere_wasserstein``: the exact W_p by the network simplex (POT ``ot.emd``), for
  moderate sizes. Cost: measured 0.06 s at n = m = 300, 0.2-0.6 s at 1000 x 700, 2.0 s at
  3000 x 3000 (one core; 3.6 s for 512 grid atoms against 2000 points: degenerate costs
  slow the simplex) and about ``EMD_COPIES`` dense n x m float64 arrays of memory
  (measured peak 6.1 copies at n = 3000); above ``MEMORY_LIMIT_BYTES`` it
  refuses before any work and names the method to use instead. Accuracy: round-off
  for p <= 2 (one solve); for 2 < p <= ``P_MAX`` a certified solve on a rescaled,
  clipped cost (``_emd_distance``: 2-15 solves, agreeing with an assignment solver to
  1e-12); distances ``geodesic_distance``, exact 0 between identical points.
- the debiased Sinkhorn divergence, an estimate of W_p^p with a measured bias:
  ``sphere_sinkhorn.sinkhorn_divergence``.
- ``sliced_wasserstein_sphere``: the spherical sliced Wasserstein distance of Bonet et
  al. (2023), in radians: ``SSW_p = (mean_U W_p^p(P_U mu, P_U nu))^{1/p}`` over random
  2-planes U, each projected measure transported exactly on the circle by
  ``meanfield.metrics.circle_transport``. A different quantity from W_p: its own name.
- ``wasserstein_to_dirac``: W_p to a Dirac in closed form (every atom goes to x0).
- min over rotations R of W_p(mu, R nu): ``sphere_rotation.wasserstein_modulo_rotation``
  (a local method with several starts, built on the exact coupling here).
- ``grid_atoms``: a density on grid nodes as weighted atoms (quadrature weight x density).

Discretisation error of ``grid_atoms``: each atom stands for the mass of its cell, moved
at most the cell radius h, so W_p(atoms, density) <= h (O(h) for W1 and W2; the
quadrature's own error is smaller). Measured once (``tests``):

- uniform density on ``SphereGrid(L)`` against a Dirac at the pole / at a generic point,
  |W2^2(atoms) - (pi^2/2 - 2)| = 2.1e-3 / 8.4e-4 (L = 7), 2.9e-4 / 1.5e-4 (L = 15),
  3.8e-5 / 3.2e-6 (L = 31), 4.8e-6 / 1.5e-6 (L = 63): about h^3, since the Dirac's cost
  is integrated by the grid's quadrature (Fibonacci points: 5.9e-5 at n = 1e3, 2.7e-6 at
  1e4, 7e-8 at 1e5);
- between two discretisations of the same uniform measure, where the O(h) bound is the
  whole story: grid atoms of ``SphereGrid(7)`` (128 atoms, h = pi/8 = 0.39) and of
  ``SphereGrid(15)`` (512 atoms, h = 0.20) against 2000 Fibonacci points, W2 = 0.142 and
  0.073 (about 0.37 h, halving with h).
"""
from __future__ import annotations

import math

import numpy as np

from meanfield.metrics.arguments import P_MAX

# Exact transport (and the dense Sinkhorn) is refused above this memory estimate.
MEMORY_LIMIT_BYTES = 2 * 2**30
# Dense n x m float64 arrays alive at the peak of ot.emd: the distances (kept for the
# plan's value), the cost, POT's copy, the simplex's flows and the plan (measured peak
# RSS 6.1 arrays at n = m = 3000, p = 2 and 4; 5.0-5.1 before the distances were kept).
EMD_COPIES = 7
# Points must be unit vectors to this tolerance (they are not silently normalised).
UNIT_TOL = 1e-8
# Cost entries (d / scale)^p of geodesic_cost are clipped here (no overflow at any p).
COST_CLIP = 1e200
# p > 2 in the network simplex (``_emd_distance``): the scale is accepted when the
# optimum's entries are at least this (in units of the scale), after at most MAX_RESCALES
# solves; flows below FLOW_TOL of the smallest mass are round-off.
SCALE_FLOOR = 1e-3
MAX_RESCALES = 60
FLOW_TOL = 1e-9

# SSW_2 / W_2 measured on 7 random problems (sizes 100..1000, uniform and clustered
# atoms, weighted; 100 projections, 3 seeds): 0.61 .. 1.06. The range the tests accept:
SLICED_RATIO_RANGE = (0.5, 1.2)


def validate_points(x, name: str = "points", dim: int | None = None) -> np.ndarray:
    """``x`` as a float ``(n, d)`` array of unit vectors, or a ``ValueError``.

    Args:
        x: array-like ``(n, d)``, ``n >= 1``, ``d >= 2``.
        name: what to call it in messages.
        dim: the dimension d it must have (``None``: any).

    Raises:
        ValueError: not 2-D, empty, NaN/inf, or a norm off 1 by more than ``UNIT_TOL``
            (points are not normalised silently: a wrong norm is a bug upstream).
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 2:
        raise ValueError(f"{name} must be an (n, d) array of unit vectors with n >= 1, "
                         f"d >= 2; got shape {x.shape}")
    if dim is not None and x.shape[1] != dim:
        raise ValueError(f"{name} are vectors of R^{x.shape[1]}, expected R^{dim}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} contain NaN or inf")
    err = np.max(np.abs(np.einsum("ij,ij->i", x, x) - 1.0))
    if err > 2 * UNIT_TOL:
        raise ValueError(f"{name} are not on the unit sphere: max | |x|^2 - 1 | = "
                         f"{err:.3g} > {2 * UNIT_TOL:g} (normalise them first)")
    return x


def validate_weights(w, n: int, name: str = "weights") -> np.ndarray:
    """Weights ``(n,)`` as a float array (``None``: uniform ``1/n``), not normalised.

    Raises:
        ValueError: wrong shape, NaN/inf, a negative weight, or a zero total.
    """
    if w is None:
        return np.full(n, 1.0 / n)
    w = np.asarray(w, dtype=float)
    if w.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"{name} contain NaN or inf")
    if np.any(w < 0):
        raise ValueError(f"{name} must be >= 0; min is {w.min():.3g}")
    if not w.sum() > 0:
        raise ValueError(f"{name} sum to zero")
    return w


def validate_p(p: float) -> float:
    """``p`` as a float ``>= 1`` (finite), or a ``ValueError``."""
    p = float(p)
    if not (math.isfinite(p) and p >= 1):
        raise ValueError(f"p must be a finite number >= 1, got {p}")
    return p


def check_sphere_p(p: float) -> float:
    """``p`` if W_p on the sphere is computed exactly for it (``p <= P_MAX``), else a
    ``ValueError`` saying why (the Dirac's closed form takes any p)."""
    if p > P_MAX:
        raise ValueError(
            f"p = {p:g} is above P_MAX = {P_MAX:g} on the sphere: W_p is exact up to there "
            "(the certified network simplex agrees with an assignment solver to 1e-12; the "
            "zonal quadrature resolves |d|^p with 8 sqrt(p) nodes), not beyond; use "
            f"p <= {P_MAX:g}")
    return p


def geodesic_distance(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Dense ``(n, m)`` great-circle distances ``2 atan2(|x_i - y_j|, |x_i + y_j|)``.

    Stable everywhere (arccos of the inner product loses half the digits of small
    angles: identical points came out 1.5e-8 apart; this gives exactly 0), at the price
    of summing the squared differences component by component (three n x m arrays at
    the peak, fewer than the network simplex's ``EMD_COPIES``).
    """
    minus = np.zeros((x.shape[0], y.shape[0]))
    plus = np.zeros_like(minus)
    for k in range(x.shape[1]):
        t = np.subtract.outer(x[:, k], y[:, k])
        minus += t * t
        np.add.outer(x[:, k], y[:, k], out=t)
        plus += t * t
    np.sqrt(minus, out=minus)
    np.sqrt(plus, out=plus)
    return 2.0 * np.arctan2(minus, plus, out=minus)


def pair_distance(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``d(x_i, y_i)`` row by row, as ``geodesic_distance``."""
    return 2.0 * np.arctan2(np.linalg.norm(x - y, axis=-1), np.linalg.norm(x + y, axis=-1))


def geodesic_cost(x: np.ndarray, y: np.ndarray, p: float = 2.0, scale: float = 1.0
                  ) -> np.ndarray:
    """Dense ``(n, m)`` matrix of ``(d(x_i, y_j) / scale)^p`` (``geodesic_distance``),
    entries above ``COST_CLIP`` clipped to it (a larger p would overflow)."""
    c = geodesic_distance(x, y)
    if scale != 1.0:
        c /= scale
    with np.errstate(over="ignore"):
        if p == 2:
            c *= c
        elif p != 1:
            c **= p
    return np.minimum(c, COST_CLIP, out=c)


def dense_memory(n: int, m: int, copies: int) -> int:
    """Bytes of ``copies`` dense n x m float64 arrays."""
    return int(n) * int(m) * 8 * int(copies)


def _check_memory(n: int, m: int, copies: int, what: str, instead: str) -> None:
    need = dense_memory(n, m, copies)
    if need > MEMORY_LIMIT_BYTES:
        raise ValueError(
            f"{what} of {n} x {m} atoms needs about {need / 2**30:.1f} GiB "
            f"({copies} dense {n} x {m} arrays), above the limit "
            f"MEMORY_LIMIT_BYTES = {MEMORY_LIMIT_BYTES / 2**30:g} GiB: use {instead}")


def _prepare(x, y, a, b, p):
    p = validate_p(p)
    x = validate_points(x, "mu's points")
    y = validate_points(y, "nu's points", dim=x.shape[1])
    a = validate_weights(a, x.shape[0], "mu's weights")
    b = validate_weights(b, y.shape[0], "nu's weights")
    # atoms of zero mass change nothing but would put log(0) in the Sinkhorn kernels
    if not np.all(a > 0):
        x, a = x[a > 0], a[a > 0]
    if not np.all(b > 0):
        y, b = y[b > 0], b[b > 0]
    return x, y, a / a.sum(), b / b.sum(), p


def _emd_plan(a, b, cost):
    """The network simplex's plan for one cost matrix, or a ``RuntimeError``."""
    import ot

    n, m = cost.shape
    plan, log = ot.emd(a, b, cost, numItermax=max(10**6, 50 * n * m), log=True)
    if log.get("warning") is not None or log.get("result_code", 1) != 1:
        raise RuntimeError(f"network simplex did not converge ({log.get('warning')}): "
                           "no value returned")
    return plan


def _emd_distance(x, y, a, b, p) -> float:
    """Exact W_p by the network simplex (no validation; memory checked by the caller).

    The simplex works in floating point: a cost matrix whose entries span more than
    ~1e16 loses the small ones (measured: 200 points moved by 0.01 rad, W_16 off by a
    factor 10 from d^16; W_32 of random sets off by 90 % however the cost is scaled).
    For p > 2 the cost is therefore ``min((d / s)^p, CLIP)``: s a distance scale, CLIP
    at least 10 / (smallest mass). A plan optimal for the clipped cost that uses no
    clipped arc is optimal for d^p (clipping only lowers costs), and with s >= W_p no
    arc of an optimal plan is clipped (flow (d/s)^p <= (W_p/s)^p <= 1), so a plan that
    uses a clipped arc means s < W_p. s is found by bisection (geometric) between W_2
    (<= W_p) and the smallest W_p of the plans so far (each an upper bound), until the
    plan is certified and ``(W_p/s)^p >= SCALE_FLOOR`` (the entries that matter are then
    within CLIP / SCALE_FLOOR of each other): 2-3 solves at p = 4, up to ~12 at 1e4.
    """
    b = b * (a.sum() / b.sum())  # ot.emd checks that both sum to the same float
    d = geodesic_distance(x, y)
    if p <= 2:
        return _plan_distance(_emd_plan(a, b, d**p), d, a, b, p)
    clip = max(1e4, 10.0 / min(a.min(), b.min()))
    lo = _plan_distance(_emd_plan(a, b, d * d), d, a, b, 2.0)  # W_2 <= W_p
    hi = float(d.max())  # >= W_p
    if lo == 0.0:
        return 0.0
    scale = lo
    for _ in range(MAX_RESCALES):
        with np.errstate(over="ignore", under="ignore"):
            cost = np.minimum((d / scale) ** p, clip)
        plan = _emd_plan(a, b, cost)
        value = _plan_distance(plan, d, a, b, p)  # a feasible plan: >= W_p
        used = plan > FLOW_TOL * min(a.min(), b.min())
        if np.any(cost[used] >= clip):
            lo = scale  # an arc clipped: scale < W_p (see the docstring)
        elif (value / scale) ** p >= SCALE_FLOOR:
            return value  # certified
        hi = min(hi, value)
        scale = math.sqrt(lo * hi) if hi > lo else hi
    raise RuntimeError(f"network simplex at p = {p:g}: the cost's scale did not settle in "
                       f"{MAX_RESCALES} solves (W_p in [{lo:.6g}, {hi:.6g}] rad)")


def _plan_distance(plan, d, a, b, p) -> float:
    """(sum P d^p)^{1/p} over the plan's arcs (flows below FLOW_TOL of the smallest mass
    are the round-off of the marginals, not transport), scaled so nothing overflows."""
    i, j = np.nonzero(plan > FLOW_TOL * min(a.min(), b.min()))
    dd = d[i, j]
    top = float(dd.max()) if dd.size else 0.0
    if top == 0.0:
        return 0.0
    return top * float(plan[i, j] @ (dd / top) ** p / plan[i, j].sum()) ** (1.0 / p)


def sphere_wasserstein(x, y, a=None, b=None, p: float = 2.0) -> float:
    """Exact W_p between weighted atoms on S^{d-1} with the geodesic cost.

    Weights are normalised to probabilities (the front ``meanfield.metrics.wasserstein``
    checks the masses first).

    Cost: the network simplex on the dense n x m cost, O(n m (n + m)) in practice
    (0.47 s at n = m = 1000, 2.0 s at 3000); memory ``EMD_COPIES`` n x m float64 arrays.
    Accuracy: round-off (the optimum of the linear program).

    Args:
        x, y: unit vectors ``(n, d)``, ``(m, d)``.
        a, b: weights (``None``: uniform).
        p: order, ``>= 1``.

    Returns:
        W_p in radians.

    Raises:
        ValueError: bad input, or a problem above ``MEMORY_LIMIT_BYTES`` (before any
            work; the message says to use ``"sinkhorn"`` or ``"sliced"``).
        RuntimeError: the simplex stopped before the optimum.
    """
    x, y, a, b, p = _prepare(x, y, a, b, p)
    check_sphere_p(p)
    _check_memory(x.shape[0], y.shape[0], EMD_COPIES, "exact transport (network simplex)",
                  'method="sinkhorn" (debiased Sinkhorn divergence) or method="sliced"')
    return _emd_distance(x, y, a, b, p)


# --- sliced ---------------------------------------------------------------------------
def sliced_wasserstein_sphere(x, y, a=None, b=None, p: float = 2.0,
                              n_projections: int = 200, seed: int = 0) -> float:
    """Spherical sliced Wasserstein distance SSW_p ([BBC+23]), in radians.

    For random 2-planes U (Haar, from ``seed``), each point goes to the great circle of U
    by ``P_U(x) = U^T x / |U^T x|``; ``SSW_p^p`` is the mean over planes of the exact circle
    W_p^p of the projected measures (``meanfield.metrics.circle_transport``, exact for
    unequal sizes, where POT's ``wasserstein_circle`` is not), in radians (POT's
    ``ot.sliced_wasserstein_sphere`` reports it on a circle of length 1: ours is 2 pi times
    it). It is NOT W_p: P_U is not 1-Lipschitz, so no bound holds in general; on 7 random
    problems (sizes 100..1000) SSW_2 / W_2 was 0.61..1.06 (``SLICED_RATIO_RANGE``).

    Cost: O(n_projections (n + m) log(n + m)); measured 0.17-0.53 s for 100 projections
    at n, m = 100..1000 (per-projection overhead dominates). Monte Carlo error: the seeds
    gave SSW_2 within 5 % of each other with 100 projections (relative error
    ~ 1/sqrt(n_projections) times the spread of the projected costs).

    Args:
        x, y: unit vectors ``(n, d)``, ``(m, d)``.
        a, b: weights (``None``: uniform; normalised).
        p: order.
        n_projections: number of random planes.
        seed: seed of the planes (the same seed gives the same planes, whatever the
            measures: differences between measures are not blurred by new planes).
    """
    from meanfield.metrics.circle_transport import CircleMeasure, circle_wasserstein

    x, y, a, b, p = _prepare(x, y, a, b, p)
    n_projections = int(n_projections)
    if n_projections < 1:
        raise ValueError(f"n_projections must be >= 1, got {n_projections}")
    d = x.shape[1]
    rng = np.random.default_rng(seed)
    # Haar 2-frames: the Q of a Gaussian d x 2 matrix (signs fixed by R's diagonal)
    z = rng.standard_normal((n_projections, d, 2))
    q, r = np.linalg.qr(z)
    q *= np.sign(np.diagonal(r, axis1=1, axis2=2))[:, None, :]
    total = 0.0
    for u in q:
        px, py = x @ u, y @ u
        tx = np.arctan2(px[:, 1], px[:, 0]) % (2 * np.pi)
        ty = np.arctan2(py[:, 1], py[:, 0]) % (2 * np.pi)
        w = circle_wasserstein(CircleMeasure.from_points(tx, a),
                               CircleMeasure.from_points(ty, b), p)
        total += w ** p
    return (total / n_projections) ** (1.0 / p)


# --- Diracs, grids ----------------------------------------------------------------------
def wasserstein_to_dirac(x, x0, a=None, p: float = 2.0) -> float:
    """W_p(mu, delta_x0) = (sum_i a_i d(x_i, x0)^p)^{1/p}: the only coupling.

    Exact to round-off for any p (the stable distance of ``geodesic_distance``, and the
    sum scaled by the largest distance so that d^p cannot overflow). Cost O(n d). For a
    density on a grid pass ``grid_atoms``: the sum is then the grid's quadrature of
    d(., x0)^p rho (error: the quadrature's).
    """
    p = validate_p(p)
    x = validate_points(x, "mu's points")
    x0 = validate_points(np.reshape(x0, (1, -1)), "the Dirac's point", dim=x.shape[1])[0]
    a = validate_weights(a, x.shape[0], "mu's weights")
    d = pair_distance(x, x0[None, :])
    top = float(d.max())
    if top == 0.0:
        return 0.0
    return top * float((a @ (d / top) ** p) / a.sum()) ** (1.0 / p)  # no overflow


def grid_atoms(points: np.ndarray, weights: np.ndarray, density: np.ndarray,
               neg_tol: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """A density on grid nodes as atoms: ``(points (N, d), masses (N,))``, masses
    ``weights * density`` flattened (not normalised).

    Small negative values (a spectral solution's round-off or Gibbs ripples, down to
    ``-neg_tol`` times the maximum: by default the solvers' own negativity tolerance,
    ``discretization.negativity_tolerance``, which a run already enforces) are set to zero; larger ones raise a ``ValueError``
    (not a measure). Error of the atoms as a stand-in for the density: see the module
    docstring (W_p <= the cell radius h).
    """
    density = np.asarray(density, dtype=float)
    weights = np.broadcast_to(np.asarray(weights, dtype=float), density.shape)
    d = points.shape[-1]
    pts = np.asarray(points, dtype=float).reshape(-1, d)
    if pts.shape[0] != density.size:
        raise ValueError(f"density has {density.size} values for {pts.shape[0]} nodes")
    if not np.all(np.isfinite(density)):
        raise ValueError("density contains NaN or inf")
    top = float(np.max(density)) if density.size else 0.0
    if density.min() < -neg_tol * max(top, 0.0) or top <= 0:
        raise ValueError(f"density is negative (min {density.min():.3g}, max {top:.3g}): "
                         "not a measure")
    mass = (weights * np.maximum(density, 0.0)).ravel()
    return pts, mass
