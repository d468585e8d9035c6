"""The study pages of docs/studies/ stay honest: one page per study command of the CLI,
with the same six sections in the same order; the names in each page's Dataset table are
exactly the variables and coordinates of the dataset the study builds; every link to
another page of docs/ (and every example or config it names) exists.

The format of a page (docs/studies/<command>.md, the command as ``meanfield --help``
spells it) is fixed by ``SECTIONS``: its ``##`` headings are those six, in that order
(``###`` subsections are free). The Dataset section holds one or more Markdown tables;
the first cell of each row names one or more variables or coordinates, each in
backticks (```slope`, `slope_low`, `slope_high``` is one row), and nothing else in that
cell is in backticks. Their union must equal the union of ``data_vars`` and ``coords``
over the datasets that ``TINY`` builds for that study: tiny but valid configs covering
each variant whose names differ (circle and sphere, the Gaussian reference, the scan and
map modes, ...). So a page cannot list a name the study does not write, nor miss one it
writes. Measured: the whole file (the 8 studies' 15 tiny datasets) takes 6.3 s of CPU on
2 shared cores, 11 s in pytest at a load average of 7 (the numba kernels cached).
"""
from __future__ import annotations

import argparse
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
STUDIES = DOCS / "studies"
SECTIONS = ("What it computes", "Run it", "Config", "Dataset", "Figure", "Cost")
# commands of the CLI that are not studies: the single runs, the helpers
NOT_STUDIES = {"demo", "evolve", "particles", "config", "plot"}

# The tiniest valid config of each variant of each study (a variant is listed where its
# dataset has names the others lack). Each builds in well under a second.
_VON_MISES = {"kind": "von_mises", "concentration": 2.0}
TINY: dict[str, list[dict]] = {
    "compare": [
        # circle, no noise: arcs as bins (bin_edges), the grid theta
        {"model": {"beta": 1.0}, "discretization": {"resolution": 64},
         "initial": _VON_MISES, "time": {"t_final": 0.2, "save_every": 0.1},
         "particles": {"n": 20, "ensemble": 2}},
        # sphere with noise: mesh cells as bins (bin_lat, bin_lon), free_energy
        {"domain": {"geometry": "sphere"}, "model": {"beta": 1.0, "kappa": 10.0},
         "discretization": {"resolution": 12},
         "time": {"t_final": 0.2, "save_every": 0.1, "dt": 0.05},
         "particles": {"n": 50, "ensemble": 1}},
    ],
    "convergence": [
        # against the PDE on the circle
        {"model": {"beta": 1.0}, "discretization": {"resolution": 64},
         "initial": _VON_MISES, "time": {"t_final": 0.2, "save_every": 0.1, "dt": 0.1},
         "convergence": {"n": [10, 20], "replicas": 2}},
        # tokens in R^d against the Gaussian mean field
        {"domain": {"geometry": "euclidean", "dim": 2}, "initial": {"kind": "gaussian"},
         "time": {"t_final": 0.2, "save_every": 0.1, "dt": 0.1},
         "convergence": {"n": [10, 20], "replicas": 2}},
    ],
    "contraction": [
        # both sources, no noise
        {"discretization": {"resolution": 64}, "initial": _VON_MISES,
         "time": {"t_final": 0.5, "save_every": 0.1}, "particles": {"n": 10},
         "contraction": {"beta": [1.0]}},
        # a second start (the pair_* variables); tokens only, as the PDE pair costs 10 s
        {"initial": _VON_MISES, "time": {"t_final": 0.5, "save_every": 0.1},
         "particles": {"n": 10},
         "contraction": {"beta": [1.0], "sources": ["particles"],
                         "other": {"kind": "von_mises", "concentration": 2.0,
                                   "center": 1.0}}},
    ],
    "metastability": [
        {"particles": {"n": 8},
         "metastability": {"beta": [4.0], "systems": 1, "times": [0.5, 1.0]}},
        {"domain": {"geometry": "sphere"}, "particles": {"n": 8},
         "metastability": {"beta": [4.0], "systems": 1, "times": [0.5, 1.0]}},
    ],
    "bifurcation": [
        # continuation on the circle (state_density over theta) and on S^2 (lat, lon)
        {"model": {"beta": 0.0}, "discretization": {"resolution": 16},
         "bifurcation": {"start": 1.5, "stop": 2.5, "points": 4, "stride": 2}},
        {"domain": {"geometry": "sphere"}, "model": {"beta": 0.0},
         "discretization": {"resolution": 8},
         "bifurcation": {"start": 2.5, "stop": 3.5, "points": 4, "stride": 2}},
        # scan: time integration from two starts
        {"model": {"beta": 0.0}, "discretization": {"resolution": 32},
         "bifurcation": {"mode": "scan", "start": 1.5, "stop": 2.5, "scan_num": 2,
                         "scan_t_max": 5.0, "scan_tolerance": 1e-3}},
        # map: the first transition over (beta, kappa)
        {"model": {"beta": 0.0}, "discretization": {"resolution": 32},
         "bifurcation": {"mode": "map", "start": 1.0, "stop": 4.0, "map_start": 0.0,
                         "map_stop": 1.0, "map_num": 2}},
    ],
    "phase-diagram": [
        {"particles": {"n": 4},
         "phase_diagram": {"dims": [2], "beta": [1.0], "times": [0.0, 1.0],
                           "systems": 2}},
    ],
    "normalization": [
        {"particles": {"n": 4},
         "normalization": {"dim": 4, "systems": 2, "chunk": 2, "times": [0.1, 1.0]}},
    ],
    "long-context": [
        {"long_context": {"gamma": [1.0], "n": [2, 4], "direct_max": 4}},
    ],
    "correlations": [
        # S^1 (the closure terms) and S^2 (NaN there)
        {"correlations": {"n": [6, 8], "systems": 4, "chunk": 4, "times": [0.0, 0.1],
                          "bins": 4, "modes": 2}},
        {"correlations": {"n": [6, 8], "dim": 3, "systems": 4, "chunk": 4,
                          "times": [0.0, 0.1], "bins": 4, "modes": 2}},
    ],
    "critical-points": [
        # S^1 (angles) and S^2 (no angles)
        {"critical_points": {"n": [3], "beta": [1.0], "starts": 2}},
        {"critical_points": {"n": [3], "dim": 3, "beta": [1.0], "starts": 2}},
    ],
}


