"""How a study made of members assembles its dataset (one way for every study).

A study's ``study_dataset(cfg, plan, done, info)`` builds its dataset from the members
done so far (``done``: one entry per member in order, a dict of arrays for a member that
finished, anything else for one that did not); the run engine then stamps ``kind``,
``config``, ``version``, ``status`` and ``message`` (``meanfield.runs.engine.stamp``). The
steps every builder shares live here:

- ``gather``: the members' arrays placed into full arrays, ``fill`` (NaN) where a member
  is not done, so that an interrupted study writes what it has;
- ``variable``: one data variable, dimensionless (``units = "1"``) unless said, with its
  ``long_name``;
- ``model_name``: "SA" (normalized) or "USA", the name the attrs and titles use;
- ``assemble``: the dataset of the variables and coordinates, its attrs those of the
  study followed by the engine's ``info`` (wall time, problems, ...).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import xarray as xr


def gather(done: Sequence[Any], names: Sequence[str], shape: tuple[int, ...],
           where: Callable[[int], Any], fill: float = np.nan,
           dtype: Any = float) -> dict[str, np.ndarray]:
    """Full arrays of the members done.

    Args:
        done: one entry per member, in order; a dict (name -> array) for a member that
            finished, anything else (None, a failure) for one that did not.
        names: the keys of a member's dict to gather.
        shape: the shape of each full array.
        where: member index -> the index (int, slice or tuple of them) of the full
            array that the member's values fill.
        fill: the value where no member is done (NaN: "not computed").
        dtype: the arrays' dtype.

    Returns:
        One array of ``shape`` per name.
    """
    out = {k: np.full(shape, fill, dtype=dtype) for k in names}
    for i, value in enumerate(done):
        if not isinstance(value, dict):
            continue
        index = where(i)
        for k in names:
            out[k][index] = value[k]
    return out


def variable(dims: str | tuple[str, ...], values: Any, long_name: str | None = None,
             units: str = "1") -> tuple:
    """``(dims, values, attrs)`` of one data variable: ``units`` and, if given,
    ``long_name``."""
    attrs = {"units": units}
    if long_name is not None:
        attrs["long_name"] = long_name
    return dims, values, attrs


def model_name(normalized: bool) -> str:
    """"SA" (normalized self-attention) or "USA" (unnormalized)."""
    return "SA" if normalized else "USA"


def assemble(data: dict, coords: dict, attrs: dict, info: dict) -> xr.Dataset:
    """The dataset of ``data`` on ``coords``, its attrs ``attrs`` then ``info`` (the run
    engine's: a key of both takes ``info``'s value)."""
    ds = xr.Dataset(data, coords=coords)
    ds.attrs.update({**attrs, **info})
    return ds
