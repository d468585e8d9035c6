"""``meanfield plot RESULT.nc``: --format, --dpi, and no figure replaced without
--overwrite (one line, exit 2, every target checked before any is written)."""
from __future__ import annotations

import pytest

from meanfield.cli import main
from meanfield.runs.evolve import evolve

PAGES = ["summary", "spacetime", "snapshots", "diagnostics"]  # a circle PDE result


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    path = tmp_path_factory.mktemp("plot") / "run.nc"
    evolve({"model": {"beta": 1.0, "kappa": 3.0}, "discretization": {"resolution": 32},
            "time": {"t_final": 1.0, "save_every": 0.25}}, out=path)
    return path


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


@pytest.mark.parametrize("fmt, magic", [("pdf", b"%PDF-"), ("svg", b"<?xml")])
def test_format_writes_that_format(result, tmp_path, capsys, fmt, magic):
    out = tmp_path / "figs"
    assert main(["plot", str(result), "--out", str(out), "--format", fmt]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(f"run_{p}.{fmt}" for p in PAGES)
    assert (out / f"run_summary.{fmt}").read_bytes().startswith(magic)
    printed = capsys.readouterr().out.splitlines()
    assert printed == [f"wrote {out / f'run_{p}.{fmt}'}" for p in PAGES]


def test_dpi_sets_the_pixel_size(result, tmp_path):
    from PIL import Image

    sizes = {}
    for dpi in (50, 100):
        out = tmp_path / str(dpi)
        assert main(["plot", str(result), "--out", str(out), "--dpi", str(dpi)]) == 0
        with Image.open(out / "run_summary.png") as im:
            sizes[dpi] = im.size
    # the same figure (size in inches) at twice the dpi: twice the pixels, +-1 of rounding
    assert all(abs(2 * a - b) <= 2 for a, b in zip(sizes[50], sizes[100]))


def test_existing_figures_are_kept_without_overwrite(result, tmp_path, capsys):
    out = tmp_path / "figs"
    out.mkdir()
    old = out / "run_snapshots.png"  # one target exists: none of the others is written
    old.write_bytes(b"old")
    assert main(["plot", str(result), "--out", str(out)]) == 2
    err = _one_line(capsys)
    assert str(old) in err and "--overwrite" in err
    assert [p.name for p in out.iterdir()] == ["run_snapshots.png"]
    assert old.read_bytes() == b"old"
    assert main(["plot", str(result), "--out", str(out), "--overwrite"]) == 0
    assert old.read_bytes()[:4] == b"\x89PNG"
    assert len(list(out.iterdir())) == len(PAGES)
    # another format is another set of files: no conflict with the PNGs
    assert main(["plot", str(result), "--out", str(out), "--format", "pdf"]) == 0
    assert main(["plot", str(result), "--out", str(out)]) == 2  # a second plot refuses
    _one_line(capsys)


@pytest.mark.parametrize("args, words", [
    (["--format", "jpeg"], "--format"),
    (["--dpi", "many"], "--dpi"),
    (["--dpi", "0"], "dpi"),
    (["--dpi", "5000"], "dpi"),
])
def test_bad_format_or_dpi_is_one_line_and_status_2(result, tmp_path, capsys, args, words):
    out = tmp_path / "figs"
    assert main(["plot", str(result), "--out", str(out), *args]) == 2
    assert words in _one_line(capsys)
    assert not out.exists() or not list(out.iterdir())
