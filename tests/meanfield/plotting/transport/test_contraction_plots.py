"""Tests for the figures of a contraction study (``kind = "contraction"``), on synthetic
datasets laid out as docs/datasets.md says, with exact exponentials (no solver needed)."""
from __future__ import annotations

import io

import numpy as np
import pytest
import xarray as xr
from matplotlib.figure import Figure

from meanfield.cli import main
from meanfield.errors import ConfigError
from meanfield.plotting import SUPPORTED_KINDS, figure, plot_result
from meanfield.plotting.transport.contraction import (
    NEEDED,
    _curves_page,
    _rates_page,
    distance_vs_time,
    rates_vs_beta,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
A = 0.8  # the distance at t = 0
FIT_BELOW, FIT_ABOVE = 0.1, 1e-8


def contraction_dataset(model: str = "USA", beta=(0.5, 1.0, 2.0),
                        sources=("pde", "particles"), pair: bool = False,
                        per_source: bool = True) -> xr.Dataset:
    """distance = A e^{-r t} with r the local rate (1 for SA, e^β for USA), the fit
    window where it lies in [FIT_ABOVE, FIT_BELOW], fitted rates r with a ±5 % interval;
    the particles' distances are the PDE's with a floor (as a finite n gives). Both
    windows measure the local rate (``fit_regime``); the mean-field rate of S¹ is kept
    beside it. ``per_source = False``: the layout of older results (``predicted_rate``
    (beta) only)."""
    beta = np.asarray(beta, dtype=float)
    time = np.linspace(0.0, 4.0, 41)
    rate = np.exp(beta) if model == "USA" else np.ones_like(beta)
    exact = A * np.exp(-rate[:, None] * time[None, :])  # (beta, time)
    floors = {"pde": 0.0, "particles": 1e-4}
    distance = np.stack([exact + floors[s] for s in sources], axis=-1)
    fitted = np.stack([rate] * len(sources), axis=-1)
    start = np.zeros_like(fitted)
    stop = np.zeros_like(fitted)
    for j, s in enumerate(sources):
        for i in range(beta.size):
            d = distance[i, :, j]
            inside = (d <= FIT_BELOW) & (d >= FIT_ABOVE) & (d > 3 * floors[s])
            start[i, j], stop[i, j] = time[inside].min(), time[inside].max()
    dims3, dims2 = ("beta", "time", "source"), ("beta", "source")
    ds = xr.Dataset(
        {"distance": (dims3, distance, {"units": "rad"}),
         "fitted_rate": (dims2, fitted), "fitted_rate_low": (dims2, 0.95 * fitted),
         "fitted_rate_high": (dims2, 1.05 * fitted),
         "fit_start": (dims2, start), "fit_stop": (dims2, stop),
         "predicted_rate": ((dims2, np.stack([rate] * len(sources), axis=-1))
                            if per_source else (("beta",), rate))},
        coords={"beta": beta, "time": time, "source": list(sources)},
        attrs={"kind": "contraction", "title": "contraction", "geometry": "circle",
               "model": model, "kappa": np.inf, "target": "dirac",
               "fit_below": FIT_BELOW, "fit_above": FIT_ABOVE})
    if per_source:
        mean_field = 0.5 * np.ones_like(beta) if model == "SA" else np.exp(-beta) / 2
        ds["local_rate"] = ("beta", rate)
        ds["mean_field_rate"] = ("beta", mean_field)
        ds["fit_regime"] = (dims2, np.full(fitted.shape, "local", dtype="<U10"))
        ds.attrs["dim"] = 2
    if pair:  # twice the distance: the same rates, the windows a bit later
        ds["pair_distance"] = (dims3, 2 * distance)
        ds["pair_fitted_rate"] = (dims2, fitted)
        ds["pair_fit_start"] = (dims2, start + 0.1)
        ds["pair_fit_stop"] = (dims2, stop)
    return ds


def gids(ax) -> dict[str, object]:
    return {line.get_gid(): line for line in ax.lines if line.get_gid()}


def new_axes():
    return Figure().add_subplot(1, 1, 1)


def test_registered_and_title():
    assert "contraction" in SUPPORTED_KINDS
    ds = contraction_dataset()
    assert figure(ds)._suptitle.get_text().startswith("contraction (USA model, κ = ∞")
    ds.attrs["title"] = "contraction of USA on the circle, kappa = inf: W_2 to the limit"
    assert figure(ds)._suptitle.get_text() == ds.attrs["title"]  # (not repeated)


def test_plot_result_writes_the_pages(tmp_path):
    ds = contraction_dataset(pair=True)
    written = plot_result(ds, tmp_path, stem="c", dpi=50)
    assert [p.name for p in written] == ["c_summary.png", "c_curves.png", "c_rates.png"]
    for path in written:
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5_000, path


def test_fitted_and_predicted_lines():
    ds = contraction_dataset()
    ax = new_axes()
    distance_vs_time(ds, ax)
    lines = gids(ax)
    for b in ("0.5", "1", "2"):
        for source in ("pde", "particles"):
            assert f"distance:{source}:{b}" in lines
            fit = lines[f"fit:distance:{source}:{b}"]
            t, d = (np.asarray(v, dtype=float) for v in fit.get_data())
            i = list(ds.beta.values).index(float(b))
            assert t[0] == pytest.approx(float(ds.fit_start[i, 0 if source == "pde" else 1]))
            assert t[-1] == pytest.approx(float(ds.fit_stop[i, 0 if source == "pde" else 1]))
            if source == "pde":  # the exact exponential: the fitted line lies on it
                rate = float(ds.local_rate[i])
                np.testing.assert_allclose(d, A * np.exp(-rate * t), rtol=1e-9)
            # the predicted line of the window's regime (local: dotted), through the
            # start of the source's fitted line
            predicted = lines[f"predicted:{source}:{b}"]
            assert predicted.get_linestyle() == ":"
            assert predicted.get_ydata()[0] == pytest.approx(fit.get_ydata()[0])
            # looked at: a dashed fit in the curve's colour vanished into the curve; it
            # is a wide pale band under it now, the predicted slope dotted on top
            data = lines[f"distance:{source}:{b}"]
            assert fit.get_linewidth() >= 3 * max(data.get_linewidth(), 1.3)
            assert fit.get_zorder() < data.get_zorder() < predicted.get_zorder()
    assert ax.get_yscale() == "log"
    assert "rad" in ax.get_ylabel() and "t" in ax.get_xlabel()
    labels = [t.get_text() for legend in ax.findobj(lambda a: a.__class__.__name__ == "Legend")
              for t in legend.get_texts()]
    assert {"PDE", "particles", "fitted rate (over its window)", "predicted: local rate",
            "β = 2"} <= set(labels)


def test_mean_field_window_and_older_results():
    """A PDE window in the mean-field regime gets the mean-field slope (dash-dotted) and
    the rates panel both rates; a result with predicted_rate (beta) alone still plots."""
    ds = contraction_dataset("SA")
    ds["fit_regime"].loc[{"source": "pde"}] = "mean-field"
    ds["predicted_rate"].loc[{"source": "pde"}] = 0.5
    ax = new_axes()
    distance_vs_time(ds, ax)
    lines = gids(ax)
    pde, tokens = lines["predicted:pde:1"], lines["predicted:particles:1"]
    assert pde.get_linestyle() == "-." and tokens.get_linestyle() == ":"
    t, d = (np.asarray(v, dtype=float) for v in pde.get_data())
    np.testing.assert_allclose(np.diff(np.log(d)) / np.diff(t), -0.5, rtol=1e-9)
    ax = new_axes()
    rates_vs_beta(ds, ax)
    lines = gids(ax)
    np.testing.assert_allclose(lines["predicted"].get_ydata(), 1.0)
    np.testing.assert_allclose(lines["mean_field"].get_ydata(), 0.5)
    assert {"local rate 1", "mean-field rate 1/2"} <= {
        t.get_text() for t in ax.get_legend().get_texts()}
    old = contraction_dataset(per_source=False)
    ax = new_axes()
    distance_vs_time(old, ax)
    assert "predicted:pde:1" in gids(ax)
    labels = [t.get_text() for legend in ax.findobj(lambda a: a.__class__.__name__ == "Legend")
              for t in legend.get_texts()]
    assert "predicted rate" in labels
    ax = new_axes()
    rates_vs_beta(old, ax)
    np.testing.assert_allclose(gids(ax)["predicted"].get_ydata(), np.exp([0.5, 1, 2]))


def test_crossover_window_gets_both_slopes():
    """A window over the crossover has no predicted rate: the local slope leaves the
    curve at the window's start and the mean-field slope meets it at its end."""
    ds = contraction_dataset("SA", beta=(1.0,), sources=("pde",))
    ds["fit_regime"][:] = "crossover"
    ds["predicted_rate"][:] = np.nan
    ax = new_axes()
    distance_vs_time(ds, ax)
    lines = gids(ax)
    local, mean_field = lines["local:pde:1"], lines["mean_field:pde:1"]
    t, d = (np.asarray(v, dtype=float) for v in local.get_data())
    assert local.get_linestyle() == ":" and mean_field.get_linestyle() == "-."
    assert d[0] == pytest.approx(A * np.exp(-t[0]), rel=1e-9)
    t, d = (np.asarray(v, dtype=float) for v in mean_field.get_data())
    assert d[-1] == pytest.approx(A * np.exp(-t[-1]), rel=1e-9)
    np.testing.assert_allclose(np.diff(np.log(d)) / np.diff(t), -0.5, rtol=1e-9)


def test_far_share_panel():
    ds = contraction_dataset("SA")
    share = np.where(ds.source.values == "pde", 0.6, np.nan)
    ds["far_share"] = (("beta", "time", "source"),
                       np.broadcast_to(share, (3, ds.time.size, 2)).copy())
    fig = figure(ds)
    assert len(fig.axes) == 3
    lines = gids(fig.axes[1])
    assert "far_share:pde:1" in lines and not any("particles" in g for g in lines)
    assert len(figure(contraction_dataset("SA")).axes) == 2  # no far_share: two panels


def test_an_empty_far_side_is_a_caption_not_a_panel():
    """Looked at: with the far share at round-off (|share| < 1e-6, the example config)
    the far-side panel was an empty frame with a line along its floor. Such a dataset
    now gets two panels and a caption saying the share stayed below the floor."""
    ds = contraction_dataset("SA")
    ds["far_share"] = (("beta", "time", "source"),
                       np.full((3, ds.time.size, 2), 8e-7))
    fig = figure(ds)
    assert len(fig.axes) == 2
    note = fig._supxlabel.get_text()
    assert "far side" in note and "8.0e-07" in note


def test_rates_panel_log_for_usa_linear_for_sa():
    ax = new_axes()
    rates_vs_beta(contraction_dataset("USA", beta=(0.5, 1.0, 2.0, 4.0)), ax)
    lines = gids(ax)
    assert {"rate:pde", "rate:particles", "predicted"} <= set(lines)
    np.testing.assert_allclose(lines["predicted"].get_ydata(), np.exp([0.5, 1, 2, 4]))
    assert ax.get_yscale() == "log" and "1/time" in ax.get_ylabel()
    ax = new_axes()
    rates_vs_beta(contraction_dataset("SA"), ax)
    assert ax.get_yscale() == "linear"
    assert ax.get_legend() is not None


def test_pair_panel():
    fig = _curves_page(contraction_dataset(pair=True))
    assert len(fig.axes) == 2
    lines = gids(fig.axes[1])
    assert "pair_distance:pde:1" in lines and "fit:pair_distance:pde:1" in lines
    assert not any(g.startswith("predicted") for g in lines)
    t, d = (np.asarray(v, dtype=float) for v in lines["fit:pair_distance:pde:1"].get_data())
    np.testing.assert_allclose(d, 2 * A * np.exp(-np.e * t), rtol=1e-9)
    # without its stored window the pair fit is not drawn (no window is guessed)
    fig = _curves_page(contraction_dataset(pair=True).drop_vars("pair_fit_start"))
    lines = gids(fig.axes[1])
    assert "pair_distance:pde:1" in lines and not any(g.startswith("fit") for g in lines)
    assert len(_curves_page(contraction_dataset()).axes) == 1
    ax = new_axes()
    rates_vs_beta(contraction_dataset(pair=True), ax)
    assert "pair_rate:pde" in gids(ax)


@pytest.mark.parametrize("drop", [["fitted_rate"], ["predicted_rate", "fit_stop"], list(NEEDED)])
def test_missing_variables(tmp_path, drop):
    ds = contraction_dataset().drop_vars(drop)
    with pytest.raises(ConfigError) as err:
        plot_result(ds, tmp_path / "out")
    assert all(name in str(err.value) for name in drop)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ConfigError):
        figure(ds)


