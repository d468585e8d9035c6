"""Tests for the bifurcation figure (``kind = "bifurcation"``) on synthetic datasets laid
out as docs/datasets.md says: the exact beta = 0 branch on S^1 (``r = I_1(kappa r)/I_0(kappa
r)`` by brentq) with the uniform state, and a synthetic subcritical branch with a fold
(``kappa = 3 - r^2 + 2 r^4``: fold at r = 1/2, kappa = 2.875)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr
from matplotlib.figure import Figure
from scipy import optimize, special

from meanfield.cli import main
from meanfield.errors import ConfigError
from meanfield.plotting import SUPPORTED_KINDS, bifurcation_figure, figure, plot_result
from meanfield.plotting.bifurcation.diagrams import (
    bifurcation_diagram,
    free_energy_diagram,
    stability_runs,
)
from meanfield.plotting.helpers import _new_figure

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
POINTS = 31
FOLD_KAPPA = 2.875


def kuramoto_r(kappa: float) -> float:
    if kappa <= 2.0:
        return 0.0
    return optimize.brentq(lambda r: special.i1e(kappa * r) / special.i0e(kappa * r) - r,
                           1e-12, 1.0, xtol=1e-15)


def pad(values, fill=np.nan):
    out = np.full(POINTS, fill, dtype=float)
    out[: len(values)] = values
    return out


def bifurcation_dataset() -> xr.Dataset:
    area = 2 * math.pi
    # branch 0: the uniform state, stable below kappa_c = 2
    k0 = np.linspace(1.0, 4.0, POINTS)
    f0 = -math.log(area) / k0
    s0 = np.where(k0 <= 2.0, 1, 0)
    # branch 1: the exact noisy-Kuramoto branch; F = r^2/2 - log(2 pi I_0(kappa r))/kappa
    k1 = np.linspace(2.0, 4.0, 21)
    r1 = np.array([kuramoto_r(k) for k in k1])
    f1 = r1**2 / 2 - (np.log(area * special.i0e(k1 * r1)) + k1 * r1) / k1
    s1 = np.ones_like(k1)
    # branch 2: synthetic subcritical (mode 2, kappa_c = 3), unstable up to the fold
    r2 = np.linspace(0.0, 0.8, POINTS)
    k2 = 3.0 - r2**2 + 2 * r2**4
    f2 = -math.log(area) / k2 + 0.1 * (r2**2 - 0.6 * r2**4)
    s2 = np.where(r2 > 0.5, 1, 0)
    stable = np.stack([s0, pad(s1, -1), s2]).astype(np.int8)
    kappa = np.stack([k0, pad(k1), k2])
    dims = ("branch", "point")
    return xr.Dataset(
        {"kappa": (dims, kappa), "beta": (dims, np.zeros_like(kappa)),
         "order_parameter": (dims, np.stack([np.zeros(POINTS), pad(r1), r2])),
         "free_energy": (dims, np.stack([f0, pad(f1), f2])),
         "stable": (dims, stable),
         "leading_eigenvalue": (dims, np.zeros_like(kappa)),
         "branch_mode": (("branch",), np.array([0, 1, 2])),
         "branch_kind": (("branch",), np.array(["uniform", "mode", "mode"])),
         "special_type": (("special",), np.array(["pitchfork", "pitchfork", "fold"])),
         "special_kappa": (("special",), np.array([2.0, 3.0, FOLD_KAPPA])),
         "special_beta": (("special",), np.zeros(3)),
         "special_branch": (("special",), np.array([1, 2, 2])),
         "special_order_parameter": (("special",), np.array([0.0, 0.0, 0.5]))},
        attrs={"kind": "bifurcation", "parameter": "kappa", "critical_kappa": [2.0, 3.0],
               "geometry": "circle", "model": "USA", "beta": 0.0, "mode": "continuation"})


def scan_dataset() -> xr.Dataset:
    value = np.linspace(1.5, 4.0, 11)
    up = np.array([kuramoto_r(k) for k in value])
    down = up.copy()
    down[value < 2.0] = 0.0
    fe = -math.log(2 * math.pi) / value
    dims = ("sweep", "value")
    return xr.Dataset(
        {"order_parameter": (dims, np.stack([up, up, down])),
         "free_energy": (dims, np.stack([fe, fe, fe])),
         "stable": (dims, np.ones((3, value.size), dtype=bool)),
         "bistable": (("value",), (value > 2.6) & (value < 3.1))},
        coords={"sweep": ["uniform", "up", "down"], "value": value,
                "kappa": ("value", value), "beta": ("value", np.zeros_like(value))},
        attrs={"kind": "bifurcation", "mode": "scan", "parameter": "kappa", "kappa_c": 2.0,
               "geometry": "circle"})


def new_axes():
    return _new_figure((4, 3)).add_subplot(1, 1, 1)


def lines_by(ax, prefix: str):
    return [line for line in ax.get_lines() if str(line.get_gid() or "").startswith(prefix)]


def test_registered():
    assert "bifurcation" in SUPPORTED_KINDS


def test_stability_runs_share_their_boundary_points():
    stable = np.array([1, 1, 0, 0, 0, 1, -1, -1])
    finite = np.array([True] * 7 + [False])
    runs = stability_runs(stable, finite)
    assert [f for f, _ in runs] == [1, 0, 1, -1]
    assert [list(i) for _, i in runs] == [[0, 1], [1, 2, 3, 4], [4, 5], [5, 6]]
    # a gap (non-finite point) ends a run without joining across it
    runs = stability_runs(np.ones(5), np.array([True, True, False, True, True]))
    assert [list(i) for _, i in runs] == [[0, 1], [3, 4]]


def test_diagram_segments_specials_and_kappa_c():
    ds = bifurcation_dataset()
    ax = new_axes()
    handles = bifurcation_diagram(ds, ax)
    branches = lines_by(ax, "branch:")
    solid = [line for line in branches if line.get_linestyle() == "-"]
    dashed = [line for line in branches if line.get_linestyle() == "--"]
    # uniform: stable + unstable; Kuramoto: stable; subcritical: unstable + stable
    assert len(solid) == 3 and len(dashed) == 2 and len(branches) == 5
    assert sorted(line.get_gid() for line in dashed) == ["branch:0:unstable:1",
                                                         "branch:2:unstable:0"]
    # the stable Kuramoto run is the exact branch
    kura = next(line for line in branches if line.get_gid() == "branch:1:stable:0")
    x, y = kura.get_data()
    assert np.allclose(y, [kuramoto_r(k) for k in x], atol=1e-14)
    # the runs of the subcritical branch meet at the fold
    lower = next(line for line in branches if line.get_gid() == "branch:2:unstable:0")
    upper = next(line for line in branches if line.get_gid() == "branch:2:stable:1")
    assert lower.get_xdata()[-1] == upper.get_xdata()[0]
    assert min(upper.get_xdata().min(), lower.get_xdata().min()) == pytest.approx(
        FOLD_KAPPA, abs=0.01)
    # specials: one marker artist per type, at the right places
    (pitch,) = lines_by(ax, "special:pitchfork")
    (fold,) = lines_by(ax, "special:fold")
    assert list(pitch.get_xdata()) == [2.0, 3.0] and pitch.get_marker() == "o"
    assert list(fold.get_xdata()) == [FOLD_KAPPA] and fold.get_marker() == "s"
    assert list(fold.get_ydata()) == [0.5]
    # analytic kappa_c, one thin line per mode
    kc = lines_by(ax, "kappa_c:")
    assert sorted(line.get_xdata()[0] for line in kc) == [2.0, 3.0]
    labels = [h.get_label() for h in handles]
    for label in ("uniform", "$k = 1$", "$k = 2$", "stable", "unstable", "pitchfork",
                  "fold", r"$\kappa_c$ (linear theory)"):
        assert label in labels


def test_free_energy_panel_relative_to_uniform():
    ds = bifurcation_dataset()
    ax = new_axes()
    free_energy_diagram(ds, ax)
    uniform = lines_by(ax, "free_energy:0:")
    assert uniform and all(np.allclose(line.get_ydata(), 0.0, atol=1e-14)
                           for line in uniform)
    (kura,) = lines_by(ax, "free_energy:1:")
    y = kura.get_ydata()
    assert y[0] == pytest.approx(0.0, abs=1e-14)  # at kappa_c the branch is the uniform
    assert np.all(y[1:] < 0)  # the clustered state has the lower free energy above 2
    assert len(lines_by(ax, "free_energy:2:")) == 2
    assert lines_by(ax, "special_free_energy:fold")


def test_scan_overlay_and_bistable_band():
    ds, scan = bifurcation_dataset(), scan_dataset()
    fig = bifurcation_figure(ds, scan)
    a, b = fig.axes[:2]
    assert {line.get_gid() for line in lines_by(a, "scan:")} == {
        "scan:uniform", "scan:up", "scan:down"}
    marker = lines_by(a, "scan:up")[0]
    assert marker.get_linestyle() == "None" and marker.get_markerfacecolor() == "none"
    assert any(p.get_gid() == "bistable" for p in a.patches)
    assert len(lines_by(b, "scan_free_energy:")) == 3
    assert a.get_xlabel().startswith(r"$\kappa$")
    assert "order parameter" in a.get_ylabel()
    assert fig.legends


def test_scan_dataset_alone():
    fig = figure(scan_dataset())
    assert isinstance(fig, Figure)
    a = fig.axes[0]
    assert len(lines_by(a, "scan:")) == 3
    assert [line.get_xdata()[0] for line in lines_by(a, "kappa_c:")] == [2.0]


def test_plot_result_and_cli(tmp_path):
    ds = bifurcation_dataset()
    written = plot_result(ds, tmp_path / "figs", stem="b", dpi=50)
    assert [p.name for p in written] == ["b_summary.png", "b_diagram.png"]
    for path in written:
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5_000, path
    out = tmp_path / "b.nc"
    ds.to_netcdf(out)
    assert main(["plot", str(out), "--out", str(tmp_path / "cli")]) == 0
    assert sorted(p.name for p in (tmp_path / "cli").iterdir()) == [
        "b_diagram.png", "b_summary.png"]


@pytest.mark.parametrize("drop", ["order_parameter", "stable", "kappa"])
def test_missing_variables(tmp_path, drop):
    with pytest.raises(ConfigError, match=drop):
        plot_result(bifurcation_dataset().drop_vars(drop), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_bad_parameter_and_animation(tmp_path):
    ds = bifurcation_dataset()
    ds.attrs["parameter"] = "gamma"
    with pytest.raises(ConfigError, match="parameter"):
        figure(ds)
    with pytest.raises(ConfigError) as err:
        plot_result(bifurcation_dataset(), tmp_path, animate=True, dpi=20)
    assert err.value.key == "--animate"


def test_beta_parameter_draws_beta_c_not_kappa_c():
    ds = bifurcation_dataset()
    ds.attrs["parameter"] = "beta"
    ds["beta"] = ds["kappa"]  # (any values: the drawing is what is tested)
    ax = new_axes()
    bifurcation_diagram(ds, ax)
    assert not lines_by(ax, "kappa_c:") and not lines_by(ax, "beta_c:")
    assert ax.get_xlabel().startswith(r"$\beta$")
    ds.attrs["critical_beta"] = [1.5, np.nan]  # (mode 2: none in the range)
    ax = new_axes()
    handles = bifurcation_diagram(ds, ax)
    assert [line.get_xdata()[0] for line in lines_by(ax, "beta_c:")] == [1.5]
    assert r"$\beta_c$ (linear theory)" in [h.get_label() for h in handles]


def map_dataset() -> xr.Dataset:
    """A (beta, kappa) map as ``bifurcation_map`` writes it, for USA on S^1: kappa_c =
    beta / I_1(beta) (1 at beta = 0: 2), first order above beta* = 2.4469 with a fold
    5 % below kappa_c, the order parameter r = sqrt(1 - kappa_c/kappa) where stable."""
    beta = np.linspace(0.0, 4.0, 9)
    kappa = np.linspace(0.3, 3.0, 40)
    kc = np.array([2.0 if b == 0 else b / special.i1(b) for b in beta])
    first = beta > 2.4469
    fold = np.where(first, 0.95 * kc, np.nan)
    r = np.sqrt(np.clip(1.0 - kc[:, None] / kappa[None], 0.0, None))
    bistable = (first[:, None] & (kappa[None] > fold[:, None]) & (kappa[None] < kc[:, None]))
    r = np.where(bistable, 0.5, r)
    ds = xr.Dataset({
        "map_critical_kappa": ("beta", kc), "map_analytic_kappa": ("beta", kc),
        "map_fold_kappa": ("beta", fold), "map_maxwell_kappa": ("beta", np.where(
            first, 0.97 * kc, np.nan)),
        "map_order_parameter": (("beta", "kappa"), r),
        "map_bistable": (("beta", "kappa"), bistable.astype(np.int8)),
        "fold_curve_beta": ("fold_point", CURVE_BETA),
        "fold_curve_kappa": ("fold_point", 0.95 * CURVE_BETA / special.i1(CURVE_BETA)),
        "fold_curve_order_parameter": ("fold_point", np.sqrt(CURVE_BETA - 2.4469))},
        coords={"beta": beta, "kappa": kappa})
    ds.attrs.update(kind="bifurcation", mode="map", parameter="kappa", geometry="circle",
                    model="USA", tricritical_beta=2.4469, tricritical_beta_landau=2.4469183)
    return ds


CURVE_BETA = np.linspace(4.0, 2.45, 12)  # the synthetic continued fold curve


def test_map_figure_and_plot(tmp_path):
    """A map dataset draws the order parameter, kappa_c found and analytic, the fold
    curve (only where first order), the continued fold curve and the tricritical point,
    the Maxwell points and the bistable hatching; the command line writes it from
    netCDF."""
    from meanfield.plotting.bifurcation.diagrams import map_figure

    ds = map_dataset()
    fig = map_figure(ds)
    ax = fig.axes[0]
    gids = {a.get_gid() for a in [*ax.lines, *ax.collections]}
    assert {"order_parameter", "kappa_c", "kappa_c_analytic", "fold", "maxwell",
            "bistable"} <= gids
    fold = next(line for line in ax.lines if line.get_gid() == "fold")
    assert np.isfinite(fold.get_xdata()).sum() == 4  # beta = 2.5, 3, 3.5, 4: first order
    # the continued fold curve (a line) and the tricritical point at kappa = 1/a_1(beta*)
    curve = next(line for line in ax.lines if line.get_gid() == "fold_curve")
    np.testing.assert_array_equal(curve.get_ydata(), CURVE_BETA)
    np.testing.assert_array_equal(curve.get_xdata(), ds.fold_curve_kappa.values)
    (star,) = [line for line in ax.lines if line.get_gid() == "tricritical"]
    assert list(star.get_ydata()) == [2.4469]
    assert star.get_xdata()[0] == pytest.approx(2.4469 / special.i1(2.4469), rel=1e-12)
    assert "2.4469" in star.get_label()
    # without them (a map written before the fold curve, or NaN: no estimate), neither
    bare = ds.drop_vars(["fold_curve_beta", "fold_curve_kappa",
                         "fold_curve_order_parameter"])
    bare.attrs["tricritical_beta"] = math.nan
    gids = {line.get_gid() for line in map_figure(bare).axes[0].lines}
    assert "fold" in gids and not {"fold_curve", "tricritical"} & gids
    path = tmp_path / "map.nc"
    ds.to_netcdf(path)
    assert main(["plot", str(path), "--out", str(tmp_path / "figs")]) == 0
    assert list((tmp_path / "figs").glob("*.png"))
    with pytest.raises(ConfigError, match="map_fold_kappa"):
        map_figure(ds.drop_vars("map_fold_kappa"))


# --- what was computed, drawn exactly (issue 21, figures) ----------------------------
KAPPA_C = 2.0


def sparse_kuramoto() -> xr.Dataset:
    """The beta = 0 pitchfork on S^1 with the uniform branch at 6 points that miss
    kappa_c = 2 (as a continuation with a coarse uniform grid gives) and the exact
    clustered branch, F = r^2/2 - log(2 pi I_0(kappa r))/kappa."""
    area = 2 * math.pi
    k0 = np.array([1.0, 1.6, 2.2, 2.8, 3.4, 4.0])
    k1 = np.array([2.0, 2.05, 2.1, 2.3, 3.2, 4.0])
    r1 = np.array([kuramoto_r(k) for k in k1])
    f1 = r1**2 / 2 - (np.log(area * special.i0e(k1 * r1)) + k1 * r1) / k1
    dims = ("branch", "point")
    return xr.Dataset(
        {"kappa": (dims, np.stack([k0, k1])), "beta": (dims, np.zeros((2, 6))),
         "order_parameter": (dims, np.stack([np.zeros(6), r1])),
         "free_energy": (dims, np.stack([-math.log(area) / k0, f1])),
         "stable": (dims, np.stack([np.where(k0 < KAPPA_C, 1, 0),
                                    np.ones(6)]).astype(np.int8)),
         "branch_mode": (("branch",), np.array([0, 1])),
         "special_type": (("special",), np.array(["pitchfork"])),
         "special_kappa": (("special",), np.array([KAPPA_C])),
         "special_beta": (("special",), np.zeros(1)),
         "special_branch": (("special",), np.array([0])),
         "special_order_parameter": (("special",), np.zeros(1))},
        attrs={"kind": "bifurcation", "parameter": "kappa", "critical_kappa": [KAPPA_C],
               "geometry": "circle", "model": "SA", "beta": 0.0})


@pytest.mark.parametrize("panel, prefix", [(bifurcation_diagram, "branch:0:"),
                                           (free_energy_diagram, "free_energy:0:")])
def test_uniform_branch_is_exactly_zero(panel, prefix):
    ax = new_axes()
    panel(sparse_kuramoto(), ax)
    runs = lines_by(ax, prefix)
    assert len(runs) == 2
    for line in runs:
        assert np.all(line.get_ydata() == 0.0)


def test_split_exactly_at_the_computed_pitchfork():
    ax = new_axes()
    bifurcation_diagram(sparse_kuramoto(), ax)
    stable = next(line for line in lines_by(ax, "branch:0:stable"))
    unstable = next(line for line in lines_by(ax, "branch:0:unstable"))
    # not at the grid points 1.6 / 2.2 beside it
    assert stable.get_xdata()[-1] == KAPPA_C and unstable.get_xdata()[0] == KAPPA_C
    assert stable.get_xdata()[0] == 1.0 and unstable.get_xdata()[-1] == 4.0


def test_clustered_branch_never_above_the_uniform_free_energy():
    """The stable clustered branch minimises F: F - F_uniform <= 0 exactly (it is
    r^2/2 - log I_0(kappa r)/kappa <= 0 on the branch). Interpolating the uniform
    branch's 6 points linearly gave +1.7e-2 at kappa = 2.05 and +1.1e-2 at 2.1."""
    ax = new_axes()
    free_energy_diagram(sparse_kuramoto(), ax)
    line = next(line for line in lines_by(ax, "free_energy:1:"))
    x, y = line.get_data()
    r = np.array([kuramoto_r(k) for k in x])
    exact = r**2 / 2 - (np.log(special.i0e(x * r)) + x * r) / x
    np.testing.assert_allclose(y, exact, atol=1e-13)
    assert np.all(y <= 1e-13)


