"""The open boxes of a network refinement on its device: the whole loop stays there.

On a device (`arrays.Backend`: torch on a GPU, or on the CPU) a step's boxes are taken from, and
its open boxes put back into, flat arrays that live on the device beside the bounds
(`ResidentFrontier`), instead of the host's heap of encoded chunks (`boxes.frontier.Frontier`):
the host then only adds up each step's measures and keeps the evidence, and no box crosses to
the host and back between steps.

The boxes are kept compactly: on a domain of integer features, each coordinate as its offset from
the domain's lower end in the smallest of int16 or int32 that holds it (exactly: checked where
they are stored), else as float64. A step takes the open boxes of highest priority above the
level (`top`: a selection, not a sort), as the host's frontier does, so the boxes settled by the
end of a level are the same (`boxes.shards`). Checkpoints and the open boxes a result reports are
the host's encoded records (`boxes.frontier.BoxCodec`), as on numpy: a checkpoint written on a
device resumes on numpy, and the other way round.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..boxes.frontier import BoxCodec, Entry, Key, OpenParts
from . import arrays
from .arrays import namespace, to_numpy

#: open boxes per entry the host gets (checkpoints, results): read one at a time
ENTRY_ROWS = 1 << 16


def _offsets(codec: BoxCodec) -> np.dtype | None:
    """The signed integer type that holds the offsets of every feature where all are integer ones
    (the codec's grid kind, whose unsigned codes say how far they reach), else None (float64)."""
    if not codec.width or any(kind != "grid" for kind in codec.kind):
        return None
    widest = max(field[0].itemsize for field in (codec.dtype.fields or {}).values())
    return np.dtype(np.int16) if widest == 1 else np.dtype(np.int32) if widest == 2 else None


class ResidentFrontier:
    """Open boxes (lo, hi and per-box data of the dtypes `open_data`) on the device `put` moves
    arrays to, taken by `key`, largest first, in chunks of up to `chunk` boxes. Offers what a shard
    uses of `boxes.frontier.Frontier`; `codec` encodes the boxes handed to the host.

    The rows live in buffers that grow by doubling, up to `limit_bytes` (the shard stops refining
    once the open boxes take that much; a push that needs more gets just the rows it needs); a box
    taken is marked (its key set to -inf) rather than removed, and the buffers are compacted when a
    push finds them full: a step then costs a selection over the keys, not a copy of every open
    box."""

    def __init__(
        self,
        chunk: int,
        codec: BoxCodec,
        key: Key,
        put: Callable[[Any], Any],
        open_data: Sequence[Any],
        limit_bytes: int,
    ) -> None:
        self.chunk, self.codec, self.key, self.put, self.limit_bytes = chunk, codec, key, put, limit_bytes
        self.open_data = tuple(np.dtype(d) for d in open_data)
        self.code = _offsets(codec)
        self.origin = put(codec.dlo) if self.code is not None else None  # the offsets' zero, on the device
        self.arrays: tuple[Any, ...] = ()  # buffers: lo and hi (as stored), then the per-box data
        self.keys: Any = None  # a buffer of the rows' keys, -inf for a row taken
        self.used = 0  # rows written (open or taken)
        self.count = 0  # open boxes

    def __bool__(self) -> bool:
        return self.count > 0

    @property
    def nbytes(self) -> int:
        """The bytes the buffers take (their capacity: what the device holds)."""
        return sum(int(a.nbytes) for a in self.arrays) + (0 if self.keys is None else int(self.keys.nbytes))

    # ----- the stored form ---------------------------------------------------------------------
    def _encode(self, lo: Any, hi: Any) -> tuple[Any, Any]:
        """The boxes' corners as stored, checked exact (one read from the device for both)."""
        if self.code is None:
            return lo, hi
        xp = namespace(lo)
        offsets = (lo - self.origin, hi - self.origin)
        codes = tuple(arrays.astype(xp, off, self.code) for off in offsets)
        exact = [xp.all(arrays.astype(xp, c, np.float64) == off) for c, off in zip(codes, offsets)]
        if not bool(exact[0] & exact[1]):
            raise ValueError("a box coordinate off its integer grid")
        return codes

    def _decode(self, codes: Any) -> Any:
        if self.code is None:
            return codes
        return arrays.astype(namespace(codes), codes, np.float64) + self.origin

    def _make_room(self, n: int, like: tuple[Any, ...]) -> None:
        """Room for n more rows: the open rows moved to the front when at least half the rows are
        taken ones, else buffers of twice the size (within `limit_bytes`; at least `count + n`
        rows)."""
        capacity = 0 if self.keys is None else int(self.keys.shape[0])
        if self.used + n <= capacity:
            return
        xp = namespace(like[0])
        live = None if self.keys is None else xp.flatnonzero(self.keys[: self.used] > -np.inf)
        if self.count + n <= capacity and 2 * self.count <= self.used:
            new_keys, new_arrays = self.keys, self.arrays
        else:
            row = 8 + sum(int(a[:1].nbytes) for a in like)  # a key and a box's arrays
            size = max(min(2 * capacity, self.limit_bytes // row), self.count + n, 1024)
            new_keys = arrays.zeros(xp, size, like[0])
            new_arrays = tuple(xp.zeros((size,) + tuple(a.shape[1:]), dtype=a.dtype, like=a) for a in like)
        if live is not None:
            new_keys[: self.count] = self.keys[live]
            for old, new in zip(self.arrays, new_arrays):
                new[: self.count] = old[live]
        self.keys, self.arrays, self.used = new_keys, new_arrays, self.count

    # ----- what a shard calls ------------------------------------------------------------------
    def push(self, *boxes: Any) -> None:
        """Add boxes (lo, hi, then their per-box data; none: zeros, a box not bounded yet)."""
        if not len(boxes[0]):
            return
        boxes = tuple(self.put(a) for a in boxes)
        n = boxes[0].shape[0]
        xp = namespace(boxes[0])
        if len(boxes) == 2:
            boxes += tuple(arrays.zeros(xp, n, boxes[0], d) for d in self.open_data)
        keys = self.key(*boxes)
        stored = self._encode(boxes[0], boxes[1]) + boxes[2:]
        self._make_room(n, stored)
        self.keys[self.used : self.used + n] = keys
        for buffer, rows in zip(self.arrays, stored):
            buffer[self.used : self.used + n] = rows
        self.used += n
        self.count += n

    def largest(self) -> float:
        """The key of the largest open box (0 when none)."""
        return float(self.keys[: self.used].max()) if self.count else 0.0

    def count_above(self, tau: float) -> int:
        return int((self.keys[: self.used] > tau).sum()) if self.count else 0

    def pop_above(self, tau: float, limit: int | None = None) -> tuple[Any, ...]:
        """Up to `chunk` (or `limit`, if smaller) of the boxes of largest key above `tau`, decoded
        (lo, hi, then their per-box data), on the device."""
        cap = self.chunk if limit is None else max(1, min(self.chunk, limit))
        if not self.count:
            return self._rows(slice(0, 0))
        keys = self.keys[: self.used]
        xp = namespace(keys)
        above = keys > tau
        rows = arrays.top(xp, keys, cap) if int(above.sum()) > cap else xp.flatnonzero(above)
        out = self._rows(rows)
        keys[rows] = -np.inf
        self.count -= int(rows.shape[0])
        return out

    def pop_encoded(self, tau: float, limit: int | None = None) -> Entry:
        """`pop_above`'s boxes brought to the host and encoded: for another shard (`push_encoded`)."""
        lo, hi, *data = (to_numpy(a) for a in self.pop_above(tau, limit))
        return (self.codec.encode(lo, hi), *data)

    def _rows(self, rows: Any) -> tuple[Any, ...]:
        lo, hi, *data = (a[: self.used][rows] for a in self.arrays)
        return (self._decode(lo), self._decode(hi), *data)

    def _entries(self) -> list[Entry]:
        """The open boxes as the host keeps them: encoded records with their per-box data."""
        if not self.count:
            return []
        live = to_numpy(namespace(self.keys).flatnonzero(self.keys[: self.used] > -np.inf))
        out = []
        for start in range(0, len(live), ENTRY_ROWS):
            at = self.put(live[start : start + ENTRY_ROWS])
            lo, hi, *data = (to_numpy(a) for a in self._rows(at))
            out.append((self.codec.encode(lo, hi), *data))
        return out

    def take_all(self) -> list[Entry]:
        """Remove and return every open box, as encoded entries on the host."""
        entries = self._entries()
        self.arrays, self.keys, self.used, self.count = (), None, 0, 0
        return entries

    def push_encoded(self, entry: Entry) -> None:
        """Add boxes the host holds encoded (`take_all`, a checkpoint, another shard)."""
        self.push(*self._decoded(entry))

    def _decoded(self, entry: Entry) -> tuple[np.ndarray, ...]:
        return self.codec.decode(entry[0]) + tuple(entry[1:])

    def parts(self) -> OpenParts:
        """Every open box, as the host keeps them (encoded entries, decoded when read)."""
        return OpenParts(self.codec, self._entries())