def test_nan_only_source_is_skipped():
    ds = contraction_dataset()
    for name in ("distance", "fitted_rate", "fitted_rate_low", "fitted_rate_high",
                 "fit_start", "fit_stop"):
        ds[name].loc[{"source": "particles"}] = np.nan
    ds["predicted_rate"][1] = np.nan  # (with noise the slowest mode may be unknown)
    ds["local_rate"][1] = np.nan
    buffer = io.BytesIO()
    figure(ds).savefig(buffer, format="png", dpi=30)  # both panels drawn, no error
    assert buffer.getvalue().startswith(PNG_MAGIC)
    ax = new_axes()
    distance_vs_time(ds, ax)
    lines = gids(ax)
    assert not any("particles" in g for g in lines)
    assert "predicted:pde:1" not in lines and "predicted:pde:2" in lines
    ax = new_axes()
    rates_vs_beta(ds, ax)
    assert "rate:particles" not in gids(ax)


def test_pde_only_and_many_beta():
    ds = contraction_dataset("SA", beta=np.linspace(0.1, 3.0, 12), sources=("pde",))
    fig = _rates_page(ds)
    assert len(fig.axes) == 1
    fig = _curves_page(ds)
    assert len(fig.axes) == 2  # the distance panel and a colorbar of β
    assert fig.axes[1].get_ylabel() == "β"


def test_animate_refused(tmp_path):
    with pytest.raises(ConfigError) as err:
        plot_result(contraction_dataset("SA", beta=(1.0,), sources=("pde",)), tmp_path,
                    animate=True, dpi=20)
    assert err.value.key == "--animate"


def test_cli_plot(tmp_path):
    out = tmp_path / "c.nc"
    contraction_dataset(pair=True).to_netcdf(out)
    assert main(["plot", str(out), "--out", str(tmp_path / "figs")]) == 0
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == [
        "c_curves.png", "c_rates.png", "c_summary.png"]
