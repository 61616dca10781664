"""Checkpoints: a long job's state written atomically, so a killed run continues where it stood.

A checkpoint is a JSON file: the format, the job's kind, an identity (hashes of the model, the
data and the options that change the answer) and the state the job needs to continue with the
same result. It is written to a temporary file beside the target and renamed over it, so a kill at
any moment leaves the previous checkpoint or the new one, never a torn file. Resuming checks the
identity first and refuses another model, data or incompatible options in one line, from the
file's head (`HEAD_BYTES`), before the state is read. Checkpoint files are read like any untrusted
input: size (`limits.MAX_CHECKPOINT_BYTES`) and nesting bounded, plain JSON only.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import math
import os
import re
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ._version import __version__
from .errors import PropertyError
from .results.base import jsonable

FORMAT = "faircert-checkpoint"
#: the largest share of a run's time its checkpoints may take (`Checkpoint.due` waits longer)
MAX_SHARE = 0.05
VERSION = 3
#: the bytes at a checkpoint's start read first: what `save` writes before the state fits in them
HEAD_BYTES = 1 << 16


def fingerprint(obj: Any) -> str:
    """A stable hash of plain data: numpy arrays, dataclasses, mappings, sequences and scalars
    (a model IR, a domain, rows). Objects of other kinds hash by their type and repr."""
    digest = hashlib.sha256()
    _feed(digest, obj, 0)
    return digest.hexdigest()


def identity(obj: Any) -> str:
    """`fingerprint`, or for objects that nest too deeply for it (a parsed program) the hash of
    their repr."""
    try:
        return fingerprint(obj)
    except PropertyError:
        return hashlib.sha256(repr(obj).encode()).hexdigest()


def _feed(digest: Any, obj: Any, depth: int) -> None:
    if depth > 64:
        raise PropertyError("checkpoint: the object to fingerprint nests too deeply")
    if isinstance(obj, np.ndarray):
        digest.update(f"a{obj.dtype.str}{obj.shape}".encode())
        digest.update(np.ascontiguousarray(obj).tobytes())
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        digest.update(f"d{type(obj).__name__}".encode())
        for f in dataclasses.fields(obj):
            digest.update(f.name.encode())
            _feed(digest, getattr(obj, f.name), depth + 1)
    elif isinstance(obj, dict):
        digest.update(f"m{len(obj)}".encode())
        for key in sorted(obj, key=repr):
            _feed(digest, key, depth + 1)
            _feed(digest, obj[key], depth + 1)
    elif isinstance(obj, (set, frozenset)):  # in a stable order (their own depends on the process)
        digest.update(f"e{len(obj)}".encode())
        for item in sorted(obj, key=repr):
            _feed(digest, item, depth + 1)
    elif isinstance(obj, (list, tuple)):
        digest.update(f"l{len(obj)}".encode())
        for item in obj:
            _feed(digest, item, depth + 1)
    elif isinstance(obj, (str, bytes, int, float, bool, type(None), np.generic)):
        digest.update(f"s{type(obj).__name__}:{obj!r}".encode())
    else:
        digest.update(f"o{type(obj).__name__}:{obj!r}".encode())


class Checkpoint:
    """Where a job's state goes (`path`), how often (`every` seconds), and what it must match."""

    def __init__(
        self,
        path: str | Path,
        kind: str,
        identity: dict[str, str],
        every: float = 30.0,
        source: str | Path | None = None,
    ) -> None:
        self.path, self.kind, self.identity, self.every = Path(path), kind, dict(identity), float(every)
        #: where `load` reads (a resumed run may write its checkpoints elsewhere)
        self.source = Path(source) if source is not None else self.path
        self._last = time.monotonic()
        self._last_cost = 0.0
        #: checkpoints written by this run, and the seconds spent writing them
        self.saves, self.save_s = 0, 0.0

    @classmethod
    def of(cls, options: Any, kind: str, identity: Callable[[], dict[str, str]]) -> Checkpoint | None:
        """The checkpoint options ask for (`checkpoint`, `resume`, `checkpoint_every`), or None;
        `identity` is called only then (hashing a model or rows takes time)."""
        path = getattr(options, "checkpoint", None) or getattr(options, "resume", None)
        if path is None:
            return None
        return cls(path, kind, identity(), getattr(options, "checkpoint_every", 30.0), getattr(options, "resume", None))

    def due(self) -> bool:
        """Whether `every` seconds have passed since the last save, and enough more that writing
        checkpoints takes at most `MAX_SHARE` of the run (a state of a gigabyte takes seconds)."""
        return time.monotonic() - self._last >= max(self.every, self._last_cost / MAX_SHARE)

    def save(self, state: dict[str, Any], started: float | None = None) -> None:
        """Write the state atomically (a temporary file renamed over the checkpoint), with its digest;
        `started` (a `time.perf_counter()`) is when gathering the state began, counted in its cost."""
        from .files import write_atomic

        t0 = time.perf_counter() if started is None else started
        pieces = _pieces(state)
        digest = hashlib.sha256()
        for piece in pieces:
            digest.update(piece)
        body = {
            "format": FORMAT,
            "version": VERSION,
            "faircert": __version__,
            "kind": self.kind,
            "identity": self.identity,
            "written": time.time(),
            "digest": digest.hexdigest(),
        }
        head = json.dumps(body, separators=(",", ":"))[:-1] + ',"state":'

        def write(handle: Any) -> None:
            handle.flush()
            for piece in [head.encode("ascii"), *pieces, b"}\n"]:
                handle.buffer.write(piece)

        write_atomic(self.path, write)
        self._last = time.monotonic()
        self._last_cost = time.perf_counter() - t0
        self.saves += 1
        self.save_s += self._last_cost

    def load(self) -> dict[str, Any]:
        """The state a previous run saved here, after checking it is this job's: from the file's
        head first, so that another job's or a foreign file is refused without reading it all."""
        from .limits import MAX_CHECKPOINT_BYTES, check_file_size, loads_json, read_text

        path = self.source
        if not os.path.isfile(path):  # False, not an error, for a name the system refuses (too long)
            raise PropertyError(f"checkpoint not found: {path}")
        check_file_size(path, PropertyError, MAX_CHECKPOINT_BYTES)
        head = self._head(path)
        if head is not None:
            self._check(path, head)
        data = loads_json(read_text(path, PropertyError, "checkpoint", MAX_CHECKPOINT_BYTES), str(path), PropertyError)
        if not isinstance(data, dict) or not isinstance(data.get("state"), dict):
            raise PropertyError(f"{path}: not a faircert checkpoint")
        self._check(path, data)
        digest = hashlib.sha256()
        for piece in _pieces(data["state"]):
            digest.update(piece)
        if data.get("digest") != digest.hexdigest():
            raise PropertyError(
                f"{path}: the checkpoint's state does not match its digest (changed or "
                "damaged); start afresh without --resume"
            )
        return data["state"]

    @staticmethod
    def _head(path: Path) -> dict[str, Any] | None:
        """The fields before the state (which `save` writes last), from the file's first bytes;
        None where they do not parse so (a file rewritten by another program: it is read whole).
        A head that does not name the format is refused at once."""
        from .limits import loads_json

        try:
            with open(path, "rb") as handle:
                head = handle.read(HEAD_BYTES).decode("ascii", errors="replace")
        except OSError as exc:
            raise PropertyError(f"cannot read {path}: {exc.strerror or exc}") from None
        if not re.search(r'"format"\s*:\s*"' + FORMAT + '"', head):
            raise PropertyError(f"{path}: not a faircert checkpoint")
        start, state = re.match(r'\s*\{\s*"format"\s*:', head), re.search(r',\s*"state"\s*:', head)
        if start is None or state is None:
            return None
        try:
            fields = loads_json(head[start.start() : state.start()] + "}", str(path), PropertyError)
        except PropertyError:  # "state" was a key nested deeper
            return None
        return fields if isinstance(fields, dict) else None

    def _check(self, path: Path, data: dict[str, Any]) -> None:
        """Refuse a checkpoint of another format, version, kind of run, release or job."""
        from .limits import MAX_QUOTED, quoted

        kind, version = data.get("kind"), data.get("version")
        named = isinstance(kind, str) and isinstance(version, int) and isinstance(data.get("faircert"), str)
        if data.get("format") != FORMAT or not named:
            raise PropertyError(f"{path}: not a faircert checkpoint (it names no kind of run, version or release)")
        if version != VERSION or kind != self.kind:
            raise PropertyError(
                f"{path}: a checkpoint of {quoted(kind)} (version {quoted(version)}), "
                f"not of {self.kind!r} (version {VERSION})"
            )
        if data.get("faircert") != __version__:  # an engine's state may change between releases
            raise PropertyError(
                f"{path} was written by faircert {str(data['faircert'])[:MAX_QUOTED]}; this is faircert "
                f"{__version__}: start afresh without --resume, or resume with that version"
            )
        theirs: dict = data["identity"] if isinstance(data.get("identity"), dict) else {}
        differ = [k for k in self.identity if theirs.get(k) != self.identity[k]]
        if differ:
            raise PropertyError(
                f"{path} was written for another {', '.join(differ)}; resume with the same "
                "model, data and options, or start afresh without --resume"
            )


