"""Shared helpers for the tests."""
from __future__ import annotations

import os

import numpy as np
import pytest

# Keep FFTW wisdom of test runs away from the user's cache.
os.environ.setdefault("MEANFIELD_CACHE", os.path.join(os.path.dirname(__file__), ".cache"))


def fourier_mode(ds, k: int) -> np.ndarray:
    """Complex coefficient of e^{ik theta} of the saved densities, by the grid quadrature."""
    w = ds["weights"].values
    phase = np.exp(-1j * k * ds["theta"].values)
    return (ds["density"].values * w) @ phase / (2 * np.pi)


def fitted_rate(ds, k: int) -> float:
    """Least-squares slope of log|c_k(t)| over the saved times."""
    amp = np.abs(fourier_mode(ds, k))
    t = ds["time"].values
    return float(np.polyfit(t, np.log(amp), 1)[0])


@pytest.fixture
def kuramoto_r():
    from meanfield.demo import kuramoto_order_parameter
    return kuramoto_order_parameter
