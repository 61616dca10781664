"""Writing output files safely: checked before a run, written whole or not at all.

A run can take minutes; finding only at its end that `--json out/result.json` cannot be written
would lose its verdict, so commands check every output path first (`check_writable`). Files are
written to a temporary file beside the target and renamed over it (`write_atomic`), so a reader
never sees half a file and an interrupted write leaves the previous file intact.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

from .errors import FaircertError

STDOUT = "-"


def check_writable(paths: Iterable[str | Path | None]) -> None:
    """One clear error for the first output path that cannot be written (None and '-' are skipped)."""
    for path in paths:
        if path is None or str(path) == STDOUT:
            continue
        target = Path(path)
        if target.is_dir():
            raise FaircertError(f"cannot write {path}: it is a directory")
        parent = target.parent if str(target.parent) else Path(".")
        if not parent.is_dir():
            raise FaircertError(f"cannot write {path}: the directory {parent} does not exist")
        if not os.access(parent, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
            raise FaircertError(f"cannot write {path}: permission denied")


def write_atomic(path: str | Path, write: Callable[[TextIO], object], newline: str | None = None) -> None:
    """Call `write(handle)` on a temporary file beside `path`, then rename it to `path`."""
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    except OSError as exc:
        raise FaircertError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", newline=newline) as handle:
            write(handle)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise FaircertError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: str | Path, text: str) -> None:
    write_atomic(path, lambda handle: handle.write(text))


def print_stdout(text: str) -> None:
    """Text to standard output, flushed here so that a full or closed stdout is one clear error."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        # what stays in the buffer would fail again when Python flushes it at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise FaircertError(f"cannot write to standard output: {exc.strerror or exc}") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
