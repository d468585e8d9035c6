"""Checks that keep the documentation site (docs/, built by Sphinx with warnings as
errors) buildable, run without Sphinx: the gallery's examples have the docstring title
sphinx-gallery needs and a docstring that reST reads without errors, every page of docs/
is in a toctree, and the tutorial's Python code runs and gives the exact values it states.
"""
from __future__ import annotations

import ast
import math
import os
import re
from pathlib import Path

import pytest
from scipy.optimize import brentq
from scipy.special import i0e, i1e

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text()), clean=False) or ""


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_docstring_has_a_gallery_title(path):
    # sphinx-gallery takes a page's title from the docstring's first line, underlined.
    lines = docstring(path).splitlines()
    assert len(lines) >= 3, f"{path.name}: no docstring"
    title, underline = lines[0], lines[1]
    assert title.strip() and set(underline) == {"="} and len(underline) >= len(title), (
        f"{path.name}: the docstring must start with a title underlined with '=' "
        f"(got {title!r} / {underline!r})")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_docstring_is_valid_rest(path):
    # Without this, |x_i| (a reST substitution) or a stray * fails the docs build.
    docutils_core = pytest.importorskip("docutils.core")
    import io

    messages = io.StringIO()
    docutils_core.publish_doctree(
        docstring(path), settings_overrides={
            "warning_stream": messages, "report_level": 2, "halt_level": 5})
    assert not messages.getvalue(), f"{path.name}: {messages.getvalue()}"


def toctree_entries() -> set[str]:
    index = (DOCS / "index.md").read_text()
    entries = set()
    for block in re.findall(r"```\{toctree\}\n(.*?)```", index, re.S):
        entries |= {line.strip() for line in block.splitlines()
                    if line.strip() and not line.startswith(":")}
    return entries


def test_every_page_is_in_the_toctree():
    pages = {p.stem for p in DOCS.glob("*.md")} | {p.stem for p in DOCS.glob("*.rst")}
    pages -= {"index", "sg_execution_times"}  # the root and sphinx-gallery's timing page
    missing = pages - toctree_entries()
    assert not missing, f"pages in no toctree of docs/index.md: {sorted(missing)}"


def kuramoto_root(kappa: float) -> float:
    # The nonzero root of r = I1(kappa r) / I0(kappa r) (noisy Kuramoto, kappa > 2).
    return brentq(lambda r: i1e(kappa * r) / i0e(kappa * r) - r, 1e-6, 1 - 1e-12)


@pytest.mark.slow
def test_tutorial_python_runs(tmp_path):
    # Measured: about 85 s on 2 shared cores (the compare and particles runs).
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / "tutorial.md").read_text(), re.S)
    assert len(blocks) >= 4
    namespace: dict = {}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for block in blocks:
            exec(compile(block, "docs/tutorial.md", "exec"), namespace)
    finally:
        os.chdir(cwd)
    # evolve: the stationary order parameter is the self-consistency root.
    assert abs(float(namespace["ds"].order_parameter[-1]) - kuramoto_root(4.0)) < 1e-4
    # particles: 20000 tokens, the time average of r over t in [10, 25]; the sampling
    # fluctuation of r is ~ 1/sqrt(n) = 0.007 per time, the stated margin is 0.005.
    r_particles = float(namespace["ps"].order_parameter.sel(time=slice(10, None)).mean())
    assert math.isclose(r_particles, kuramoto_root(4.0), abs_tol=5e-3)
    assert (tmp_path / "figs").is_dir()
