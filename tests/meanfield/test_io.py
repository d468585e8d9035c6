"""``meanfield.io``: atomic writes that leave no handle on a file they replace."""
from __future__ import annotations

import numpy as np
import xarray as xr
from xarray.backends.file_manager import FILE_CACHE

from meanfield.io import release_files, write_netcdf


def _handles(under) -> list:
    root = str(under.resolve())
    return [key for key, handle in FILE_CACHE.items()
            if str(getattr(handle, "filepath", lambda: "")()).startswith(root)]


def test_replacing_a_lazily_open_file_releases_its_handle(tmp_path):
    """A lazily opened dataset keeps its file in xarray's cache; HDF5 knows open files by
    inode, so a handle that outlives a replaced (or deleted) file can be taken for a new
    file that reuses the inode. ``write_netcdf`` over it releases the handle first; the
    old dataset then reads the file by name (the new one)."""
    path = tmp_path / "r.nc"
    write_netcdf(xr.Dataset({"a": ("x", np.zeros(3))}), path)
    old = xr.open_dataset(path, engine="netcdf4")
    assert _handles(tmp_path)
    write_netcdf(xr.Dataset({"a": ("x", np.ones(3))}), path, overwrite=True)
    assert not _handles(tmp_path)
    np.testing.assert_array_equal(old["a"].values, np.ones(3))
    old.close()


def test_release_a_folder(tmp_path):
    for i in range(2):
        xr.Dataset({"a": ("t", np.full(2, float(i)))}).to_netcdf(tmp_path / f"p{i}.nc")
    ds = xr.open_mfdataset(sorted(tmp_path.glob("p*.nc")), engine="netcdf4",
                           combine="nested", concat_dim="t")
    assert len(_handles(tmp_path)) == 2
    release_files(tmp_path)
    assert not _handles(tmp_path)
    np.testing.assert_array_equal(ds["a"].values, [0, 0, 1, 1])  # (read again by name)
    ds.close()


def test_runs_open_their_files_with_small_chunk_caches(tmp_path, monkeypatch):
    """netCDF's default chunk cache (64 MiB a variable and open file) held by each part a
    streamed run reads back tripled its memory once the checksums chunked the arrays
    (368 MiB for 200 MiB of frames; the slow test_frames test measures it): a run opens
    its files with ``CHUNK_CACHE_BYTES``, and the default is restored after."""
    import netCDF4

    import meanfield
    from meanfield import io
    from meanfield.runs import engine

    before = netCDF4.get_chunk_cache()
    assert before[0] > io.CHUNK_CACHE_BYTES
    seen = []
    real = engine.Engine._run
    monkeypatch.setattr(engine.Engine, "_run",
                        lambda self, task: seen.append(netCDF4.get_chunk_cache()) or
                        real(self, task))
    cfg = {"model": {"beta": 1.0, "kappa": 10.0},
           "discretization": {"method": "spectral", "resolution": 32},
           "time": {"t_final": 0.1, "save_every": 0.05, "dt": 0.05}}
    meanfield.evolve(cfg, out=tmp_path / "r.nc")
    assert seen and seen[0][0] == io.CHUNK_CACHE_BYTES
    assert netCDF4.get_chunk_cache() == before
