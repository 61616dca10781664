"""Tree ensembles as boxes over a domain, and their partition into label-constant boxes.

Every split is normalised to "left iff x < b" in float64: on integer features b is an integer
(x < t becomes x < ceil(t); x <= t becomes x < floor(t) + 1), on real features with float32 inputs
b is the float64 point where rounding to float32 crosses the threshold. Boxes are half-open
[lo, hi): integer features use [min, max + 1) so that hi - lo counts grid points, real features
use [min, max] whose length is the volume. The size of a box is prod(hi - lo).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np

from ... import memory
from ...domain import Domain
from ...models.trees import TreeEnsemble
from ..boxes.budget import MEMORY_LIMIT, Budget
from ..boxes.frontier import Frontier
from . import pairs

# Labels and statuses of partition boxes.
NEG, POS = 0, 1


def _float32_boundary(t: np.ndarray, strict: bool) -> np.ndarray:
    """The float64 b with float32(x) < t  (strict) or float32(x) <= t  <=>  x < b (up to one tie point)."""
    t32 = t.astype(np.float32)
    # a = largest float32 strictly below t (strict) or at most t (non-strict)
    a = np.where(t32.astype(np.float64) < t, t32, np.nextafter(t32, np.float32(-np.inf)))
    if not strict:
        a = np.where(t32.astype(np.float64) <= t, t32, np.nextafter(t32, np.float32(-np.inf)))
    up = np.nextafter(a, np.float32(np.inf))
    return (a.astype(np.float64) + up.astype(np.float64)) / 2.0


def split_boundaries(ens: TreeEnsemble, domain: Domain, feature: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    """Normalised boundaries b (left iff x < b) of splits on `feature` at `threshold`."""
    discrete = domain.discrete_mask[feature]
    strict = ens.split == "<"
    b_int = np.ceil(threshold) if strict else np.floor(threshold) + 1.0
    if ens.input_float32:
        b_real = _float32_boundary(threshold, strict)
    else:
        b_real = threshold.astype(np.float64)
    return np.where(discrete, b_int, b_real)


def domain_box(domain: Domain) -> tuple[np.ndarray, np.ndarray]:
    lo = domain.lower.copy()
    hi = domain.upper + domain.discrete_mask.astype(np.float64)
    return lo, hi


@dataclass
class NormalisedTrees:
    """Leaves of every tree as boxes and as sparse path constraints, with margin contributions."""

    leaf_lo: list[np.ndarray]  # per tree: leaves x n
    leaf_hi: list[np.ndarray]
    leaf_val: list[np.ndarray]  # per tree: scaled leaf values
    start: np.ndarray  # index of each tree's first leaf in the concatenated arrays
    c_feat: np.ndarray  # all leaves x depth: feature of each path constraint
    c_bound: np.ndarray  # boundary b
    c_upper: np.ndarray  # True: x < b ; False: x >= b
    val: np.ndarray  # all leaves: scaled value
    offset: float
    node_feat: np.ndarray  # all trees' nodes, concatenated: split feature
    node_bound: np.ndarray  # normalised boundary (left iff x < b)
    node_left: np.ndarray  # global index of the left child, -1 at leaves
    node_right: np.ndarray
    roots: np.ndarray  # global index of each tree's root
    depth: int
    discrete: np.ndarray  # per feature: integer grid (else real)
    dlo: np.ndarray  # the domain as a box (`domain_box`)
    dhi: np.ndarray

    def __post_init__(self) -> None:
        self.ranges = LeafRanges.of_trees(self.start, self.val)
        self.reach = PathChecks(self)

    @property
    def n_trees(self) -> int:
        return len(self.leaf_val)

    def bounds(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, None]:
        reach = self.reach(lo, hi)
        vmin, vmax = self.ranges.reduce(reach)
        if pairs.MERGE_PAIRS:
            W = self.ranges.width
            self.tree_pairs.tighten(lambda t: reach[:, t * W : (t + 1) * W], vmin, vmax)
        return vmin, vmax, None

    @functools.cached_property
    def tree_pairs(self) -> pairs.TreePairs:
        return pairs.TreePairs(self)

    def cut(self, lo: np.ndarray, hi: np.ndarray, reach: None, tree: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return split_choice(self, lo, hi, tree)


def normalise(ens: TreeEnsemble, domain: Domain) -> NormalisedTrees:
    dlo, dhi = domain_box(domain)
    leaf_lo, leaf_hi, leaf_val, cons = [], [], [], []
    nf, nb, nl, nr, roots, base = [], [], [], [], [], 0
    for t in ens.trees:
        inner = ~t.is_leaf
        bounds = np.zeros(len(t.feature))
        bounds[inner] = split_boundaries(ens, domain, t.feature[inner], t.threshold[inner])
        nf.append(t.feature)
        nb.append(bounds)
        nl.append(np.where(inner, t.left + base, -1))
        nr.append(np.where(inner, t.right + base, -1))
        roots.append(base)
        base += len(t.feature)
        los, his, vals = [], [], []
        stack: list[tuple[int, list[tuple[int, float, bool]]]] = [(0, [])]
        while stack:
            node, path = stack.pop()
            if t.left[node] < 0:
                lo, hi = dlo.copy(), dhi.copy()
                for f, b, upper in path:
                    if upper:
                        hi[f] = min(hi[f], b)
                    else:
                        lo[f] = max(lo[f], b)
                los.append(lo)
                his.append(hi)
                vals.append(ens.scale * t.value[node])
                cons.append(path)
                continue
            f, b = int(t.feature[node]), float(bounds[node])
            stack.append((int(t.right[node]), path + [(f, b, False)]))
            stack.append((int(t.left[node]), path + [(f, b, True)]))
        leaf_lo.append(np.array(los))
        leaf_hi.append(np.array(his))
        leaf_val.append(np.array(vals, dtype=np.float64))
    depth = max(1, max(len(p) for p in cons))
    total = len(cons)
    c_feat = np.zeros((total, depth), dtype=np.int64)
    c_bound = np.full((total, depth), np.inf)
    c_upper = np.ones((total, depth), dtype=bool)
    for k, path in enumerate(cons):
        for d, (f, b, upper) in enumerate(path):
            c_feat[k, d], c_bound[k, d], c_upper[k, d] = f, b, upper
    start = np.cumsum([0] + [len(v) for v in leaf_val])
    offset = ens.margin_view(None)[0]
    return NormalisedTrees(
        leaf_lo,
        leaf_hi,
        leaf_val,
        start,
        c_feat,
        c_bound,
        c_upper,
        np.concatenate(leaf_val),
        offset,
        np.concatenate(nf),
        np.concatenate(nb),
        np.concatenate(nl),
        np.concatenate(nr),
        np.array(roots),
        depth,
        domain.discrete_mask,
        dlo,
        dhi,
    )


def inner_points(nt: NormalisedTrees, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """A point strictly inside each box on real features (its lowest corner may be a boundary the
    framework's float32 rounding sends to the other side), the lowest grid point on integer ones."""
    return np.where(nt.discrete, lo, (lo + hi) / 2)


class PathChecks:
    """The leaves each box can reach (boxes x leaves, in the dense layout of `nt.ranges`).

    Each distinct (feature, boundary) of the trees is compared once per box and every leaf gathers
    its path's comparisons; constraints on the `ignored` features count as met (the caller applies
    them separately, e.g. once per protected slice).
    """

    def __init__(self, nt: NormalisedTrees, ignored: list[int] | tuple[int, ...] = ()) -> None:
        real = ~np.isin(nt.c_feat, list(ignored))  # path padding (x < inf) compares as always true
        pairs, inv = np.unique(np.stack([nt.c_feat[real], nt.c_bound[real]], axis=1), axis=0, return_inverse=True)
        self.feat, self.bound = pairs[:, 0].astype(np.int64), pairs[:, 1]
        n = len(pairs)
        cidx = np.full(nt.c_feat.shape, 2 * n, dtype=np.int64)  # the always-true column
        cidx[real] = np.where(nt.c_upper[real], inv.ravel(), n + inv.ravel())
        self.cidx = cidx[nt.ranges.idx]

    def __call__(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        sat = np.concatenate(
            [lo[:, self.feat] < self.bound, hi[:, self.feat] > self.bound, np.ones((len(lo), 1), dtype=bool)], axis=1
        )
        return np.asarray(sat[:, self.cidx].all(axis=2))


class LeafRanges:
    """Per tree, the min and max value of its reachable leaves, from a reachable-leaf mask.

    The leaves are gathered into a dense (trees x most leaves) block, each tree's leaves in
    increasing value, so the min is the first reachable slot and the max the last (for trees of at
    most 8 leaves, the lowest and highest set bit of one byte per tree, by table; measured several
    times faster than masked `reduceat` over the ragged layout). A box reaches at least one leaf of
    every tree.
    """

    def __init__(self, idx: np.ndarray, sorted_val: np.ndarray) -> None:
        """`idx`, `sorted_val`: (trees x width) leaf indices into the mask and their values, rows
        in increasing value."""
        self.n_trees, self.width = idx.shape
        self.idx, self.sorted_val = idx.ravel(), sorted_val.ravel()
        self.base = (np.arange(self.n_trees) * self.width)[None, :]

    @classmethod
    def of_trees(cls, start: np.ndarray, val: np.ndarray) -> LeafRanges:
        """All leaves, laid out one tree after another (`start`: each tree's first leaf)."""
        sizes = np.diff(start)
        idx = np.zeros((len(sizes), max(1, int(sizes.max(initial=1)))), dtype=np.int64)
        for t, (a, b) in enumerate(itertools.pairwise(start)):
            leaves = a + np.argsort(val[a:b], kind="stable")
            idx[t, : b - a] = leaves
            idx[t, b - a :] = leaves[-1]  # padding repeats the largest leaf: never a wrong min or max
        return cls(idx, val[idx])

    def subset(self, trees: np.ndarray) -> LeafRanges:
        """The same ranges restricted to some trees (the rows of `columns(trees)`)."""
        shape = (self.n_trees, self.width)
        return LeafRanges(self.idx.reshape(shape)[trees], self.sorted_val.reshape(shape)[trees])

    def columns(self, trees: np.ndarray) -> np.ndarray:
        """The dense-layout columns of the given trees."""
        return (np.asarray(trees, dtype=np.int64)[:, None] * self.width + np.arange(self.width)).ravel()

    def reduce(self, okp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(vmin, vmax) (boxes x trees) of a mask in the dense layout (column k is leaf `idx[k]`)."""
        dense = okp.reshape(len(okp), self.n_trees, self.width)
        if self.width <= 8:  # trees of depth <= 3: one byte per tree, first and last bit by table
            byte = dense.view(np.uint8) @ _BIT_WEIGHTS[: self.width]
            first, last = _LOWEST_BIT[byte], _HIGHEST_BIT[byte]
        else:
            first = dense.argmax(axis=2)
            last = self.width - 1 - dense[:, :, ::-1].argmax(axis=2)
        return self.sorted_val[self.base + first], self.sorted_val[self.base + last]


_BIT_WEIGHTS = (1 << np.arange(8)).astype(np.uint8)
_LOWEST_BIT = np.array([(b & -b).bit_length() - 1 if b else 0 for b in range(256)], dtype=np.int64)
_HIGHEST_BIT = np.array([b.bit_length() - 1 if b else 0 for b in range(256)], dtype=np.int64)


def split_choice(
    nt: NormalisedTrees, lo: np.ndarray, hi: np.ndarray, tree: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(feature, boundary) of the first node of `tree` whose boundary cuts each box."""
    node = nt.roots[tree].copy()
    found = np.zeros(len(lo), dtype=bool)
    rows = np.arange(len(lo))
    for _ in range(nt.depth + 1):
        leaf = nt.node_left[node] < 0
        f = nt.node_feat[node]
        b = nt.node_bound[node]
        inside = ~leaf & (lo[rows, f] < b) & (hi[rows, f] > b)
        found |= inside
        go_left = hi[rows, f] <= b
        node = np.where(found | leaf, node, np.where(go_left, nt.node_left[node], nt.node_right[node]))
    return nt.node_feat[node], nt.node_bound[node]


@dataclass
class Partition:
    """Disjoint boxes covering the start boxes, each with a constant label and confidence status."""

    lo: np.ndarray
    hi: np.ndarray
    start: np.ndarray  # index of the start box (slice) each box lies in
    label: np.ndarray  # NEG / POS
    confident: np.ndarray  # bool
    tie: np.ndarray  # bool: label/status unknown (margin within tolerance of a threshold, or unexplored)
    complete: bool  # False if the time limit stopped the enumeration
    pending_size: float  # size of the unexplored boxes (flagged `tie`) when stopped
    early: np.ndarray | None = None  # bool: already accounted for by the `on_done` callback
    memory_limited: bool = False  # stopped (incomplete) at the run's memory limit

    @property
    def size(self) -> np.ndarray:
        return np.prod(self.hi - self.lo, axis=1)

    @classmethod
    def of_twins(cls, lo: np.ndarray, hi: np.ndarray) -> Partition:
        """The twin boxes of unfair pieces as a complete partition: pieces refer to them by index;
        their labels and statuses are not read."""
        m = len(lo)
        no = np.zeros(m, bool)
        return cls(lo, hi, np.zeros(m, np.int64), np.zeros(m, np.int64), no, no.copy(), True, 0.0, no.copy())


def partition(
    nt: NormalisedTrees,
    lo0: np.ndarray,
    hi0: np.ndarray,
    c: float | None,
    tol: float,
    deadline: float = np.inf,
    chunk: int = 2048,
    on_boxes=None,
    on_done=None,
) -> Partition:
    """Split the start boxes until label (and confidence) are constant on every box.

    A box is settled as soon as the sum over trees of the reachable leaf range decides the label
    (margin > 0 or <= 0) and the confidence (|margin| > c or not), with `tol` of slack. Otherwise
    it is cut in two at the first cutting node of the tree with the widest reachable range, so
    boxes are refined only where the decision is still open. Boxes whose exact margin is within
    `tol` of a threshold are flagged `tie`. Like the refinements, it stops as at the deadline once it
    holds more than the run's memory limit in boxes (settled and open).
    """
    out_lo, out_hi, out_start, out_label, out_conf, out_tie, out_early = [], [], [], [], [], [], []
    # best-first: the chunk of largest boxes next, so settled size (and the any-time bounds) grows fastest
    frontier = Frontier(np.ones(lo0.shape[1], dtype=bool), chunk)
    frontier.push(lo0.copy(), hi0.copy(), np.arange(len(lo0)))
    stored = 0
    budget, ended = Budget(deadline), False
    complete, pending = True, 0.0
    while frontier:
        lo, hi, st = frontier.pop()
        full = frontier.nbytes + stored + lo.nbytes + hi.nbytes > memory.limit()
        ended = ended or budget.spent(memory_full=full)
        if ended:
            # unexplored: boxes of unknown label and status
            complete = False
            pending += float(np.prod(hi - lo, axis=1).sum())
            out_lo.append(lo)
            out_hi.append(hi)
            out_start.append(st)
            out_label.append(np.zeros(len(lo), dtype=np.int64))
            out_conf.append(np.zeros(len(lo), dtype=bool))
            out_tie.append(np.ones(len(lo), dtype=bool))
            out_early.append(np.zeros(len(lo), dtype=bool))
            continue
        vmin, vmax, _ = nt.bounds(lo, hi)
        mlo, mhi = nt.offset + vmin.sum(axis=1), nt.offset + vmax.sum(axis=1)
        pos = mlo > tol
        neg = mhi < -tol
        if c is None:
            conf_known = np.ones(len(lo), dtype=bool)
            conf = conf_known
        else:
            conf_yes = (mlo > c + tol) | (mhi < -c - tol)
            conf_no = (mlo > -c + tol) & (mhi < c - tol)
            conf_known = conf_yes | conf_no
            conf = conf_yes
        spread = vmax - vmin
        exact = spread.max(axis=1) <= 0
        decided = (pos | neg) & conf_known
        done = decided | exact
        if done.any():
            d = done
            label = np.where(pos[d], POS, NEG)
            out_lo.append(lo[d])
            out_hi.append(hi[d])
            out_start.append(st[d])
            out_label.append(label)
            out_conf.append(conf[d])
            out_tie.append(~decided[d])
            stored += sum(a[-1].nbytes for a in (out_lo, out_hi, out_start, out_label, out_conf, out_tie))
            early = on_done(lo[d], hi[d], st[d], label, conf[d], ~decided[d]) if on_done is not None else None
            out_early.append(early if early is not None else np.zeros(int(d.sum()), dtype=bool))
            if on_boxes is not None:
                on_boxes(int(d.sum()))
        keep = ~done
        if not keep.any():
            continue
        lo, hi, st = lo[keep], hi[keep], st[keep]
        f, b = nt.cut(lo, hi, None, np.argmax(spread[keep], axis=1))
        rows = np.arange(len(lo))
        left_hi = hi.copy()
        left_hi[rows, f] = b
        right_lo = lo.copy()
        right_lo[rows, f] = b
        frontier.push(np.concatenate([lo, right_lo]), np.concatenate([left_hi, hi]), np.concatenate([st, st]))
    cat = lambda xs, shape, dt: np.concatenate(xs) if xs else np.zeros(shape, dtype=dt)
    n = lo0.shape[1]
    return Partition(
        cat(out_lo, (0, n), float),
        cat(out_hi, (0, n), float),
        cat(out_start, (0,), np.int64),
        cat(out_label, (0,), np.int64),
        cat(out_conf, (0,), bool),
        cat(out_tie, (0,), bool),
        complete,
        pending,
        cat(out_early, (0,), bool),
        budget.stopped == MEMORY_LIMIT,
    )


def uniform_points(rng: np.random.Generator, lo: np.ndarray, hi: np.ndarray, discrete: np.ndarray) -> np.ndarray:
    """A point drawn uniformly from each box [lo, hi) (grid points on integer features)."""
    return _scaled(rng.random(lo.shape), lo, hi, discrete)


def _scaled(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, discrete: np.ndarray) -> np.ndarray:
    """lo + x * (hi - lo), floored on discrete features; in place on x (millions of rows)."""
    x *= hi - lo
    if discrete.all():
        np.floor(x, out=x)
        x += lo
        return np.minimum(x, hi - 1, out=x)  # u * width can round up to the width
    whole = np.minimum(np.floor(x) + lo, hi - 1) if discrete.any() else None
    x += lo
    np.minimum(x, np.nextafter(hi, -np.inf), out=x)  # lo + u * width can round up to hi
    return np.where(discrete, whole, x) if whole is not None else x
