"""Sound group rates of large tree ensembles under independent marginals, by box refinement on the label.

For ensembles past `trees.MAX_LEAVES` leaves, where the exact count stays [0, 1] in practical
time, the boxes of `regions` are bounded by the leaves each tree can reach from the box: the
margin lies between the base margin plus every tree's least reachable leaf and the base margin
plus every tree's greatest one (`TreeEnsemble.margin_view`: label 1 iff margin > 0, margins within
its tolerance of 0 undecided, as the framework's own rounding may decide them either way).

Each input's values are first merged into cells the trees do not tell apart (values between the
same two thresholds of that input, compared as the model compares them: rounded to float32 where
it rounds, with its own "<" or "<="), so every cut of a box is a threshold of some tree. An
undecided box is cut at the first node, from the root, that splits it in the tree whose reachable
leaves spread widest.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...models.trees import TreeEnsemble
from ...options import GroupOptions
from ...results import GroupResult
from .regions import Bounds, answer_rates
from .trees import MAX_LEAVES, reads_independent_inputs

METHOD = (
    "box refinement on the label: each box of values bounded by every tree's reachable leaves, "
    "its mass counted where they prove the label, the heaviest undecided boxes split first at a "
    "threshold of the tree whose leaves spread widest"
)


def accepts(model: TreeEnsemble, question: Any) -> bool:
    """Ensembles past the exact count's `MAX_LEAVES` (read when asked, so a test may lower it) whose
    inputs, protected attributes and label are independent under the population."""
    from . import trees

    leaves = sum(int(t.is_leaf.sum()) for t in model.trees)
    return leaves > getattr(trees, "MAX_LEAVES", MAX_LEAVES) and reads_independent_inputs(model, question)


class Nodes:
    """Every tree's nodes, concatenated: feature, children (-1 at leaves), scaled leaf value,
    threshold; and each tree's root."""

    def __init__(self, ir: TreeEnsemble) -> None:
        base, feat, left, right, value, thr, roots = 0, [], [], [], [], [], []
        for t in ir.trees:
            inner = t.left >= 0
            feat.append(np.where(inner, t.feature, 0))
            left.append(np.where(inner, t.left + base, -1))
            right.append(np.where(inner, t.right + base, -1))
            value.append(ir.scale * np.asarray(t.value, dtype=np.float64))
            thr.append(np.where(inner, t.threshold, 0.0))
            roots.append(base)
            base += len(t.feature)
        self.feat = np.concatenate(feat).astype(np.int64)
        self.left = np.concatenate(left).astype(np.int64)
        self.right = np.concatenate(right).astype(np.int64)
        self.value = np.concatenate(value)
        self.threshold = np.concatenate(thr).astype(np.float64)
        self.roots = np.array(roots, dtype=np.int64)
        self.inner = self.left >= 0
        self.depth = max(t.depth for t in ir.trees)


