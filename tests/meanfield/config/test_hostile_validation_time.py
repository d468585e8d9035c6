"""Issue 31, "every allocation ... estimated before any work": validation of rescaled
weights (``weights._check_rescalable``: e^{t(V - cI)}, Q^T K and the logits; the rescaled
layers' ``cond(I + tau V)``) is O(d^3) LAPACK that Ctrl-C cannot stop (measured on 2
cores: >= 1 ns d^3, a general V 8-14 ns: d = 5000 minutes, d = 16000 hours). Its time is
estimated first: a warning in one line beyond ``FORMED_WARN_S``, a ``ConfigError`` naming
``domain.dim`` beyond ``MAX_FORMED_S``. Tested with a large rate per d^3 on small d (the
code before formed the matrices whatever their time: no warning, no refusal)."""
from __future__ import annotations

import warnings

import pytest

from meanfield import ConfigError
from meanfield import config as cfgmod
from meanfield.config import memory
from meanfield.config import weights as wmod


def _rescaled(dim: int, integrator: str = "ode") -> dict:
    p = {"n": 4, "architecture": "pure", "rescaled": True, "integrator": integrator}
    time = {"t_final": 0.1, "save_every": 0.1, "dt": 0.1}
    if integrator == "layers":
        p["layer_step"] = 0.1
        del time["dt"]
    return {"domain": {"geometry": "euclidean", "dim": dim}, "particles": p,
            "weights": {"value": 0.5}, "initial": {"kind": "uniform"}, "time": time}


@pytest.mark.parametrize("integrator", ["ode", "layers"])
def test_hours_of_validation_are_refused_before_any_matrix(monkeypatch, integrator):
    monkeypatch.setattr(memory, "FORMED_S_PER_D3", 1.0)  # d = 20: 8000 s > 3600 s

    def no_matrix(*args, **kw):
        raise AssertionError("a weight matrix was drawn")

    monkeypatch.setattr(wmod, "weight_matrix", no_matrix)
    with pytest.raises(ConfigError, match=r"domain.dim = 20: .*O\(d\^3\).*at least "
                                          r"2.22 h.*domain.dim <= 15$") as err:
        cfgmod.validate(_rescaled(20, integrator))
    assert err.value.key == "domain.dim" and "\n" not in str(err.value)
    # the dim it names fits: 15^3 s <= 3600 s < 16^3 s
    assert 15**3 <= memory.MAX_FORMED_S < 16**3


def test_minutes_of_validation_are_warned_about_in_one_line(monkeypatch):
    monkeypatch.setattr(memory, "FORMED_S_PER_D3", 1.0)  # d = 5: 125 s > 60 s
    with pytest.warns(memory.LongValidationWarning,
                      match=r"^domain.dim = 5: particles.rescaled.*at least 2.08 min") as w:
        cfgmod.validate(_rescaled(5))
    assert len(w) == 1 and "\n" not in str(w[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cfgmod.validate(_rescaled(3))  # 27 s: nothing said
