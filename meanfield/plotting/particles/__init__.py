"""Figures of token runs on the circle and the sphere (``kind = "particles"``,
``meanfield.particles``): ``figures`` (the summary, the pages and the animation; registers
the kind) and ``panels`` (``trajectories``, ``token_map``, ``gram`` and the helpers the
comparison figures share). Tokens in R^d with general weights are in
``meanfield.plotting.weights``.

The panels are re-exported here, where the module ``meanfield.plotting.particles`` had
them before the figures were grouped by family."""
from __future__ import annotations

from meanfield.plotting.particles.panels import gram, token_map, trajectories

__all__ = ["gram", "token_map", "trajectories"]
