"""Tests for the convergence figures on a synthetic dataset laid out as the study writes it
(dims ``(time, n, replica)``): errors exactly ``c(t) n^{-1/2}``, so every fitted slope is
-1/2 (least squares on an exact power law), and a Dobrushin bound 1e3 above the data."""
from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from meanfield.plotting.transport.convergence import _rates_page, _summary, error_vs_time
from meanfield.plotting.helpers import _new_figure

TIMES = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
NS = np.array([100.0, 400.0, 1600.0])
REPLICAS = 3


def convergence_dataset(bound_factor: float = 1e3) -> xr.Dataset:
    c = 1.0 + TIMES  # (time,)
    base = c[:, None, None] * NS[None, :, None] ** -0.5 * np.ones((1, 1, REPLICAS))
    dims = ("time", "n", "replica")
    slope = np.full(TIMES.size, -0.5)
    data = {"distance": (dims, base), "coupling": (dims, 0.5 * base),
            "sampling_floor": (dims, 0.8 * base),
            "dobrushin_bound": (dims, bound_factor * base.max() * np.exp(TIMES)[:, None, None]
                                * np.ones_like(base)),
            "slope": (("time",), slope), "slope_low": (("time",), slope - 0.1),
            "slope_high": (("time",), slope + 0.1)}
    return xr.Dataset(data, coords={"time": TIMES, "n": NS},
                      attrs={"kind": "convergence", "title": "synthetic"})


def test_the_bound_far_above_the_data_does_not_set_the_axis_and_is_marked():
    ds = convergence_dataset(1e3)
    fig = _new_figure((4, 3))
    ax = fig.add_subplot(1, 1, 1)
    error_vs_time(ds, ax)
    low, high = ax.get_ylim()
    data_max = float(ds.distance.max())
    data_min = float(ds.coupling.min())
    assert low <= data_min and high >= data_max  # every measured error in the frame
    assert high < float(ds.dobrushin_bound.min())  # the bound (>= 1e3 x data) is not
    notes = [t for t in ax.texts if t.get_gid() == "dobrushin_off_frame"]
    assert len(notes) == 1 and "above" in notes[0].get_text()
    assert notes[0].xy[1] == pytest.approx(high)  # the arrow points at the top edge


def test_a_bound_inside_the_frame_gets_no_off_frame_note():
    ds = convergence_dataset()
    ds["dobrushin_bound"] = ds.distance * 1.5  # within the factor-2 margin of the data
    fig = _new_figure((4, 3))
    ax = fig.add_subplot(1, 1, 1)
    error_vs_time(ds, ax)
    assert not [t for t in ax.texts if t.get_gid() == "dobrushin_off_frame"]
    assert ax.get_ylim()[1] >= float(ds.dobrushin_bound.max())


def test_rates_page_is_one_panel_of_slope_against_time():
    ds = convergence_dataset()
    fig = _rates_page(ds)
    assert len(fig.axes) == 1
    lines = {line.get_gid(): line for line in fig.axes[0].lines if line.get_gid()}
    x, y = lines["slope:distance"].get_data()
    np.testing.assert_array_equal(x, TIMES)
    np.testing.assert_array_equal(y, ds.slope.values)


def test_summary_still_two_panels():
    assert len(_summary(convergence_dataset()).axes) == 2


def test_rates_page_of_the_gaussian_reference_is_one_panel_with_each_slope():
    ds = convergence_dataset()
    data = {}
    for name in ("mean_error", "covariance_error", "coupling"):
        data[name] = ds.distance
        for suffix, shift in (("", 0.0), ("_low", -0.1), ("_high", 0.1)):
            data[f"{name}_slope{suffix}"] = ds.slope + shift
    gaussian = xr.Dataset(data, attrs={"reference": "gaussian", "title": "gaussian"})
    fig = _rates_page(gaussian)
    assert len(fig.axes) == 1
    gids = {line.get_gid() for line in fig.axes[0].lines}
    assert {"slope:mean_error", "slope:covariance_error", "slope:coupling"} <= gids


def test_the_summary_names_its_distance_and_dots_and_keeps_legends_off_the_data():
    """Looked at: the legend said W_p with p unexplained (the study stores p = 1), the
    replicas' dots were in no legend, the title read "beta = 1, kappa = inf", the n axis
    was labelled 2 × 10², 3 × 10², and the summary was drawn without the package style
    (larger fonts, framed legends). Now: W_1, a legend entry for the dots, β and κ = ∞,
    plain n ticks, the package style and both legends under their panels."""
    from tests.meanfield.plotting.figure_checks import legend_covers, texts_with_raw_tex

    ds = convergence_dataset(1e3)
    ds.attrs.update(p=1.0, title="convergence on the circle, beta = 1, kappa = inf")
    fig = _summary(ds)
    fig.canvas.draw()
    a, b = fig.axes
    names = [t.get_text() for t in a.get_legend().get_texts()]
    assert r"$W_{1}(\mu^n_t, \mu_t)$" in names
    assert any("replicas" in name for name in names)
    assert fig._suptitle.get_text().endswith("β = 1, κ = ∞")
    assert not texts_with_raw_tex(fig)
    assert legend_covers(a) == [] and legend_covers(b) == []
    assert a.get_legend().get_frame_on() is False  # the package style
    lo, hi = a.get_xlim()
    shown = [label.get_text() for tick, label in zip(a.get_xticks(), a.xaxis.get_ticklabels())
             if lo <= tick <= hi and label.get_text()]
    assert shown == ["100", "200", "500", "1000"], shown  # n from 100 to 1600
