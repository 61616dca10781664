"""Exact size of (disjoint boxes A) intersected with (a union of overlapping boxes U).

A k-d recursion over regions R: a region is settled when no A box meets it, when no U box
meets it (A there is outside the union), when one U box covers it, or when a single U box meets
it; otherwise it is cut at the median of the distinct U boundaries strictly inside it (the cut
dimension is the one with most such boundaries). It terminates because every cut removes
boundaries. The settled pieces A ∩ R ∩ u are disjoint boxes whose union is exactly A ∩ (∪U).

The recursion runs on batches of regions at once: each region's boxes are rows of flat arrays
tagged with the region's index, so one step settles, cuts and splits every region of the batch
with array operations. Batches are taken depth first and split when their rows exceed `BATCH`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..boxes.budget import Budget

BATCH = 1 << 16  # box rows (A and U together) per batch


@dataclass
class Covered:
    """Result of `covered`: sizes, the exact covered region as disjoint pieces, completeness."""

    covered: float = 0.0  # size of A ∩ ∪U inside settled regions
    settled: float = 0.0  # size of A inside settled regions
    piece_lo: list = field(default_factory=list)
    piece_hi: list = field(default_factory=list)
    piece_a: list = field(default_factory=list)  # index of the A box of each piece
    piece_u: list = field(default_factory=list)  # index of a U box containing the piece
    complete: bool = True
    regions: int = 0


@dataclass
class _Boxes:
    """Boxes clipped to their region: `reg` the region of each row, `idx` its input index."""

    reg: np.ndarray
    idx: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    def take(self, rows) -> _Boxes:
        return _Boxes(self.reg[rows], self.idx[rows], self.lo[rows], self.hi[rows])


def covered(
    a_lo: np.ndarray,
    a_hi: np.ndarray,
    u_lo: np.ndarray,
    u_hi: np.ndarray,
    deadline: float = np.inf,
    on_progress=None,
    keep_pieces: bool = True,
) -> Covered:
    """Exact |A ∩ ∪U| with A's boxes pairwise disjoint; any-time via `settled`."""
    out = Covered()
    if len(a_lo) == 0:
        return out
    r_lo = np.minimum(a_lo.min(axis=0), u_lo.min(axis=0) if len(u_lo) else np.inf)
    r_hi = np.maximum(a_hi.max(axis=0), u_hi.max(axis=0) if len(u_hi) else -np.inf)
    whole = lambda lo, hi: _Boxes(np.zeros(len(lo), np.int64), np.arange(len(lo)), lo, hi)
    stack = [(r_lo[None], r_hi[None], whole(a_lo, a_hi), whole(u_lo, u_hi))]
    while stack:
        if Budget(deadline).spent():
            out.complete = False
            break
        batch = _step(*stack.pop(), out, keep_pieces)
        if on_progress is not None:
            on_progress(out)
        if batch is not None:
            stack.extend(_split_batch(*batch))
    return out


def _step(r_lo, r_hi, a: _Boxes, u: _Boxes, out: Covered, keep_pieces: bool):
    """Settle what can be settled in every region of the batch; return the cut regions' children."""
    m = len(r_lo)
    out.regions += m
    n_a = np.bincount(a.reg, minlength=m)
    n_u = np.bincount(u.reg, minlength=m)
    a_mass = np.prod(a.hi - a.lo, axis=1)
    full = np.all((u.lo <= r_lo[u.reg]) & (u.hi >= r_hi[u.reg]), axis=1)
    full_u = np.full(m, -1, dtype=np.int64)
    full_u[u.reg[full]] = u.idx[full]  # some U box covering the region
    has_a = n_a > 0
    by_full = has_a & (full_u >= 0)
    by_one = has_a & ~by_full & (n_u == 1)
    settle = has_a & ((n_u == 0) | by_full | by_one)
    out.settled += float(a_mass[settle[a.reg]].sum())
    if by_full.any():
        rows = np.nonzero(by_full[a.reg])[0]
        out.covered += float(a_mass[rows].sum())
        if keep_pieces:
            _add_pieces(out, a.lo[rows], a.hi[rows], a.idx[rows], full_u[a.reg[rows]])
    if by_one.any():
        only = np.full(m, -1, dtype=np.int64)
        single = np.nonzero(by_one[u.reg])[0]
        only[u.reg[single]] = single
        rows = np.nonzero(by_one[a.reg])[0]
        j = only[a.reg[rows]]
        plo, phi = np.maximum(a.lo[rows], u.lo[j]), np.minimum(a.hi[rows], u.hi[j])
        meet = np.all(plo < phi, axis=1)
        out.covered += float(np.prod(phi[meet] - plo[meet], axis=1).sum())
        if keep_pieces and meet.any():
            _add_pieces(out, plo[meet], phi[meet], a.idx[rows[meet]], u.idx[j[meet]])
    cut = has_a & ~settle
    if not cut.any():
        return None
    a, u = a.take(cut[a.reg]), u.take(cut[u.reg])
    dim, value = _cuts(r_lo, r_hi, u, m)
    new_id = np.cumsum(cut) - 1  # children of region k: 2 new_id[k] (left), 2 new_id[k] + 1 (right)
    ks = np.nonzero(cut)[0]
    left_hi, right_lo = r_hi[ks].copy(), r_lo[ks].copy()
    rows = np.arange(len(ks))
    left_hi[rows, dim[ks]] = value[ks]
    right_lo[rows, dim[ks]] = value[ks]
    c_lo = np.empty((2 * len(ks), r_lo.shape[1]))
    c_hi = np.empty_like(c_lo)
    c_lo[0::2], c_hi[0::2] = r_lo[ks], left_hi
    c_lo[1::2], c_hi[1::2] = right_lo, r_hi[ks]
    return c_lo, c_hi, _halves(a, dim, value, new_id), _halves(u, dim, value, new_id)


