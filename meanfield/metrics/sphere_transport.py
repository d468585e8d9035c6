"""Optimal transport on the sphere S^{d-1} (d = 3: S^2) with the geodesic cost.

Measures are weighted atoms: unit vectors ``x`` ``(n, d)`` with weights ``a`` ``(n,)``
(``None``: uniform). The ground cost is the great-circle distance
``d(x, y) = arccos(<x, y>)`` (the inner product clipped to [-1, 1]), raised to the power p.

What is here, and what each number is:

- ``sphere_wasserstein``: the exact W_p by the network simplex (POT ``ot.emd2``), for
  moderate sizes. Cost: measured 0.06 s at n = m = 300, 0.2-0.6 s at 1000 x 700, 2.0 s at
  3000 x 3000 (one core; 3.6 s for 512 grid atoms against 2000 points: degenerate costs
  slow the simplex) and about ``EMD_COPIES`` dense n x m float64 arrays of memory
  (measured peak 5.0-5.1 copies at n = 1000, 3000); above ``MEMORY_LIMIT_BYTES`` it
  refuses before any work and names the method to use instead. Accuracy: round-off.
- ``sinkhorn_divergence``: the debiased Sinkhorn divergence
  ``S_eps = OT_eps(a, b) - (OT_eps(a, a) + OT_eps(b, b)) / 2`` (Feydy et al. 2019), with
  ``OT_eps`` the entropic transport with cost d^p and the entropy relative to a x b, by
  Sinkhorn iterations with eps-annealing and absorbed potentials (nothing overflows).
  It estimates W_p^p, not W_p; its bias is measured in ``SINKHORN_BIAS``: for p = 2,
  ``0 <= W2^2 - S_eps <= 0.15 eps log(1/eps)`` on those problems.
- ``sliced_wasserstein_sphere``: the spherical sliced Wasserstein distance of Bonet et
  al. (2023), in radians: ``SSW_p = (mean_U W_p^p(P_U mu, P_U nu))^{1/p}`` over random
  2-planes U, each projected measure transported exactly on the circle by
  ``meanfield.metrics.circle_transport``. A different quantity from W_p: its own name.
- ``wasserstein_to_dirac``: W_p to a Dirac in closed form (every atom goes to x0).
- ``wasserstein_modulo_rotation``: min over rotations R of W_p(mu, R nu), a local method
  (alternating exact coupling and weighted Kabsch rotation) with several starts.
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

# Exact transport (and the dense Sinkhorn) is refused above this memory estimate.
MEMORY_LIMIT_BYTES = 2 * 2**30
# Dense n x m float64 arrays alive at the peak of ot.emd2: the cost, POT's copy, the
# simplex's flows and the plan (measured peak RSS 5.0-5.1 arrays at n = m = 1000, 3000).
EMD_COPIES = 6
# Dense n x m arrays of our Sinkhorn: the cost and two work arrays of the log-sum-exp.
SINKHORN_COPIES = 4
# Points must be unit vectors to this tolerance (they are not silently normalised).
UNIT_TOL = 1e-8

# Measured bias of the debiased Sinkhorn divergence (p = 2, cost d^2 in rad^2) against
# the exact W2^2 (network simplex), on 6 random problems on S^2 (uniform and clustered
# atoms, random weights in [0.5, 1.5], sizes n x m = 100 x 150, 100 x 100, 300 x 200,
# 300 x 300, 1000 x 700, 700 x 1000): eps -> max over problems of W2^2 - S_eps. In all
# 24 cases S_eps <= W2^2 (an underestimate), largest on the smallest, most spread
# problem (100 x 150 uniform); on the 1000-atom problems it was 2.6-3.6e-3 (eps = 0.1,
# 0.03), 1.8-1.9e-3 (0.01), 0.9e-3 (0.003).
SINKHORN_BIAS = {0.1: 2.75e-2, 0.03: 1.32e-2, 0.01: 5.41e-3, 0.003: 1.72e-3}
# max |S_eps - W2^2| / (eps log(1/eps)) over those 24 cases was 0.125
SINKHORN_BIAS_CONSTANT = 0.15
# SSW_2 / W_2 measured on 7 random problems (sizes 100..1000, uniform and clustered
# atoms, weighted; 100 projections, 3 seeds): 0.61 .. 1.06. The range the tests accept:
SLICED_RATIO_RANGE = (0.5, 1.2)


def sinkhorn_bias_bound(eps: float) -> float:
    """The stated bias bound |S_eps - W2^2| <= 0.15 eps log(1/eps) (rad^2), measured for
    0.003 <= eps <= 0.1 on the problems of ``SINKHORN_BIAS`` (an empirical bound, not a
    theorem: at fixed eps the bias does not vanish as n grows, and it is largest for
    small, spread-out samples)."""
    eps = float(eps)
    return SINKHORN_BIAS_CONSTANT * eps * math.log(1.0 / eps)


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


def geodesic_cost(x: np.ndarray, y: np.ndarray, p: float = 2.0) -> np.ndarray:
    """Dense ``(n, m)`` matrix of ``arccos(<x_i, y_j>)^p`` (inner products clipped)."""
    c = x @ y.T
    np.clip(c, -1.0, 1.0, out=c)
    np.arccos(c, out=c)
    if p == 2:
        c *= c
    elif p != 1:
        c **= p
    return c


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


def _emd_cost(x, y, a, b, p) -> float:
    """Exact transport cost sum P d^p (no validation; memory checked by the caller)."""
    import ot

    n, m = x.shape[0], y.shape[0]
    cost = geodesic_cost(x, y, p)
    # b rescaled so that both sum to the same float: ot.emd2 checks the marginals to 1e-7
    b = b * (a.sum() / b.sum())
    value, log = ot.emd2(a, b, cost, numItermax=max(10**6, 50 * n * m), log=True)
    if log.get("warning") is not None or log.get("result_code", 1) != 1:
        raise RuntimeError(f"network simplex did not converge ({log.get('warning')}); "
                           f"the value {float(value):.6g} is not the optimum")
    return max(float(value), 0.0)


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
    _check_memory(x.shape[0], y.shape[0], EMD_COPIES, "exact transport (network simplex)",
                  'method="sinkhorn" (debiased Sinkhorn divergence) or method="sliced"')
    return _emd_cost(x, y, a, b, p) ** (1.0 / p)


# --- debiased Sinkhorn ----------------------------------------------------------------
def _lse_rows(z: np.ndarray) -> np.ndarray:
    """log sum_j exp(z_ij) for each row, stably."""
    zmax = z.max(axis=1, keepdims=True)
    out = np.exp(z - zmax).sum(axis=1)
    return np.log(out) + zmax[:, 0]


def _entropic(cost, a, b, eps, tol, max_iter, symmetric=False):
    """OT_eps(a, b) by stabilised Sinkhorn with eps-annealing; its dual value.

    Potentials f (rows), g (columns) with the plan ``P_ij = a_i b_j exp((f_i + g_j -
    C_ij)/eps)``. (1) Annealing in the log domain: eps from the cost's maximum down to the
    target by a factor 0.7 per step, one f, g update each (f = -eps LSE_j((g_j - C_ij)/eps
    + log b_j), the same for g). (2) At the target, scaling iterations on the kernel with
    the potentials absorbed (Schmitzer 2019): ``K_ij = a_i b_j exp((f_i + g_j - C_ij)/eps)``
    (entries <= ~1, nothing overflows; far pairs underflow to 0, carrying no mass),
    ``u = a / (K v)``, ``v = b / (K^T u)`` (matrix-vector products, ~10x cheaper than
    log-sum-exps), absorbed into f, g every 50 iterations, until the L1 marginal error is
    below ``tol``. The dual value <a, f> + <b, g> equals OT_eps = <P, C> + eps KL(P | a x b)
    at convergence (its error is about the marginal error times the cost's range).
    ``symmetric`` (a = b, C = C^T): the averaged update f = (f + T f) / 2 of Feydy et al.
    (u = sqrt(u a / (K u))), which converges where the alternating one oscillates.
    """
    la, lb = np.log(a), np.log(b)
    big = float(cost.max()) if cost.size else 1.0
    f = np.zeros(a.size)
    g = np.zeros(b.size)
    e = max(big, eps)
    while True:
        if symmetric:
            f = 0.5 * (f - e * _lse_rows((f[None, :] - cost) / e + la[None, :]))
            g = f
        else:
            g = -e * _lse_rows((f[None, :] - cost.T) / e + la[None, :])
            f = -e * _lse_rows((g[None, :] - cost) / e + lb[None, :])
        if e == eps:
            break
        e = max(e * 0.7, eps)
    err = np.inf
    done = 0
    while done < max_iter:
        kernel = np.exp((f[:, None] + g[None, :] - cost) / eps + la[:, None] + lb[None, :])
        u = np.ones(a.size)
        v = np.ones(b.size)
        for it in range(50):
            if symmetric:
                u = np.sqrt(u * a / (kernel @ u))
                v = u
            else:
                u = a / (kernel @ v)
                v = b / (kernel.T @ u)
        done += 50
        f = f + eps * np.log(u)
        g = f if symmetric else g + eps * np.log(v)
        ku = kernel.T @ u
        err = np.abs(v * ku - b).sum() + np.abs(u * (kernel @ v) - a).sum()
        if not np.isfinite(err):
            break
        if err < tol:
            return float(a @ f + b @ g)
    raise RuntimeError(f"Sinkhorn did not converge at eps = {eps:g}: marginal error "
                       f"{err:.3g} > {tol:g} after {done} iterations (raise reg)")


def sinkhorn_divergence(x, y, a=None, b=None, p: float = 2.0, reg: float = 0.01, *,
                        tol: float = 1e-6, max_iter: int = 20000) -> float:
    """Debiased Sinkhorn divergence S_eps with cost d^p: an estimate of W_p^p.

    ``S_eps = OT_eps(a, b) - (OT_eps(a, a) + OT_eps(b, b)) / 2``, ``OT_eps`` the entropic
    transport cost with regularisation ``reg`` (in the cost's units, rad^p) and entropy
    relative to a x b; S_eps >= 0 and -> W_p^p as eps -> 0 (Feydy et al., AISTATS 2019).

    Bias (p = 2, measured against the exact W2^2 by the network simplex on 6 random
    problems on S^2, uniform and clustered atoms, sizes 100..1000, random weights; see
    ``SINKHORN_BIAS``): always S_eps <= W2^2, and
    ``W2^2 - S_eps <= 0.15 eps log(1/eps)`` (``sinkhorn_bias_bound``) for
    eps in {0.1, 0.03, 0.01, 0.003}: at most 2.8e-2, 1.3e-2, 5.4e-3, 1.7e-3 rad^2. The
    bias of the W_2 estimate ``S_eps^{1/2}`` is then about ``bound / (2 W2)``.

    Cost: three dense solves (n x m, n x n, m x m); per iteration two matrix-vector
    products; measured (2 shared cores) 0.7 / 1.1 / 1.4 / 2.4 s at n = m = 300 for
    eps = 0.1 / 0.03 / 0.01 / 0.003, 5-34 s at 1000 x 700, where the network simplex
    took 0.06 s and 0.2-0.6 s: on CPU it is no faster than the exact method at these
    sizes; it is a smooth, regularised quantity. Memory ``SINKHORN_COPIES`` dense arrays
    of the larger size (refused above ``MEMORY_LIMIT_BYTES``, then use ``"sliced"``).

    Args:
        x, y: unit vectors ``(n, d)``, ``(m, d)``.
        a, b: weights (``None``: uniform; normalised).
        p: order of the cost d^p.
        reg: eps > 0, in rad^p.
        tol: L1 marginal error at which the iterations stop.
        max_iter: iterations at the target eps before a ``RuntimeError``.

    Returns:
        S_eps (in rad^p, comparable to W_p^p).
    """
    x, y, a, b, p = _prepare(x, y, a, b, p)
    reg = float(reg)
    if not (math.isfinite(reg) and reg > 0):
        raise ValueError(f"reg must be a finite number > 0, got {reg}")
    n, m = x.shape[0], y.shape[0]
    _check_memory(max(n, m), max(n, m), SINKHORN_COPIES, "the dense Sinkhorn divergence",
                  'method="sliced"')
    ab = _entropic(geodesic_cost(x, y, p), a, b, reg, tol, max_iter)
    aa = _entropic(geodesic_cost(x, x, p), a, a, reg, tol, max_iter, symmetric=True)
    bb = _entropic(geodesic_cost(y, y, p), b, b, reg, tol, max_iter, symmetric=True)
    return max(ab - 0.5 * (aa + bb), 0.0)


# --- sliced ---------------------------------------------------------------------------
def sliced_wasserstein_sphere(x, y, a=None, b=None, p: float = 2.0,
                              n_projections: int = 200, seed: int = 0) -> float:
    """Spherical sliced Wasserstein distance SSW_p (Bonet et al., ICLR 2023), in radians.

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
    """W_p(mu, delta_x0) = (sum_i a_i arccos(<x_i, x0>)^p)^{1/p}: the only coupling.

    Exact (round-off; arccos near 1 loses half the digits of tiny angles, as any geodesic
    cost does). Cost O(n d). For a density on a grid pass ``grid_atoms``: the sum is then
    the grid's quadrature of d(., x0)^p rho (error: the quadrature's).
    """
    p = validate_p(p)
    x = validate_points(x, "mu's points")
    x0 = validate_points(np.reshape(x0, (1, -1)), "the Dirac's point", dim=x.shape[1])[0]
    a = validate_weights(a, x.shape[0], "mu's weights")
    d = np.arccos(np.clip(x @ x0, -1.0, 1.0))
    return float((a @ d**p) / a.sum()) ** (1.0 / p)


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


# --- modulo rotation --------------------------------------------------------------------
def _kabsch(h: np.ndarray) -> np.ndarray:
    """The rotation R maximising trace(R^T h), i.e. sum w <x, R y> for h = sum w x y^T."""
    u, _, vt = np.linalg.svd(h)
    s = np.ones(h.shape[0])
    s[-1] = np.sign(np.linalg.det(u @ vt)) or 1.0
    return (u * s) @ vt


def _random_rotation(d: int, rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    q *= np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def wasserstein_modulo_rotation(x, y, a=None, b=None, p: float = 2.0, *, starts: int = 8,
                                max_iter: int = 50, seed: int = 0
                                ) -> tuple[float, np.ndarray]:
    """min over rotations R of W_p(mu, R_# nu) on S^{d-1}, by alternating minimisation.

    From each start R (the identity, the rotation taking nu's mean direction to mu's, and
    ``starts - 2`` Haar-random ones), alternate (1) the exact coupling P of mu and R_# nu
    (network simplex) and (2) the rotation of the weighted Procrustes (Kabsch) problem
    max sum P_ij w_ij <x_i, R y_j>, with w_ij = d_ij^p / (2 - 2 cos d_ij) so that the
    chordal cost it minimises matches the geodesic cost d^p at the current R. Each
    candidate R is kept only if it lowers the cost, so the value never increases.

    A LOCAL method: the value is an upper bound on the minimum, exact when one start
    lands in the global basin (more starts, more confidence). Cost: up to
    ``starts x max_iter`` exact transports (each as ``sphere_wasserstein``) plus d x d SVDs.

    Returns:
        ``(value, R)``: the smallest W_p found and its rotation (``(d, d)``, det 1).
    """
    x, y, a, b, p = _prepare(x, y, a, b, p)
    n, m, d = x.shape[0], y.shape[0], x.shape[1]
    _check_memory(n, m, EMD_COPIES, "exact transport modulo rotation",
                  "a smaller sample (the rotation is a global parameter)")
    import ot

    rng = np.random.default_rng(seed)
    inits = [np.eye(d)]
    mx, my = a @ x, b @ y
    if np.linalg.norm(mx) > 1e-12 and np.linalg.norm(my) > 1e-12:
        inits.append(_kabsch(np.outer(mx, my)))
    while len(inits) < max(int(starts), 1):
        inits.append(_random_rotation(d, rng))
    best, best_r = np.inf, np.eye(d)
    bb = b * (a.sum() / b.sum())
    for r in inits:
        value = np.inf
        for _ in range(int(max_iter)):
            ry = y @ r.T
            cost = geodesic_cost(x, ry, p)
            plan = ot.emd(a, bb, cost, numItermax=max(10**6, 50 * n * m))
            new = float(np.sum(plan * cost))
            if not new < value * (1 - 1e-12):
                break
            value, r_cur = new, r
            cosine = np.clip(x @ ry.T, -1.0, 1.0)
            chord = 2.0 - 2.0 * cosine
            wts = np.where(chord > 1e-14, cost / np.maximum(chord, 1e-300), 1.0)
            r = _kabsch(x.T @ (plan * wts) @ y)
        if value < best:
            best, best_r = value, r_cur
    return max(best, 0.0) ** (1.0 / p), best_r
