"""The leaf-tuple cells of an epsilon-0 fairness problem: how far a refinement down to single leaves goes.

Let p be the protected feature with values V, and y a grid point of the other features. In tree t,
under each v in V, (y, v) reaches one leaf; the leaf tuple of y after T trees is
(leaf_t(y, v)) for t <= T and v in V. Its level sets over the grid are the *cells*. Each cell is a
box: {y : leaf_t(y, v) = L} is a box (the tests of L's path with x_p = v), and a cell is an
intersection of such boxes.

`count_cells` builds the cells tree by tree: it splits every cell of the first t - 1 trees along the
paths of tree t, once per group of protected values that tree t cannot tell apart (values between
the same two of its thresholds on p), and keeps only the pieces that hold a grid point (all
boundaries are integers on a grid, so a piece [lo, hi) holds one iff lo < hi on every feature).
Every piece is the set of one leaf tuple, and no two pieces share one (two pieces differ in the leaf
of some tree under some value), so the number of boxes after t trees *is* the number of distinct
leaf tuples that occur on the grid, not just an upper bound on it. It is what an exact refinement
that splits boxes until each sits inside one leaf of every tree under every protected value ends up
holding; a refinement that settles a box by bounds before then can hold fewer.

Where the counts grow past what fits in memory, `sample_deeper` estimates the later prefixes from
uniformly drawn cells of the last kept prefix, each followed exactly to the last tree.

Integer and categorical features only (a grid); the protected feature must be one of them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from faircert.domain import Domain
from faircert.engines.trees.boxes import NormalisedTrees, normalise
from faircert.models.trees import TreeEnsemble


@dataclass
class CellCounts:
    """Cells after each prefix of trees: `counts[t - 1]` after the first t trees (exact), up to
    `len(counts)` trees; `stopped` says why it ended early ("cap", "time") or is None."""

    counts: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    stopped: str | None = None
    lo: np.ndarray | None = None  # the cells of the last prefix kept in memory (other features)
    hi: np.ndarray | None = None
    kept_trees: int = 0  # how many trees those cells are for
    free: np.ndarray | None = None  # indices of the features the cells span (all but protected)


def protected_groups(nt: NormalisedTrees, tree: int, p: int, values: np.ndarray) -> list[int]:
    """One representative of each group of protected values that `tree` sends the same way at every
    node (values between the same two of its boundaries on p)."""
    nodes = np.arange(nt.roots[tree], nt.roots[tree + 1] if tree + 1 < len(nt.roots) else len(nt.node_feat))
    inner = nodes[nt.node_left[nodes] >= 0]
    b = np.unique(nt.node_bound[inner[nt.node_feat[inner] == p]])
    key = np.searchsorted(b, values, side="right")
    _, first = np.unique(key, return_index=True)
    return [int(values[i]) for i in sorted(first)]


def split_tree(
    nt: NormalisedTrees, tree: int, p: int, v: int, col: np.ndarray, lo: np.ndarray, hi: np.ndarray, tag: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split the cells [lo, hi) (columns: the non-protected features, `col[f]` the column of feature f)
    along the paths of `tree` with x_p = v; returns the non-empty pieces and, for each, the `tag` of
    the cell it came from."""
    out_lo, out_hi, out_tag = [], [], []
    stack = [(int(nt.roots[tree]), lo, hi, tag)]
    while stack:
        node, a, b, g = stack.pop()
        if not len(a):
            continue
        if nt.node_left[node] < 0:
            out_lo.append(a)
            out_hi.append(b)
            out_tag.append(g)
            continue
        f, bound = int(nt.node_feat[node]), nt.node_bound[node]
        left, right = int(nt.node_left[node]), int(nt.node_right[node])
        if f == p:
            stack.append((left if v < bound else right, a, b, g))
            continue
        j = col[f]
        go_left = b[:, j] <= bound
        go_right = a[:, j] >= bound
        cut = ~(go_left | go_right)
        if cut.any():
            b_cut = b[cut].copy()
            b_cut[:, j] = bound
            a_right = a[cut].copy()
            a_right[:, j] = bound
            stack.append(
                (
                    left,
                    np.concatenate([a[go_left], a[cut]]),
                    np.concatenate([b[go_left], b_cut]),
                    np.concatenate([g[go_left], g[cut]]),
                )
            )
            stack.append(
                (
                    right,
                    np.concatenate([a[go_right], a_right]),
                    np.concatenate([b[go_right], b[cut]]),
                    np.concatenate([g[go_right], g[cut]]),
                )
            )
        else:
            stack.append((left, a[go_left], b[go_left], g[go_left]))
            stack.append((right, a[go_right], b[go_right], g[go_right]))
    if not out_lo:
        return lo[:0], hi[:0], tag[:0]
    return np.concatenate(out_lo), np.concatenate(out_hi), np.concatenate(out_tag)


