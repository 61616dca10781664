"""Checkpoints: a long job's state written atomically, so a killed run continues where it stood.

A checkpoint is a JSON file: the format, the job's kind, an identity (hashes of the model, the
data and the options that change the answer) and the state the job needs to continue with the
same result. It is written to a temporary file beside the target and renamed over it, so a kill at
any moment leaves the previous checkpoint or the new one, never a torn file. Resuming checks the
identity first and refuses another model, data or incompatible options in one line. Checkpoint
files are read like any untrusted input: size and nesting bounded, plain JSON only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from .errors import PropertyError

FORMAT = "faircert-checkpoint"
VERSION = 1


def fingerprint(obj: Any) -> str:
    """A stable hash of plain data: numpy arrays, dataclasses, mappings, sequences and scalars
    (a model IR, a domain, rows). Objects of other kinds hash by their type and repr."""
    digest = hashlib.sha256()
    _feed(digest, obj, 0)
    return digest.hexdigest()


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

    def __init__(self, path: str | Path, kind: str, identity: dict[str, str], every: float = 30.0) -> None:
        self.path, self.kind, self.identity, self.every = Path(path), kind, dict(identity), float(every)
        self._last = time.monotonic()

    def due(self) -> bool:
        return time.monotonic() - self._last >= self.every

    def save(self, state: dict[str, Any]) -> None:
        """Write the state atomically (a temporary file renamed over the checkpoint)."""
        from .files import write_text

        body = {"format": FORMAT, "version": VERSION, "kind": self.kind, "identity": self.identity,
                "written": time.time(), "state": state}
        write_text(self.path, json.dumps(body, separators=(",", ":"), default=_plain) + "\n")
        self._last = time.monotonic()

    def load(self) -> dict[str, Any]:
        """The state a previous run saved here, after checking it is this job's."""
        from .limits import loads_json, read_text

        if not self.path.is_file():
            raise PropertyError(f"checkpoint not found: {self.path}")
        data = loads_json(read_text(self.path, PropertyError, "checkpoint"), str(self.path), PropertyError)
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("state"), dict):
            raise PropertyError(f"{self.path}: not a faircert checkpoint")
        if data.get("version") != VERSION or data.get("kind") != self.kind:
            raise PropertyError(f"{self.path}: a checkpoint of {data.get('kind')!r} (version {data.get('version')}), "
                                f"not of {self.kind!r} (version {VERSION})")
        theirs = data.get("identity") if isinstance(data.get("identity"), dict) else {}
        differ = [k for k in self.identity if theirs.get(k) != self.identity[k]]
        if differ:
            raise PropertyError(f"{self.path} was written for another {', '.join(differ)}; resume with the same "
                                "model, data and options, or start afresh without --resume")
        return data["state"]


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
