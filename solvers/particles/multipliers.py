"""What a fast interaction sum needs from its caller, and the limits of the fast methods.

The fast methods (``solvers.particles.fourier`` on S^1, ``solvers.particles.harmonic`` on
S^2) expand the kernel ``e^{beta <q, y>}`` in Fourier modes or spherical harmonics up to
an order K or L. The expansion's coefficients (Bessel functions of beta) and the order
that meets an accuracy are attention physics: the caller computes them
(``meanfield.model.kernels.fast_multipliers``) and hands them over as a
``FastMultipliers``; nothing here evaluates a Bessel function.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

METHODS = ("auto", "direct", "fourier", "harmonic")
FAST_METHOD = {2: "fourier", 3: "harmonic"}  # dimension -> its fast method
PACKAGE = {"fourier": "finufft", "harmonic": "ducc0"}
ACCURACY_FLOOR = {2: 1e-13, 3: 1e-12}
MAX_ORDER = {2: 100_000, 3: 1000}  # K resp. L beyond this: too expensive
TOOL_SAFETY = 4.0  # transform tolerance = accuracy / this (measured errors <= 0.8 tol)
TOOL_EPS_MIN = {2: 1e-14, 3: 2.5e-13}  # finufft's double limit; ducc0 asserts > 2e-13
RELATIVE_MARGIN = 10.0  # relative_rows: uniform-density rows pass with this margin


@dataclass(frozen=True, eq=False)
class FastMultipliers:
    """The truncated expansion of ``e^{beta <q, y>}`` a fast method applies.

    Attributes:
        d: the dimension: 2 (``"fourier"``, S^1) or 3 (``"harmonic"``, S^2).
        beta: inverse temperature, finite and >= 0.
        accuracy: what the truncation (half) and the transforms (half) are run for:
            every component of the sums is within ``accuracy n e^beta``.
        order: the truncation order, K on S^1, L on S^2.
        values: d = 2: one array ``I_k(beta) e^{-beta}`` for ``k = -(K+2)..K+2`` (the
            sums use ``|k| <= K``, their tangent part ``|k| <= K + 2``); d = 3: the three
            arrays ``(k_l, k'_l, g_l)``, l = 0..L: ``4 pi e^{-beta}`` times ``i_l(beta)``,
            ``i_l'(beta)`` and ``i_l(beta)/beta`` (the kernel, its radial and its tangent
            part).
        row_accuracy: for ``relative_rows``: the accuracy each row must meet relative to
            its own sum (``accuracy`` above is then the smaller one the fast method runs
            at); None for plain sums.
    """

    d: int
    beta: float
    accuracy: float
    order: int
    values: tuple[np.ndarray, ...]
    row_accuracy: float | None = None


def check_dimension(d: int) -> None:
    """``ValueError`` unless ``d`` has a fast method."""
    if d not in FAST_METHOD:
        raise ValueError(f"fast sums exist for d = 2 ('fourier') and d = 3 ('harmonic'), "
                         f"not d = {d}; use method 'direct'")


def check_fast_inputs(d: int, beta: float, accuracy: float) -> None:
    """``ValueError`` (saying what is accepted) unless the fast method of ``d`` takes
    ``beta`` and ``accuracy``: finite ``beta >= 0``, ``accuracy`` in [floor, 1). Whether
    its order stays affordable is the caller's check (it knows the kernel)."""
    check_dimension(d)
    name = FAST_METHOD[d]
    if not (math.isfinite(beta) and beta >= 0):
        raise ValueError(f"method {name!r} needs a finite beta >= 0, not {beta}; use "
                         "'direct'")
    if not (math.isfinite(accuracy) and ACCURACY_FLOOR[d] <= accuracy < 1):
        raise ValueError(f"method {name!r} reaches accuracies in [{ACCURACY_FLOOR[d]:g}, 1), "
                         f"not {accuracy!r}; use 'direct' for more")


def check_multipliers(multipliers: FastMultipliers | None, d: int, beta: float) -> None:
    """``ValueError`` unless ``multipliers`` are for dimension ``d`` and this ``beta``."""
    if multipliers is None:
        raise ValueError(f"method {FAST_METHOD.get(d)!r} needs the kernel's multipliers "
                         "(meanfield.model.kernels.fast_multipliers)")
    if multipliers.d != d or multipliers.beta != beta:
        raise ValueError(f"multipliers for d = {multipliers.d}, beta = {multipliers.beta} "
                         f"given to sums with d = {d}, beta = {beta}")


def tool_eps(d: int, accuracy: float) -> float:
    """The tolerance the transforms run at for ``accuracy`` (half of the error budget)."""
    return min(1e-2, max(accuracy / TOOL_SAFETY, TOOL_EPS_MIN[d]))
