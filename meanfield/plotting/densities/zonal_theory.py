"""The linear theory of the uniform density on S^{d-1} in every dimension, drawn
(docs/conventions.md §3): the growth rates σ_l = l(l + d − 2)(c a_l − 1/κ) against the
degree l for several d, and the critical noise κ_c = 1/(c a_1) against β for several d,
scaled so that the dimensions collapse:

- SA: κ_c/d against β/d, which tends as d → ∞ to 1/2 + √(1/4 + (β/d)²) (Debye's uniform
  asymptotics of I_{d/2}/I_{d/2−1});
- USA: κ_c/d against β/√d, which tends to e^{−(β/√d)²/2} (a_1 = ₀F₁(; d/2 + 1; β²/4)/d);

both equal 1 at β = 0 (κ_c = d, the noisy Kuramoto threshold in dimension d). Every
number comes from ``meanfield.model.zonal_kernels``, in logarithms (finite at d = 4096).

Typical use::

    from meanfield.plotting.densities.zonal_theory import linear_theory_figure
    fig = linear_theory_figure(dims=(2, 3, 8, 64, 512), beta=16.0)
    fig.savefig("linear_theory.png", dpi=150)
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from scipy import special

from meanfield.errors import ConfigError
from meanfield.model.zonal_kernels import (
    log_funk_hecke,
    zonal_critical_kappa,
    zonal_growth_rate,
)
from meanfield.plotting.helpers import _new_figure, _letter_panels, style

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

DIMS: tuple[int, ...] = (2, 3, 8, 64, 512)
_SCALED_BETA = np.geomspace(1e-2, 1e2, 240)  # β/d (SA) and β/√d (USA) on the x axes
SYMLOG_LINEAR = 0.5  # the growth-rate axis is linear on [-0.5, 0.5]
_LIMIT_STYLE = {"color": "black", "lw": 1.0, "ls": (0, (4, 2)), "zorder": 5}


def _check_dims(dims: Sequence[int]) -> list[int]:
    out = [int(d) for d in dims]
    if not out or any(d < 2 or d != e for d, e in zip(out, dims)):
        raise ConfigError(f"dims = {list(dims)!r}: need integers d >= 2", "dims")
    return out


def dim_colours(dims: Sequence[int]) -> list:
    """One colour per dimension, from dark (small d) to light, on a truncated plasma."""
    from matplotlib import colormaps

    return list(colormaps["plasma"](np.linspace(0.0, 0.8, len(dims))))


def log_critical_kappa(dim: int, beta: float, normalized: bool, value: float = 1.0
                       ) -> float:
    """``log κ_c`` from the logarithms of the multipliers (USA's κ_c underflows past
    β ≈ 700; ``zonal_critical_kappa`` then returns 0). SA's ratio λ_1/λ_0 =
    I_{d/2}(β)/I_{d/2−1}(β) comes from scipy's scaled Bessel functions where both are
    normal doubles (``log_funk_hecke``'s recurrence takes 2β steps: at β = 5e4 a tenth
    of a second)."""
    if beta == 0:
        return math.log(dim / value)
    nu = dim / 2 - 1
    if normalized:
        top, bottom = special.ive([nu + 1, nu], beta)
        if min(top, bottom) > 1e-290:
            return -(math.log(top / bottom) - math.log(beta) + math.log(value))
    logs = log_funk_hecke(1, dim, beta)
    log_a1 = logs[1] - math.log(beta) - (logs[0] if normalized else 0.0)
    return -(log_a1 + math.log(value))


def growth_rates_by_dim(ax: Axes, dims: Sequence[int] = DIMS, beta: float = 16.0,
                        kappa: float | None = None, ratio: float | None = 1.5,
                        normalized: bool = True, value: float = 1.0, lmax: int = 8
                        ) -> list:
    """Draw σ_l against l = 1..lmax, one curve per dimension (filled markers: unstable
    degrees). The y axis is linear within ±``SYMLOG_LINEAR`` (where the unstable rates
    are) and logarithmic beyond (the damped degrees reach −l(l + d − 2)/κ).

    Args:
        ax: the axes.
        dims: the dimensions d (S^{d-1}).
        beta: β, the same in every dimension.
        kappa: κ, the same in every dimension; or None to take ``ratio`` κ_c(d) in each
            (the same distance above each threshold: then σ_1 is comparable across d).
        ratio: κ/κ_c(d) when ``kappa`` is None.
        normalized: SA (True) or USA.
        value: c of V = c I.
        lmax: the largest degree drawn.

    Returns:
        The ``Line2D`` of each dimension, in the order of ``dims``.
    """
    dims = _check_dims(dims)
    if (kappa is None) == (ratio is None):
        raise ConfigError("give exactly one of kappa and ratio", "kappa")
    l = np.arange(1, lmax + 1)
    lines = []
    for d, colour in zip(dims, dim_colours(dims)):
        k = kappa if kappa is not None else ratio * zonal_critical_kappa(
            d, beta, normalized, value)
        sigma = np.asarray(zonal_growth_rate(l, d, beta, k, normalized, value))
        (line,) = ax.plot(l, sigma, color=colour, lw=1.2, label=f"d = {d}", zorder=3)
        ax.plot(l[sigma > 0], sigma[sigma > 0], "o", color=colour, ms=4.5, zorder=4)
        ax.plot(l[sigma <= 0], sigma[sigma <= 0], "o", mfc="white", mec=colour, ms=4.5,
                zorder=4)
        lines.append(line)
    ax.axhline(0.0, color="0.6", lw=0.8, zorder=1)
    _symlog_axis(ax, min(float(np.min(line.get_ydata())) for line in lines))
    ax.set_xticks(l[:: max(1, lmax // 10)])
    ax.set_xlim(0.5, lmax + 0.5)
    ax.set_xlabel("degree $l$")
    ax.set_ylabel(r"growth rate $\sigma_l$")
    noise = (rf"$\kappa = {kappa:g}$" if kappa is not None else
             rf"$\kappa = {ratio:g}\,\kappa_c(d)$")
    ax.set_title(f"{'SA' if normalized else 'USA'}, " + rf"$\beta = {beta:g}$, {noise}",
                 loc="left")
    return lines


def _symlog_axis(ax: Axes, lowest: float) -> None:
    """Linear on [−SYMLOG_LINEAR, SYMLOG_LINEAR], logarithmic below, plain tick labels."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    ax.set_yscale("symlog", linthresh=SYMLOG_LINEAR, linscale=1.0)
    ticks = [0.4, 0.2, 0.0, -0.2, -0.4] + [-v for v in (1, 3, 10, 30, 100, 300, 1000)
                                           if -v >= 1.3 * lowest]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}".replace("-", "−")))
    ax.set_ylim(1.3 * lowest, 0.45)


