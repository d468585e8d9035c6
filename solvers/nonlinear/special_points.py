"""Folds and bifurcations between two consecutive points ``y_a, y_b`` of a branch.

Detection: a fold where the ``lam``-component of the unit tangent changes sign; a
bifurcation where the number of eigenvalues with ``Re > eig_tol`` (from the user's
``eigenvalues(x, lam)``) changes, ``multiplicity = |n_b - n_a|`` (2 for a Hopf pair or a
double real eigenvalue from a symmetry). A change by one at a located fold is the fold
itself and is reported only as the fold.

Location, on the branch itself: a point at chord coordinate ``s`` in
``[0, |y_b - y_a|]`` solves ``F = 0`` with ``<c, y - y_a> = s`` (``c`` the unit chord),
and Brent's method (bracketed secant / inverse quadratic, superlinear) finds ``s`` where
the indicator changes sign: the ``lam``-component of the tangent for a fold (there
``lam`` is quadratic in ``s``, so an error ``d`` in ``s`` costs only ``O(d^2)`` in
``lam``), for a bifurcation the real part of the eigenvalue that crosses (the
``min(n_a, n_b)``-th largest real part) minus ``eig_tol``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from solvers.nonlinear.bordered import BorderedSystem
from solvers.nonlinear.branch import SpecialPoint, unstable_count

__all__ = ["SpecialPointFinder", "crossing"]

# indicator(point, chord) -> a number that changes sign at the special point
Indicator = Callable[[np.ndarray, np.ndarray], float]


def crossing(eigs: np.ndarray, idx: int, eig_tol: float) -> float:
    """The ``idx``-th largest real part of ``eigs`` minus ``eig_tol`` (``-inf`` if there
    are not that many)."""
    re = np.sort(np.real(np.asarray(eigs)))[::-1]
    return float(re[idx] - eig_tol) if idx < re.size else -np.inf


@dataclass(frozen=True)
class SpecialPointFinder:
    """Detects and locates the special points between two points of a branch.

    Attributes:
        system: the bordered system of the branch.
        eigenvalues: ``eigenvalues(x, lam)``, or None (no bifurcations then).
        eig_tol: an eigenvalue is unstable when its real part exceeds this.
        tol: Newton tolerance of the corrections on the chord.
        max_iter: Newton iterations of each correction on the chord.
        locate_tol: tolerance of the location in chord arclength.
    """

    system: BorderedSystem
    eigenvalues: Callable[[np.ndarray, float], np.ndarray] | None
    eig_tol: float
    tol: float
    max_iter: int
    locate_tol: float

    def fold(self, ya: np.ndarray, ta: np.ndarray, yb: np.ndarray, tb: np.ndarray,
             index: int) -> SpecialPoint | None:
        """The fold between ``ya`` and ``yb`` (tangents ``ta``, ``tb``), or None."""
        if not ta[-1] * tb[-1] < 0:
            return None
        return self._locate(ya, yb, self._tangent_lam, "fold", 1, index)

    def bifurcation(self, ya: np.ndarray, yb: np.ndarray, eigs_a: np.ndarray,
                    eigs_b: np.ndarray, after_fold: bool, index: int
                    ) -> SpecialPoint | None:
        """The bifurcation between ``ya`` and ``yb`` (eigenvalues ``eigs_a``,
        ``eigs_b``), or None; ``after_fold``: a fold lies between them."""
        na, nb = unstable_count(eigs_a, self.eig_tol), unstable_count(eigs_b, self.eig_tol)
        if na == nb or (after_fold and abs(nb - na) == 1):
            return None
        idx = min(na, nb)

        def indicator(p, _chord):
            return crossing(self.eigenvalues(p[:-1], float(p[-1])), idx, self.eig_tol)

        return self._locate(ya, yb, indicator, "bifurcation", abs(nb - na), index)

    def _tangent_lam(self, p: np.ndarray, chord: np.ndarray) -> float:
        tp = self.system.tangent(p, chord)
        if tp is None:
            raise RuntimeError("tangent failed")
        return float(tp[-1])

    def _point_at(self, ya: np.ndarray, chord: np.ndarray, s: float) -> np.ndarray:
        """The branch point at chord coordinate ``s`` from ``ya``."""
        res = self.system.correct(ya + s * chord, chord, chord @ ya + s, self.tol,
                                  self.max_iter)
        if not res.converged:
            raise RuntimeError(res.message)
        return res.x

    def _locate(self, ya: np.ndarray, yb: np.ndarray, g: Indicator, kind: str,
                multiplicity: int, index: int) -> SpecialPoint:
        """The special point between ``ya`` and ``yb`` where ``g`` changes sign
        (``located`` False, at ``ya``, when a correction on the way failed)."""
        length = float(np.linalg.norm(yb - ya))
        chord = (yb - ya) / length
        cache = {}

        def gs(s):
            p = ya if s == 0 else yb if s == length else self._point_at(ya, chord, s)
            cache[s] = p
            return g(p, chord)

        try:
            ga, gb = gs(0.0), gs(length)
            if ga == 0:
                s = 0.0
            elif gb == 0:
                s = length
            elif np.sign(ga) == np.sign(gb):
                raise RuntimeError("no sign change")
            else:
                s = brentq(gs, 0.0, length, xtol=self.locate_tol,
                           rtol=4 * np.finfo(float).eps)
            p = cache.get(s)
            if p is None:
                p = self._point_at(ya, chord, s)
        except (RuntimeError, ValueError):
            p, located = ya, False
        else:
            located = True
        ev = (np.asarray(self.eigenvalues(p[:-1], float(p[-1])))
              if self.eigenvalues is not None else None)
        return SpecialPoint(kind=kind, lam=float(p[-1]), x=p[:-1].copy(), index=index,
                            multiplicity=multiplicity, eigenvalues=ev, located=located)
