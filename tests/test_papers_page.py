"""docs/papers.md ("Reproduce the papers", issue 30, item 2): every command on it names
an existing CLI subcommand with an existing config, or an existing example script; every
gallery link names an example; every citation key is in docs/references.md; and every
command is run in a quick variant by a default test of tests/test_example*.py (the full
scale takes seconds to minutes each)."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

from meanfield import cli

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "papers.md"


def _commands() -> list[str]:
    return re.findall(r"`((?:meanfield|python) [^`]+)`", PAGE.read_text(encoding="utf-8"))


def test_every_command_names_an_existing_subcommand_and_file():
    commands = _commands()
    assert len(commands) >= 20
    for command in commands:
        words = shlex.split(command)
        if words[0] == "python":
            assert words[1].startswith("examples/") and (ROOT / words[1]).is_file(), command
            continue
        assert words[1] in cli.RUNS, command  # a run command of the CLI
        assert (ROOT / words[2]).is_file(), command  # its config


def test_every_gallery_link_is_an_example():
    links = re.findall(r"\]\(auto_examples/(\w+)\.rst\)", PAGE.read_text(encoding="utf-8"))
    assert links
    for name in links:
        assert (ROOT / "examples" / f"{name}.py").is_file(), name


def test_every_key_is_a_reference_and_the_page_is_in_the_toctree():
    text = PAGE.read_text(encoding="utf-8")
    references = (ROOT / "docs" / "references.md").read_text(encoding="utf-8")
    for key in set(re.findall(r"\[([A-Z][A-Za-z]+\d\d)[,\]]", text)):
        assert f"**[{key}]" in references, key
    for key in ("GLPR23", "GLPR25", "Rig25", "Ste25", "Ges23"):  # the five texts
        assert f"[{key}" in text, key
    assert "Not reproduced yet" in text
    assert re.search(r"^papers$", (ROOT / "docs" / "index.md").read_text(), flags=re.M)


def _default_example_tests() -> str:
    """The source (decorators included) of every test function in tests/test_example*.py
    that the default run collects (not marked slow)."""
    import ast

    sources = []
    for path in sorted((ROOT / "tests").glob("test_example*.py")):
        text = path.read_text(encoding="utf-8")
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
                first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                source = "\n".join(text.splitlines()[first - 1:node.end_lineno])
                if "mark.slow" not in source:
                    sources.append(source)
    return "\n".join(sources)


def test_every_command_runs_in_its_quick_variant_in_the_default_tests():
    """Acceptance (issue 30): each command of the page runs, as a quick variant, in the
    default test run: an example script is loaded and run by a default test of
    tests/test_example*.py, a run command's example config is run by one (the gallery
    build runs the scripts again in CI)."""
    tests = _default_example_tests()
    missing = []
    for command in dict.fromkeys(_commands()):
        words = shlex.split(command)
        name = Path(words[1] if words[0] == "python" else words[2]).stem
        found = (f'"{name}"' in tests or f"{name}.py" in tests) if words[0] == "python" \
            else (f'"{name}.toml"' in tests or f'"{words[1]}", "{name}"' in tests)
        if not found:
            missing.append(command)
    assert not missing, f"commands of docs/papers.md no default test runs: {missing}"
