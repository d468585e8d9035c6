"""Token models whose weights change with depth (``[weights] layers`` or ``redraw``;
``meanfield.config.depth_weights`` says which weights hold at which depth t).

- ``depth_heads(cfg, piece)``: the heads of one piece (``layers`` entry, or ``redraw``
  block) as ``Head`` s.
- ``DepthModel``: the model of each piece made by a builder (the weighted models of
  ``meanfield.model.weighted_particles``, or the rescaled layers of
  ``meanfield.model.layers``), one active at a time (``select(t)``); its ``velocity``,
  ``check_state`` and ``layer`` are the active piece's, its ``attention(x, t)`` that of
  the piece in force at t (a switch belongs to the piece that starts there; a run's final
  time to the last piece it used).
- ``PiecewiseStepper``: the ODE between save times cut at the switches, each piece
  integrated with its own weights and landing on the switch (no step straddles the jump
  of the field, so the integrator keeps its order; on a layer grid the switches are
  layers, ``meanfield.model.layers.LayerStepper``).

Every piece is a function of its index alone (a ``redraw`` block's matrices come from
seeds derived from the config's seed), so a resumed run rebuilds the same weights.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from meanfield.config import depth_weights as depth
from meanfield.config.weights import weight_matrix
from meanfield.errors import SolverError
from meanfield.model.weighted_attention import Head

# piece models kept (a layers list reuses its entries; redraw blocks come in order)
CACHED_PIECES = 4


def depth_heads(cfg: dict, piece: int) -> tuple[Head, ...]:
    """The heads of ``piece`` of a validated config with weights that change with depth."""
    w, d = cfg["weights"], cfg["domain"]["dim"]
    key = depth.depth_key(w)
    return tuple(Head(*(weight_matrix(spec[k], d, f"weights.{key}[{piece}].{k}")
                        for k in depth.MATRICES))
                 for spec in depth.specs_at(w, piece))


class DepthModel:
    """The piece models of weights that change with depth (module docstring).

    Args:
        table: the clean ``[weights]`` table (with ``layers`` or ``redraw``).
        build: ``piece -> model`` (every piece the same kind of model).
        t_final: the run's final time (the last piece used).
    """

    def __init__(self, table: dict, build: Callable[[int], object], t_final: float):
        self.table, self.build = table, build
        self.last_piece = len(depth.switch_times(table, t_final))
        self._models: dict[int, object] = {}
        self.piece = -1
        first = self.select(0.0)
        self.on_sphere = first.on_sphere
        self.euclidean = getattr(first, "euclidean", False)
        self.time_dependent = getattr(first, "time_dependent", False)
        self.heads = first.heads
        self.name = f"{first.name}; weights that change with depth ({depth.depth_key(table)})"

    def piece_at(self, t: float) -> int:
        """The piece in force at depth ``t``, within the pieces the run uses."""
        return min(depth.piece_at(self.table, t), self.last_piece)

    def model_of(self, piece: int):
        """The model of ``piece`` (built once while kept)."""
        model = self._models.get(piece)
        if model is None:
            model = self.build(piece)
            if len(self._models) >= CACHED_PIECES:
                del self._models[next(iter(self._models))]
            self._models[piece] = model
        return model

    def select(self, t: float):
        """Make the piece of depth ``t`` the active one; returns its model."""
        self.piece = self.piece_at(t)
        self.current = self.model_of(self.piece)
        return self.current

    def velocity(self, x: np.ndarray, *t: float) -> np.ndarray:
        """The active piece's velocity (``velocity(z, t)`` for a time-dependent one)."""
        return self.current.velocity(x, *t)

    def check_state(self, x: np.ndarray, t: float) -> None:
        check = getattr(self.current, "check_state", None)
        if check is not None:
            check(x, t)
        elif not np.all(np.isfinite(x)):
            raise SolverError(f"the tokens became non-finite at t = {t:.6g}")

    def attention(self, x: np.ndarray, t: float) -> np.ndarray:
        """The attention matrices of the weights in force at ``t``."""
        return self.model_of(self.piece_at(t)).attention(x, t)


class PiecewiseStepper:
    """A ``TokenStepper`` (or any stepper with its ``advance``) run piece by piece.

    Args:
        stepper: the stepper of the ``DepthModel`` (its field is the active piece's).
        model: that ``DepthModel``.
        t_final: the run's final time.
    """

    def __init__(self, stepper, model: DepthModel, t_final: float):
        self.stepper, self.model = stepper, model
        self.switches = depth.switch_times(model.table, t_final)
        self.slack = depth.SWITCH_SLACK * depth.unit(model.table)

    steps = property(lambda self: self.stepper.steps)
    evaluations = property(lambda self: self.stepper.evaluations)
    rejected = property(lambda self: self.stepper.rejected)

    def advance(self, x: np.ndarray, t: float, t_next: float, h: float | None = None,
                on_step: Callable[[float], None] | None = None,
                h_min: float | None = None, *, taken: int = 0,
                on_state: Callable | None = None) -> tuple[np.ndarray, float]:
        """``TokenStepper.advance`` from ``t`` to ``t_next``, cut at the switches between
        them (a checkpoint inside a piece continues in that piece: its ``t`` is where
        the piece's call started, or the step reached)."""
        cuts = [float(s) for s in self.switches
                if t + self.slack < s < t_next - self.slack]
        points = [float(t)] + cuts + [float(t_next)]
        for a, b in zip(points[:-1], points[1:]):
            self.model.select(0.5 * (a + b))
            x, h = self.stepper.advance(x, a, b, h, on_step, h_min, taken=taken,
                                        on_state=on_state)
            taken = 0  # (noise runs: steps already taken within the first piece only)
        return x, h

    def info(self) -> dict:
        out = dict(self.stepper.info())
        out["integrator"] += f", cut at the {len(self.switches)} switches of the weights"
        return out
