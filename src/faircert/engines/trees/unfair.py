"""The proven unfair region of the epsilon-0 refinement, each settled box stored once.

A settled box B of the non-protected features is unfair in every slice (protected combination) v
whose label is confident and decided opposite to some other slice's: the region holds B x {v} for
each such v, and the twin of every point of B x {v} is the same point in the first slice whose label
is decided opposite to v's. So B is kept once (compactly encoded), with the set of its unfair slices
and its labels as bit masks and, per label, the index of that first opposite slice: exactly the
pieces (B, v) with their twins, in a fraction of the memory.

Where only counterexamples are wanted (`verify`), the store can keep just the `keep` largest boxes,
which hold the `keep` largest pieces; testing mode keeps the whole region.
"""

from __future__ import annotations

import numpy as np

from ...errors import PropertyError
from ..boxes.frontier import BoxCodec, RawBoxes, _uint, records_text, text_records
from .boxes import uniform_points


class UnfairBoxes:
    """Unfair boxes (the non-protected features; the protected ones at the domain's range), each
    with its unfair slices (`unfair`: boxes x slices) and labelled-positive slices, and the first
    slice labelled -1 (the twin of its positive unfair slices) and +1 (of its negative ones)."""

    def __init__(
        self,
        codec: BoxCodec | RawBoxes,
        free: np.ndarray,
        slo: np.ndarray,
        prot: list[int],
        discrete: np.ndarray,
        keep: int | None = None,
    ) -> None:
        self.codec, self.free, self.slo, self.prot, self.discrete = codec, free, slo, prot, discrete
        self.keep = keep
        self.n_sl = len(slo)
        self.sl_dtype = _uint(max(0, self.n_sl - 1))
        self.chunks: list[tuple[np.ndarray, ...]] = []
        self.boxes = 0  # boxes stored
        self.pieces = 0  # (box, unfair slice) pairs found (stored or not)
        self.found = 0  # boxes found
        self.nbytes = 0

    @property
    def whole(self) -> bool:
        """Whether every unfair box found is stored (else only the `keep` largest)."""
        return self.boxes == self.found

    def add(
        self,
        lo: np.ndarray,
        hi: np.ndarray,
        unfair: np.ndarray,
        positive: np.ndarray,
        twin_of_pos: np.ndarray,
        twin_of_neg: np.ndarray,
    ) -> None:
        if not len(lo):
            return
        self.found += len(lo)
        self.pieces += int(unfair.sum())
        chunk = (
            self.codec.encode(lo, hi),
            np.packbits(unfair, axis=1),
            np.packbits(positive, axis=1),
            twin_of_pos.astype(self.sl_dtype),
            twin_of_neg.astype(self.sl_dtype),
        )
        self._store(chunk)

    def _store(self, chunk: tuple[np.ndarray, ...]) -> None:
        if self.keep is not None:  # the largest boxes so far
            parts = self.chunks + [chunk]
            chunk = tuple(np.concatenate(a) for a in zip(*parts)) if len(parts) > 1 else chunk
            chunk = tuple(a[self._largest_first(*self.codec.decode(chunk[0]))[: self.keep]] for a in chunk)
            self.chunks, self.boxes, self.nbytes = [], 0, 0
        self.chunks.append(chunk)
        self.boxes += len(chunk[0])
        self.nbytes += sum(a.nbytes for a in chunk)

    def absorb(self, other: UnfairBoxes) -> None:
        """Add the boxes another store (same codec and slices) holds: a worker's part of the region."""
        self.found += other.found
        self.pieces += other.pieces
        for chunk in other.chunks:
            self._store(chunk)

    def state(self) -> dict:
        """The stored boxes as JSON for a checkpoint (their records as stored: encoded boxes, slice
        bit masks, twin slices), with the counts of boxes and pieces found."""
        return {
            "boxes": self.boxes,
            "records": [records_text([c[k] for c in self.chunks]) for k in range(5)],
            "found": self.found,
            "pieces": self.pieces,
        }

    def _dtypes(self) -> list[np.dtype]:
        """The dtypes of a stored chunk's arrays' rows."""
        bits = np.dtype((np.uint8, ((self.n_sl + 7) // 8,)))
        return [self.codec.dtype, bits, bits, self.sl_dtype, self.sl_dtype]

    def restore(self, state: dict, dlo: np.ndarray, dhi: np.ndarray) -> None:
        """Add the boxes a checkpoint's `state` holds (as a worker's part, `absorb`), every value
        checked: boxes inside the domain box [dlo, dhi], twins among the slices, counts that hold them."""
        try:
            rows, texts, found, pieces = state["boxes"], state["records"], state["found"], state["pieces"]
            if not isinstance(texts, list) or len(texts) != 5:
                raise ValueError("not five arrays of unfair boxes")
            chunk = tuple(text_records(t, d, rows) for t, d in zip(texts, self._dtypes()))
            lo, hi = self.codec.decode(chunk[0])  # IndexError: off the tables
            unfair = np.unpackbits(chunk[1], axis=1, count=self.n_sl)
        except (KeyError, TypeError, IndexError, ValueError) as exc:
            raise PropertyError(f"checkpoint: its unfair boxes are incomplete or malformed ({str(exc)[:80]})") from None
        ok = (
            np.all(lo >= dlo)
            and np.all(hi <= dhi)
            and np.all(lo <= hi)
            and all(np.all(t < self.n_sl) for t in chunk[3:])
            and type(found) is int
            and type(pieces) is int
            and found >= rows
            and pieces >= int(unfair.sum())
        )
        if not ok:
            raise PropertyError("checkpoint: its unfair boxes do not fit this domain and model")
        saved = UnfairBoxes(self.codec, self.free, self.slo, self.prot, self.discrete)
        if rows:
            saved._store(chunk)
        saved.found, saved.pieces = found, pieces
        self.absorb(saved)

    def _size(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return np.prod(np.where(self.free, hi - lo, 1.0), axis=1)

    def _largest_first(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Box order by size, ties by lower corner: the same whichever worker found which box."""
        return np.lexsort(tuple(lo[:, j] for j in reversed(range(lo.shape[1]))) + (-self._size(lo, hi),))

    def _unfair(self, k: int) -> np.ndarray:
        return np.unpackbits(self.chunks[k][1], axis=1, count=self.n_sl).astype(bool)

    def box_weights(self) -> np.ndarray:
        """Per stored box (in storage order), its size times its number of unfair slices."""
        out = [self._size(*self.codec.decode(c[0])) * self._unfair(k).sum(axis=1) for k, c in enumerate(self.chunks)]
        return np.concatenate(out) if out else np.zeros(0)

    @property
    def size(self) -> float:
        return float(self.box_weights().sum())

    def _pairs(self, k: int, rows: np.ndarray, slices: np.ndarray, rng: np.random.Generator | None):
        """Inputs of chunk k's boxes `rows` in the given slices (centres, or uniform with rng) and their twins."""
        rec, _, pos, tpos, tneg = self.chunks[k]
        lo, hi = self.codec.decode(rec[rows])
        if rng is None:
            x = np.where(self.discrete, lo + np.floor((hi - lo - 1) / 2), (lo + hi) / 2)
        else:
            x = uniform_points(rng, lo, hi, self.discrete)
        x[:, self.prot] = self.slo[slices][:, self.prot]
        positive = np.unpackbits(pos[rows], axis=1, count=self.n_sl).astype(bool)[np.arange(len(rows)), slices]
        twin = np.where(positive, tpos[rows], tneg[rows]).astype(np.int64)
        xp = x.copy()
        xp[:, self.prot] = self.slo[twin][:, self.prot]
        return x, xp

    def largest(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The centres of the n largest pieces (box, unfair slice), ties by lower corner, with twins."""
        width = len(self.free)
        if not self.chunks or n <= 0:
            return np.zeros((0, width)), np.zeros((0, width))
        lo, hi = (np.concatenate(a) for a in zip(*(self.codec.decode(c[0]) for c in self.chunks)))
        start = np.cumsum([0] + [len(c[0]) for c in self.chunks])
        xs, xps, got = [], [], 0
        for b in self._largest_first(lo, hi):
            if got >= n:
                break
            k = int(np.searchsorted(start, b, side="right") - 1)
            r = int(b - start[k])
            sl = np.nonzero(self._unfair_row(k, r))[0][: n - got]
            x, xp = self._pairs(k, np.full(len(sl), r), sl, None)
            xs.append(x)
            xps.append(xp)
            got += len(sl)
        return np.concatenate(xs), np.concatenate(xps)

    def _unfair_row(self, k: int, r: int) -> np.ndarray:
        return np.unpackbits(self.chunks[k][1][r], count=self.n_sl).astype(bool)

    def draw(self, rng: np.random.Generator, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """An input of each given stored box (sorted indices, as `box_weights`), in one of its unfair
        slices chosen uniformly, uniform in the box, with its twin: with the boxes drawn by weight,
        uniform over the region."""
        width = len(self.free)
        start = np.cumsum([0] + [len(c[0]) for c in self.chunks])
        k_of = np.searchsorted(start, rows, side="right") - 1
        xs, xps = [], []
        edges = np.flatnonzero(np.diff(k_of)) + 1
        for a, b in zip(np.concatenate([[0], edges]), np.concatenate([edges, [len(rows)]])):
            if a == b:
                continue
            k = int(k_of[a])
            r = rows[a:b] - start[k]
            bits = np.unpackbits(self.chunks[k][1][r], axis=1, count=self.n_sl).astype(bool)
            j = np.floor(rng.random(len(r)) * bits.sum(axis=1)).astype(np.int64)  # the j-th unfair slice
            sl = np.argmax(np.cumsum(bits, axis=1) > j[:, None], axis=1)
            x, xp = self._pairs(k, r, sl, rng)
            xs.append(x)
            xps.append(xp)
        if not xs:
            return np.zeros((0, width)), np.zeros((0, width))
        return np.concatenate(xs), np.concatenate(xps)

    def pieces_as_boxes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every stored piece as a box with its protected features fixed to the slice, and its twin
        box (lo, hi, twin lo, twin hi): the region as the region path gives it (small runs, tests)."""
        out = []
        for k, (rec, _bits, pos, tpos, tneg) in enumerate(self.chunks):
            lo, hi = self.codec.decode(rec)
            rows, sl = np.nonzero(self._unfair(k))
            positive = np.unpackbits(pos, axis=1, count=self.n_sl).astype(bool)[rows, sl]
            tw = np.where(positive, tpos[rows], tneg[rows]).astype(np.int64)
            plo, phi, tlo, thi = lo[rows], hi[rows], lo[rows].copy(), hi[rows].copy()
            plo[:, self.prot] = self.slo[sl][:, self.prot]
            phi[:, self.prot] = self.slo[sl][:, self.prot] + 1.0
            tlo[:, self.prot] = self.slo[tw][:, self.prot]
            thi[:, self.prot] = self.slo[tw][:, self.prot] + 1.0
            out.append((plo, phi, tlo, thi))
        if not out:
            z = np.zeros((0, len(self.free)))
            return z, z, z, z
        plo, phi, tlo, thi = (np.concatenate(a) for a in zip(*out))
        return plo, phi, tlo, thi
