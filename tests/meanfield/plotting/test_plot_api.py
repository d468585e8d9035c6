"""The Python side of plotting for notebooks: ``meanfield.plot`` returns the figures and
writes files only when given a folder (never over existing ones without overwrite), and
``dir(meanfield)`` shows the public names only."""
from __future__ import annotations

import subprocess
import sys

import pytest
from matplotlib.figure import Figure

import meanfield
from meanfield.errors import ConfigError, ResultExistsError

MAGIC = {"png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF-"}
CIRCLE_PAGES = ["summary", "spacetime", "snapshots", "diagnostics"]


@pytest.fixture(scope="module")
def ds():
    """A small noisy Kuramoto run on the circle (spectral, 32 modes, t = 0..1)."""
    return meanfield.evolve({"model": {"beta": 0.0, "kappa": 3.0},
                             "discretization": {"resolution": 32},
                             "time": {"t_final": 1.0, "save_every": 0.25}})


def test_plot_returns_figures_and_writes_nothing_without_a_folder(ds, tmp_path,
                                                                  monkeypatch):
    monkeypatch.chdir(tmp_path)
    figs = meanfield.plot(ds)
    assert list(figs) == CIRCLE_PAGES
    assert all(isinstance(f, Figure) for f in figs.values())
    assert list(tmp_path.iterdir()) == []
    # the same figures plot_result writes (one list of pages, one place)
    from meanfield.plotting import figures
    assert list(figures(ds)) == CIRCLE_PAGES


@pytest.mark.parametrize("fmt", ["png", "pdf", "svg"])
def test_plot_with_a_folder_writes_one_file_per_figure(ds, tmp_path, fmt):
    figs = meanfield.plot(ds, tmp_path / "figs", stem="run", format=fmt, dpi=40)
    files = sorted(p.name for p in (tmp_path / "figs").iterdir())
    assert files == sorted(f"run_{name}.{fmt}" for name in figs)
    head = (tmp_path / "figs" / f"run_summary.{fmt}").read_bytes()[:200]
    if fmt == "svg":
        assert b"<svg" in head
    else:
        assert head.startswith(MAGIC[fmt])


def test_plot_refuses_existing_files_before_writing_any(ds, tmp_path):
    # only the last target exists: nothing may be written before the refusal
    (tmp_path / "run_diagnostics.png").write_bytes(b"old")
    with pytest.raises(ResultExistsError) as err:
        meanfield.plot(ds, tmp_path, stem="run", dpi=40)
    assert "run_diagnostics.png" in str(err.value) and "overwrite" in str(err.value)
    assert [p.name for p in tmp_path.iterdir()] == ["run_diagnostics.png"]
    assert (tmp_path / "run_diagnostics.png").read_bytes() == b"old"
    meanfield.plot(ds, tmp_path, stem="run", dpi=40, overwrite=True)
    assert (tmp_path / "run_diagnostics.png").read_bytes()[:8] == MAGIC["png"]
    assert len(list(tmp_path.iterdir())) == len(CIRCLE_PAGES)


def test_plot_result_keeps_replacing_by_default(ds, tmp_path):
    # existing callers (the demo, scripts) relied on plot_result replacing its files
    from meanfield.plotting import plot_result
    (tmp_path / "result_summary.png").write_bytes(b"old")
    paths = plot_result(ds, tmp_path, dpi=40)
    assert paths[0].read_bytes()[:8] == MAGIC["png"]
    with pytest.raises(ResultExistsError):
        plot_result(ds, tmp_path, dpi=40, overwrite=False)


@pytest.mark.parametrize("kwargs, key, words", [
    ({"format": "jpeg"}, "format", "'png', 'pdf', 'svg'"),
    ({"dpi": 0}, "dpi", "(0, 1200]"),
    ({"dpi": 1e5}, "dpi", "(0, 1200]"),
    ({"dpi": float("nan")}, "dpi", "(0, 1200]"),
    ({"stem": "a/b"}, "stem", "path separators"),
])
def test_plot_bad_options_name_the_key_before_writing(ds, tmp_path, kwargs, key, words):
    with pytest.raises(ConfigError) as err:
        meanfield.plot(ds, tmp_path / "figs", **kwargs)
    assert err.value.key == key and words in str(err.value)
    assert not (tmp_path / "figs").exists()


def test_plot_animate_needs_a_folder(ds):
    with pytest.raises(ConfigError) as err:
        meanfield.plot(ds, animate=True)
    assert err.value.key == "animate"


def test_dir_lists_the_public_names_only():
    names = dir(meanfield)
    assert names == sorted(meanfield.__all__)
    assert "plot" in names and "evolve" in names and "load_config" in names
    for hidden in ("solvers", "Path", "Sequence", "annotations", "errors", "runs"):
        assert hidden not in names
    for name in meanfield.__all__:  # every listed name resolves (the lazy ones too)
        assert getattr(meanfield, name) is not None
    assert meanfield.plot is meanfield.plotting.plot
    import importlib  # submodules stay importable
    config = importlib.import_module("meanfield.config")
    assert importlib.import_module("meanfield.studies.transport.compare").compare is meanfield.compare
    assert callable(config.load) and meanfield.config is config


def test_import_and_dir_load_no_plotting_or_particles():
    # dir() has no side effects: matplotlib and the particle kernels load on first use
    code = ("import sys, meanfield; dir(meanfield); "
            "print(sorted(m for m in ('matplotlib', 'meanfield.plotting', "
            "'meanfield.runs.particles') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True)
    assert out.stdout.strip() == "[]"


def test_style_is_public_and_restores_the_callers_settings():
    """``meanfield.plotting.style()`` is the one public figure style (the examples draw
    their own panels in it): inside it the package's compact fonts hold, after it the
    caller's rcParams are back."""
    import matplotlib

    from meanfield import plotting

    assert "style" in plotting.__all__
    before = dict(matplotlib.rcParams)
    with plotting.style():
        assert matplotlib.rcParams["font.size"] == 9
        assert matplotlib.rcParams["legend.frameon"] is False
    assert dict(matplotlib.rcParams) == before
