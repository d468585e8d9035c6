"""The power law of the convergence studies: the least-squares slope of ``log values``
against ``log n`` with its Student-t interval (``convergence`` and its Gaussian case
``gaussian_convergence`` fit every error this way)."""
from __future__ import annotations

import math

import numpy as np
from scipy import stats


def fit_slope(n: np.ndarray, values: np.ndarray, level: float = 0.95
              ) -> tuple[float, float, float]:
    """Least-squares slope of ``log values`` against ``log n`` and its ``level`` interval
    (Student t with len - 2 degrees of freedom); NaN where it cannot be fitted."""
    ok = np.isfinite(values) & (values > 0)
    x, y = np.log(n[ok]), np.log(values[ok])
    if x.size < 3 or np.ptp(x) == 0:
        return math.nan, math.nan, math.nan
    fit = stats.linregress(x, y)
    half = stats.t.ppf(0.5 + level / 2, x.size - 2) * fit.stderr
    return float(fit.slope), float(fit.slope - half), float(fit.slope + half)
