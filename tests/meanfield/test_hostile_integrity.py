"""Nothing lost, third pass (issue 31, items 9 and 11): no pickle is ever read from a
place a user (or another user) can write, and a result or frame file that was altered on
disk is refused in one line naming it instead of giving wrong numbers."""
from __future__ import annotations

import pickle
import re
import warnings
from pathlib import Path

import pytest

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
