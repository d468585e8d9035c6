"""The bifurcation study with ``[weights] value = c`` (V = c I, issue 20).

The velocity is multiplied by c, so the stationary states are ``rho ∝ exp(c kappa Psi)``:
at beta = 0 the order parameter solves ``r = I_1(c kappa r)/I_0(c kappa r)`` (S^1) and
``r = coth(c kappa r) - 1/(c kappa r)`` (S^2), and the pitchfork moves to ``kappa_c = 2/c``
(S^1) and ``3/c`` (S^2); the references here are brentq roots of those equations. For
``c < 0`` the uniform state is stable for every kappa: the study finds no pitchfork and
says why.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, special

from meanfield.studies.bifurcation import study as bf


def kuramoto_root(s: float) -> float:
    """``r = I_1(s r)/I_0(s r)``, ``s = c kappa > 2``."""
    return optimize.brentq(lambda r: special.i1e(s * r) / special.i0e(s * r) - r,
                           1e-4, 1.0, xtol=1e-15)


def langevin_root(s: float) -> float:
    """``r = coth(s r) - 1/(s r)``, ``s = c kappa > 3``."""
    return optimize.brentq(lambda r: 1 / np.tanh(s * r) - 1 / (s * r) - r,
                           1e-4, 1.0, xtol=1e-15)


def _branch(ds, i: int, name: str) -> np.ndarray:
    return ds[name].values[i, :int(ds.branch_points.values[i])]


@pytest.mark.parametrize("geometry,value,start,stop,resolution", [
    ("circle", 2.0, 0.75, 4.25, 64),     # kappa_c = 2/c = 1
    ("sphere", 0.5, 5.0, 9.0, 12),       # kappa_c = 3/c = 6 (c kappa <= 4.5: L = 12)
])
def test_pitchfork_moves_to_kappa_c_over_c(geometry, value, start, stop, resolution):
    ds = bf.bifurcation({"model": {"beta": 0.0, "normalized": True},
                         "domain": {"geometry": geometry},
                         "discretization": {"resolution": resolution},
                         "weights": {"value": value},
                         "bifurcation": {"start": start, "stop": stop, "stride": 1}})
    assert ds.attrs["status"] == 0, ds.attrs["message"]
    assert ds.attrs["value"] == value
    base = 2.0 if geometry == "circle" else 3.0
    kc = base / value
    assert ds.attrs["critical_kappa"][0] == pytest.approx(kc, rel=1e-14)
    pitch = np.flatnonzero(ds.special_type.values == "pitchfork")
    assert pitch.size == 1
    assert abs(ds.special_kappa.values[pitch[0]] - kc) <= 1e-6 * kc
    assert ds.special_multiplicity.values[pitch[0]] == (2 if geometry == "circle" else 3)
    kappa, r = _branch(ds, 1, "kappa"), _branch(ds, 1, "order_parameter")
    root = kuramoto_root if geometry == "circle" else langevin_root
    far = kappa > 1.025 * kc  # (near kappa_c the reference root is ill-conditioned)
    assert far.sum() >= 3
    errors = [abs(ri - root(value * k)) for k, ri in zip(kappa[far], r[far])]
    assert max(errors) <= 1e-8, max(errors)
    uk, us = _branch(ds, 0, "kappa"), _branch(ds, 0, "stable")
    assert np.all(us[uk < kc] == 1) and np.all(us[uk > kc] == 0)
    # sigma_1 = k^2 (c a_1 - 1/kappa), a_1 = 1/2 (S^1) or 1/3 (S^2) with l(l+1) = 2
    lead = _branch(ds, 0, "leading_eigenvalue")
    weight = 1.0 if geometry == "circle" else 2.0
    np.testing.assert_allclose(lead, weight * (value / base - 1 / uk), atol=1e-12)
    assert np.all(_branch(ds, 1, "stable") == 1)
    assert ds.transition.values[1] == "supercritical"


@pytest.mark.parametrize("geometry", ["circle", "sphere"])
def test_repulsive_value_has_no_pitchfork_and_says_so(geometry):
    ds = bf.bifurcation({"model": {"beta": 1.0, "normalized": True},
                         "domain": {"geometry": geometry},
                         "discretization": {"resolution": 32 if geometry == "circle" else 12},
                         "weights": {"value": -1.0},
                         "bifurcation": {"start": 0.5, "stop": 50.0, "modes": 2}})
    assert ds.attrs["status"] == 0, ds.attrs["message"]
    assert ds.attrs["value"] == -1.0
    assert np.all(np.isinf(ds.attrs["critical_kappa"]))
    assert "no pitchfork: value = -1" in ds.attrs["pitchfork_check"]
    assert "repulsive" in ds.attrs["pitchfork_check"]
    assert not np.any(ds.special_type.values == "pitchfork")
    assert np.all(_branch(ds, 0, "stable") == 1)
    assert np.all(_branch(ds, 0, "leading_eigenvalue") < 0)
    for i in range(1, ds.sizes["branch"]):
        assert ds.branch_status.values[i] == "skipped"
        assert "stable for every kappa" in ds.branch_message.values[i]


def test_repulsive_value_in_beta_has_no_critical_beta():
    ds = bf.bifurcation({"model": {"beta": 0.5, "kappa": 4.0, "normalized": True},
                         "discretization": {"resolution": 40},
                         "weights": {"value": -0.5},
                         "bifurcation": {"parameter": "beta", "start": 0.0, "stop": 3.0,
                                         "modes": 1}})
    assert ds.attrs["status"] == 0, ds.attrs["message"]
    assert np.all(np.isnan(ds.attrs["critical_beta"]))
    assert "no pitchfork" in ds.attrs["pitchfork_check"]


def test_map_with_value():
    """The (beta, kappa) map: SA at beta = 0.5, 1.5 with c = 2 finds kappa_c = 1/(c a_1),
    a_1 = I_1(beta)/(beta I_0(beta)) from scipy here; c = -1 finds none, and each beta's
    message says why."""
    common = {"model": {"beta": 0.0, "normalized": True},
              "discretization": {"resolution": 32},
              "bifurcation": {"mode": "map", "start": 0.5, "stop": 4.0, "map_start": 0.5,
                              "map_stop": 1.5, "map_num": 2}}
    ds = bf.bifurcation({**common, "weights": {"value": 2.0}})
    assert ds.attrs["status"] == 0 and ds.attrs["value"] == 2.0
    beta = ds.beta.values
    expected = beta * special.i0(beta) / (2.0 * special.i1(beta))
    np.testing.assert_allclose(ds.map_critical_kappa.values, expected, rtol=1e-6)
    ds = bf.bifurcation({**common, "weights": {"value": -1.0}})
    assert ds.attrs["status"] == 0 and ds.attrs["value"] == -1.0
    assert np.all(np.isnan(ds.map_critical_kappa.values))
    assert all("no pitchfork: value = -1" in m for m in ds.map_message.values)


def test_scan_with_value():
    """The brute-force scan (time integration to steady state) with c = 2: noisy Kuramoto
    states ``r = I_1(c kappa r)/I_0(c kappa r)``, uniform below kappa_c = 2/c = 1."""
    from meanfield.studies.bifurcation import scan as bs

    ds = bs.scan({"discretization": {"resolution": 64},
                  "model": {"beta": 0.0, "kappa": 2.0}, "weights": {"value": 2.0},
                  "bifurcation": {"parameter": "kappa", "start": 0.75, "stop": 2.0,
                                  "scan_num": 4}})
    assert ds.attrs["value"] == 2.0 and ds.attrs["kappa_c"] == 1.0
    for i, kappa in enumerate(ds.kappa.values):
        r = kuramoto_root(2.0 * kappa) if kappa > 1.0 else 0.0
        assert np.abs(ds.order_parameter.values[:, i] - r).max() <= 1e-8, (kappa, r)


def test_cli_says_why_there_is_no_pitchfork(tmp_path, capsys):
    from meanfield.cli import main

    path = tmp_path / "b.toml"
    path.write_text("[model]\nbeta = 1.0\n[discretization]\nresolution = 32\n"
                    "[weights]\nvalue = -1.0\n[bifurcation]\nstart = 0.5\nstop = 20.0\n"
                    "modes = 1\n")
    assert main(["bifurcation", str(path), "--out", str(tmp_path / "r.nc")]) == 0
    assert "no pitchfork: value = -1 <= 0" in capsys.readouterr().out
