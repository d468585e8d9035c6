"""The matrix exponential shifted by the spectral abscissa, ``E(t) = e^{t(V - cI)}``, for
the many times of one run.

``c`` is the largest real part of V's eigenvalues (the spectral abscissa), so that E
neither overflows nor vanishes on V's leading directions; the growth ``e^{tc}`` is left
to the caller, who carries it as a logarithm. V is decomposed once,
``V = P diag(lambda) P^{-1}`` (``eigh`` for a symmetric V: P orthogonal), and where P is
well conditioned (``cond(P) <= EIGEN_COND``: every normal V, most others)
``E = P diag(e^{t(lambda - c)}) P^{-1}``, a few d x d products; a defective or nearly
defective V takes ``scipy.linalg.expm`` (Pade with scaling and squaring). Both give E to
round-off (relative ~ (t |V| + cond(P)) eps).

Users: the rescaled token flow ``z = e^{-tV} x`` of ``meanfield.model.weighted_attention``
(``RescaledForm``), and the config, which refuses a rescaled run whose E cannot be formed
at its final time (``meanfield.config.weights``).
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import expm

# The methods; the eigen path where the eigenvector matrix P of V has at most this
# condition number (its E errs by ~ cond(P) eps; measured against 40-digit mpmath,
# d <= 8, t <= 30: within 1e-13 like expm)
METHODS = ("auto", "eigen", "expm")
EIGEN_COND = 1e2


class ShiftedExponential:
    """``E(t) = e^{t(V - cI)}`` of one square matrix V (module docstring).

    Args:
        value: the ``(d, d)`` real matrix V (finite).
        method: ``"auto"`` (eigen where ``cond(P) <= EIGEN_COND``, else expm),
            ``"eigen"`` (refused where P is not well conditioned) or ``"expm"``.

    Attributes:
        abscissa: ``c``, the largest real part of V's eigenvalues.
        method: the path taken, ``"eigen"`` or ``"expm"``.
        dim: d.

    Raises:
        ValueError: an unknown method, or "eigen" for a V whose eigenvectors are not well
            conditioned.
    """

    def __init__(self, value: np.ndarray, method: str = "auto"):
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got "
                             f"{method!r}")
        self.value = np.asarray(value, dtype=float)
        self.dim = self.value.shape[0]
        if np.array_equal(self.value, self.value.T):
            lam, vec = np.linalg.eigh(self.value)
            inverse, cond = vec.T, 1.0
        else:
            lam, vec = np.linalg.eig(self.value)
            cond = float(np.linalg.cond(vec))
            inverse = np.linalg.inv(vec) if cond <= EIGEN_COND else None
        self.abscissa = float(np.max(lam.real))
        if method == "eigen" and inverse is None:
            raise ValueError(f"method 'eigen': the eigenvectors of V have condition number "
                             f"{cond:.3g} > {EIGEN_COND:g} (V defective or nearly so); "
                             "use 'expm' or 'auto'")
        self.method = "expm" if method == "expm" or inverse is None else "eigen"
        self._eigen = (lam - self.abscissa, vec, inverse)

    def __call__(self, t: float) -> np.ndarray:
        """``E = e^{t(V - cI)}`` (``(d, d)``).

        Raises:
            ValueError: E passes the double range (non-normal growth; expm path only:
                the eigen path's E is bounded by cond(P)).
        """
        if self.method == "eigen":
            lam, vec, inverse = self._eigen
            e = (vec * np.exp(t * lam)) @ inverse
            return e.real if np.iscomplexobj(e) else e
        e = expm(t * (self.value - self.abscissa * np.eye(self.dim)))
        if not np.all(np.isfinite(e)):
            raise ValueError(f"e^(tV) cannot be formed at t = {t:g} (non-normal growth "
                             "beyond the double range); integrate to a smaller time")
        return e
