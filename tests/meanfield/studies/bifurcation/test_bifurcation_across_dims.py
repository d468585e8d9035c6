"""The bifurcation study across dimensions (issue 26 item 4): ``domain.dim`` a list or a
range on the zonal geometry gives the dataset a dimension ``dim``. Checked against
closed forms computed here (noisy Kuramoto in dimension d: the pitchfork at kappa = d and
``r = I_{d/2}(kappa r)/I_{d/2-1}(kappa r)``; the USA tricritical beta*(d), the root of
``I_{d/2+1}(beta)/I_{d/2}(beta) = 1/d`` by brentq on scipy's ``ive``), against the
uninterrupted run (resume), and through netCDF."""
from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr
from scipy import optimize, special

from meanfield.errors import ConfigError
from meanfield.runs.schedule import checkpoint_path
from meanfield.studies.bifurcation import study as bf
from solvers.grids.zonal import ZonalGrid

KURAMOTO = {"model": {"beta": 0.0}, "domain": {"geometry": "zonal", "dim": [4, 8, 16]},
            "discretization": {"resolution": 32}, "bifurcation": {"stride": 5}}


def zonal_root(kappa: float, d: int) -> float:
    def gap(r: float) -> float:
        return special.ive(d / 2, kappa * r) / special.ive(d / 2 - 1, kappa * r) - r

    return optimize.brentq(gap, 1e-8, 1.0, xtol=1e-15, rtol=1e-15)


def usa_tricritical(d: int) -> float:
    return optimize.brentq(lambda b: special.ive(d / 2 + 1, b) / special.ive(d / 2, b)
                           - 1 / d, 0.5, 10.0, xtol=1e-14)


@pytest.fixture(scope="module")
def kuramoto():
    return bf.bifurcation(KURAMOTO)


def test_branches_per_dimension(kuramoto, tmp_path):
    ds = kuramoto
    assert ds.attrs["status"] == 0, ds.attrs["message"]
    assert list(ds["dim"].values) == [4, 8, 16]
    assert ds.kappa.dims == ("dim", "branch", "point")
    assert ds.state_density.dims == ("dim", "branch", "saved", "polar")
    for i, d in enumerate([4, 8, 16]):
        one = ds.isel(dim=i)
        pitch = one.special_kappa.values[one.special_type.values == "pitchfork"]
        assert pitch.size == 1 and abs(pitch[0] - d) <= 1e-8 * d
        n = int(one.branch_points.values[1])
        kappa, r = one.kappa.values[1, :n], one.order_parameter.values[1, :n]
        assert kappa.max() == pytest.approx(2 * d, rel=1e-12)  # ("auto": [d/2, 2d] per d)
        assert one.kappa.values[0, 0] == pytest.approx(d / 2, rel=1e-12)
        far = kappa > 1.01 * d
        assert max(abs(ri - zonal_root(k, d)) for k, ri in zip(kappa[far], r[far])) <= 1e-8
        # the padding past the branch's end: NaN, stable -1
        assert np.isnan(one.kappa.values[1, n:]).all()
        assert (one.stable.values[1, n:] == -1).all()
        # each d's Gauss nodes
        np.testing.assert_array_equal(one.polar_of_dim.values, ZonalGrid(32, d).theta)
        assert one.critical_kappa.values[0] == pytest.approx(d, rel=1e-15)
        assert one.landau_kappa_2.values == pytest.approx(d * d / (d + 2), rel=1e-14)
    assert list(ds.transition.values[:, 1]) == ["supercritical"] * 3
    assert list(ds.landau_transition.values) == ["supercritical"] * 3
    assert list(ds.dim_status.values) == [0, 0, 0]
    assert ds.attrs["geometry"] == "zonal" and "noisy Kuramoto" in ds.attrs["title"]
    # through netCDF
    ds.to_netcdf(tmp_path / "d.nc")
    with xr.open_dataset(tmp_path / "d.nc") as back:
        np.testing.assert_array_equal(back.order_parameter.values, ds.order_parameter.values)
        assert list(back.transition.values[:, 1]) == ["supercritical"] * 3


def test_a_range_of_dimensions_and_the_scan():
    ds = bf.bifurcation({"model": {"beta": 0.0},
                         "domain": {"geometry": "zonal", "dim": {"start": 4, "stop": 8,
                                                                 "num": 2}},
                         "discretization": {"resolution": 24},
                         "bifurcation": {"mode": "scan", "scan_num": 2,
                                         "scan_starts": ["clustered"]}})
    assert list(ds["dim"].values) == [4, 8]
    assert ds.order_parameter.dims == ("dim", "sweep", "value")
    np.testing.assert_allclose(ds.value_of_dim.values, [[2.0, 8.0], [4.0, 16.0]])
    np.testing.assert_allclose(ds.kappa_c.values, [4.0, 8.0], rtol=1e-14)
    for i, d in enumerate([4, 8]):
        r = ds.order_parameter.values[i, :, -1]  # at kappa = 2d: clustered
        np.testing.assert_allclose(r, zonal_root(2.0 * d, d), atol=1e-8)
        np.testing.assert_allclose(ds.order_parameter.values[i, :, 0], 0.0, atol=1e-12)