def test_subcritical_split_exactly_at_the_fold():
    ax = new_axes()
    bifurcation_diagram(bifurcation_dataset(), ax)
    lower = next(line for line in lines_by(ax, "branch:2:unstable"))
    upper = next(line for line in lines_by(ax, "branch:2:stable"))
    # the fold (kappa = 2.875, r = 1/2) is the last unstable and first stable point
    assert (lower.get_xdata()[-1], lower.get_ydata()[-1]) == (FOLD_KAPPA, 0.5)
    assert (upper.get_xdata()[0], upper.get_ydata()[0]) == (FOLD_KAPPA, 0.5)


def test_mode_two_on_the_circle_drawn_by_its_amplitude():
    """A k = 2 branch on S^1 has r = 0 at every point; the diagram draws |rho_2| (here
    the closed form of a von Mises-like family a = sqrt(kappa - 3)), labelled so."""
    ds = sparse_kuramoto()
    kappa = ds.kappa.values.copy()
    kappa[1] = np.linspace(3.0, 4.0, 6)
    amplitude = np.stack([np.zeros(6), np.sqrt(kappa[1] - 3.0)])
    ds = ds.assign(kappa=(("branch", "point"), kappa),
                   order_parameter=(("branch", "point"), np.zeros((2, 6))),
                   amplitude=(("branch", "point"), amplitude),
                   branch_mode=(("branch",), np.array([0, 2])))
    ds.attrs["critical_kappa"] = [KAPPA_C, 3.0]
    ax = new_axes()
    bifurcation_diagram(ds, ax)
    line = next(line for line in lines_by(ax, "branch:1:"))
    np.testing.assert_array_equal(line.get_ydata(), amplitude[1])
    assert "amplitude" in ax.get_ylabel()
    # without mode >= 2 the axis stays the order parameter
    ax = new_axes()
    bifurcation_diagram(sparse_kuramoto(), ax)
    assert "order parameter" in ax.get_ylabel()