#: Engines that write checkpoints and resume from them (besides the per-row audit).
CHECKPOINTED = (
    "network-boxes",
    "network-complete",
    "tree-boxes",
    "tree-population",
    "probability-bounds",
    "program-bounds",
)


def refuse(options: Any, what: str) -> None:
    """One line for a run that asks for a checkpoint its engine (`what`) does not keep."""
    if getattr(options, "checkpoint", None) or getattr(options, "resume", None):
        raise PropertyError(
            f"checkpoints are kept for the per-row audit (rows=..., --rows) and the engines "
            f"{', '.join(CHECKPOINTED)}; this run ({what}) starts afresh: leave out checkpoint "
            "and resume"
        )


class Parts:
    """One checkpoint file shared by the refinements of one job, in the order they run (a group
    question with equalized odds refines several times): each saves and resumes its own part."""

    def __init__(self, checkpoint: Checkpoint, resume: bool) -> None:
        self.checkpoint = checkpoint
        self.states: dict[str, Any] = checkpoint.load().get("parts", {}) if resume else {}
        if not isinstance(self.states, dict) or not all(isinstance(v, dict) for v in self.states.values()):
            raise PropertyError(f"{checkpoint.source}: its parts are malformed")
        self._next = 0

    def next(self) -> Part:
        """The part of the next refinement."""
        self._next += 1
        return Part(self, str(self._next - 1))


