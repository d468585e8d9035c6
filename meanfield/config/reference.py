"""The config reference, generated from the validator: every section, key, accepted
value, default and meaning, so it cannot drift from what ``validate`` does.

What a key accepts comes from its checker (``checkers.accepting``: the factories set it
from their own bounds; other checkers give the first paragraph of their docstring), its
default from its ``Section``, its meaning from ``meanings``. The sections validated as a
whole list their keys from their own tables: ``[initial]`` by geometry and kind
(``initial.INITIAL_PARAMS``), ``[weights]`` and ``[feedforward]`` (``weights``).

    python -m meanfield.config.reference > docs/config_reference.md

``defaults_toml(task)`` writes the defaults of a task as a TOML file a user can edit
(``meanfield config --defaults TASK``); it loads back to the same validated config.
"""
from __future__ import annotations

import json
import math
import sys
import textwrap
from pathlib import Path
from typing import Any

from meanfield.config import registry, task_keys
from meanfield.config.checkers import Checker, suggest
from meanfield.config.initial import INITIAL_PARAMS
from meanfield.config.meanings import INITIAL_MEANINGS, MEANINGS, SECTION_MEANINGS
from meanfield.config.weights import ACTIVATIONS, FEEDFORWARD_KEYS, HEAD_KEYS, SPEC_FORMS
from meanfield.errors import ConfigError

# The keys of the sections validated as a whole, with what they accept and their default
# (the validators' own tables; [initial] is listed by kind from INITIAL_PARAMS).
WHOLE_TABLE_KEYS: dict[str, dict[str, tuple[str, Any]]] = {
    "weights": {**{k: (f"a matrix spec: {SPEC_FORMS}", "identity") for k in HEAD_KEYS},
                "heads": ("a non-empty list of tables {query, key, value} "
                          "([[weights.heads]] in TOML; not with query, key, value)", None),
                "layers": ("a non-empty list of tables {query, key, value} or {heads}, "
                           "one per unit of time ([[weights.layers]] in TOML; nothing "
                           "beside it)", None),
                "redraw": ("a table {every > 0, kind = \"gaussian\" (scale) or "
                           "\"symmetric\" (eigenvalues), seed, matrices [all three]}; "
                           "query, key, value beside it give the matrices not redrawn",
                           None),
                "per_system": ("true or false (meanfield phase-diagram and meanfield "
                               "normalization only; true needs a random kind)", False)},
    "feedforward": {"activation": ("one of " + ", ".join(repr(a) for a in ACTIVATIONS),
                                   None),
                    "weight": (f"a matrix spec: {SPEC_FORMS}", "identity")},
}
assert tuple(WHOLE_TABLE_KEYS["feedforward"]) == FEEDFORWARD_KEYS

PAGE = Path(__file__).resolve().parents[2] / "docs" / "config_reference.md"


# heads and layers replace query, key and value (the template writes those three with
# their defaults): said just above the line to uncomment
INSTEAD_OF_HEAD_KEYS = "# (to uncomment in place of query, key, value above: comment those out)"


def accepts(check: Checker) -> str:
    """What a checker accepts, in words: its ``accepts`` attribute, else the first
    paragraph of its docstring."""
    text = getattr(check, "accepts", None)
    if text is None:
        doc = (check.__doc__ or "").strip()
        if not doc:
            raise ValueError(f"checker {check!r} says nothing of what it accepts: give it "
                             "a docstring or make it with checkers.accepting")
        text = " ".join(doc.split("\n\n")[0].split()).rstrip(".")
        text = text[0].lower() + text[1:]
    return text.replace("``", "")


