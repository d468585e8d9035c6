"""Issue 31, "every allocation proportional ... to the number of steps estimated before any
work": the Gaussian convergence study with a tiny ``time.dt``. Its table of the reference
was already refused where it does not fit the memory (dt = 1e-9 here); dt = 1e-8 fits
(5e7 steps, 5 GB) but tabled the reference for ~2 min and then stepped the members for
hours without a word. Now one ``LongRunWarning`` line naming ``time.dt`` comes before any
work, from a lower bound of the step's time (``MEMBER_STEP_S`` per member, a tenth of the
measured 1.3 ms; ``REFERENCE_STEP_S``)."""
from __future__ import annotations

import copy
import warnings

import pytest

from meanfield import ConfigError
from meanfield import config as cfgmod
from meanfield.runs import budget
from meanfield.studies.transport import gaussian_convergence as gc

CFG = {"domain": {"geometry": "euclidean", "dim": 2},
       "initial": {"kind": "gaussian", "mean": [0.5, -0.3],
                   "covariance": [[0.7, 0.1], [0.1, 0.6]]},
       "weights": {"query": [[0.4, 0.1], [0.0, 0.4]], "key": 0.5,
                   "value": [[0.5, 0.1], [-0.1, 0.6]]},
       "particles": {"seed": 3},
       "time": {"t_final": 0.5, "save_every": 0.25, "dt": 0.25},
       "convergence": {"n": [50, 200], "replicas": 2, "p": 2}}


def _validated(dt: float) -> dict:
    cfg = copy.deepcopy(CFG)
    cfg["time"]["dt"] = dt
    return cfgmod.validate(cfg, task="convergence")


class Stop(Exception):
    """Raised where the plan would start the work (the reference's table)."""


def test_hours_of_steps_are_said_before_any_work(monkeypatch):
    def no_work(*args, **kw):
        raise Stop

    monkeypatch.setattr(gc, "gaussian_reference", no_work)
    # dt = 1e-8 to t = 0.5: 5e7 steps x 4 members x >= 0.1 ms: >= 5.6 h
    with pytest.warns(budget.LongRunWarning,
                      match=r"^time.dt = 1e-08: 4 members .*5e\+07 time steps of at least "
                            r"0.403 ms each: this run will take at least 5.6 h") as w:
        with pytest.raises(Stop):  # the warning came first
            gc.gaussian_plan(_validated(1e-8))
    assert len(w) == 1 and "\n" not in str(w[0].message)
    # a short run says nothing (500 steps x 4 members: a second or so) ...
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(Stop):
            gc.gaussian_plan(_validated(1e-3))
    # ... and a table that does not fit is refused first, naming the key (as before)
    monkeypatch.setattr(budget, "available_memory", lambda: 2**30)  # 1 GiB
    with pytest.raises(ConfigError, match=r"^time.dt = 1e-09: .*GiB") as err:
        gc.gaussian_plan(_validated(1e-9))
    assert err.value.key == "time.dt"
