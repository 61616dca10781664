"""Sums of box measures that do not depend on the order of their terms.

A refinement split over workers adds the same measures in another order than one process does;
float addition is not associative, so the shares could differ in their last bits. `ExactSum` keeps
the sum exactly (an integer part for integral terms, as on integer grids, and Shewchuk's
non-overlapping partials for the rest) and rounds once when read, so any split gives the same float.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

_EXACT_INT = 2.0**53  # integral float sums below this are exact in any order
_LIMB = 2.0**42  # larger integral floats are split in two limbs below this, summed as int64
_MAX_SPLIT = 2.0**84  # ... up to this size, for arrays of fewer than 2^21 values (no overflow)
_MAX_DIGITS = 400  # of a saved integer part (a float's integral value has at most 309)
_MAX_PARTIALS = 100


class ExactSum:
    """An exact running sum of floats; `float(s)` is its correctly rounded value."""

    def __init__(self) -> None:
        self.whole = 0  # the integral terms, exactly
        self.partials: list[float] = []  # the others: non-overlapping floats summing to them exactly

    def add(self, values: np.ndarray | Iterable[float]) -> None:
        v = np.asarray(values, dtype=np.float64).ravel()
        if not len(v):
            return
        if np.all(v == np.trunc(v)):
            if float(np.abs(v).sum()) < _EXACT_INT:
                self.whole += int(v.sum())  # every partial sum is an integer below 2^53: exact
                return
            if float(np.abs(v).max()) < _MAX_SPLIT and len(v) < 2**21:
                high = np.floor(v / _LIMB)  # exact: a power of two, then an integral float
                low = v - high * _LIMB  # exact: an integer in [0, 2^42)
                self.whole += (int(high.astype(np.int64).sum()) << 42) + int(low.astype(np.int64).sum())
                return
        for x in v.tolist():
            self._add_one(x)

    def _add_one(self, x: float) -> None:
        if x == int(x) and abs(x) < _EXACT_INT:
            self.whole += int(x)
            return
        i = 0
        for y in self.partials:  # Shewchuk: carry x through the partials, keeping each rounding error
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo:
                self.partials[i] = lo
                i += 1
            x = hi
        self.partials[i:] = [x]

    def absorb(self, other: ExactSum) -> None:
        self.whole += other.whole
        for x in other.partials:
            self._add_one(x)

    def __sub__(self, other: ExactSum) -> ExactSum:
        """The exact difference (rounded once when read, like any sum)."""
        out = ExactSum()
        out.absorb(self)
        out.whole -= other.whole
        for x in other.partials:
            out._add_one(-x)
        return out

    def state(self) -> dict[str, Any]:
        """The sum exactly, as JSON (a checkpoint's): the integer part in decimal, the partials as hex floats."""
        return {"whole": str(self.whole), "partials": [x.hex() for x in self.partials]}

    @classmethod
    def of_state(cls, state: dict[str, Any]) -> ExactSum:
        """The sum `state` wrote; ValueError when it holds no finite sum in that form."""
        whole, partials = state.get("whole"), state.get("partials")
        # bounded: an exact sum of float64 terms has at most about 40 partials
        if not (
            isinstance(whole, str)
            and len(whole) <= _MAX_DIGITS
            and isinstance(partials, list)
            and len(partials) <= _MAX_PARTIALS
            and all(isinstance(p, str) and len(p) <= 32 for p in partials)
        ):
            raise ValueError("not an exact sum")
        out = cls()
        out.whole = int(whole)
        # as saved: each step of `_add_one` is exact for any partials, and `float` rounds them once
        out.partials = [float.fromhex(p) for p in partials]
        if not all(math.isfinite(x) for x in out.partials):
            raise ValueError("an exact sum with a non-finite part")
        return out

    def __float__(self) -> float:
        # the integer part as an exact sum of floats (each step takes its leading 53 bits), then one rounding
        parts, w = list(self.partials), self.whole
        while w:
            head = float(w)
            parts.append(head)
            w -= int(head)
        return math.fsum(parts)
