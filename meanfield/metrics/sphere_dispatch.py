"""How ``meanfield.metrics.wasserstein`` measures the distance between densities on S^2:
which path, and how accurate it is relative to the distance it reports.

A density frame transported as grid atoms (``sphere_transport.grid_atoms``) carries the
grid's quantisation: each atom stands for its cell's mass, so
``W_p(atoms, density) <= q``, with ``q^2 = sum_i m_i s_i^2`` for p <= 2 (m_i the atoms'
masses, s_i^2 the second moment of cell i about its node: on a Gauss-Legendre grid
``(band^3 terms in latitude) + cos^2(lat) (2 pi / nlon)^2 / 12``; on mesh cells
``area / 6``, a square's) and ``(sum_i m_i r_i^p)^{1/p}`` for p > 2 (r_i the distance from
the node to its cell's farthest corner). ``quantisation`` computes it (an estimate: the
cells' masses are the quadrature's, not the integrals over the cells); measured, the
atoms of the uniform density on ``SphereGrid(7)``, ``(15)``, ``(24)`` are 0.142, 0.073,
0.049 from 2000 Fibonacci points (whose own error is in the last), where ``q`` = 0.144,
0.072, 0.046. So the value
of the network simplex between two frames is off by at most ``q_mu + q_nu``, and between
atoms and a frame by at most that frame's q. Two close densities are the bad case: moving
mass a between neighbouring nodes costs ``a h^2``, so the atoms report ``W_2 ~ sqrt(a h)``
where the densities are ``~ a`` apart (``u`` against ``u (1 + a P_1)``, L = 24: 0.0695,
0.0220, 0.00695 for a = 0.1, 0.01, 0.001 instead of ``a / sqrt 6``).

What ``"auto"`` does with two spectral frames (``density_distance``):

1. Zonal about a common axis (any axis, ``sphere_linearised.zonal_pair``): the exact W_p
   (``sphere_zonal``), any p >= 1: spectrally accurate (relative round-off to 1e-10 in
   ``sphere_zonal``'s tests), plus at most ``ZONAL_SHARE`` of the distance from the
   non-zonal parts it neglects.
2. p = 2 and the linearised W_2 (``sphere_linearised.linearised_w2``) has an error
   estimate at most ``LINEARISED_SHARE`` of its value, or smaller than both the atoms'
   quantisation ``q_mu + q_nu`` and ``QUANTISATION_SHARE`` of its value (it is then the
   more accurate of the two, at the acceptance level of step 3): that value (relative
   error about 0.01 a^2 for a relative perturbation a: 1e-4 at 10 %, measured in
   ``sphere_linearised``, where the estimate was at least 3.6 times the true error).
   Only for p = 2: the first-order W_p of close densities is the dual norm of
   ``phi -> (int w |grad phi|^q)^{1/q}`` (1/p + 1/q = 1), a weighted W^{-1,p} norm that
   is Hilbertian (a linear solve) only for p = 2; it is not computed here, so for
   p != 2 a pair that is not zonal goes to step 3 (and ``"linearised"`` refuses it).
3. Otherwise the network simplex on the grid atoms, kept only when ``q_mu + q_nu`` is at
   most ``QUANTISATION_SHARE`` (0.5) of the value, else a ``ValueError`` naming what to
   do. Between a sample (atoms) and a frame, where the grid's error adds in W^2, the
   frame's q may be up to ``SAMPLE_QUANTISATION_SHARE`` (1) of the value: the error is
   then about ``q^2 / (2 W) <= W / 2`` (measured below). A distance that small relative
   to the grid cannot be had from atoms; ``method="atoms"`` still returns the atoms' value
   when asked for by name.

``method="exact"`` with a density frame on either side (``exact_refusal``) is step 1 only:
the exact W_p of a pair zonal about a common axis, else a ``ValueError`` naming
``"linearised"`` (p = 2), ``"atoms"`` (with the q of these frames) and ``"auto"``. It
never returns the atoms' value, which between close densities is mostly quantisation.
"""
from __future__ import annotations