@pytest.mark.parametrize("beta, normalized, name", [(0.0, True, "noisy Kuramoto model"),
                                                     (0.0, False, "noisy Kuramoto model"),
                                                     (1.0, True, "SA")])
def test_beta_zero_is_titled_kuramoto_not_sa(beta, normalized, name):
    """At beta = 0 the interaction is constant and SA and USA are one model, noisy
    Kuramoto: the study's title and the figure's say so, not "SA" (issue 21 item 4)."""
    import meanfield

    ds = meanfield.bifurcation({"model": {"beta": beta, "normalized": normalized},
                                "discretization": {"resolution": 32},
                                "bifurcation": {"start": 1.0, "stop": 2.5, "points": 4}})
    title = bifurcation_figure(ds)._suptitle.get_text()
    assert name in ds.attrs["title"] and name in title, title
    if beta == 0:
        assert "SA" not in title, title


def test_the_titles_write_greek_letters_not_their_names():
    """Looked at: the summary's title read "... in kappa (β = 0)"; the parameter is now
    written as the axis writes it."""
    from meanfield import bifurcation

    ds = bifurcation({"model": {"beta": 0.0, "kappa": 2.0},
                      "discretization": {"resolution": 32},
                      "bifurcation": {"parameter": "kappa", "start": 1.5, "stop": 2.5,
                                      "modes": 1, "ds_max": 0.5, "stride": 1000}})
    title = bifurcation_figure(ds)._suptitle.get_text()
    assert " in κ" in title and "kappa" not in title, title
