"""Processes faircert starts end with the process that started them, whatever ended it.

A worker whose driver was killed (SIGKILL, the OOM killer, a CI timeout) would otherwise wait for
work forever on a pipe it holds both ends of, keeping its memory. Each process faircert starts
calls `exit_with_parent` first thing: on Linux the kernel then kills it when its parent dies (a
parent-death signal; the parent is checked again right after, in case it died before the signal
was set), and everywhere a watchdog thread checks every `POLL_S` seconds that the parent is still
there. A worker blocked in native code that holds the interpreter's lock is covered by the signal
only, so the watchdog is the fallback where there is none (macOS, Windows). (The kernel sends the
signal when the thread that started the process ends: faircert's pools are started and closed
within one call, in one thread.)

`exit_without(driver)` watches a process that is not the parent: the driver of a Ray actor (the
actor's parent is Ray's own process), named by `identity()`, which is watched only where it is
found on the actor's machine (Linux: the same boot, pid and start time); elsewhere Ray ends the
actors of a driver it lost.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
from collections.abc import Callable

#: how often the watchdog looks for the parent (an orphan lives at most about this long)
POLL_S = 0.25
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
#: what an orphan's exit code says (its work is lost with its driver anyway)
EXIT_CODE = 70


def exit_with_parent(parent: int) -> None:
    """End this process as soon as `parent` (the pid of the process that started it) is gone."""
    _death_signal()
    if os.getppid() != parent:  # it died before the signal was set (or this is already an orphan)
        os._exit(EXIT_CODE)
    _watch(lambda: os.getppid() != parent, f"faircert-parent-{parent}")


def identity() -> tuple[str, int, str] | None:
    """This process's identity, for `exit_without` in another process (None where not readable)."""
    return _identity(os.getpid())


def exit_without(driver: tuple[str, int, str] | None) -> None:
    """End this process as soon as the process `driver` (`identity()`) is gone, where it runs on
    this machine; nothing where it does not (or cannot be told)."""
    if driver is None or _identity(driver[1]) != tuple(driver):
        return
    pid = driver[1]
    _watch(lambda: _identity(pid) != tuple(driver), f"faircert-driver-{pid}")


def _identity(pid: int) -> tuple[str, int, str] | None:
    """(boot id, pid, start time in clock ticks since boot) of a live process, or None."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        fields = stat[stat.rindex(")") + 2 :].split()  # after the command name, which may hold spaces
        return (boot, pid, fields[19]) if fields[0] != "Z" else None  # field 22: starttime
    except (OSError, ValueError, IndexError):
        return None


def _death_signal() -> None:
    """Ask the kernel to SIGKILL this process when its parent exits (Linux; elsewhere nothing)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no libc with prctl (a static or unusual build): the watchdog stays
        pass


def _watch(gone: Callable[[], bool], name: str) -> None:
    def loop() -> None:
        while not gone():
            time.sleep(POLL_S)
        os._exit(EXIT_CODE)

    threading.Thread(target=loop, name=name, daemon=True).start()