import numpy as np

# "auto" keeps the linearised W_2 when its error estimate is at most this share of it.
LINEARISED_SHARE = 1e-2
# "auto" keeps the atoms' network simplex between two frames when q_mu + q_nu is at most
# this share of the value it returns (the value is then within a factor 1 +- 0.5 of the
# densities' W_p).
QUANTISATION_SHARE = 0.5
# ... and between atoms (a sample) and a frame when the frame's q is at most this share:
# there the grid's error adds in W^2, W_atoms^2 ~ W^2 + c q^2 with c ~ 1/2 (measured:
# 2000 uniform samples against the uniform frame at L = 24, q = 0.046, gave 0.0789 where
# 8000 Fibonacci points gave 0.0720: W^2 differs by 1.0e-3 = 0.49 q^2; 500 samples
# 0.26 q^2), so its error q^2 / (2 W) is at most half the value when q <= W.
SAMPLE_QUANTISATION_SHARE = 1.0


def _cell_moments(frame) -> tuple[np.ndarray, np.ndarray]:
    """``(s^2, r)`` per node of a frame's grid, flattened as ``grid_atoms`` flattens."""
    rho = frame["density"]
    if "time" in rho.dims:
        rho = rho.isel(time=0)
    w = np.broadcast_to(np.asarray(frame["weights"].values, dtype=float), rho.shape)
    if rho.dims == ("lat", "lon"):
        lat = np.asarray(frame["lat"].values, dtype=float)
        nlon = frame.sizes["lon"]
        edges = np.concatenate([[-np.pi / 2], 0.5 * (lat[1:] + lat[:-1]), [np.pi / 2]])
        lo, hi = edges[:-1] - lat, edges[1:] - lat
        s2_lat = (hi**3 - lo**3) / (3 * (hi - lo))  # mean (lat - lat_j)^2 over the band
        half = np.pi / nlon
        s2 = s2_lat + np.cos(lat) ** 2 * (2 * half) ** 2 / 12
        r = np.sqrt(np.maximum(lo**2, hi**2) + (np.cos(lat) * half) ** 2)
        shape = (lat.size, nlon)
        return (np.broadcast_to(s2[:, None], shape).ravel(),
                np.broadcast_to(r[:, None], shape).ravel())
    area = w.ravel()
    return area / 6, np.sqrt(area)  # a square cell: s^2 = area / 6, corner radius < sqrt


def quantisation(m, p: float) -> float:
    """The bound q on W_p(grid atoms, density) of a parsed frame (module docstring); 0
    for a measure made of atoms."""
    if m.frame is None:
        return 0.0
    s2, r = _cell_moments(m.frame)
    mass = m.weights / m.weights.sum()
    if p <= 2:
        return float(np.sqrt(mass @ s2))
    return float((mass @ r**p) ** (1.0 / p))


def guarded_atoms(value: float, mu, nu, p: float) -> float:
    """The atoms' value, or a ``ValueError`` when the quantisation could exceed
    ``QUANTISATION_SHARE`` of it (module docstring)."""
    q = quantisation(mu, p) + quantisation(nu, p)
    share = QUANTISATION_SHARE if mu.frame is not None and nu.frame is not None \
        else SAMPLE_QUANTISATION_SHARE
    if q <= share * value:
        return value
    raise ValueError(
        f'method="auto": the network simplex between the grid atoms gives W_{p:g} = '
        f"{value:.4g}, but the grid's quantisation can move it by up to {q:.3g} (more than "
        f"{share:g} of it): the densities are too close for their grid. Use "
        "spectral frames (zonal about a common axis: exact; p = 2: the linearised W_2 "
        'when they are close), a finer grid, or method="atoms" to accept the atoms\' '
        "value with that error")


