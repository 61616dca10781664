"""How much state a run may keep (`--memory-limit`), and the words a result uses when it stops there.

The limit counts the bytes of the state an engine grows as it runs (open boxes, pools, frontiers,
decided pieces), per process: each worker holds its own share to it. Temporaries of one step come
on top, so a process's peak is a small multiple of the limit. The default is a share of the
machine's memory, small enough that a run stops with its sound partial result long before the
kernel would kill it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from .errors import PropertyError

#: the share of the machine's memory a run's state may take by default
SHARE = 1 / 16
#: the default where the machine's memory cannot be read
FALLBACK_BYTES = 1_500_000_000
#: the smallest limit accepted (a few boxes)
MIN_BYTES = 1024
#: what a result says when the limit ended the run (`stats["stopped"]`, a program's `stopped`)
STOPPED = "memory limit"

_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}


def machine_bytes() -> int | None:
    """The machine's physical memory, or None where it cannot be read."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def default_limit() -> int:
    total = machine_bytes()
    return FALLBACK_BYTES if not total else max(MIN_BYTES, int(total * SHARE))


def parse_bytes(text: str) -> int:
    """A byte count as users write it: 800000000, 800M, 1.5G, 2GiB (case and a trailing B optional)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]i?)?b?\s*", str(text), flags=re.IGNORECASE)
    if match is None:
        raise PropertyError(f"memory limit must be a number of bytes such as 800M, 2G or 1.5GiB, got {text!r}")
    return int(float(match.group(1)) * _UNITS[(match.group(2) or "").lower()])


def check_limit(value: object) -> int:
    """A limit given in Python or on the command line, as an int of bytes (at least `MIN_BYTES`)."""
    if isinstance(value, str):
        value = parse_bytes(value)
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not value >= MIN_BYTES
        or value != value
        or value == float("inf")
    ):
        raise PropertyError(f"memory limit must be at least {MIN_BYTES} bytes, got {value!r}")
    return int(value)


#: the limit of the run in progress, where an engine reads it deep inside (the tree refinements)
_current: ContextVar[int | None] = ContextVar("memory_limit", default=None)


@contextmanager
def limited(nbytes: int | None) -> Iterator[None]:
    """Within the block, `limit()` is `nbytes` (None: the default)."""
    token = _current.set(nbytes)
    try:
        yield
    finally:
        _current.reset(token)


def limit() -> int:
    """The limit of the run in progress (`limited`), else the default."""
    value = _current.get()
    return default_limit() if value is None else value
