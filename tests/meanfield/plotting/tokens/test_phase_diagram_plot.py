"""The figure of a phase diagram (``kind = "phase_diagram"``), on a synthetic dataset laid
out as docs/datasets.md says: the probability a logistic step in t at the equiangular
time of each beta (no solver needed)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

from meanfield.cli import main
from meanfield.errors import ConfigError
from meanfield.plotting import SUPPORTED_KINDS, figure, phase_figure, plot_result
from meanfield.studies.tokens.phase_diagram import equiangular_time

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def phase_dataset(dims=(2, 8, 32, 128, 1024), n: int = 32) -> xr.Dataset:
    beta = np.linspace(0.1, 9.0, 12)
    time = np.linspace(0.0, 30.0, 61)
    eq = np.array([equiangular_time(b, n, 0.999) for b in beta])
    p = 1 / (1 + np.exp(np.clip(-4 * (time[None, :] - eq[:, None]), -50, 50)))
    prob = np.stack([p] * len(dims))
    dims3 = ("dim", "beta", "time")
    return xr.Dataset(
        {"pair_probability": (dims3, prob),
         "pair_probability_low": (dims3, np.clip(prob - 0.02, 0, 1)),
         "pair_probability_high": (dims3, np.clip(prob + 0.02, 0, 1)),
         "equiangular_time": ("beta", eq)},
        coords={"dim": list(dims), "beta": beta, "time": time},
        attrs={"kind": "phase_diagram", "model": "SA", "n": n, "threshold": 0.999,
               "systems": 2048})


def _gids(fig) -> set[str]:
    return {str(a.get_gid()) for a in fig.findobj() if a.get_gid() is not None}


def test_one_panel_per_dimension_with_curve_contour_and_colorbar():
    ds = phase_dataset()
    assert "phase_diagram" in SUPPORTED_KINDS
    fig = phase_figure(ds)
    gids = _gids(fig)
    for d in (2, 8, 32, 128, 1024):
        assert f"probability:{d}" in gids and f"half:{d}" in gids
        assert f"equiangular:{d}" in gids
    assert "colorbar" in gids
    panels = [ax for ax in fig.axes if ax.get_title(loc="left")]
    assert [ax.get_title(loc="left") for ax in panels] == [
        "(a) d = 2", "(b) d = 8", "(c) d = 32", "(d) d = 128", "(e) d = 1024"]
    line = next(a for a in fig.findobj() if a.get_gid() == "equiangular:1024")
    _, y = line.get_data()
    shown = ds.equiangular_time.values <= 30
    np.testing.assert_allclose(y, ds.equiangular_time.values[shown])
    assert line.get_linestyle() == "-"
    low = next(a for a in fig.findobj() if a.get_gid() == "equiangular:2")
    assert low.get_linestyle() == "--"  # d < n: no equiangular start, dashed
    assert panels[0].get_xlabel() == r"$\beta$" and panels[0].get_ylabel() == "time t"


def test_the_image_is_the_probability():
    ds = phase_dataset(dims=(64,))
    fig = figure(ds)
    mesh = next(a for a in fig.findobj() if a.get_gid() == "probability:64")
    np.testing.assert_allclose(np.asarray(mesh.get_array()).reshape(61, 12),
                               ds.pair_probability.values[0].T)
    assert mesh.get_clim() == (0.0, 1.0)


def test_an_equiangular_time_beyond_the_times_is_left_out():
    ds = phase_dataset(dims=(64,))
    eq = ds.equiangular_time.values.copy()
    eq[-1] = math.inf
    ds["equiangular_time"] = ("beta", eq)
    fig = phase_figure(ds)
    line = next(a for a in fig.findobj() if a.get_gid() == "equiangular:64")
    assert np.all(np.isfinite(line.get_data()[1]))


def test_plot_result_and_cli(tmp_path, capsys):
    ds = phase_dataset(dims=(8, 128))
    paths = plot_result(ds, tmp_path, stem="pd")
    assert [p.name for p in paths] == ["pd_summary.png"]
    assert paths[0].read_bytes()[:8] == PNG_MAGIC
    path = tmp_path / "pd.nc"
    ds.to_netcdf(path)
    assert main(["plot", str(path), "--out", str(tmp_path / "figs")]) == 0
    assert (tmp_path / "figs" / "pd_summary.png").exists()
    assert main(["plot", str(path), "--animate", "--out", str(tmp_path / "g")]) == 2
    assert "no animation" in capsys.readouterr().err


def test_a_missing_variable_is_named():
    ds = phase_dataset(dims=(8,)).drop_vars("equiangular_time")
    with pytest.raises(ConfigError, match="equiangular_time"):
        phase_figure(ds)


def test_every_kind_of_line_is_in_the_legend():
    """Looked at: the black P = 1/2 contour and the dashed (d < n) equiangular curve were
    in no legend (only the last panel's solid curve, in white on the image). The legend
    under the panels now names the three."""
    fig = phase_figure(phase_dataset())
    legend = next(a for a in fig.findobj() if a.get_gid() == "legend")
    names = [t.get_text() for t in legend.get_texts()]
    # issue 30: the equiangular time was named twice (solid, dashed); once now
    assert names == ["equiangular time t*(β) (dashed where d < n)", "P = 1/2 (contour)"]


def test_the_equiangular_curve_shows_on_both_ends_of_the_colour_scale():
    """Looked at (issue 30): the white curve vanished on the pale end of magma, where it
    runs at large d. Its colour is now far (in RGB) from both ends of the scale, and
    edged in black."""
    from matplotlib import colormaps
    from matplotlib.colors import to_rgb

    fig = phase_figure(phase_dataset())
    line = next(a for a in fig.findobj() if a.get_gid() == "equiangular:1024")
    colour = np.array(to_rgb(line.get_color()))
    for end in (0.0, 1.0):
        assert np.linalg.norm(colour - np.array(colormaps["magma"](end)[:3])) > 0.8
    assert line.get_path_effects()  # the black edge
