"""Figures of tokens in R^d with general weights (Q, K, V), the pictures of [GLPR23]
(docs/weights.md): ``panels`` (token paths, attention matrices, the distance to Boolean,
the polytope, the hyperplanes, the origin), ``figures`` (what ``meanfield.plot`` draws
for ``geometry = "euclidean"``; registers it), ``token_series`` (the tokens and their
attention as the panels read them) and ``vertices`` (the polytope's vertex labels and
the distance to the nearest vertex).

The panels are re-exported here, where the module ``meanfield.plotting.weights`` had
them before the figures were grouped by family."""
from __future__ import annotations

from meanfield.plotting.weights.panels import (
    TokenSeries,
    attention_snapshots,
    boolean_distance_plot,
    hyperplane_plot,
    origin_plot,
    polytope_plot,
    token_paths,
)

__all__ = ["TokenSeries", "attention_snapshots", "boolean_distance_plot",
           "hyperplane_plot", "origin_plot", "polytope_plot", "token_paths"]