def toml_value(value: Any) -> str:
    """``value`` as a TOML literal (an infinite float as the string "inf", which the
    checkers that take it accept)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isinf(value):
        return '"inf"' if value > 0 else '"-inf"'
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML form for {value!r}")


def _default(value: Any) -> str:
    return "absent" if value is None or value == () else f"`{toml_value(value)}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def registered_keys() -> set[str]:
    """Every key a config may set, as ``section.key`` (``[initial]``: every parameter of
    every kind on every geometry, and ``kind``)."""
    keys = set()
    for name, section in registry.SECTIONS.items():
        if name == "initial":
            keys |= {f"initial.{k}" for kinds in INITIAL_PARAMS.values()
                     for params in kinds.values() for k in ("kind", *params)}
            keys.add("initial.weight")  # a mixture component's
        elif section.validator is not None:
            keys |= {f"{name}.{k}" for k in WHOLE_TABLE_KEYS[name]}
        else:
            keys |= {f"{name}.{k}" for k in section.keys}
    return keys


def _rows(name: str) -> list[tuple[str, str, str, str]]:
    """(key, accepts, default, meaning) of each key of a section other than [initial]."""
    section = registry.SECTIONS[name]
    if section.validator is not None:
        return [(k, text, _default(d), MEANINGS[f"{name}.{k}"])
                for k, (text, d) in WHOLE_TABLE_KEYS[name].items()]
    return [(k, accepts(check), _default(d), MEANINGS[f"{name}.{k}"])
            for k, (check, d) in section.keys.items()]


def _table(rows) -> list[str]:
    out = ["| key | accepts | default | meaning |", "|---|---|---|---|"]
    out += [f"| `{k}` | {_cell(a)} | {_cell(d)} | {_cell(m)} |" for k, a, d, m in rows]
    return out


def _initial_lines() -> list[str]:
    out = [f"`kind`: {INITIAL_MEANINGS['kind']}. Each kind takes the parameters below "
           "(a parameter whose default is *required* must be given). A mixture component "
           f"(`[[initial.components]]`) takes `weight` too: {INITIAL_MEANINGS['weight']}.",
           ""]
    for geometry, kinds in INITIAL_PARAMS.items():
        where = {"circle": "the circle S^1", "sphere": "the sphere S^2 (S^{d-1}, d > 3: "
                 "the kinds uniform, von_mises, mixture, equiangular, tokens)",
                 "zonal": "zonal densities on S^{d-1} (`domain.geometry = \"zonal\"`: "
                          "functions of t = cos theta, theta the angle to the first axis)",
                 "euclidean": "tokens in R^d (`domain.geometry = \"euclidean\"`)"}[geometry]
        out += [f"### On {where}", "", "| kind | parameter | default | meaning |",
                "|---|---|---|---|"]
        for kind, params in kinds.items():
            if not params:
                out.append(f"| `{kind}` | (none) | | |")
            for p, d in params.items():
                shown = "required" if d is None else _default(d)
                if d == ():
                    shown = "zeros"
                out.append(f"| `{kind}` | `{p}` | {_cell(shown)} | "
                           f"{_cell(INITIAL_MEANINGS[p])} |")
        out.append("")
    return out


def _command(task: str) -> str:
    return f"meanfield {task.replace('_', '-')}"


def markdown() -> str:
    """The config reference page (Markdown)."""
    out = ["# Config reference", "",
           "Generated from the validator by `python -m meanfield.config.reference > "
           "docs/config_reference.md` (a test checks that this page is current). Every "
           "key is optional unless marked required; an absent key takes its default. "
           "`meanfield config --defaults TASK` prints the defaults of a task as a TOML "
           "file to edit.", "", "## Tasks and their sections", "",
           "| command | sections |", "|---|---|"]
    out += [f"| `{_command(t)}` | {', '.join(f'[{s}]' for s in sections)} |"
            for t, sections in registry.TASKS.items()]
    out.append("")
    for name in registry.SECTIONS:
        out += [f"## [{name}]", "", SECTION_MEANINGS[name][0].upper()
                + SECTION_MEANINGS[name][1:] + ".", ""]
        out += _initial_lines() if name == "initial" else _table(_rows(name)) + [""]
    return "\n".join(out).rstrip() + "\n"


def write(path: str | Path = PAGE) -> Path:
    """Write the reference page to ``path`` (default: docs/config_reference.md)."""
    path = Path(path)
    path.write_text(markdown(), encoding="utf-8")
    return path


def task_name(task: str) -> str:
    """The registered task of a command or task name (``phase-diagram`` or
    ``phase_diagram``).

    Raises:
        ConfigError: an unknown task, listing the valid ones.
    """
    name = task.replace("-", "_")
    if name not in registry.TASKS:
        commands = [t.replace("_", "-") for t in registry.TASKS]
        raise ConfigError(f"unknown task {task!r}; {suggest(task, commands)}", "task")
    return name


def _comment(text: str) -> list[str]:
    """``text`` as comment lines of at most 88 characters."""
    return textwrap.wrap(text, width=88, initial_indent="# ", subsequent_indent="# ",
                         break_on_hyphens=False)


def defaults_toml(task: str) -> str:
    """The defaults of ``task`` as a TOML file: every section it takes, every key with its
    default and a comment with its meaning and accepted values; keys absent by default
    are commented out. ``meanfield.load_config`` reads it back to ``validate({}, task)``.
    """
    task = task_name(task)
    clean = registry.validate({}, task)
    out = [f"# The defaults of '{_command(task)}'",
           f"# ({_command('config')} --defaults {task.replace('_', '-')}).",
           "# Every key is optional: delete the ones you keep at their default. Only the",
           "# keys this command reads are listed. The full reference, with every [initial]",
           "# kind: docs/config_reference.md", ""]
    for name, section in registry.SECTIONS.items():  # (the validation order)
        if name not in task_keys.read_sections(task):  # (a section it takes, reads none)
            continue
        out += _comment(f"[{name}]: {SECTION_MEANINGS[name]}") + [f"[{name}]"]
        if name == "initial":
            geometry = clean["domain"]["geometry"]
            out += _comment(f"the kinds on the {geometry}: "
                            + ", ".join(INITIAL_PARAMS[geometry]))
            for key, value in clean[name].items():
                meaning = INITIAL_MEANINGS[key]
                out += _comment(meaning) + [f"{key} = {toml_value(value)}"]
        elif section.validator is not None:
            for key, (text, default) in WHOLE_TABLE_KEYS[name].items():
                absent = "" if key in clean[name] else " Absent by default."
                out += _comment(f"{MEANINGS[f'{name}.{key}']}. Accepts {text}.{absent}")
                if key in clean[name]:
                    out.append(f"{key} = {toml_value(clean[name][key])}")
                else:
                    example = {"heads": [{"query": "identity", "key": "identity",
                                          "value": "identity"}],
                               "layers": [{"value": 1.0}, {"value": -1.0}],
                               "redraw": {"every": 1.0, "kind": "gaussian", "seed": 0},
                               "activation": ACTIVATIONS[0]}.get(key, default)
                    if key in ("heads", "layers"):
                        out.append(INSTEAD_OF_HEAD_KEYS)
                    out.append(f"# {key} = {toml_value(example)}")
        else:
            for key in task_keys.read_keys(task, name):  # only the keys the task reads
                check, default = section.keys[key]
                absent = "" if default is not None else " Absent by default."
                out += _comment(f"{MEANINGS[f'{name}.{key}']}. Accepts "
                                f"{accepts(check)}.{absent}")
                if default is None:
                    filled = clean[name][key]  # (what the run derives, where it does)
                    out.append(f"# {key} = {'...' if filled is None else toml_value(filled)}")
                else:
                    out.append(f"{key} = {toml_value(default)}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(markdown())
