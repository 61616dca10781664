"""The open boxes of a tree-ensemble refinement, largest first, compactly stored, and the memory they
may take.

Boxes are refined largest first, so that the bounds tighten fastest. On large ensembles the open
boxes and the unfair boxes found grow with the run time (tens of millions of boxes within minutes),
so a refinement also stops, as at its time limit, once the arrays it keeps take the run's memory
limit (`memory.limit()`, per process); the result then says so ("memory_limited").

Stored boxes are encoded by a `BoxCodec`: each coordinate as the smallest unsigned integer that
holds it (an index into the feature's sorted table of possible values where the refinement only
cuts at known positions, else the offset on an integer grid) or as float64 (real features with no
table). Boxes are decoded to float64 where a chunk is processed.
"""

from __future__ import annotations

import base64
import heapq
from collections.abc import Callable, Sequence
from typing import Any, overload

import numpy as np

#: An encoded chunk of open boxes: their records, then per-box data arrays (rows aligned).
Entry = tuple[np.ndarray, ...]


def _uint(n: int) -> np.dtype:
    """The smallest unsigned integer type holding 0..n."""
    for dt in (np.uint8, np.uint16, np.uint32):
        if n <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.uint64)


class BoxCodec:
    """Boxes (lo, hi: float64 rows) as records of compact columns, exactly.

    Per feature: with a `table` (sorted float64 values every coordinate is one of), the index into
    it; else on an integer grid (`discrete`), the offset from the domain's lower end; else float64.
    `encode` checks that it is exact (a value outside the table or grid raises ValueError).
    """

    def __init__(
        self, dlo: np.ndarray, dhi: np.ndarray, discrete: np.ndarray, tables: Sequence[np.ndarray | None] | None = None
    ) -> None:
        n = len(dlo)
        self.dlo = np.asarray(dlo, dtype=np.float64)
        self.tables = list(tables) if tables is not None else [None] * n
        fields = []
        self.kind = []
        for f in range(n):
            t = self.tables[f]
            if t is not None:
                self.kind.append("table")
                dt = _uint(len(t) - 1)
            elif discrete[f] and np.isfinite(dhi[f] - dlo[f]) and dhi[f] - dlo[f] < 2.0**53:
                self.kind.append("grid")
                dt = _uint(int(dhi[f] - dlo[f]))
            else:
                self.kind.append("real")
                dt = np.dtype(np.float64)
            fields += [(f"l{f}", dt), (f"h{f}", dt)]
        self.dtype = np.dtype(fields)
        self.width = n

    @classmethod
    def for_cuts(
        cls, dlo: np.ndarray, dhi: np.ndarray, discrete: np.ndarray, node_feat: np.ndarray, node_bound: np.ndarray
    ) -> BoxCodec:
        """A codec for boxes cut only at the given (feature, boundary) pairs inside the domain box."""
        tables = []
        for f in range(len(dlo)):
            b = node_bound[node_feat == f]
            tables.append(np.unique(np.concatenate([[dlo[f], dhi[f]], b[np.isfinite(b)]])))
        return cls(dlo, dhi, discrete, tables)

    @property
    def bytes_per_box(self) -> int:
        return self.dtype.itemsize

    def _enc(self, f: int, v: np.ndarray) -> np.ndarray:
        kind = self.kind[f]
        if kind == "real":
            return v
        if kind == "table":
            t = self.tables[f]
            assert t is not None  # a table feature has its cut positions
            idx = np.minimum(np.searchsorted(t, v), len(t) - 1)
            if not np.array_equal(t[idx], v):
                raise ValueError(f"feature {f}: a box coordinate outside its table of cut positions")
            return idx
        off = v - self.dlo[f]
        code: np.ndarray = off.astype(self.dtype[f"l{f}"])
        if not np.array_equal(code, off):
            raise ValueError(f"feature {f}: a box coordinate off its integer grid")
        return code

    def encode(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        out = np.empty(len(lo), dtype=self.dtype)
        for f in range(self.width):
            out[f"l{f}"] = self._enc(f, lo[:, f])
            out[f"h{f}"] = self._enc(f, hi[:, f])
        return out

    def _dec(self, f: int, code: np.ndarray) -> np.ndarray:
        kind = self.kind[f]
        if kind == "real":
            return code
        if kind == "table":
            table = self.tables[f]
            assert table is not None  # a table feature has its cut positions
            values: np.ndarray = table[code]
            return values
        offsets: np.ndarray = code + self.dlo[f]
        return offsets

    def decode(self, rec: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo = np.empty((len(rec), self.width))
        hi = np.empty((len(rec), self.width))
        for f in range(self.width):
            lo[:, f] = self._dec(f, rec[f"l{f}"])
            hi[:, f] = self._dec(f, rec[f"h{f}"])
        return lo, hi


class RawBoxes:
    """The identity codec: boxes kept as they are (lo, hi float64 rows in one array)."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.bytes_per_box = 16 * width
        self.dtype = np.dtype((np.float64, (2 * width,)))  # a record: one row (lo, hi)

    def encode(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return np.concatenate([lo, hi], axis=1)

    def decode(self, rec: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return rec[:, : self.width], rec[:, self.width :]


def records_text(arrays: Sequence[np.ndarray]) -> str:
    """The records of these arrays (encoded boxes, or any rows) in order, as text for a checkpoint:
    their bytes, little-endian, in base64 (an encoded box takes a few bytes where its decoded rows
    take 16 per feature). Joined as bytes: concatenating structured arrays is much slower."""
    raw = b"".join(np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes() for a in arrays)
    return base64.b64encode(raw).decode("ascii")


def text_records(text: str, dtype: np.dtype, rows: int) -> np.ndarray:
    """The `rows` records of `dtype` that `records_text` wrote; ValueError when the text is not that
    (its values are the caller's to check: decode them, compare them with the domain)."""
    dtype = np.dtype(dtype)
    if not (isinstance(text, str) and type(rows) is int and rows >= 0):
        raise ValueError("malformed records")
    raw = base64.b64decode(text, validate=True)
    if len(raw) != rows * dtype.itemsize:
        raise ValueError("records whose bytes do not match their count")
    return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).copy()


#: What orders open boxes: a key per box from its decoded arrays (lo, hi, then per-box data).
Key = Callable[..., np.ndarray]


class Frontier:
    """Open boxes with any per-box data (row-aligned arrays), taken largest first in chunks of up to
    `chunk` boxes; the boxes encoded by `codec` (float64 rows without one). "Largest" is by `key`
    (by default the box's size over the `free` features). Boxes are stored sorted in entries of
    `entry_boxes` (default `chunk`), each keyed by its largest: the smaller the entries, the closer
    a chunk taken is to the largest boxes of all, when the boxes pushed together differ widely."""

    def __init__(
        self,
        free: np.ndarray,
        chunk: int,
        codec: BoxCodec | None = None,
        key: Key | None = None,
        entry_boxes: int | None = None,
    ) -> None:
        self.free, self.chunk = free, chunk
        self.entry_boxes = entry_boxes or chunk
        self.codec = codec if codec is not None else RawBoxes(len(free))
        self.key: Key = key if key is not None else self.size
        self.heap: list[tuple[float, int, Entry]] = []
        self.count = 0
        self.nbytes = 0
        self.tick = 0

    def __bool__(self) -> bool:
        return bool(self.heap)

    def size(self, lo: np.ndarray, hi: np.ndarray, *data: np.ndarray) -> np.ndarray:
        """Each box's size over the free features (its per-box data aside)."""
        sizes: np.ndarray = np.prod(np.where(self.free, hi - lo, 1.0), axis=1)
        return sizes

    def push(self, *arrays: np.ndarray) -> None:
        """Add boxes (arrays[0] = lo, arrays[1] = hi, then per-box data with the same rows)."""
        if not len(arrays[0]):
            return
        size = self.key(*arrays)
        order = np.argsort(-size, kind="stable")
        lo, hi, size = arrays[0][order], arrays[1][order], size[order]
        extra = tuple(a[order] for a in arrays[2:])
        self.count += len(size)
        step = self.entry_boxes
        records = self.codec.encode(lo, hi) if step < len(size) else None
        for k in range(0, len(size), step):  # an entry is keyed by its largest box
            e = k + step
            if records is None:
                entry = (self.codec.encode(lo[k:e], hi[k:e]),) + tuple(a[k:e] for a in extra)
            else:  # encoded at once, stored as copies: a view would keep the whole batch alive
                entry = tuple(a[k:e].copy() for a in (records,) + extra)
            self.nbytes += sum(a.nbytes for a in entry)
            heapq.heappush(self.heap, (-float(size[k]), self.tick, entry))
            self.tick += 1

    def _decoded(self, entry: Entry) -> tuple[np.ndarray, ...]:
        return self.codec.decode(entry[0]) + entry[1:]

    def pop(self) -> tuple[np.ndarray, ...]:
        """The largest chunks, merged up to about `chunk` boxes, decoded (lo, hi, then per-box data)."""
        parts = [heapq.heappop(self.heap)[2]]
        count = len(parts[0][0])
        while self.heap and count + len(self.heap[0][2][0]) <= self.chunk:
            parts.append(heapq.heappop(self.heap)[2])
            count += len(parts[-1][0])
        part = parts[0] if len(parts) == 1 else tuple(np.concatenate(a) for a in zip(*parts))
        self.count -= len(part[0])
        self.nbytes -= sum(sum(a.nbytes for a in p) for p in parts)
        return self._decoded(part)

    def largest(self) -> float:
        """The key of the largest open box (0 when none)."""
        return -self.heap[0][0] if self.heap else 0.0

    def pop_above(self, tau: float, limit: int | None = None) -> tuple[np.ndarray, ...]:
        """Up to `chunk` (or `limit`, if smaller) of the largest boxes larger than `tau`, decoded;
        the rest of their chunks stays. Chunks are sorted, so the boxes taken are a prefix of each."""
        parts, count = [], 0
        cap = self.chunk if limit is None else max(1, min(self.chunk, limit))
        while self.heap and -self.heap[0][0] > tau and count < cap:
            _, _, entry = heapq.heappop(self.heap)
            self.count -= len(entry[0])
            self.nbytes -= sum(a.nbytes for a in entry)
            decoded = self._decoded(entry)
            n = len(entry[0])
            if n <= cap - count and self.key(*(a[-1:] for a in decoded))[0] > tau:
                parts.append(decoded)  # the whole chunk (its smallest box too) is above tau
                count += n
                continue
            size = self.key(*decoded)
            take = min(int(np.count_nonzero(size > tau)), cap - count)
            parts.append(tuple(a[:take] for a in decoded))
            count += take
            if take < len(size):  # the smaller boxes go back, still encoded, keyed by their largest
                rest = tuple(a[take:] for a in entry)
                self.count += len(rest[0])
                self.nbytes += sum(a.nbytes for a in rest)
                heapq.heappush(self.heap, (-float(size[take]), self.tick, rest))
                self.tick += 1
        return parts[0] if len(parts) == 1 else tuple(np.concatenate(a) for a in zip(*parts))

    def pop_encoded(self, tau: float, limit: int | None = None) -> tuple[np.ndarray, ...]:
        """`pop_above`'s boxes encoded, with their per-box data: for another shard (`push_encoded`)."""
        lo, hi, *data = self.pop_above(tau, limit)
        return (self.codec.encode(lo, hi), *data)

    def count_above(self, tau: float) -> int:
        """The boxes in entries keyed above `tau` (at least those above it: an entry is keyed by
        its largest box)."""
        return sum(len(e[2][0]) for e in self.heap if -e[0] > tau)

    def take_all(self) -> list[tuple[np.ndarray, ...]]:
        """Remove and return every open chunk, encoded."""
        entries = [e[2] for e in self.heap]
        self.heap, self.count, self.nbytes = [], 0, 0
        return entries

    def push_encoded(self, entry: tuple[np.ndarray, ...]) -> None:
        """Add boxes already encoded by this frontier's codec (any order)."""
        self.push(*self._decoded(entry))

    def parts(self) -> OpenParts:
        """Every open chunk, decoded when read."""
        return OpenParts(self.codec, [e[2] for e in self.heap])


class OpenParts(Sequence[tuple[Any, ...]]):
    """Chunks of encoded boxes read as decoded tuples (lo, hi, then per-box data), one at a time:
    millions of open boxes stay compact until a chunk is used."""

    def __init__(
        self,
        codec: BoxCodec | RawBoxes,
        entries: list[Entry],
        post: Callable[[tuple[np.ndarray, ...]], Any] | None = None,
    ) -> None:
        self.codec, self.entries, self.post = codec, entries, post

    def __len__(self) -> int:
        return len(self.entries)

    @overload
    def __getitem__(self, k: int) -> tuple[Any, ...]: ...
    @overload
    def __getitem__(self, k: slice) -> list[tuple[Any, ...]]: ...
    def __getitem__(self, k: int | slice) -> tuple[Any, ...] | list[tuple[Any, ...]]:
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        e = self.entries[k]
        out = self.codec.decode(e[0]) + e[1:]
        return self.post(out) if self.post is not None else out

    def map(self, post: Callable[[tuple[np.ndarray, ...]], Any]) -> OpenParts:
        """The same chunks with `post` applied to each decoded tuple."""
        return OpenParts(self.codec, self.entries, post)

    @property
    def nbytes(self) -> int:
        return sum(sum(a.nbytes for a in e) for e in self.entries)
