"""Every registered discretization passes the same checks: mass to round-off, positivity
where the class promises it, the growth rate of the first unstable mode against the exact
linear theory (docs/conventions.md), a residual that matches a fresh build after
``set_parameters``, and a bit-identical resume after Ctrl-C.

A new entry needs a case in ``CASES`` (``test_every_entry_has_a_case`` says so); the check
functions take a case and a class, so that ``test_docs_example.py`` runs them on the
example of ``docs/adding_a_discretization.md``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import meanfield
from meanfield import config as cfgmod
from meanfield.discretizations.base import Discretization
from meanfield.discretizations.registry import registered
from meanfield.model.kernels import growth_rate, sphere_growth_rate
from meanfield.model.zonal_kernels import zonal_growth_rate
from solvers.steppers import integrate

# The dimension d of S^{d-1} of the zonal cases (the others have theirs).
ZONAL_DIM = 5
# The exact rate of the first mode (degree) about the uniform density, per geometry.
RATE = {"circle": growth_rate, "sphere": sphere_growth_rate,
        "zonal": lambda l, *args: zonal_growth_rate(l, ZONAL_DIM, *args)}
FIRST_MODE = {"circle": {"kind": "perturbed", "mode": 1, "amplitude": 1e-6},
              "sphere": {"kind": "perturbed", "degree": 1, "amplitude": 1e-6},
              "zonal": {"kind": "perturbed", "degree": 1, "amplitude": 1e-6}}
CLUSTERS = {
    "circle": {"kind": "mixture", "components": [
        {"kind": "von_mises", "center": 0.5, "concentration": 4.0},
        {"kind": "von_mises", "center": 3.0, "concentration": 6.0, "weight": 0.5}]},
    "sphere": {"kind": "mixture", "components": [
        {"kind": "von_mises", "center": [0.0, 0.0, 1.0], "concentration": 2.0},
        {"kind": "von_mises", "center": [0.0, 1.0, 0.0], "concentration": 3.0,
         "weight": 0.5}]},
    "zonal": {"kind": "mixture", "components": [
        {"kind": "von_mises", "concentration": 6.0},
        {"kind": "perturbed", "degree": 3, "amplitude": -0.8, "weight": 0.5}]},
}
# Per entry: the resolution of the checks and the tolerance on the growth rate (those
# of the entry's own convergence tests: spectral methods are exact on a single mode up
# to the time stepping, finite volumes second order in space).
CASES = {
    ("circle", "spectral"): {"resolution": 64, "rate_rtol": 1e-4},
    ("circle", "finite-volume"): {"resolution": 512, "rate_rtol": 1e-2},
    ("sphere", "spectral"): {"resolution": 24, "rate_rtol": 1e-4},
    ("sphere", "finite-volume"): {"resolution": 2562, "rate_rtol": 2e-2},
    ("zonal", "spectral"): {"resolution": 32, "rate_rtol": 1e-4},
    ("zonal", "finite-volume"): {"resolution": 256, "rate_rtol": 1e-2},
}


def config(geometry: str, method: str, resolution: int, initial: dict, *,
           beta: float = 1.0, kappa: float = 4.0, normalized: bool = True,
           t_final: float = 1.0, save_every: float = 0.1) -> dict:
    domain = {"geometry": geometry, **({"dim": ZONAL_DIM} if geometry == "zonal" else {})}
    return cfgmod.validate({
        "domain": domain,
        "model": {"beta": beta, "kappa": kappa, "normalized": normalized},
        "discretization": {"method": method, "resolution": resolution},
        "initial": initial,
        "time": {"t_final": t_final, "save_every": save_every, "tolerance": 1e-11}})


def run(disc: Discretization, cfg: dict) -> tuple[np.ndarray, list[np.ndarray]]:
    """The saved densities of a run of ``disc`` (straight through the driver)."""
    t = cfg["time"]
    times = np.arange(1, round(t["t_final"] / t["save_every"]) + 1) * t["save_every"]
    rho0 = disc.initial_density(cfg["initial"])
    frames = [rho0]
    integrate(disc.stepper(), disc.to_state(rho0), 0.0, times,
              disc.first_step(t["t_final"]), check=disc.check,
              on_save=lambda _t, u, _h: frames.append(disc.to_density(u)))
    return np.concatenate([[0.0], times]), frames


def check_mass_and_positivity(cls: type[Discretization], geometry: str, method: str,
                              case: dict) -> None:
    cfg = config(geometry, method, case["resolution"], CLUSTERS[geometry], beta=2.0,
                 kappa=10.0, t_final=0.5, save_every=0.05)
    disc = cls.from_config(cfg)
    assert type(disc) is cls
    _, frames = run(disc, cfg)
    mass = np.array([disc.model.diagnostics(f)["mass"] for f in frames])
    assert np.abs(mass - 1).max() <= 1e-12
    # the residual moves no mass either
    drift = disc.to_density(disc.residual(disc.to_state(frames[-1])))
    assert abs(disc.model.diagnostics(drift)["mass"]) <= 1e-12 * np.abs(drift).max()
    assert disc.max_step(disc.to_state(frames[-1])) > 0
    if cls.preserves_positivity:
        assert min(f.min() for f in frames) >= 0.0


def check_growth_rate(cls: type[Discretization], geometry: str, method: str,
                      case: dict) -> None:
    # (kappa_c -> d as beta -> 0: S^4 needs more than S^1 and S^2's kappa = 4)
    kappa = 10.0 if geometry == "zonal" else 4.0
    for normalized in (True, False):
        cfg = config(geometry, method, case["resolution"], FIRST_MODE[geometry],
                     normalized=normalized, kappa=kappa, t_final=1.0, save_every=0.1)
        disc = cls.from_config(cfg)
        times, frames = run(disc, cfg)
        r = [disc.model.diagnostics(f)["order_parameter"] for f in frames]
        rate = np.polyfit(times, np.log(r), 1)[0]
        exact = float(RATE[geometry](1, 1.0, kappa, normalized))
        assert exact > 0.1  # an unstable mode, well away from threshold
        assert rate == pytest.approx(exact, rel=case["rate_rtol"]), (normalized, rate)


def check_parameters_match_fresh_build(cls: type[Discretization], geometry: str,
                                       method: str, case: dict) -> None:
    cfg = config(geometry, method, case["resolution"], CLUSTERS[geometry])
    disc = cls.from_config(cfg)
    u = disc.to_state(disc.initial_density(cfg["initial"]))
    # Round-off: a new beta may compute the multipliers another way than the constructor
    # (the circle's Bessel recurrence, a few ulps from scipy's). Finite volumes difference
    # the potential (values ~1, differences ~1e-2 here) and then the fluxes (terms ~25
    # times the residual at 512 cells): those ulps reach the residual multiplied by ~1e3
    # (measured 4.4e-12 of its max at 512 cells; 0 when the multipliers are scipy's).
    rtol = 1e-11 if cls.linear is None else 1e-13
    for beta, kappa in [(2.5, 7.0), (0.0, 3.0), (1.5, float("inf"))]:
        disc.set_parameters(beta=beta, kappa=kappa)
        assert disc.parameters == (beta, kappa)
        fresh_cfg = config(geometry, method, case["resolution"], CLUSTERS[geometry],
                           beta=beta, kappa=kappa)
        fresh = cls.from_config(fresh_cfg).residual(u)
        scale = np.abs(fresh).max()
        assert np.abs(disc.residual(u) - fresh).max() <= rtol * scale
        assert disc.max_step(u) == pytest.approx(cls.from_config(fresh_cfg).max_step(u),
                                                 rel=1e-13)


def check_resume_is_bit_identical(cls: type[Discretization], geometry: str, method: str,
                                  case: dict, tmp_path, monkeypatch) -> None:
    cfg = config(geometry, method, case["resolution"], CLUSTERS[geometry], beta=2.0,
                 kappa=10.0, t_final=0.3, save_every=0.1)
    full = meanfield.evolve(cfg)
    out = tmp_path / f"{geometry}-{method}.nc"
    real_check, calls = cls.check, {"n": 0}

    def interrupting(self, state, t):
        calls["n"] += 1
        if t > 0.15:  # Ctrl-C between the first and second saves
            raise KeyboardInterrupt
        return real_check(self, state, t)

    monkeypatch.setattr(cls, "check", interrupting)
    part = meanfield.evolve(cfg, out=out)
    monkeypatch.setattr(cls, "check", real_check)
    assert part.attrs["status"] == -1 and part.sizes["time"] == 2
    resumed = meanfield.evolve(cfg, out=out, resume=True)
    assert resumed.attrs["status"] == 0
    np.testing.assert_array_equal(resumed.density.values, full.density.values)


def test_every_entry_has_a_case():
    assert set(registered()) >= set(CASES)
    assert set(CASES) >= set(registered()), "add a case for the new entry to CASES"


def test_from_name_lists_the_registered_pairs():
    with pytest.raises(meanfield.ConfigError) as err:
        Discretization.from_name("circle", "chebyshev")
    assert err.value.key == "discretization.method"
    assert "('circle', 'spectral')" in str(err.value)
    assert "('sphere', 'finite-volume')" in str(err.value)


PAIRS = sorted(CASES)


@pytest.mark.parametrize("geometry,method", PAIRS)
def test_mass_and_positivity(geometry, method):
    check_mass_and_positivity(Discretization.from_name(geometry, method), geometry, method,
                              CASES[geometry, method])


@pytest.mark.parametrize("geometry,method", PAIRS)
def test_growth_rate_of_the_first_unstable_mode(geometry, method):
    check_growth_rate(Discretization.from_name(geometry, method), geometry, method,
                      CASES[geometry, method])


@pytest.mark.parametrize("geometry,method", PAIRS)
def test_set_parameters_matches_a_fresh_build(geometry, method):
    check_parameters_match_fresh_build(Discretization.from_name(geometry, method), geometry,
                                       method, CASES[geometry, method])


@pytest.mark.parametrize("geometry,method", PAIRS)
def test_resume_is_bit_identical(geometry, method, tmp_path, monkeypatch):
    check_resume_is_bit_identical(Discretization.from_name(geometry, method), geometry,
                                  method, CASES[geometry, method], tmp_path, monkeypatch)


def test_set_parameters_refuses_bad_values():
    cfg = config("circle", "spectral", 32, CLUSTERS["circle"])
    disc = Discretization.from_config(cfg)
    # (beta < 0 is the circle's: refused on the other geometries, test_negative_beta)
    for kwargs, key in [({"beta": math.nan}, "model.beta"), ({"kappa": 0.0}, "model.kappa"),
                        ({"beta": 50.0}, "discretization.resolution")]:
        with pytest.raises(meanfield.ConfigError) as err:
            disc.set_parameters(**kwargs)
        assert err.value.key == key
    assert disc.parameters == (1.0, 4.0)  # unchanged by the refusals