@dataclass
class _Problem:
    nt: NormalisedTrees
    p: int
    free: np.ndarray
    col: np.ndarray
    groups: list[list[int]]  # per tree: `protected_groups`
    dtype: type

    def split(self, tree: int, lo: np.ndarray, hi: np.ndarray, tag: np.ndarray):
        for v in self.groups[tree]:
            lo, hi, tag = split_tree(self.nt, tree, self.p, v, self.col, lo, hi, tag)
        return lo, hi, tag


def _problem(ens: TreeEnsemble, domain: Domain, protected: str) -> _Problem:
    if not domain.discrete_mask.all():
        raise ValueError("cells are counted on grids: every feature must be integer or categorical")
    nt = normalise(ens, domain)
    p = domain.names.index(protected)
    free = np.flatnonzero(np.arange(len(domain.names)) != p)
    col = np.full(len(domain.names), -1)
    col[free] = np.arange(len(free))
    dlo, dhi = nt.dlo, nt.dhi
    # boundaries outside the domain send every cell one way; clipped, they do the same in int16
    nt.node_bound = np.clip(nt.node_bound, dlo[nt.node_feat], dhi[nt.node_feat])
    dtype = np.int16 if max(np.abs(dlo).max(), np.abs(dhi).max()) < 2**15 else np.int64
    values = np.arange(int(dlo[p]), int(dhi[p]))
    groups = [protected_groups(nt, t, p, values) for t in range(len(ens.trees))]
    return _Problem(nt, p, free, col, groups, dtype)


def count_cells(
    ens: TreeEnsemble,
    domain: Domain,
    protected: str,
    trees: int | None = None,
    cap: int = 20_000_000,
    time_limit: float = float("inf"),
    chunk: int = 250_000,
) -> CellCounts:
    """Cells after 1, 2, ..., `trees` trees (default all), breadth first. Stops after the first prefix
    whose count exceeds `cap` (that count is still exact: its cells are counted chunk by chunk, not
    kept) or once `time_limit` seconds have passed at the end of a prefix."""
    pb = _problem(ens, domain, protected)
    lo, hi = pb.nt.dlo[pb.free][None].astype(pb.dtype), pb.nt.dhi[pb.free][None].astype(pb.dtype)
    res = CellCounts(free=pb.free)
    n_trees = len(ens.trees) if trees is None else min(trees, len(ens.trees))
    t0 = time.perf_counter()
    for t in range(n_trees):
        keep, total = True, 0
        new_lo: list[np.ndarray] = []
        new_hi: list[np.ndarray] = []
        for k in range(0, len(lo), chunk):
            a, b, _ = pb.split(
                t, lo[k : k + chunk], hi[k : k + chunk], np.zeros(len(lo[k : k + chunk]), dtype=np.int32)
            )
            total += len(a)
            if keep and total > cap:
                keep, new_lo, new_hi = False, [], []
            if keep:
                new_lo.append(a)
                new_hi.append(b)
        res.counts.append(total)
        res.seconds.append(time.perf_counter() - t0)
        if not keep:
            res.stopped = "cap"
            break
        lo, hi = np.concatenate(new_lo), np.concatenate(new_hi)
        if time.perf_counter() - t0 > time_limit and t + 1 < n_trees:
            res.stopped = "time"
            break
    res.lo, res.hi = lo, hi
    res.kept_trees = len(res.counts) if res.stopped != "cap" else len(res.counts) - 1
    return res


