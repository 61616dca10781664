"""Draws keyed by boxes: a box draws the same points in any batch, on any device.

A box's key comes from the run's seed and its coordinates (`box_keys`); its probes' keys from its
key and their number (`probe_keys`); and the k-th call's draws for a key from the key and k alone
(`BoxDraws`, a splitmix64 counter generator). So under a box budget what settling a box gives does
not depend on how the boxes were batched, nor on where they were settled.

On numpy the arithmetic is uint64's, wrapping. torch has no uint64 arithmetic: on its tensors the
same bits are computed in int64, whose additions and products wrap alike, with right shifts made
logical by a mask; keys, draws and points are then bit for bit numpy's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import arrays
from .arrays import namespace

KEY_ROWS = 8192  # boxes keyed at once (`box_keys`)
PROBES = 4  # random points tried per undecided box
_GOLDEN, _MUL1, _MUL2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


class BoxDraws:
    """Uniform draws in [0, 1) for rows keyed by 64-bit integers (one key per row): the k-th call's
    draws for a row depend only on its key and k, so a box draws the same points in any batch.
    Stands in for `numpy.random.Generator.random`; keys and draws on the keys' device."""

    def __init__(self, keys: Any) -> None:
        self.keys = keys.astype(np.uint64) if namespace(keys) is np else keys
        self.calls = 0

    def random(self, shape: int | tuple[int, ...]) -> Any:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        assert shape[0] == len(self.keys), "one key per row"
        cols = int(np.prod(shape[1:], dtype=np.int64))
        self.calls += 1
        if namespace(self.keys) is np:
            counter = np.arange(1, cols + 1, dtype=np.uint64) + np.uint64(self.calls << 32)
            bits = _mix(self.keys[:, None] ^ _mix(counter)[None, :])
            out: np.ndarray = (bits >> np.uint64(11)).astype(np.float64) * 2.0**-53
            return out.reshape(shape)
        counter = arrays.arange(arrays.TorchOps, cols, like=self.keys) + (1 + (self.calls << 32))
        bits = _mix(self.keys[:, None] ^ _mix(counter)[None, :])
        return arrays.astype(arrays.TorchOps, _shift_right(bits, 11), np.float64).reshape(shape) * 2.0**-53


def _mix(x: Any) -> Any:
    """splitmix64's finaliser: on numpy's uint64, or on torch's int64 (the same bits)."""
    if namespace(x) is not np:
        x = x + _signed(_GOLDEN)
        x = (x ^ _shift_right(x, 30)) * _signed(_MUL1)
        x = (x ^ _shift_right(x, 27)) * _signed(_MUL2)
        return x ^ _shift_right(x, 31)
    with np.errstate(over="ignore"):
        x = (x + np.uint64(_GOLDEN)).astype(np.uint64)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(_MUL1)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(_MUL2)
        return x ^ (x >> np.uint64(31))


def _signed(c: int) -> int:
    """The int64 with the bits of the uint64 c."""
    return c - (1 << 64) if c >= 1 << 63 else c


def _shift_right(x: Any, k: int) -> Any:
    """A logical right shift of int64 bits (torch's is arithmetic: the sign's copies masked off)."""
    return (x >> k) & ((1 << (64 - k)) - 1)


def box_keys(seed: int, lo: Any, hi: Any) -> Any:
    """A 64-bit key per box from the run's seed and the box's coordinates: the coordinates' bits
    weighted by odd constants, added (wrapping), and mixed with the seed. In blocks of `KEY_ROWS`
    boxes, whose temporaries stay in reused memory."""
    xp = namespace(lo)
    if len(lo) > KEY_ROWS:
        return xp.concatenate(
            [box_keys(seed, lo[s : s + KEY_ROWS], hi[s : s + KEY_ROWS]) for s in range(0, len(lo), KEY_ROWS)]
        )
    if xp is not np:
        bits = xp.float_bits(xp.concatenate([lo, hi], axis=1))
        weights = _mix(arrays.arange(xp, bits.shape[1], like=bits)) | 1
        folded = (bits * weights).sum(axis=1)
        return _mix(folded ^ _mix(xp.full(1, _signed(seed & (2**64 - 1)), like=bits)))
    bits = np.ascontiguousarray(np.concatenate([lo, hi], axis=1), dtype=np.float64).view(np.uint64)
    weights = _mix(np.arange(bits.shape[1], dtype=np.uint64)) | np.uint64(1)
    with np.errstate(over="ignore"):
        folded = (bits * weights).sum(axis=1, dtype=np.uint64)
    keys: np.ndarray = _mix(folded ^ _mix(np.full(1, seed & (2**64 - 1), dtype=np.uint64)))
    return keys


def probe_keys(keys: Any) -> Any:
    """The keys of each box's `PROBES` probes, probe-major (probe k of box i at k * n + i)."""
    xp = namespace(keys)
    n = len(keys)
    if xp is np:
        return _mix(np.tile(keys, PROBES) ^ np.repeat(np.arange(PROBES, dtype=np.uint64), n))
    return _mix(xp.tile(keys, PROBES) ^ xp.repeat(arrays.arange(xp, PROBES, like=keys), n, axis=0))
