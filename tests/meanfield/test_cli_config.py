"""``meanfield config --defaults TASK``: the defaults of every task as a TOML file that
loads back to the same validated config; every key of the task's sections is in it (set,
or commented out when absent by default); an unknown task is one line and status 2."""
from __future__ import annotations

import re
import tomllib

import pytest

import meanfield
from meanfield import config
from meanfield.cli import main
from meanfield.config import registry, task_keys


def _defaults(task: str, capsys) -> str:
    assert main(["config", "--defaults", task.replace("_", "-")]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("task", list(registry.TASKS))
def test_defaults_load_back_to_the_validated_defaults(task, tmp_path, capsys):
    text = _defaults(task, capsys)
    path = tmp_path / f"{task}.toml"
    path.write_text(text)
    assert config.load(path, task=task) == registry.validate({}, task)
    # meanfield.load_config (every section) reads the same file to the same defaults
    assert meanfield.load_config(path) == registry.validate({})
    assert set(tomllib.loads(text)) == set(task_keys.read_sections(task))


@pytest.mark.parametrize("task", list(registry.TASKS))
def test_every_key_is_set_or_commented_with_its_meaning(task, capsys):
    text = _defaults(task, capsys)
    tables = re.split(r"^\[(\w+)\]$", text, flags=re.M)
    body = dict(zip(tables[1::2], tables[2::2]))
    for name in task_keys.read_sections(task):
        section = registry.SECTIONS[name]
        for key in task_keys.read_keys(task, name):  # the keys it reads, and no other
            default = section.keys[key][1]
            line = re.search(rf"^(# )?{key} = ", body[name], flags=re.M)
            assert line, f"{name}.{key} missing"
            # absent by default: commented out (uncommented it would set a value)
            assert bool(line.group(1)) == (default is None), f"{name}.{key}"
    # the comments are the reference's: a meaning and what the key accepts
    assert "Accepts" in text and all(len(line) <= 88 for line in text.splitlines())


def test_an_unknown_task_is_one_line_with_status_2(capsys):
    assert main(["config", "--defaults", "bifurcaton"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown task 'bifurcaton'" in err[0]
    assert "'phase-diagram'" in err[0] and "did you mean 'bifurcation'" in err[0]


def test_defaults_is_required(capsys):
    assert main(["config"]) == 2
    assert "--defaults" in capsys.readouterr().err
