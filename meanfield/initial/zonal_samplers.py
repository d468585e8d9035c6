"""Tokens drawn from a zonal density on S^{d-1} (``[domain] geometry = "zonal"``, any d >= 2).

A zonal density rho(t) of ``meanfield.initial.zonal`` (a function of ``t = <x, e>``, ``e``
the first coordinate vector, against the normalized surface measure) is the law of

    x = (t, sqrt(1 - t^2) u),   t ~ w_d (1 - t^2)^{(d-3)/2} rho(t) dt,   u uniform on S^{d-2},

with ``t`` and ``u`` independent (the law is invariant under the rotations that fix e,
and the marginal of t is the density times the measure's weight,
``solvers.transforms.gegenbauer``). ``zonal_tokens`` draws t by an exact sampler for each
kind and ``u`` as normalised standard Gaussians in R^{d-1} (d = 2: a random sign). Each
sampler draws the gap ``g = 1 - t`` (in [0, 2]) and takes ``sqrt(1 - t^2) = sqrt(g (2 -
g))``, so that a draw near e keeps its digits however concentrated the density is.

- ``uniform``: ``g / 2 ~ Beta((d-1)/2, (d-1)/2)``, the marginal of the uniform law
  (numpy's beta; for d in the thousands a bump of width ~ 1/sqrt(d) about t = 0).
- ``perturbed`` (``1 + a P_l(t)``, ``|P_l| <= 1``): rejection from the uniform marginal,
  accepted with probability ``(1 + a P_l(t)) / (1 + |a|)`` (at least 1/2).
- ``von_mises`` (``e^{c t}``, c up to 1e8): the von Mises-Fisher samplers of
  ``meanfield.initial.samplers`` about e: Wood's rejection for the gap (d >= 4), its
  inverse CDF (d = 3), the circle's von Mises angles (d = 2). Any d (Wood's acceptance
  is at least 0.67 for every d and c).
- ``mixture``: component labels i.i.d. with probabilities ``weight / sum(weights)``, each
  component's rows by its sampler.
- ``samples``: the zonal kernel density estimate (``meanfield.initial.zonal``) is the law
  of a von Mises-Fisher draw (concentration ``samples_concentration``) about the point
  ``(t_i, sqrt(1 - t_i^2) u_i)``, with ``t_i`` one of the file's values chosen uniformly
  and ``u_i`` uniform: averaging the kernel over the rotations that fix e is what makes
  the estimate zonal. The draw itself is that point's von Mises-Fisher draw.

Every sampler is exact in law (no grid, no truncation); the same generator state gives
the same tokens bit for bit.
"""
from __future__ import annotations

import numpy as np

from meanfield.initial import zonal as zonal_initial
from meanfield.initial.samplers import (
    _rejection,
    _vmf,
    _vmf_gap,
    _von_mises_angles,
)
from meanfield.model.tokens import check_size, initial_rng
from solvers.transforms import gegenbauer


def zonal_tokens(initial: dict, n: int, dim: int,
                 rng: np.random.Generator | int | None) -> np.ndarray:
    """``n`` i.i.d. draws on S^{dim-1} of the zonal density of ``initial``.

    Args:
        initial: a validated ``[initial]`` table of the zonal geometry.
        n: number of tokens, >= 2.
        dim: d of S^{d-1}, >= 2.
        rng: the Generator of the initial tokens (an int seed goes through
            ``meanfield.model.tokens.initial_rng``).

    Returns:
        float64 ``(n, dim)`` unit rows; ``x[:, 0] = <x, e>``.
    """
    check_size(n, dim)
    return _draw(initial, n, dim, initial_rng(rng))


def lift(gap: np.ndarray, dim: int, rng: np.random.Generator) -> np.ndarray:
    """The points ``(1 - g, sqrt(g (2 - g)) u)`` for gaps ``g = 1 - t`` and ``u`` uniform
    on S^{dim-2}, independent of g (normalised standard Gaussians; d = 2: a sign)."""
    g = np.asarray(gap, dtype=float)
    u = rng.standard_normal((g.size, dim - 1))
    scale = np.sqrt(np.clip(g * (2.0 - g), 0.0, None) / np.einsum("ij,ij->i", u, u))
    x = np.empty((g.size, dim))
    x[:, 0] = 1.0 - g
    np.multiply(u, scale[:, None], out=x[:, 1:])  # (no copies: d in the thousands)
    return x


def uniform_gaps(n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` gaps ``1 - t`` of the uniform law on S^{dim-1}: ``2 Beta((d-1)/2, (d-1)/2)``."""
    a = (dim - 1) / 2
    return 2.0 * rng.beta(a, a, n)


def _draw(initial: dict, n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    kind = initial["kind"]
    if kind == "mixture":
        comps = initial["components"]
        weights = np.array([c.get("weight", 1.0) for c in comps], dtype=float)
        labels = rng.choice(len(comps), size=n, p=weights / weights.sum())
        x = np.empty((n, dim))
        for i, comp in enumerate(comps):
            rows = np.flatnonzero(labels == i)
            x[rows] = _draw(comp, rows.size, dim, rng)
        return x
    if kind == "samples":
        return _kde_draws(initial, n, dim, rng)
    if kind == "von_mises" and dim == 2:  # the circle's angles about e, any c
        phi = _von_mises_angles(float(initial["concentration"]), n, rng)
        return np.column_stack([np.cos(phi), np.sin(phi)])
    return lift(_gaps(initial, n, dim, rng), dim, rng)


def _gaps(initial: dict, n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """Gaps ``1 - t`` of the kinds drawn through their marginal (module docstring)."""
    kind = initial["kind"]
    if kind == "uniform":
        return uniform_gaps(n, dim, rng)
    if kind == "von_mises":
        c = float(initial["concentration"])
        if c < 1e-17:  # e^{c t} is 1 to double precision
            return uniform_gaps(n, dim, rng)
        return _vmf_gap(c, dim, n, rng)
    if kind == "perturbed":
        a, degree = float(initial["amplitude"]), int(initial["degree"])
        top = 1.0 + abs(a)

        def propose(k: int) -> tuple[np.ndarray, np.ndarray]:
            g = uniform_gaps(k, dim, rng)
            return g, (1.0 + a * gegenbauer.degree_values(degree, dim, 1.0 - g)) / top

        return _rejection(n, 1.0 / top, rng, propose)
    raise ValueError(f"no zonal sampler for initial kind {kind!r}")


def _kde_draws(initial: dict, n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """Draws of the samples' zonal kernel estimate (module docstring)."""
    t_samples = zonal_initial.load_sample_t(initial["path"], dim)
    c = zonal_initial.samples_concentration(initial, t_samples)
    picks = t_samples[rng.integers(t_samples.size, size=n)]
    centers = lift(1.0 - picks, dim, rng)
    if dim == 2:  # the circle: a von Mises angle about each centre
        phi = np.arctan2(centers[:, 1], centers[:, 0]) + _von_mises_angles(c, n, rng)
        return np.column_stack([np.cos(phi), np.sin(phi)])
    return _vmf(centers, c, rng)