class Part:
    """A `Checkpoint` for one refinement of a `Parts` file: `due`, `save` (the whole file) and
    `load` (its own state, or None when the file has none: the refinement starts afresh)."""

    def __init__(self, parts: Parts, name: str) -> None:
        self.parts, self.name = parts, name

    def due(self) -> bool:
        return self.parts.checkpoint.due()

    def save(self, state: dict[str, Any]) -> None:
        self.parts.states[self.name] = state
        self.parts.checkpoint.save({"parts": self.parts.states})

    def load(self) -> dict[str, Any] | None:
        return self.parts.states.get(self.name)


def rng_state(rng: np.random.Generator) -> dict[str, Any]:
    """A PCG64 generator's state as JSON (its 128-bit words in hex)."""
    st = rng.bit_generator.state
    return {
        "bit_generator": st["bit_generator"],
        "state": hex(st["state"]["state"]),
        "inc": hex(st["state"]["inc"]),
        "has_uint32": st["has_uint32"],
        "uinteger": st["uinteger"],
    }


def set_rng_state(rng: np.random.Generator, saved: Any) -> None:
    """Put a state `rng_state` wrote back into `rng` (checked: the file is untrusted)."""
    try:
        rng.bit_generator.state = {
            "bit_generator": saved["bit_generator"],
            "state": {"state": int(saved["state"], 16), "inc": int(saved["inc"], 16)},
            "has_uint32": saved["has_uint32"],
            "uinteger": saved["uinteger"],
        }
    except (TypeError, ValueError, KeyError, IndexError, OverflowError) as exc:
        raise PropertyError(f"checkpoint: its random state is malformed ({str(exc)[:80]})") from None


