"""Stopping a run early without losing its sound work.

Every engine's loop checks `requested()` beside its deadline, so a stop request ends the run the
way a time limit does: with a partial result whose shares and bounds are sound. The command line
turns SIGINT (Ctrl-C) and SIGTERM into such a request (`stop_on_signals`); a second signal aborts
at once. Python callers may call `request()` from another thread.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_stop = threading.Event()


def requested() -> bool:
    """Whether a stop was asked for: engines then finish like at their time limit."""
    return _stop.is_set()


def request() -> None:
    _stop.set()


def clear() -> None:
    _stop.clear()


@contextmanager
def stop_on_signals(quiet: bool = False) -> Iterator[None]:
    """Within the block, the first SIGINT or SIGTERM asks the engines to stop (the caller then
    writes the partial result); a second one raises KeyboardInterrupt. Only in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame) -> None:
        if _stop.is_set():
            raise KeyboardInterrupt
        _stop.set()
        if not quiet:
            name = signal.Signals(signum).name
            print(
                f"\nfaircert: {name} received: stopping and writing the sound partial result "
                "(send it again to abort without results)",
                file=sys.stderr,
                flush=True,
            )

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    clear()
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
