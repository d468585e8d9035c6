"""``particles.diagnostics``: bad values refused at validation (before any work) with one
line naming the key, the value and the names accepted (issue 32, item 2)."""
from __future__ import annotations

import pytest

import meanfield
from meanfield import config as cfgmod
from meanfield.errors import ConfigError


@pytest.mark.parametrize("geometry,value,words", [
    ("circle", "energy", ["must be a list", "'order_parameter'"]),
    ("circle", ["energy", "entropy"], ["particles.diagnostics[1]", "'entropy'", "'energy'"]),
    ("circle", ["energy", "energy"], ["twice"]),
    ("circle", ["spread"], ["'spread'", "'circle'", "'order_parameter'"]),
    ("sphere", ["axis_order_parameter"], ["'axis_order_parameter'", "'sphere'"]),
    ("euclidean", ["energy"], ["'energy'", "'euclidean'", "'spread'"]),
    ("circle", [1], ["particles.diagnostics[0]"]),
])
def test_bad_diagnostics_are_refused_naming_the_key(geometry, value, words, monkeypatch):
    from meanfield.runs import particles as runs

    def no_work(*args, **kwargs):  # nothing may be built for a refused config
        raise AssertionError("work started")

    monkeypatch.setattr(runs, "ParticlesTask", no_work)
    cfg = {"domain": {"geometry": geometry}, "particles": {"n": 4, "diagnostics": value}}
    with pytest.raises(ConfigError) as err:
        meanfield.particles(cfg)
    assert err.value.key.startswith("particles.diagnostics")
    for word in words:
        assert word in str(err.value)


def test_absent_is_every_diagnostic_of_the_geometry_and_validation_is_idempotent():
    for geometry, names in (("circle", 4), ("zonal", 5), ("euclidean", 4)):
        cfg = cfgmod.validate({"domain": {"geometry": geometry}})
        assert len(cfg["particles"]["diagnostics"]) == names
        assert cfgmod.validate(cfg) == cfg
