"""The Sinkhorn attention example (quick variant) and what it claims."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sinkhorn_attention.py"


def test_sinkhorn_attention_example(tmp_path):
    """Rank >= components at every save (a theorem: docs/conventions.md, "Counting
    clusters"); G never increases and its change is -beta int sum |x'|^2 (Simpson on
    saves 0.25 apart: measured 1e-4 relative, stated 1e-3); P doubly stochastic."""
    spec = importlib.util.spec_from_file_location("sinkhorn_attention", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main(["--quick", "--out", str(tmp_path / "s.png")])
    for found in out["counts"].values():
        assert np.all(found["rank"] >= found["linkage"])
        assert found["linkage"][0] == found["rank"][0] == 24  # uniform: no close pair
    assert out["increase"] <= 1e-12
    assert out["identity_error"] < 1e-3
    assert out["marginal_error"] <= 1e-12
    assert (tmp_path / "s.png").stat().st_size > 10_000