class TreeBounder:
    """The ensemble's margin bounds over boxes of one rate's cells."""

    def __init__(self, ir: TreeEnsemble, nodes: Nodes, values: list[np.ndarray], counts: list[np.ndarray]) -> None:
        self.nodes = nodes
        self.offset, _, self.tolerance = ir.margin_view(None)
        self.counts: list[np.ndarray] = []
        self.cell_of: list[np.ndarray] = []  # per input, the cell of each of its values
        self.bound_at = np.zeros(len(nodes.feat), dtype=np.int64)  # cells left of each node's split
        self.links: np.ndarray | None = None
        for j, (v, c) in enumerate(zip(values, counts)):
            at = np.flatnonzero(nodes.inner & (nodes.feat == j))
            thresholds = np.unique(nodes.threshold[at])
            x = v.astype(np.float32).astype(np.float64) if ir.input_float32 else v  # as the model reads them
            # cell of each value: how many of the input's thresholds send it right (monotone in x)
            # "<": right iff x >= t; "<=": iff x > t
            cell = (
                np.searchsorted(thresholds, x, "right") if ir.split == "<" else np.searchsorted(thresholds, x, "left")
            )
            ids, first = np.unique(cell, return_index=True)
            self.counts.append(np.add.reduceat(c, first))
            self.cell_of.append(np.searchsorted(ids, cell))
            # a node at the i-th threshold sends left the cells of id <= i
            self.bound_at[at] = np.searchsorted(ids, np.searchsorted(thresholds, nodes.threshold[at]), "right")

    def bound(self, lo: np.ndarray, hi: np.ndarray) -> Bounds:
        from ... import compiled

        if compiled.available():
            from .tree_regions_compiled import bounds

            nd = self.nodes
            if self.links is None:  # the kernel reads the nodes' links and cuts as one array
                self.links = np.stack([nd.feat, nd.left, nd.right, self.bound_at]).astype(np.int64)
            low, high, chosen = bounds(lo, hi, self.links, nd.value, nd.roots, nd.depth)
            feature = np.where(chosen >= 0, nd.feat[np.maximum(chosen, 0)], -1)
            at = np.where(chosen >= 0, self.bound_at[np.maximum(chosen, 0)], 0)
            return Bounds(self.offset + low, self.offset + high, feature, at)
        return self.bound_numpy(lo, hi)

    def bound_numpy(self, lo: np.ndarray, hi: np.ndarray) -> Bounds:
        nd, K, T = self.nodes, len(lo), len(self.nodes.roots)
        vmin, vmax = np.full(K * T, np.inf), np.full(K * T, -np.inf)
        cut = np.full(K * T, -1, dtype=np.int64)
        pair = np.arange(K * T)  # box * T + tree
        node = np.tile(nd.roots, K)
        while node.size:
            leaf = ~nd.inner[node]
            if leaf.any():
                np.minimum.at(vmin, pair[leaf], nd.value[node[leaf]])
                np.maximum.at(vmax, pair[leaf], nd.value[node[leaf]])
                node, pair = node[~leaf], pair[~leaf]
            box, f, b = pair // T, nd.feat[node], self.bound_at[node]
            go_left, go_right = lo[box, f] < b, hi[box, f] > b
            both = go_left & go_right
            fresh = both & (cut[pair] < 0)  # the first node (from the root) that splits the box
            cut[pair[fresh]] = node[fresh]
            node = np.concatenate([nd.left[node[go_left]], nd.right[node[go_right]]])
            pair = np.concatenate([pair[go_left], pair[go_right]])
        low, high, cuts = vmin.reshape(K, T), vmax.reshape(K, T), cut.reshape(K, T)
        spread = np.where(cuts >= 0, high - low, -1.0)
        widest = np.argmax(spread, axis=1)
        chosen = cuts[np.arange(K), widest]
        feature = np.where(chosen >= 0, nd.feat[np.maximum(chosen, 0)], -1)
        at = np.where(chosen >= 0, self.bound_at[np.maximum(chosen, 0)], 0)
        return Bounds(self.offset + low.sum(axis=1), self.offset + high.sum(axis=1), feature, at)


def answer(ir: TreeEnsemble, question: Any, options: GroupOptions, progress: Any = None) -> GroupResult:
    """Registry entry point: every rate the metrics read as sound any-time bounds (`regions`), the
    compiled kernel built before the clock starts."""
    from ... import compiled

    nodes = Nodes(ir)
    compiled.warm(lambda: _warm(ir, nodes))

    def bounder_of(values: list[np.ndarray], counts: list[np.ndarray]) -> tuple:
        bounder = TreeBounder(ir, nodes, values, counts)
        return bounder, bounder.counts, bounder.cell_of

    return answer_rates(question, options, progress, "tree-regions-group", ir.named_inputs(), bounder_of, METHOD)


def _warm(ir: TreeEnsemble, nodes: Nodes) -> None:
    """The compiled bound on one box, so that it compiles."""
    values = [np.array([0.0]) for _ in range(ir.n_features)]
    counts = [np.array([1]) for _ in range(ir.n_features)]
    box = np.zeros((1, ir.n_features), dtype=np.int32)
    TreeBounder(ir, nodes, values, counts).bound(box, box + 1)
