"""Real FFTs on a periodic grid, through pyfftw with cached plans (scipy.fft as fallback).

Convention: for ``f`` sampled at ``theta_j = 2 pi j / n``, ``forward(f)`` returns the
coefficients ``c_k = (1/n) sum_j f_j exp(-i k theta_j)``, ``k = 0..n//2``, so that
``f(theta) = sum_k c_k exp(i k theta)`` (the real series); ``inverse`` is its inverse.
With this scaling the coefficients do not depend on ``n``, so zero-padding a coefficient
array and calling ``inverse`` with a larger ``n`` interpolates the band-limited function.

Why the care: a pre-planned pyfftw ``execute()`` measured 5-15x faster than numpy.fft for
n = 256..65536, but planning costs 0.1-2 s and a second thread slows small transforms. So
plans are made once per (n, threads) and reused, FFTW wisdom is kept on disk between runs
(``~/.cache/meanfield/fftw-wisdom.bin``, or ``$MEANFIELD_CACHE``; plain checksummed bytes,
never a pickle: ``solvers.transforms.wisdom``), and the thread count is chosen from the
size unless given.
"""
from __future__ import annotations

import os
import threading
import warnings
from functools import lru_cache
from pathlib import Path

import numpy as np

from solvers.cache import cache_dir
from solvers.transforms import wisdom

try:  # pyfftw is a dependency, but a broken binary install must not make the package unusable
    import pyfftw
    HAVE_PYFFTW = True
except ImportError:  # pragma: no cover - exercised by monkeypatching in tests
    pyfftw = None
    HAVE_PYFFTW = False

# Below this size one thread is faster (thread start-up dominates); measured on 2 cores.
THREADS_MIN_SIZE = 1 << 15
_lock = threading.Lock()
_wisdom_loaded = False


def default_threads(n: int) -> int:
    """Threads for a transform of size ``n``: 1 for small n, up to the cores otherwise."""
    if n < THREADS_MIN_SIZE:
        return 1
    return max(1, min(os.cpu_count() or 1, 4))


def _wisdom_path() -> Path:
    return cache_dir() / wisdom.FILENAME


def _load_wisdom() -> None:
    """Import the cached wisdom once per process; a bad file is warned of and replaced."""
    global _wisdom_loaded
    if _wisdom_loaded or not HAVE_PYFFTW:
        return
    _wisdom_loaded = True
    path = _wisdom_path()
    try:
        pyfftw.import_wisdom(wisdom.read(path))
        return
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        return  # no wisdom (or none readable) only costs planning time
    except (OSError, ValueError) as exc:  # wisdom.BadWisdom is a ValueError
        reason = exc
    warnings.warn(f"ignoring the FFTW wisdom cache {str(path)!r} ({reason}); "
                  "it is written anew", RuntimeWarning, stacklevel=2)
    _save_wisdom()


def _save_wisdom() -> None:
    try:
        wisdom.write(_wisdom_path(), pyfftw.export_wisdom())
    except OSError:  # a read-only home must not stop a run
        pass


class RealFFT:
    """Forward/inverse real FFT of one size, planned once.

    Args:
        n: number of grid points.
        threads: FFTW threads; ``None`` chooses from ``n`` (see ``default_threads``).
        backend: ``"pyfftw"`` or ``"scipy"``; ``None`` takes pyfftw when importable.

    The arrays returned are internal buffers, overwritten by the next call: copy them if
    you keep them.
    """

    def __init__(self, n: int, threads: int | None = None, backend: str | None = None):
        if n < 2:
            raise ValueError(f"FFT size must be >= 2, got {n}")
        self.n = int(n)
        self.threads = default_threads(n) if threads is None else int(threads)
        if backend is None:
            backend = "pyfftw" if HAVE_PYFFTW else "scipy"
        if backend == "pyfftw" and not HAVE_PYFFTW:
            raise ValueError("backend 'pyfftw' requested but pyfftw cannot be imported")
        if backend not in ("pyfftw", "scipy"):
            raise ValueError(f"unknown FFT backend {backend!r}; valid: 'pyfftw', 'scipy'")
        self.backend = backend
        if backend == "pyfftw":
            with _lock:
                _load_wisdom()
                self._real = pyfftw.empty_aligned(self.n, dtype="float64")
                self._spec = pyfftw.empty_aligned(self.n // 2 + 1, dtype="complex128")
                flags = ("FFTW_MEASURE",)
                had = pyfftw.export_wisdom()
                self._fwd = pyfftw.FFTW(self._real, self._spec, direction="FFTW_FORWARD",
                                        flags=flags, threads=self.threads)
                self._bwd = pyfftw.FFTW(self._spec, self._real, direction="FFTW_BACKWARD",
                                        flags=flags + ("FFTW_DESTROY_INPUT",),
                                        threads=self.threads)
                if pyfftw.export_wisdom() != had:
                    _save_wisdom()

    def forward(self, f: np.ndarray) -> np.ndarray:
        """Coefficients ``c_k``, k = 0..n//2, of real samples ``f`` (length n)."""
        if self.backend == "scipy":
            import scipy.fft
            return scipy.fft.rfft(f, norm="forward")
        self._real[:] = f
        self._fwd.execute()
        self._spec *= 1.0 / self.n
        return self._spec

    def inverse(self, c: np.ndarray) -> np.ndarray:
        """Samples on the n-point grid of the real series with coefficients ``c``.

        ``c`` may be shorter than n//2 + 1 (it is zero-padded: band-limited interpolation)
        but not longer.
        """
        m = self.n // 2 + 1
        if len(c) > m:
            raise ValueError(f"{len(c)} coefficients do not fit a grid of {self.n} points")
        if self.backend == "scipy":
            import scipy.fft
            if len(c) < m:
                c = np.concatenate([c, np.zeros(m - len(c), complex)])
            return scipy.fft.irfft(c, n=self.n, norm="forward")
        self._spec[: len(c)] = c
        self._spec[len(c):] = 0.0
        self._bwd.execute()
        # FFTW's backward transform is unnormalised: sum_k c_k e^{ik theta}, as wanted.
        return self._real


class BatchRealFFT:
    """``RealFFT``'s transforms of many arrays at once (along the last axis), through
    scipy.fft: for operators applied to a stack of vectors (a dense Jacobian's columns),
    where one call on the stack beats a planned transform per vector. Same convention
    and zero-padding as ``RealFFT``; the results are new arrays.

    Args:
        n: number of grid points.
    """

    def __init__(self, n: int):
        if n < 2:
            raise ValueError(f"FFT size must be >= 2, got {n}")
        self.n = int(n)

    def forward(self, f: np.ndarray) -> np.ndarray:
        """Coefficients ``c_k``, k = 0..n//2, of real samples ``f`` (..., n)."""
        import scipy.fft

        return scipy.fft.rfft(f, axis=-1, norm="forward")

    def inverse(self, c: np.ndarray) -> np.ndarray:
        """Samples (..., n) of the real series with coefficients ``c`` (..., <= n//2 + 1)."""
        import scipy.fft

        if np.shape(c)[-1] > self.n // 2 + 1:
            raise ValueError(f"{np.shape(c)[-1]} coefficients do not fit a grid of "
                             f"{self.n} points")
        return scipy.fft.irfft(c, n=self.n, axis=-1, norm="forward")


@lru_cache(maxsize=64)
def real_fft(n: int, threads: int | None = None, backend: str | None = None) -> RealFFT:
    """A cached ``RealFFT`` for size ``n`` (plans are made once per process)."""
    return RealFFT(n, threads, backend)
