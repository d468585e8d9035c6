"""The config's table of (geometry, method) pairs (``meanfield.config.discretizations``)
equals the registry of discretizations: the built-in pairs it lists are the built-in
entries, and an entry defined or unregistered later is announced to it or withdrawn, so
the config accepts exactly the registered methods without importing the
discretizations."""
from __future__ import annotations

import numpy as np
import pytest

from meanfield import config as cfgmod
from meanfield.config import discretizations as table
from meanfield.discretizations.base import Discretization
from meanfield.discretizations.circle import SpectralCircle
from meanfield.discretizations.registry import BUILTIN, registered
from meanfield.errors import ConfigError
from solvers.steppers import ETDRK4

PAIR = ("circle", "spectral-test")


def test_the_table_equals_the_registry():
    assert table.pairs() == registered()
    assert table.BUILTIN_PAIRS == tuple((c.geometry, c.method) for c in BUILTIN)


def test_a_new_entry_is_announced_and_an_unregistered_one_withdrawn():
    cfg = {"discretization": {"method": PAIR[1], "resolution": 64}}
    with pytest.raises(ConfigError, match="spectral-test"):
        cfgmod.validate(cfg, "evolve")
    try:
        class TestSpectralCircle(SpectralCircle):
            geometry, method = PAIR

            def stepper(self):
                return ETDRK4(np.zeros_like(self.linear), self.residual, self.scheme.dt)

        assert PAIR in table.pairs() and table.pairs() == registered()
        assert cfgmod.validate(cfg, "evolve")["discretization"]["method"] == PAIR[1]
    finally:
        Discretization.unregister(*PAIR)
    assert PAIR not in table.pairs() and table.pairs() == registered()
    with pytest.raises(ConfigError, match="spectral-test"):
        cfgmod.validate(cfg, "evolve")