def exact_refusal(m1, m2, p: float, why: str) -> ValueError:
    """The ``ValueError`` of ``method="exact"`` for sphere measures, one a density frame,
    that are not a zonal pair (``why``): what is exact, and the alternatives with their
    accuracy (module docstring)."""
    q = quantisation(m1, p) + quantisation(m2, p)
    spectral = all(m.frame is not None and m.method == "spectral" for m in (m1, m2))
    if p != 2:
        lin = f"not for p = {p:g}: it is the first-order W_2"
    elif not spectral:
        lin = "not here: it needs two spectral (Gauss-Legendre) frames"
    else:
        lin = ("the first-order W_2, relative error about 0.01 a^2 for densities a apart "
               "relative to their size, with an error estimate")
    return ValueError(
        f'method="exact" with a sphere density frame is the exact W_{p:g} only for two '
        f"spectral frames zonal about a common axis, but {why}. Alternatives: "
        f'"linearised" ({lin}); "atoms" (the exact transport between the grid atoms: '
        f"off from the densities' W_{p:g} by up to the grid's quantisation q = {q:.3g} for "
        "these frames, so only a distance well above q is measured by it: between close "
        'densities a apart it gives ~ sqrt(a h)); "auto" (the most accurate of these '
        "whose error is small against the distance it reports, else an error)")


def density_distance(m1, m2, p: float, method: str) -> float | None:
    """W_p of two parsed sphere frames by ``"zonal"``, ``"exact"`` (zonal or refused),
    ``"linearised"`` or ``"auto"`` (steps 1 and 2 of the module docstring); ``None`` when
    ``"auto"`` must go on to the atoms. Raises a ``ValueError`` when the method named does
    not apply."""
    from meanfield.metrics import sphere_linearised as sl
    from meanfield.metrics.sphere_zonal import zonal_wasserstein

    densities, why = [], ""
    for m, name in ((m1, "mu"), (m2, "nu")):
        try:
            densities.append(sl.SpectralDensity.from_frame(m.frame, name)
                             if m.frame is not None else None)
        except ValueError as err:
            densities.append(None)
            why = why or str(err)
        if m.frame is None:
            why = why or f"{name} is not a density frame (it is {m.points.shape[0]} points)"
    if None in densities:
        if method == "auto":
            return None
        if method == "exact":
            raise exact_refusal(m1, m2, p, why)
        raise ValueError(f"method={method!r} needs two spectral (Gauss-Legendre) sphere "
                         f"frames, but {why}; use method=\"atoms\" (the grid atoms, "
                         f"O(h) error), \"sinkhorn\" or \"sliced\"")
    mu, nu = densities
    if method in ("auto", "zonal", "exact"):
        pair, why = sl.zonal_pair(mu, nu)
        if pair is not None:
            return float(zonal_wasserstein(pair.mu, pair.nu, p))
        if method == "exact":
            raise exact_refusal(m1, m2, p, why)
        if method == "zonal":
            raise ValueError(f'method="zonal" needs two densities zonal about a common '
                             f"axis, but {why}; use \"auto\" or \"linearised\" (p = 2)")
    if p != 2:
        if method == "linearised":
            raise ValueError(f'method="linearised" is the first-order W_2 (a weighted H^-1 '
                             f"norm); there is no such linearisation of W_p for p = {p:g} "
                             "here: use p = 2, or \"zonal\" / \"atoms\"")
        return None
    try:
        lin = sl.linearised_w2(mu, nu)
    except ValueError:
        if method == "linearised":
            raise
        return None
    if method == "linearised" or lin.error <= LINEARISED_SHARE * lin.value:
        return lin.value
    # more accurate than the atoms can be promised to be, within the atoms' own share
    q = quantisation(m1, 2.0) + quantisation(m2, 2.0)
    if lin.error <= min(q, QUANTISATION_SHARE * lin.value):
        return lin.value
    return None
