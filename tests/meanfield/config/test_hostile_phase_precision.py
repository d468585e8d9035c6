"""``[phase_diagram] precision`` (issue 29, item 5): a bad value is refused before any work,
naming the key, the value and the values accepted ("double", "single"); on the command
line in one line with status 2. (Before the key existed, every case below was refused as an
unknown key, without the values accepted.)"""
from __future__ import annotations

import pytest

from meanfield.cli import main
from meanfield.errors import ConfigError
from meanfield.studies.tokens import phase_diagram as pd


@pytest.mark.parametrize("value", ["half", "Single", "float32", 32, True, ["single"]])
def test_bad_precision_is_refused_naming_the_accepted_values(value, monkeypatch):
    monkeypatch.setattr(pd, "run_member", lambda *a: pytest.fail("work started"))
    with pytest.raises(ConfigError) as err:
        pd.phase_diagram({"phase_diagram": {"precision": value}})
    assert err.value.key == "phase_diagram.precision"
    assert "'double', 'single'" in str(err.value)


def test_bad_precision_on_the_command_line(tmp_path, capsys):
    path = tmp_path / "p.toml"
    path.write_text('[phase_diagram]\nprecision = "quad"\n')
    assert main(["phase-diagram", str(path)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "phase_diagram.precision" in lines[0]
    assert "'quad'" in lines[0] and "'double', 'single'" in lines[0]
