"""Which sections a config may have and which task takes which: sections and tasks
register here, and ``validate`` checks a config against them.

A section is either a table of keys, each with a checker and a default, or a table
checked as a whole by its own ``validator`` (``[initial]``, whose keys depend on its
kind). Once a section is clean its ``finish`` runs (derived defaults and checks across
keys and sections, e.g. ``time.save_every`` against ``time.t_final``). Sections are
validated in the order they were registered, so a validator or a finish may read the
sections registered before its own (``[initial]`` reads ``[domain]``).

A task (``evolve``, ``particles``, ``compare``, and the studies that register later)
names the sections it takes, and may have a check of its whole clean config (run last:
the PDE tasks refuse tokens in R^d and weights other than V = c I); ``validate(config, task)`` refuses any other section with a
``ConfigError`` listing the ones the task takes. ``validate(config)`` with no task takes
every registered section (what callers that do not name a task get).
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from meanfield.config.checkers import Checker, describe, plain, suggest
from meanfield.config.negative_beta import check_negative_beta
from meanfield.config.layers import check_task as check_layers_task
from meanfield.config.attention import check_task as check_attention_task
from meanfield.config.renamed import renamed_key_error
from meanfield.config.sections import CORE_SECTIONS, CORE_TASK_CHECKS, CORE_TASKS, Section
from meanfield.config.studies import STUDY_SECTIONS, STUDY_TASK_CHECKS, STUDY_TASKS
from meanfield.errors import ConfigError

# Registered sections, in validation order, and the sections of each task: the core
# ones of ``meanfield.config.sections``, the studies' of ``meanfield.config.studies``;
# more can be added with ``register_section`` and ``register_task``.
SECTIONS: dict[str, Section] = {s.name: s for s in CORE_SECTIONS + STUDY_SECTIONS}
TASKS: dict[str, tuple[str, ...]] = {**CORE_TASKS, **STUDY_TASKS}
# Checks of a task's whole config, run once every section is clean: ``(cfg, task)``
# (the PDE tasks refuse tokens in R^d and weights other than V = c I).
TASK_CHECKS: dict[str, Callable[[dict, str], None]] = {**CORE_TASK_CHECKS,
                                                       **STUDY_TASK_CHECKS}


def register_section(name: str, keys: dict[str, tuple[Checker, Any]] | None = None, *,
                     validator: Callable[[dict, dict, str], dict] | None = None,
                     finish: Callable[[dict], None] | None = None) -> Section:
    """Register (or replace) the section ``[name]``; returns it."""
    if keys and validator is not None:
        raise ValueError(f"section [{name}]: give keys or a validator, not both")
    SECTIONS[name] = Section(name, dict(keys or {}), validator, finish)
    return SECTIONS[name]


def register_task(task: str, sections: tuple[str, ...] | list[str],
                  check: Callable[[dict, str], None] | None = None) -> None:
    """Register (or replace) the sections ``task`` takes (each already registered) and
    the check ``(cfg, task)`` of its whole validated config (None: none)."""
    missing = [s for s in sections if s not in SECTIONS]
    if missing:
        raise ValueError(f"task {task!r}: sections {missing} are not registered")
    TASKS[task] = tuple(sections)
    TASK_CHECKS.pop(task, None)
    if check is not None:
        TASK_CHECKS[task] = check


def unknown_key(key: str, valid) -> ConfigError:
    """ConfigError for an unknown dotted key: its new name if it was renamed, else the
    valid names with the nearest one."""
    return renamed_key_error(key) or ConfigError(
        f"unknown key {key}; {suggest(key.rsplit('.', 1)[-1], list(valid))}", key)


def _command(task: str) -> str:
    """The command line of a task (``phase_diagram``: 'meanfield phase-diagram')."""
    return f"'meanfield {task.replace('_', '-')}'"


def task_sections(task: str | None) -> tuple[str, ...]:
    """The sections ``task`` takes (None: every registered section)."""
    if task is None:
        return tuple(SECTIONS)
    if task not in TASKS:
        raise ConfigError(f"unknown task {task!r}; {suggest(task, list(TASKS))}", "task")
    return TASKS[task]



def _copied(name: str, table: dict) -> dict:
    """A deep copy of a section (validation never changes the caller's dict); a value
    that cannot be copied (a generator, an open file) is a ``ConfigError`` naming its key,
    not the ``TypeError`` of ``copy.deepcopy``."""
    try:
        return copy.deepcopy(table)
    except TypeError:
        for key, value in table.items():
            try:
                copy.deepcopy(value)
            except TypeError:
                raise ConfigError(f"{name}.{key} = {describe(value)}: a {type(value).__name__} "
                                  "cannot be read as a config value; give numbers, strings, "
                                  "lists and tables (a generator: list(...) of it)",
                                  f"{name}.{key}") from None
        raise

def validate(config: dict | None, task: str | None = None) -> dict:
    """Check a config and fill in defaults.

    Args:
        config: nested dict ``{section: {key: value}}``; missing sections and keys take
            their defaults. The input is not modified.
        task: the task the config is for (its sections only); None: every section.

    Returns:
        A new dict with every section of the task and all their keys.

    Raises:
        ConfigError: naming the key, the value and what is accepted.
    """
    config = {} if config is None else config
    if not isinstance(config, dict):
        raise ConfigError(f"a config must be a dict of sections, got {type(config).__name__}")
    config = plain(config)  # numpy arrays and scalars as the lists and numbers of TOML
    sections = task_sections(task)
    # a section of one study only names that study best: such sections are looked at first
    for name in sorted(config, key=lambda s: sum(s in taken for taken in TASKS.values())):
        if name not in sections:
            if task is not None and name in SECTIONS:
                owners = [t for t, taken in TASKS.items() if name in taken]
                raise ConfigError(
                    f"section [{name}] is not taken by task {task!r} ({_command(task)}): it "
                    f"belongs to "
                    f"{' or '.join(_command(t) for t in owners[:3]) or 'no command'}"
                    f"{' (and others)' if len(owners) > 3 else ''}; "
                    f"{_command(task)} takes {', '.join(f'[{s}]' for s in sections)}",
                    name)
            raise ConfigError(f"unknown section [{name}]; {suggest(name, list(sections))}",
                              name)
        if not isinstance(config[name], dict):
            raise ConfigError(f"[{name}] must be a table of keys, got "
                              f"{describe(config[name])}", name)
    out: dict[str, dict] = {}
    for name, section in SECTIONS.items():  # registration order (see the docstring)
        if name in sections:
            out[name] = _validate_section(section, _copied(name, config.get(name, {})), out)
            if section.finish is not None:
                section.finish(out)
    check_layers_task(out, task)  # layers, weights that change with depth: particles only
    check_attention_task(out, task)  # Sinkhorn: particles only; rank: where clusters count
    check_negative_beta(out, task)  # model.beta < 0: the circle's models only
    if task in TASK_CHECKS:
        TASK_CHECKS[task](out, task)
    return out


def _validate_section(section: Section, given: dict, cfg: dict) -> dict:
    if section.validator is not None:
        return section.validator(given, cfg, section.name)
    for name in given:
        if name not in section.keys:
            raise unknown_key(f"{section.name}.{name}", section.keys)
    clean = {}
    for name, (check, default) in section.keys.items():
        if given.get(name) is not None:  # None: absent (validate is idempotent)
            clean[name] = check(f"{section.name}.{name}", given[name])
        else:
            clean[name] = default
    return clean


def check_key(key: str, value: Any) -> Any:
    """Check one value against the checker of the dotted ``key`` of a keyed section (e.g.
    ``check_key("model.beta", 2.0)``): what the config accepts there, cleaned."""
    section, _, name = key.partition(".")
    if section not in SECTIONS:
        raise ConfigError(f"unknown section [{section}]; {suggest(section, list(SECTIONS))}",
                          section)
    keys = SECTIONS[section].keys
    if name not in keys:
        raise unknown_key(key, keys)
    return keys[name][0](key, value)
