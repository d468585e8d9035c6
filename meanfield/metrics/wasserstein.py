"""The public front of the Wasserstein metrics (docs/datasets.md):
``meanfield.metrics.wasserstein(mu, nu, p=2, *, geometry=None, method="auto",
modulo_rotation=False)``.

A measure is one of:

- an array of points: angles ``(n,)`` (circle), or unit vectors ``(n, d)`` (d = 2:
  circle; d >= 3: the sphere S^{d-1}), each of mass 1/n;
- a ``tuple`` ``(points, weights)`` (a 2-tuple is always read as this pair; lists and
  arrays are always points);
- one time frame of an evolve dataset: an ``xarray.Dataset`` with ``density`` (no time
  axis, or a time axis of length 1) and ``weights`` on its grid, and attrs ``geometry``
  and ``method`` (``ds.isel(time=k)``).

A single point is a Dirac: W_p to it is computed in closed form.

Masses: each measure's mass is the sum of its weights (1 for bare points; the integral
``sum(weights * density)`` for a dataset frame). The two masses must agree to a relative
``MASS_RTOL`` (1e-6), else a ``ValueError``; then both are normalised to probabilities.
So unnormalised weights are accepted when both measures carry the same total (counts
against counts), and a mismatch (counts against bare points) is an error, not silently
rescaled.

Methods (the geometry is inferred, or checked against ``geometry=`` when given), with
their accuracy relative to the distance W they report:

=========  =========================================================================
circle     ``"auto"`` = ``"exact"``: ``meanfield.metrics.circle_transport`` (exact at
           every accepted p, to round-off, O((n + m) log(n + m)); densities in their
           own representation). ``"atoms"`` is refused (``"exact"`` is exact there).
sphere,    Read as the densities their grid represents (``sphere_dispatch``):
two        ``"exact"``: the exact W_p, any p, of two spectral (Gauss-Legendre) frames
density    zonal about a common axis, any axis (found from their harmonic
frames     coefficients; the monotone rearrangement of the colatitudes about it,
           ``sphere_zonal``): relative error round-off (1e-10 or better). Any other
           pair (not zonal, finite-volume cells, ``modulo_rotation``) is a
           ``ValueError`` naming ``"linearised"``, ``"atoms"`` (with the frames'
           quantisation q) and ``"auto"``: no method here is exact for it.
           ``"zonal"``: the same, refused likewise. ``"linearised"`` (p = 2, spectral
           frames): ``||mu - nu||`` in the weighted H^-1((mu + nu)/2) norm, the W_2
           of close densities to second order (``sphere_linearised``): relative error
           about 0.01 a^2 for densities a apart relative to their size (1e-4 at a =
           0.1), at most 0.7 % for von Mises-Fisher pairs of concentration k against
           1.5 k (k <= 5), with an a-posteriori estimate (at least 3.6 times the true
           error, measured). ``"atoms"``: the network simplex between the grid atoms
           (the nodes, with masses weights x density; ``sphere_transport``): exact for
           the atoms, but off from the densities' W_p by up to the grids'
           quantisation q_mu + q_nu (``sphere_dispatch.quantisation``, ~0.3 h: 0.046
           rad at L = 24), an absolute error, so a relative one of up to q / W: between
           close densities a apart it reports ~ sqrt(a h) instead of ~ a (``u`` against
           ``u (1 + a P_1)``, L = 24: 0.0695, 0.0220, 0.00695 for a = 0.1, 0.01, 0.001
           where W_2 = a / sqrt 6 = 0.0408, 0.00408, 0.000408). ``"auto"``: zonal when
           it applies; else, for p = 2, linearised when its error estimate is at most
           1 % of its value (or below both the atoms' q and half its value); else the
           atoms when q is at most half their value; else a ``ValueError`` saying what
           to do: "auto" never returns a value whose error can exceed half of it.
sphere,    ``"exact"``: refused as above (the frame's atoms are off by its q).
atoms vs   ``"atoms"``: the network simplex, off by up to the frame's q (it adds in
a frame    W^2: about q^2 / (2 W)). ``"auto"``: the atoms when the frame's q is at
           most W (error at most W / 2), else a ``ValueError``.
sphere,    ``"auto"`` = ``"exact"`` = ``"atoms"``: the network simplex (exact, to
atoms vs   round-off) when it fits in ``MEMORY_LIMIT_BYTES``, else a ``ValueError``
atoms      asking for ``"sinkhorn"`` or ``"sliced"`` explicitly (never a different
           quantity silently); ``"sinkhorn"``: S_eps^{1/p}, the debiased Sinkhorn
           divergence with ``reg``, an estimate of W_p with the bias stated in
           ``sphere_sinkhorn.sinkhorn_divergence``; ``"sliced"``: the spherical sliced
           distance SSW_p (``n_projections``, ``seed``), a different distance.
both       ``"dirac"``: one of the measures is a single point: the closed form
           ``(int d(x, x0)^p dmu)^{1/p}`` (also chosen by ``"auto"``, ``"exact"`` and
           ``"atoms"``); for a frame the integral is its grid's quadrature (not a
           transport between atoms: the uniform density against a point at L = 7,
           15, 24, 48 was off by 2.7e-4, 4.5e-5, 1.5e-5, 4.8e-7 from sqrt(pi^2/2 - 2)
           = 1.17).
=========  =========================================================================

All input errors (p not a real number in [1, 1e4] (``arguments.P_MAX``: W_p is exact up
to there), other options out of range (``meanfield.metrics.arguments``), complex or
non-numeric values, NaN, negative weights, points off the sphere, different masses, a
grid that does not match its geometry, a problem too large for the exact method) are a
``ValueError`` raised before any transport is computed (a ``ConfigError`` naming the
argument for the options and the values).
"""
from __future__ import annotations

