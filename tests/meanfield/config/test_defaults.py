"""The defaults describe a run that works (issue 9: an empty config once stopped with
"density went negative at t = 8.9": without noise the default density collapses)."""
from __future__ import annotations

import numpy as np
import xarray as xr

from meanfield.cli import main


def test_empty_toml_runs_to_the_end(tmp_path, capsys):
    toml = tmp_path / "empty.toml"
    toml.write_text("")
    assert main(["evolve", str(toml), "--no-progress"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 1
    with xr.open_dataset(tmp_path / "empty.nc") as ds:
        assert ds.attrs["status"] == 0
        # the default t_final reached, every saved density non-negative, mass 1
        assert float(ds.time[-1]) == 5.0
        assert float(ds["density"].min()) >= 0
        np.testing.assert_allclose(ds["mass"].values, 1.0, rtol=1e-10)