def critical_kappa_by_dim(ax: Axes, normalized: bool, dims: Sequence[int] = DIMS,
                          value: float = 1.0, limit: bool = True) -> list:
    """Draw κ_c/d against β/d (SA) or β/√d (USA), one curve per dimension.

    Args:
        ax: the axes (log-log).
        normalized: SA (x = β/d) or USA (x = β/√d).
        dims: the dimensions d.
        value: c of V = c I (κ_c = 1/(c a_1)).
        limit: draw the large-d limit (module docstring), dashed black.

    Returns:
        The ``Line2D`` of each dimension, in the order of ``dims``.
    """
    dims = _check_dims(dims)
    x = _SCALED_BETA
    lines = []
    for d, colour in zip(dims, dim_colours(dims)):
        scale = d if normalized else math.sqrt(d)
        logs = np.array([log_critical_kappa(d, b * scale, normalized, value) for b in x])
        (line,) = ax.plot(x, np.exp(logs - math.log(d)), color=colour, lw=1.4,
                          label=f"d = {d}")
        lines.append(line)
    if limit:
        shape = 0.5 + np.sqrt(0.25 + x**2) if normalized else np.exp(-x**2 / 2)
        ax.plot(x, shape / value, label="d → ∞", **_LIMIT_STYLE)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x[0], x[-1])
    if not normalized:
        ax.set_ylim(1e-6, 3.0)
    ax.set_xlabel(r"$\beta/d$" if normalized else r"$\beta/\sqrt{d}$")
    ax.set_ylabel(r"$\kappa_c\,/\,d$")
    ax.set_title(r"SA: $\kappa_c \to d/2 + \sqrt{d^2/4 + \beta^2}$" if normalized
                 else r"USA: $\kappa_c \to d\,e^{-\beta^2/(2d)}$", loc="left")
    return lines


def linear_theory_figure(dims: Sequence[int] = DIMS, beta: float = 16.0,
                         kappa: float | None = None, ratio: float | None = 1.5,
                         normalized: bool = True, value: float = 1.0) -> Figure:
    """The three panels in a row: σ_l against l (``growth_rates_by_dim``), and κ_c/d for
    SA and USA (``critical_kappa_by_dim``), one legend of the dimensions under them.

    Args:
        dims, beta, kappa, ratio, normalized, value: as ``growth_rates_by_dim`` (the
            κ_c panels draw both models, and use ``dims`` and ``value``).

    Returns:
        A ``matplotlib.figure.Figure`` (not registered with pyplot).
    """
    with style():
        fig = _new_figure((7.5, 3.0))
        axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.0, 1.0, 1.0]})
        growth_rates_by_dim(axes[0], dims, beta, kappa, ratio, normalized, value)
        critical_kappa_by_dim(axes[1], True, dims, value)
        critical_kappa_by_dim(axes[2], False, dims, value)
        _letter_panels(axes)
        handles, labels = axes[1].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=len(handles))
        fig.suptitle(r"The uniform density on $S^{d-1}$: growth rates and critical noise "
                     r"($\kappa_c = d$ at $\beta = 0$)", fontsize=9.5)
    return fig
