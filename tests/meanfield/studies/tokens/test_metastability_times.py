"""The metastability study's metastable times, reduced merging model, predicted places and
KDE modes (issue 28, items 2 and 3; acceptance 2 and 3 at a reduced size): the reduced
model against the exact two-cluster ODE, and against the tokens' merges at beta >= 16
(within 10 %); the slope of log T_2 in beta from caps against the hardmax pairing time;
the predicted places beating a random turn; the KDE modes of the starts; bad keys."""
from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield.errors import ConfigError
from meanfield.metrics import kde_modes
from meanfield.model.ensemble import uniform_ensemble
from meanfield.studies.tokens import metastability as ms
from meanfield.studies.tokens import metastability_merging as mm
from meanfield.studies.tokens import metastable_times

# [GKPR24]'s start: three caps of radius 0.05 at 0, 0.5 and 1.3 rad, 16 tokens; at beta =
# 32 .. 64 the first plateau holds the three caps and the closest pair (0.5 apart) merges
# first, after ~e^{beta(1 - cos 0.5)}; saves 30 per decade to 400 (1.5 s)
CAPS = {"particles": {"n": 16, "seed": 0},
        "metastability": {"beta": [32.0, 48.0, 64.0], "systems": 2, "chunk": 2,
                          "start_caps": [0.0, 0.5, 1.3], "kde_modes": False,
                          "bootstrap": 200,
                          "times": {"start": 0.5, "stop": 400.0, "num": 88,
                                    "scale": "log"}}}
# uniform starts: 32 tokens, beta = 16 and 24, saves 35 per decade to 1000 (3 s)
UNIFORM = {"particles": {"n": 32, "seed": 1},
           "metastability": {"beta": [16.0, 24.0], "systems": 3, "chunk": 3,
                             "bootstrap": 100,
                             "times": {"start": 0.5, "stop": 1000.0, "num": 120,
                                       "scale": "log"}}}


def _with(base: dict, **sections) -> dict:
    return {s: {**base.get(s, {}), **sections.get(s, {})} for s in {*base, *sections}}


@pytest.fixture(scope="module")
def caps():
    return ms.metastability(CAPS)


@pytest.fixture(scope="module")
def uniform():
    return ms.metastability(UNIFORM)


def test_reduced_model_is_the_two_cluster_ode():
    """Two weighted points (2/3 and 1/3, 1.5 rad apart, beta = 10): the reduced model's
    merge is the exact two-point-cluster time ``pairing_times`` (quadrature of phi') to
    1e-9 (measured 1.7e-12); S steps from the cross term to sum m^2 = 5/9 at the merge."""
    beta, phi0 = 10.0, 1.5
    c = np.array([[1.0, 0.0], [math.cos(phi0), math.sin(phi0)]])
    times = np.geomspace(1.0, 2000.0, 200)
    counts, s, merges = mm.reduced_merging(c, np.array([2 / 3, 1 / 3]), beta, 0.0, times,
                                           1e-2)
    exact = ms.pairing_times(beta, phi0, 2 / 3, 1 / 3, 1e-2)[1]
    assert len(merges) == 1 and merges[0] == pytest.approx(exact, rel=1e-9)
    assert np.all(counts[times < merges[0]] == 2) and np.all(counts[times > merges[0]] == 1)
    assert s[-1] == pytest.approx(1.0)
    cross = 4 / 9 * math.exp(beta * (math.cos(phi0) - 1))
    assert s[0] == pytest.approx(5 / 9 + cross, rel=1e-6)


def test_caps_log_t2_grows_like_the_pairing_time(caps):
    """Acceptance 2 (reduced): the first plateau holds the 3 caps at every beta; log T_2
    against beta has a positive slope with a finite bootstrap interval, within 20 % of
    the slope of the hardmax-pairing time of two caps 0.5 apart (measured 0.070 against
    0.079: the pairing time is that of two isolated caps from their nominal centres); T_1 does not grow with beta (SA contracts a cap at rate 1 whatever beta:
    |slope| * range below 10 % of T_1; measured slope 0 +- 0.01)."""
    assert np.all(caps.first_plateau_clusters.values == 3)
    a = caps.attrs
    lo, hi = a["log_t2_slope_interval"]
    assert 0 < lo <= a["log_t2_slope"] <= hi < np.inf and np.isfinite(a["t1_slope_stderr"])
    b = caps.beta.values
    pair = [ms.pairing_times(x, 0.5, 1 / 3, 1 / 3, 1e-2)[1] for x in b]
    assert a["log_t2_slope"] == pytest.approx(np.polyfit(b, np.log(pair), 1)[0], rel=0.2)
    t1 = caps.first_plateau_time.values
    assert abs(a["t1_slope"]) * np.ptp(b) < 0.1 * np.nanmean(t1)
    assert np.all(np.isfinite(a["t1_slope_interval"]))


