"""Ctrl-C and SIGTERM around compiled code.

Python runs a signal's handler between bytecodes of the main thread. Inside a long
compiled call (numba) that is only where the compiled code calls back into Python (numba
unpickles its constants there, a finaliser runs): a ``KeyboardInterrupt`` raised in such
a callback comes out of the call as ``SystemError: ... returned a result with an
exception set`` (which a study took for a member that failed, and went on), or is
swallowed by the finaliser. ``DeferredSignals`` notes the signal instead, and its owner
raises it between its own short compiled calls.

It lives at the bottom of the layers so that the chunked drivers of ``solvers`` and
``meanfield.metrics`` (direct sums, the sphere's auction) defer on their own around their
compiled calls; ``meanfield.runs.signals`` re-exports it.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any


class DeferredSignals:
    """For code that runs long stretches outside the interpreter (compiled calls): inside
    ``with DeferredSignals() as signals:`` Ctrl-C and SIGTERM are noted instead of
    raised wherever Python next runs (inside a compiled call that is a callback or a
    finaliser, which swallows or garbles the ``KeyboardInterrupt``); ``signals.check()``
    between short calls, and leaving the block, raise then what the signal stands for
    (its own handler is called: Ctrl-C's and the engine's SIGTERM raise
    ``KeyboardInterrupt``). A second signal is handled at once. Only signals with a
    Python handler are deferred, and only in the main thread (elsewhere nothing
    changes).

    Nested inside another (a chunked kernel inside a chunked study), it shares the outer
    one: a signal noted there is raised by the inner ``check`` too, and leaving the inner
    block changes no handler."""

    def __init__(self):
        self.noted: list[int] = []
        self.previous: dict[int, Callable] = {}
        self.outer: DeferredSignals | None = None

    def __enter__(self) -> DeferredSignals:
        if threading.current_thread() is threading.main_thread():
            outer = getattr(signal.getsignal(signal.SIGINT), "__self__", None)
            if isinstance(outer, DeferredSignals):
                self.outer = outer
                return self
            for s in (signal.SIGINT, signal.SIGTERM):
                handler = signal.getsignal(s)
                if callable(handler):
                    self.previous[s] = handler
                    signal.signal(s, self._note)
        return self

    def _note(self, signum: int, frame: Any) -> None:
        if self.noted:  # asked twice: now
            self.previous[signum](signum, frame)
        self.noted.append(signum)

    def check(self) -> None:
        """Handle a signal noted so far (raises ``KeyboardInterrupt`` for Ctrl-C)."""
        if self.outer is not None:
            self.outer.check()
        elif self.noted:
            signum = self.noted[0]
            self.noted.clear()
            self.previous[signum](signum, None)

    def __exit__(self, *exc) -> None:
        for s, handler in self.previous.items():
            signal.signal(s, handler)
        if exc[0] is None:
            self.check()