from meanfield.metrics import sphere_transport as st
from meanfield.metrics.arguments import check_arguments
from meanfield.metrics.measures import GEOMETRIES, METHODS, Measure, as_measure, check_pair


def _circle(m: Measure):
    from meanfield.metrics.circle_transport import CircleMeasure

    if m.density is not None:
        return CircleMeasure.from_density(m.density / m.mass, m.method)
    return CircleMeasure.from_points(m.angles, m.weights / m.weights.sum())


def wasserstein(mu, nu, p: float = 2, *, geometry: str | None = None,
                method: str = "auto", modulo_rotation: bool = False, reg: float = 0.01,
                n_projections: int = 200, seed: int = 0, starts: int = 8) -> float:
    """W_p between two measures on S^1 or S^{d-1} with the geodesic (arc-length) cost.

    See the module docstring for the measures, masses, methods and errors.

    Cost and accuracy: circle, exact to round-off in O((n + m) log(n + m)); sphere
    atoms (``"exact"`` = ``"atoms"`` for point sets) to round-off with the network simplex
    (0.5 s at n = m = 1000, memory ``7 n m 8`` bytes, refused above 2 GiB), modulo
    rotation up to ``starts x 50`` of those (a local method with multistart: an upper
    bound on the minimum); ``"sinkhorn"`` O(n m) per iteration, biased as stated in
    ``sphere_sinkhorn.sinkhorn_divergence``; ``"sliced"`` O(n_projections n log n); a
    Dirac O(n) (closed form). Sphere density frames (module docstring): ``"exact"`` and
    ``"zonal"`` (two spectral frames zonal about any common axis, else refused) exact,
    O(L^2); ``"linearised"`` (p = 2) second order in their difference, O(L^3) per
    conjugate-gradient iteration; ``"atoms"`` the grid atoms' exact value, off from the
    densities' by up to the grid's quantisation q ~0.3 h (so ~ sqrt(a h) for densities
    a apart), which ``"auto"`` accepts only when it is at most half the value (two
    frames) or the value (a sample against a frame, where it adds in W^2).

    Args:
        mu, nu: the measures.
        p: order, a real number in [1, 1e4] (``arguments.P_MAX``).
        geometry: ``"circle"``, ``"sphere"`` or ``None`` (inferred).
        method: ``"auto"``, ``"exact"``, ``"atoms"``, ``"sinkhorn"``, ``"sliced"``,
            ``"dirac"``, ``"zonal"`` or ``"linearised"`` (``METHODS``).
        modulo_rotation: the minimum over rotations of W_p(mu, R nu) (circle: exact over
            shifts; sphere: the atoms' network simplex, local search; sphere frames:
            ``"atoms"``, or ``"auto"`` when the quantisation is small against it).
        reg: the Sinkhorn regularisation eps (rad^p), for ``"sinkhorn"``.
        n_projections, seed: the random planes of ``"sliced"``.
        starts: starts of the rotation search on the sphere.

    Returns:
        The distance in radians (for ``"sinkhorn"``: S_eps^{1/p}; ``"sliced"``: SSW_p).

    Raises:
        ValueError: any bad input, before work (see the module docstring).
    """
    ok = check_arguments(p=p, geometry=geometry, method=method,
                         modulo_rotation=modulo_rotation, reg=reg,
                         n_projections=n_projections, seed=seed, starts=starts,
                         methods=METHODS, geometries=GEOMETRIES)  # before any work
    p, reg, n_projections, seed, starts = (ok[k] for k in ("p", "reg", "n_projections",
                                                            "seed", "starts"))
    m1, m2 = as_measure(mu, "mu"), as_measure(nu, "nu")
    geo = check_pair(m1, m2, geometry, method, modulo_rotation)
    if geo == "circle":
        return _circle_distance(m1, m2, p, modulo_rotation)
    return _sphere_distance(m1, m2, p, method, modulo_rotation, reg=reg,
                            n_projections=n_projections, seed=seed, starts=starts)