def test_caps_tight_t1_grows_like_beta(caps):
    """Acceptance 2, T_1 ~ beta [GKPR24]: the time at which the caps are tight on the
    scale of their mutual attention (spread <= e^{-beta(1 - cos phi)}) grows linearly in
    beta, with the slope of beta(1 - cos phi) at it, because SA contracts a cluster at
    rate 1 (metastable_times): within 10 % (measured 0.133 [0.129, 0.138] against 0.138;
    1 - cos 0.5 = 0.122 for the nominal centres, which drift together while the caps
    contract); the interval excludes 0. Per system, T_1 against beta(1 - cos phi) has
    slope 1 (the inverse contraction rate) within 10 %."""
    a = caps.attrs
    lo, hi = a["t1_tight_slope_interval"]
    assert 0 < lo <= a["t1_tight_slope"] <= hi
    assert a["t1_tight_slope"] == pytest.approx(a["t1_tight_predicted_slope"], rel=0.1)
    assert a["t1_tight_predicted_slope"] == pytest.approx(1 - math.cos(0.5), rel=0.2)
    t1, exponent = caps.tight_time.values.ravel(), caps.tight_exponent.values.ravel()
    assert np.all(np.isfinite(t1)) and np.all(t1 > caps.first_plateau_time.values.min() / 4)
    assert np.polyfit(exponent, t1, 1)[0] == pytest.approx(1.0, rel=0.1)
    assert np.all(np.diff(caps.tight_time.values.mean(axis=1)) > 0)


def test_reduced_model_merges_as_the_tokens(caps, uniform):
    """Acceptance 2: at beta >= 16 every merge of the reduced model (started from the
    first plateau's clusters) falls within 10 % of the tokens' bracket of saves, in the
    duration since T_1 (measured: inside every bracket); its first merge lies in the
    bracket of T_2; its staircase matches the tokens' count at the saves."""
    compared = 0
    for ds in (caps, uniform):
        err = ds.reduced_merge_error.values
        seen = np.isfinite(err)
        compared += int(np.nansum(ds.reduced_merges_compared.values))
        assert np.all(err[seen] <= 0.1), err
        # the tokens' merges located inside their saves (32 sub-saves): the reduced
        # model's durations within 10 % of every duration left (measured <= 0.5 %)
        rel = ds.reduced_merge_relative.values
        assert np.array_equal(np.isfinite(rel), seen) and np.all(rel[seen] <= 0.1), rel
        t = ds.reduced_first_merge.values
        ok = np.isfinite(ds.first_plateau_end.values)
        assert np.all(ds.first_plateau_end_low.values[ok] / 1.1 <= t[ok])
        assert np.all(t[ok] <= 1.1 * ds.first_plateau_end.values[ok])
        red, tok = ds.reduced_clusters.values, ds.clusters.values
        agree = np.isfinite(red)
        assert np.mean(red[agree] == tok[agree]) > 0.97
    assert compared >= 10  # measured 13 (6 from the caps, 7 from uniform starts)


def test_places_and_kde_modes_of_uniform_starts(uniform):
    """S^1: the phases of mode k* place the first plateau's clusters closer than a
    random turn of the same pattern (mean over systems: ratio < 0.9; measured 0.67);
    the recorded KDE modes are those of the starts (recomputed here)."""
    err, null = uniform.plateau_position_error.values, uniform.plateau_position_null.values
    assert np.nanmean(err) < 0.9 * np.nanmean(null)
    assert uniform.attrs["position_error_ratio"] < 0.9
    x0 = uniform_ensemble(3, 32, 2, seed=1)
    for i, beta in enumerate(uniform.beta.values):
        assert [len(kde_modes(x, beta)) for x in x0] == list(uniform.kde_modes.values[i])
    assert np.isfinite(uniform.attrs["kde_mode_exponent"])
    assert uniform.attrs["sqrt_log_exponent"] == pytest.approx(
        np.polyfit(np.log([16, 24]), np.log(np.sqrt([16, 24]) * np.log([16, 24])), 1)[0])


def test_cap_start_places_tokens_in_the_caps():
    for d in (2, 3):
        x = mm.cap_start(uniform_ensemble(1, 30, d, seed=4)[0], [0.0, 2.0, 4.0], 0.1)
        centres = np.array([[math.cos(a), math.sin(a)] + [0.0] * (d - 2)
                            for a in (0.0, 2.0, 4.0)])
        angle = np.arccos(np.clip(np.einsum("id,id->i", x, centres[np.arange(30) % 3]),
                                  -1, 1))
        assert np.allclose(np.linalg.norm(x, axis=1), 1) and np.all(angle <= 0.1 + 1e-12)
        assert np.ptp(angle) > 0.05  # spread over the cap, not on its centre


