"""The pool of undecided boxes: struct-of-arrays with O(k) removal of the k heaviest."""

from __future__ import annotations

import numpy as np


class Pool:
    """Undecided boxes with their mass, refinement priority and preferred split feature, and the
    masses of their points already proven fair / unfair without knowing which points they are."""

    def __init__(self, d: int, capacity: int = 1024) -> None:
        self.d = d
        self.n = 0
        self.lo = np.empty((capacity, d))
        self.hi = np.empty((capacity, d))
        self.mass = np.empty(capacity)
        self.split = np.empty(capacity, dtype=np.int64)
        self.prio = np.empty(capacity)
        self.fair = np.empty(capacity)
        self.unfair = np.empty(capacity)
        self.peak = 0

    def __len__(self) -> int:
        return self.n

    def total(self) -> float:
        return float(self.mass[: self.n].sum())

    def credited(self) -> tuple[float, float]:
        """Masses proven fair and unfair inside the pool's boxes."""
        return float(self.fair[: self.n].sum()), float(self.unfair[: self.n].sum())

    def push(
        self,
        lo: np.ndarray,
        hi: np.ndarray,
        mass: np.ndarray,
        split: np.ndarray,
        prio: np.ndarray | None = None,
        fair: np.ndarray | None = None,
        unfair: np.ndarray | None = None,
    ) -> None:
        k = lo.shape[0]
        if self.n + k > self.lo.shape[0]:
            cap = max(2 * self.lo.shape[0], self.n + k)
            for name in ("lo", "hi"):
                arr = np.empty((cap, self.d))
                arr[: self.n] = getattr(self, name)[: self.n]
                setattr(self, name, arr)
            for name in ("mass", "split", "prio", "fair", "unfair"):
                old = getattr(self, name)
                arr = np.empty(cap, dtype=old.dtype)
                arr[: self.n] = old[: self.n]
                setattr(self, name, arr)
        s = slice(self.n, self.n + k)
        self.lo[s], self.hi[s], self.mass[s], self.split[s] = lo, hi, mass, split
        self.prio[s] = mass if prio is None else prio
        self.fair[s] = 0.0 if fair is None else fair
        self.unfair[s] = 0.0 if unfair is None else unfair
        self.n += k
        self.peak = max(self.peak, self.n)

    def pop_heaviest(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Remove and return the k boxes of highest priority (all if fewer); their credits go."""
        n = self.n
        if k >= n:
            idx = np.arange(n)
        else:
            idx = np.argpartition(self.prio[:n], n - k)[n - k :]
        out = (self.lo[idx].copy(), self.hi[idx].copy(), self.mass[idx].copy(), self.split[idx].copy())
        # fill the holes below the new end with the kept boxes above it
        keep_n = n - len(idx)
        taken = np.zeros(n, dtype=bool)
        taken[idx] = True
        holes = np.flatnonzero(taken[:keep_n])
        movers = np.flatnonzero(~taken[keep_n:]) + keep_n
        for arr in (self.lo, self.hi, self.mass, self.split, self.prio, self.fair, self.unfair):
            arr[holes] = arr[movers]
        self.n = keep_n
        return out

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.lo[: self.n], self.hi[: self.n], self.mass[: self.n]
