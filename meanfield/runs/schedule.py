"""What every run that steps in time shares: the save times, the checkpoint's path, the
progress bar."""
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


def progress_bar(total: float, start: float, enabled: bool):
    """A tqdm bar over simulated time (None when not ``enabled``)."""
    if not enabled:
        return None
    from tqdm.auto import tqdm
    bar = tqdm(total=total, initial=start, unit="t", bar_format="{l_bar}{bar}| t = {n:.4g}/"
               "{total:.4g} [{elapsed}<{remaining}]")
    return bar