@pytest.mark.parametrize("change,key", [
    ({"reduced_model": "yes"}, "metastability.reduced_model"),
    ({"kde_modes": 1}, "metastability.kde_modes"),
    ({"bootstrap": 5}, "metastability.bootstrap"),
    ({"confidence": 1.0}, "metastability.confidence"),
    ({"start_caps": 0.5}, "metastability.start_caps"),
    ({"start_caps": [0.0, "a"]}, "metastability.start_caps[1]"),
    ({"start_caps": [0.0, 0.05]}, "metastability.start_caps"),
    ({"cap_radius": 0.0}, "metastability.cap_radius"),
])
def test_bad_keys_refused_before_any_work(change, key, monkeypatch):
    monkeypatch.setattr(ms, "run_member", lambda *a: pytest.fail("work started"))
    with pytest.raises(ConfigError) as err:
        ms.metastability(_with(CAPS, metastability=change))
    assert err.value.key == key


@pytest.mark.slow
def test_acceptance_2_and_3_full_fits():
    """S^1, SA, beta = 4, 8, 16, 32, 64, 8 systems, saves 38 per decade to 3000 (about
    2 minutes on 2 busy cores).

    Uniform starts (n = 64, seed 1): T_1 and log T_2 slopes with finite 95 % intervals
    (measured 0.017 [-0.028, 0.065] and -0.024 [-0.039, -0.009]: from uniform starts the
    first plateau's gaps shrink like 1/sqrt(beta), so beta(1 - cos gap) stays O(1) and
    T_2 does not grow with beta); the reduced model's merges within 10 % of the tokens'
    brackets at every beta (measured: inside all 66); the KDE modes' exponent in beta
    (measured 0.42 [0.37, 0.48]) finite, below sqrt(beta) log beta's 0.89 on this range,
    and their mean within a factor 0.7 .. 1.4 of the first plateau's (measured 0.96 ..
    1.22).

    Caps at 0, 0.5, 1.3 rad (n = 32): on beta >= 32, where the plateau holds the three
    caps, log T_2 has slope 0.081 [0.075, 0.086] against 0.079 for the hardmax pairing
    time (within 10 %), and T_1 none (-0.004 [-0.013, 0.005])."""
    times = {"start": 0.5, "stop": 3000.0, "num": 114, "scale": "log"}
    betas = [4.0, 8.0, 16.0, 32.0, 64.0]
    ds = ms.metastability({"particles": {"n": 64, "seed": 1}, "metastability": {
        "beta": betas, "systems": 8, "chunk": 8, "times": times}})
    a = ds.attrs
    for name in ("t1_slope", "log_t2_slope", "kde_mode_exponent"):
        lo, hi = a[f"{name}_interval"]
        assert np.isfinite([lo, hi, a[f"{name}_stderr"]]).all() and lo <= a[name] <= hi
    err = ds.reduced_merge_error.values
    assert np.all(err[np.isfinite(err)] <= 0.1)
    assert np.nansum(ds.reduced_merges_compared.values) >= 40
    rel = ds.reduced_merge_relative.values[ds.beta.values >= 16]
    assert np.all(rel[np.isfinite(rel)] <= 0.1)
    # the tight T_1: from uniform starts beta(1 - cos phi) does not grow, nor does T_1
    lo, hi = a["t1_tight_slope_interval"]
    assert lo <= a["t1_tight_predicted_slope"] <= hi
    assert 0.3 <= a["kde_mode_exponent"] < a["sqrt_log_exponent"]
    ratio = ds.kde_modes_mean.values / ds.first_plateau_mean.values
    assert np.all((0.7 <= ratio) & (ratio <= 1.4)), ratio
    caps = ms.metastability({"particles": {"n": 32, "seed": 1}, "metastability": {
        "beta": betas, "systems": 8, "chunk": 8, "times": times,
        "start_caps": [0.0, 0.5, 1.3]}})
    b = caps.beta.values
    sep = b >= 32
    assert np.all(caps.first_plateau_clusters.values[sep] == 3)
    fit = mm.fit_slope(b[sep], np.log(caps.first_plateau_end.values[sep]), 1000, 0.95, 1)
    pair = [ms.pairing_times(x, 0.5, 1 / 3, 1 / 3, 1e-2)[1] for x in b[sep]]
    assert fit["slope"] == pytest.approx(np.polyfit(b[sep], np.log(pair), 1)[0], rel=0.1)
    assert fit["interval"][0] > 0
    t1 = mm.fit_slope(b[sep], caps.first_plateau_time.values[sep], 1000, 0.95, 1)
    assert t1["interval"][0] <= 0 <= t1["interval"][1] or abs(t1["slope"]) < 0.02
    tight = mm.fit_slope(b[sep], caps.tight_time.values[sep], 1000, 0.95, 1)
    predicted = metastable_times.predicted_slope(b[sep], caps.tight_exponent.values[sep],
                                                 True)
    assert tight["interval"][0] > 0
    assert tight["slope"] == pytest.approx(predicted, rel=0.1)
    rel = caps.reduced_merge_relative.values[b >= 16]
    assert np.all(rel[np.isfinite(rel)] <= 0.1)
    assert np.all(caps.reduced_merge_error.values[np.isfinite(
        caps.reduced_merge_error.values)] <= 0.1)