def _cuts(r_lo, r_hi, u: _Boxes, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Per region: the dimension with most U boundaries strictly inside, and the median of the
    distinct such boundaries on it."""
    inner_lo = u.lo > r_lo[u.reg]
    inner_hi = u.hi < r_hi[u.reg]
    width = r_lo.shape[1]
    counts = np.stack(
        [np.bincount(u.reg, weights=inner_lo[:, k] + inner_hi[:, k], minlength=m) for k in range(width)], axis=1
    )
    dim = np.argmax(counts, axis=1)
    rows = np.arange(len(u.reg))
    d = dim[u.reg]
    take_lo, take_hi = inner_lo[rows, d], inner_hi[rows, d]
    reg = np.concatenate([u.reg[take_lo], u.reg[take_hi]])
    val = np.concatenate([u.lo[rows, d][take_lo], u.hi[rows, d][take_hi]])
    order = np.lexsort((val, reg))
    reg, val = reg[order], val[order]
    first = np.ones(len(val), dtype=bool)
    first[1:] = (reg[1:] != reg[:-1]) | (val[1:] != val[:-1])
    reg, val = reg[first], val[first]
    n = np.bincount(reg, minlength=m)
    start = np.concatenate([[0], np.cumsum(n)[:-1]])
    value = np.full(m, np.nan)
    has = n > 0
    value[has] = val[start[has] + n[has] // 2]
    return dim, value


def _halves(b: _Boxes, dim, value, new_id) -> _Boxes:
    """Every box split between the two children of its region (clipped; empty parts dropped)."""
    d, v = dim[b.reg], value[b.reg]
    rows = np.arange(len(b.reg))
    left, right = b.lo[rows, d] < v, b.hi[rows, d] > v
    lo = np.concatenate([b.lo[left], b.lo[right]])
    hi = np.concatenate([b.hi[left], b.hi[right]])
    n_left = int(left.sum())
    dd, vv = np.concatenate([d[left], d[right]]), np.concatenate([v[left], v[right]])
    rows = np.arange(len(lo))
    hi[rows[:n_left], dd[:n_left]] = np.minimum(hi[rows[:n_left], dd[:n_left]], vv[:n_left])
    lo[rows[n_left:], dd[n_left:]] = np.maximum(lo[rows[n_left:], dd[n_left:]], vv[n_left:])
    reg = np.concatenate([2 * new_id[b.reg[left]], 2 * new_id[b.reg[right]] + 1])
    return _Boxes(reg, np.concatenate([b.idx[left], b.idx[right]]), lo, hi)


def _split_batch(r_lo, r_hi, a: _Boxes, u: _Boxes) -> list:
    """The batch as one or more batches of at most about BATCH box rows (whole regions each)."""
    rows = np.bincount(a.reg, minlength=len(r_lo)) + np.bincount(u.reg, minlength=len(r_lo))
    group = np.cumsum(rows) // BATCH
    if group[-1] == 0:
        return [(r_lo, r_hi, a, u)]
    out = []
    for g in np.unique(group):
        regs = np.nonzero(group == g)[0]
        remap = np.full(len(r_lo), -1, dtype=np.int64)
        remap[regs] = np.arange(len(regs))
        ga, gu = a.take(remap[a.reg] >= 0), u.take(remap[u.reg] >= 0)
        ga.reg, gu.reg = remap[ga.reg], remap[gu.reg]
        out.append((r_lo[regs], r_hi[regs], ga, gu))
    return out


def _add_pieces(out: Covered, lo, hi, a_idx, u_idx) -> None:
    out.piece_lo.append(lo)
    out.piece_hi.append(hi)
    out.piece_a.append(a_idx)
    out.piece_u.append(u_idx)