def study_commands() -> list[str]:
    """The study commands the CLI registers (its subcommands less the non-studies)."""
    from meanfield.cli import _parser

    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(set(sub.choices) - NOT_STUDIES)


COMMANDS = study_commands()


def page(command: str) -> Path:
    return STUDIES / f"{command}.md"


def _text(path: Path) -> str:
    # fenced code (```...```) is not page structure: a '## ' inside it is no heading
    return re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)


def sections(path: Path) -> dict[str, str]:
    """The ``##`` sections of a page: heading -> its text (up to the next ``##``)."""
    parts = re.split(r"^## +(.+?)\s*$", _text(path), flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def table_names(text: str) -> set[str]:
    """The backticked names of the first cell of every row of the tables in ``text``."""
    names: set[str] = set()
    rows = [line for line in text.splitlines() if line.lstrip().startswith("|")]
    for i, row in enumerate(rows):
        cells = row.strip().strip("|").split("|")
        if re.fullmatch(r"\s*:?-{3,}:?\s*", cells[0]):  # the separator row
            continue
        if i + 1 < len(rows) and re.fullmatch(r"\s*\|?\s*:?-{3,}.*", rows[i + 1]):
            continue  # a header row (the next row is the separator)
        names |= set(re.findall(r"`([^`]+)`", cells[0]))
    return names


def test_every_study_command_is_known():
    # a new study command needs its tiny configs here (and its page)
    assert set(COMMANDS) == set(TINY), (
        f"study commands of the CLI {COMMANDS} differ from those with tiny configs "
        f"{sorted(TINY)}")


@pytest.mark.parametrize("command", COMMANDS)
def test_page_has_the_six_sections_in_order(command):
    path = page(command)
    assert path.exists(), f"no page for 'meanfield {command}': write {path.relative_to(ROOT)}"
    found = tuple(sections(path))
    assert found == SECTIONS, (
        f"{path.relative_to(ROOT)}: its ## sections are {found}, expected {SECTIONS}")


def test_index_lists_every_study_page():
    index = (STUDIES / "index.md").read_text()
    entries = {line.strip() for block in re.findall(r"```\{toctree\}\n(.*?)```", index, re.S)
               for line in block.splitlines()
               if line.strip() and not line.strip().startswith(":")}
    assert entries == set(COMMANDS), f"docs/studies/index.md toctree: {sorted(entries)}"
    top = (DOCS / "index.md").read_text()
    assert re.search(r"^studies/index\s*$", top, re.M), "docs/index.md: no studies/index"


@functools.lru_cache(maxsize=None)
def dataset_names(command: str) -> frozenset[str]:
    """Variables and coordinates over the datasets of the study's tiny configs."""
    import copy

    import meanfield

    task = getattr(meanfield, command.replace("-", "_"))
    names: set[str] = set()
    for cfg in TINY[command]:
        ds = task(copy.deepcopy(cfg))
        assert ds.attrs["status"] in (0, 1), (command, ds.attrs["message"])
        names |= set(ds.data_vars) | set(ds.coords)
    return frozenset(names)


@pytest.mark.parametrize("command", COMMANDS)
def test_dataset_table_names_the_dataset(command):
    path = page(command)
    assert path.exists(), f"no page for 'meanfield {command}'"
    documented = table_names(sections(path).get("Dataset", ""))
    built = dataset_names(command)
    missing, extra = sorted(built - documented), sorted(documented - built)
    assert not missing and not extra, (
        f"{path.relative_to(ROOT)} Dataset table: missing {missing}; "
        f"not in the dataset {extra}")


def slug(title: str) -> str:
    """The anchor MyST gives a heading (``myst_heading_anchors``: GitHub-style)."""
    return re.sub(r"[^\w\u4e00-\u9fff\- ]", "", title.strip().lower().replace(" ", "-"))


def anchors(path: Path) -> set[str]:
    return {slug(h) for h in re.findall(r"^#{1,3} +(.+?)\s*$", _text(path), flags=re.M)}


STUDY_PAGES = sorted(STUDIES.glob("*.md"))


def prose(text: str) -> str:
    """``text`` without code (fenced and inline) and math (``$$...$$``, ``$...$``), where
    ``v[mu](x)`` is no link."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    text = re.sub(r"\$\$.*?\$\$", "", text, flags=re.S)
    text = re.sub(r"\$[^$\n]+\$", "", text)
    return re.sub(r"`[^`\n]+`", "", text)


@pytest.mark.parametrize("path", STUDY_PAGES, ids=lambda p: p.name)
def test_links_resolve(path):
    text = path.read_text()
    bad = []
    for target in re.findall(r"\]\(([^)\s]+)\)", prose(text)):  # Markdown links
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.is_file():
            bad.append(f"{target} (no file)")
        elif anchor and anchor not in anchors(dest):
            bad.append(f"{target} (no heading with that anchor)")
    for label in re.findall(r"\{ref\}`(?:[^`<]*<)?([^`>]+)>?`", text):  # gallery pages
        example = re.fullmatch(r"sphx_glr_auto_examples_(\w+)\.py", label)
        if example and not (ROOT / "examples" / f"{example[1]}.py").is_file():
            bad.append(f"{{ref}} {label} (no examples/{example[1]}.py)")
    for name in re.findall(r"\bexamples/([\w.-]+\.(?:toml|py))", text):
        if not (ROOT / "examples" / name).is_file():
            bad.append(f"examples/{name} (no such file)")
    assert not bad, f"{path.relative_to(ROOT)}: broken links: {bad}"


@pytest.mark.parametrize("command", COMMANDS)
def test_python_calls_load_a_config_the_study_takes(command):
    # meanfield.load_config(PATH) without task= holds every section: a study that takes
    # its own sections only (phase_diagram, metastability) refuses it, and a page that
    # shows that call shows an error. Checked by running the study on its tiny config
    # validated with every section, as load_config without task= returns it.
    import copy

    import meanfield
    from meanfield import config
    from meanfield.errors import ConfigError

    path = page(command)
    if not path.exists():
        return  # a missing page fails above
    bare = [c for c in re.findall(r"load_config\(([^)]*)\)", path.read_text())
            if "task=" not in c]
    if not bare:
        return
    task = getattr(meanfield, command.replace("-", "_"))
    try:
        task(config.validate(copy.deepcopy(TINY[command][0])))
    except ConfigError as exc:
        pytest.fail(f"{path.relative_to(ROOT)}: load_config({bare[0]}) returns every "
                    f"section, which meanfield.{command.replace('-', '_')} refuses ({exc}); "
                    f"write meanfield.load_config(PATH, task=\"{command}\")")
