"""Renamed keys (one name per concept): an old key is refused with its new name, in a
config, in a token table and through ``--set``; results saved before the rename read."""
from __future__ import annotations

import pytest

from meanfield import config as cfgmod
from meanfield.errors import ConfigError

OLD_CONFIGS = [
    ({"particles": {"model": "pre-ln"}}, "particles.model", "particles.architecture"),
    ({"particles": {"method": "direct"}}, "particles.method", "particles.sum_method"),
    ({"domain": {"geometry": "sphere"},
      "initial": {"kind": "tokens", "path": "x.npy", "normalize": False}},
     "initial.normalize", "initial.unit_rows"),
]


@pytest.mark.parametrize("raw, old, new", OLD_CONFIGS, ids=[c[1] for c in OLD_CONFIGS])
def test_old_key_names_its_new_name(raw, old, new):
    with pytest.raises(ConfigError) as err:
        cfgmod.validate(raw)
    assert err.value.key == old
    assert f"{old} was renamed to {new}" in str(err.value)


@pytest.mark.parametrize("old, new", sorted(cfgmod.RENAMED_KEYS.items()))
def test_old_key_through_set(old, new):
    with pytest.raises(ConfigError) as err:
        cfgmod.apply_overrides({}, [f"{old}=true"])
    assert err.value.key == old and new in str(err.value)


def test_new_names_validate():
    cfg = cfgmod.validate({"particles": {"architecture": "hardmax", "sum_method": "direct"},
                           "domain": {"geometry": "sphere"},
                           "initial": {"kind": "tokens", "path": "x.npy",
                                       "unit_rows": False}})
    assert cfg["particles"]["architecture"] == "hardmax"
    assert cfg["particles"]["sum_method"] == "direct"
    assert cfg["initial"]["unit_rows"] is False


def test_config_saved_under_old_names_reads():
    saved = cfgmod.to_json(cfgmod.validate({"particles": {"architecture": "pre-ln"}}))
    old = saved.replace('"architecture"', '"model"').replace('"sum_method"', '"method"')
    assert '"model": "pre-ln"' in old
    assert cfgmod.same_run(old, cfgmod.from_json(saved))