def _circle_distance(m1: Measure, m2: Measure, p: float, modulo_rotation) -> float:
    """W_p on the circle: the closed form to a Dirac, else the exact solver."""
    from meanfield.metrics.circle_transport import (
        circle_wasserstein,
        circle_wasserstein_to_dirac,
    )

    for dirac, other in ((m1, m2), (m2, m1)):
        if dirac.is_dirac and not modulo_rotation:
            return float(circle_wasserstein_to_dirac(_circle(other),
                                                     float(dirac.angles[0]), p))
    return float(circle_wasserstein(_circle(m1), _circle(m2), p,
                                    modulo_rotation=bool(modulo_rotation)))


def _sphere_distance(m1: Measure, m2: Measure, p: float, method: str, modulo_rotation, *,
                     reg: float, n_projections: int, seed: int, starts: int) -> float:
    """W_p on the sphere by ``method`` (the table of the module docstring): two density
    frames by ``sphere_dispatch``, a Dirac in closed form, "exact" with a frame refused,
    then the atoms' transport, "sinkhorn" or "sliced"."""
    frames = m1.frame is not None or m2.frame is not None
    if method in ("zonal", "linearised") or (method in ("auto", "exact")
                                             and not modulo_rotation
                                             and m1.frame is not None
                                             and m2.frame is not None):
        from meanfield.metrics.sphere_dispatch import density_distance

        value = density_distance(m1, m2, p, method)
        if value is not None:
            return value
    if method in ("auto", "exact", "atoms", "dirac"):
        for dirac, other in ((m1, m2), (m2, m1)):
            if dirac.is_dirac:
                return st.wasserstein_to_dirac(other.points, dirac.points[0],
                                               other.weights, p)
    if method == "exact" and frames:  # a frame against atoms, or modulo a rotation
        from meanfield.metrics.sphere_dispatch import exact_refusal

        sample = m2 if m1.frame is not None else m1
        why = ("modulo_rotation searches rotations of the atoms" if modulo_rotation
               else f"{'nu' if sample is m2 else 'mu'} is not a density frame (it is "
                    f"{sample.points.shape[0]} points)")
        raise exact_refusal(m1, m2, p, why)
    x, a, y, b = m1.points, m1.weights, m2.points, m2.weights
    if method in ("auto", "exact", "atoms"):
        return _sphere_atoms(m1, m2, p, method, modulo_rotation, seed=seed, starts=starts)
    if method == "sinkhorn":
        from meanfield.metrics.sphere_sinkhorn import sinkhorn_divergence

        return sinkhorn_divergence(x, y, a, b, p, reg=reg) ** (1.0 / p)
    return st.sliced_wasserstein_sphere(x, y, a, b, p, n_projections=n_projections,
                                        seed=seed)


def _sphere_atoms(m1: Measure, m2: Measure, p: float, method: str, modulo_rotation, *,
                  seed: int, starts: int) -> float:
    """The network simplex between the atoms (modulo a rotation: its local search),
    refused above ``MEMORY_LIMIT_BYTES``; for "auto" with a frame, accepted only when the
    grid's quantisation is small against it (``sphere_dispatch.guarded_atoms``)."""
    x, a, y, b = m1.points, m1.weights, m2.points, m2.weights
    need = st.dense_memory(x.shape[0], y.shape[0], st.EMD_COPIES)
    if need > st.MEMORY_LIMIT_BYTES:
        raise ValueError(
            f'method="{method}": the exact transport of {x.shape[0]} x {y.shape[0]} '
            f"atoms needs about {need / 2**30:.1f} GiB, above MEMORY_LIMIT_BYTES = "
            f"{st.MEMORY_LIMIT_BYTES / 2**30:g} GiB; choose method=\"sinkhorn\" (an "
            f'estimate with a stated bias) or method="sliced" (a different distance) '
            f"explicitly")
    if modulo_rotation:
        from meanfield.metrics.sphere_rotation import wasserstein_modulo_rotation

        value = wasserstein_modulo_rotation(x, y, a, b, p, starts=starts, seed=seed)[0]
    else:
        value = st.sphere_wasserstein(x, y, a, b, p)
    if method == "auto" and (m1.frame is not None or m2.frame is not None):
        from meanfield.metrics.sphere_dispatch import guarded_atoms

        return guarded_atoms(value, m1, m2, p)
    return value
