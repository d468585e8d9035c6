"""The figure of a bifurcation study across dimensions (``meanfield.plotting.
bifurcation_dims``) on a real small study (USA, beta = 1, zonal d = 4 and 8): what is drawn
is the dataset's numbers (the branches against kappa/d, the pitchforks at kappa_c/d, the
Landau beta*(d)), and ``meanfield plot`` writes its pages."""
from __future__ import annotations

import numpy as np
import pytest

from meanfield.cli import main
from meanfield.plotting import figure
from meanfield.plotting.bifurcation.across_dims import dims_figure
from meanfield.studies.bifurcation import study as bf

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def across():
    return bf.bifurcation({"model": {"beta": 1.0, "normalized": False},
                           "domain": {"geometry": "zonal", "dim": [4, 8]},
                           "discretization": {"resolution": 24},
                           "bifurcation": {"points": 30}})


def _line(fig, gid):
    found = [a for ax in fig.axes for a in ax.get_lines() if a.get_gid() == gid]
    assert found, gid
    return found[0]


def test_the_panels_draw_the_dataset(across):
    fig = dims_figure(across)
    for i, d in enumerate([4, 8]):
        one = across.isel(dim=i)
        n = int(one.branch_points.values[1])
        line = _line(fig, f"branch:{d}:stable:0")  # (supercritical: stable throughout)
        np.testing.assert_allclose(line.get_xdata(), one.kappa.values[1, :n] / d)
        np.testing.assert_allclose(line.get_ydata(), one.order_parameter.values[1, :n])
        pitch = one.special_kappa.values[one.special_type.values == "pitchfork"]
        np.testing.assert_allclose(_line(fig, f"pitchfork:{d}").get_xdata(), pitch / d)
    star = _line(fig, "tricritical_landau")
    np.testing.assert_array_equal(star.get_xdata(), [4, 8])
    np.testing.assert_allclose(star.get_ydata(), across.tricritical_beta_landau.values)
    assert figure(across) is not None  # (the summary, through the kind registry)


def test_meanfield_plot_writes_the_pages(across, tmp_path):
    path = tmp_path / "across.nc"
    across.to_netcdf(path)
    assert main(["plot", str(path), "--out", str(tmp_path)]) == 0
    pages = sorted(p.name for p in tmp_path.glob("across*.png"))
    assert pages, list(tmp_path.iterdir())
    for name in pages:
        assert (tmp_path / name).read_bytes()[:8] == PNG_MAGIC