#: strings at least this long (arrays in base64) are spliced into the text rather than encoded
LONG = 1 << 16
#: the characters JSON writes as they are (printable ASCII but the quote and the backslash)
_VERBATIM = bytes(c for c in range(0x20, 0x7F) if c not in b'"\\')


def _pieces(state: dict[str, Any]) -> list[bytes]:
    """The state's compact JSON text (ASCII bytes), in pieces. Long strings that JSON writes as they
    are (arrays in base64) are spliced in rather than scanned by the encoder, so a state of hundreds
    of megabytes is written and digested with one copy of it."""
    long: list[bytes] = []
    marker = f"\x00{secrets.token_hex(8)}:"

    def swap(obj: Any) -> Any:
        if isinstance(obj, str) and len(obj) >= LONG and obj.isascii():
            raw = obj.encode("ascii")
            if not raw.translate(None, _VERBATIM):  # nothing the encoder would escape
                long.append(raw)
                return f"{marker}{len(long) - 1}"
        if isinstance(obj, dict):
            return {k: swap(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [swap(v) for v in obj]
        return obj

    text = json.dumps(swap(state), separators=(",", ":"), default=jsonable)
    quoted = json.dumps(marker)[:-1]  # how the encoder wrote the marker (its NUL escaped)
    parts = re.split(re.escape(quoted) + r'(\d+)"', text)
    out = [parts[0].encode("ascii")]
    for k in range(1, len(parts), 2):
        out += [b'"', long[int(parts[k])], b'"', parts[k + 1].encode("ascii")]
    return out


def pack(array: np.ndarray) -> dict[str, Any]:
    """An array as JSON: its dtype, shape and raw bytes in base64 (exact, and fast to write)."""
    array = np.ascontiguousarray(array)
    if array.dtype not in ARRAY_TYPES.values():
        raise TypeError(f"checkpoint: arrays of {array.dtype} are not stored")
    kind = next(k for k, t in ARRAY_TYPES.items() if t == array.dtype)
    return {"dtype": kind, "shape": list(array.shape), "data": base64.b64encode(array.tobytes()).decode("ascii")}


def unpack(value: Any, kind: str, width: int | None = None) -> np.ndarray:
    """An array `pack` wrote, checked: its dtype, a 1-d or (n, width) shape, its byte count, finite values."""
    shape = value.get("shape") if isinstance(value, dict) else None
    ok = (
        isinstance(shape, list)
        and value.get("dtype") == kind
        and isinstance(value.get("data"), str)
        and len(shape) == (1 if width is None else 2)
        and all(isinstance(n, int) and n >= 0 for n in shape)
        and (width is None or shape[1] == width)
    )
    if not ok:
        raise PropertyError(f"checkpoint: malformed array (want {kind}{'' if width is None else f' x {width}'})")
    try:
        raw = base64.b64decode(value["data"], validate=True)
    except ValueError:
        raise PropertyError("checkpoint: an array's data is not base64") from None
    dtype = ARRAY_TYPES[kind]
    if len(raw) != math.prod(shape or ()) * dtype.itemsize:  # exact: numpy's product of huge dims would wrap
        raise PropertyError("checkpoint: an array's data does not match its shape")
    array = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    if kind == "f8" and not np.all(np.isfinite(array)):
        raise PropertyError("checkpoint: an array holds non-finite numbers")
    return array


#: The arrays a checkpoint holds: little-endian float64 and int64.
ARRAY_TYPES = {"f8": np.dtype("<f8"), "i8": np.dtype("<i8")}
