"""An output folder moved or replaced while a run writes into it.

A run writes its part files (``<out>.frames``), checkpoints and result next to its
output. If that folder is renamed, deleted and made again, or replaced by a file while
the run goes on, writing by name would land in a new folder of the same name (or fail)
and the parts already written would be missing at the end. So the run remembers the
folders it writes into by identity (device and inode: ``identity``), the output's folder
from the moment it takes its lock and the parts' folder through an open descriptor, and
checks them before each save; a change raises ``FolderMoved``.

The engine then moves the run to a *fallback folder*: a new folder
``meanfield-<name>.XXXXXXXX`` in the temporary directory (``$TMPDIR``, as for a result
kept elsewhere; ``fallback_folder``), the parts written so far copied there through the
descriptor (so a folder that was moved, wherever to, still gives them), and everything
from then on (parts, checkpoints, the result) is written there. One warning names it; a
run that stops afterwards continues with ``--resume --out <fallback>/<name>``; a run that
ends writes its result there and says so (``OutputError``, exit status 1).
"""
from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from pathlib import Path


class FolderMoved(OSError):
    """The folder a run writes into was moved or replaced since the run began."""

    def __init__(self, folder: Path):
        super().__init__(errno.ESTALE, "moved or replaced during the run", str(folder))
        self.folder = folder


def identity(path: Path | int) -> tuple[int, int] | None:
    """``(device, inode)`` of a folder (a path or an open descriptor); None if it is not
    one now."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def fallback_folder(path: Path) -> Path:
    """A new folder in the temporary directory for the run whose result is ``path``."""
    return Path(tempfile.mkdtemp(prefix=f"meanfield-{path.stem}."))


def copy_from(folder_fd: int, names: list[str], dest: Path) -> list[Path]:
    """Copy the files ``names`` of the folder open as ``folder_fd`` into ``dest`` (made);
    their new paths.

    Raises:
        FileNotFoundError: one is gone (the folder was deleted, not moved).
    """
    dest.mkdir(parents=True, exist_ok=True)
    copied = []
    for name in names:
        src = os.open(name, os.O_RDONLY, dir_fd=folder_fd)
        with os.fdopen(src, "rb") as f, open(dest / name, "wb") as g:
            shutil.copyfileobj(f, g)
        copied.append(dest / name)
    return copied
