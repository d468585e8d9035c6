"""The config reference (docs/config_reference.md) is generated from the validator: every
registered key is on the page and every key on the page is registered, each key's
"accepts" text names the bounds its checker enforces, and the committed page is current."""
from __future__ import annotations

import math
import re

import pytest

from meanfield.config import checkers as ck
from meanfield.config import reference, registry
from meanfield.config.depth_weights import DEPTH_KEYS
from meanfield.config.study_weight_keys import STUDY_WEIGHT_KEYS
from meanfield.config.initial import INITIAL_PARAMS
from meanfield.config.meanings import INITIAL_MEANINGS, MEANINGS
from meanfield.errors import ConfigError


def _listed(page: str) -> set[str]:
    """``section.key`` of every key row of the page (``[initial]``: its parameter rows)."""
    keys, section = set(), None
    for line in page.splitlines():
        heading = re.match(r"## \[(\w+)\]", line)
        if heading:
            section = heading.group(1)
            continue
        if section == "initial":
            row = re.match(r"\| `(\w+)` \| `(\w+)` \|", line)
            if row:
                keys.add(f"initial.{row.group(2)}")
            keys |= {f"initial.{k}" for k in re.findall(r"`(kind|weight)`", line)}
        elif section is not None:
            row = re.match(r"\| `(\w+)` \|", line)
            if row:
                keys.add(f"{section}.{row.group(1)}")
    return keys


def _registered() -> set[str]:
    """Every key the validator takes, read from its own tables (not from the reference)."""
    keys = set()
    for name, section in registry.SECTIONS.items():
        keys |= {f"{name}.{k}" for k in section.keys}
    keys |= {f"initial.{k}" for kinds in INITIAL_PARAMS.values()
             for params in kinds.values() for k in ("kind", *params)} | {"initial.weight"}
    keys |= {"weights.query", "weights.key", "weights.value", "weights.heads",
             "feedforward.activation", "feedforward.weight"}
    keys |= {f"weights.{k}" for k in DEPTH_KEYS}  # weights that change with depth
    keys |= {f"weights.{k}" for k in STUDY_WEIGHT_KEYS}  # the studies' per_system
    return keys


def test_every_registered_key_is_listed_and_every_listed_key_registered():
    listed, registered = _listed(reference.markdown()), _registered()
    assert registered - listed == set(), "registered keys missing from the page"
    assert listed - registered == set(), "keys on the page that are not registered"
    assert registered == reference.registered_keys()


def test_every_section_has_a_heading():
    page = reference.markdown()
    for name in registry.SECTIONS:
        assert f"## [{name}]" in page


def test_every_key_has_one_meaning_and_no_meaning_is_orphaned():
    keyed = {k for k in _registered() if not k.startswith("initial.")}
    assert set(MEANINGS) == keyed
    initial = {k.split(".", 1)[1] for k in _registered() if k.startswith("initial.")}
    assert set(INITIAL_MEANINGS) == initial


def test_the_committed_page_is_current():
    assert reference.PAGE.read_text(encoding="utf-8") == reference.markdown(), (
        "docs/config_reference.md is stale: run python -m meanfield.config.reference > "
        "docs/config_reference.md")


def _bounds(text: str) -> list[tuple[str, float]]:
    return [(op, float(v)) for op, v in re.findall(r"(>=|<=|>|<) (-?[\d.e+-]+)\b", text)]


@pytest.mark.parametrize("key", sorted(k for k in _registered()
                                       if registry.SECTIONS[k.split(".")[0]].validator
                                       is None))
def test_the_stated_bounds_are_the_checkers(key):
    """Each bound an "accepts" text states holds at the bound and fails just past it: the
    text is the checker's, not a copy that could disagree."""
    section, name = key.split(".")
    check, _ = registry.SECTIONS[section].keys[name]
    text = reference.accepts(check)
    assert text and "``" not in text
    if not text.startswith(("a finite number", "an integer")):
        return  # lists, choices, strings: their own tests (test_bad_input, ...)
    integer = text.startswith("an integer")
    for op, bound in _bounds(text):
        value = int(bound) if integer and bound < 2**62 else bound
        step = 1 if integer else max(abs(bound), 1.0) * 1e-9
        inside = {">=": value, "<=": value, ">": value + step, "<": value - step}[op]
        outside = {">=": value - step, "<=": value + step, ">": value,
                   "<": value}[op]
        if integer and isinstance(inside, float):
            continue  # a bound beyond the exact floats: only the seeds' 2^63 - 1
        assert check(key, inside) == inside
        with pytest.raises(ConfigError):
            check(key, outside)


def test_factory_checkers_describe_their_bounds():
    assert ck.number_in(0.0, True, 1.0).accepts == "a finite number > 0 and <= 1"
    assert ck.integer_in(2).accepts == "an integer >= 2"
    assert ck.integer_in(0, 2**63 - 1).accepts == "an integer >= 0 and <= 9223372036854775807"
    assert ck.choice(("a", "b")).accepts == "one of 'a', 'b'"
    assert ck.shown_number(1e8) == "1e8" and ck.shown_number(1e-14) == "1e-14"


def test_toml_values_read_back():
    import tomllib

    for value in (1.0, 1e-8, 7, True, "auto", [0.5, 1.0], {"start": 0.1, "num": 3},
                  [{"query": "identity"}]):
        assert tomllib.loads(f"v = {reference.toml_value(value)}")["v"] == value
    assert reference.toml_value(math.inf) == '"inf"'
