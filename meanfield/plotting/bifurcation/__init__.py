"""Figures of a bifurcation study (``meanfield.studies.bifurcation``): ``diagrams`` (the
bifurcation diagram, the free energy, the parameter map; registers the kind),
``curves`` (the branches as computed, split into runs of equal stability) and
``across_dims`` (a study across dimensions).

The public figures are re-exported here, where the module
``meanfield.plotting.bifurcation`` had them before the figures were grouped by family."""
from __future__ import annotations

from meanfield.plotting.bifurcation.diagrams import (
    bifurcation_diagram,
    bifurcation_figure,
    free_energy_diagram,
    map_figure,
)

__all__ = ["bifurcation_diagram", "bifurcation_figure", "free_energy_diagram", "map_figure"]
