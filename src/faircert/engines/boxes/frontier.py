"""The open boxes of a tree-ensemble refinement, largest first, and the memory they may take.

Boxes are refined largest first, so that the bounds tighten fastest. On large ensembles the open
boxes and the unfair pieces found grow with the run time (millions of boxes, gigabytes, within a
minute or two), so a refinement also stops, as at its time limit, once it holds `MAX_STORED_BOXES`
boxes; the result then says so ("memory_limited").
"""

from __future__ import annotations

import heapq

import numpy as np

#: Open boxes plus unfair pieces a refinement may hold (peak memory: benchmarks/results/trees.md).
MAX_STORED_BOXES = 5_000_000


class Frontier:
    """Open boxes as row-aligned arrays (lo, hi and any per-box data), in chunks, largest first."""

    def __init__(self, free: np.ndarray, chunk: int) -> None:
        self.free, self.chunk = free, chunk
        self.heap: list = []
        self.count = 0
        self.tick = 0

    def __bool__(self) -> bool:
        return bool(self.heap)

    def size(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return np.prod(np.where(self.free, hi - lo, 1.0), axis=1)

    def push(self, *arrays: np.ndarray) -> None:
        """Add boxes (arrays[0] = lo, arrays[1] = hi, then per-box data with the same rows)."""
        if not len(arrays[0]):
            return
        size = self.size(arrays[0], arrays[1])
        order = np.argsort(-size, kind="stable")
        arrays, size = tuple(a[order] for a in arrays), size[order]
        self.count += len(size)
        for k in range(0, len(size), self.chunk):  # a chunk is keyed by its largest box
            heapq.heappush(self.heap, (-float(size[k]), self.tick, tuple(a[k:k + self.chunk] for a in arrays)))
            self.tick += 1

    def pop(self) -> tuple[np.ndarray, ...]:
        """The largest chunks, merged up to about `chunk` boxes."""
        parts = [heapq.heappop(self.heap)[2]]
        count = len(parts[0][0])
        while self.heap and count + len(self.heap[0][2][0]) <= self.chunk:
            parts.append(heapq.heappop(self.heap)[2])
            count += len(parts[-1][0])
        part = parts[0] if len(parts) == 1 else tuple(np.concatenate(a) for a in zip(*parts))
        self.count -= len(part[0])
        return part

    def parts(self) -> list[tuple[np.ndarray, ...]]:
        """Every open chunk."""
        return [e[2] for e in self.heap]


def over_memory(frontier: Frontier, pieces: int, acc: dict) -> bool:
    """Whether the refinement holds too many boxes to go on (recorded in `acc`)."""
    if frontier.count + pieces > MAX_STORED_BOXES:
        acc["memory_limited"] = True
        return True
    return False
