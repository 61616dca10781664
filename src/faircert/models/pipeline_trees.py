"""A pipeline ending in a tree ensemble, as one TreeEnsemble over the domain's raw features.

Every split on an encoded feature becomes tests on its raw column, exactly:
- a feature non-decreasing in its column (scalers, bin indices) sends left exactly the raw values
  up to some x*: the largest double (or integer) of the domain whose encoding, computed as
  scikit-learn computes it (float64 scaling, then the estimator's float32 rounding and its own
  comparison), goes left. x* is found by bisection over the ordered doubles, so rounding at the
  boundary is reproduced, not approximated;
- any other feature of a discrete column (one-hot indicators, ordinal ranks) is evaluated on every
  value of the column; the values going left form runs of consecutive codes, tested by thresholds.
Along each path the raw columns' ranges narrow, so later tests the path already decides vanish.
The result splits with "<=" on raw values as given (no float32 rounding).
Refused: a non-monotone encoding (one-hot) of a real-valued column.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ..errors import DomainError, ModelFormatError
from .pipeline import MAX_GRID, PipelineModel, raw_values
from .trees import Tree, TreeEnsemble

MAX_NODES = 2_000_000
_SIGN = np.uint64(1 << 63)


def _to_key(x: np.ndarray) -> np.ndarray:
    """Doubles -> uint64 keys in the same order (-0.0 and 0.0 share a key)."""
    bits = np.asarray(x, dtype=np.float64).view(np.int64)
    key = np.where(bits >= 0, bits, -(bits & np.int64(0x7FFFFFFFFFFFFFFF)))
    return key.view(np.uint64) ^ _SIGN


def _from_key(key: np.ndarray) -> np.ndarray:
    signed = (np.asarray(key, dtype=np.uint64) ^ _SIGN).view(np.int64)
    bits = np.where(signed >= 0, signed, (-signed).view(np.uint64).view(np.int64) | np.int64(-(1 << 63)))
    return bits.view(np.float64)


class _Splitter:
    """Which raw values of each column go left at an encoded feature's threshold."""

    def __init__(self, model: PipelineModel, ens: TreeEnsemble, domain) -> None:
        self.model, self.ens, self.domain = model, ens, domain
        self.col = [domain.index(f.column) for f in model.features]
        self._cut: dict[tuple[int, float], float] = {}
        self._grid: dict[int, np.ndarray] = {}

    def goes_left(self, z: np.ndarray, t: float | np.ndarray) -> np.ndarray:
        if self.ens.input_float32:
            z = z.astype(np.float32).astype(np.float64)
        return z < t if self.ens.split == "<" else z <= t

    def _encoded(self, i: int, x: np.ndarray) -> np.ndarray:
        feature = self.domain.features[self.col[i]]
        return self.model.features[i].value(raw_values(feature, x))

    def prepare(self, pairs: dict[int, set[float]]) -> None:
        """x* of every (monotone feature, threshold) pair, by bisection over all pairs at once."""
        for i, ts in pairs.items():
            f = self.model.features[i]
            feature = self.domain.features[self.col[i]]
            if not f.is_monotone:
                if not feature.is_discrete:
                    raise DomainError(
                        f"column {f.column!r} is real-valued in the domain, but the model's "
                        f"{f.encoder.origin} compares it with single values; declare it integer or "
                        "categorical"
                    )
                if feature.size > MAX_GRID:
                    raise DomainError(
                        f"column {f.column!r} has {feature.size:g} values; at most {MAX_GRID} for a "
                        f"{f.encoder.origin} column"
                    )
                self._grid[i] = self._encoded(i, feature.values().astype(np.float64))
                continue
            t = np.array(sorted(ts))
            lo = np.full(len(t), float(feature.min))
            hi = np.full(len(t), float(feature.max))
            left_lo = self.goes_left(self._encoded(i, lo), t)
            left_hi = self.goes_left(self._encoded(i, hi), t)
            if feature.is_discrete:
                a, b = lo.astype(np.int64), hi.astype(np.int64)
                while True:
                    open_ = (b - a > 1) & left_lo & ~left_hi
                    if not open_.any():
                        break
                    mid = a + (b - a) // 2
                    left = self.goes_left(self._encoded(i, mid.astype(np.float64)), t)
                    a = np.where(open_ & left, mid, a)
                    b = np.where(open_ & ~left, mid, b)
                cut = a.astype(np.float64)
            else:
                a, b = _to_key(lo), _to_key(hi)
                while True:
                    open_ = (b - a > np.uint64(1)) & left_lo & ~left_hi
                    if not open_.any():
                        break
                    mid = a + (b - a) // np.uint64(2)
                    left = self.goes_left(self._encoded(i, _from_key(mid)), t)
                    a = np.where(open_ & left, mid, a)
                    b = np.where(open_ & ~left, mid, b)
                cut = _from_key(a)
            cut = np.where(left_hi, np.inf, np.where(left_lo, cut, -np.inf))
            self._cut.update({(i, float(tt)): float(c) for tt, c in zip(t, cut)})

    def runs(self, i: int, t: float, lo: float, hi: float) -> list[tuple[float, float, bool]]:
        """[(from, to, goes_left)] partitioning the column's range [lo, hi] on this path."""
        feature = self.domain.features[self.col[i]]
        if i in self._grid:
            start = int(feature.min)
            mask = self.goes_left(self._grid[i][int(lo) - start : int(hi) - start + 1], t)
            edges = np.flatnonzero(np.diff(mask.astype(np.int8))) + int(lo)
            starts = [int(lo)] + [int(e) + 1 for e in edges]
            ends = [int(e) for e in edges] + [int(hi)]
            return [(float(a), float(b), bool(mask[a - int(lo)])) for a, b in zip(starts, ends)]
        cut = self._cut[(i, float(t))]
        if cut >= hi:
            return [(lo, hi, True)]
        if cut < lo:
            return [(lo, hi, False)]
        after = cut + 1.0 if feature.is_discrete else float(np.nextafter(cut, np.inf))
        return [(lo, cut, True), (after, hi, False)]


