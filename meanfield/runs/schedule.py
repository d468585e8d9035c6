"""What every run that steps in time shares: the save times, the checkpoint's path, the
progress bar (``new_bar``: the one place a tqdm bar is made)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np


def save_times(t_final: float, save_every: float) -> np.ndarray:
    """0, save_every, ..., and t_final (the last interval may be shorter)."""
    count = int(math.floor(t_final / save_every * (1 + 1e-12)))
    times = save_every * np.arange(count + 1)
    if t_final - times[-1] > 1e-12 * t_final:
        times = np.append(times, t_final)
    else:
        times[-1] = t_final
    return times


def checkpoint_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".checkpoint.nc")


def new_bar(**kwargs):
    """A ``tqdm.auto`` progress bar: a widget in a Jupyter notebook (when ipywidgets is
    installed; else tqdm warns once and falls back to text), a text bar on stderr in a
    terminal (the command line). Every bar of meanfield is made here.

    Args:
        **kwargs: ``tqdm``'s arguments (``total``, ``initial``, ``unit``, ...).
    """
    from tqdm import auto  # looked up at each call: the class tqdm.auto chose

    return auto.tqdm(**kwargs)


def progress_bar(total: float, start: float, enabled: bool):
    """A bar over simulated time (``new_bar``; None when not ``enabled``)."""
    if not enabled:
        return None
    return new_bar(total=total, initial=start, unit="t", bar_format="{l_bar}{bar}| t = "
                   "{n:.4g}/{total:.4g} [{elapsed}<{remaining}]")
