"""The compiled pointwise parts of the zonal right-hand side (``meanfield.model.zonal``).

The transport's coefficients are ``G^T`` of the projection of the weighted flux ``g_i =
W_i rho_i S_i`` (``W_i = w_i / (1 - t_i^2)``, ``S = (1 - t^2) U'``): these kernels form
``g`` at the nodes and apply ``G^T``, fused so that a right-hand side is a few matrix
products and a few compiled loops, not a dozen elementwise numpy calls (at L = 511 those
cost as much as the products).

- ``make_zonal_flux``: ``g`` at every node from ``rho`` there;
- ``make_parity_flux``: from the even and odd parts of ``rho`` at the first half of the
  nodes (the tables split by parity), straight to the sums ``g(t) + g(-t)`` and
  differences ``g(t) - g(-t)`` that the even and odd projections take;
- ``make_parity_divergence``: ``G^T`` from the even and odd degrees of the projection;
- ``make_potential_rows``: the coefficients of ``G phi`` (and SA's ``phi``) from rho's.

``S`` is ``factor (1 - t^2) phi'`` (USA, factor ``c e^beta``) or ``factor (1 - t^2) phi' /
(M + beta phi)`` (SA, factor c: the slope of ``c log(K * rho) / beta``); ``pot`` holds
``(1 - t^2) phi'`` in its first row and (SA) ``phi`` in its second.
"""
from __future__ import annotations

import functools

import numba


def make_zonal_flux():
    """Compile ``flux(rho, pot, slope_weights, normalized, factor, beta, mean, out)``."""

    @numba.njit(cache=True, fastmath=False)
    def flux(rho, pot, slope_weights, normalized, factor, beta, mean, out):
        for i in range(rho.size):
            g = factor * slope_weights[i] * rho[i] * pot[0, i]
            if normalized:
                g = g / (mean + beta * pot[1, i])
            out[i] = g

    return flux


def make_parity_flux():
    """Compile ``flux(even, odd, pot, slope_weights, normalized, factor, beta, mean,
    total, difference)``: node i < n/2 and its mirror n - 1 - i (``t -> -t``) in one
    iteration; rho there is ``even + odd`` and ``even - odd``; the middle node of an odd
    count is its own mirror (counted once in ``total``, zero in ``difference``)."""

    @numba.njit(cache=True, fastmath=False)
    def flux(even, odd, pot, slope_weights, normalized, factor, beta, mean, total,
             difference):
        n = pot.shape[1]
        for i in range(even.size):
            j = n - 1 - i
            g = factor * slope_weights[i] * (even[i] + odd[i]) * pot[0, i]
            if normalized:
                g = g / (mean + beta * pot[1, i])
            if j == i:
                total[i] = g
                difference[i] = 0.0
                continue
            h = factor * slope_weights[j] * (even[i] - odd[i]) * pot[0, j]
            if normalized:
                h = h / (mean + beta * pot[1, j])
            total[i] = g + h
            difference[i] = g - h

    return flux


def make_parity_divergence():
    """Compile ``divergence(even, odd, down, up, out)``: ``out_l = down_l h_{l-1} + up_l
    h_{l+1}`` for l = 0..len(out) - 1, with ``h_k`` the projection (``even[k // 2]`` for
    even k, ``odd[k // 2]`` for odd k)."""

    @numba.njit(cache=True, fastmath=False)
    def divergence(even, odd, down, up, out):
        for l in range(out.size):
            half = l // 2
            if l % 2 == 0:
                lower = odd[half - 1] if l >= 2 else 0.0
                out[l] = down[l] * lower + up[l] * odd[half]
            else:
                out[l] = down[l] * even[half] + up[l] * even[half + 1]

    return divergence


def make_potential_rows():
    """Compile ``rows(c, a, down, up, out)``: with ``phi_m = a_m c_m`` (m < k, ``k =
    out.shape[1] - 1``), ``out[0]`` the coefficients of ``G phi`` (``G Q_m = down_m Q_{m-1}
    + up_m Q_{m+1}``, degrees 0..k) and, when ``out`` has two rows, ``out[1]`` those of
    ``phi`` (degree k zero)."""

    @numba.njit(cache=True, fastmath=False)
    def rows(c, a, down, up, out):
        k = out.shape[1] - 1
        for m in range(k + 1):
            value = 0.0
            if m >= 1:
                value += up[m - 1] * (a[m - 1] * c[m - 1])
            if m + 1 < k:
                value += down[m + 1] * (a[m + 1] * c[m + 1])
            out[0, m] = value
        if out.shape[0] > 1:
            for m in range(k):
                out[1, m] = a[m] * c[m]
            out[1, k] = 0.0

    return rows


zonal_flux_kernel = functools.cache(make_zonal_flux)
potential_rows_kernel = functools.cache(make_potential_rows)
parity_flux_kernel = functools.cache(make_parity_flux)
parity_divergence_kernel = functools.cache(make_parity_divergence)
