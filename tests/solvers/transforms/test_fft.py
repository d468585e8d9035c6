"""FFT wrapper: conventions, both backends, band-limited interpolation, cached plans."""
from __future__ import annotations

import numpy as np
import pytest

from solvers.grids.circle import CircleGrid, padded_size
from solvers.transforms import fft as fftmod

BACKENDS = ["pyfftw", "scipy"] if fftmod.HAVE_PYFFTW else ["scipy"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [8, 30, 64, 1000, 4096])
def test_forward_inverse_convention(backend, n):
    rng = np.random.default_rng(n)
    f = rng.standard_normal(n)
    F = fftmod.RealFFT(n, backend=backend)
    c = F.forward(f).copy()
    np.testing.assert_allclose(c, np.fft.rfft(f) / n, atol=1e-15 * n)
    np.testing.assert_allclose(F.inverse(c), f, atol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_padding_interpolates(backend):
    n, m = 32, 48
    th_m = 2 * np.pi * np.arange(m) / m
    f = lambda t: np.cos(3 * t) + 0.5 * np.sin(7 * t) + 0.25
    c = fftmod.RealFFT(n, backend=backend).forward(f(2 * np.pi * np.arange(n) / n)).copy()
    np.testing.assert_allclose(fftmod.RealFFT(m, backend=backend).inverse(c), f(th_m),
                               atol=1e-14)


def test_plans_are_cached_and_threads_chosen_by_size():
    assert fftmod.real_fft(256) is fftmod.real_fft(256)
    assert fftmod.default_threads(1024) == 1
    assert fftmod.default_threads(1 << 20) >= 1
    assert padded_size(64) == 96 and padded_size(10) == 16


def test_scipy_fallback_when_pyfftw_missing(monkeypatch):
    monkeypatch.setattr(fftmod, "HAVE_PYFFTW", False)
    fftmod.real_fft.cache_clear()
    try:
        g = CircleGrid(64)
        assert g.fft.backend == "scipy"
        f = np.cos(g.theta)
        np.testing.assert_allclose(g.synthesis(g.analysis(f)), f, atol=1e-15)
    finally:
        fftmod.real_fft.cache_clear()


def test_solutions_agree_across_backends():
    from meanfield import evolve
    cfg = {"model": {"beta": 2.0, "kappa": 5.0},
           "discretization": {"resolution": 64},
           "time": {"t_final": 1.0, "save_every": 0.5, "dt": 0.01}}
    a = evolve(cfg)
    fftmod.real_fft.cache_clear()
    orig = fftmod.RealFFT.__init__

    def scipy_init(self, n, threads=None, backend=None):
        orig(self, n, threads, "scipy")

    try:
        fftmod.RealFFT.__init__ = scipy_init
        b = evolve(cfg)
    finally:
        fftmod.RealFFT.__init__ = orig
        fftmod.real_fft.cache_clear()
    np.testing.assert_allclose(a.density, b.density, atol=1e-13)


def test_batch_transforms_equal_the_planned_ones():
    """``BatchRealFFT`` on a stack equals ``RealFFT`` row by row (zero-padding of short
    coefficient arrays included)."""
    from solvers.transforms.fft import BatchRealFFT, RealFFT

    rng = np.random.default_rng(3)
    for n in (12, 15):
        one, many = RealFFT(n), BatchRealFFT(n)
        f = rng.standard_normal((5, n))
        np.testing.assert_allclose(many.forward(f), [one.forward(r).copy() for r in f],
                                   atol=1e-14)
        c = rng.standard_normal((5, 4)) + 1j * rng.standard_normal((5, 4))
        c[:, 0] = c[:, 0].real
        np.testing.assert_allclose(many.inverse(c), [one.inverse(r).copy() for r in c],
                                   atol=1e-13)
    with pytest.raises(ValueError):
        BatchRealFFT(8).inverse(np.zeros((2, 6)))
