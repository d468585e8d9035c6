"""The lock that keeps two runs off one output: an advisory ``flock`` on ``<out>.lock``.

One primitive decides, the kernel's: a run holds ``flock(LOCK_EX)`` on the lock file for
as long as it runs, and the kernel drops it when the process ends however it ends (kill
-9 included). So there is nothing to check and then unlink: a lock file nobody holds (an
empty one, one naming a dead pid: a run killed before it could remove it) is simply
locked by the next run, and a file somebody holds is busy whatever it contains, empty
included (a run between creating it and writing its pid). The pid and host written into
the file only say who holds it, in the message.

The one race left is the holder removing the file while it releases: a process that
opened the old file before the unlink then locks a file no longer at the path. So the
lock is taken only when the file locked is still the one at the path (same inode), else
the path is opened again. A short probe by ``busy`` (a shared lock, at once released)
may meet a run taking its exclusive lock: ``acquire`` tries again for ``SETTLE_S``
before it calls the output busy.

On Linux NFS clients emulate ``flock`` with byte-range locks, seen by every client.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
from pathlib import Path

SETTLE_S = 0.05  # how long ``acquire`` tries again (a ``busy`` probe holds microseconds)


def acquire(path: Path) -> int | None:
    """Lock ``path`` (created if missing) for this process; the open descriptor that
    holds the lock (``release`` it), or None if another process holds it."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if not _take(fd):
            os.close(fd)
            return None
        try:
            here = os.stat(path)
        except FileNotFoundError:
            here = None
        held = os.fstat(fd)
        if here is None or (here.st_dev, here.st_ino) != (held.st_dev, held.st_ino):
            os.close(fd)  # removed by the holder that released it: open the new one
            continue
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {socket.gethostname()}\n".encode())
        return fd


def _take(fd: int) -> bool:
    """``LOCK_EX`` without waiting, tried again for ``SETTLE_S`` (see the module
    docstring); whether it is held."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.002)


def busy(path: Path) -> bool:
    """Whether another process holds the lock on ``path`` now (a probe before any work;
    ``acquire`` decides)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # (missing: free; unreadable: acquire will say)
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # (drops the shared lock if it was taken)
    return False


def holder(path: Path) -> str:
    """Who holds the lock, as written in the file ("pid host"; empty if unknown)."""
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return ""


def release(path: Path, fd: int) -> None:
    """Remove the lock file if it is still the one ``fd`` locked (a folder that cannot be
    written keeps it: nobody holds it once ``fd`` is closed), then drop the lock."""
    with contextlib.suppress(OSError):
        here, held = os.stat(path), os.fstat(fd)
        if (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino):
            os.unlink(path)
    os.close(fd)
