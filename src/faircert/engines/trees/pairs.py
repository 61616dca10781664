"""Margin bounds tightened by merging trees in pairs, keeping only leaf pairs that can meet.

The plain bound of a box adds up each tree's reachable leaf range. Two leaves of different trees
can both be reached from a box and still never hold together (one needs age < 30, the other
age >= 40). Merging trees t and u, the pair's range over a box is the min and max of v_t + v_u over
the leaf pairs that are both reachable and whose boxes intersect: leaf boxes and the box are
axis-aligned, so pairwise intersection implies a common point (Helly's theorem for intervals, one
coordinate at a time), and every point of the box reaches exactly one such pair. This is the first
level of Veritas' merging of trees.

Compatibility is precomputed per pair as bit rows over the other tree's leaves (in `LeafRanges`'
dense layout, increasing value), so a box's best partner of each leaf is the lowest (or highest)
set bit of the row and the box's reachable mask. Trees with more than `MAX_WIDTH` slots are left
unmerged (the cost grows with the square of the width).

The pair's bounds replace the sum of the two trees' ranges, spread over the two trees in
proportion to their ranges: sums are the pair's bounds, and each tree's range shrinks but stays
non-negative, so the choice of the tree to cut still reads it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: Merge trees in pairs in the box bounds. Off: measured on the practitioner XGBoost 100x6 models it
#: narrows the margin range by 3 to 11% on random boxes at 10 to 18 times the cost of the plain bound,
#: and `verify` on COMPAS certifies 27.9% at 60 s against 66.4% without it
#: (`benchmarks/results/bounds_trees.md`).
MERGE_PAIRS = False
MAX_WIDTH = 256  # most leaf slots per tree merged


class TreePairs:
    """Disjoint pairs of trees, chosen by how many split features they share, with the
    compatibility of their leaves."""

    def __init__(self, nt) -> None:
        r = nt.ranges
        self.width = r.width
        self.values = r.sorted_val.reshape(r.n_trees, r.width)
        self.pairs = _pairing(nt) if r.width <= MAX_WIDTH else np.zeros((0, 2), dtype=np.int64)
        idx = r.idx.reshape(r.n_trees, r.width)
        leaf_lo, leaf_hi = np.concatenate(nt.leaf_lo), np.concatenate(nt.leaf_hi)
        point = nt.dhi <= nt.dlo  # a feature the domain fixes: every leaf holds its one value
        self.up, self.down = [], []  # per pair: bit rows over u's slots, in increasing / decreasing value
        for t, u in self.pairs:
            a_lo, a_hi, b_lo, b_hi = leaf_lo[idx[t]], leaf_hi[idx[t]], leaf_lo[idx[u]], leaf_hi[idx[u]]
            meet = np.maximum(a_lo[:, None], b_lo[None]) < np.minimum(a_hi[:, None], b_hi[None])
            meet = (meet | point).all(axis=2)
            self.up.append(_bits(meet))
            self.down.append(_bits(meet[:, ::-1]))

    def tighten(self, mask_of: Callable[[int], np.ndarray], vmin: np.ndarray, vmax: np.ndarray) -> None:
        """Tighten the per-tree ranges (boxes x trees) in place; `mask_of(t)`: the boxes' reachable
        slots of tree t (boxes x width)."""
        W = self.width
        for p, (t, u) in enumerate(self.pairs):
            reach_t, reach_u = mask_of(t), mask_of(u)
            low_j = _lowest(self.up[p][None] & _bits(reach_u)[:, None, :])
            high_j = _lowest(self.down[p][None] & _bits(reach_u[:, ::-1])[:, None, :])
            ok = reach_t & (low_j >= 0)
            vt, vu = self.values[t][None], self.values[u]
            pmin = np.where(ok, vt + vu[np.maximum(low_j, 0)], np.inf).min(axis=1)
            pmax = np.where(ok, vt + vu[W - 1 - np.maximum(high_j, 0)], -np.inf).max(axis=1)
            lo_sum, hi_sum = vmin[:, t] + vmin[:, u], vmax[:, t] + vmax[:, u]
            meets = ok.any(axis=1)  # always, on a box with a point; nothing is gained otherwise
            gain_lo = np.where(meets, np.clip(pmin - lo_sum, 0.0, None), 0.0)
            gain_hi = np.where(meets, np.clip(hi_sum - pmax, 0.0, None), 0.0)
            spread_t, total = vmax[:, t] - vmin[:, t], hi_sum - lo_sum
            share = np.divide(spread_t, total, out=np.full(len(total), 0.5), where=total > 0)
            vmin[:, t] += gain_lo * share
            vmin[:, u] += gain_lo * (1 - share)
            vmax[:, t] -= gain_hi * share
            vmax[:, u] -= gain_hi * (1 - share)
            # the shares' rounding never lets a tree's range invert
            np.maximum(vmax[:, t], vmin[:, t], out=vmax[:, t])
            np.maximum(vmax[:, u], vmin[:, u], out=vmax[:, u])


def _pairing(nt) -> np.ndarray:
    """Disjoint pairs of trees, greedily by the number of split features they share."""
    n_trees = nt.n_trees
    uses = np.zeros((n_trees, len(nt.dlo)), dtype=bool)
    inner = nt.node_left >= 0
    tree_of = np.repeat(np.arange(n_trees), np.diff(np.append(nt.roots, len(nt.node_feat))))
    uses[tree_of[inner], nt.node_feat[inner]] = True
    shared = uses.astype(np.int64) @ uses.T.astype(np.int64)
    t, u = np.triu_indices(n_trees, 1)
    order = np.argsort(-shared[t, u], kind="stable")
    taken = np.zeros(n_trees, dtype=bool)
    pairs = []
    for a, b in zip(t[order], u[order]):
        if not taken[a] and not taken[b]:
            taken[a] = taken[b] = True
            pairs.append((a, b))
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def _bits(mask: np.ndarray) -> np.ndarray:
    """Boolean rows (..., W) as little-endian 64-bit words (..., ceil(W / 64))."""
    W = mask.shape[-1]
    padded = np.zeros(mask.shape[:-1] + (-(-W // 64) * 64,), dtype=bool)
    padded[..., :W] = mask
    return np.packbits(padded, axis=-1, bitorder="little").view(np.uint64)


def _lowest(words: np.ndarray) -> np.ndarray:
    """Index of the lowest set bit over the last axis of 64-bit words; -1 where none is set."""
    nonzero = words != 0
    k = nonzero.argmax(axis=-1)
    w = np.take_along_axis(words, k[..., None], axis=-1)[..., 0]
    low = w & (~w + np.uint64(1))  # the lowest set bit alone: a power of two, exact in float64
    with np.errstate(divide="ignore"):
        bit = np.log2(low.astype(np.float64))
    return np.where(nonzero.any(axis=-1), 64 * k + np.where(low > 0, bit, 0).astype(np.int64), -1)
