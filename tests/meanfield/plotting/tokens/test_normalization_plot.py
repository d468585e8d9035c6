"""The figure of a normalization study (``kind = "normalization"``), on a dataset made by
the study's own assembly from synthetic members with exact curves: Post-LN 1 - rho =
0.5 e^{-2t}, Pre-LN 0.5 (1 + c)^2/(t + 1 + c)^2 (no solver needed)."""
from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

from meanfield import config as cfgmod
from meanfield.errors import ConfigError
from meanfield.plotting import SUPPORTED_KINDS, figure, plot_result
from meanfield.plotting.tokens.normalization import (
    NEEDED,
    cosine_vs_time,
    gap_loglog,
    gap_semilog,
)
from meanfield.studies.tokens import normalization as nm

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
C = -0.5  # synthetic Pre-LN radius r = t + 1 + C: offset c = 1 + C, 1 - rho ~ (t + c)^-2


def synthetic(systems: int = 4, architectures=("post-ln", "pre-ln")):
    """Exponential laws (Post-LN, nGPT: rate 2) and power laws (the others) as above."""
    cfg = cfgmod.validate({"particles": {"n": 8}, "normalization": {
        "dim": 64, "systems": systems, "chunk": systems,
        "architectures": list(architectures),
        "times": {"start": 0.05, "stop": 5000.0, "num": 201, "scale": "log"}}})
    plan = nm.check_normalization_config(cfg)
    t = np.concatenate([[0.0], plan["times"]])
    spread = np.linspace(0.9, 1.1, systems)[:, None]
    post = 0.5 * spread * np.exp(-2.0 * t)[None]
    pre = 0.5 * spread * ((1 + C) / (t + 1 + C))[None] ** 2
    members = [{"gap": post, "radius": np.ones_like(post),
                "steps": np.zeros(systems, dtype=np.int64)} if a in ("post-ln", "ngpt")
               else {"gap": pre, "radius": np.broadcast_to(t + 1.0 + C, pre.shape).copy(),
                     "steps": np.zeros(systems, dtype=np.int64)} for a in architectures]
    ds = nm.study_dataset(cfg, plan, members, {})
    ds.attrs["kind"] = "normalization"
    return ds


def gids(ax) -> dict:
    return {a.get_gid(): a for a in [*ax.lines, *ax.collections, *ax.patches]
            if a.get_gid()}


def test_the_panels_and_their_lines():
    ds = synthetic()
    assert "normalization" in SUPPORTED_KINDS
    assert float(ds.fitted_rate) == pytest.approx(2.0, rel=1e-9)
    assert float(ds.fitted_power) == pytest.approx(-2.0, rel=1e-2)
    assert float(ds.shifted_power) == pytest.approx(-2.0, rel=1e-9)
    ax = Figure().add_subplot(1, 1, 1)
    cosine_vs_time(ds, ax)
    lines = gids(ax)
    for a in ("post-ln", "pre-ln"):
        assert {f"cosine:{a}", f"band:{a}", f"equiangular:{a}"} <= set(lines)
    assert ax.get_xlim()[1] < 20  # the linear axis ends where Post-LN has clustered
    ax = Figure().add_subplot(1, 1, 1)
    gap_semilog(ds, ax)
    fit = gids(ax)["fit:post-ln"]
    t, g = (np.asarray(v, dtype=float) for v in fit.get_data())
    assert t[0] == pytest.approx(float(ds.rate_fit_start))
    np.testing.assert_allclose(g, 0.5 * np.exp(-2.0 * t), rtol=1e-6)  # on the curve
    assert ax.get_yscale() == "log" and ax.get_xscale() == "linear"
    ax = Figure().add_subplot(1, 1, 1)
    gap_loglog(ds, ax)
    lines = gids(ax)
    assert {"fit:pre-ln", "guide", "window:pre-ln", "gap:pre-ln"} <= set(lines)
    t, _ = lines["fit:pre-ln"].get_data()
    assert t[0] == pytest.approx(float(ds.power_fit_start))
    assert ax.get_yscale() == "log" and ax.get_xscale() == "log"


