"""Measures as ``meanfield.metrics.wasserstein`` and ``meanfield.metrics.sobolev`` read
them (the forms are listed in the ``wasserstein`` module docstring): an array of points,
a ``(points, weights)`` pair, or one time frame of an evolve dataset, parsed into a
``Measure`` and validated before any transport (``as_measure``); two measures checked
against each other and against a method before they are compared (``check_pair``).

Masses: each measure's mass is the sum of its weights (1 for bare points; the integral
``sum(weights * density)`` for a dataset frame). The two masses must agree to a relative
``MASS_RTOL`` (1e-6), else a ``ValueError``: unnormalised weights are accepted when both
measures carry the same total, and a mismatch is an error, not silently rescaled.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from meanfield.metrics import sphere_transport as st
from meanfield.metrics.arguments import real_array

MASS_RTOL = 1e-6
METHODS = ("auto", "exact", "atoms", "sinkhorn", "sliced", "dirac", "zonal", "linearised")
GEOMETRIES = ("circle", "sphere")


@dataclass
class Measure:
    """A parsed measure: atoms (``points`` ``(n, d)``, circle ``angles``) or a density.

    Attributes:
        geometry: ``"circle"`` or ``"sphere"``.
        points: unit vectors ``(n, d)`` (atoms; a sphere density's nodes).
        weights: masses ``(n,)`` of the atoms (not normalised).
        mass: total mass.
        angles: circle atoms' angles (circle only).
        density: circle density values on ``2 pi j / n`` and its ``method`` (circle
            frames), else ``None``.
        method: the dataset's discretisation method (frames), else ``None``.
        frame: the dataset frame it came from (or ``None``).
    """

    geometry: str
    points: np.ndarray | None
    weights: np.ndarray | None
    mass: float
    angles: np.ndarray | None = None
    density: np.ndarray | None = None
    method: str | None = None
    frame: object = None

    @property
    def is_dirac(self) -> bool:
        """A single atom."""
        return self.density is None and self.weights is not None and self.weights.size == 1


def _is_dataset(obj) -> bool:
    return type(obj).__name__ == "Dataset" and hasattr(obj, "data_vars")


def _frame(ds, name: str) -> Measure:
    """A measure from one time frame of an evolve dataset."""
    if "density" not in ds.data_vars or "weights" not in ds.data_vars:
        raise ValueError(f"{name}: a dataset frame needs 'density' and 'weights' variables")
    geometry = ds.attrs.get("geometry")
    if geometry not in GEOMETRIES:
        raise ValueError(f"{name}: the dataset's attrs['geometry'] is {geometry!r}, "
                         f"expected one of {GEOMETRIES}")
    rho = ds["density"]
    if "time" in rho.dims:
        if rho.sizes["time"] != 1:
            raise ValueError(f"{name}: the dataset has {rho.sizes['time']} times; pass one "
                             "frame (ds.isel(time=k))")
        rho = rho.isel(time=0)
    w = ds["weights"]
    expected = {"circle": [("theta",)], "sphere": [("lat", "lon"), ("cell",)]}[geometry]
    if rho.dims not in expected or w.dims != rho.dims:
        raise ValueError(f"{name}: density on dims {rho.dims} (weights {w.dims}) does not "
                         f"match the geometry {geometry!r}, whose grids have dims "
                         f"{' or '.join(map(str, expected))}")
    values = np.asarray(rho.values, dtype=float)
    weights = np.asarray(w.values, dtype=float)
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(weights))):
        raise ValueError(f"{name}: density or weights contain NaN or inf")
    if np.any(weights < 0):
        raise ValueError(f"{name}: negative quadrature weights")
    mass = float(np.sum(weights * values))
    method = ds.attrs.get("method")
    if geometry == "circle":
        n = values.size
        theta = np.asarray(ds["theta"].values, dtype=float)
        if not np.allclose(theta, 2 * np.pi * np.arange(n) / n, rtol=0, atol=1e-12):
            raise ValueError(f"{name}: a circle density must sit on the nodes 2 pi j / n")
        if method not in ("spectral", "finite-volume"):
            raise ValueError(f"{name}: unknown circle method {method!r}")
        return Measure("circle", None, None, mass, density=values, method=method, frame=ds)
    if rho.dims == ("lat", "lon"):
        lat = np.asarray(ds["lat"].values, dtype=float)[:, None]
        lon = np.asarray(ds["lon"].values, dtype=float)[None, :]
    else:
        lat = np.asarray(ds["lat"].values, dtype=float)
        lon = np.asarray(ds["lon"].values, dtype=float)
    from solvers.grids.coordinates import unit_vectors

    points, masses = st.grid_atoms(unit_vectors(lat, lon), weights, values)
    return Measure("sphere", points, masses, mass, method=method, frame=ds)


def as_measure(obj, name: str = "measure") -> Measure:
    """Parse one measure (see the module docstring), validating it; no transport."""
    if _is_dataset(obj):
        return _frame(obj, name)
    weights = None
    if isinstance(obj, tuple):
        if len(obj) != 2:
            raise ValueError(f"{name}: a tuple must be (points, weights), got length "
                             f"{len(obj)}")
        obj, weights = obj
        weights = None if weights is None else real_array(weights, f"{name}'s weights")
    x = real_array(obj, name)
    if x.ndim == 0:
        x = x.reshape(1)
    if x.ndim == 1:  # angles on the circle
        if x.size < 1 or not np.all(np.isfinite(x)):
            raise ValueError(f"{name}: angles must be a non-empty finite array")
        w = st.validate_weights(weights, x.size, f"{name}'s weights")
        mass = float(w.sum()) if weights is not None else 1.0
        pts = np.stack([np.cos(x), np.sin(x)], axis=1)
        return Measure("circle", pts, w, mass, angles=np.mod(x, 2 * np.pi))
    x = st.validate_points(x, f"{name}'s points")
    w = st.validate_weights(weights, x.shape[0], f"{name}'s weights")
    mass = float(w.sum()) if weights is not None else 1.0
    if x.shape[1] == 2:
        return Measure("circle", x, w, mass,
                       angles=np.mod(np.arctan2(x[:, 1], x[:, 0]), 2 * np.pi))
    return Measure("sphere", x, w, mass)


def check_pair(mu: Measure, nu: Measure, geometry, method, modulo_rotation) -> str:
    """The geometry both measures live on, after the checks that they can be compared
    (same geometry and dimension, equal masses) by ``method`` (one of ``METHODS``).

    Raises:
        ValueError: naming what does not fit.
    """
    if geometry is not None and geometry not in GEOMETRIES:
        raise ValueError(f"geometry must be one of {GEOMETRIES} or None, got {geometry!r}")
    for m, name in ((mu, "mu"), (nu, "nu")):
        if geometry is not None and m.geometry != geometry:
            raise ValueError(f"{name} lives on the {m.geometry} but geometry={geometry!r}")
    if mu.geometry != nu.geometry:
        raise ValueError(f"mu lives on the {mu.geometry}, nu on the {nu.geometry}")
    if mu.points is not None and nu.points is not None \
            and mu.points.shape[1] != nu.points.shape[1]:
        raise ValueError(f"mu is in R^{mu.points.shape[1]}, nu in R^{nu.points.shape[1]}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if not (np.isfinite(mu.mass) and np.isfinite(nu.mass) and mu.mass > 0 and nu.mass > 0):
        raise ValueError(f"masses must be positive: {mu.mass:.6g}, {nu.mass:.6g}")
    if abs(mu.mass - nu.mass) > MASS_RTOL * max(mu.mass, nu.mass):
        raise ValueError(f"the measures have different total masses ({mu.mass:.10g} and "
                         f"{nu.mass:.10g}, relative tolerance {MASS_RTOL:g}); weights are "
                         "normalised only when the totals agree")
    if method == "dirac" and not (mu.is_dirac or nu.is_dirac):
        raise ValueError('method="dirac" needs one of the measures to be a single point')
    if modulo_rotation and mu.geometry == "sphere" and (mu.is_dirac or nu.is_dirac):
        raise ValueError("modulo_rotation with a Dirac on the sphere (the distance to the "
                         "nearest Dirac, a Frechet-mean problem) is not implemented")
    if mu.geometry == "circle" and method == "atoms":
        raise ValueError('method="atoms" is the transport between a sphere frame\'s grid '
                         'atoms; on the circle use "exact" (O(n log n), exact for '
                         'densities and atoms alike)')
    if mu.geometry == "circle" and method in ("zonal", "linearised"):
        raise ValueError(f'method="{method}" is for two densities on the sphere S^2; on '
                         'the circle use "exact" (O(n log n), exact)')
    if modulo_rotation and method in ("zonal", "linearised"):
        raise ValueError('modulo_rotation is available with "auto", "exact" and "atoms" '
                         f'only (the transport of atoms), not "{method}"')
    if mu.geometry == "circle" and method in ("sinkhorn", "sliced"):
        raise ValueError(f'method={method!r} is for the sphere; on the circle use "exact" '
                         '(O(n log n), exact)')
    if modulo_rotation and method in ("sinkhorn", "sliced"):
        raise ValueError('modulo_rotation is available with "auto", "exact" and "atoms" '
                         f'only (the transport of atoms), not {method!r}')
    return mu.geometry
