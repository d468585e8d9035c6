"""What a continuation returns: the branch (``Branch``) and its folds and bifurcations
(``SpecialPoint``), and the record that collects the branch point by point
(``BranchRecord``: the states, the user's eigenvalues, the callback, the stability).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Branch", "BranchRecord", "SpecialPoint", "unstable_count"]


@dataclass
class SpecialPoint:
    """A fold or a bifurcation located on a branch.

    Attributes:
        kind: "fold" or "bifurcation".
        lam: the parameter at the point.
        x: the state at the point.
        index: the point lies between ``branch.lam[index]`` and ``branch.lam[index + 1]``.
        multiplicity: 1 for a fold; for a bifurcation the change in the number of
            eigenvalues with positive real part (absolute value).
        eigenvalues: ``eigenvalues(x, lam)`` at the point when they were given.
        located: False when the location failed (a correction between the two points
            did not converge); the point is then ``branch.x[index]``.
    """

    kind: str
    lam: float
    x: np.ndarray
    index: int
    multiplicity: int = 1
    eigenvalues: np.ndarray | None = None
    located: bool = True


@dataclass
class Branch:
    """A computed branch.

    Attributes:
        lam: the parameter at each point, shape ``(p,)``.
        x: the states, shape ``(p, m)``.
        stable: per point, no eigenvalue with real part ``> eig_tol``; None when no
            ``eigenvalues`` were given.
        eigenvalues: per point the array returned by ``eigenvalues`` (empty list if none).
        special: the folds and bifurcations found, in the order met.
        status: "completed" (left ``lam_bounds``; the last point lies on the bound),
            "stopped" (``max_points`` reached or the callback asked to stop) or "failed"
            (the corrector failed with ``ds`` at ``ds_min``; the points so far are kept).
        message: what happened, with the ``lam`` and the reason on failure.
    """

    lam: np.ndarray
    x: np.ndarray
    stable: np.ndarray | None = None
    eigenvalues: list = field(default_factory=list)
    special: list = field(default_factory=list)
    status: str = "completed"
    message: str = ""


def unstable_count(eigs: np.ndarray, eig_tol: float) -> int:
    """The number of eigenvalues with real part above ``eig_tol``."""
    return int(np.sum(np.real(eigs) > eig_tol))


class BranchRecord:
    """The points of a branch as they are accepted, in ``y = (x, lam)``.

    Args:
        m: the size of ``x``.
        eigenvalues: ``eigenvalues(x, lam)``, called at each accepted point, or None.
        eig_tol: the real part above which an eigenvalue is unstable.
        callback: ``callback(index, x, lam)`` after each accepted point, or None.
    """

    def __init__(self, m: int, eigenvalues: Callable | None, eig_tol: float,
                 callback: Callable | None):
        self.m, self.eigenvalues, self.eig_tol, self.callback = (m, eigenvalues, eig_tol,
                                                                 callback)
        self.points: list[np.ndarray] = []
        self.eigs: list[np.ndarray] = []
        self.special: list[SpecialPoint] = []

    def __len__(self) -> int:
        return len(self.points)

    def accept(self, y: np.ndarray) -> bool:
        """Add the point ``y`` (with its eigenvalues); True when the callback asks to
        stop."""
        self.points.append(y)
        if self.eigenvalues is not None:
            self.eigs.append(np.asarray(self.eigenvalues(y[:-1], float(y[-1]))))
        if self.callback is None:
            return False
        return bool(self.callback(len(self.points) - 1, y[:-1].copy(), float(y[-1])))

    def result(self, status: str, message: str) -> Branch:
        """The branch so far, with ``status`` and ``message``."""
        arr = np.array(self.points) if self.points else np.zeros((0, self.m + 1))
        stable = (np.array([unstable_count(e, self.eig_tol) == 0 for e in self.eigs],
                           dtype=bool)
                  if self.eigenvalues is not None else None)
        return Branch(lam=arr[:, -1].copy(), x=arr[:, :-1].copy(), stable=stable,
                      eigenvalues=self.eigs, special=self.special, status=status,
                      message=message)
