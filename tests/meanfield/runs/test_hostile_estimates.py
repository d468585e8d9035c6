"""Issue 31, "every allocation estimated": d x d arrays outside the weights' run plan and a
step count that fits the memory but not the day, said before any work (each case fails
on the code before: a QR of a d x d Gaussian the budget did not count, matrices formed
during validation before any estimate, a convergence run of hours without a word)."""
from __future__ import annotations

import warnings

import pytest

from meanfield import ConfigError
from meanfield import config as cfgmod
from meanfield.config import memory
from meanfield.config import weights as wmod
from meanfield.runs import budget, sizes
from meanfield.studies.transport import convergence as conv

GiB = 2**30


def test_the_equiangular_rotation_is_in_the_budget():
    # initial.kind = "equiangular" turns the set by a random rotation: a QR of a d x d
    # Gaussian (d = 20000: 3.2 GB a matrix), which the budget did not count (n = 4 tokens
    # of 20000 components are 0.6 MB)
    cfg = cfgmod.validate({"domain": {"geometry": "sphere", "dim": 20000},
                           "particles": {"n": 4}, "initial": {"kind": "equiangular"},
                           "time": {"t_final": 0.1, "save_every": 0.1, "dt": 0.1}})
    est = budget.estimate(cfg, "particles")
    assert est.parts["initial rotation"] == (budget.ROTATION_ARRAYS * 20000.0**2 * 8,
                                             "domain.dim")
    with pytest.raises(ConfigError, match="domain.dim = 20000.*initial rotation.*"
                                          "domain.dim <= ") as err:
        budget.check(cfg, "particles", available=4 * GiB)
    assert err.value.key == "domain.dim"
    # the largest dim it names fits: 5 d^2 doubles + the rest within 80 % of 4 GiB
    best = int(str(err.value).rsplit("<= ", 1)[1].split()[0])
    fitted = cfgmod.validate({**cfg, "domain": {**cfg["domain"], "dim": best}})
    assert budget.estimate(fitted, "particles").bytes <= 0.8 * 4 * GiB


def test_rescaled_weights_are_estimated_before_validation_forms_them(monkeypatch):
    # particles.rescaled = true: validation forms Q, K, V, Q^T K and e^{tV} to check the
    # logits at t_final (dim = 40000: 3 x 12.8 GB before the first product, MemoryError)
    monkeypatch.setattr(memory, "available_memory", lambda: 64 * 2**20)

    def no_matrix(*args, **kw):
        raise AssertionError("a weight matrix was drawn")

    monkeypatch.setattr(wmod, "weight_matrix", no_matrix)
    cfg = {"domain": {"geometry": "euclidean", "dim": 1500},
           "particles": {"n": 4, "architecture": "pure", "rescaled": True},
           "weights": {"value": 0.5}, "initial": {"kind": "uniform"},
           "time": {"t_final": 0.1, "save_every": 0.1, "dt": 0.1}}
    with pytest.raises(ConfigError, match="domain.dim = 1500: particles.rescaled.*"
                                          "GiB.*domain.dim <= ") as err:
        cfgmod.validate(cfg)
    assert err.value.key == "domain.dim"
    # what it names fits: FORMED_MATRICES d^2 doubles within 80 % of 64 MiB
    best = int(str(err.value).rsplit("<= ", 1)[1])
    assert memory.FORMED_MATRICES * best**2 * 8 <= 0.8 * 64 * 2**20 \
        < memory.FORMED_MATRICES * (best + 1) ** 2 * 8


def _convergence(dt: float) -> dict:
    return cfgmod.validate(
        {"model": {"beta": 1.0}, "initial": {"kind": "von_mises", "concentration": 2.0},
         "discretization": {"resolution": 8},
         "time": {"t_final": 1.0, "save_every": 0.5, "dt": dt},
         "convergence": {"n": [16], "replicas": 1}}, task="convergence")


def test_a_convergence_run_of_hours_is_said_before_any_work():
    # time.dt = 1e-7 to t = 1: 1e7 steps, a table of 1.4 GB that fits, and at least
    # 1e7 x 1 ms = 2.8 h (measured 3.6 ms a step): one warning naming time.dt
    with pytest.warns(budget.LongRunWarning, match=r"time.dt = 1e-07: .*1e\+07 time "
                                                   r"steps.*at least 2.78 h.*raise time.dt"):
        conv.check_convergence_config(_convergence(1e-7))
    with warnings.catch_warnings():  # the example's step: no warning
        warnings.simplefilter("error", budget.LongRunWarning)
        conv.check_convergence_config(_convergence(0.01))


def test_the_step_time_bound_is_the_documented_limit():
    # just below and above budget.LONG_RUN_S: the warning is a threshold, not a guess
    at = budget.LONG_RUN_S / sizes.CONVERGENCE_STEP_S
    with warnings.catch_warnings():
        warnings.simplefilter("error", budget.LongRunWarning)
        sizes.warn_step_time(0.99 * at, sizes.CONVERGENCE_STEP_S, "time.dt", 1e-3, "x")
    with pytest.warns(budget.LongRunWarning):
        sizes.warn_step_time(1.01 * at, sizes.CONVERGENCE_STEP_S, "time.dt", 1e-3, "x")
