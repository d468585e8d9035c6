"""The worked example of docs/adding_a_discretization.md registers, is accepted by the
config, and passes the checks every registered discretization passes."""
from __future__ import annotations

import re
from pathlib import Path

from test_registered import (
    check_growth_rate,
    check_mass_and_positivity,
    check_parameters_match_fresh_build,
    check_resume_is_bit_identical,
)

from meanfield.discretizations.base import Discretization
from meanfield.discretizations.registry import registered

DOC = Path(__file__).resolve().parents[3] / "docs" / "adding_a_discretization.md"
PAIR = ("circle", "spectral-rk4")
# RK4 with step doubling at tolerance 1e-11 on the exact single-mode dynamics.
CASE = {"resolution": 64, "rate_rtol": 1e-4}


def example_code() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert len(blocks) == 1, "the page has one python example"
    return blocks[0]


def test_the_documented_example_registers_and_passes_the_generic_checks(tmp_path,
                                                                        monkeypatch):
    assert PAIR not in registered()
    namespace = {"__name__": "adding_a_discretization_example"}
    try:
        exec(compile(example_code(), str(DOC), "exec"), namespace)  # noqa: S102 (our doc)
        cls = namespace["ExplicitSpectralCircle"]
        assert PAIR in registered() and Discretization.from_name(*PAIR) is cls
        check_mass_and_positivity(cls, *PAIR, CASE)
        check_growth_rate(cls, *PAIR, CASE)
        check_parameters_match_fresh_build(cls, *PAIR, CASE)
        check_resume_is_bit_identical(cls, *PAIR, CASE, tmp_path, monkeypatch)
    finally:
        Discretization.unregister(*PAIR)
    assert PAIR not in registered()
