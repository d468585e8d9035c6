"""The contraction study's grid source at its resolution limit (issue 29, acceptance 5):
the noiseless contraction on S^1 with the grid PDE, whose cluster outgrows any grid, ends
with status 1, a message that says so and a fit, never a failed member. The distances are
checked against the closed-form beta = 0 solution along the characteristics
(``contraction_reference.beta_zero_solution``, independent of the grid and the labels'
ODE system)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield.initial.circle import density_function
from meanfield.studies.transport import contraction as ct
from meanfield.studies.transport import contraction_reference as ref
from meanfield.studies.transport.contraction_rates import fit_rate

# the issue's case (SA, beta = 0, no noise, 512 points, the default perturbed start) cut
# to t = 12: the grid meets its limit at t ~ 8.7 (the density negative by 3e-5 of its max)
START = {"kind": "perturbed", "mode": 1, "amplitude": 0.1, "phase": 0.0}
NOISELESS = {"model": {"normalized": True},
             "discretization": {"resolution": 512},
             "initial": START,
             "time": {"t_final": 12.0, "save_every": 0.1},
             "contraction": {"beta": [0.0], "sources": ["pde"]}}


def _exact(times: np.ndarray) -> np.ndarray:
    return ref.beta_zero_solution(density_function(START), 0.0, times)["distance"]


def test_grid_source_goes_on_along_the_characteristics_at_its_limit():
    """Status 1 with the limit's time in ``stopped_at`` and the message; the grid's
    distances before it within 1e-5 of the exact ones (measured 2.4e-6 at the last save,
    8e-7 before), the labels' after within 1e-7 (measured 2e-10); the mean-field rate
    1/2 fitted (measured 0.49854 over t = 10.9..12, where the exact curve's own slope is
    the same to 1e-6: the decay has not quite reached its asymptote)."""
    ds = ct.contraction(NOISELESS)
    assert ds.attrs["status"] == 1
    assert "resolution limit" in ds.attrs["message"]
    assert "characteristics" in ds.attrs["message"]
    t = ds.time.values
    stopped = float(ds.stopped_at.item())
    assert 4.0 < stopped < 12.0
    d, exact = ds.distance.values[0, :, 0], _exact(t)
    grid = t <= stopped + 1e-9
    assert np.max(np.abs(d[grid] / exact[grid] - 1)) < 1e-5
    assert np.max(np.abs(d[~grid] / exact[~grid] - 1)) < 1e-7
    rate = ds.fitted_rate.item()
    assert ds.fit_regime.item() == "mean-field" and ds.predicted_rate.item() == 0.5
    assert rate == pytest.approx(0.5, rel=0.01)
    window = fit_rate(t, exact, ds.attrs["fit_above"], ds.attrs["fit_below"])
    assert window[3] == ds.fit_start.item() and rate == pytest.approx(window[0], rel=1e-5)


def test_a_source_the_labels_cannot_carry_stops_with_what_it_measured(monkeypatch):
    """Where the labels cannot carry the source (S^2, noise, a second start, too many
    labels; here made so, for speed: a second start costs W_2 modulo rotation per save)
    the grid source ends at its limit: distances NaN after it, those before it within the
    grid's accuracy of the exact ones, status 1 and a message naming the resolution that
    would pass, no failed member."""
    monkeypatch.setattr(ct.grid_source, "labels_carry", lambda cfg: False)
    ds = ct.contraction(NOISELESS)
    assert ds.attrs["status"] == 1 and "the source stops there" in ds.attrs["message"]
    assert "discretization.resolution = " in ds.attrs["message"]
    t, d = ds.time.values, ds.distance.values[0, :, 0]
    stopped = float(ds.stopped_at.item())
    kept = t <= stopped + 1e-9
    assert np.all(np.isfinite(d[kept])) and np.all(np.isnan(d[~kept]))
    # the limit point is the grid's last state's mean direction (the symmetric start's
    # centre to round-off): the exact distances
    assert np.max(np.abs(d[kept] / _exact(t)[kept] - 1)) < 1e-5


def test_the_issue_case_to_t_20():
    """The issue's case in full (t <= 20, 200 saves): status 1 and the mean-field rate
    (measured 0.49986 [0.49983, 0.49989] over t = 10.9..20; 0.5 s)."""
    cfg = {**NOISELESS, "time": {"t_final": 20.0, "save_every": 0.1}}
    ds = ct.contraction(cfg)
    assert ds.attrs["status"] == 1 and math.isfinite(ds.stopped_at.item())
    assert ds.fitted_rate.item() == pytest.approx(0.5, rel=1e-3)


# a concentrated cluster collapsing (SA, beta = 1): the tests of test_contraction.py
CLUSTER = {"model": {"normalized": True},
           "initial": {"kind": "von_mises", "concentration": 30.0},
           "time": {"t_final": 3.0, "save_every": 0.05},
           "contraction": {"beta": [1.0], "sources": ["pde"], "fit_above": 0.03}}


def test_auto_resolution_follows_the_cluster():
    """``resolution = "auto"`` (accuracy 1e-6): the grid follows the core (the source
    stops when the core is narrower than fit_above); its distances within 1e-6 of those of
    a fixed grid of 1024 points (measured 1.7e-7), the rate 1 within 2 % (measured
    0.991 [0.990, 0.992]; 1024 points: 0.993)."""
    auto = ct.contraction({**CLUSTER, "discretization": {"resolution": "auto",
                                                         "accuracy": 1e-6}})
    fixed = ct.contraction({**CLUSTER, "discretization": {"resolution": 1024}})
    assert auto.attrs["status"] == 0
    a, f = auto.distance.values[0, :, 0], fixed.distance.values[0, :, 0]
    both = np.isfinite(a) & np.isfinite(f)
    assert both.sum() >= 20 and np.max(np.abs(a[both] / f[both] - 1)) < 1e-6
    assert auto.fitted_rate.item() == pytest.approx(1.0, rel=0.02)


def test_auto_is_refused_where_one_grid_is_needed():
    """One line naming the key and why (config.auto_resolution.REFUSED)."""
    from meanfield import config as cfgmod
    from meanfield.errors import ConfigError

    for task, section in (("bifurcation", {}), ("convergence", {"n": [100]})):
        cfg = {"discretization": {"resolution": "auto"}, task: section}
        with pytest.raises(ConfigError, match="auto") as err:
            cfgmod.validate(cfg, task)
        assert err.value.key == "discretization.resolution"


@pytest.mark.slow  # (6 s: the default run stays under its 15 minutes)
def test_compare_takes_auto():
    """compare's PDE with "auto" (accuracy 1e-6): its bin masses within 1e-5 of a fixed
    grid of 256 points (the same tokens: L1 distances equal to that)."""
    from meanfield.studies.transport.compare import compare

    cfg = {"model": {"normalized": True, "beta": 1.0},
           "initial": {"kind": "von_mises", "concentration": 5.0},
           "time": {"t_final": 1.0, "save_every": 0.5, "dt": 0.01},
           "particles": {"n": 200, "ensemble": 2, "seed": 1, "bins": 16}}
    auto = compare({**cfg, "discretization": {"resolution": "auto", "accuracy": 1e-6}})
    fixed = compare({**cfg, "discretization": {"resolution": 256}})
    assert auto.attrs["status"] == 0
    gap = np.abs(auto.pde_bin_density.values - fixed.pde_bin_density.values)
    assert gap.max() < 1e-5 * fixed.pde_bin_density.values.max()
    np.testing.assert_allclose(auto.l1_distance, fixed.l1_distance, atol=1e-5)
