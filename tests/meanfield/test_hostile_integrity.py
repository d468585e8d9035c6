"""Nothing lost, third pass (issue 31, items 9 and 11): no pickle is ever read from a
place a user (or another user) can write, and a result or frame file that was altered on
disk is refused in one line naming it instead of giving wrong numbers."""
from __future__ import annotations

import pickle
import re
import warnings
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr

import meanfield
import meanfield.model.circle
from meanfield.cli import main
from meanfield.errors import ConfigError
from meanfield.io import read_netcdf, write_netcdf
from meanfield.runs import frames as frames_module
from meanfield.runs.frames import frames_path
from meanfield.runs.schedule import checkpoint_path
from solvers.transforms import fft, wisdom

ROOT = Path(__file__).resolve().parents[2]


class _Payload:
    """A pickle whose loading creates ``marker``: what a hostile cache file would do."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


@pytest.fixture
def fresh_wisdom(monkeypatch, tmp_path):
    """A cache folder of its own, with the wisdom not yet loaded in this process."""
    monkeypatch.setenv("MEANFIELD_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(fft, "_wisdom_loaded", False)
    (tmp_path / "cache").mkdir()
    return tmp_path / "cache"


@pytest.mark.skipif(not fft.HAVE_PYFFTW, reason="the wisdom cache is pyfftw's")
def test_a_pickle_in_the_wisdom_cache_does_not_run(fresh_wisdom, tmp_path):
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Payload(marker))
    # Both the name the cache had (a pickle) and the name it has now.
    (fresh_wisdom / "fftw-wisdom.pickle").write_bytes(payload)
    (fresh_wisdom / wisdom.FILENAME).write_bytes(payload)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fft.RealFFT(48, threads=1, backend="pyfftw")
    assert not marker.exists()
    ours = [w for w in caught if "wisdom" in str(w.message)]
    assert len(ours) == 1 and wisdom.FILENAME in str(ours[0].message)
    # ... and written anew: the file now parses, as FFTW wisdom text.
    parts = wisdom.read(fresh_wisdom / wisdom.FILENAME)
    assert parts and all(p == b"" or p.startswith(b"(fftw-") for p in parts)


@pytest.mark.skipif(not fft.HAVE_PYFFTW, reason="the wisdom cache is pyfftw's")
def test_good_wisdom_round_trips_without_a_warning(fresh_wisdom):
    # (no wisdom yet in this process: a size-40 plan made by an earlier test would leave
    # the wisdom unchanged, and unchanged wisdom is not written)
    fft.pyfftw.forget_wisdom()
    fft.RealFFT(40, threads=1, backend="pyfftw")
    path = fresh_wisdom / wisdom.FILENAME
    saved = wisdom.read(path)
    assert saved == fft.pyfftw.export_wisdom()
    fft._wisdom_loaded = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fft._load_wisdom()


@pytest.mark.parametrize("damage", ["truncate", "flip", "trail", "foreign"])
def test_wisdom_decode_refuses_any_damage(damage):
    good = wisdom.encode((b"(fftw-3.3.5 fftw_wisdom)\n", b"", b""))
    assert wisdom.decode(good) == (b"(fftw-3.3.5 fftw_wisdom)\n", b"", b"")
    bad = {"truncate": good[:-5],
           "flip": good[:30] + bytes([good[30] ^ 1]) + good[31:],
           "trail": good + b"x",
           "foreign": wisdom.encode((b"import os; os.system('x')",))}[damage]
    with pytest.raises(wisdom.BadWisdom):
        wisdom.decode(bad)


def test_the_package_reads_no_pickle():
    """No ``pickle.load``/``loads``, ``allow_pickle=True`` or pickle-backed loader in the
    package's sources (numba's own cache index is numba's, in the same cache folder)."""
    pattern = re.compile(r"pickle\.loads?\(|allow_pickle\s*=\s*True|\bshelve\b|"
                         r"joblib\.load|dill\.load|pd\.read_pickle|torch\.load")
    hits = [f"{p.relative_to(ROOT)}:{i}" for pkg in ("meanfield", "solvers")
            for p in sorted((ROOT / pkg).rglob("*.py"))
            for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert hits == []


# -- item 11: checksums on every array written, verified on every read ------------------

EVOLVE = {"model": {"beta": 1.0, "kappa": 3.0},
          "initial": {"kind": "von_mises", "center": 1.0, "concentration": 1.0},
          "discretization": {"method": "spectral", "resolution": 256},
          "time": {"t_final": 1.0, "save_every": 0.05}}  # 21 frames of 2 kB


def _damage(path: Path, row: np.ndarray, size: int, how: str = "zero") -> None:
    """Zero (or flip) ``size`` bytes of ``path`` starting where the bytes of ``row`` (a
    saved frame's values) lie: inside a data chunk, not the file's metadata."""
    data = bytearray(path.read_bytes())
    at = data.find(row.tobytes())
    assert at > 0, "the frame's bytes are stored as they are (no compression)"
    end = min(at + size, len(data))
    data[at:end] = bytes(end - at) if how == "zero" else bytes(b ^ 0xFF for b in data[at:end])
    path.write_bytes(bytes(data))


def _filtered(path: Path) -> dict[str, bool]:
    with netCDF4.Dataset(path) as nc:
        return {name: var.filters()["fletcher32"] for name, var in nc.variables.items()
                if var.ndim}


def _interrupted(tmp_path, monkeypatch):
    """A streamed evolve run stopped by Ctrl-C after 12 frames, in parts of 4 frames."""
    monkeypatch.setattr(frames_module, "PART_BYTES", 6000)
    out = tmp_path / "run.nc"
    real = meanfield.model.circle.CircleModel.diagnostics
    calls = {"n": 0}

    def interrupting(self, rho):
        calls["n"] += 1
        if calls["n"] == 13:
            raise KeyboardInterrupt
        return real(self, rho)

    with monkeypatch.context() as mp:
        mp.setattr(meanfield.model.circle.CircleModel, "diagnostics", interrupting)
        part = meanfield.evolve(EVOLVE, out=out)
    part.close()
    assert part.attrs["status"] == -1
    return out, part


def test_parts_checkpoint_and_result_are_written_with_checksums(tmp_path, monkeypatch):
    out, part = _interrupted(tmp_path, monkeypatch)
    parts = sorted(frames_path(out).glob("part-*.nc"))
    assert len(parts) >= 2
    for path in [*parts, checkpoint_path(out)]:
        flags = _filtered(path)
        assert flags and all(flags.values()), (path.name, flags)
    done = meanfield.evolve(EVOLVE, out=out, resume=True)
    done.close()
    assert all(_filtered(out).values())


def test_a_damaged_part_stops_resume_in_one_line(tmp_path, monkeypatch, capsys):
    """4000 zeroed bytes in a part (issue 31: --resume finished with status 0 and wrong
    numbers): refused, naming the part, exit status 2, no traceback."""
    out, part = _interrupted(tmp_path, monkeypatch)
    first = frames_path(out) / "part-000000.nc"
    with xr.open_dataset(first, engine="netcdf4") as ds:
        row = ds["density"].values[1]
    _damage(first, row, 4000)
    with pytest.raises(ConfigError, match="damaged") as err:
        meanfield.evolve(EVOLVE, out=out, resume=True)
    assert err.value.key == "resume" and str(first) in str(err.value)
    config = tmp_path / "run.toml"
    config.write_text(
        '[model]\nbeta = 1.0\nkappa = 3.0\n[initial]\nkind = "von_mises"\ncenter = 1.0\n'
        'concentration = 1.0\n[discretization]\nmethod = "spectral"\nresolution = 256\n'
        '[time]\nt_final = 1.0\nsave_every = 0.05\n')
    assert main(["evolve", str(config), "--out", str(out), "--resume",
                 "--no-progress"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "part-000000.nc" in lines[0] and "damaged" in lines[0]


def test_a_damaged_checkpoint_stops_resume_in_one_line(tmp_path, monkeypatch):
    out, part = _interrupted(tmp_path, monkeypatch)
    ckpt = checkpoint_path(out)
    with xr.open_dataset(ckpt, engine="netcdf4") as ds:
        big = max(ds.data_vars.values(), key=lambda v: v.size)
        row = np.ascontiguousarray(big.values).ravel()[:16]
    _damage(ckpt, row, 4000)
    with pytest.raises(ConfigError, match="damaged") as err:
        meanfield.evolve(EVOLVE, out=out, resume=True)
    assert err.value.key == "resume" and str(ckpt) in str(err.value)


def test_a_damaged_result_is_not_plotted(tmp_path, capsys):
    """10 kB flipped in a result (issue 31: ``meanfield plot`` drew it, off by 1.6e4):
    one line naming the file, exit status 2, and no figure."""
    out = tmp_path / "run.nc"
    ds = meanfield.evolve(EVOLVE, out=out)
    row = ds["density"].values[3]
    ds.close()
    _damage(out, row, 10_000, how="flip")
    with pytest.raises(ConfigError, match="damaged"):
        read_netcdf(out)
    assert main(["plot", str(out), "--out", str(tmp_path / "fig")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and str(out) in lines[0] and "damaged" in lines[0]
    assert not (tmp_path / "fig").exists() or not any((tmp_path / "fig").iterdir())


def test_a_result_written_before_the_checksums_still_reads(tmp_path):
    """Files without checksums (contiguous arrays, as meanfield wrote them before) read as
    before, and one read back is written again with checksums (its ``contiguous``
    encoding dropped: a filter needs chunks)."""
    x = np.linspace(0.0, 1.0, 600).reshape(20, 30)
    old = tmp_path / "old.nc"
    xr.Dataset({"x": (("time", "n"), x), "s": ((), 2.0)},
               coords={"time": np.arange(20.0)}).to_netcdf(old, engine="netcdf4")
    assert not any(_filtered(old).values())
    back = read_netcdf(old)
    np.testing.assert_array_equal(back["x"].values, x)
    assert back["x"].encoding.get("contiguous") is True
    new = write_netcdf(back, tmp_path / "new.nc")
    assert all(_filtered(new).values())
    xr.testing.assert_identical(read_netcdf(new), back)
