"""The command line answers (issue 30, item 6): ``meanfield config --defaults`` alone
lists the tasks; ``--defaults TASK`` prints the keys TASK reads and no other (checked by
tracing the keys a small run of each token study reads); a run without ``--out`` says
where it writes."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from meanfield import cli
from meanfield.cli import main
from meanfield.config import registry, task_keys


def _defaults(task: str, capsys) -> str:
    assert main(["config", "--defaults", task.replace("_", "-")]) == 0
    return capsys.readouterr().out


def test_defaults_alone_lists_every_run_command(capsys):
    assert main(["config", "--defaults"]) == 0
    out = capsys.readouterr().out
    listed = re.findall(r"^  (\S+) ", out, flags=re.M)
    assert listed == list(cli.RUNS)
    # every listed name is a task whose defaults print
    assert {name.replace("-", "_") for name in listed} == set(registry.TASKS)


def _uncommented(text: str, task: str) -> str:
    """The template with every commented-out key of a keyed section set to the value
    shown (``...``: derived by the run, left out)."""
    out, section = [], None
    for line in text.splitlines():
        if m := re.match(r"^\[(\w+)\]$", line):
            section = m.group(1)
        m = re.match(r"^# (\w+) = (.+)$", line)
        if (m and section and registry.SECTIONS[section].validator is None
                and m.group(1) in registry.SECTIONS[section].keys and m.group(2) != "..."):
            line = f"{m.group(1)} = {m.group(2)}"
        out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("task", list(registry.TASKS))
def test_the_printed_keys_uncommented_validate_and_are_read(task, capsys):
    text = _uncommented(_defaults(task, capsys), task)
    given = tomllib.loads(text)
    registry.validate(given, task)  # every printed value is one the task accepts
    for name, keys in given.items():
        if registry.SECTIONS[name].validator is None:
            printed = set(keys) | set(re.findall(rf"^# (\w+) = \.\.\.$",
                                                 text.split(f"[{name}]\n", 1)[1]
                                                 .split("\n[", 1)[0], flags=re.M))
            assert printed == set(task_keys.read_keys(task, name)), name
            assert not printed & set(task_keys.NOT_READ.get(task, {}).get(name, ()))


def test_phase_diagram_no_longer_prints_engine_keys(capsys):
    """The keys the issue found in --defaults phase-diagram, which that study never
    reads."""
    text = _defaults("phase_diagram", capsys)
    particles = text.split("[particles]\n", 1)[1].split("\n[", 1)[0]
    for key in ("ensemble", "sum_method", "accuracy", "cluster_threshold"):
        assert not re.search(rf"^(# )?{key} = ", particles, flags=re.M), key
    assert "seed = 0" in particles  # (the keys it does read stay)


def test_not_read_names_keys_of_taken_sections():
    for task, sections in task_keys.NOT_READ.items():
        for name, keys in sections.items():
            assert name in registry.TASKS[task], (task, name)
            assert set(keys) <= set(registry.SECTIONS[name].keys), (task, name)


# --- the trace: which keys a small run reads -------------------------------------------
class _Recorded(dict):
    """A validated section that records each key read (a copy reads every key)."""

    reads: set[str] = set()
    section = ""
    recording = True

    def _record(self, key):
        if _Recorded.recording:
            _Recorded.reads.add(f"{self.section}.{key}")

    def __getitem__(self, key):
        self._record(key)
        return dict.__getitem__(self, key)

    def get(self, key, default=None):
        self._record(key)
        return dict.get(self, key, default)

    def __contains__(self, key):
        self._record(key)
        return dict.__contains__(self, key)

    def __iter__(self):  # (so that {**section} and dict(section) read through __getitem__)
        return iter(list(dict.keys(self)))

    def keys(self):
        return list(dict.keys(self))


# small runs of the token studies (each well under a second)
SMALL = {
    "phase_diagram": {"particles": {"n": 6}, "phase_diagram": {
        "dims": [3], "beta": [1.0], "systems": 4, "times": {"start": 0, "stop": 2, "num": 3}}},
    "normalization": {"particles": {"n": 6}, "normalization": {
        "dim": 8, "systems": 2, "chunk": 2,
        "times": {"start": 0.1, "stop": 5.0, "num": 4, "scale": "log"}}},
    "metastability": {"particles": {"n": 8}, "metastability": {
        "beta": [6.0], "systems": 2, "chunk": 2,
        "times": {"start": 0.5, "stop": 10.0, "num": 4, "scale": "log"}}},
    "correlations": {"correlations": {"n": [6], "dim": 3, "systems": 4, "chunk": 2,
                                      "times": {"start": 0, "stop": 0.5, "num": 2}}},
}


@pytest.mark.parametrize("task", list(SMALL))
def test_a_small_run_reads_exactly_the_printed_keys(task, monkeypatch, tmp_path):
    """Of [model] and [particles] (the shared sections whose keys a token study picks
    from), a run reads the keys --defaults prints, and none of the others."""
    original_section, original_validate = registry._validate_section, registry.validate

    def section(sec, given, cfg):
        out = original_section(sec, given, cfg)
        if sec.validator is None:
            out = _Recorded(out)
            out.section = sec.name
        return out

    def validate(config, task=None):  # reads while validating are not the run's
        _Recorded.recording = False
        try:
            return original_validate(config, task)
        finally:
            _Recorded.recording = True

    monkeypatch.setattr(registry, "_validate_section", section)
    monkeypatch.setattr(registry, "validate", validate)
    import meanfield.config as cfgmod
    monkeypatch.setattr(cfgmod, "validate", validate)
    _Recorded.reads = set()
    run = cli._task(task.replace("_", "-"))
    run(SMALL[task], out=str(tmp_path / "r.nc"), progress=False)
    for name in ("model", "particles"):
        read = {k.split(".", 1)[1] for k in _Recorded.reads if k.startswith(name + ".")}
        assert read == set(task_keys.read_keys(task, name)), (name, read)


# --- where a run writes ------------------------------------------------------------------
def test_a_run_without_out_says_where_it_writes(tmp_path, monkeypatch, capsys):
    config = tmp_path / "lc.toml"
    config.write_text("[long_context]\nn = [10, 20]\ngamma = [0.5]\n")
    monkeypatch.chdir(tmp_path)
    assert main(["long-context", "lc.toml", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out.splitlines()[0].startswith(
        f"wrote {tmp_path.resolve() / 'lc.nc'} (beside the config: no --out or "
        "output.path)  (output cosine")
    assert len(captured.out.splitlines()) == 1
    assert (tmp_path / "lc.nc").is_file()
    # with --out: the path as given
    assert main(["long-context", "lc.toml", "--no-progress", "--out", "x.nc"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out.startswith("wrote x.nc")
