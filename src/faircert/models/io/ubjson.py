"""A bounded UBJSON decoder (the format of XGBoost's `.ubj` model files).

Written here so that no native loader sees an untrusted `.ubj` file: every length is checked
against the bytes that remain before anything is allocated, nesting is bounded, and typed numeric
arrays (`[$d#L...`) become numpy arrays without a per-element loop.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ModelFormatError
from ...limits import MAX_NESTING

#: Numeric type markers and their big-endian numpy types (UBJSON stores numbers big-endian).
NUMBERS: dict[bytes, np.dtype] = {
    b"i": np.dtype(">i1"),
    b"U": np.dtype(">u1"),
    b"I": np.dtype(">i2"),
    b"l": np.dtype(">i4"),
    b"L": np.dtype(">i8"),
    b"d": np.dtype(">f4"),
    b"D": np.dtype(">f8"),
}
#: Types that take no bytes per element: a typed container of them could claim any count.
EMPTY_TYPES = (b"Z", b"T", b"F", b"N")
NOOP = b"N"


def loads_ubjson(data: bytes, source: str, what: str = "UBJSON document") -> Any:
    """The value encoded in `data`; a `ModelFormatError` ("not a readable {what}") for anything
    malformed or too deep."""
    reader = _Reader(data, source, what)
    value = reader.value(reader.marker(), 0)
    if reader.pos != len(data):
        raise reader.error(f"{len(data) - reader.pos} bytes after the end of the document")
    return value


class _Reader:
    def __init__(self, data: bytes, source: str, what: str) -> None:
        self.data, self.pos, self.source, self.what = data, 0, source, what

    def error(self, message: str) -> ModelFormatError:
        return ModelFormatError(f"{self.source}: not a readable {self.what} (UBJSON, at byte {self.pos}: {message})")

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise self.error("the file ends early (truncated?)")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def marker(self) -> bytes:
        m = self.take(1)
        while m == NOOP:
            m = self.take(1)
        return m

    def number(self, m: bytes) -> int | float:
        dtype = NUMBERS[m]
        return np.frombuffer(self.take(dtype.itemsize), dtype=dtype)[0].item()

    def length(self, m: bytes | None = None) -> int:
        m = self.marker() if m is None else m
        if m not in NUMBERS or m in (b"d", b"D"):
            raise self.error(f"a length must be an integer, got marker {m!r}")
        n = self.number(m)
        if n < 0:
            raise self.error(f"negative length {n}")
        return int(n)

    def string(self) -> str:
        n = self.length()
        try:
            return self.take(n).decode("utf-8")
        except UnicodeDecodeError:
            raise self.error("a string is not UTF-8") from None

    def value(self, m: bytes, depth: int) -> Any:
        if m in NUMBERS:
            return self.number(m)
        if m == b"Z":
            return None
        if m in (b"T", b"F"):
            return m == b"T"
        if m == b"C":
            return self.take(1).decode("latin-1")
        if m in (b"S", b"H"):
            return self.string()
        if m in (b"[", b"{"):
            if depth >= MAX_NESTING:
                raise self.error(f"nested more than {MAX_NESTING} levels deep (see faircert.limits)")
            return self.container(m, depth + 1)
        raise self.error(f"unknown type marker {m!r}")

    def container(self, m: bytes, depth: int) -> Any:
        kind = self.marker()
        typed = count = None
        if kind == b"$":
            typed = self.marker()
            if typed in EMPTY_TYPES:
                raise self.error(f"a container typed {typed!r} (elements of no size)")
            kind = self.marker()
            if kind != b"#":
                raise self.error("a typed container needs a count")
        if kind == b"#":
            count = self.length()
            # Every element takes at least one byte (a typed key at least one): bound before allocating.
            if count > len(self.data) - self.pos:
                raise self.error(f"a container of {count} elements in {len(self.data) - self.pos} remaining bytes")
        else:
            self.pos -= 1  # not a header: the first element's marker
        if m == b"[" and typed in NUMBERS:
            assert count is not None  # a typed container has a count
            dtype = NUMBERS[typed]
            raw = self.take(count * dtype.itemsize)
            return np.frombuffer(raw, dtype=dtype).astype(dtype.newbyteorder("="))
        return self.array(typed, count, depth) if m == b"[" else self.object(typed, count, depth)

    def items(self, typed: bytes | None, count: int | None, close: bytes):
        k = 0
        while count is None or k < count:
            if count is None:
                m = self.marker()
                if m == close:
                    return
                self.pos -= 1
            yield k
            k += 1

    def element(self, typed: bytes | None, depth: int) -> Any:
        return self.value(typed if typed is not None else self.marker(), depth)

    def array(self, typed: bytes | None, count: int | None, depth: int) -> list:
        return [self.element(typed, depth) for _ in self.items(typed, count, b"]")]

    def object(self, typed: bytes | None, count: int | None, depth: int) -> dict:
        out = {}
        for _ in self.items(typed, count, b"}"):
            key = self.string()
            out[key] = self.element(typed, depth)
        return out
