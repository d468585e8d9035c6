"""``meanfield.plot`` in Jupyter: the figures it returns display as images in a fresh
kernel, without ``%matplotlib inline``.

IPython registers its image formatter for matplotlib figures only after ``%matplotlib
inline`` or a pyplot figure, and the package's figures never touch pyplot, so ``plot``
registers the PNG formatter itself when it runs inside an IPython kernel (and only
there: it never imports IPython, and keeps a format the user already chose).
"""
from __future__ import annotations

import base64
import subprocess
import sys
import types

import pytest

import meanfield

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# a small noisy Kuramoto run on the circle (spectral, 32 modes, t = 0..1)
CONFIG = {"model": {"beta": 0.0, "kappa": 3.0}, "discretization": {"resolution": 32},
          "time": {"t_final": 1.0, "save_every": 0.5}}


@pytest.fixture(scope="module")
def ds():
    return meanfield.evolve(CONFIG)


def _fake_shell(monkeypatch, *, kernel: bool):
    """A shell with IPython's real display formatters (nothing registered for Figure,
    as in a fresh kernel), returned by ``IPython.get_ipython``; ``kernel``: it runs in a
    Jupyter kernel (a terminal IPython has no ``kernel``)."""
    import matplotlib

    IPython = pytest.importorskip("IPython")
    from IPython.core.formatters import DisplayFormatter

    # select_figure_formats reads the backend: resolve it before the fake shell exists
    # (resolving it inside would hook pyplot into the shell, as it does in a kernel)
    matplotlib.get_backend()

    shell = types.SimpleNamespace(display_formatter=DisplayFormatter())
    if kernel:
        shell.kernel = object()
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    return shell


def test_plot_in_a_kernel_makes_its_figures_display_as_png(ds, monkeypatch):
    shell = _fake_shell(monkeypatch, kernel=True)
    fig = meanfield.plot(ds)["summary"]
    # what Jupyter receives when a cell ends in the figure
    data, _ = shell.display_formatter.format(fig)
    assert "image/png" in data
    assert base64.b64decode(data["image/png"]).startswith(PNG_MAGIC)


def test_plot_outside_a_kernel_registers_nothing(ds, monkeypatch):
    from matplotlib.figure import Figure

    shell = _fake_shell(monkeypatch, kernel=False)  # terminal IPython
    meanfield.plot(ds)
    for formatter in shell.display_formatter.formatters.values():
        assert Figure not in formatter.type_printers


def test_plot_keeps_the_format_the_user_chose(ds, monkeypatch):
    from IPython.core.pylabtools import select_figure_formats
    from matplotlib.figure import Figure

    shell = _fake_shell(monkeypatch, kernel=True)
    select_figure_formats(shell, {"svg"})  # as %config InlineBackend.figure_formats
    meanfield.plot(ds)
    formatters = shell.display_formatter.formatters
    assert Figure in formatters["image/svg+xml"].type_printers
    assert Figure not in formatters["image/png"].type_printers


def test_plot_does_not_import_ipython():
    code = ("import sys, meanfield; "
            f"meanfield.plot(meanfield.evolve({CONFIG!r})); "
            "print('IPython' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True)
    assert out.stdout.strip() == "False"


def test_plot_shows_an_image_in_a_fresh_notebook_kernel(tmp_path, monkeypatch):
    """Two cells, no ``%matplotlib inline``: the second one's output is a PNG image."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's default, as in Jupyter
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(f"import meanfield\nds = meanfield.evolve({CONFIG!r})"),
               nbformat.v4.new_code_cell('meanfield.plot(ds)["summary"]')],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}})
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=300,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    (result,) = [o for o in nb.cells[1].outputs if o["output_type"] == "execute_result"]
    assert "image/png" in result["data"], result["data"].get("text/plain")
    assert base64.b64decode(result["data"]["image/png"]).startswith(PNG_MAGIC)