def sample_deeper(
    ens: TreeEnsemble,
    domain: Domain,
    protected: str,
    res: CellCounts,
    trees: int | None = None,
    time_limit: float = 60.0,
    batch: int = 2000,
    seed: int = 0,
    chunk: int = 100_000,
) -> dict:
    """Estimates of the cells after `res.kept_trees` + 1, ..., `trees` trees (default all): cells of the
    kept prefix drawn uniformly without replacement, in batches until `time_limit` seconds have passed
    (at least one batch), each followed exactly to the last tree; the count after t trees is estimated
    by (kept cells) x (mean descendants after t trees of a drawn cell), unbiased, with its standard
    error (finite-population corrected). A statistical estimate, not a bound."""
    pb = _problem(ens, domain, protected)
    n_trees = len(ens.trees) if trees is None else min(trees, len(ens.trees))
    assert res.lo is not None and res.hi is not None  # the cells this estimate draws from
    first, total = res.kept_trees, len(res.lo)
    order = np.random.default_rng(seed).permutation(total)
    rows: list[np.ndarray] = []
    t0 = time.perf_counter()

    def descend(lo, hi, tag, t, acc):
        for k in range(0, len(lo), chunk):
            a, b, g = pb.split(t, lo[k : k + chunk], hi[k : k + chunk], tag[k : k + chunk])
            acc[:, t - first] += np.bincount(g, minlength=len(acc))
            if t + 1 < n_trees:
                descend(a, b, g, t + 1, acc)

    for k in range(0, total, batch):
        pick = order[k : k + batch]
        acc = np.zeros((len(pick), n_trees - first), dtype=np.int64)
        descend(res.lo[pick], res.hi[pick], np.arange(len(pick)), first, acc)
        rows.append(acc)
        if time.perf_counter() - t0 > time_limit:
            break
    d = np.concatenate(rows).astype(np.float64)
    n = len(d)
    sd = d.std(axis=0, ddof=1) if n > 1 else np.full(d.shape[1], np.inf)
    return {
        "trees": list(range(first + 1, n_trees + 1)),
        "estimate": (total * d.mean(axis=0)).tolist(),
        "stderr": (total * sd / np.sqrt(n) * np.sqrt(1 - n / total)).tolist(),
        "sampled": n,
        "of": total,
        "from_trees": first,
        "seconds": time.perf_counter() - t0,
    }


def leaf_tuple_ids(ens: TreeEnsemble, domain: Domain, protected: str, points: np.ndarray, trees: int) -> np.ndarray:
    """For grid points of the non-protected features (rows, in domain order without the protected
    column), labels 0, 1, ... equal for two points iff their leaf tuples after `trees` trees are equal.
    The leaves come from the model's own traversal (`leaves`), not from the cells."""
    p = domain.names.index(protected)
    x = np.insert(points.astype(np.float64), p, 0.0, axis=1)
    per_value = []
    for v in range(int(domain.features[p].min), int(domain.features[p].max) + 1):
        x[:, p] = v
        per_value.append(leaves(ens, x, trees))
    ids = np.zeros(len(x), dtype=np.int64)
    for t in range(trees):
        width = len(ens.trees[t].feature)
        for leaf in per_value:
            if int(ids.max(initial=0)) >= 2**62 // width:
                ids = np.unique(ids, return_inverse=True)[1].reshape(-1)
            ids = ids * width + leaf[:, t]
    return np.unique(ids, return_inverse=True)[1].reshape(-1)


def leaves(ens: TreeEnsemble, x: np.ndarray, trees: int) -> np.ndarray:
    """Leaf (node index) of each row in each of the first `trees` trees, by traversal."""
    xi = ens._inputs(x)
    out = np.zeros((len(x), trees), dtype=np.int64)
    rows = np.arange(len(x))
    for t, tree in enumerate(ens.trees[:trees]):
        node = np.zeros(len(x), dtype=np.int64)
        while True:
            inner = tree.left[node] >= 0
            if not inner.any():
                break
            val = xi[rows, tree.feature[node].clip(0)]
            thr = tree.threshold[node]
            go_left = val < thr if ens.split == "<" else val <= thr
            node = np.where(inner, np.where(go_left, tree.left[node], tree.right[node]), node)
        out[:, t] = node
    return out