def test_plot_result_and_errors(tmp_path):
    ds = synthetic()
    written = plot_result(ds, tmp_path, stem="n", dpi=50)
    assert [p.name for p in written] == ["n_summary.png"]
    assert written[0].read_bytes().startswith(PNG_MAGIC)
    assert len(figure(ds).axes) == 3
    with pytest.raises(ConfigError, match="needs fitted_power"):
        figure(ds.drop_vars("fitted_power"))
    assert "fitted_power" in NEEDED
    with pytest.raises(ConfigError, match="no animation"):
        plot_result(ds, tmp_path, stem="n", animate=True)


def test_every_drawn_line_is_named_and_no_legend_covers_a_curve():
    """Looked at: the fit windows were shaded without a legend entry, the equiangular
    ODE curves of (b) and (c) were in no legend, and the legend of (c) lay on Post-LN's
    fall. Now every line and the window are named, the legends of (b) and (c) sit under
    the panels, the title writes β (not "beta"), and (b)'s y axis spans the data it
    shows (within a decade of the lowest point in view)."""
    from tests.meanfield.plotting.figure_checks import (
        legend_covers,
        outside_limits,
        texts_with_raw_tex,
        unnamed_lines,
    )

    ds = synthetic()
    fig = figure(ds)
    fig.canvas.draw()
    for ax in fig.axes:
        legend = ax.get_legend()
        assert unnamed_lines([ax], [legend]) == []
        assert legend_covers(ax) == []
    names = {t.get_text() for t in fig.axes[1].get_legend().get_texts()}
    assert "fit window" in names and "equiangular ODE of each (dashed)" in names
    assert "β = " in fig._suptitle.get_text() and "beta" not in fig._suptitle.get_text()
    assert not texts_with_raw_tex(fig)
    t = ds["time"].values
    end = t[np.searchsorted(t, fig.axes[1].get_xlim()[1])]  # the segment to it is drawn
    shown = np.concatenate([ds[name].values[:, t <= end].ravel()
                            for name in ("gap_low", "gap_mean", "gap_high")])
    low = np.nanmin(np.where(shown > 1e-30, shown, np.nan))
    assert low / 10.0 * (1 - 1e-9) <= fig.axes[1].get_ylim()[0] <= low
    assert outside_limits(fig.axes[1]) == []


def test_every_rule_in_its_panel():
    """All five rules: (b) holds the exponential laws (Post-LN, nGPT) with a fit each,
    (c) the power laws (Pre-LN, Peri-LN, Mix-LN) with a fit each; one legend entry for the
    equiangular curves and one for the fit windows; every line named, no legend on a
    curve."""
    from tests.meanfield.plotting.figure_checks import legend_covers, unnamed_lines

    ds = synthetic(architectures=nm.ARCHITECTURES)
    fig = figure(ds)
    fig.canvas.draw()
    semilog, loglog = (gids(ax) for ax in fig.axes[1:])
    assert {"fit:post-ln", "fit:ngpt", "gap:post-ln", "gap:ngpt"} <= set(semilog)
    assert not any(k.endswith(("pre-ln", "peri-ln", "mix-ln")) for k in semilog)
    assert {f"fit:{a}" for a in ("pre-ln", "peri-ln", "mix-ln")} <= set(loglog)
    assert not any(k.endswith(("post-ln", "ngpt")) for k in loglog)
    for ax in fig.axes:
        texts = [t.get_text() for t in ax.get_legend().get_texts()]
        assert len(texts) == len(set(texts))
        assert unnamed_lines([ax], [ax.get_legend()]) == [] and legend_covers(ax) == []
    assert "nGPT α = 1" in fig._suptitle.get_text()
    t, g = (np.asarray(v, dtype=float) for v in semilog["fit:ngpt"].get_data())
    np.testing.assert_allclose(g, 0.5 * np.exp(-2.0 * t), rtol=1e-6)
