"""Figures of a correlations study (``meanfield.studies.correlations``): ``figures``, the
BBGKY hierarchy's one- and two-point functions of token ensembles.

Its panels are re-exported here, where the module ``meanfield.plotting.correlations``
had them before the figures were grouped by family."""
from __future__ import annotations

from meanfield.plotting.correlations.figures import (
    closure,
    max_against_n,
    one_point,
    scaled_correlation,
)

__all__ = ["closure", "max_against_n", "one_point", "scaled_correlation"]
