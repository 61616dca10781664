"""Leaf-tuple splits of the epsilon-0 refinement: cut an open box along every path of one tree.

The joint refinement (`joint`) cuts an open box at one node by default ("node": the first cutting
node of the widest tree of the widest open slice, two pieces). With `split="leaves"` it cuts the
box by which leaf of that same tree a point reaches instead: the box is intersected with the leaf
boxes of the tree (their non-protected part), once per group of protected slices the tree cannot
tell apart (slices that leave the same leaves reachable), and the non-empty intersections are the
pieces (at most leaves ** groups of them, usually far fewer). Under each slice every point of the
box reaches exactly one leaf of the tree, so the pieces of one group partition the box, and the
common refinement over the groups is again a partition. The pieces are bounded and settled by the
joint refinement exactly as node cuts are; only the cut differs. This is the split of the exact
leaf-tuple enumerators (and of `cells`), applied one tree at a time to the boxes the bounds leave
open. No twin index is needed at epsilon 0: a box's twins are the same box under the other slices.
"""

from __future__ import annotations

import numpy as np

from ...errors import PropertyError
from .boxes import NormalisedTrees

#: the cuts of the joint refinement: "node" (one node, two pieces) or "leaves" (every leaf of one tree)
SPLITS = ("node", "leaves")
DEFAULT_SPLIT = "node"


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise PropertyError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
    return split


class LeafSplitter:
    """Per tree, the non-protected leaf boxes of each group of slices the tree cannot tell apart."""

    def __init__(self, nt: NormalisedTrees, prot: list[int], prot_ok: np.ndarray) -> None:
        """`prot_ok`: slices x leaves (all trees' leaves, concatenated), whether a leaf's path
        constraints on the protected features hold in the slice."""
        self.trees: list[list[tuple[np.ndarray, np.ndarray]]] = []
        for t in range(nt.n_trees):
            a, b = int(nt.start[t]), int(nt.start[t + 1])
            llo, lhi = nt.leaf_lo[t].copy(), nt.leaf_hi[t].copy()
            llo[:, prot], lhi[:, prot] = -np.inf, np.inf  # the boxes keep their protected range
            groups = np.unique(prot_ok[:, a:b], axis=0)
            self.trees.append([(llo[g], lhi[g]) for g in groups if g.any()])

    def split(
        self, lo: np.ndarray, hi: np.ndarray, tree: np.ndarray, free: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The non-empty pieces of each box [lo, hi) along the leaves of its `tree`."""
        out_lo, out_hi = [], []
        for t in np.unique(tree):
            rows = tree == t
            a, b = lo[rows], hi[rows]
            for llo, lhi in self.trees[int(t)]:
                a, b = _intersect(a, b, llo, lhi, free)
            out_lo.append(a)
            out_hi.append(b)
        return np.concatenate(out_lo), np.concatenate(out_hi)


def _intersect(lo, hi, llo, lhi, free):
    """Every box intersected with every leaf box (the leaf boxes partition space), non-empty ones."""
    parts_lo, parts_hi = [], []
    for k in range(len(llo)):
        a, b = np.maximum(lo, llo[k]), np.minimum(hi, lhi[k])
        keep = (b[:, free] > a[:, free]).all(axis=1)
        if keep.any():
            parts_lo.append(a[keep])
            parts_hi.append(b[keep])
    return np.concatenate(parts_lo), np.concatenate(parts_hi)
