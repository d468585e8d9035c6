"""Configuration: one nested dict (or TOML file) per task, validated before any work.

The sections, their keys and defaults: ``meanfield.config.sections`` (the core ones) and
``meanfield.config.initial`` (``[initial]``); which task takes which section:
``meanfield.config.registry`` (studies register theirs there). ``validate`` returns a new
dict with every section of the task present and every default filled in;
``ConfigError`` names the key, the value and what is accepted. Renamed keys
(``RENAMED_KEYS``) are refused with their new names.

Modules: ``checkers`` (value checkers, including ``list_or_range`` for scans),
``sections`` (the core sections and tasks), ``initial`` (``[initial]``), ``registry``
(sections, tasks, ``validate``), ``renamed`` (renamed keys), ``io`` (TOML, ``--set``,
JSON).
"""
from __future__ import annotations

from meanfield.config.checkers import finite_number, integer, list_or_range, unknown_name
from meanfield.config.initial import (ANY_DIM_KINDS, CENTER_UNIT_TOLERANCE, INITIAL_KINDS,
                                      INITIAL_PARAMS, PARTICLE_ONLY_KINDS, validate_initial)
from meanfield.config.io import (apply_overrides, from_json, load, parse_value, same_run,
                                 to_json)
from meanfield.config.registry import (SECTIONS, TASKS, check_key, register_section,
                                       register_task, task_sections, validate)
from meanfield.config.renamed import RENAMED_KEYS
from meanfield.config.sections import (ARCHITECTURES, GEOMETRIES, MAX_SEED, MAX_USA_BETA,
                                       METHODS, METHODS_BY_GEOMETRY, SPHERE_MESH_CELLS,
                                       SUM_METHODS, Section, check_pde_dim)

__all__ = [
    "ANY_DIM_KINDS", "ARCHITECTURES", "CENTER_UNIT_TOLERANCE", "GEOMETRIES", "INITIAL_KINDS",
    "INITIAL_PARAMS", "MAX_SEED", "MAX_USA_BETA", "METHODS", "METHODS_BY_GEOMETRY",
    "PARTICLE_ONLY_KINDS", "RENAMED_KEYS", "SECTIONS", "SPHERE_MESH_CELLS", "SUM_METHODS",
    "TASKS", "Section", "apply_overrides", "check_key", "check_pde_dim", "finite_number",
    "from_json", "integer", "list_or_range", "load", "parse_value", "register_section",
    "register_task", "same_run", "task_sections", "to_json", "unknown_name", "validate",
    "validate_initial",
]
