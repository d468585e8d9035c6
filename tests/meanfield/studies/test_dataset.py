"""``meanfield.studies.dataset``: the one way a study assembles its dataset."""
from __future__ import annotations

import numpy as np

from meanfield.studies.dataset import assemble, gather, model_name, variable


def test_gather_places_the_members_done_and_leaves_the_others_nan():
    done = [{"a": np.array([1.0, 2.0]), "b": np.array([3.0, 4.0])},
            None,  # not done
            {"a": np.array([5.0, 6.0]), "b": np.array([7.0, 8.0])}]
    out = gather(done, ("a", "b"), (3, 2), lambda i: i)
    np.testing.assert_array_equal(out["a"][[0, 2]], [[1.0, 2.0], [5.0, 6.0]])
    np.testing.assert_array_equal(out["b"][[0, 2]], [[3.0, 4.0], [7.0, 8.0]])
    assert np.isnan(out["a"][1]).all() and np.isnan(out["b"][1]).all()


def test_gather_takes_slices_fill_and_dtype():
    """A member filling a slice of systems (as the chunked token studies do)."""
    done = [{"steps": np.array([3, 4])}, "failed", {"steps": np.array([9])}]
    where = [(0, slice(0, 2)), (0, slice(2, 3)), (1, slice(0, 1))]
    steps = gather(done, ("steps",), (2, 3), where.__getitem__, fill=0,
                   dtype=np.int64)["steps"]
    assert steps.dtype == np.int64
    np.testing.assert_array_equal(steps, [[3, 4, 0], [9, 0, 0]])


def test_variable_and_model_name():
    assert variable("time", [1.0]) == ("time", [1.0], {"units": "1"})
    assert variable(("a", "b"), 2, "what", "rad") == (("a", "b"), 2,
                                                      {"units": "rad", "long_name": "what"})
    assert model_name(True) == "SA" and model_name(False) == "USA"


def test_assemble_puts_the_engines_info_after_the_studys_attrs():
    ds = assemble({"x": variable("t", np.arange(3.0), "x of t")},
                  {"t": ("t", np.arange(3))}, {"title": "T", "n": 4},
                  {"n": 5, "wall_time_s": 1.5})
    assert ds["x"].attrs == {"units": "1", "long_name": "x of t"}
    assert ds.attrs == {"title": "T", "n": 5, "wall_time_s": 1.5}
    assert list(ds.attrs) == ["title", "n", "wall_time_s"]
