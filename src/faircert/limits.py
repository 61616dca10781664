"""The resource guard: the largest inputs faircert reads, in one place.

Model, domain, program and data files are untrusted. Every reader checks sizes and depths against
these limits before it allocates or recurses, so a hostile file ends in a one-line error instead of
a hang, an out-of-memory kill or a crash. The limits are far above any model faircert can verify
in practice; raise them here if a real model needs more.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from .errors import FaircertError

#: Bytes of one model or data file.
MAX_FILE_BYTES = 512 * 2**20
#: Bytes of a checkpoint file (`--resume`): its head is checked before the rest is read.
MAX_CHECKPOINT_BYTES = MAX_FILE_BYTES
#: Bytes of a domain file or a program (hand-written text; their parsers are slower per byte).
MAX_TEXT_BYTES = 16 * 2**20
#: Values in one weight tensor, initializer or dataset (float64: 800 MB).
MAX_TENSOR_VALUES = 100_000_000
#: Neurons in one layer (a width, also per-sample input width).
MAX_LAYER_WIDTH = 1_000_000
#: Layers of a network.
MAX_LAYERS = 10_000
#: Trees in an ensemble.
MAX_TREES = 100_000
#: Nodes in one tree.
MAX_TREE_NODES = 10_000_000
#: Depth of one tree (root = 0).
MAX_TREE_DEPTH = 1_000
#: Nesting of JSON/UBJSON/YAML documents (objects and arrays inside each other).
MAX_NESTING = 100
#: Values (scalars, lists and mappings) in a YAML domain file: YAML is read several times slower than
#: JSON; a domain of 100,000 features of four keys each has 900,000 of them.
MAX_YAML_VALUES = 2_000_000
#: Bytes of a YAML domain file when PyYAML lacks libyaml (its pure-Python parser reads about 100 KB a second).
MAX_PURE_YAML_BYTES = 2**20
#: Nesting of a program expression (operators inside operators).
MAX_EXPRESSION_DEPTH = 200
#: Features in a domain; columns in a data file.
MAX_FEATURES = 100_000
#: Nodes of an ONNX graph.
MAX_GRAPH_NODES = 100_000
#: A fixed batch size the ONNX import check will run (larger ones are refused, not allocated).
MAX_FIXED_BATCH = 4_096
#: Characters of file content quoted in an error message.
MAX_QUOTED = 80
#: Seconds and bytes of memory a child process gets to load a model with its framework library
#: and predict the import check's sample inputs.
CHILD_SECONDS = 30
CHILD_MEMORY_BYTES = 4 * 2**30
#: Seconds a child process gets to copy an HDF5 file out (a damaged file can make HDF5 loop forever).
HDF5_SECONDS = 10


#: The end of the current command's time limit (time.monotonic), while one runs.
_deadline: ContextVar[float | None] = ContextVar("faircert_deadline", default=None)
#: When the command line began its command (time.monotonic), until the first time limit takes it.
_command_start: list[float] = []


def start_command_clock() -> None:
    """Mark the command line's start: the command's time limit then counts its own imports and
    argument parsing too, not only the work after them."""
    _command_start[:] = [time.monotonic()]


@contextmanager
def time_budget(seconds: float | None) -> Iterator[None]:
    """Within the block, children that load models get at most the time left of `seconds`,
    counted from the command line's start (`start_command_clock`) for the first block, else from now."""
    start = _command_start.pop() if _command_start else time.monotonic()
    token = _deadline.set(None if seconds is None else start + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def command_deadline() -> float | None:
    """The `time.monotonic()` deadline of the enclosing `time_budget` (None outside one or without
    a limit): engines that start after reading their inputs count that reading against it."""
    return _deadline.get()


def child_seconds(cap: float = CHILD_SECONDS) -> float:
    """Seconds a child may take: `cap`, or less when the command's time limit ends sooner."""
    deadline = _deadline.get()
    if deadline is None:
        return cap
    return max(min(cap, deadline - time.monotonic()), 0.5)


class LimitError(FaircertError):
    """An input larger or deeper than faircert reads (see `faircert.limits`)."""


def quoted(value: Any, limit: int = MAX_QUOTED) -> str:
    """`repr(value)` cut to `limit` characters, for error messages about untrusted input.

    Only the first characters of a string are ever formatted, so a huge or self-referencing value
    costs nothing to quote.
    """
    if hasattr(value, "dtype") and hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        value = value.item()  # a numpy number prints as the plain number it holds
    if isinstance(value, str):
        text = repr(value[: limit + 1])
    elif isinstance(value, (int, float, bool)) or value is None:
        text = _short_number(value)
    else:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def listed(names: Any, limit: int = 20) -> str:
    """The first `limit` names, each cut to `MAX_QUOTED` characters, for messages that list choices."""
    names = list(names)
    shown = ", ".join(n if isinstance(n, str) and len(n) <= MAX_QUOTED else quoted(n) for n in names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def _short_number(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"<an integer of {value.bit_length()} bits>"
    return repr(value)


def check_at_most(what: str, value: int, limit: int, where: str = "") -> None:
    """Raise `LimitError` unless `value <= limit`."""
    if value > limit:
        prefix = f"{where}: " if where else ""
        raise LimitError(f"{prefix}{what} is {value:,}, more than faircert reads ({limit:,}; see faircert.limits)")


def check_file_size(path: Path, error: type[FaircertError] = FaircertError, limit: int = MAX_FILE_BYTES) -> int:
    """The file's size in bytes, after checking it is a regular file within `limit`."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise error(f"cannot read {path}: {exc.strerror or exc}") from None
    if not path.is_file():
        raise error(f"{path}: not a regular file")
    check_at_most("the file size in bytes", size, limit, str(path))
    return size


def read_bytes(path: Path, error: type[FaircertError] = FaircertError, limit: int = MAX_FILE_BYTES) -> bytes:
    """The whole file, size-checked first."""
    check_file_size(path, error, limit)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise error(f"cannot read {path}: {exc.strerror or exc}") from None


def read_text(
    path: Path, error: type[FaircertError] = FaircertError, what: str = "text", limit: int = MAX_FILE_BYTES
) -> str:
    """The whole file as UTF-8 text, size-checked first."""
    data = read_bytes(path, error, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{path}: not a {what} file (a binary file, not UTF-8 text)") from None


def nesting_depth(text: str) -> int:
    """The deepest nesting of brackets/braces in JSON text (strings skipped), without recursion, in
    time and memory linear in the brackets (counted a block at a time)."""
    import numpy as np

    brackets = _JSON_STRING.sub("", text).encode("utf-8", "surrogatepass").translate(None, _NOT_BRACKET)
    depth = deepest = 0
    for start in range(0, len(brackets), _BLOCK):
        steps = np.frombuffer(brackets, dtype=np.uint8, count=min(_BLOCK, len(brackets) - start), offset=start)
        levels = np.cumsum(np.where((steps == ord("[")) | (steps == ord("{")), 1, -1)) + depth
        deepest, depth = max(deepest, int(levels.max())), int(levels[-1])
    return deepest


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')  # unrolled: linear and fast on long strings
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_BLOCK = 2**22


def loads_json(text: str, source: str, error: type[FaircertError] = FaircertError) -> Any:
    """`json.loads` with the nesting bounded first and huge integers refused (no recursion, no
    quadratic int conversion)."""
    import json

    if nesting_depth(text) > MAX_NESTING:
        raise LimitError(
            f"{source}: JSON nested more than {MAX_NESTING} levels deep; faircert reads at most that "
            "(see faircert.limits)"
        )
    try:
        return json.loads(text, parse_int=_bounded_int, parse_float=_finite_float, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise error(f"{source}: not a readable JSON file (not valid JSON: {str(exc)[:200]})") from None


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > 30:
        raise ValueError(f"an integer with {len(digits)} digits")
    return int(digits)


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON (numbers must be finite)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value
