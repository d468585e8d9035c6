"""The notebooks of ``notebooks/`` (jupytext percent files) run from top to bottom.

Each notebook is converted with jupytext and executed cell by cell by nbclient on the
``python3`` kernel (ipykernel), in a temporary working directory (the files it writes go
there). A cell that raises fails the test, and every notebook checks its key numbers
against theory with ``assert`` in its cells, so this is also the test of those numbers.
Both notebooks together use 12 s of the kernels' CPU time (tutorial 8 s, bifurcation 4 s);
measured on a 2-core machine whose load average other jobs kept at 5-16, they took 40 s
of wall time.

Without jupytext, nbclient or ipykernel (``pip install -e ".[test]"`` installs them) the
tests are skipped, saying which is missing.
"""
from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.py"))
# nbclient's limit per cell: far above the slowest cell (a few seconds), so only a hang
# trips it.
CELL_TIMEOUT_S = 300


def _read(path: Path):
    jupytext = pytest.importorskip("jupytext", reason="the notebook tests need jupytext "
                                   "(pip install -e '.[test]')")
    return jupytext.read(path)


def test_there_are_notebooks():
    names = {p.stem for p in PATHS}
    assert {"tutorial", "bifurcation"} <= names, names


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_is_explained_and_checked(path):
    """Markdown cells that explain, and at least one code cell that asserts a number."""
    nb = _read(path)
    markdown = [c for c in nb.cells if c.cell_type == "markdown"]
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert len(markdown) >= 3, f"{path.name}: {len(markdown)} markdown cells"
    assert markdown[0].source.startswith("# "), f"{path.name} starts without a title"
    assert any("assert " in c.source for c in code), f"{path.name} checks nothing"
    assert nb.metadata["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_executes(path, tmp_path, monkeypatch):
    """Every cell runs without error in a fresh kernel; figures are shown inline."""
    nb = _read(path)
    nbclient = pytest.importorskip("nbclient", reason="the notebook tests need nbclient")
    pytest.importorskip("ipykernel", reason="the notebook tests need ipykernel")
    # The kernel inherits this environment (the tests' MEANFIELD_CACHE of conftest
    # included); without MPLBACKEND it uses the inline backend, as Jupyter does.
    monkeypatch.delenv("MPLBACKEND", raising=False)
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=CELL_TIMEOUT_S,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, with the cell and traceback, on error
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert images, f"{path.name}: no figure was shown"