def test_usa_map_across_dimensions_finds_the_tricritical_beta_of_landau():
    """USA, beta = 1, 1.5, 2 at d = 4 and 8: kappa_c(beta, d) = 1/a_1 at every beta,
    first order exactly where beta > beta*(d) (1.5753, 1.2666), and the fold curve
    continued down to the tricritical point gives beta*(d) (Landau in dimension d)."""
    ds = bf.bifurcation({"model": {"normalized": False},
                         "domain": {"geometry": "zonal", "dim": [4, 8]},
                         "discretization": {"resolution": 24},
                         "bifurcation": {"mode": "map", "map_start": 1.0, "map_stop": 2.0,
                                         "map_num": 3, "points": 100}})
    assert ds.attrs["status"] == 0, ds.attrs["message"]
    assert ds.map_critical_kappa.dims == ("dim", "beta")
    np.testing.assert_allclose(ds.map_critical_kappa, ds.map_analytic_kappa, rtol=1e-6)
    for i, d in enumerate([4, 8]):
        star = usa_tricritical(d)
        assert ds.tricritical_beta_landau.values[i] == pytest.approx(star, rel=1e-10)
        expected = ["subcritical" if b > star else "supercritical" for b in ds.beta.values]
        assert list(ds.map_transition.values[i]) == expected
        assert abs(ds.tricritical_beta.values[i] - star) <= 1e-4
        a1 = special.iv(d / 2, ds.beta.values) * math.gamma(d / 2) \
            * (2 / ds.beta.values) ** (d / 2 - 1) / ds.beta.values
        np.testing.assert_allclose(ds.map_analytic_kappa.values[i], 1 / a1, rtol=1e-12)


def test_resume_skips_the_dimensions_done(kuramoto, tmp_path, monkeypatch):
    from meanfield.studies.bifurcation import branches as bb

    out = tmp_path / "d.nc"
    real, calls = bb.mode_branch, []

    def interrupt_at_eight(disc, cfg, plan, pitchfork, mode, sign):
        calls.append(cfg["domain"]["dim"])
        if cfg["domain"]["dim"] == 8:
            raise KeyboardInterrupt
        return real(disc, cfg, plan, pitchfork, mode, sign)

    monkeypatch.setattr(bf, "mode_branch", interrupt_at_eight)
    part = bf.bifurcation(KURAMOTO, out=out)
    assert part.attrs["status"] == -1 and "1 of 3 dimensions" in part.attrs["message"]
    assert checkpoint_path(out).exists()
    calls.clear()
    monkeypatch.setattr(bf, "mode_branch",
                        lambda *a: calls.append(a[1]["domain"]["dim"]) or real(*a))
    resumed = bf.bifurcation(KURAMOTO, out=out, resume=True)
    assert calls == [8, 16] and resumed.attrs["status"] == 0
    for name in ("kappa", "order_parameter", "stable", "special_kappa", "state_density",
                 "polar_of_dim", "critical_kappa"):
        np.testing.assert_array_equal(resumed[name].values, kuramoto[name].values)
    assert list(resumed.transition.values[:, 1]) == ["supercritical"] * 3


def test_a_dimension_that_cannot_run_is_refused_before_any_work():
    cfg = {"model": {"beta": 30.0}, "domain": {"geometry": "zonal", "dim": [4, 8]},
           "discretization": {"resolution": 16}}
    with pytest.raises(ConfigError, match=r"^at domain.dim = 4: discretization.resolution"
                       ) as info:
        bf.bifurcation(cfg)
    assert info.value.key == "discretization.resolution"


@pytest.mark.slow
def test_usa_map_in_higher_dimensions_finds_the_tricritical_beta_of_landau():
    """The same at d = 16, 32, 64 (band limit 64, ~40 s): first order exactly where beta >
    beta*(d) (1.1290, 1.0635, 1.0315), and the fold curves reach beta*(d) to 1e-5 (at
    d = 64 from a fold the curve can start from: those of the larger beta sit at the
    round-off floor of the residual, docs/bifurcation.md section 9)."""
    ds = bf.bifurcation({"model": {"normalized": False},
                         "domain": {"geometry": "zonal", "dim": [16, 32, 64]},
                         "discretization": {"resolution": 64},
                         "bifurcation": {"mode": "map", "map_start": 1.0, "map_stop": 2.0,
                                         "map_num": 5}})
    assert ds.attrs["status"] == 0, ds.attrs["message"]
    np.testing.assert_allclose(ds.map_critical_kappa, ds.map_analytic_kappa, rtol=1e-6)
    for i, d in enumerate([16, 32, 64]):
        star = usa_tricritical(d)
        expected = ["subcritical" if b > star else "supercritical" for b in ds.beta.values]
        assert list(ds.map_transition.values[i]) == expected
        assert abs(ds.tricritical_beta.values[i] - star) <= 1e-5, (
            d, ds.fold_curve_message.values[i])


def test_the_budget_counts_the_states_of_every_dimension():
    from meanfield import config
    from meanfield.runs import budget

    one = config.validate({"domain": {"geometry": "zonal", "dim": 8}}, "bifurcation")
    three = config.validate({"domain": {"geometry": "zonal", "dim": [4, 8, 16]}},
                            "bifurcation")
    states = budget.estimate(one, "bifurcation").parts["branch states"][0]
    assert budget.estimate(three, "bifurcation").parts["branch states"][0] == 3 * states
