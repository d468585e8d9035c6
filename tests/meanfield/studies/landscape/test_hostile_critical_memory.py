"""Issue 31, "every allocation ... estimated before any work": the critical-points study
keeps every distinct point it finds (each start may find its own: ``families x starts``
a member, up to 3e6), each with its n x n invariant, measures and padded rows, and held
all starts of a family at once (1e6 starts of 64 x 16 tokens: 8 GB). Validation now
refuses what may not fit, naming ``critical_points.starts`` and the count that fits; the
starts are drawn one at a time (the same draws, in the same order)."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

from meanfield import ConfigError
from meanfield import config as cfgmod
from meanfield.config import landscape_studies, memory
from meanfield.studies.landscape import critical_search as search

MiB = 2**20


def _cfg(starts: int) -> dict:
    return {"critical_points": {"n": [8, 64], "dim": 16, "beta": [1.0, 4.0],
                                "starts": starts}}


def test_points_that_may_not_fit_are_refused_at_validation(monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: 64 * MiB)
    with pytest.raises(ConfigError, match=r"^critical_points.starts = 2000: up to 6e\+03 "
                                          r"critical points .*n = 64 tokens on S\^15.*GiB.*"
                                          r"give critical_points.starts <= \d+$") as err:
        cfgmod.validate(_cfg(2000), "critical_points")
    assert err.value.key == "critical_points.starts"
    # the count it names fits, one more does not (the estimate is linear in starts)
    fits = int(str(err.value).rsplit("<= ", 1)[1])
    assert 0 < fits < 2000
    cfg = cfgmod.validate(_cfg(fits), "critical_points")
    limit = memory.MEMORY_MARGIN * 64 * MiB
    assert landscape_studies.check_points_memory(cfg) <= limit
    with pytest.raises(ConfigError):
        cfgmod.validate(_cfg(fits + 1), "critical_points")
    # the estimate: each point its x, canonical copy, measures (3 n d), its sorted Gram
    # rows (n^2), spectrum (n (d - 1)) and rows padded to n = 64 (3 x 16 x 64), kept for
    # the 4 members twice
    rows = 8.0 * 64 * 48 + landscape_studies.POINT_OBJECT_BYTES
    per_point = 8.0 * (3 * 64 * 16 + 64**2 + 64 * 15) + rows + 2 * 4 * rows
    assert landscape_studies.check_points_memory(cfg) == 3 * fits * per_point


def test_the_starts_are_drawn_one_at_a_time():
    draws = search.starts("clusters", 5, 6, 3, 0.05, np.random.default_rng(1))
    assert inspect.isgenerator(draws)  # not a list of all of them
    again = np.random.default_rng(1)
    first = next(draws)
    assert first.shape == (6, 3)
    rest = list(draws)
    assert len(rest) == 4 and not any(np.array_equal(first, x) for x in rest)
    assert np.array_equal(next(search.starts("clusters", 5, 6, 3, 0.05, again)), first)
