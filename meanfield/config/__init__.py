"""Configuration: one nested dict (or TOML file) per task, validated before any work.

The sections, their keys and defaults: ``meanfield.config.sections`` (the core ones) and
``meanfield.config.initial`` (``[initial]``); which task takes which section:
``meanfield.config.registry`` (studies register theirs there). ``validate`` returns a new
dict with every section of the task present and every default filled in;
``ConfigError`` names the key, the value and what is accepted. Renamed keys
(``RENAMED_KEYS``) are refused with their new names.

Modules: ``checkers`` (value checkers, including ``list_or_range`` for scans),
``sections`` (the core sections and tasks), ``initial`` (``[initial]``), ``weights``
(``[weights]``, ``[feedforward]`` and the matrices they stand for), ``discretizations``
(the (geometry, method) pairs the registry of discretizations announces), ``studies``
(the studies' sections and tasks, those of the PDE studies) and ``token_studies`` (the
token studies'), ``thresholds`` (the closed-form kappa_c the bifurcation's "auto" range
is derived from), ``registry`` (sections, tasks and their checks, ``validate``),
``renamed`` (renamed keys), ``io`` (TOML, ``--set``, JSON), ``input_files`` (the files
a config names: resolved against the config file's folder, read, recorded with their
SHA-256), ``meanings`` (one line per
key) and ``reference`` (docs/config_reference.md and ``meanfield config --defaults
TASK``, generated from the sections). The package imports nothing above it
(docs/architecture.md): what it needs of the model it holds itself.
"""
from __future__ import annotations

from meanfield.config.checkers import finite_number, integer, list_or_range, unknown_name
from meanfield.config.initial import (ANY_DIM_KINDS, CENTER_UNIT_TOLERANCE, EUCLIDEAN_KINDS,
                                      INITIAL_KINDS, INITIAL_PARAMS, PARTICLE_ONLY_KINDS,
                                      validate_initial)
from meanfield.config.io import (apply_overrides, from_json, load, parse_value, same_run,
                                 to_json)
from meanfield.config.registry import (SECTIONS, TASK_CHECKS, TASKS, check_key,
                                       register_section, register_task, task_sections,
                                       validate)
from meanfield.config.renamed import RENAMED_KEYS
from meanfield.config.sections import (ARCHITECTURES, DEFAULT_N, GEOMETRIES, MASKS,
                                       MAX_SEED, MAX_USA_BETA, METHODS, METHODS_BY_GEOMETRY,
                                       PDE_GEOMETRIES, SPHERE_MESH_CELLS, SUM_METHODS,
                                       Section, check_pde_dim, check_pde_task,
                                       check_sphere_geometry)
from meanfield.config.weights import (build_feedforward, head_matrices, pde_value_scale,
                                      weight_matrix)

__all__ = [
    "ANY_DIM_KINDS", "ARCHITECTURES", "CENTER_UNIT_TOLERANCE", "DEFAULT_N",
    "EUCLIDEAN_KINDS", "GEOMETRIES", "INITIAL_KINDS", "INITIAL_PARAMS", "MASKS", "MAX_SEED",
    "MAX_USA_BETA", "METHODS", "METHODS_BY_GEOMETRY", "PARTICLE_ONLY_KINDS",
    "PDE_GEOMETRIES", "RENAMED_KEYS", "SECTIONS", "SPHERE_MESH_CELLS", "SUM_METHODS",
    "Section", "TASKS", "TASK_CHECKS", "apply_overrides", "build_feedforward", "check_key",
    "check_pde_dim", "check_pde_task", "check_sphere_geometry", "finite_number",
    "from_json", "head_matrices", "integer", "list_or_range", "load", "parse_value",
    "pde_value_scale", "register_section", "register_task", "same_run", "task_sections",
    "to_json", "unknown_name", "validate", "validate_initial", "weight_matrix",
]
