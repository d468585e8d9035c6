"""What the contraction study does on zonal densities (``domain.geometry = "zonal"``, any
d): where it is exact, and what it refuses.

Measured, exactly:

- a zonal PDE density against the Dirac at its limit point (``+e`` or ``-e``, where a
  zonal density collapses without noise): ``W_2^2 = int angle(x, +-e)^2 dmu``, from the
  PDE's CDF of the polar angle (``meanfield.metrics.zonal_marginal``);
- a zonal PDE density against the stationary one (with noise: the uniform density, or
  the PDE continued to twice the final time, both zonal about e): ``W_2`` of the
  polar-angle marginals, which for two zonal measures is their ``W_2`` on S^{d-1}
  (the monotone rearrangement along the meridians is optimal);
- tokens on S^{d-1} without noise against the Dirac at their own limit point, closed form
  in any d (``meanfield.metrics.wasserstein``).

Refused (``ConfigError``): tokens with noise (their target, the stationary density on
S^{d-1}, is not zonal about their own wandering axis, and no W_2 between n points and a
density on S^{d-1}, d > 3, is computed here) and ``contraction.other`` (the pair
distance; two zonal densities may cluster at opposite poles, where the circle and the
sphere take the distance modulo rotation, which a zonal density has no room for).

Without noise a spectral run in high d meets its round-off before its resolution: the far
side's density falls like e^{-(d-1) t} while the cluster's peak grows like e^{(d-1) t},
and the negativity check stops the member (d = 5, L = 400 at t = 3.7); finite volumes are
positive and run on, their fitted rate carrying the scheme's numerical diffusion (d = 8,
800 cells: 0.92 for the exact 1).

The grid's resolved length at the pole (the floor of a noiseless PDE run, which stops
once the cluster's core is narrower than 4 of them) is ``j_{(d-2)/2,1} / L`` (spectral,
band limit L: the first Gauss node's angle from the pole, pi/L on S^2 as on the sphere,
growing like d/(2L): the measure sin^{d-2} pushes the nodes off the pole) or the cell
width pi/n; a Gaussian cluster in the (d-1)-dimensional tangent
space has ``W_2 = sqrt(d - 1) sigma`` and median distance ``sigma`` times the median of
the chi distribution with d - 1 degrees of freedom, whose ratio is ``core_scale(d)``
(1/Phi^-1(3/4) on S^1, sqrt(2)/sqrt(2 ln 2) on S^2, as ``contraction.CORE_SCALE``).
"""
from __future__ import annotations

import math

import numpy as np
import xarray as xr
from scipy import special, stats
from scipy.optimize import brentq

from meanfield.errors import ConfigError
from meanfield.metrics import zonal_marginal as zm


def check(cfg: dict, noisy: bool) -> None:
    """The refusals of the module docstring."""
    c = cfg["contraction"]
    if noisy and "particles" in c["sources"]:
        raise ConfigError("contraction.sources has \"particles\" with noise on the zonal "
                          "geometry: the tokens' target, the stationary density on S^{d-1} "
                          "about their own wandering axis, has no W_2 to n points computed "
                          "here in d > 3; use sources = [\"pde\"] (exact), or no "
                          "model.kappa", "contraction.sources")
    if c["other"] is not None:
        raise ConfigError("contraction.other on the zonal geometry: the pair distance is "
                          "taken modulo rotation where the two runs may cluster at opposite "
                          "poles, which zonal densities cannot express; leave "
                          "contraction.other out (or use the circle or the sphere)",
                          "contraction.other")


def core_scale(dim: int) -> float:
    """``W_2`` over the median distance of a Gaussian cluster on S^{dim-1}."""
    return math.sqrt(dim - 1) / float(stats.chi(dim - 1).median())


def spacing(solver) -> float:
    """The length the grid resolves at the pole, where a cluster collapses: ``j / L``
    (spectral; ``j`` the first zero of the Bessel function J_{(d-3)/2 + 1/2}, how far
    from the pole the first Gauss node of degree L sits in theta, times L: pi on S^2,
    about d/2 for large d) or the cell width pi/n (finite volumes)."""
    grid = solver.grid
    if solver.method != "spectral":
        return math.pi / grid.theta.size
    return first_bessel_zero(0.5 * (grid.dim - 2)) / grid.lmax


def first_bessel_zero(nu: float) -> float:
    """``j_{nu,1}``, the first positive zero of J_nu (nu >= 0), by Brent's method between
    nu (J_nu > 0 there) and ``nu + 1.86 nu^{1/3} + 2.5`` (past it, before the second
    zero)."""
    return brentq(lambda x: special.jv(nu, x), max(nu, 1e-12),
                  nu + 1.86 * nu ** (1 / 3) + 2.5, xtol=1e-13)


def wasserstein2(frame: xr.Dataset, target, modulo_rotation: bool = False) -> float:
    """``W_2`` of a zonal PDE frame to a Dirac at ``+-e`` (an array ``(1, 1)`` holding the
    sign, as ``contraction._mean_direction`` gives it) or to another zonal frame."""
    if isinstance(target, xr.Dataset):
        nodes, (a, b) = zm.angle_nodes([frame, target])
        return zm.cdf_wasserstein(nodes, a, b, 2.0)
    pole = 0.0 if float(np.ravel(target)[0]) > 0 else math.pi
    nodes, cdf = zm.angle_nodes(frame)
    return zm.line_wasserstein(np.array([pole]), nodes, cdf, 2.0)