def bind_trees(model: PipelineModel, domain) -> TreeEnsemble:
    ens: TreeEnsemble = model.estimator
    if ens.n_features != len(model.features):
        raise DomainError(f"the trees read {ens.n_features} features but the preprocessing gives {len(model.features)}")
    split = _Splitter(model, ens, domain)
    pairs: dict[int, set[float]] = {}
    for t in ens.trees:
        for node in np.flatnonzero(~t.is_leaf):
            pairs.setdefault(int(t.feature[node]), set()).add(float(t.threshold[node]))
    split.prepare(pairs)
    box = [(float(f.min), float(f.max)) for f in domain.features]
    trees = [_rewrite(t, split, box) for t in ens.trees]
    return TreeEnsemble(
        trees,
        len(domain),
        split="<=",
        input_float32=False,
        base_score=ens.base_score,
        scale=ens.scale,
        link=ens.link,
        feature_names=list(domain.names),
        source=model.source,
        sum_float32=ens.sum_float32,
        meta={**ens.meta, "pipeline": True},
    )


# `_rewrite`'s stack entries: an original node to copy, or the runs of one test still to split
_NodeTask = tuple[Literal["node"], int, list, int]
_RunsTask = tuple[Literal["runs"], tuple[int, int, list], list, int]


def _rewrite(tree: Tree, split: _Splitter, box: list[tuple[float, float]]) -> Tree:
    feature: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    value: list[float] = []

    def new(f: int = 0, t: float = 0.0, v: float = 0.0) -> int:
        if len(feature) >= MAX_NODES:
            raise ModelFormatError(f"the pipeline's trees grow beyond {MAX_NODES} nodes on raw columns")
        feature.append(f)
        threshold.append(t)
        left.append(-1)
        right.append(-1)
        value.append(v)
        return len(feature) - 1

    # explicit stack: (original node, ranges, where to write the new node's id)
    root = new()
    stack: list[_NodeTask | _RunsTask] = [("node", 0, box, root)]
    while stack:
        task = stack.pop()
        if task[0] == "node":
            _, node, ranges, slot = task
            if tree.left[node] < 0:
                value[slot] = float(tree.value[node])
                continue
            i = int(tree.feature[node])
            j = split.col[i]
            lo, hi = ranges[j]
            runs = split.runs(i, float(tree.threshold[node]), lo, hi)
            stack.append(("runs", (node, j, runs), ranges, slot))
            continue
        _, (node, j, runs), ranges, slot = task
        if len(runs) == 1:  # the path decides this test: continue in the chosen child at the same slot
            a, b, goes_left = runs[0]
            narrowed = list(ranges)
            narrowed[j] = (a, b)
            child = int(tree.left[node] if goes_left else tree.right[node])
            stack.append(("node", child, narrowed, slot))
            continue
        m = (len(runs) - 1) // 2  # balanced: test the middle boundary
        feature[slot], threshold[slot] = j, runs[m][1]
        left[slot], right[slot] = new(), new()
        stack.append(("runs", (node, j, runs[: m + 1]), ranges, left[slot]))
        stack.append(("runs", (node, j, runs[m + 1 :]), ranges, right[slot]))
    return Tree(np.array(feature), np.array(threshold), np.array(left), np.array(right), np.array(value))
