"""The keys a task reads of the sections it takes.

A task takes whole sections (``registry.TASKS``), but a study reads only some keys of the
shared ones: the phase diagram sweeps its own ``phase_diagram.beta`` and never reads
``model.beta``, and runs its own Dormand-Prince systems, so none of ``[particles]``'s
engine keys (``ensemble``, ``sum_method``, ``accuracy``, ``cluster_threshold``, ...)
reach it. ``NOT_READ`` lists, per task, the keys of a taken section it does not read, so
that ``meanfield config --defaults TASK`` prints only the keys TASK reads
(``read_keys``). Validation still accepts them (a config shared between studies loads).

How the table was found: each task was run on a small config with every keyed section
replaced by a dict that records each key read outside validation (a copy of the section,
``{**section}`` or ``dict(section)``, counts as reading every key, so the record errs on
the side of "read"), on every mode a study has (the bifurcation study's continuation,
scan and map), and the study's modules were searched for the key's name. Only keys
unread on every path are listed; tasks whose reads depend on the geometry or the engine
(``evolve``, ``particles``, ``compare``, ``contraction``) list none.
``tests/meanfield/test_cli_answers.py`` repeats the trace for the token studies: the keys
it prints are the keys a run reads.
"""
from __future__ import annotations

from meanfield.config import registry

# [particles] keys of the particle engine that the token studies (their own integrators)
# never read
_ENGINE = ("sum_method", "accuracy", "ensemble", "attention_rank", "rank_tolerance",
           "bins", "rescaled", "mask", "save_attention", "integrator", "layer_step",
           "attention", "sinkhorn_tolerance", "diagnostics")

NOT_READ: dict[str, dict[str, tuple[str, ...]]] = {
    # phase_diagram.beta is the swept beta; Post-LN only (architecture is checked)
    "phase_diagram": {"model": ("beta",),
                      "particles": _ENGINE + ("ngpt_alpha", "mix_switch",
                                              "cluster_threshold", "cluster_method")},
    # normalization.architectures replaces particles.architecture
    "normalization": {"particles": _ENGINE + ("architecture", "cluster_threshold",
                                              "cluster_method")},
    # metastability.beta is the swept beta; clusters are counted (cluster_* read)
    "metastability": {"model": ("beta",),
                      "particles": _ENGINE + ("ngpt_alpha", "mix_switch")},
    # correlations.n are the token counts; no noise (model.kappa must stay "inf")
    "correlations": {"model": ("kappa",),
                     "particles": _ENGINE + ("n", "architecture", "ngpt_alpha",
                                             "mix_switch", "cluster_threshold",
                                             "cluster_method")},
    # convergence.n are the token counts (particles.n is replaced member by member)
    "convergence": {"particles": ("n",)},
    # stationary states of the PDE: no tokens at all
    "bifurcation": {"particles": tuple(registry.SECTIONS["particles"].keys)},
}


def read_keys(task: str, section: str) -> tuple[str, ...]:
    """The keys of the keyed ``section`` that ``task`` reads, in the section's order
    (every key, unless ``NOT_READ`` lists some)."""
    skipped = NOT_READ.get(task, {}).get(section, ())
    return tuple(k for k in registry.SECTIONS[section].keys if k not in skipped)


def read_sections(task: str) -> tuple[str, ...]:
    """The sections of ``task`` of which it reads at least one key (a section validated
    as a whole counts as read)."""
    return tuple(s for s in registry.TASKS[task]
                 if registry.SECTIONS[s].validator is not None or read_keys(task, s))
