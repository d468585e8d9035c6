"""The ``[particles]`` keys of the attention rule and of the cluster count, and their
checks against the rest of the section (run at the end of its finish).

- ``attention`` ["softmax" | "sinkhorn"]: the rows of softmax attention, or the doubly
  stochastic Sinkhorn scaling of the same kernel ([SABP22]; [GLPR25, Remark 3.5];
  ``meanfield.model.sinkhorn``), solved to ``sinkhorn_tolerance`` [1e-12] on its row and
  column sums. Sinkhorn attention runs with the Post-LN architecture on the sphere and
  with "pure" tokens in R^d (any ``[weights]``, heads, a feed-forward layer, noise on the
  sphere); it is refused with the other architectures, USA (``normalized = false``:
  Sinkhorn normalizes by construction), masks (a causal doubly stochastic matrix is the
  identity), the rescaled flow and the fast sums.
- ``cluster_method`` ["linkage" | "rank"]: how tokens are counted into clusters at
  ``cluster_threshold`` (chordal distance on spheres, Euclidean in R^d): the connected
  components of the graph linking tokens closer than it (single linkage), or the rank of
  that graph's 0/1 matrix with its diagonal, ``1[<x_i, x_j> > 1 - eps]``, ``eps =
  threshold^2 / 2`` on the sphere: the authors' count (eps = 1e-4 in their code, chord
  0.0141). The two agree when the relation is transitive (well separated clusters) and
  differ otherwise (a chain of tokens: one component, rank ~ its length;
  ``meanfield.metrics.cluster_rank``).
"""
from __future__ import annotations

from meanfield.errors import ConfigError

ATTENTIONS = ("softmax", "sinkhorn")
CLUSTER_METHODS = ("linkage", "rank")
# the architectures Sinkhorn attention is defined for here
SINKHORN_ARCHITECTURES = ("post-ln", "pure")
FAST = ("fourier", "harmonic")
# the [weights] keys of weights that change with depth (meanfield.config.depth_weights)
DEPTH_KEYS = ("layers", "redraw")


def finish_attention(cfg: dict) -> None:
    """Sinkhorn attention against the architecture, the model and the other keys of
    ``[particles]`` (module docstring); one line naming the key refused."""
    p = cfg["particles"]
    if p["attention"] != "sinkhorn":
        return
    arch = p["architecture"]
    if arch not in SINKHORN_ARCHITECTURES:
        raise ConfigError(f"particles.attention = \"sinkhorn\" with architecture {arch!r}: "
                          "Sinkhorn attention runs with architecture \"post-ln\" (tokens "
                          "on the sphere) or \"pure\" (tokens in R^d); use one of those or "
                          "attention = \"softmax\"", "particles.attention")
    model = cfg.get("model", {"normalized": True})
    if not model["normalized"]:
        raise ConfigError("model.normalized = false with particles.attention = "
                          "\"sinkhorn\": the Sinkhorn scaling normalizes the rows and "
                          "columns itself; use normalized = true", "model.normalized")
    if p["mask"] != "none":
        raise ConfigError(f"particles.mask = {p['mask']!r} with particles.attention = "
                          "\"sinkhorn\": a causal doubly stochastic matrix is the identity "
                          "(no attention); use mask = \"none\"", "particles.mask")
    if p["rescaled"]:
        raise ConfigError("particles.rescaled = true with particles.attention = "
                          "\"sinkhorn\": the rescaled flow is written for softmax rows; "
                          "use rescaled = false", "particles.rescaled")
    if p["sum_method"] in FAST:
        raise ConfigError(f"particles.sum_method = {p['sum_method']!r} with "
                          "particles.attention = \"sinkhorn\": the scaling needs the dense "
                          "kernel matrix; use 'auto' or 'direct'", "particles.sum_method")


def check_depth_weights(cfg: dict) -> None:
    """Weights that change with depth (``[weights] layers`` or ``redraw``) are not taken
    with Sinkhorn attention (checked with the run's plan, before any work)."""
    table = cfg.get("weights")
    depth_key = next((k for k in DEPTH_KEYS if k in table), None) \
        if isinstance(table, dict) else None
    if cfg["particles"]["attention"] == "sinkhorn" and depth_key is not None:
        raise ConfigError(f"weights.{depth_key} with particles.attention = \"sinkhorn\": "
                          "Sinkhorn attention takes constant weights; give query, key, "
                          "value (or heads) instead", f"weights.{depth_key}")


# the tasks that count clusters (particles.cluster_method): their docs pages say how
CLUSTER_TASKS = ("particles", "metastability")


def check_task(cfg: dict, task: str | None) -> None:
    """Sinkhorn attention is for ``meanfield particles`` only, and ``cluster_method =
    "rank"`` for the tasks that count clusters (``registry.validate``): elsewhere they
    would be ignored, so they are refused with one line."""
    p = cfg.get("particles")
    if task is None or p is None:
        return
    command = f"meanfield {task.replace('_', '-')}"
    if task != "particles" and p.get("attention", "softmax") != "softmax":
        raise ConfigError(f"particles.attention = {p['attention']!r} is for particle runs "
                          f"(meanfield particles); {command} runs softmax attention: use "
                          "attention = \"softmax\"", "particles.attention")
    if task not in CLUSTER_TASKS and p.get("cluster_method", "linkage") != "linkage":
        raise ConfigError(f"particles.cluster_method = {p['cluster_method']!r}: {command} "
                          "counts no clusters; the counts are those of meanfield particles "
                          "and meanfield metastability", "particles.cluster_method")
